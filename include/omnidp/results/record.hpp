#pragma once
// The contract between the runtime (worker/writer actors, coordinator) and the results files
// (HDF5). Torch-free, MPI-free plain value types.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/common/video.hpp"

namespace omnidp {

enum class RequestStatus { ok, failed };
[[nodiscard]] const char* to_string(RequestStatus status) noexcept;

// One row of /requests (SPEC section 5) plus the video attributes.
struct ResultRecord {
  std::string id;
  std::string input_key;
  std::string video_sha256;  // empty when failed
  RequestStatus status = RequestStatus::ok;
  std::string error;  // empty when ok
  int rank = 0;
  int replica = 0;
  std::string host;
  std::string device;
  double start_time = 0.0;  // seconds since the Unix epoch
  double end_time = 0.0;
  double seconds = 0.0;  // end_time - start_time
  int frames = 0;
  int height = 0;
  int width = 0;
  int steps = 0;
  int attempt = 1;  // 1-based
  // The numerics profile that made it (config/numerics.hpp); "" = unknown (a file written
  // before the column existed).
  std::string numerics;
  // video attributes
  std::string prompt;
  std::uint64_t seed = 0;
  int fps = 0;
};

// Figures of a run (SPEC section 9); computed by the coordinator, stored by the merge in
// /summary and in <dir>/summary.json.
struct RunSummary {
  std::size_t total = 0;
  std::size_t completed = 0;
  std::size_t failed = 0;
  std::size_t skipped_resume = 0;
  std::size_t skipped_tasks = 0;  // manifest lines of tasks not in input.tasks
  double makespan_s = 0.0;
  double videos_per_min = 0.0;
  double latency_p50_s = 0.0;
  double latency_p90_s = 0.0;
  double latency_max_s = 0.0;
  std::vector<double> busy_s_per_rank;  // index = rank
  std::vector<double> busy_fraction_per_rank;
  double scheduling_efficiency = 0.0;  // sum busy / (working ranks * makespan): counts GPUs
  int world_size = 1;
  int replicas = 1;
  int tensor_parallel_size = 1;
  int cfg_parallel_size = 1;
  std::string policy;
  std::string order;
  bool interrupted = false;
};

// Where a rank's writer puts finished requests. write() returns only when the record (and the
// video, if given) is durable (written and H5Fflush'ed); only then may the coordinator be told.
// Called from the rank's writer thread only.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  ResultSink() = default;
  ResultSink(const ResultSink&) = delete;
  ResultSink& operator=(const ResultSink&) = delete;

  virtual void write(const ResultRecord& record, const Video* video) = 0;
  virtual void close() = 0;
};

}  // namespace omnidp
