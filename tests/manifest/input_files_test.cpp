#include "omnidp/manifest/input_files.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

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

// Issue 52, class 6: a valid 65 KB PNG of 1 x 16,777,216 pixels (within max_image_pixels) kept a
// worker resizing for minutes. An image whose longer side is more than input.max_image_aspect
// times its shorter side fails its request from the header alone: these files have no image
// data, so any decode would fail with another message.
TEST(InputFiles, AnExtremeAspectRatioIsRefusedFromTheHeader) {
  test::TempDir dir;
  ManifestOptions options;  // max_image_aspect 32, max_image_pixels 4096 x 4096
  const auto refused = [&](const std::filesystem::path& image) {
    Request r = request_of(image.string(), "");
    read_input_files(r, true, options, "m.jsonl");
    EXPECT_EQ(r.input_key.empty(), !r.input_error.empty());
    return r.input_error;
  };
  const std::string limit = ", over the limit of 32:1 (input.max_image_aspect)";
  struct Case {
    const char* name;
    unsigned width;
    unsigned height;
    const char* ratio;
  };
  for (const Case& c :
       {Case{"wide.png", 16777216, 1, "16777216"}, Case{"tall.png", 1, 16777216, "16777216"},
        Case{"wide.jpg", 65500, 1, "65500"}, Case{"tall.jpg", 1, 65500, "65500"},
        Case{"strip.png", 4000, 123, "32.5"}, Case{"strip.jpg", 130, 4, "32.5"},
        Case{"thin.png", 33, 1, "33"}}) {
    SCOPED_TRACE(c.name);
    const auto path = dir.path() / c.name;
    ASSERT_TRUE(std::string_view(c.name).ends_with(".png")
                    ? test::write_png_header(path, c.width, c.height)
                    : test::write_jpeg_header(path, c.width, c.height));
    EXPECT_EQ(refused(path), "m.jsonl:3:image: " + path.string() + ": image is " +
                                 std::to_string(c.width) + "x" + std::to_string(c.height) +
                                 ", an aspect ratio of " + c.ratio + ":1" + limit);
  }
  // At the limit it is read (and hashed); a lower limit takes effect on the same file.
  const auto edge = dir.path() / "edge.png";
  ASSERT_TRUE(test::write_png_header(edge, 32, 1));
  EXPECT_EQ(refused(edge), "");
  options.max_image_aspect = 4;
  EXPECT_EQ(refused(edge), "m.jsonl:3:image: " + edge.string() +
                               ": image is 32x1, an aspect ratio of 32:1, over the limit of 4:1 "
                               "(input.max_image_aspect)");
  // last_image too.
  options.max_image_aspect = 32;
  const auto fine = dir.path() / "fine.png";
  ASSERT_TRUE(test::write_rgb_png(fine, 4, 2, std::vector<std::uint8_t>(4 * 2 * 3, 9)));
  Request r = request_of(fine.string(), "");
  r.last_image = (dir.path() / "wide.jpg").string();
  read_input_files(r, true, options, "m.jsonl");
  EXPECT_EQ(r.input_error, "m.jsonl:3:last_image: " + r.last_image +
                               ": image is 65500x1, an aspect ratio of 65500:1" + limit);
}

}  // namespace
}  // namespace omnidp
