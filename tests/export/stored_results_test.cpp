#include "omnidp/export/stored_results.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/summary.hpp"
#include "results/test_util.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;
namespace rt = results::testing;

std::vector<std::string> ids_of(const StoredRun& run) {
  std::vector<std::string> ids;
  for (const auto& row : run.rows) ids.push_back(row.record.id);
  return ids;
}

TEST(StoredRun, FolderOfRankFilesRecomputesWithoutSummaryJson) {
  rt::ScratchDir dir("stored-dir");
  rt::write_rank(dir.path(), 0, 2, {"b", "a/1"});
  rt::write_failed_rank(dir.path(), 1, 2, {"c"});
  const StoredRun run = read_stored_run(dir.path());
  EXPECT_EQ(run.files.size(), 2U);
  EXPECT_EQ(run.info.model, "synthetic");
  EXPECT_EQ(ids_of(run), (std::vector<std::string>{"a/1", "b", "c"}));
  EXPECT_EQ(run.summary_source, "recomputed");
  EXPECT_EQ(run.summary.total, 3U);
  EXPECT_EQ(run.summary.completed, 2U);
  EXPECT_EQ(run.summary.failed, 1U);
  EXPECT_EQ(run.summary.world_size, 2);
}

TEST(StoredRun, SummaryJsonBesideRankFilesIsUsed) {
  rt::ScratchDir dir("stored-json");
  rt::write_rank(dir.path(), 0, 1, {"x"});
  RunSummary s;  // the figures of the run that wrote the row (interrupted: 9 planned)
  s.total = 9;
  s.completed = 1;
  s.policy = "lpt";
  results::write_summary_json(dir.path() / "summary.json", s);
  const StoredRun run = read_stored_run(dir.path());
  EXPECT_EQ(run.summary_source, "summary.json");
  EXPECT_EQ(run.summary.total, 9U);
  EXPECT_EQ(run.summary.policy, "lpt");
}

TEST(StoredRun, ResultsH5GivesItsSummaryGroupAndVideosThroughLinks) {
  rt::ScratchDir dir("stored-merged");
  rt::write_rank(dir.path(), 0, 2, {"x"});
  rt::write_rank(dir.path(), 1, 2, {"y"});
  RunSummary s;
  s.total = 2;
  s.completed = 2;
  s.makespan_s = 3.25;
  s.busy_s_per_rank = {1.5, 1.5};
  s.busy_fraction_per_rank = {0.5, 0.5};
  s.order = "cost";
  (void)results::merge_directory(dir.path(), &s);
  const StoredRun run = read_stored_run(dir.path() / "results.h5");
  EXPECT_EQ(run.summary_source, "runtime");
  EXPECT_EQ(run.summary.makespan_s, 3.25);
  EXPECT_EQ(run.summary.busy_s_per_rank, (std::vector<double>{1.5, 1.5}));
  EXPECT_EQ(run.summary.order, "cost");
  ASSERT_EQ(run.rows.size(), 2U);
  const StoredVideo y = read_stored_video(run.rows[1].file, "y");
  EXPECT_EQ(y.video.data, rt::video_for("y").data);
  EXPECT_EQ(y.fps, 24);
  EXPECT_EQ(y.prompt, "a prompt for y");
}

TEST(StoredRun, MissingPathIsAnIoError) {
  rt::ScratchDir dir("stored-missing");
  EXPECT_THROW((void)read_stored_run(dir.path() / "nope"), IoError);
  try {
    (void)read_stored_run(dir.path());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.message(),
              "holds neither rank-*.h5 files nor results.h5, nor folders that do (shards)");
  }
}

// The adapters a run's rows were made with, from their numerics profiles: the job's set and each
// manifest set with its rows; nothing for a run without adapters.
TEST(StoredRun, AdaptersAreListedFromTheRowsProfiles) {
  StoredRun run;
  const auto add = [&](const std::string& numerics) {
    results::StoredRow row;
    row.record.numerics = numerics;
    run.rows.push_back(row);
  };
  add("dtype=bf16;software=x");
  EXPECT_TRUE(describe_adapters(run).empty());
  add("dtype=bf16;lora=aaaaaaaaaaaa*1@high_noise+bbbbbbbbbbbb*1@low_noise;lora_line=cccccccccccc*0."
      "5;software=x");
  add("dtype=bf16;lora=aaaaaaaaaaaa*1@high_noise+bbbbbbbbbbbb*1@low_noise;lora_line=cccccccccccc*0."
      "5;software=x");
  add("dtype=bf16;lora=aaaaaaaaaaaa*1@high_noise+bbbbbbbbbbbb*1@low_noise;lora_line=dddddddddddd*1;"
      "software=x");
  EXPECT_EQ(describe_adapters(run),
            (std::vector<std::string>{
                "job aaaaaaaaaaaa*1@high_noise+bbbbbbbbbbbb*1@low_noise; 2 manifest set(s)",
                "cccccccccccc*0.5 (2 rows)", "dddddddddddd*1 (1 row)"}));
}

}  // namespace
}  // namespace omnidp::video_export
