#include "omnidp/export/video_export.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/common/image.hpp"
#include "results/test_util.hpp"
#ifdef OMNIDP_TEST_HAVE_FFMPEG
#include "export/decode_util.hpp"
#endif

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;
using results::testing::ScratchDir;

TEST(ExportFormat, ParsesTheThreeNames) {
  EXPECT_EQ(parse_export_format("mp4"), ExportFormat::mp4);
  EXPECT_EQ(parse_export_format("png"), ExportFormat::png);
  EXPECT_EQ(parse_export_format("gif"), ExportFormat::gif);
  EXPECT_EQ(parse_export_format("MP4"), std::nullopt);
  EXPECT_EQ(parse_export_format(""), std::nullopt);
  EXPECT_STREQ(to_string(ExportFormat::gif), "gif");
}

TEST(ExportFileStem, EscapesWhatFileNamesCannotHold) {
  EXPECT_EQ(export_file_stem("cat/003"), "cat%2F003");
  EXPECT_EQ(export_file_stem("a%b"), "a%25b");
  EXPECT_EQ(export_file_stem("."), "%2E");
  EXPECT_EQ(export_file_stem(".."), "%2E.");
  EXPECT_EQ(export_file_stem(".hidden"), "%2Ehidden");
  EXPECT_EQ(export_file_stem(" a b "), "%20a b%20");
  EXPECT_EQ(export_file_stem("back\\slash"), "back%5Cslash");
  EXPECT_EQ(export_file_stem("tab\there"), "tab%09here");
  EXPECT_EQ(export_file_stem("日本"), "日本");
  EXPECT_EQ(export_file_stem("plain-id_1.x"), "plain-id_1.x");
}

TEST(ExportFileStem, LongIdsAreCutAndHashed) {
  const std::string id(256, '/');  // encodes to 768 bytes
  const std::string stem = export_file_stem(id);
  EXPECT_EQ(stem.size(), 198U + 1U + 16U);  // 66 whole escapes of 3 bytes, '~', 16 hex
  EXPECT_EQ(stem.substr(0, 6), "%2F%2F");
  EXPECT_EQ(stem.substr(198), "~" + sha256_hex(std::string_view(id)).substr(0, 16));
  EXPECT_NE(export_file_stem(std::string(255, '/') + "x"), stem);
}

TEST(CheckExportSupport, AcceptsKnownFormatsRefusesOthers) {
  OutputConfig output;
  output.export_formats = {"png"};
  EXPECT_NO_THROW(check_export_support(output));
  output.export_formats = {"png", "webm"};
  try {
    check_export_support(output);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "output.export[1]");
    EXPECT_EQ(e.message(), "unknown format 'webm' (expected mp4, png or gif)");
  }
  output.export_formats = {"mp4", "gif"};
  if (ffmpeg_available()) {
    EXPECT_NO_THROW(check_export_support(output));
  } else {
    try {
      check_export_support(output);
      FAIL() << "no error";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "output.export[0]");
      EXPECT_EQ(e.message(), ffmpeg_missing_message("omni-dp"));
    }
  }
}

TEST(PngFrames, RoundTripIsExact) {
  ScratchDir dir("export-png");
  const Video v = results::testing::make_video(3, 5, 7, 42);  // odd sizes, noise
  const auto paths = write_png_frames(v, dir.path() / "clip");
  ASSERT_EQ(paths.size(), 3U);
  EXPECT_EQ(paths[2], dir.path() / "clip" / "frame-00002.png");
  std::vector<std::uint8_t> bytes;
  for (const auto& p : paths) {
    const RgbImage image = decode_image_rgb(p, 1U << 20);
    EXPECT_EQ(image.width, 7);
    EXPECT_EQ(image.height, 5);
    bytes.insert(bytes.end(), image.data.begin(), image.data.end());
  }
  EXPECT_EQ(bytes, v.data);
}

TEST(PngFrames, MalformedVideoIsRefused) {
  ScratchDir dir("export-png-bad");
  Video v = results::testing::make_video(2, 4, 6, 1);
  v.data.pop_back();
  EXPECT_THROW((void)write_png_frames(v, dir.path()), RuntimeError);
}

TEST(ExportVideo, WritesIntoTheFolderUnderTheStem) {
  ScratchDir dir("export-dispatch");
  const Video v = results::testing::make_video(2, 4, 6, 3);
  const fs::path out = export_video(v, 24, ExportFormat::png, dir.path() / "o", "cat/1");
  EXPECT_EQ(out, dir.path() / "o" / "cat%2F1");
  EXPECT_TRUE(fs::exists(out / "frame-00001.png"));
  EXPECT_FALSE(fs::exists(out / "frame-00002.png"));
}

#ifdef OMNIDP_TEST_HAVE_FFMPEG

TEST(Mp4, DecodesBackWithFrameCountSizeAndFps) {
  ScratchDir dir("export-mp4");
  const Video v = testing::smooth_video(7, 48, 64);
  const fs::path path = dir.path() / "v.mp4";
  write_mp4(v, 12, path);
  const auto d = testing::decode_file(path);
  EXPECT_EQ(d.codec, "h264");
  EXPECT_EQ(d.container.substr(0, 3), "mov");
  EXPECT_EQ(d.pixel_format, "yuv420p");
  EXPECT_EQ(d.width, 64);
  EXPECT_EQ(d.height, 48);
  EXPECT_EQ(d.frame_rate.num * 1, 12 * d.frame_rate.den);
  ASSERT_EQ(d.rgb.frames, 7);
  for (std::size_t i = 0; i < d.pts.size(); ++i) {
    // frame i at i/12 s
    EXPECT_EQ(av_rescale_q(d.pts[i], d.time_base, AVRational{1, 12}), static_cast<std::int64_t>(i));
  }
  // Lossy, but each decoded frame is its own source frame (frames differ by 20 levels).
  for (int f = 0; f < 7; ++f) {
    EXPECT_LT(testing::mean_abs_diff(v, d.rgb, f), 4.0) << "frame " << f;
  }
  // Nothing left behind but the file.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(Mp4, OddSizesArePaddedToEven) {
  ScratchDir dir("export-mp4-odd");
  const Video v = testing::smooth_video(2, 33, 45);
  write_mp4(v, 24, dir.path() / "odd.mp4");
  const auto d = testing::decode_file(dir.path() / "odd.mp4");
  EXPECT_EQ(d.width, 46);
  EXPECT_EQ(d.height, 34);
  EXPECT_EQ(d.rgb.frames, 2);
  EXPECT_LT(testing::mean_abs_diff(v, d.rgb, 1), 4.0);
}

TEST(Mp4, BadInputsAreInputErrorsNamingTheFile) {
  ScratchDir dir("export-mp4-bad");
  const Video v = testing::smooth_video(2, 16, 16);
  try {
    write_mp4(v, 0, dir.path() / "x.mp4");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir.path() / "x.mp4").string() + ": cannot export at fps 0");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "x.mp4"));
}

TEST(Mp4, UnwritableFolderIsAnIoErrorWithLibavText) {
  ScratchDir dir("export-mp4-io");
  const fs::path path = dir.path() / "missing" / "x.mp4";
  try {
    write_mp4(testing::smooth_video(1, 16, 16), 24, path);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.context().at(0), path.string());
    // The path as given and errno's reason (issue 52, class 15), before libav opens anything.
    EXPECT_EQ(e.message(),
              "cannot create the video: No such file or directory (creating a file "
              "in '" +
                  path.parent_path().string() + "')");
  }
}

TEST(Gif, DecodesBackWithFrameCountAndSize) {
  ScratchDir dir("export-gif");
  const Video v = testing::smooth_video(5, 20, 30);
  write_gif(v, 10, dir.path() / "v.gif");
  const auto d = testing::decode_file(dir.path() / "v.gif");
  EXPECT_EQ(d.codec, "gif");
  EXPECT_EQ(d.width, 30);
  EXPECT_EQ(d.height, 20);
  ASSERT_EQ(d.rgb.frames, 5);
  ASSERT_EQ(d.pts.size(), 5U);
  EXPECT_EQ(av_rescale_q(d.pts[4], d.time_base, AVRational{1, 100}), 40);  // 4 frames at 10 fps
}

#else

TEST(WithoutFfmpeg, Mp4AndGifSayHowToGetThem) {
  ScratchDir dir("export-none");
  const Video v = results::testing::make_video(1, 2, 2, 1);
  EXPECT_FALSE(ffmpeg_available());
  try {
    write_mp4(v, 24, dir.path() / "x.mp4");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.message(), ffmpeg_missing_message("omni-dp"));
  }
  EXPECT_THROW(write_gif(v, 24, dir.path() / "x.gif"), UsageError);
}

#endif

}  // namespace
}  // namespace omnidp::video_export
