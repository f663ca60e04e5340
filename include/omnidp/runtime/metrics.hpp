#pragma once
// Live metrics of a run for the cluster's monitoring (docs/export.md, "Live metrics"): rank 0's
// coordinator state rendered in the Prometheus text exposition format and rewritten atomically
// for node_exporter's textfile collector (output.metrics_textfile). Not thread-safe (the
// coordinator's thread).

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace omnidp::runtime {

struct RankMetrics {
  int rank = 0;
  double busy_fraction = 0.0;   // busy seconds of its replica / elapsed seconds
  std::string current_request;  // the request its replica's model runs; "" = idle
};

struct MetricsSnapshot {
  std::size_t completed = 0;  // ok, this run
  std::size_t failed = 0;
  std::size_t queued = 0;          // not yet handed to a replica
  std::size_t running = 0;         // handed out, not yet durable
  double videos_per_minute = 0.0;  // completed per minute since the start
  double elapsed_s = 0.0;
  double eta_s = -1.0;             // < 0: unknown yet (written as NaN)
  std::vector<RankMetrics> ranks;  // by rank
};

// The text format (version 0.0.4): per family a HELP and a TYPE line, then its samples.
// Families: omnidp_requests_completed_total, omnidp_requests_failed_total (counters),
// omnidp_requests_queued, omnidp_requests_running, omnidp_videos_per_minute,
// omnidp_elapsed_seconds, omnidp_eta_seconds, omnidp_rank_busy_fraction{rank},
// omnidp_rank_current_request{rank,request_id} (1 per busy rank) (gauges). Label values are
// escaped (\\, \", \n).
[[nodiscard]] std::string format_prometheus(const MetricsSnapshot& s);

// Rewrites the file when `interval_s` passed since the last write (the first update writes).
// A failed write is logged once as a warning and retried at the next interval: monitoring never
// stops the job.
class MetricsTextfile {
 public:
  MetricsTextfile(std::filesystem::path path, double interval_s);
  // Writes if due at `now_s` (any monotonic clock in seconds). Returns whether it wrote.
  bool update(const MetricsSnapshot& s, double now_s);
  // Writes now (the final state).
  void finish(const MetricsSnapshot& s);
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  bool write(const MetricsSnapshot& s);
  std::filesystem::path path_;
  double interval_s_;
  double last_s_ = 0.0;
  bool written_ = false;
  bool warned_ = false;
};

}  // namespace omnidp::runtime
