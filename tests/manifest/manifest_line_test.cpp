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

TEST(ManifestLine, ALinesStepCacheReadsAsGenerationCache) {
  const auto cache_of = [](const std::string& text) {
    return parse_manifest_line(text, test_defaults(), "m.jsonl", 2).cache;
  };
  EXPECT_FALSE(cache_of(R"({"id":"a","prompt":"p"})").has_value());
  const auto name = cache_of(R"({"id":"a","prompt":"p","cache":"taylorseer"})");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->policy, CachePolicy::taylorseer);
  EXPECT_EQ(name->cache_interval, 5);
  const auto off = cache_of(R"({"id":"a","prompt":"p","cache":"off"})");
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->policy, CachePolicy::off);
  const auto map = cache_of(
      R"({"id":"a","prompt":"p","cache":{"policy":"magcache","threshold":0.1,"max_skip_steps":2,)"
      R"("retention_ratio":0.5,"mag_ratios":[1,0.99,0.875]}})");
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->policy, CachePolicy::magcache);
  EXPECT_EQ(map->threshold, 0.1);
  EXPECT_EQ(map->max_skip_steps, 2);
  EXPECT_EQ(map->retention_ratio, 0.5);
  EXPECT_EQ(map->mag_ratios, (std::vector<double>{1.0, 0.99, 0.875}));
  // The faults of generation.cache, named by the line's key.
  EXPECT_EQ(manifest_error_of(
                [&] { (void)cache_of(R"({"id":"a","prompt":"p","cache":{"threshold":0.1}})"); }),
            "m.jsonl:2:cache.policy: required in a cache map (expected off | first_block | "
            "taylorseer | magcache)");
  EXPECT_EQ(manifest_error_of([&] {
              (void)cache_of(R"({"id":"a","prompt":"p","cache":{"policy":"magcache"}})");
            }).rfind("m.jsonl:2:cache.mag_ratios: required by the magcache policy", 0),
            0U);
  EXPECT_EQ(manifest_error_of([&] {
              (void)cache_of(R"({"id":"a","prompt":"p","cache":{"policy":"taylorseer",)"
                             R"("cache_interval":"five"}})");
            }).rfind("m.jsonl:2:cache.cache_interval: ", 0),
            0U);
  EXPECT_EQ(manifest_error_of([&] { (void)cache_of(R"({"id":"a","prompt":"p","cache":[1]})"); }),
            "m.jsonl:2:cache: must be a policy name (off | first_block | taylorseer | magcache) "
            "or an object {\"policy\": ..., <its keys>}, got an array");
}

// Issue 52, class 10: a key twice in a nested object was read as its last value (nlohmann's
// parse keeps the last). Refused at every depth, named by its path in the line.
TEST(ManifestLine, AKeyTwiceInANestedObjectIsAnErrorAtEveryDepth) {
  const auto error = [](const std::string& cache) {
    return manifest_error_of([&] {
      (void)parse_manifest_line(R"({"id":"a","prompt":"p","cache":)" + cache + "}", test_defaults(),
                                "m.jsonl", 2);
    });
  };
  EXPECT_EQ(error(R"({"policy":"first_block","policy":"off"})"),
            "m.jsonl:2:cache.policy: given twice");
  EXPECT_EQ(error(R"({"policy":"first_block","threshold":0.1,"threshold":0.2})"),
            "m.jsonl:2:cache.threshold: given twice");
  EXPECT_EQ(error(R"({"policy":"magcache","mag_ratios":[1,{"x":1,"y":2,"x":3}]})"),
            "m.jsonl:2:cache.mag_ratios[1].x: given twice");
  EXPECT_EQ(error(R"({"a":{"b":[[0],[1,{"c":{"d":1,"d":2}}]]}})"),
            "m.jsonl:2:cache.a.b[1][1].c.d: given twice");
  // In another field too (which then refuses the object anyway), and at the top as before.
  EXPECT_EQ(manifest_error_of(
                [] { (void)ManifestLine(R"({"id":"a","prompt":{"k":1,"k":2}})", "m.jsonl", 3); }),
            "m.jsonl:3:prompt.k: given twice");
  EXPECT_EQ(
      manifest_error_of([] { (void)ManifestLine(R"({"id":"a","seed":1,"seed":1})", "m.jsonl", 3); }),
      "m.jsonl:3:seed: given twice");
  // The same key in sibling objects is no duplicate.
  EXPECT_EQ(manifest_error_of([] {
              (void)ManifestLine(R"({"id":"a","prompt":[{"k":1},{"k":2}]})", "m.jsonl", 3);
            }),
            "");
}

// Issue 52, class 4: a "cache" of 100,000 nested arrays crashed the process (the nested text
// was re-read recursively); 40,000 gave "cache:40001:1: invalid YAML: bad file". Any field of a
// line nests at most kMaxValueNesting levels, the line's object counted.
TEST(ManifestLine, NestingDeeperThanTheLimitIsAnErrorNamingTheField) {
  const auto nested = [](const std::string& field, const std::string& open,
                         const std::string& close, int levels) {
    std::string value;
    for (int i = 0; i < levels; ++i) value += open;
    for (int i = 0; i < levels; ++i) value += close;
    return R"({"id":"a","prompt":"p",")" + field + "\":" + value + "}";
  };
  const std::string too_deep =
      ": nested deeper than 64 levels of arrays and objects (the "
      "line's object counted)";
  for (const int levels : {64, 65, 1000, 100000}) {
    SCOPED_TRACE(levels);
    EXPECT_EQ(manifest_error_of(
                  [&] { (void)ManifestLine(nested("cache", "[", "]", levels), "m.jsonl", 5); }),
              "m.jsonl:5:cache" + too_deep);
    EXPECT_EQ(manifest_error_of([&] {
                (void)ManifestLine(nested("cache", R"({"a":)", "}", levels), "m.jsonl", 5);
              }),
              "m.jsonl:5:cache" + too_deep);
    EXPECT_EQ(manifest_error_of([&] {
                (void)ManifestLine(nested("prompt_embeds", R"([{"a":)", "}]", levels), "m.jsonl", 5);
              }),
              "m.jsonl:5:prompt_embeds" + too_deep);
  }
  // 63 levels below the line's object are read: the cache's own reader has the last word.
  EXPECT_EQ(manifest_error_of([&] {
              (void)parse_manifest_line(nested("cache", "[", "]", 63), test_defaults(), "m.jsonl", 5);
            }),
            "m.jsonl:5:cache: must be a policy name (off | first_block | taylorseer | magcache) "
            "or an object {\"policy\": ..., <its keys>}, got an array");
  std::string deep_map = R"({"policy":"first_block","x":)";
  for (int i = 0; i < 61; ++i) deep_map += R"({"a":)";
  deep_map += "1" + std::string(62, '}');
  EXPECT_EQ(manifest_error_of([&] {
              (void)parse_manifest_line(R"({"id":"a","prompt":"p","cache":)" + deep_map + "}",
                                        test_defaults(), "m.jsonl", 5);
            }),
            "m.jsonl:5:cache.x: not a key of the first_block cache (its keys: threshold)");
}

}  // namespace
}  // namespace omnidp
