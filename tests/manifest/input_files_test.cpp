#include "omnidp/manifest/input_files.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/sha256.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "png_file.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

Request request_of(const std::string& image, const std::string& embeds) {
  Request r;
  r.id = "a";
  r.prompt = "p";
  r.line = 3;
  r.image = image;
  r.prompt_embeds = embeds;
  r.task = image.empty() ? Task::t2v : Task::i2v;
  return r;
}

TEST(InputFiles, ProbedHashedAndKeyed) {
  test::TempDir dir;
  const auto png = dir.path() / "a.png";
  ASSERT_TRUE(test::write_rgb_png(png, 4, 2, std::vector<std::uint8_t>(4 * 2 * 3, 9)));
  const auto embeds = dir.write("e.safetensors", "embeddings");
  ManifestOptions options;
  options.model_name = "m";
  options.weights_identity = "w";
  Request r = request_of(png.string(), embeds.string());
  read_input_files(r, false, options, "m.jsonl");
  EXPECT_TRUE(r.input_error.empty()) << r.input_error;
  EXPECT_EQ(r.image_width, 4);
  EXPECT_EQ(r.image_height, 2);
  EXPECT_EQ(r.image_sha256, sha256_file_hex(png));
  EXPECT_EQ(r.prompt_embeds_sha256, sha256_file_hex(embeds));
  EXPECT_FALSE(r.input_key.empty());
}

TEST(InputFiles, DefectsAreTheRequestsErrorNamingItsLine) {
  test::TempDir dir;
  ManifestOptions options;
  Request missing = request_of((dir.path() / "no.png").string(), "");
  read_input_files(missing, false, options, "m.jsonl");
  EXPECT_EQ(missing.input_error.rfind("m.jsonl:3:image: ", 0), 0U) << missing.input_error;
  EXPECT_TRUE(missing.input_key.empty());
  Request no_embeds = request_of("", (dir.path() / "no.safetensors").string());
  read_input_files(no_embeds, false, options, "m.jsonl");
  EXPECT_EQ(
      no_embeds.input_error,
      "m.jsonl:3:prompt_embeds: " + (dir.path() / "no.safetensors").string() + ": file not found");
  const auto png = dir.path() / "big.png";
  ASSERT_TRUE(test::write_png_header(png, 5000, 5000));
  options.max_image_pixels = 1000;
  Request big = request_of(png.string(), "");
  read_input_files(big, false, options, "m.jsonl");
  EXPECT_EQ(big.input_error, "m.jsonl:3:image: " + png.string() +
                                 ": image is 5000x5000 = 25000000 pixels, over the limit of 1000 "
                                 "(input.max_image_pixels)");
}

}  // namespace
}  // namespace omnidp
