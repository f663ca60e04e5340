#include "omnidp/results/merge.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "omnidp/common/error.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/results/summary_group.hpp"
#include "omnidp/results/table.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

// select_rows on many rows in a scrambled order: one row per id, by id, the rule's choice.
TEST(SelectRows, OneBestRowPerIdInIdOrderWhateverTheInputOrder) {
  std::vector<StoredRow> rows;
  constexpr int kIds = 2000;
  for (int k = 0; k < kIds; ++k) {
    char id[16];
    std::snprintf(id, sizeof id, "id%05d", k);
    const auto row = [&](RequestStatus status, double end, int attempt, std::size_t file,
                         bool expected, bool present) {
      StoredRow r;
      r.record.id = id;
      r.record.status = status;
      r.record.end_time = end;
      r.record.attempt = attempt;
      r.record.input_key =
          std::string(id) + "/" + std::to_string(file) + "/" + std::to_string(attempt);
      r.file_order = file;
      r.video_expected = expected;
      r.video_present = present;
      return r;
    };
    rows.push_back(row(RequestStatus::failed, 50.0, 3, 2, false, false));  // newest, but failed
    rows.push_back(row(RequestStatus::ok, 20.0, 1, 0, true, true));
    if (k % 2 == 0) rows.push_back(row(RequestStatus::ok, 30.0, 2, 1, true, true));   // the best
    if (k % 3 == 0) rows.push_back(row(RequestStatus::ok, 90.0, 4, 3, true, false));  // no video
    if (k % 5 == 0) rows.push_back(row(RequestStatus::ok, 20.0, 1, 4, true, true));   // later file
  }
  const std::size_t total = rows.size();
  // A fixed scramble (an LCG), so the input order is far from the output order.
  std::uint64_t state = 12345;
  for (std::size_t i = rows.size() - 1; i > 0; --i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(rows[i], rows[static_cast<std::size_t>(state >> 33) % (i + 1)]);
  }
  std::size_t dropped = 0;
  std::size_t without_video = 0;
  const auto selected = select_rows(std::move(rows), &dropped, &without_video);
  ASSERT_EQ(selected.size(), static_cast<std::size_t>(kIds));
  // The ok rows whose video is missing are counted apart from the duplicates (issue 52,
  // class 15: inspect called them "duplicates dropped").
  EXPECT_EQ(without_video, static_cast<std::size_t>((kIds + 2) / 3));
  EXPECT_EQ(dropped, total - kIds - without_video);
  for (int k = 0; k < kIds; ++k) {
    const StoredRow& r = selected[static_cast<std::size_t>(k)];
    char id[16];
    std::snprintf(id, sizeof id, "id%05d", k);
    ASSERT_EQ(r.record.id, id);
    const std::string want = k % 2 == 0 ? "/1/2" : (k % 5 == 0 ? "/4/1" : "/0/1");
    EXPECT_EQ(r.record.input_key, std::string(id) + want) << k;
  }
}

// Three ranks' files: "dup" failed on rank 1 (attempt 1) and ok on rank 2 (attempt 2).
void write_three_ranks(const std::filesystem::path& dir) {
  testing::write_rank(dir, 0, 3, {"b", "a/1", "."});
  {
    RankWriter writer(dir, testing::rank_info(1, 3), OutputConfig{});
    const Video v = testing::video_for("c");
    writer.write(testing::ok_record("c", v, 1), &v);
    ResultRecord failed = testing::failed_record("dup", "transient: out of memory", 1);
    failed.end_time = 1700000000.0;
    writer.write(failed, nullptr);
    writer.write(testing::failed_record("never", "ManifestError: missing image", 1), nullptr);
  }
  {
    RankWriter writer(dir, testing::rank_info(2, 3), OutputConfig{});
    const Video v = testing::video_for("dup");
    ResultRecord ok = testing::ok_record("dup", v, 2);
    ok.attempt = 2;
    ok.end_time = 1600000000.0;  // an earlier clock must not matter: ok beats failed
    writer.write(ok, &v);
  }
}

// The runtime's figures of a first run (nothing skipped) that wrote the rows of
// write_three_ranks (5 ok, 1 failed) and was interrupted before a 7th request.
RunSummary sample_summary() {
  RunSummary s;
  s.total = 7;
  s.completed = 5;
  s.failed = 1;
  s.skipped_resume = 0;
  s.makespan_s = 12.5;
  s.videos_per_min = 28.8;
  s.latency_p50_s = 1.5;
  s.latency_p90_s = 1.75;
  s.latency_max_s = 2.0;
  s.busy_s_per_rank = {4.0, 5.0, 6.0};
  s.busy_fraction_per_rank = {0.32, 0.4, 0.48};
  s.scheduling_efficiency = 0.4;
  s.world_size = 3;
  s.replicas = 3;
  s.policy = "dynamic";
  s.order = "cost_desc";
  s.interrupted = true;
  return s;
}

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Merge, ThreeRanksSortedOneRowPerIdWithExternalLinks) {
  ScratchDir dir("merge3");
  write_three_ranks(dir.path());
  const RunSummary summary = sample_summary();
  const MergeResult result = merge_directory(dir.path(), &summary, "the: config\n");
  EXPECT_EQ(result.path, dir.path() / "results.h5");
  EXPECT_EQ(result.rows, 6U);
  EXPECT_EQ(result.duplicates_dropped, 1U);
  EXPECT_EQ(result.rank_files,
            (std::vector<std::string>{"rank-00000.h5", "rank-00001.h5", "rank-00002.h5"}));
  EXPECT_EQ(result.summary_source, "runtime");

  const auto rows = read_stored_rows(result.path);
  std::vector<std::string> order;
  for (const auto& r : rows) order.push_back(r.record.id);
  EXPECT_EQ(order, (std::vector<std::string>{".", "a/1", "b", "c", "dup", "never"}));
  EXPECT_EQ(rows[4].record.status, RequestStatus::ok);
  EXPECT_EQ(rows[4].record.attempt, 2);
  EXPECT_EQ(rows[4].record.rank, 2);
  EXPECT_EQ(rows[5].record.status, RequestStatus::failed);
  EXPECT_EQ(rows[5].record.error, "ManifestError: missing image");
  EXPECT_FALSE(rows[5].video_present);

  const h5::File file = h5::open_file(result.path.string());
  const hid_t root = file.id();
  // External links with relative file names.
  H5L_info_t info{};
  ASSERT_GE(H5Lget_info(root, "/videos/dup", &info, H5P_DEFAULT), 0);
  EXPECT_EQ(info.type, H5L_TYPE_EXTERNAL);
  std::vector<char> value(info.u.val_size);
  ASSERT_GE(H5Lget_val(root, "/videos/dup", value.data(), value.size(), H5P_DEFAULT), 0);
  const char* target_file = nullptr;
  const char* target_path = nullptr;
  unsigned flags = 0;
  ASSERT_GE(H5Lunpack_elink_val(value.data(), value.size(), &flags, &target_file, &target_path), 0);
  EXPECT_STREQ(target_file, "rank-00002.h5");
  EXPECT_STREQ(target_path, "/videos/dup");
  EXPECT_EQ(read_video(root, "a/1").data, testing::video_for("a/1").data);
  EXPECT_EQ(hash_stored_video(root, "."), video_sha256(testing::video_for(".")));

  // /summary and /config.
  const h5::Group s = h5::open_group(root, "summary");
  EXPECT_EQ(h5::read_string_attribute(s.id(), "source"), "runtime");
  EXPECT_EQ(h5::read_int_attribute(s.id(), "total"), 7);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "completed"), 5);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "failed"), 1);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "skipped_resume"), 0);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "makespan_s"), 12.5);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "videos_per_min"), 28.8);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "latency_p50_s"), 1.5);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "latency_p90_s"), 1.75);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "latency_max_s"), 2.0);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "scheduling_efficiency"), 0.4);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "world_size"), 3);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "replicas"), 3);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "tensor_parallel_size"), 1);
  EXPECT_EQ(h5::read_int_attribute(s.id(), "cfg_parallel_size"), 1);
  EXPECT_EQ(h5::read_string_attribute(s.id(), "policy"), "dynamic");
  EXPECT_EQ(h5::read_string_attribute(s.id(), "order"), "cost_desc");
  EXPECT_EQ(h5::read_int_attribute(s.id(), "interrupted"), 1);
  EXPECT_EQ(h5::read_double_dataset(s.id(), "busy_s_per_rank"), summary.busy_s_per_rank);
  EXPECT_EQ(h5::read_double_dataset(s.id(), "busy_fraction_per_rank"),
            summary.busy_fraction_per_rank);
  EXPECT_EQ(h5::read_string_dataset(root, "config"), "the: config\n");
  const ResultsFileInfo fi = read_file_info(result.path);
  EXPECT_EQ(fi.format, "omni-dp-results/1");
  EXPECT_EQ(fi.config_yaml, "the: config\n");
  EXPECT_EQ(fi.world_size, 3);
  EXPECT_EQ(h5::read_strings_attribute(root, "rank_files"), result.rank_files);

  // Nothing but the rank files and results.h5 is left behind.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"rank-00000.h5", "rank-00001.h5", "rank-00002.h5",
                                             "results.h5"}));
}

TEST(Merge, LinksResolveBesideResultsNotInTheWorkingDirectory) {
  ScratchDir dir("mergecwd");
  ScratchDir decoy("decoy");
  write_three_ranks(dir.path());
  testing::write_rank(decoy.path(), 2, 3, {"dup"});  // a different rank-00002.h5 ...
  {
    // ... whose "dup" video differs.
    h5::File f = h5::open_file((decoy.path() / "rank-00002.h5").string(), true);
    const h5::Dataset d = h5::open_dataset(f.id(), "/videos/dup");
    std::vector<std::uint8_t> zeros(testing::video_for("dup").byte_size(), 0);
    ASSERT_GE(H5Dwrite(d.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()), 0);
  }
  merge_directory(dir.path());
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(decoy.path());
  std::string hash;
  try {
    const h5::File file = h5::open_file((dir.path() / "results.h5").string());
    hash = hash_stored_video(file.id(), "dup");
  } catch (...) {
    std::filesystem::current_path(cwd);
    throw;
  }
  std::filesystem::current_path(cwd);
  EXPECT_EQ(hash, video_sha256(testing::video_for("dup")));
}

TEST(Merge, VideoReadableWithH5dumpThroughTheLink) {
  OMNIDP_REQUIRE_H5DUMP();
  ScratchDir dir("mergedump");
  write_three_ranks(dir.path());
  merge_directory(dir.path());
  const auto bin = dir.path() / "c.bin";
  const std::string command = "cd / && h5dump -d /videos/c -b LE -o '" + bin.string() + "' '" +
                              (dir.path() / "results.h5").string() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(read_bytes(bin), testing::video_for("c").data);
}

TEST(Merge, SummaryFromJsonElseRecomputed) {
  ScratchDir dir("mergesummary");
  write_three_ranks(dir.path());
  const MergeResult recomputed = merge_directory(dir.path(), nullptr, {});
  EXPECT_EQ(recomputed.summary_source, "recomputed");
  {
    const h5::File file = h5::open_file(recomputed.path.string());
    const h5::Group s = h5::open_group(file.id(), "summary");
    EXPECT_EQ(h5::read_string_attribute(s.id(), "source"), "recomputed");
    EXPECT_EQ(h5::read_int_attribute(s.id(), "completed"), 5);
    EXPECT_EQ(h5::read_int_attribute(s.id(), "failed"), 1);
    EXPECT_EQ(h5::read_int_attribute(s.id(), "total"), 6);
    // The newest rank file's configuration.
    EXPECT_EQ(h5::read_string_dataset(file.id(), "config"), "model:\n  name: synthetic\n");
  }
  write_summary_json(dir.path() / "summary.json", sample_summary());
  const MergeResult from_json = merge_directory(dir.path());
  EXPECT_EQ(from_json.summary_source, "summary.json");
  const h5::File file = h5::open_file(from_json.path.string());
  const h5::Group s = h5::open_group(file.id(), "summary");
  EXPECT_EQ(h5::read_int_attribute(s.id(), "total"), 7);
  EXPECT_EQ(h5::read_double_attribute(s.id(), "makespan_s"), 12.5);
}

// Issue 39, class 12: figures that do not describe the rows merged are recomputed from them
// (docs/results.md, "Figures"): a rerun that skipped every done request ("0 total"), and a
// --merge-only after an interrupted resume (summary.json is the earlier run's).
TEST(Merge, FiguresThatDoNotDescribeTheRowsAreRecomputedFromThem) {
  ScratchDir dir("mergefigures");
  write_three_ranks(dir.path());  // 5 ok, 1 failed
  const auto summary_of = [](const MergeResult& merged) {
    const h5::File file = h5::open_file(merged.path.string());
    std::string source;
    return read_summary_group(file.id(), source);
  };
  // A rerun of the finished folder: every request skipped, nothing run.
  RunSummary rerun;
  rerun.skipped_resume = 6;
  rerun.policy = "dynamic";
  const MergeResult merged = merge_directory(dir.path(), &rerun, {});
  EXPECT_EQ(merged.summary_source, "recomputed");
  RunSummary s = summary_of(merged);
  EXPECT_EQ(s.total, 6U);
  EXPECT_EQ(s.completed, 5U);
  EXPECT_EQ(s.failed, 1U);
  EXPECT_GT(s.videos_per_min, 0.0);
  EXPECT_EQ(s.policy, "dynamic");
  // A resumed segment that ran 2 of them: its figures cover 2 rows of 6.
  RunSummary resumed = sample_summary();
  resumed.completed = 2;
  resumed.failed = 0;
  resumed.skipped_resume = 4;
  EXPECT_EQ(merge_directory(dir.path(), &resumed, {}).summary_source, "recomputed");
  EXPECT_EQ(summary_of(merge_directory(dir.path(), &resumed, {})).completed, 5U);

  // --merge-only with the summary.json of an earlier run: 18 total, 3 completed.
  RunSummary earlier = sample_summary();
  earlier.total = 18;
  earlier.completed = 3;
  earlier.failed = 0;
  write_summary_json(dir.path() / "summary.json", earlier);
  const MergeResult stale = merge_directory(dir.path());
  EXPECT_EQ(stale.summary_source, "recomputed");
  s = summary_of(stale);
  EXPECT_EQ(s.total, 6U);
  EXPECT_EQ(s.completed, 5U);
  // Counts that match, but written before a rank file last changed: an earlier run's too.
  write_summary_json(dir.path() / "summary.json", sample_summary());
  EXPECT_EQ(merge_directory(dir.path()).summary_source, "summary.json");
  const auto rank0 = dir.path() / "rank-00000.h5";
  std::filesystem::last_write_time(
      dir.path() / "summary.json",
      std::filesystem::last_write_time(rank0) - std::chrono::seconds(60));
  EXPECT_EQ(merge_directory(dir.path()).summary_source, "recomputed");
}

// The rows' forwards and forwards_computed survive the merge into results.h5 (the duplicate
// rule's choice keeps its own), and the recomputed figures hold the step cache's skip rate over
// the ok rows that recorded them: 60/20 and 60/60 -> 1 - 80/120.
TEST(Merge, KeepsTheRowsForwardsAndRecomputesTheSkipRate) {
  ScratchDir dir("mergeforwards");
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 2), OutputConfig{});
    const Video a = testing::video_for("a");
    ResultRecord cached = testing::ok_record("a", a, 0);
    cached.forwards = 60;
    cached.forwards_computed = 20;
    writer.write(cached, &a);
    const Video b = testing::video_for("b");
    ResultRecord whole = testing::ok_record("b", b, 0);
    whole.forwards = 60;
    whole.forwards_computed = 60;
    writer.write(whole, &b);
    ResultRecord failed = testing::failed_record("c", "boom", 0);
    failed.forwards = 50;  // a failed row does not count (the worker records none)
    failed.forwards_computed = 10;
    writer.write(failed, nullptr);
  }
  {
    RankWriter writer(dir.path(), testing::rank_info(1, 2), OutputConfig{});
    const Video d = testing::video_for("d");
    writer.write(testing::ok_record("d", d, 1), &d);  // not recorded: 0, 0
    ResultRecord retried = testing::failed_record("a", "transient: out of memory", 1);
    retried.end_time = 1600000000.0;
    retried.forwards = 7;
    writer.write(retried, nullptr);
  }
  const MergeResult merged = merge_directory(dir.path(), nullptr, {});
  EXPECT_EQ(merged.summary_source, "recomputed");
  EXPECT_EQ(merged.duplicates_dropped, 1U);
  const auto rows = read_stored_rows(merged.path);
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[0].record.id, "a");
  EXPECT_EQ(rows[0].record.forwards, 60);
  EXPECT_EQ(rows[0].record.forwards_computed, 20);
  EXPECT_EQ(rows[1].record.forwards, 60);
  EXPECT_EQ(rows[1].record.forwards_computed, 60);
  EXPECT_EQ(rows[2].record.forwards, 50);
  EXPECT_EQ(rows[2].record.forwards_computed, 10);
  EXPECT_EQ(rows[3].record.forwards, 0);
  EXPECT_EQ(rows[3].record.forwards_computed, 0);

  const h5::File file = h5::open_file(merged.path.string());
  EXPECT_TRUE(has_forwards_columns(h5::open_dataset(file.id(), kRequestsPath)));
  const h5::Group g = h5::open_group(file.id(), "summary");
  EXPECT_EQ(h5::read_int_attribute(g.id(), "forwards"), 120);
  EXPECT_EQ(h5::read_int_attribute(g.id(), "forwards_computed"), 80);
  EXPECT_EQ(h5::read_double_attribute(g.id(), "cache_skip_rate"), 1.0 - 80.0 / 120.0);
}

TEST(Merge, StoreVideoOffHasNoVideosGroup) {
  ScratchDir dir("mergenovideo");
  OutputConfig output;
  output.store_video = false;
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), output);
    writer.write(testing::ok_record("a", testing::video_for("a")), nullptr);
  }
  const MergeResult result = merge_directory(dir.path());
  EXPECT_EQ(result.rows, 1U);
  const h5::File file = h5::open_file(result.path.string());
  EXPECT_FALSE(h5::link_exists(file.id(), "/videos"));
}

TEST(Merge, NoRankFilesIsAnInputErrorExit2) {
  ScratchDir dir("mergeempty");
  try {
    merge_directory(dir.path());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.path().string() + ": no rank-*.h5 files to merge");
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "results.h5"));
}

}  // namespace
}  // namespace omnidp::results
