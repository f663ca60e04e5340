// Ulysses sequence parallelism and tensor parallelism end to end: omni-dp-batch under mpirun on
// the CPU (fp32), tiny-wan and HunyuanVideo-1.5 (seeded random weights in the fixture's tiny
// transformer and VAE configs), groups of 2 (SP 2, TP 2) and 4 (SP 4, SP 2 x CFG 2, TP 2 x
// CFG 2, TP 2 x SP 2) and two replicas of a group,
// against the single-rank run: every video within 1 uint8 level of it (computed here from the
// stored videos), the group leaders record the requests, and every member's busy seconds in the
// summary are its own (non-zero, not a copy of its leader's). Config errors and the dry run's
// roles too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.hpp"
#include "parallel_layouts.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;
using cli::testing::batch;
using cli::testing::CmdRun;

const cli::testing::LayoutSuite kSuite{"sequence_parallel", "s", "a harbour in the rain", 200};

fs::path work_dir(const std::string& name) { return kSuite.dir(name); }

// The layout's run against the single-rank one: videos, rows and per-rank busy seconds (each
// member's against every leader's).
// `axis`: an axis the layout has ("sequence", "tensor"), whose collectives the run logs.
void expect_layout(const fs::path& dir, const std::vector<std::string>& model_sets, int requests,
                   int ranks, const std::vector<std::string>& layout, const std::vector<int>& leaders,
                   const std::vector<int>& members, const std::string& axis = "sequence") {
  CmdRun par;
  RunSummary s;
  if (!cli::testing::run_layout(kSuite, dir, model_sets, requests, ranks, layout, leaders, par, s))
    return;
  EXPECT_NE(par.output.find(axis + " axis (world ranks "), std::string::npos) << par.output;
  std::vector<std::pair<int, int>> pairs;
  for (const int member : members) {
    for (const int leader : leaders) pairs.emplace_back(member, leader);
  }
  cli::testing::expect_own_busy_seconds(s, ranks, pairs);
}

// 9 frames of 32 x 32: 3 latent frames of one patch, so a group of 2 pads its last shard.
const std::vector<std::string> kTinyWan = cli::testing::tiny_wan_sets("cpu", 9);

#ifdef OMNIDP_PARALLEL_GPU
// The GPU build (label gpu): two ranks of a group on one GPU, so the collectives take the MPI
// backend (NCCL refuses two ranks on one device) and the CUDA tensors go through the host.
std::vector<std::string> on_one_gpu(std::vector<std::string> sets) {
  for (auto& s : sets) {
    if (s == "model.device=cpu") s = "model.device=cuda";
  }
  return sets;
}

TEST(ParallelGpu, SequenceParallelTwoRanksOfAGroupOnOneGpu) {
  expect_layout(work_dir("gpu-sp2"), on_one_gpu(kTinyWan), 1, 2,
                {"parallel.sequence_parallel_size=2", "parallel.devices=[0,0]",
                 "parallel.collective_backend=mpi"},
                {0}, {1});
}

TEST(ParallelGpu, TensorParallelTwoRanksOfAGroupOnOneGpu) {
  expect_layout(work_dir("gpu-tp2"), on_one_gpu(kTinyWan), 1, 2,
                {"parallel.tensor_parallel_size=2", "parallel.devices=[0,0]",
                 "parallel.collective_backend=mpi"},
                {0}, {1}, "tensor");
}
#else

fs::path write_manifest(const fs::path& dir, int requests) {
  return kSuite.manifest(dir, requests);
}

TEST(SequenceParallel, TinyWanOneGroupOfTwoThroughTheUlyssesDegreeKey) {
  expect_layout(work_dir("wan-2"), kTinyWan, 1, 2, {"parallel.ulysses_degree=2"}, {0}, {1});
}

TEST(SequenceParallel, TinyWanSequenceTimesCfgGroupOfFour) {
  expect_layout(work_dir("wan-2x2"), kTinyWan, 1, 4,
                {"parallel.sequence_parallel_size=2", "parallel.cfg_parallel_size=2"}, {0},
                {1, 2, 3});
}

// A step cache in a group of 4 (Ulysses 2 x CFG 2; issue 37): every rank of a branch takes its
// branch's decisions (taylorseer every 2nd forward from the 2nd: CSCSCS), the video is the
// single rank's with the same cache within 1 level, and the row and the summary count the whole
// request's forwards (both branches: 6 of 12 computed).
TEST(SequenceParallel, TinyWanStepCacheInASequenceTimesCfgGroupOfFour) {
  auto sets = kTinyWan;
  sets.push_back("generation.num_inference_steps=6");
  sets.push_back(
      "generation.cache={policy: taylorseer, cache_interval: 2, disable_cache_before_step: 1}");
  CmdRun par;
  RunSummary s;
  if (!cli::testing::run_layout(
          kSuite, work_dir("wan-2x2-cache"), sets, 1, 4,
          {"parallel.sequence_parallel_size=2", "parallel.cfg_parallel_size=2"}, {0}, par, s))
    return;
  EXPECT_EQ(s.forwards, 12U);
  EXPECT_EQ(s.forwards_computed, 6U);
  const auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto at = par.output.find(text); at != std::string::npos; at = par.output.find(text, at + 1))
      ++n;
    return n;
  };
  // Two sequence shards run each branch; each logs its branch's decisions.
  EXPECT_EQ(count("transformer 0 cond CSCSCS (6 of 12 forwards computed)"), 2U) << par.output;
  EXPECT_EQ(count("transformer 0 uncond CSCSCS (6 of 12 forwards computed)"), 2U) << par.output;
}

TEST(SequenceParallel, TinyWanTwoReplicasOfAGroupAndACoordinatorThatOnlyCoordinates) {
  expect_layout(work_dir("wan-5"), kTinyWan, 2, 5,
                {"parallel.sequence_parallel_size=2", "parallel.coordinator_runs_work=false",
                 "scheduler.policy=round_robin"},  // one request per replica
                {1, 3}, {2, 4});
}

// HunyuanVideo-1.5 (cli::testing::hv15_snapshot_sets): 9 frames of 32 x 48: 3 x 2 x 3 = 18
// tokens, so a group of 4 pads its last shard.
std::vector<std::string> hv15_sets(const fs::path& dir, int heads = 0) {
  return cli::testing::hv15_snapshot_sets(dir, 9, 32, 48, heads);
}

TEST(SequenceParallel, Hv15OneGroupOfTwo) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-2");
  expect_layout(dir, hv15_sets(dir), 1, 2, {"parallel.sequence_parallel_size=2"}, {0}, {1});
}

TEST(SequenceParallel, Hv15OneGroupOfFourWithFourHeads) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-4");
  expect_layout(dir, hv15_sets(dir, 4), 1, 4, {"parallel.sequence_parallel_size=4"}, {0}, {1, 2, 3});
}

TEST(SequenceParallel, Hv15SequenceTimesCfgGroupOfFour) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-2x2");
  expect_layout(dir, hv15_sets(dir), 1, 4,
                {"parallel.sequence_parallel_size=2", "parallel.cfg_parallel_size=2"}, {0},
                {1, 2, 3});
}

// Tensor parallelism: each rank holds its heads and FFN columns (only its slices of the
// weights); the group leader records the request.
TEST(TensorParallel, TinyWanOneGroupOfTwo) {
  expect_layout(work_dir("wan-tp2"), kTinyWan, 1, 2, {"parallel.tensor_parallel_size=2"}, {0}, {1},
                "tensor");
}

TEST(TensorParallel, TinyWanTensorTimesCfgGroupOfFour) {
  expect_layout(work_dir("wan-tp2-cfg2"), kTinyWan, 1, 4,
                {"parallel.tensor_parallel_size=2", "parallel.cfg_parallel_size=2"}, {0}, {1, 2, 3},
                "tensor");
}

TEST(TensorParallel, TinyWanTwoReplicasOfAGroupAndACoordinatorThatOnlyCoordinates) {
  expect_layout(work_dir("wan-tp-5"), kTinyWan, 2, 5,
                {"parallel.tensor_parallel_size=2", "parallel.coordinator_runs_work=false",
                 "scheduler.policy=round_robin"},
                {1, 3}, {2, 4}, "tensor");
}

TEST(TensorParallel, Hv15OneGroupOfTwo) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-tp2");
  expect_layout(dir, hv15_sets(dir), 1, 2, {"parallel.tensor_parallel_size=2"}, {0}, {1}, "tensor");
}

TEST(TensorParallel, Hv15TensorTimesSequenceGroupOfFourWithFourHeads) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-tp2-sp2");
  expect_layout(dir, hv15_sets(dir, 4), 1, 4,
                {"parallel.tensor_parallel_size=2", "parallel.sequence_parallel_size=2"}, {0},
                {1, 2, 3}, "tensor");
}

TEST(TensorParallel, HeadsThatDoNotSplitAreConfigErrors) {
  const fs::path dir = work_dir("tp-errors");
  std::vector<std::string> sets = kTinyWan;
  sets.push_back("input.manifest=" + write_manifest(dir, 1).string());
  sets.push_back("parallel.tensor_parallel_size=4");
  cli::testing::expect_config_error(
      dir, sets,
      "parallel.tensor_parallel_size: 4 does not divide the 2 attention heads of model 'tiny-wan' "
      "(tensor parallelism splits the heads: use a divisor of 2)");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(SequenceParallel, HeadsThatDoNotSplitAndTwoNamesThatDisagreeAreConfigErrors) {
  const fs::path dir = work_dir("errors");
  std::vector<std::string> sets = kTinyWan;
  sets.push_back("input.manifest=" + write_manifest(dir, 1).string());
  auto with = [&](const std::vector<std::string>& more) {
    auto s = sets;
    s.insert(s.end(), more.begin(), more.end());
    return s;
  };
  cli::testing::expect_config_error(dir, with({"parallel.sequence_parallel_size=4"}),
                                    "parallel.sequence_parallel_size: 4 does not divide the 2 "
                                    "attention heads of model 'tiny-wan'");
  cli::testing::expect_config_error(
      dir, with({"parallel.sequence_parallel_size=2", "parallel.ulysses_degree=1"}),
      "parallel.ulysses_degree: 1 disagrees with parallel.sequence_parallel_size 2");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(SequenceParallel, HeadsOfASnapshotConfigDecide) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-heads");
  std::vector<std::string> sets = hv15_sets(dir);  // the fixture's 2 heads, not the released 16
  sets.push_back("input.manifest=" + write_manifest(dir, 1).string());
  sets.push_back("parallel.sequence_parallel_size=4");
  cli::testing::expect_config_error(dir, sets,
                                    "parallel.sequence_parallel_size: 4 does not divide the 2 "
                                    "attention heads of model 'hunyuanvideo-1.5'");
}

TEST(SequenceParallel, DryRunNamesEachRanksSequenceShard) {
  const fs::path dir = work_dir("dry-run");
  std::vector<std::string> sets = kTinyWan;
  sets.push_back("input.manifest=" + write_manifest(dir, 2).string());
  sets.push_back("parallel.sequence_parallel_size=2");
  sets.push_back("parallel.cfg_parallel_size=2");
  const CmdRun r = batch(1, dir / "out", sets, "--dry-run --world-size 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find(
          "replicas: 2 of 4 rank(s) (tensor_parallel 1 x sequence_parallel 2 x cfg_parallel 2)"),
      std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("  replica 1: ranks 4,5,6,7 (rank 4 cfg branch cond, sequence shard 0, leader; "
                    "rank 5 cfg branch cond, sequence shard 1; rank 6 cfg branch uncond, sequence "
                    "shard 0; rank 7 cfg branch uncond, sequence shard 1)"),
      std::string::npos)
      << r.output;
}

#endif  // OMNIDP_PARALLEL_GPU

}  // namespace
}  // namespace omnidp
