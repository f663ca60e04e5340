#include "omnidp/manifest/manifest_line.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "manifest_test_support.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

using omnidp::test::manifest_error_of;
using omnidp::test::test_defaults;

TEST(ManifestLine, ParsesWithoutTouchingFiles) {
  const Request r = parse_manifest_line(R"({"id":"a","prompt":"p","image":"../x.png"})",
                                        test_defaults(), "f.jsonl", 7);
  EXPECT_EQ(r.image, "../x.png");
  EXPECT_EQ(r.task, Task::i2v);
  EXPECT_EQ(r.line, 7U);
  EXPECT_TRUE(r.input_key.empty());
  EXPECT_EQ(manifest_error_of([] {
              (void)parse_manifest_line(R"({"id":"a","prompt":"p","seed":"x"})", test_defaults(),
                                        "f.jsonl", 7);
            }),
            "f.jsonl:7:seed: must be an integer in 0..9223372036854775807 (2^63-1), got the "
            "string \"x\"");
}

TEST(ManifestLine, DecodingComesBeforeTheFieldsAndTheIdBeforeTheRest) {
  // Syntax is checked when the line is decoded; the fields when the request is built.
  EXPECT_EQ(manifest_error_of([] {
              ManifestLine line(R"({"id":"a",)", "m.jsonl", 3);
            }).rfind("m.jsonl:3: invalid JSON: ", 0),
            0U);
  const ManifestLine line(R"({"id":"a","prompt":7,"height":50})", "m.jsonl", 4);
  EXPECT_EQ(line.id(), "a");  // the id is fine although other fields are not
  EXPECT_EQ(manifest_error_of([&] { (void)line.request("a", test_defaults(), 16); }),
            "m.jsonl:4:prompt: must be a string, got 7");
  EXPECT_EQ(manifest_error_of([&] { line.fail(ManifestField::id, "duplicate"); }),
            "m.jsonl:4:id: duplicate");
  EXPECT_EQ(field_name(ManifestField::num_inference_steps), "num_inference_steps");
}

TEST(ManifestLine, TheModelsSizeMultiple) {
  const ManifestLine line(R"({"id":"a","prompt":"p","height":48})", "m.jsonl", 1);
  EXPECT_EQ(line.request("a", test_defaults(), 16).height, 48);
  EXPECT_EQ(manifest_error_of([&] { (void)line.request("a", test_defaults(), 32); }),
            "m.jsonl:1:height: 48 is not a multiple of 32, which this model needs (e.g. 32 or 64)");
  EXPECT_EQ(
      manifest_error_of([&] {
        (void)ManifestLine(R"({"id":"a","prompt":"p"})", "m.jsonl", 1).request("a", test_defaults(), 64);
      }),
      "m.jsonl:1:width: 96 (from generation.width) is not a multiple of 64, which this model "
      "needs (e.g. 64 or 128)");
}

}  // namespace
}  // namespace omnidp
