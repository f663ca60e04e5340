#pragma once
// What a run shows on rank 0 (docs/cli.md): the progress line while it runs and the final
// summary (printed; written to <dir>/summary.json and, by the merge, to results.h5).
// Not thread-safe (the coordinator's thread).

#include <cstdio>
#include <string>
#include <vector>

#include "omnidp/results/record.hpp"
#include "omnidp/results/summary.hpp"

namespace omnidp::runtime {

struct ProgressSnapshot {
  std::size_t done = 0;  // finished this run (ok + failed)
  std::size_t failed = 0;
  std::size_t total = 0;  // to run this run
  double elapsed_s = 0.0;
  double eta_s = -1.0;  // < 0: unknown yet
  // Non-empty while a replica is silent (three heartbeats missed): "replica 1 (rank 1) silent
  // for 42 s". The ETA is then unknown: the work left may wait on that replica.
  std::string stalled;
};

// "37/120 done (30.8%), 1 failed, 12.5 videos/min, ETA 6m40s"; while stalled: "..., ETA --,
// replica 1 (rank 1) silent for 42 s"
[[nodiscard]] std::string format_progress(const ProgressSnapshot& s);
// "[#####.....]": `width` cells, filled in proportion to done/total (full when total is 0).
[[nodiscard]] std::string progress_bar(const ProgressSnapshot& s, int width);
// "6m40s", "1h02m", "45s", "--" for a negative value.
[[nodiscard]] std::string format_duration(double seconds);

// Prints progress to `out`: rewritten in place ("\r", at most every 0.5 s) when `in_place`
// (a terminal), else one plain line every `interval_s`.
class ProgressReporter {
 public:
  static constexpr int kBarWidth = 30;  // cells of the in-place bar
  ProgressReporter(std::FILE* out, bool in_place, double interval_s);
  // Prints if a refresh is due at `now_s` (any monotonic clock in seconds).
  void update(const ProgressSnapshot& s, double now_s);
  // Prints the final state (ends the in-place line).
  void finish(const ProgressSnapshot& s);

 private:
  std::FILE* out_;
  bool in_place_;
  double interval_s_;
  double last_s_ = -1e300;
  std::size_t last_done_ = static_cast<std::size_t>(-1);
};

// Inputs of the summary, gathered by the coordinator; the layout is copied as it is.
struct SummaryInputs : RunLayout {
  std::size_t total = 0;
  std::size_t completed = 0;  // ok
  std::size_t failed = 0;
  std::size_t skipped_resume = 0;
  std::size_t skipped_tasks = 0;  // lines of tasks not in input.tasks
  double makespan_s = 0.0;
  std::vector<double> latencies_s;          // generation seconds of the ok requests
  std::vector<double> busy_s_per_rank;      // index = world rank; each measured on its rank
  int working_ranks = 1;                    // the ranks that run requests (GPUs)
  std::vector<results::FlopsSample> flops;  // the ok requests with a model FLOP count
  results::ForwardTotals forwards;          // the ok requests' transformer forwards
};

// Latency percentiles interpolate linearly between order statistics (results::percentile).
// Busy seconds are per rank, as each rank measured them (a group member's are its own); the
// scheduling efficiency is sum(busy) / (working ranks x makespan): it counts GPUs, not
// replicas. (results/summary.hpp writes the result to <dir>/summary.json.)
[[nodiscard]] RunSummary make_summary(const SummaryInputs& in);
// The multi-line summary printed at the end of a job; its step cache line only when a forward
// was skipped (results::forwards_skipped).
[[nodiscard]] std::string format_summary(const RunSummary& s);

}  // namespace omnidp::runtime
