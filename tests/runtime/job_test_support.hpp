#pragma once
// Shared helpers of the runtime tests: a manifest in a temporary folder, an in-memory result
// sink, and a synthetic-model job configuration.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "omnidp/models/synthetic.hpp"
#include "omnidp/runtime/job.hpp"
#include "temp_dir.hpp"

namespace omnidp::runtime::testing {

namespace fs = std::filesystem;

using omnidp::test::TempDir;

// `n` manifest lines d0.. of 9 frames of 32 x 48 and `steps` steps, prompt "p", seeds
// first_seed + i.
inline std::vector<std::string> sized_lines(int n, int first_seed, int steps) {
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    lines.push_back(R"({"id": "d)" + std::to_string(i) + R"(", "prompt": "p", "seed": )" +
                    std::to_string(first_seed + i) +
                    R"(, "num_frames": 9, "height": 32, "width": 48, "num_inference_steps": )" +
                    std::to_string(steps) + "}");
  }
  return lines;
}

// Writes a manifest of `n` small t2v requests r000.. with frames cycling 5, 9, 17, 33.
inline fs::path write_manifest(const fs::path& dir, int n,
                               const std::vector<std::string>& extra_lines = {}) {
  const fs::path file = dir / "manifest.jsonl";
  std::ofstream out(file);
  const int frames[] = {5, 9, 17, 33};
  for (int i = 0; i < n; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "r%03d", i);
    out << R"({"id": ")" << id << R"(", "prompt": "prompt )" << i << R"(", "seed": )" << 1000 + i
        << R"(, "num_frames": )" << frames[i % 4]
        << R"(, "height": 32, "width": 48, "num_inference_steps": 2})"
        << "\n";
  }
  for (const auto& line : extra_lines) out << line << "\n";
  return file;
}

// Every row written by any rank, kept in memory.
struct MemoryResults {
  std::mutex mutex;
  std::vector<ResultRecord> rows;
  std::map<std::string, std::string> sha_of_video;  // id -> video_sha256 of the stored video
  std::vector<int> opened;                          // ranks
  std::vector<int> closed;                          // ranks
};

class MemorySink final : public ResultSink {
 public:
  MemorySink(std::shared_ptr<MemoryResults> results, int rank)
      : results_(std::move(results)), rank_(rank) {
    std::lock_guard lock(results_->mutex);
    results_->opened.push_back(rank_);
  }
  void write(const ResultRecord& record, const Video* video) override {
    std::lock_guard lock(results_->mutex);
    results_->rows.push_back(record);
    if (video != nullptr) results_->sha_of_video[record.id] = video_sha256(*video);
  }
  void close() override {
    std::lock_guard lock(results_->mutex);
    results_->closed.push_back(rank_);
  }

 private:
  std::shared_ptr<MemoryResults> results_;
  int rank_;
};

inline JobOptions synthetic_job(const fs::path& manifest, const fs::path& out,
                                std::shared_ptr<MemoryResults> results) {
  JobOptions o;
  o.config.model.name = "synthetic";
  o.config.model.device = DeviceKind::cpu;
  o.config.input.manifest = manifest.string();
  o.config.output.dir = out.string();
  o.config.synthetic.seconds_per_gcost = 0.0;
  o.config.scheduler.heartbeat_s = 0.5;
  o.make_pipeline = [cfg = o.config](const DeviceBinding& d) {
    return std::make_unique<models::SyntheticPipeline>(cfg, d);
  };
  o.make_sink = [results](const SinkInfo& info) -> std::unique_ptr<ResultSink> {
    return std::make_unique<MemorySink>(results, info.rank);
  };
  o.scan_done = [](const fs::path&) { return std::unordered_map<std::string, std::string>{}; };
  o.merge = [](const fs::path&, const RunSummary&, const std::string&) {};
  o.lookup_deadline = [] { return std::optional<Deadline>{}; };  // not Slurm's, were it set
  return o;
}

// Rebuilds the pipeline factory after the config changed.
inline void refresh_pipeline(JobOptions& o) {
  o.make_pipeline = [cfg = o.config](const DeviceBinding& d) {
    return std::make_unique<models::SyntheticPipeline>(cfg, d);
  };
}

}  // namespace omnidp::runtime::testing
