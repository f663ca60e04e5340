#pragma once
// The harness of the intra-request parallel end-to-end tests (cfg_parallel_test,
// sequence_parallel_test): omni-dp-batch on one rank and under mpirun on a parallel layout of
// the same manifest, their stored videos compared. Needs OMNIDP_BINARY_DIR and
// OMNIDP_BATCH_EXE (the test target's compile definitions).
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

#include "omnidp/export/stored_results.hpp"

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

}  // namespace omnidp::cli::testing
