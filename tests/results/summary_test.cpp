#include "omnidp/results/summary.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "omnidp/common/error.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

RankLayout ranks(int world_size) {
  RankLayout layout;
  layout.world_size = world_size;
  return layout;
}

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
  const RunSummary s = recompute_summary(rows, ranks(2));
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

// The MFU figures from rows (docs/performance.md, "MFU"): only ok rows with a count, each
// row's peak from the run's runtime.peak_tflops.
TEST(Summary, MfuRecomputedFromRowsWithAConfiguredPeak) {
  std::vector<ResultRecord> rows(4);
  const auto set = [](ResultRecord& r, int rank, double start, double seconds, double tflop, bool ok) {
    r.rank = rank;
    r.start_time = 1000.0 + start;
    r.seconds = seconds;
    r.end_time = r.start_time + seconds;
    r.model_tflop = tflop;
    r.device = "cpu";
    r.status = ok ? RequestStatus::ok : RequestStatus::failed;
  };
  set(rows[0], 0, 0.0, 10.0, 600.0, true);
  set(rows[1], 1, 0.0, 20.0, 1000.0, true);
  set(rows[2], 0, 10.0, 30.0, 0.0, true);    // not counted (a model without a count)
  set(rows[3], 1, 20.0, 5.0, 700.0, false);  // failed: not counted
  RankLayout layout = ranks(2);
  layout.runtime.peak_tflops = 100.0;
  const RunSummary s = recompute_summary(rows, layout);
  EXPECT_EQ(s.makespan_s, 40.0);
  EXPECT_EQ(s.flops_counted, 2U);
  EXPECT_EQ(s.model_tflop_per_video, 800.0);
  EXPECT_EQ(s.achieved_tflops_per_gpu, 1600.0 / 30.0);
  EXPECT_EQ(s.peak_tflops, 100.0);
  EXPECT_EQ(s.peak_source, "runtime.peak_tflops");
  EXPECT_EQ(s.mfu, 1600.0 / 30.0 / 100.0);
  EXPECT_EQ(s.makespan_mfu, 1600.0 / (40.0 * 2.0 * 100.0));
  EXPECT_EQ(describe_flops(s),
            "800.000 TFLOP/video (2 counted), 53.333 TFLOP/s per GPU, MFU 53.33% of 100 TFLOP/s "
            "(runtime.peak_tflops), makespan MFU 20.00%");
}

// Without runtime.peak_tflops the rows' device names give the peak; a CPU row gives none.
TEST(Summary, MfuPeakFromTheRowsDevicesOrNotReported) {
  std::vector<ResultRecord> rows(1);
  rows[0].rank = 0;
  rows[0].start_time = 0.0;
  rows[0].seconds = 4.0;
  rows[0].end_time = 4.0;
  rows[0].model_tflop = 1978.8;
  rows[0].device = "cuda:0 (NVIDIA H200)";
  RunSummary s = recompute_summary(rows, ranks(1));
  EXPECT_EQ(s.achieved_tflops_per_gpu, 1978.8 / 4.0);
  EXPECT_EQ(s.peak_tflops, 989.4);
  EXPECT_EQ(s.peak_source, "device table (NVIDIA H200)");
  EXPECT_EQ(s.mfu, 1978.8 / 4.0 / 989.4);
  EXPECT_EQ(s.makespan_mfu, 1978.8 / (4.0 * 989.4));

  rows[0].device = "cpu";
  s = recompute_summary(rows, ranks(1));
  EXPECT_EQ(s.flops_counted, 1U);
  EXPECT_EQ(s.achieved_tflops_per_gpu, 1978.8 / 4.0);
  EXPECT_FALSE(s.peak_tflops.has_value());
  EXPECT_FALSE(s.mfu.has_value());
  EXPECT_FALSE(s.makespan_mfu.has_value());
  EXPECT_EQ(s.peak_source, "");
  EXPECT_EQ(describe_flops(s),
            "1978.800 TFLOP/video (1 counted), 494.700 TFLOP/s per GPU, MFU n/a (no known peak: "
            "CPU or a GPU not in the table; set runtime.peak_tflops)");
  const std::string json = summary_to_json(s);
  EXPECT_NE(json.find("\"mfu\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"peak_tflops\": null"), std::string::npos) << json;
  const RunSummary back = summary_from_json(json, "s.json");
  EXPECT_FALSE(back.mfu.has_value());
  EXPECT_EQ(back.achieved_tflops_per_gpu, s.achieved_tflops_per_gpu);

  rows.clear();
  EXPECT_EQ(describe_flops(recompute_summary(rows, ranks(1))),
            "not counted (no ok request with a model FLOP count)");
}

// A group of G GPUs computes each request together: its seconds count G times, in the achieved
// rate and (over the working GPUs) in the makespan MFU.
TEST(Summary, MfuCountsEveryGpuOfAGroup) {
  std::vector<ResultRecord> rows(1);
  rows[0].rank = 0;
  rows[0].seconds = 10.0;
  rows[0].end_time = 10.0;
  rows[0].model_tflop = 400.0;
  RankLayout layout = ranks(4);
  layout.cfg_parallel = 2;
  layout.runtime.peak_tflops = 50.0;
  const RunSummary s = recompute_summary(rows, layout);
  EXPECT_EQ(s.achieved_tflops_per_gpu, 20.0);
  EXPECT_EQ(s.mfu, 0.4);
  EXPECT_EQ(s.makespan_mfu, 400.0 / (10.0 * 4.0 * 50.0));  // two GPUs idle: 0.2
}

// Devices with different peaks: the peak is the GPU-seconds weighted mean, both sources named.
TEST(Summary, MfuOverMixedPeaks) {
  const std::vector<FlopsSample> samples{
      {300.0, 10.0, 1, PeakFlops{989.4, "device table (NVIDIA H200)"}},
      {100.0, 30.0, 1, PeakFlops{312.0, "device table (NVIDIA A100-SXM4-80GB)"}}};
  RunSummary s;
  s.makespan_s = 30.0;
  set_flops_figures(s, samples, 2);
  const double peak = (989.4 * 10.0 + 312.0 * 30.0) / 40.0;
  EXPECT_EQ(s.peak_tflops, peak);
  EXPECT_EQ(s.peak_source, "device table (NVIDIA H200), device table (NVIDIA A100-SXM4-80GB)");
  EXPECT_EQ(s.achieved_tflops_per_gpu, 10.0);
  EXPECT_EQ(s.mfu, 10.0 / peak);
  EXPECT_EQ(s.makespan_mfu, 400.0 / (30.0 * 2.0 * peak));
  // One sample without a peak: no MFU at all.
  const std::vector<FlopsSample> partial{samples[0], {100.0, 30.0, 1, std::nullopt}};
  set_flops_figures(s, partial, 2);
  EXPECT_EQ(s.flops_counted, 2U);
  EXPECT_FALSE(s.mfu.has_value());
  EXPECT_FALSE(s.peak_tflops.has_value());
}

TEST(Summary, RankLayoutReadsThePeakOverride) {
  EXPECT_EQ(rank_layout("runtime: {peak_tflops: 756}\n", 2).runtime.peak_tflops, 756.0);
  EXPECT_FALSE(rank_layout("runtime: {}\n", 2).runtime.peak_tflops.has_value());
}

// The step cache's skip rate from rows (docs/results.md, "Figures"): over the ok rows that
// recorded their forwards, 60/20 and 60/60 -> 1 - 80/120; a failed row and a row without a
// count are left out.
TEST(Summary, SkipRateRecomputedFromRows) {
  std::vector<ResultRecord> rows(4);
  const auto set = [](ResultRecord& r, double start, int forwards, int computed, bool ok) {
    r.start_time = 1000.0 + start;
    r.seconds = 10.0;
    r.end_time = r.start_time + r.seconds;
    r.forwards = forwards;
    r.forwards_computed = computed;
    r.status = ok ? RequestStatus::ok : RequestStatus::failed;
  };
  set(rows[0], 0.0, 60, 20, true);
  set(rows[1], 10.0, 60, 60, true);
  set(rows[2], 20.0, 0, 0, true);     // not recorded
  set(rows[3], 30.0, 50, 10, false);  // failed: not counted
  const RunSummary s = recompute_summary(rows, ranks(1));
  EXPECT_EQ(s.forwards, 120U);
  EXPECT_EQ(s.forwards_computed, 80U);
  ASSERT_TRUE(s.cache_skip_rate.has_value());
  EXPECT_EQ(*s.cache_skip_rate, 1.0 - 80.0 / 120.0);
  EXPECT_TRUE(forwards_skipped(s));
  EXPECT_EQ(describe_forwards(s),
            "skip rate 33.33% (40 of 120 transformer forwards skipped, 80 computed)");
  // Through summary.json and back.
  const RunSummary back = summary_from_json(summary_to_json(s), "s");
  EXPECT_EQ(back.forwards, 120U);
  EXPECT_EQ(back.forwards_computed, 80U);
  EXPECT_EQ(back.cache_skip_rate, s.cache_skip_rate);
}

// Rows without a step cache: every forward computed, skip rate 0, nothing skipped; rows that
// recorded none: no skip rate (null in summary.json).
TEST(Summary, SkipRateWithoutACacheAndWithoutCounts) {
  RunSummary s;
  ForwardTotals totals;
  totals.add(60, 60);
  totals.add(30, 30);
  totals.add(0, 0);
  totals.add(10, 12);  // more computed than asked for: taken as all of them
  set_forwards_figures(s, totals);
  EXPECT_EQ(s.forwards, 100U);
  EXPECT_EQ(s.forwards_computed, 100U);
  EXPECT_EQ(s.cache_skip_rate, 0.0);
  EXPECT_FALSE(forwards_skipped(s));
  EXPECT_EQ(describe_forwards(s),
            "skip rate 0.00% (0 of 100 transformer forwards skipped, 100 computed)");

  set_forwards_figures(s, ForwardTotals{});
  EXPECT_EQ(s.forwards, 0U);
  EXPECT_FALSE(s.cache_skip_rate.has_value());
  EXPECT_FALSE(forwards_skipped(s));
  EXPECT_EQ(describe_forwards(s), "not recorded (no ok request with a forward count)");
  EXPECT_NE(summary_to_json(s).find("\"cache_skip_rate\": null"), std::string::npos);
  EXPECT_FALSE(summary_from_json("{}", "old").cache_skip_rate.has_value());  // an older file
}

// Issue 52, class 14: summary.json's figures were taken as written: -1 for total read as
// 18446744073709551615, a negative makespan was shown. Every figure out of its domain, or of
// the wrong JSON type, is an IoError naming the file and the field.
TEST(Summary, FiguresOutsideTheirDomainAreRefused) {
  const std::vector<std::pair<std::string, std::string>> members = {
      {R"({"total": -1})", "'total' must be a whole number >= 0"},
      {R"({"completed": 1.5})", "'completed' must be a whole number >= 0"},
      {R"({"failed": true})", "'failed' must be a whole number >= 0"},
      {R"({"total": 18446744073709551616})", "'total' must be a whole number >= 0"},
      {R"({"world_size": 2147483648})", "'world_size' must be a whole number within int's range"},
      {R"({"replicas": "2"})", "'replicas' must be a whole number within int's range"},
      {R"({"makespan_s": "10"})", "'makespan_s' must be a number"},
      {R"({"mfu": "high"})", "'mfu' must be a number or null"},
      {R"({"interrupted": 0})", "'interrupted' must be true or false"},
      {R"({"policy": 3})", "'policy' must be a string"},
      {R"({"busy_s_per_rank": [1, null]})", "'busy_s_per_rank' must be an array of numbers"},
      {R"({"makespan_s": -5})", "inconsistent summary: makespan_s is -5, not a finite number >= 0"},
      {R"({"latency_max_s": -0.5})",
       "inconsistent summary: latency_max_s is -0.5, not a finite number >= 0"},
      {R"({"mfu": -1})", "inconsistent summary: mfu is -1, not a finite number >= 0"},
      {R"({"world_size": 0})", "inconsistent summary: world_size is 0, not a whole number >= 1"},
      {R"({"cfg_parallel_size": -2})",
       "inconsistent summary: cfg_parallel_size is -2, not a whole number >= 1"},
      {R"({"total": 3, "completed": 2, "failed": 2})",
       "inconsistent summary: total 3 is less than completed 2 + failed 2"},
      {R"({"total": 1, "completed": 18446744073709551615, "failed": 2})",
       "inconsistent summary: total 1 is less than completed 18446744073709551615 + failed 2"},
      {R"({"world_size": 2, "replicas": 3})",
       "inconsistent summary: replicas 3 exceeds world_size 2"},
      {R"({"world_size": 1, "busy_s_per_rank": [1, 2]})",
       "inconsistent summary: busy figures for more ranks than world_size 1"},
      {R"({"busy_fraction_per_rank": [-0.5]})",
       "inconsistent summary: busy_fraction_per_rank holds -0.5, not a finite number >= 0"},
      {R"({"flops_counted": 2})", "inconsistent summary: flops_counted 2 exceeds completed 0"},
      {R"({"forwards": 1, "forwards_computed": 2})",
       "inconsistent summary: forwards_computed 2 exceeds forwards 1"},
      {R"({"peak_tflops": 0})", "inconsistent summary: peak_tflops is 0"},
      {R"({"cache_skip_rate": 1.5})", "inconsistent summary: cache_skip_rate is 1.5, more than 1"},
  };
  for (const auto& [json, why] : members) {
    SCOPED_TRACE(json);
    try {
      (void)summary_from_json(json, "x/summary.json");
      ADD_FAILURE() << "accepted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("x/summary.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(summary_problem(testing::filled_summary()), "");
  EXPECT_EQ(summary_from_json(R"({"total": 0, "mfu": null, "world_size": 1})", "z").total, 0U);
}

}  // namespace
}  // namespace omnidp::results
