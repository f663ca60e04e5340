#include "omnidp/results/summary.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "omnidp/common/error.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

TEST(Summary, JsonRoundTripOfEveryField) {
  const RunSummary s = testing::filled_summary();
  testing::ScratchDir dir("summary");
  write_summary_json(dir.path() / "summary.json", s);
  testing::expect_same_summary(read_summary_json(dir.path() / "summary.json"), s);
}

TEST(Summary, MalformedJsonNamesTheFile) {
  try {
    (void)summary_from_json("{\"total\": \"many\"}", "x/summary.json");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("x/summary.json: malformed summary JSON"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)summary_from_json("[1]", "y"), IoError);
  EXPECT_THROW((void)summary_from_json("{", "y"), IoError);
  EXPECT_EQ(summary_from_json("{}", "z").world_size, 1);  // defaults
}

TEST(Summary, Percentile) {
  const std::vector<double> v = {4.0, 1.0, 3.0, 2.0};
  EXPECT_EQ(percentile(v, 0.0), 1.0);
  EXPECT_EQ(percentile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.9), 3.7);
  EXPECT_EQ(percentile(v, 1.0), 4.0);
  EXPECT_EQ(percentile({}, 0.5), 0.0);
  EXPECT_EQ(percentile(std::vector<double>{7.0}, 0.9), 7.0);
}

TEST(Summary, RecomputedFromRows) {
  std::vector<ResultRecord> rows(4);
  const double t0 = 1000.0;
  const auto set = [&](ResultRecord& r, int rank, double start, double seconds, bool ok) {
    r.rank = rank;
    r.start_time = t0 + start;
    r.seconds = seconds;
    r.end_time = r.start_time + seconds;
    r.status = ok ? RequestStatus::ok : RequestStatus::failed;
  };
  set(rows[0], 0, 0.0, 10.0, true);
  set(rows[1], 1, 0.0, 20.0, true);
  set(rows[2], 0, 10.0, 30.0, true);
  set(rows[3], 1, 20.0, 5.0, false);
  const RunSummary s = recompute_summary(rows, RankLayout{2});
  EXPECT_EQ(s.total, 4U);
  EXPECT_EQ(s.completed, 3U);
  EXPECT_EQ(s.failed, 1U);
  EXPECT_EQ(s.makespan_s, 40.0);
  EXPECT_EQ(s.videos_per_min, 4.5);
  EXPECT_EQ(s.latency_p50_s, 20.0);
  EXPECT_EQ(s.latency_p90_s, 28.0);
  EXPECT_EQ(s.latency_max_s, 30.0);
  EXPECT_EQ(s.busy_s_per_rank, (std::vector<double>{40.0, 25.0}));
  EXPECT_EQ(s.busy_fraction_per_rank, (std::vector<double>{1.0, 0.625}));
  EXPECT_EQ(s.scheduling_efficiency, 65.0 / 80.0);
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.replicas, 2);
}

// Rows of a run with replica groups name only the leaders (ranks 0 and 2 of 2 x CFG 2); every
// member computed the same requests, so each rank gets its group's seconds and the efficiency
// counts all four GPUs.
TEST(Summary, RecomputedFromRowsCreditsEveryRankOfAGroup) {
  std::vector<ResultRecord> rows(3);
  const auto set = [](ResultRecord& r, int rank, double start, double seconds) {
    r.rank = rank;
    r.start_time = 100.0 + start;
    r.seconds = seconds;
    r.end_time = r.start_time + seconds;
  };
  set(rows[0], 0, 0.0, 10.0);
  set(rows[1], 2, 0.0, 8.0);
  set(rows[2], 0, 10.0, 10.0);
  RankLayout layout;
  layout.world_size = 4;
  layout.cfg_parallel = 2;
  const RunSummary s = recompute_summary(rows, layout);
  EXPECT_EQ(s.busy_s_per_rank, (std::vector<double>{20.0, 20.0, 8.0, 8.0}));
  EXPECT_EQ(s.busy_fraction_per_rank, (std::vector<double>{1.0, 1.0, 0.4, 0.4}));
  EXPECT_EQ(s.scheduling_efficiency, 56.0 / 80.0);
  EXPECT_EQ(s.replicas, 2);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.cfg_parallel_size, 2);
  EXPECT_EQ(s.sequence_parallel_size, 1);
}

// Without the coordinator's work, ranks 1..3 form one group (SP 3): rank 0 stays at 0 busy
// seconds and is not counted as a GPU of the efficiency.
TEST(Summary, RecomputedFromRowsLeavesTheIdleCoordinatorOut) {
  std::vector<ResultRecord> rows(1);
  rows[0].rank = 1;
  rows[0].start_time = 0.0;
  rows[0].seconds = 6.0;
  rows[0].end_time = 6.0;
  RankLayout layout;
  layout.world_size = 4;
  layout.sequence_parallel = 3;
  layout.coordinator_works = false;
  const RunSummary s = recompute_summary(rows, layout);
  EXPECT_EQ(s.busy_s_per_rank, (std::vector<double>{0.0, 6.0, 6.0, 6.0}));
  EXPECT_EQ(s.scheduling_efficiency, 1.0);
  EXPECT_EQ(s.replicas, 1);
}

TEST(Summary, RankLayoutFromTheRunsConfiguration) {
  const RankLayout layout = rank_layout(
      "parallel:\n  tensor_parallel_size: 2\n  sequence_parallel_size: 2\n"
      "  cfg_parallel_size: 2\n  coordinator_runs_work: false\n",
      9);
  EXPECT_EQ(layout.world_size, 9);
  EXPECT_EQ(layout.tensor_parallel, 2);
  EXPECT_EQ(layout.sequence_parallel, 2);
  EXPECT_EQ(layout.cfg_parallel, 2);
  EXPECT_FALSE(layout.coordinator_works);
  EXPECT_EQ(layout.group_size(), 8);
  EXPECT_EQ(layout.working_ranks(), 8);
  // No configuration, or one this build cannot read: plain data parallelism.
  for (const char* text : {"", "parallel: [1, 2"}) {
    const RankLayout plain = rank_layout(text, 3);
    EXPECT_EQ(plain.world_size, 3) << text;
    EXPECT_EQ(plain.group_size(), 1) << text;
    EXPECT_TRUE(plain.coordinator_works) << text;
  }
}

}  // namespace
}  // namespace omnidp::results
