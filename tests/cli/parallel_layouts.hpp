#pragma once
// The harness of the intra-request parallel end-to-end tests (cfg_parallel_test,
// sequence_parallel_test): omni-dp-batch on one rank and under mpirun on a parallel layout of
// the same manifest, their stored videos compared; the models they run and their config errors.
// Needs OMNIDP_BINARY_DIR and OMNIDP_BATCH_EXE (the test target's compile definitions).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "omnidp/export/stored_results.hpp"
#include "omnidp/results/summary.hpp"
#include "test_files.hpp"

namespace omnidp::cli::testing {

struct CmdRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline CmdRun run_command(const std::string& cmd) {
  CmdRun r;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.output += buf;
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// An empty folder <build>/tests/cli/<suite>/<name>.
inline std::filesystem::path layout_dir(const std::string& suite, const std::string& name) {
  const auto dir = std::filesystem::path(OMNIDP_BINARY_DIR) / "tests" / "cli" / suite / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// `requests` lines of <dir>/manifest.jsonl: ids <prefix>0.., "<prompt>, take i", seeds first_seed + i.
inline std::filesystem::path write_layout_manifest(const std::filesystem::path& dir, int requests,
                                                   const std::string& prefix,
                                                   const std::string& prompt, int first_seed) {
  const auto path = dir / "manifest.jsonl";
  std::ofstream out(path);
  for (int i = 0; i < requests; ++i) {
    out << R"({"id": ")" << prefix << i << R"(", "prompt": ")" << prompt << ", take " << i
        << R"(", "seed": )" << first_seed + i << "}\n";
  }
  return path;
}

// omni-dp-batch on `ranks` ranks (1: without mpirun) with these --set overrides and flags.
inline CmdRun batch(int ranks, const std::filesystem::path& out,
                    const std::vector<std::string>& sets, const std::string& flags = "--no-resume") {
  std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 ";
  if (ranks > 1) cmd += "mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) + " ";
  cmd += std::string(OMNIDP_BATCH_EXE) + " " + flags + " --set output.dir=" + out.string();
  for (const auto& s : sets) cmd += " --set '" + s + "'";
  return run_command(cmd);
}

inline std::map<std::string, Video> stored_videos(const std::filesystem::path& out) {
  std::map<std::string, Video> v;
  const auto stored = video_export::read_stored_run(out / "results.h5");
  for (const auto& row : stored.rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id << ": " << row.record.error;
    v[row.record.id] = video_export::read_stored_video(out / "results.h5", row.record.id).video;
  }
  return v;
}

// The largest uint8 difference of two videos; 256 when their shapes differ.
inline int max_level_diff(const Video& a, const Video& b) {
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

// `sets` (with input.manifest of `requests` lines) on one rank into <dir>/single, then with
// `layout` added on `ranks` ranks into <dir>/parallel (its run in `parallel`): both succeed,
// every video within 1 uint8 level of the single-rank one (the largest difference printed),
// and every row recorded by one of `leaders`. Fatal failures stop the caller's checks.
inline void expect_videos_match_single_rank(const std::filesystem::path& dir,
                                            std::vector<std::string> sets, int requests, int ranks,
                                            const std::vector<std::string>& layout,
                                            const std::vector<int>& leaders, CmdRun& parallel) {
  const CmdRun single = batch(1, dir / "single", sets);
  ASSERT_EQ(single.exit_code, 0) << single.output;
  sets.insert(sets.end(), layout.begin(), layout.end());
  parallel = batch(ranks, dir / "parallel", sets);
  ASSERT_EQ(parallel.exit_code, 0) << parallel.output;

  const auto want = stored_videos(dir / "single");
  const auto got = stored_videos(dir / "parallel");
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
}

// One end-to-end suite: its folders <build>/tests/cli/<name>/<test> and its manifests.
struct LayoutSuite {
  std::string name;
  std::string id_prefix;
  std::string prompt;
  int first_seed = 0;

  // An empty folder for one test.
  [[nodiscard]] std::filesystem::path dir(const std::string& test) const {
    return layout_dir(name, test);
  }
  // `requests` lines of <dir>/manifest.jsonl (write_layout_manifest).
  [[nodiscard]] std::filesystem::path manifest(const std::filesystem::path& dir, int requests) const {
    return write_layout_manifest(dir, requests, id_prefix, prompt, first_seed);
  }
};

// tiny-wan on `device` (fp32, seeded random weights), `frames` frames of 32 x 32, 2 steps.
inline std::vector<std::string> tiny_wan_sets(const std::string& device, int frames) {
  return {"model.name=tiny-wan",
          "model.weights=random",
          "model.device=" + device,
          "model.dtype=fp32",
          "generation.num_frames=" + std::to_string(frames),
          "generation.height=32",
          "generation.width=32",
          "generation.num_inference_steps=2",
          "generation.guidance_scale=5.0"};
}

// HunyuanVideo-1.5 on the CPU (fp32, seeded random weights and text conditioning) from a
// snapshot in <dir>/snapshot: the fixture's tiny transformer (2 heads; `heads` > 0 rewrites it
// to that many heads of 128 / heads, the RoPE axes scaled alike) and VAE configs, its scheduler
// and guider; `frames` frames of `height` x `width`, 2 steps. Needs the fixtures.
inline std::vector<std::string> hv15_snapshot_sets(const std::filesystem::path& dir, int frames,
                                                   int height, int width, int heads = 0) {
  namespace fs = std::filesystem;
  const fs::path snap = dir / "snapshot";
  fs::create_directories(snap / "vae");
  auto config =
      nlohmann::json::parse(read_text(test::fixture("diffusers-ref/hv15_transformer/config.json")));
  if (heads > 0) {
    const int dim =
        config.at("num_attention_heads").get<int>() * config.at("attention_head_dim").get<int>();
    const int head_dim = dim / heads;
    config["num_attention_heads"] = heads;
    config["attention_head_dim"] = head_dim;
    config["rope_axes_dim"] = {head_dim / 4, 3 * head_dim / 8, 3 * head_dim / 8};
  }
  write_text(snap / "transformer" / "config.json", config.dump(1));
  fs::copy_file(test::fixture("diffusers-ref/hv15_vae_encode/config.json"),
                snap / "vae" / "config.json");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/scheduler"), snap / "scheduler");
  fs::copy(test::fixture("diffusers-ref/hv15_pipeline_t2v/guider"), snap / "guider");
  return {"model.name=hunyuanvideo-1.5",
          "model.weights=random",
          "model.path=" + snap.string(),
          "model.device=cpu",
          "model.dtype=fp32",
          "generation.num_frames=" + std::to_string(frames),
          "generation.height=" + std::to_string(height),
          "generation.width=" + std::to_string(width),
          "generation.num_inference_steps=2",
          "generation.guidance_scale=6.0"};
}

// `model_sets` with a manifest of `requests` lines through expect_videos_match_single_rank;
// the parallel run and its summary.json in `parallel` and `summary`. False when a fatal
// failure stopped the checks.
inline bool run_layout(const LayoutSuite& suite, const std::filesystem::path& dir,
                       std::vector<std::string> model_sets, int requests, int ranks,
                       const std::vector<std::string>& layout, const std::vector<int>& leaders,
                       CmdRun& parallel, RunSummary& summary) {
  model_sets.push_back("input.manifest=" + suite.manifest(dir, requests).string());
  expect_videos_match_single_rank(dir, model_sets, requests, ranks, layout, leaders, parallel);
  if (::testing::Test::HasFatalFailure()) return false;
  summary = results::read_summary_json(dir / "parallel" / "summary.json");
  return true;
}

// The summary of `ranks` ranks: each (member, leader) pair's member has busy seconds of its
// own (non-zero, not the leader's).
inline void expect_own_busy_seconds(const RunSummary& s, int ranks,
                                    const std::vector<std::pair<int, int>>& member_leader) {
  ASSERT_EQ(s.busy_s_per_rank.size(), static_cast<std::size_t>(ranks));
  for (const auto& [member, leader] : member_leader) {
    const double busy = s.busy_s_per_rank[static_cast<std::size_t>(member)];
    EXPECT_GT(busy, 0.0) << "rank " << member;
    EXPECT_NE(busy, s.busy_s_per_rank[static_cast<std::size_t>(leader)])
        << "rank " << member << " reports the busy seconds of leader rank " << leader;
  }
  EXPECT_GT(s.scheduling_efficiency, 0.0);
}

// omni-dp-batch on one rank with `sets` into <dir>/out: exit 2 with `message` in its output.
inline void expect_config_error(const std::filesystem::path& dir,
                                const std::vector<std::string>& sets, const std::string& message) {
  const CmdRun r = batch(1, dir / "out", sets);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

}  // namespace omnidp::cli::testing
