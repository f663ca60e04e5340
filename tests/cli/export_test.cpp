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
                       "exported 2 of 2 video(s) as mp4 to " + out().string() +
                       "; 1 failed request(s) have no video\n");
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

// Issue 52, class 15: a folder a running job writes said "exported 0 of 0" while it skipped its
// ok rows. Every ok row counts in the total; the line says how many were not exported and why
// (exit 1: not every video was written); a failed request is named as such.
TEST(ExportLive, RowsOfARunningJobAreCountedAndNamed) {
  rt::ScratchDir run("export-live");
  rt::ScratchDir out("export-live-out");
  const fs::path png = out.path() / "png";
  rt::LiveRank live(run.path(), 0, 2, {"a", "b"});
  const std::string why =
      "2 ok row(s) not exported: a running job is writing their rank file (their videos can be "
      "read once that job has ended)";
  const Outcome only_live =
      run_export({run.path().string(), "--format", "png", "--out", png.string()});
  EXPECT_EQ(only_live.code, 1) << only_live.err;
  EXPECT_EQ(only_live.out, "exported 0 of 2 video(s) as png to " + png.string() + "; " + why + "\n");
  rt::write_rank(run.path(), 1, 2, {"c"});
  rt::write_failed_rank(run.path(), 1, 2, {"z"});
  const Outcome mixed = run_export({run.path().string(), "--format", "png", "--out", png.string()});
  EXPECT_EQ(mixed.code, 1) << mixed.err;
  EXPECT_EQ(mixed.out, "c -> " + (png / "c").string() + " (2 frames, 6x4, 24 fps)\n" +
                           "exported 1 of 3 video(s) as png to " + png.string() + "; " + why +
                           "; 1 failed request(s) have no video\n");
  ASSERT_EQ(live.finish(), 0);
  const Outcome after = run_export({run.path().string(), "--format", "png", "--out", png.string()});
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_NE(after.out.find("\nexported 3 of 3 video(s) as png to " + png.string() +
                           "; 1 failed request(s) have no video\n"),
            std::string::npos)
      << after.out;
}

// Issue 52, class 15: --ids splits at commas, so an id holding one could not be chosen. --id
// takes one id exactly (repeatable), --ids-file one id a line; all three combine, each id once.
TEST(ExportIds, AnIdWithACommaIsChosenByIdOrIdsFile) {
  rt::ScratchDir run("export-ids");
  rt::ScratchDir out("export-ids-out");
  rt::write_rank(run.path(), 0, 1, {"a,b", "c", "d e"});
  const fs::path png = out.path() / "png";
  const Outcome split =
      run_export({run.path().string(), "--format", "png", "--out", png.string(), "--ids", "a,b"});
  EXPECT_EQ(split.code, 1);
  EXPECT_EQ(split.err, "omni-dp-export: skipped 'a': no such request in " + run.path().string() +
                           "\nomni-dp-export: skipped 'b': no such request in " +
                           run.path().string() + "\n");
  EXPECT_EQ(split.out, "exported 0 of 2 video(s) as png to " + png.string() +
                           "; 2 --ids entries skipped (named above)\n");
  const Outcome exact = run_export(
      {run.path().string(), "--format", "png", "--out", png.string(), "--id", "a,b", "--id", "c"});
  EXPECT_EQ(exact.code, 0) << exact.err;
  EXPECT_EQ(exact.out, "a,b -> " + (png / "a,b").string() + " (2 frames, 6x4, 24 fps)\n" + "c -> " +
                           (png / "c").string() + " (2 frames, 6x4, 24 fps)\n" +
                           "exported 2 of 2 video(s) as png to " + png.string() + "\n");
  const fs::path list = out.path() / "ids.txt";
  std::ofstream(list) << "a,b\r\n\nd e\nc\n";
  const Outcome file =
      run_export({run.path().string(), "--format", "png", "--out", (out.path() / "f").string(),
                  "--ids-file", list.string(), "--ids", "c", "--id", "a,b"});
  EXPECT_EQ(file.code, 0) << file.err;
  EXPECT_NE(file.out.find("exported 3 of 3 video(s)"), std::string::npos) << file.out;
  EXPECT_TRUE(fs::exists(out.path() / "f" / "d e" / "frame-00001.png"));
  const Outcome missing = run_export({run.path().string(), "--format", "png", "--out", png.string(),
                                      "--ids-file", (out.path() / "no").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err,
            "omni-dp-export: --ids-file: '" + (out.path() / "no").string() + "' does not exist\n");
  const Outcome folder = run_export({run.path().string(), "--format", "png", "--out", png.string(),
                                     "--ids-file", out.path().string()});
  EXPECT_EQ(folder.code, 2);
  EXPECT_EQ(folder.err,
            "omni-dp-export: --ids-file: '" + out.path().string() + "' is not a regular file\n");
}

// Issue 52, class 15: an id holding a newline or an escape sequence is echoed escaped, one line.
TEST(ExportIds, IdsInMessagesAreOneLine) {
  rt::ScratchDir run("export-ids-nl");
  rt::ScratchDir out("export-ids-nl-out");
  rt::write_rank(run.path(), 0, 1, {"a"});
  const Outcome o = run_export({run.path().string(), "--format", "png", "--out",
                                (out.path() / "png").string(), "--id", "x\ny\x1b[2J"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "omni-dp-export: skipped 'x\\ny\\x1b[2J': no such request in " +
                       run.path().string() + "\n");
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
