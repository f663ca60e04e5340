#include "omnidp/cli/inspect.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child_process.hpp"
#include "cli/run_main.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/results/table.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"

namespace omnidp::cli {
namespace {

namespace fs = std::filesystem;
namespace rt = results::testing;

using testing::Outcome;

Outcome run_inspect(std::vector<std::string> args) {
  return testing::run_main(inspect_main, "omni-dp-inspect", std::move(args));
}

// Two ranks: a (1.5 s), bb (4 s) on rank 0; c failed, d (2.25 s) on rank 1; merged with the
// runtime's figures.
class InspectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      results::RankWriter w(dir_.path(), rt::rank_info(0, 2), OutputConfig{});
      const Video a = rt::video_for("a");
      w.write(rt::ok_record("a", a, 0), &a);
      const Video bb = rt::video_for("bb");
      ResultRecord r = rt::ok_record("bb", bb, 0);
      r.seconds = 4.0;
      w.write(r, &bb);
      w.close();
    }
    {
      results::RankWriter w(dir_.path(), rt::rank_info(1, 2), OutputConfig{});
      w.write(rt::failed_record("c", "boom: c", 1), nullptr);
      const Video d = rt::video_for("d");
      ResultRecord r = rt::ok_record("d", d, 1);
      r.seconds = 2.25;
      w.write(r, &d);
      w.close();
    }
    RunSummary s;
    s.total = 4;
    s.completed = 3;
    s.failed = 1;
    s.makespan_s = 10.0;
    s.videos_per_min = 18.0;
    s.latency_p50_s = 2.25;
    s.latency_p90_s = 3.65;
    s.latency_max_s = 4.0;
    s.busy_s_per_rank = {5.5, 2.75};
    s.busy_fraction_per_rank = {0.55, 0.275};
    s.scheduling_efficiency = 0.5;
    s.world_size = 2;
    s.replicas = 2;
    s.policy = "lpt";
    s.order = "cost";
    (void)results::merge_directory(dir_.path(), &s);
  }
  fs::path results_h5() const { return dir_.path() / "results.h5"; }
  rt::ScratchDir dir_{"inspect"};
};

TEST_F(InspectCli, TableOfAKnownFile) {
  const Outcome o = run_inspect({results_h5().string(), "--slowest", "3"});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string expected =
      "run:          " + results_h5().string() + "\n" +
      "files:        1 (results.h5)\n"
      "model:        synthetic (omni-dp " +
      std::string(version()) + ", git " + std::string(git_revision()) + ")\n" +
      "requests:     4 total, 3 completed, 1 failed, 0 skipped (done before)\n"
      "rows:         4 (0 duplicate(s) dropped)\n"
      "numerics:     " +
      std::string(rt::kTestNumerics) +
      " (4 rows)\n"
      "interrupted:  no\n"
      "makespan:     10.000 s\n"
      "throughput:   18.00 videos/min\n"
      "latency:      p50 2.250 s, p90 3.650 s, max 4.000 s\n"
      "scheduling:   efficiency 0.500, world size 2, replicas 2, tp 1, sp 1, cfg 1, policy lpt, "
      "order cost\n"
      "model flops:  not counted (no ok request with a model FLOP count)\n"
      "step cache:   not recorded (no ok request with a forward count)\n"
      "figures from: runtime\n"
      "\n"
      "per rank:\n"
      "  rank  requests     ok  failed     busy_s   busy\n"
      "     0         2      2       0      5.500  55.0%\n"
      "     1         2      1       1      2.750  27.5%\n"
      "\n"
      "failures (1 of 1):\n"
      "  c (rank 1, attempt 1): boom: c\n"
      "\n"
      "slowest 3 of 4 request(s):\n"
      "   seconds  rank  status  frames  size        id\n"
      "     4.000     0  ok           2  6x4         bb\n"
      "     2.250     1  ok           2  6x4         d\n"
      "     1.500     0  ok           2  6x4         a\n";
  EXPECT_EQ(o.out, expected);
}

TEST_F(InspectCli, FolderOfRankFilesRecomputesTheFigures) {
  const Outcome o = run_inspect({dir_.path().string(), "--slowest", "1"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("files:        2 (rank-00000.h5, rank-00001.h5)\n"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("figures from: recomputed\n"), std::string::npos) << o.out;
  // busy = sum of seconds per rank; the failed row counts (0.5 s)
  EXPECT_NE(o.out.find("     1         2      1       1      2.750"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("slowest 1 of 4 request(s):\n"), std::string::npos) << o.out;
}

// Issue 39, class 12: after a rerun of the finished folder (every request skipped), its
// summary.json holds that rerun's figures ("0 total, 0.00 videos/min"); inspect shows the
// figures of the rows, recomputed, for the folder and for the results.h5 the rerun merged.
TEST_F(InspectCli, ARerunsFiguresAreNotTheFoldersFigures) {
  RunSummary rerun;
  rerun.skipped_resume = 4;
  rerun.world_size = 2;
  results::write_summary_json(dir_.path() / "summary.json", rerun);
  (void)results::merge_directory(dir_.path(), &rerun);
  for (const fs::path& input : {dir_.path(), results_h5()}) {
    const Outcome o = run_inspect({input.string()});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("requests:     4 total, 3 completed, 1 failed, 0 skipped"), std::string::npos)
        << input << "\n"
        << o.out;
    EXPECT_EQ(o.out.find("throughput:   0.00 videos/min"), std::string::npos) << input << o.out;
    EXPECT_NE(o.out.find("figures from: recomputed\n"), std::string::npos) << input << o.out;
  }
  // The figures of the run that wrote the rows, in a summary.json newer than them, are used.
  RunSummary first;
  first.total = 4;
  first.completed = 3;
  first.failed = 1;
  first.videos_per_min = 18.0;
  results::write_summary_json(dir_.path() / "summary.json", first);
  const Outcome o = run_inspect({dir_.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("throughput:   18.00 videos/min\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("figures from: summary.json\n"), std::string::npos) << o.out;
}

TEST_F(InspectCli, JsonHasTheSameFigures) {
  const Outcome o = run_inspect({results_h5().string(), "--json", "--slowest", "2"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["summary"]["completed"], 3);
  EXPECT_EQ(j["summary"]["policy"], "lpt");
  EXPECT_EQ(j["summary_source"], "runtime");
  EXPECT_EQ(j["failures_total"], 1);
  EXPECT_EQ(j["failures"][0]["error"], "boom: c");
  EXPECT_EQ(j["per_rank"][1]["busy_s"], 2.75);
  EXPECT_EQ(j["per_rank"][1]["failed"], 1);
  ASSERT_EQ(j["slowest"].size(), 2U);
  EXPECT_EQ(j["slowest"][0]["id"], "bb");
  EXPECT_EQ(j["slowest"][1]["seconds"], 2.25);
  ASSERT_EQ(j["numerics_profiles"].size(), 1U);
  EXPECT_EQ(j["numerics_profiles"][0]["profile"], rt::kTestNumerics);
  EXPECT_EQ(j["numerics_profiles"][0]["rows"], 4);
}

// The rows' model TFLOP recomputed into the MFU figures (docs/performance.md, "MFU"): a 0.625,
// bb 0.75, d 0.625 TFLOP over 1.5 + 4 + 2.25 s; the failed row is not counted. The rank files'
// "cpu:N" devices have no peak: MFU n/a, null in JSON.
TEST_F(InspectCli, FolderOfRankFilesPrintsTheModelFlopsWithoutAPeak) {
  Outcome o = run_inspect({dir_.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("model flops:  0.667 TFLOP/video (3 counted), 0.258 TFLOP/s per GPU, MFU "
                       "n/a (no known peak: CPU or a GPU not in the table; set "
                       "runtime.peak_tflops)\n"),
            std::string::npos)
      << o.out;
  o = run_inspect({dir_.path().string(), "--json"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["summary"]["flops_counted"], 3);
  EXPECT_DOUBLE_EQ(j["summary"]["model_tflop_per_video"].get<double>(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(j["summary"]["achieved_tflops_per_gpu"].get<double>(), 2.0 / 7.75);
  EXPECT_TRUE(j["summary"]["peak_tflops"].is_null());
  EXPECT_TRUE(j["summary"]["mfu"].is_null());
  EXPECT_TRUE(j["summary"]["makespan_mfu"].is_null());
  EXPECT_EQ(j["summary"]["peak_source"], "");
}

// Rank files of a run with runtime.peak_tflops: 2 in its configuration: MFU = achieved / 2.
TEST(InspectCliMfu, ConfiguredPeakGivesTheMfu) {
  rt::ScratchDir dir("inspect-mfu");
  results::RankFileInfo info = rt::rank_info(0, 1);
  info.config_yaml = "model:\n  name: synthetic\nruntime:\n  peak_tflops: 2\n";
  {
    results::RankWriter w(dir.path(), info, OutputConfig{});
    const Video a = rt::video_for("a");
    ResultRecord r = rt::ok_record("a", a, 0);  // 0.625 TFLOP in 1.5 s
    w.write(r, &a);
    w.close();
  }
  Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("model flops:  0.625 TFLOP/video (1 counted), 0.417 TFLOP/s per GPU, MFU "
                       "20.83% of 2 TFLOP/s (runtime.peak_tflops), makespan MFU 20.83%\n"),
            std::string::npos)
      << o.out;
  o = run_inspect({dir.path().string(), "--json"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["summary"]["peak_tflops"], 2.0);
  EXPECT_EQ(j["summary"]["peak_source"], "runtime.peak_tflops");
  EXPECT_DOUBLE_EQ(j["summary"]["mfu"].get<double>(), 0.625 / 1.5 / 2.0);
  EXPECT_DOUBLE_EQ(j["summary"]["makespan_mfu"].get<double>(), 0.625 / (1.5 * 1.0 * 2.0));
}

// Rows of a step-cached run: the skip rate over the ok rows that recorded their forwards (60/20
// and 60/60 -> 1 - 80/120), recomputed from the rank file, in the text and the JSON.
TEST(InspectCliStepCache, TheSkipRateOfTheRows) {
  rt::ScratchDir dir("inspect-cache");
  {
    results::RankWriter w(dir.path(), rt::rank_info(0, 1), OutputConfig{});
    const Video a = rt::video_for("a");
    ResultRecord r = rt::ok_record("a", a, 0);
    r.forwards = 60;
    r.forwards_computed = 20;
    w.write(r, &a);
    const Video bb = rt::video_for("bb");
    r = rt::ok_record("bb", bb, 0);
    r.seconds = 4.0;
    r.forwards = 60;
    r.forwards_computed = 60;
    w.write(r, &bb);
    w.write(rt::failed_record("c", "boom", 0), nullptr);
    w.close();
  }
  Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("step cache:   skip rate 33.33% (40 of 120 transformer forwards skipped, 80 "
                       "computed)\nfigures from: recomputed\n"),
            std::string::npos)
      << o.out;
  o = run_inspect({dir.path().string(), "--json", "--slowest", "1"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["summary"]["forwards"], 120);
  EXPECT_EQ(j["summary"]["forwards_computed"], 80);
  EXPECT_EQ(j["summary"]["cache_skip_rate"].get<double>(), 1.0 - 80.0 / 120.0);
  ASSERT_EQ(j["slowest"].size(), 1U);
  EXPECT_EQ(j["slowest"][0]["id"], "bb");
  EXPECT_EQ(j["slowest"][0]["forwards"], 60);
  EXPECT_EQ(j["slowest"][0]["forwards_computed"], 60);
}

// A folder resumed with --resume-mixed: every profile with its rows, most rows first.
TEST(InspectCliProfiles, MixedProfilesAreListedWithTheirRows) {
  rt::ScratchDir dir("inspect-mixed");
  {
    results::RankWriter w(dir.path(), rt::rank_info(0, 1), OutputConfig{});
    for (const char* id : {"a", "b"}) {
      const Video v = rt::video_for(id);
      w.write(rt::ok_record(id, v), &v);
    }
    const Video c = rt::video_for("c");
    ResultRecord r = rt::ok_record("c", c);
    r.numerics = "dtype=bf16;software=test";
    w.write(r, &c);
    w.close();
  }
  const Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(
      o.out.find("numerics:     2 profiles (mixed by --resume-mixed)\n  " +
                 std::string(rt::kTestNumerics) + " (2 rows)\n  dtype=bf16;software=test (1 row)\n"),
      std::string::npos)
      << o.out;
}

TEST_F(InspectCli, HtmlReportWithThumbnails) {
  const fs::path html = dir_.path() / "report.html";
  const Outcome o =
      run_inspect({"--html", html.string(), "--thumbnails", "2", results_h5().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_TRUE(fs::exists(html));
  EXPECT_EQ(o.out, "report: " + html.string() + " (" + std::to_string(fs::file_size(html)) +
                       " bytes, 4 requests)\n");
  std::ifstream in(html);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  EXPECT_NE(text.find("<g class=\"lane\" data-rank=\"1\">"), std::string::npos);
  EXPECT_EQ(text.find("<g class=\"lane\" data-rank=\"2\">"), std::string::npos);
  EXPECT_NE(text.find("<tr><th>policy</th><td>lpt, order cost</td></tr>"), std::string::npos);
  std::size_t figures = 0;
  for (auto at = text.find("<figure class=\"thumb\""); at != std::string::npos;
       at = text.find("<figure class=\"thumb\"", at + 1)) {
    ++figures;
  }
  EXPECT_EQ(figures, 2U);
}

TEST_F(InspectCli, ThumbnailsNeedHtml) {
  const Outcome o = run_inspect({"--thumbnails", "2", results_h5().string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--thumbnails requires --html"), std::string::npos) << o.err;
  // Issue 52, class 15: the path given and why, not "cannot create the report" of a temporary.
  const fs::path no = dir_.path() / "no";
  const Outcome bad = run_inspect({"--html", (no / "r.html").string(), results_h5().string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "omni-dp-inspect: " + (no / "r.html").string() +
                         ": cannot create the report: No such file or directory (creating a file "
                         "in '" +
                         no.string() + "')\n");
}

// The report replaces a regular file only: a FIFO is refused (and stays), a link is followed
// (and stays a link), a character device is written in place (and stays a device).
TEST_F(InspectCli, HtmlReportNeverDestroysWhatItsPathNames) {
  const fs::path fifo = dir_.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Outcome refused = run_inspect({"--html", fifo.string(), results_h5().string()});
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "omni-dp-inspect: " + fifo.string() +
                             ": the report goes to a regular file or a new path, not a FIFO\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
  const fs::path file = dir_.path() / "report.html";
  const fs::path link = dir_.path() / "latest.html";
  fs::create_symlink(file.filename(), link);
  ASSERT_EQ(run_inspect({"--html", link.string(), results_h5().string()}).code, 0);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_GT(fs::file_size(file), 0U);
  const Outcome device = run_inspect({"--html", "/dev/null", results_h5().string()});
  EXPECT_EQ(device.code, 0) << device.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // Issue 52, class 15: /proc/self/fd/N of a pipe (`--html /dev/stdout | less`) was named
  // ".pipe:[123].tmp-<pid>-<n>"; it is named as given, with what it is.
  int fds[2] = {-1, -1};
  ASSERT_EQ(::pipe(fds), 0);
  const std::string pipe_end = "/proc/self/fd/" + std::to_string(fds[1]);
  const Outcome piped = run_inspect({"--html", pipe_end, results_h5().string()});
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(piped.code, 2);
  EXPECT_EQ(piped.err, "omni-dp-inspect: " + pipe_end +
                           ": the report goes to a regular file or a new path, not a FIFO\n");
}

TEST_F(InspectCli, UnreadableInputExitsTwo) {
  const Outcome o = run_inspect({(dir_.path() / "nope").string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err,
            "omni-dp-inspect: " + (dir_.path() / "nope").string() + ": no such file or folder\n");
}

// Issue 39, class 8: a folder with one unreadable rank file (the job skipped it) is inspected
// with one warning; the report names the file it skipped.
TEST(InspectRecovered, AnUnreadableRankFileIsSkippedWithOneWarning) {
  rt::ScratchDir dir("inspect-recovered");
  rt::write_rank(dir.path(), 0, 2, {"a", "b"});
  std::ofstream(dir.path() / "rank-00001.h5", std::ios::binary) << "this is not an HDF5 file";
  rt::write_rank(dir.path(), 1, 2, {"c"});  // rank-00001.1.h5, the rerun's segment
  const Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("rows:         3 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("unreadable:   rank-00001.h5 (skipped"), std::string::npos) << o.out;
  const std::string warning = "skipping unreadable " + (dir.path() / "rank-00001.h5").string();
  EXPECT_NE(o.err.find(warning), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find(warning), o.err.rfind(warning)) << o.err;
  const Outcome json = run_inspect({"--json", dir.path().string()});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["rows"], 3);
  ASSERT_EQ(j["unreadable_files"].size(), 1U);
  EXPECT_EQ(j["unreadable_files"][0], (dir.path() / "rank-00001.h5").string());
}

// Issue 39: a folder a running job writes. Its live rank file's rows so far come from the live
// table (SWMR), and each row written since shows up on the next look; its videos wait for the
// job's end (no thumbnails); once the job has closed the file, it is read as any other.
TEST(InspectLive, AFolderARunningJobWritesShowsItsRowsSoFar) {
  rt::ScratchDir dir("inspect-live");
  rt::write_rank(dir.path(), 1, 2, {"c"});
  rt::LiveRank live(dir.path(), 0, 2, {"a", "b"});
  const Outcome first = run_inspect({dir.path().string()});
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("live:         rank-00000.h5 (a running job writes it: its rows so far, "
                           "from its live table)"),
            std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("rows:         3 "), std::string::npos) << first.out;
  EXPECT_NE(first.err.find("read: " + (dir.path() / "rank-00000.h5").string() +
                           " is being written by a running job"),
            std::string::npos)
      << first.err;
  live.write("d");
  const Outcome json = run_inspect({"--json", dir.path().string()});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["rows"], 4);
  ASSERT_EQ(j["live_files"].size(), 1U);
  EXPECT_EQ(j["live_files"][0], (dir.path() / "rank-00000.h5").string());
  const fs::path html = dir.path() / "report.html";
  const Outcome report = run_inspect({dir.path().string(), "--html", html.string()});
  ASSERT_EQ(report.code, 0) << report.err;
  std::ifstream in(html);
  std::ostringstream page;
  page << in.rdbuf();
  EXPECT_NE(page.str().find("1 file(s) a running job writes: their rows so far"), std::string::npos);
  ASSERT_EQ(live.finish(), 0);
  const Outcome after = run_inspect({dir.path().string()});
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(after.out.find("live:"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("rows:         4 "), std::string::npos) << after.out;
}

// Issue 39: the folders of a job array's shards, inspected at once through their parent: every
// shard's rows, the shards named, the figures recomputed from the rows.
TEST(InspectShards, AFolderOfShardFoldersShowsAllTheirRows) {
  rt::ScratchDir dir("inspect-shards");
  for (const char* shard : {"shard-00", "shard-01"})
    std::filesystem::create_directories(dir.path() / shard);
  rt::write_rank(dir.path() / "shard-00", 0, 1, {"a", "c"});
  rt::write_rank(dir.path() / "shard-01", 0, 1, {"b"});
  const Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("shards:       2 (shard-00, shard-01)\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("rows:         3 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("requests:     3 total, 3 completed, 0 failed"), std::string::npos) << o.out;
  const Outcome json = run_inspect({"--json", dir.path().string()});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["rows"], 3);
  ASSERT_EQ(j["shards"].size(), 2U);
  EXPECT_EQ(j["shards"][1], (dir.path() / "shard-01").string());
}

// Issue 39, class 13: a results.h5 copied without the rank files its videos link into gave one
// HDF5 link-traversal stack per video. Now one warning names the missing file.
TEST(InspectRecovered, AResultsFileCopiedWithoutItsRankFilesNamesTheMissingFile) {
  rt::ScratchDir dir("inspect-copied");
  rt::write_rank(dir.path(), 0, 1, {"a", "b", "c"});
  (void)results::merge_directory(dir.path(), nullptr);
  const auto copy = dir.path() / "copy";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(dir.path() / "results.h5", copy / "results.h5");
  const Outcome o = run_inspect({(copy / "results.h5").string()});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const std::string warning = "read: " + (copy / "results.h5").string() +
                              ": not using the rows of 3 requests ('a', ...): their videos cannot "
                              "be read back (" +
                              (copy / "rank-00000.h5").string() +
                              " is missing: results.h5 keeps its videos in the rank files beside "
                              "it (copy them with it, or read the output folder))";
  EXPECT_NE(o.err.find(warning), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("H5Dopen2"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("not using the row"), o.err.rfind("not using the row")) << o.err;
}

// Issue 52, class 15: ok rows dropped because their stored video is missing were counted as
// "duplicate(s) dropped". They have their own count, beside the duplicates: a deleted video
// (a rank died between the video and its row), and a results.h5 copied without its rank files.
TEST(InspectCounts, RowsWithoutTheirVideoAreNotDuplicates) {
  rt::ScratchDir dir("inspect-no-video");
  rt::write_rank(dir.path(), 0, 1, {"a", "b", "c"});
  rt::write_rank(dir.path(), 0, 1, {"a"});  // rank-00000.1.h5: a rerun's second row of a
  {
    const results::h5::File f = results::h5::open_file((dir.path() / "rank-00000.h5").string(), true);
    const std::string link = results::video_path("b");
    ASSERT_GE(H5Ldelete(f.id(), link.c_str(), H5P_DEFAULT), 0);
  }
  const Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\nrows:         2 (1 duplicate(s) dropped, 1 ok row(s) without their "
                       "video dropped)\n"),
            std::string::npos)
      << o.out;
  const Outcome json = run_inspect({"--json", dir.path().string()});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["rows"], 2);
  EXPECT_EQ(j["duplicates_dropped"], 1);
  EXPECT_EQ(j["rows_without_video"], 1);

  rt::ScratchDir copied("inspect-no-video-copy");
  rt::write_rank(copied.path(), 0, 1, {"a", "b", "c"});
  (void)results::merge_directory(copied.path(), nullptr);
  fs::create_directories(copied.path() / "alone");
  fs::copy_file(copied.path() / "results.h5", copied.path() / "alone" / "results.h5");
  const Outcome alone = run_inspect({(copied.path() / "alone" / "results.h5").string()});
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_NE(alone.out.find("\nrows:         0 (0 duplicate(s) dropped, 3 ok row(s) without "
                           "their video dropped)\n"),
            std::string::npos)
      << alone.out;
  // Nothing dropped: the line is as before.
  const Outcome whole = run_inspect({copied.path().string()});
  EXPECT_NE(whole.out.find("\nrows:         3 (0 duplicate(s) dropped)\n"), std::string::npos)
      << whole.out;
}

// Issue 52, class 15: ids and errors of rows are listed one line each: a newline in them is
// written as an escape.
TEST(InspectCounts, IdsAndErrorsAreListedOneLineEach) {
  rt::ScratchDir dir("inspect-one-line");
  {
    results::RankWriter w(dir.path(), rt::rank_info(0, 1), OutputConfig{});
    w.write(rt::failed_record("bad\nid", "line one\nline two", 0), nullptr);
    const Video v = rt::video_for("ok\tid");
    w.write(rt::ok_record("ok\tid", v, 0), &v);
    w.close();
  }
  const Outcome o = run_inspect({dir.path().string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\n  bad\\nid (rank 0, attempt 1): line one\\nline two\n"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("ok\\tid\n"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("bad\nid"), std::string::npos) << o.out;
}

// Issue 52, classes 3, 5 and 13: a link loop anywhere in the folder aborted inspect (an uncaught
// filesystem_error, exit 134); a FIFO named like a rank file blocked it; a folder, a FIFO or a
// link to /dev/zero named like one was skipped silently, as if the run had no more. Each member
// of "not a regular file", under a name of no interest and under a rank file's name: inspect
// ends (in a child under an alarm: a block fails the test), reads the rest, and lists the rank
// file unreadable with one warning naming what it is.
TEST(InspectOddFiles, NonFilesInTheFolderAreNamedNeverCrashOrHang) {
  for (const rt::Odd kind : rt::odd_kinds()) {
    for (const std::string name : {"junk", "rank-00002.h5"}) {
      SCOPED_TRACE(std::string(rt::odd_name(kind)) + " named " + name);
      rt::ScratchDir dir("inspect-odd");
      rt::write_rank(dir.path(), 0, 3, {"a", "b"});
      rt::write_rank(dir.path(), 1, 3, {"c"});
      rt::make_odd(dir.path() / name, kind);
      for (const bool json : {false, true}) {
        std::vector<std::string> args = {dir.path().string()};
        if (json) args.insert(args.begin(), "--json");
        const auto o = test::run_main_in_child(inspect_main, "omni-dp-inspect", args);
        ASSERT_EQ(o.code, 0) << test::describe(o);
        const bool rank_named = name.starts_with("rank-");
        const std::string warning = "read: skipping unreadable " + (dir.path() / name).string() +
                                    ": " + (dir.path() / name).string() + ": " +
                                    rt::odd_problem(kind);
        EXPECT_EQ(rt::occurrences_of(o.err, warning), rank_named ? 1U : 0U) << o.err;
        EXPECT_EQ(rt::occurrences_of(o.err, "skipping unreadable"), rank_named ? 1U : 0U) << o.err;
        if (json) {
          const auto j = nlohmann::json::parse(o.out);
          EXPECT_EQ(j["rows"], 3);
          EXPECT_EQ(j["unreadable_files"],
                    rank_named ? nlohmann::json::array({(dir.path() / name).string()})
                               : nlohmann::json::array());
          continue;
        }
        EXPECT_NE(o.out.find("requests:     3 total, 3 completed, 0 failed"), std::string::npos)
            << o.out;
        EXPECT_NE(o.out.find("files:        2 (rank-00000.h5, rank-00001.h5)\n"), std::string::npos)
            << o.out;
        EXPECT_EQ(o.out.find("unreadable:   " + name + " (skipped: its rows are not shown)\n") !=
                      std::string::npos,
                  rank_named)
            << o.out;
      }
    }
  }
}

// Issue 52, classes 5 and 14: summary.json was trusted over the rows. A FIFO there blocked
// inspect; a folder or garbage refused the whole folder (exit 2); an edited one (total -1,
// makespan -5) was shown as 18446744073709551615 total and -5.000 s. Every member: one warning
// naming the file and why, the figures recomputed from the rows.
TEST(InspectSummary, ASummaryJsonThatCannotBeUsedIsRecomputedFromTheRows) {
  RunSummary good;
  good.total = 3;
  good.completed = 3;
  good.makespan_s = 10.0;
  good.videos_per_min = 18.0;
  good.world_size = 2;
  good.replicas = 2;
  good.busy_s_per_rank = {3.0, 1.5};
  good.busy_fraction_per_rank = {0.3, 0.15};
  const std::string text = results::summary_to_json(good);
  const auto edited = [&text](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    if (at == std::string::npos) throw std::runtime_error("no '" + from + "' in " + t);
    return t.replace(at, from.size(), to);
  };
  struct Member {
    std::string name;
    std::string json;  // written as summary.json ("" = an odd file instead)
    rt::Odd odd = rt::Odd::fifo;
    std::string why;  // the warning's reason
  };
  std::vector<Member> members = {
      {"garbage", "not json {", {}, "malformed summary JSON: "},
      {"an array", "[1, 2]", {}, "summary JSON is not an object"},
      {"total -1",
       edited("\"total\": 3", "\"total\": -1"),
       {},
       "'total' must be a whole number >= 0"},
      {"total 2^64",
       edited("\"total\": 3", "\"total\": 18446744073709551616"),
       {},
       "'total' must be a whole number >= 0"},
      {"total 2.5",
       edited("\"total\": 3", "\"total\": 2.5"),
       {},
       "'total' must be a whole number >= 0"},
      {"total a string",
       edited("\"total\": 3", "\"total\": \"3\""),
       {},
       "'total' must be a whole number >= 0"},
      {"total below the rows",
       edited("\"total\": 3", "\"total\": 2"),
       {},
       "inconsistent summary: total 2 is less than completed 3 + failed 0"},
      {"makespan -5",
       edited("\"makespan_s\": 10.0", "\"makespan_s\": -5.0"),
       {},
       "inconsistent summary: makespan_s is -5, not a finite number >= 0"},
      {"makespan 1e999",
       edited("\"makespan_s\": 10.0", "\"makespan_s\": 1e999"),
       {},
       "malformed summary JSON: "},
      {"world size 0",
       edited("\"world_size\": 2", "\"world_size\": 0"),
       {},
       "inconsistent summary: world_size is 0, not a whole number >= 1"},
      {"world size 2^40",
       edited("\"world_size\": 2", "\"world_size\": 1099511627776"),
       {},
       "'world_size' must be a whole number within int's range"},
      {"interrupted 1",
       edited("\"interrupted\": false", "\"interrupted\": 1"),
       {},
       "'interrupted' must be true or false"},
      {"busy a string",
       edited("3.0,", "\"x\","),
       {},
       "'busy_s_per_rank' must be an array of numbers"},
      {"busy negative",
       edited("3.0,", "-3.0,"),
       {},
       "inconsistent summary: busy_s_per_rank holds -3, not a finite number >= 0"},
  };
  for (const rt::Odd kind : rt::odd_kinds()) {
    members.push_back({rt::odd_name(kind), "", kind, rt::odd_problem(kind)});
  }
  for (const auto& m : members) {
    SCOPED_TRACE(m.name);
    rt::ScratchDir dir("inspect-summary");
    rt::write_rank(dir.path(), 0, 2, {"a", "b"});
    rt::write_rank(dir.path(), 1, 2, {"c"});
    const auto summary = dir.path() / "summary.json";
    results::write_summary_json(summary, good);
    const auto control =
        test::run_main_in_child(inspect_main, "omni-dp-inspect", {dir.path().string()});
    ASSERT_EQ(control.code, 0) << test::describe(control);
    ASSERT_NE(control.out.find("figures from: summary.json\n"), std::string::npos) << control.out;
    ASSERT_NE(control.out.find("makespan:     10.000 s\n"), std::string::npos) << control.out;
    fs::remove(summary);
    if (m.json.empty()) {
      rt::make_odd(summary, m.odd);
    } else {
      std::ofstream(summary, std::ios::binary) << m.json;
    }
    const auto o = test::run_main_in_child(inspect_main, "omni-dp-inspect", {dir.path().string()});
    ASSERT_EQ(o.code, 0) << test::describe(o);
    EXPECT_NE(o.out.find("figures from: recomputed\n"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("requests:     3 total, 3 completed, 0 failed"), std::string::npos) << o.out;
    EXPECT_EQ(o.out.find("makespan:     -"), std::string::npos) << o.out;
    const std::string warning = "read: " + summary.string() + ": ";
    EXPECT_EQ(rt::occurrences_of(o.err, warning), 1U) << o.err;
    EXPECT_NE(o.err.find(m.why), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("; the figures are recomputed from the rows"), std::string::npos) << o.err;
  }
}

}  // namespace
}  // namespace omnidp::cli
