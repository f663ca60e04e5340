// CFG-parallel end to end: omni-dp-batch under mpirun on the CPU (fp32), tiny-wan and
// HunyuanVideo-1.5 (seeded random weights in the fixture's tiny transformer and VAE configs),
// one group of 2 ranks and two replicas of a group (4 ranks), against the single-rank run:
// every video within 1 uint8 level of it (the largest difference is computed here from the
// stored videos), the leaders record the requests, and every member's busy seconds in the
// summary are its own (non-zero, not a copy of its leader's).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/export/stored_results.hpp"
#include "omnidp/results/summary.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

struct CmdRun {
  int exit_code = -1;
  std::string output;
};

CmdRun run(const std::string& cmd) {
  CmdRun r;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.output += buf;
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

fs::path work_dir(const std::string& name) {
  const fs::path dir = fs::path(OMNIDP_BINARY_DIR) / "tests" / "cli" / "cfg_parallel" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// `requests` lines of a manifest with distinct prompts and seeds.
fs::path write_manifest(const fs::path& dir, int requests) {
  const fs::path path = dir / "manifest.jsonl";
  std::ofstream out(path);
  for (int i = 0; i < requests; ++i) {
    out << R"({"id": "c)" << i << R"(", "prompt": "a lighthouse at dusk, take )" << i
        << R"(", "seed": )" << 100 + i << "}\n";
  }
  return path;
}

// omni-dp-batch on `ranks` ranks (1: without mpirun) with these --set overrides.
CmdRun batch(int ranks, const fs::path& out, const std::vector<std::string>& sets) {
  std::string cmd =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 ";
  if (ranks > 1) cmd += "mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) + " ";
  cmd += std::string(OMNIDP_BATCH_EXE) + " --no-resume --set output.dir=" + out.string();
  for (const auto& s : sets) cmd += " --set '" + s + "'";
  return run(cmd);
}

std::map<std::string, Video> videos(const fs::path& out) {
  std::map<std::string, Video> v;
  const auto stored = video_export::read_stored_run(out / "results.h5");
  for (const auto& row : stored.rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id << ": " << row.record.error;
    v[row.record.id] = video_export::read_stored_video(out / "results.h5", row.record.id).video;
  }
  return v;
}

int max_level_diff(const Video& a, const Video& b) {
  if (a.frames != b.frames || a.height != b.height || a.width != b.width ||
      a.data.size() != b.data.size()) {
    return 256;
  }
  int worst = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<int>(a.data[i]) - static_cast<int>(b.data[i])));
  }
  return worst;
}

// The layout's run against the single-rank one: videos, rows and per-rank busy seconds.
void expect_layout(const fs::path& dir, const std::vector<std::string>& model_sets, int requests,
                   int ranks, const std::vector<std::string>& layout, const std::vector<int>& leaders,
                   const std::vector<int>& members) {
  std::vector<std::string> sets = model_sets;
  sets.push_back("input.manifest=" + write_manifest(dir, requests).string());
  const CmdRun single = batch(1, dir / "single", sets);
  ASSERT_EQ(single.exit_code, 0) << single.output;
  sets.insert(sets.end(), layout.begin(), layout.end());
  const CmdRun par = batch(ranks, dir / "parallel", sets);
  ASSERT_EQ(par.exit_code, 0) << par.output;

  const auto want = videos(dir / "single");
  const auto got = videos(dir / "parallel");
  ASSERT_EQ(got.size(), static_cast<std::size_t>(requests));
  ASSERT_EQ(want.size(), got.size());
  int worst = 0;
  for (const auto& [id, video] : want) {
    ASSERT_EQ(got.count(id), 1U) << id;
    const int d = max_level_diff(video, got.at(id));
    worst = std::max(worst, d);
    EXPECT_LE(d, 1) << id << ": largest uint8 difference " << d;
  }
  std::printf("[ largest uint8 difference over %d request(s): %d ]\n", requests, worst);

  const auto stored = video_export::read_stored_run(dir / "parallel" / "results.h5");
  for (const auto& row : stored.rows) {
    EXPECT_NE(std::find(leaders.begin(), leaders.end(), row.record.rank), leaders.end())
        << row.record.id << " recorded by rank " << row.record.rank;
  }
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
  return {"model.name=tiny-wan", "model.weights=random", "model.device=" + device,
          "model.dtype=fp32", "generation.num_frames=5", "generation.height=32",
          "generation.width=32", "generation.num_inference_steps=2",
          "generation.guidance_scale=5.0"};
}

#ifdef OMNIDP_CFG_PARALLEL_GPU
// The GPU build (label gpu): two ranks of a group on one GPU, so the collectives take the MPI
// backend (NCCL refuses two ranks on one device) and the CUDA tensors go through the host.
TEST(CfgParallelGpu, TwoRanksOfAGroupOnOneGpuWithTheMpiBackend) {
  expect_layout(work_dir("gpu-2"), tiny_wan("cuda"), 2, 2,
                {"parallel.cfg_parallel_size=2", "parallel.devices=[0,0]",
                 "parallel.collective_backend=mpi"},
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
                {1, 3},
                {2, 4});
}

// HunyuanVideo-1.5: the fixture's tiny transformer and VAE configs (seeded random weights and
// text conditioning), its scheduler and guider.
std::vector<std::string> hv15_sets(const fs::path& dir) {
  const fs::path snap = dir / "snapshot";
  fs::create_directories(snap / "transformer");
  fs::create_directories(snap / "vae");
  fs::copy_file(test::fixture("diffusers-ref/hv15_transformer/config.json"),
                snap / "transformer" / "config.json");
  fs::copy_file(test::fixture("diffusers-ref/hv15_vae_encode/config.json"), snap / "vae" / "config.json");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/scheduler"), snap / "scheduler");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/guider"), snap / "guider");
  return {"model.name=hunyuanvideo-1.5", "model.weights=random", "model.path=" + snap.string(),
          "model.device=cpu", "model.dtype=fp32", "generation.num_frames=5",
          "generation.height=32", "generation.width=32", "generation.num_inference_steps=2",
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
  EXPECT_NE(r.output.find("parallel.tensor_parallel_size: 2: tensor parallelism is not implemented by "
                          "model 'synthetic' (expected 1)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

#endif  // OMNIDP_CFG_PARALLEL_GPU

}  // namespace
}  // namespace omnidp
