#include "omnidp/cli/export.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "omnidp/common/image.hpp"
#include "omnidp/export/video_export.hpp"
#include "omnidp/results/merge.hpp"
#include "results/test_util.hpp"
#ifdef OMNIDP_TEST_HAVE_FFMPEG
#include "export/decode_util.hpp"
#endif
#include "child_process.hpp"
#include "cli/run_main.hpp"
#include "omnidp/results/summary.hpp"
#include "results/odd_files.hpp"

namespace omnidp::cli {
namespace {

namespace fs = std::filesystem;
namespace rt = results::testing;

using testing::Outcome;

Outcome run_export(std::vector<std::string> args) {
  return testing::run_main(export_main, "omni-dp-export", std::move(args));
}

// A synthetic run of two ranks: ok "x", "y/1", failed "z", merged into results.h5.
class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    rt::write_rank(run(), 0, 2, {"x"});
    rt::write_rank(run(), 1, 2, {"y/1"});
    rt::write_failed_rank(run(), 1, 2, {"z"});  // rank-00001.1.h5
    (void)results::merge_directory(run());
  }
  fs::path run() const { return run_.path(); }
  fs::path out() const { return out_.path() / "out"; }
  rt::ScratchDir run_{"export-run"};
  rt::ScratchDir out_{"export-out"};
};

TEST_F(ExportCli, PngFramesOfTheChosenIdsAreExact) {
  const Outcome o =
      run_export({run().string(), "--format", "png", "--out", out().string(), "--ids", "y/1"});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_EQ(o.out, "y/1 -> " + (out() / "y%2F1").string() + " (2 frames, 6x4, 24 fps)\n" +
                       "exported 1 of 1 video(s) as png to " + out().string() + "\n");
  const Video v = rt::video_for("y/1");
  std::vector<std::uint8_t> bytes;
  for (const char* name : {"frame-00000.png", "frame-00001.png"}) {
    const RgbImage image = decode_image_rgb(out() / "y%2F1" / name, 100);
    bytes.insert(bytes.end(), image.data.begin(), image.data.end());
  }
  EXPECT_EQ(bytes, v.data);
  EXPECT_FALSE(fs::exists(out() / "x"));
}

TEST_F(ExportCli, FailedAndUnknownIdsAreSkippedWithExitOne) {
  const Outcome o = run_export({(run() / "results.h5").string(), "--format", "png", "--out",
                                out().string(), "--ids", "z,nope,x"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err,
            "omni-dp-export: skipped 'z': the request failed: boom: z\n"
            "omni-dp-export: skipped 'nope': no such request in " +
                (run() / "results.h5").string() + "\n");
  EXPECT_NE(o.out.find("exported 1 of 3 video(s) as png"), std::string::npos) << o.out;
  EXPECT_TRUE(fs::exists(out() / "x" / "frame-00001.png"));
}

// Issue 39, class 9: a flipped byte in a stored video was exported with exit 0 and no warning.
// Export re-hashes the frames it reads: the damaged video is skipped with one line naming the
// id, the file and both hashes (exit 1, as for any video that cannot be exported); the others
// are written.
TEST_F(ExportCli, AStoredVideoWhoseHashDiffersIsRefused) {
  const fs::path file = run() / "rank-00000.h5";
  rt::flip_stored_byte(file, "x");
  Video damaged = rt::video_for("x");
  damaged.data[0] ^= 0xFFU;
  // The folder's rows name their rank file; results.h5's rows name itself (external links).
  for (const auto& [input, named] :
       {std::pair{run(), file}, std::pair{run() / "results.h5", run() / "results.h5"}}) {
    fs::remove_all(out());
    const Outcome o = run_export({input.string(), "--format", "png", "--out", out().string()});
    EXPECT_EQ(o.code, 1) << o.out << o.err;
    EXPECT_EQ(o.err, "omni-dp-export: skipped 'x': " + named.string() +
                         ": the stored video does not match its recorded video_sha256 " +
                         video_sha256(rt::video_for("x")) + " (its frames hash to " +
                         video_sha256(damaged) +
                         "); not exported (omni-dp-batch --verify generates it again)\n");
    EXPECT_NE(o.out.find("exported 1 of 2 video(s) as png"), std::string::npos) << o.out;
    EXPECT_FALSE(fs::exists(out() / "x"));
    EXPECT_TRUE(fs::exists(out() / "y%2F1" / "frame-00001.png"));
  }
}

TEST_F(ExportCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_export({run().string(), "--format", "webm", "--out", out().string()}).code, 2);
  EXPECT_EQ(run_export({run().string(), "--format", "png"}).code, 2);
  const Outcome o = run_export({(run() / "none").string(), "--format", "png", "--out", "o"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "omni-dp-export: " + (run() / "none").string() + ": no such file or folder\n");
}

#ifdef OMNIDP_TEST_HAVE_FFMPEG

TEST_F(ExportCli, Mp4OfEveryOkVideoDecodesBack) {
  const Outcome o =
      run_export({(run() / "results.h5").string(), "--format", "mp4", "--out", out().string()});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_EQ(o.out, "x -> " + (out() / "x.mp4").string() + " (2 frames, 6x4, 24 fps)\n" + "y/1 -> " +
                       (out() / "y%2F1.mp4").string() + " (2 frames, 6x4, 24 fps)\n" +
                       "exported 2 of 2 video(s) as mp4 to " + out().string() + "\n");
  for (const char* name : {"x.mp4", "y%2F1.mp4"}) {
    const auto d = video_export::testing::decode_file(out() / name);
    EXPECT_EQ(d.codec, "h264");
    EXPECT_EQ(d.width, 6);
    EXPECT_EQ(d.height, 4);
    EXPECT_EQ(d.rgb.frames, 2);
    EXPECT_EQ(d.frame_rate.num, 24 * d.frame_rate.den);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(out()), fs::directory_iterator()), 2);
}

TEST_F(ExportCli, GifFromTheRankFilesFolder) {
  const Outcome o =
      run_export({run().string(), "--format", "gif", "--out", out().string(), "--ids", "x"});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const auto d = video_export::testing::decode_file(out() / "x.gif");
  EXPECT_EQ(d.codec, "gif");
  EXPECT_EQ(d.rgb.frames, 2);
}

#else

TEST_F(ExportCli, WithoutFfmpegMp4ExitsTwoWithTheMessage) {
  const Outcome o = run_export({run().string(), "--format", "mp4", "--out", out().string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, video_export::ffmpeg_missing_message("omni-dp-export") + "\n");
  EXPECT_FALSE(fs::exists(out()));
}

#endif

// Issue 39, class 8: a folder with one unreadable rank file (the job skipped it) exports every
// readable video, with one warning naming the skipped file.
TEST(ExportRecovered, AnUnreadableRankFileIsSkippedWithOneWarning) {
  rt::ScratchDir run("export-recovered");
  rt::ScratchDir out("export-recovered-out");
  rt::write_rank(run.path(), 0, 2, {"x"});
  std::ofstream(run.path() / "rank-00001.h5", std::ios::binary) << "this is not an HDF5 file";
  rt::write_rank(run.path(), 1, 2, {"y"});  // rank-00001.1.h5, the rerun's segment
  const Outcome o =
      run_export({run.path().string(), "--format", "png", "--out", (out.path() / "png").string()});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("exported 2 of 2 video(s) as png"), std::string::npos) << o.out;
  const std::string warning = "skipping unreadable " + (run.path() / "rank-00001.h5").string();
  EXPECT_NE(o.err.find(warning), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find(warning), o.err.rfind(warning)) << o.err;
  EXPECT_TRUE(fs::exists(out.path() / "png" / "y" / "frame-00001.png"));
}

// Issue 52, classes 3, 5, 13 and 14: a link loop anywhere in the folder aborted export (exit
// 134); a FIFO named summary.json or like a rank file blocked it; a folder, FIFO or link to
// /dev/zero named like a rank file was skipped silently. Each member, under a name of no
// interest, a rank file's name and summary.json: export ends (a child under an alarm), writes
// every readable video, and names the rank file or the summary it could not use.
TEST(ExportOddFiles, NonFilesInTheFolderAreNamedNeverCrashOrHang) {
  for (const rt::Odd kind : rt::odd_kinds()) {
    for (const std::string name : {"junk", "rank-00002.h5", "summary.json"}) {
      SCOPED_TRACE(std::string(rt::odd_name(kind)) + " named " + name);
      rt::ScratchDir run("export-odd");
      rt::ScratchDir out("export-odd-out");
      rt::write_rank(run.path(), 0, 2, {"x"});
      rt::write_rank(run.path(), 1, 2, {"y"});
      rt::make_odd(run.path() / name, kind);
      const auto o = test::run_main_in_child(
          export_main, "omni-dp-export",
          {run.path().string(), "--format", "png", "--out", (out.path() / "png").string()});
      ASSERT_EQ(o.code, 0) << test::describe(o);
      EXPECT_NE(o.out.find("exported 2 of 2 video(s) as png"), std::string::npos) << o.out;
      const std::string file = (run.path() / name).string();
      EXPECT_EQ(rt::occurrences_of(o.err, "read: skipping unreadable " + file + ": " + file + ": " +
                                              rt::odd_problem(kind)),
                name.starts_with("rank-") ? 1U : 0U)
          << o.err;
      EXPECT_EQ(rt::occurrences_of(o.err, "read: " + file + ": " + rt::odd_problem(kind) +
                                              "; the figures are recomputed from the rows"),
                name == "summary.json" ? 1U : 0U)
          << o.err;
      EXPECT_TRUE(fs::exists(out.path() / "png" / "y" / "frame-00001.png"));
    }
  }
}

}  // namespace
}  // namespace omnidp::cli
