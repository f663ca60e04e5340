// CFG-parallel end to end: omni-dp-batch under mpirun on the CPU (fp32), tiny-wan and
// HunyuanVideo-1.5 (seeded random weights in the fixture's tiny transformer and VAE configs),
// one group of 2 ranks and two replicas of a group (4 ranks), against the single-rank run:
// every video within 1 uint8 level of it (the largest difference is computed here from the
// stored videos), the leaders record the requests, and every member's busy seconds in the
// summary are its own (non-zero, not a copy of its leader's).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/results/summary.hpp"
#include "parallel_layouts.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;
using cli::testing::batch;
using cli::testing::CmdRun;

fs::path work_dir(const std::string& name) {
  return cli::testing::layout_dir("cfg_parallel", name);
}

fs::path write_manifest(const fs::path& dir, int requests) {
  return cli::testing::write_layout_manifest(dir, requests, "c", "a lighthouse at dusk", 100);
}

// The layout's run against the single-rank one: videos, rows and per-rank busy seconds.
void expect_layout(const fs::path& dir, const std::vector<std::string>& model_sets, int requests,
                   int ranks, const std::vector<std::string>& layout,
                   const std::vector<int>& leaders, const std::vector<int>& members) {
  std::vector<std::string> sets = model_sets;
  sets.push_back("input.manifest=" + write_manifest(dir, requests).string());
  CmdRun par;
  cli::testing::expect_videos_match_single_rank(dir, sets, requests, ranks, layout, leaders, par);
  if (::testing::Test::HasFatalFailure()) return;
  const RunSummary s = results::read_summary_json(dir / "parallel" / "summary.json");
  EXPECT_EQ(s.cfg_parallel_size, 2);
  ASSERT_EQ(s.busy_s_per_rank.size(), static_cast<std::size_t>(ranks));
  for (std::size_t k = 0; k < members.size(); ++k) {
    const double member = s.busy_s_per_rank[static_cast<std::size_t>(members[k])];
    const double leader = s.busy_s_per_rank[static_cast<std::size_t>(leaders[k])];
    EXPECT_GT(member, 0.0) << "rank " << members[k];
    EXPECT_NE(member, leader) << "rank " << members[k] << " reports its leader's busy seconds";
  }
  EXPECT_GT(s.scheduling_efficiency, 0.0);
}

std::vector<std::string> tiny_wan(const std::string& device) {
  return {"model.name=tiny-wan",          "model.weights=random",
          "model.device=" + device,       "model.dtype=fp32",
          "generation.num_frames=5",      "generation.height=32",
          "generation.width=32",          "generation.num_inference_steps=2",
          "generation.guidance_scale=5.0"};
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

// HunyuanVideo-1.5: the fixture's tiny transformer and VAE configs (seeded random weights and
// text conditioning), its scheduler and guider.
std::vector<std::string> hv15_sets(const fs::path& dir) {
  const fs::path snap = dir / "snapshot";
  fs::create_directories(snap / "transformer");
  fs::create_directories(snap / "vae");
  fs::copy_file(test::fixture("diffusers-ref/hv15_transformer/config.json"),
                snap / "transformer" / "config.json");
  fs::copy_file(test::fixture("diffusers-ref/hv15_vae_encode/config.json"),
                snap / "vae" / "config.json");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/scheduler"), snap / "scheduler");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/guider"), snap / "guider");
  return {"model.name=hunyuanvideo-1.5",
          "model.weights=random",
          "model.path=" + snap.string(),
          "model.device=cpu",
          "model.dtype=fp32",
          "generation.num_frames=5",
          "generation.height=32",
          "generation.width=32",
          "generation.num_inference_steps=2",
          "generation.guidance_scale=6.0"};
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
                                         "input.manifest=" + write_manifest(dir, 1).string(),
                                         "parallel.tensor_parallel_size=2"};
  const CmdRun r = batch(1, dir / "out", sets);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("parallel.tensor_parallel_size: 2: tensor parallelism is not implemented by "
                    "model 'synthetic' (expected 1)"),
      std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

#endif  // OMNIDP_CFG_PARALLEL_GPU

}  // namespace
}  // namespace omnidp
