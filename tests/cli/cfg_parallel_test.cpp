// CFG-parallel end to end: omni-dp-batch under mpirun on the CPU (fp32), tiny-wan and
// HunyuanVideo-1.5 (seeded random weights in the fixture's tiny transformer and VAE configs),
// one group of 2 ranks and two replicas of a group (4 ranks), against the single-rank run:
// every video within 1 uint8 level of it (the largest difference is computed here from the
// stored videos), the leaders record the requests, and every member's busy seconds in the
// summary are its own (non-zero, not a copy of its leader's).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.hpp"
#include "parallel_layouts.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;
using cli::testing::CmdRun;

const cli::testing::LayoutSuite kSuite{"cfg_parallel", "c", "a lighthouse at dusk", 100};

fs::path work_dir(const std::string& name) { return kSuite.dir(name); }

// The layout's run against the single-rank one: videos, rows and per-rank busy seconds (the
// k-th member's against the k-th leader's).
void expect_layout(const fs::path& dir, const std::vector<std::string>& model_sets, int requests,
                   int ranks, const std::vector<std::string>& layout,
                   const std::vector<int>& leaders, const std::vector<int>& members) {
  CmdRun par;
  RunSummary s;
  if (!cli::testing::run_layout(kSuite, dir, model_sets, requests, ranks, layout, leaders, par, s))
    return;
  EXPECT_EQ(s.cfg_parallel_size, 2);
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t k = 0; k < members.size(); ++k) pairs.emplace_back(members[k], leaders[k]);
  cli::testing::expect_own_busy_seconds(s, ranks, pairs);
}

std::vector<std::string> tiny_wan(const std::string& device) {
  return cli::testing::tiny_wan_sets(device, 5);
}

#ifdef OMNIDP_CFG_PARALLEL_GPU
// The GPU build (label gpu): two ranks of a group on one GPU, so the collectives take the MPI
// backend (NCCL refuses two ranks on one device) and the CUDA tensors go through the host.
TEST(CfgParallelGpu, TwoRanksOfAGroupOnOneGpuWithTheMpiBackend) {
  expect_layout(
      work_dir("gpu-2"), tiny_wan("cuda"), 2, 2,
      {"parallel.cfg_parallel_size=2", "parallel.devices=[0,0]", "parallel.collective_backend=mpi"},
      {0}, {1});
}
#else
const std::vector<std::string> kTinyWan = tiny_wan("cpu");

TEST(CfgParallel, TinyWanOneGroupOfTwo) {
  expect_layout(work_dir("wan-2"), kTinyWan, 2, 2, {"parallel.cfg_parallel_size=2"}, {0}, {1});
}

TEST(CfgParallel, TinyWanTwoReplicasOfAGroupAndACoordinatorThatOnlyCoordinates) {
  expect_layout(work_dir("wan-5"), kTinyWan, 2, 5,
                {"parallel.cfg_parallel_size=2", "parallel.coordinator_runs_work=false",
                 "scheduler.policy=round_robin"},  // one request per replica
                {1, 3}, {2, 4});
}

// HunyuanVideo-1.5: 5 frames of 32 x 32 (cli::testing::hv15_snapshot_sets).
std::vector<std::string> hv15_sets(const fs::path& dir) {
  return cli::testing::hv15_snapshot_sets(dir, 5, 32, 32);
}

TEST(CfgParallel, Hv15OneGroupOfTwo) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-2");
  expect_layout(dir, hv15_sets(dir), 2, 2, {"parallel.cfg_parallel_size=2"}, {0}, {1});
}

TEST(CfgParallel, Hv15TwoReplicasOfAGroup) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = work_dir("hv15-4");
  expect_layout(dir, hv15_sets(dir), 2, 4,
                {"parallel.cfg_parallel_size=2", "scheduler.policy=round_robin"}, {0, 2}, {1, 3});
}

TEST(CfgParallel, TensorParallelOfAModelWithoutItIsAConfigError) {
  const fs::path dir = work_dir("unimplemented");
  // The synthetic model has no transformer to split (Wan and HV15 implement it).
  const std::vector<std::string> sets = {"model.name=synthetic", "model.device=cpu",
                                         "input.manifest=" + kSuite.manifest(dir, 1).string(),
                                         "parallel.tensor_parallel_size=2"};
  cli::testing::expect_config_error(dir, sets,
                                    "parallel.tensor_parallel_size: 2: tensor parallelism is not "
                                    "implemented by model 'synthetic' (expected 1)");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

#endif  // OMNIDP_CFG_PARALLEL_GPU

}  // namespace
}  // namespace omnidp
