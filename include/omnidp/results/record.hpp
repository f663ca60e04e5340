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

// One row of /requests (docs/results.md) plus the video attributes.
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
  // Model FLOPs of the request in TFLOP (10^12; Pipeline::flops, docs/performance.md "MFU"):
  // transformer, VAE and text encoder; 0 = not counted (a model without a count, a failed
  // request, a file written before the column existed).
  double model_tflop = 0.0;
  // The request's transformer forwards (every CFG branch counted) and how many of them ran
  // their whole block stack; fewer only under a step cache (generation.cache, docs/models.md
  // "Step caching"). 0 = not recorded (a failed request, a model that does not report them, a
  // file written before the columns existed).
  int forwards = 0;
  int forwards_computed = 0;
  // video attributes
  std::string prompt;
  std::uint64_t seed = 0;
  int fps = 0;
};

// How a run was laid out and how it ended: what the coordinator gathers for its summary
// (runtime::SummaryInputs) and what the summary stores, the same fields in both.
struct RunLayout {
  int world_size = 1;
  int replicas = 1;  // model replicas (data-parallel groups)
  int tensor_parallel_size = 1;
  int sequence_parallel_size = 1;
  int cfg_parallel_size = 1;
  std::string policy;  // scheduler.policy
  std::string order;   // scheduler.order
  bool interrupted = false;
};

// Figures of a run (docs/results.md, "results.h5"); computed by the coordinator, stored by the
// merge in /summary and in <dir>/summary.json.
struct RunSummary : RunLayout {
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
  // Model FLOPs utilisation (docs/performance.md, "MFU"), over the ok requests whose
  // model_tflop is known (`flops_counted` of them). A request of a group of G GPUs counts its
  // seconds G times. Unknown peak: peak_tflops, mfu and makespan_mfu stay nullopt ("n/a").
  std::size_t flops_counted = 0;
  double model_tflop_per_video = 0.0;    // mean model TFLOP of those requests
  double achieved_tflops_per_gpu = 0.0;  // sum TFLOP / sum(request seconds x GPUs of its group)
  std::optional<double> peak_tflops;     // dense bf16 peak per GPU (config/peak_flops.hpp)
  std::string peak_source;               // where the peak came from; "" when unknown
  std::optional<double> mfu;             // achieved_tflops_per_gpu / peak_tflops
  std::optional<double> makespan_mfu;    // sum TFLOP / (makespan x working GPUs x peak)
  // The step cache (docs/results.md, "Figures"), over the ok requests that recorded their
  // transformer forwards (forwards > 0): the sums of their forwards and forwards_computed, and
  // cache_skip_rate = 1 - forwards_computed / forwards (nullopt when none recorded them).
  std::size_t forwards = 0;
  std::size_t forwards_computed = 0;
  std::optional<double> cache_skip_rate;
};

// Every RunSummary field with the name it is stored under (summary.json keys, /summary
// attributes and datasets, inspect --json), in that order: the one list those formats read.
// A std::optional<double> field is null in JSON and an absent attribute in /summary when unset.
// `f(name, field)` is called once per field; works on a const or a mutable summary.
template <class Summary, class F>
void for_each_summary_field(Summary& s, F&& f) {
  f("total", s.total);
  f("completed", s.completed);
  f("failed", s.failed);
  f("skipped_resume", s.skipped_resume);
  f("skipped_tasks", s.skipped_tasks);
  f("makespan_s", s.makespan_s);
  f("videos_per_min", s.videos_per_min);
  f("latency_p50_s", s.latency_p50_s);
  f("latency_p90_s", s.latency_p90_s);
  f("latency_max_s", s.latency_max_s);
  f("busy_s_per_rank", s.busy_s_per_rank);
  f("busy_fraction_per_rank", s.busy_fraction_per_rank);
  f("scheduling_efficiency", s.scheduling_efficiency);
  f("world_size", s.world_size);
  f("replicas", s.replicas);
  f("tensor_parallel_size", s.tensor_parallel_size);
  f("sequence_parallel_size", s.sequence_parallel_size);
  f("cfg_parallel_size", s.cfg_parallel_size);
  f("policy", s.policy);
  f("order", s.order);
  f("interrupted", s.interrupted);
  f("flops_counted", s.flops_counted);
  f("model_tflop_per_video", s.model_tflop_per_video);
  f("achieved_tflops_per_gpu", s.achieved_tflops_per_gpu);
  f("peak_tflops", s.peak_tflops);
  f("peak_source", s.peak_source);
  f("mfu", s.mfu);
  f("makespan_mfu", s.makespan_mfu);
  f("forwards", s.forwards);
  f("forwards_computed", s.forwards_computed);
  f("cache_skip_rate", s.cache_skip_rate);
}

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
