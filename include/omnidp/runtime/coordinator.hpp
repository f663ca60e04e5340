#pragma once
// The coordinator (rank 0): hands requests to replicas, retries transient failures elsewhere,
// drains on signals, ends the job and computes its summary (docs/runtime.md). A message-driven
// state machine: it never blocks and never touches MPI; whoever drives it feeds it envelopes
// (handle) and time (tick), and it answers through `send`. In a job it runs on its own thread
// on rank 0; tests drive it step by step over an InProcessNetwork. Not thread-safe.
//
// Flow control: an idle replica gets a request at once; its prefetch (up to `slots` =
// 1 + prefetch requests not yet generated) is handed out when it reports its running request
// nearly done (Pull), so the choice of the next request is made as late as possible (exact
// longest-first among replicas) while the model never waits for a round trip. A replica holds
// at most kWriteBacklog more that are generated but not yet durable (bounded memory when the
// writer is slower than the model). Dynamic policy, at the tail (no more requests left than
// replicas): a
// request is only handed to a replica with nothing in its model: queued behind a running
// request it could wait while another replica sits idle.
//
// Phases: setup (Start sent, waiting for every replica's Ready) -> running -> draining (a
// signal, faults.drain_after or a Fatal: no new work, running requests finish) -> closing
// (Shutdown sent, waiting for every rank's Closed) -> finished (Finish sent).

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/results/record.hpp"
#include "omnidp/runtime/cost_model.hpp"
#include "omnidp/runtime/dispatch.hpp"
#include "omnidp/runtime/metrics.hpp"
#include "omnidp/runtime/plan.hpp"
#include "omnidp/runtime/progress.hpp"
#include "omnidp/runtime/protocol.hpp"
#include "omnidp/runtime/scheduler.hpp"
#include "omnidp/runtime/topology.hpp"

namespace omnidp::runtime {

struct CoordinatorOptions {
  Config config;
  Topology topology;
  JobPlan plan;
  std::size_t skipped_resume = 0;
  std::function<double()> now;  // monotonic seconds; empty = std::chrono::steady_clock
  // The job's end in now()'s time base (docs/slurm.md, "Deadline"); empty = none. A request is
  // handed to a replica only when the cost model expects it to end by deadline -
  // scheduler.deadline_margin_s there (after the replica's own outstanding work). Before the
  // first completion the cost model has no time scale: a replica then gets a request only
  // when it has none outstanding (one each, no prefetch) and the limit has not passed. A
  // replica whose next request does not fit gets no more work; once nothing is outstanding
  // and no replica can get work, the job drains as for a signal (exit 75).
  std::optional<double> deadline;
  std::FILE* progress_out = nullptr;  // nullptr: no progress output
  bool progress_in_place = false;
  double progress_interval_s = 10.0;
  // Runs after every rank closed its files, before Finish (writes summary.json, results.h5).
  // An exception ends the job with that error.
  std::function<void(const RunSummary&)> finalize;
  // Runs once when the job starts to drain (a signal, the deadline), with the figures so far
  // (interrupted): summary.json is written then, so a launcher that kills the ranks mid-drain
  // (Open MPI's mpirun on TERM/INT: SIGKILL a second after its SIGTERM) leaves the partial
  // summary (issue 52, class 8). An exception is one warning.
  std::function<void(const RunSummary&)> on_drain;
};

class Coordinator {
 public:
  static constexpr int kWriteBacklog = DispatchPolicy::kWriteBacklog;
  enum class Phase { setup, running, draining, closing, finished };
  using Send = std::function<void(int dest, const Message& message)>;

  // `source` yields the requests to run (already resume-filtered); it must outlive this.
  Coordinator(CoordinatorOptions options, RequestSource& source, Send send);

  void start();  // Start to every rank
  void handle(const Envelope& envelope);
  void tick();  // progress output and the heartbeat watch
  // Set by tick() when a replica sent nothing for scheduler.silent_timeout_s: why the job must be
  // aborted (the caller aborts it with exit 75: the silent rank would never take a Finish); ""
  // otherwise.
  [[nodiscard]] const std::string& abort_reason() const noexcept { return abort_reason_; }
  // Ends the job at once with `error` (Finish{error} to every rank).
  void fail(const ErrorInfo& error);

  [[nodiscard]] Phase phase() const noexcept { return phase_; }
  [[nodiscard]] bool finished() const noexcept { return phase_ == Phase::finished; }
  [[nodiscard]] int exit_code() const noexcept { return exit_code_; }
  [[nodiscard]] const RunSummary& summary() const noexcept { return summary_; }
  [[nodiscard]] std::size_t outstanding(int replica) const;
  [[nodiscard]] std::size_t completed() const noexcept { return completed_; }
  [[nodiscard]] std::size_t failed() const noexcept { return failed_; }
  [[nodiscard]] ProgressSnapshot progress() const;
  // The live metrics (output.metrics_textfile, rewritten by tick() every
  // output.metrics_interval_s and at the end): counts, per-rank busy fraction (its replica's
  // busy seconds / elapsed) and the request each replica's model runs.
  [[nodiscard]] MetricsSnapshot metrics() const;

 private:
  // A replica's state beside its load (the dispatch decisions' input).
  struct ReplicaState {
    double busy_s = 0.0;
    double last_heartbeat = 0.0;
    bool warned_silent = false;
    std::string device;
  };
  struct Assigned {
    WorkItem item;
    int replica = 0;
    bool generated = false;  // Generated received: the slot is free, the write is pending
    std::uint64_t seq = 0;   // order of assignment
  };

  void on(int from, const ReadyMsg& m);
  void on(int from, const GeneratedMsg& m);
  void on(int from, const PullMsg& m);
  void on(int from, const DoneMsg& m);
  void on(int from, const RetryMsg& m);
  void on(int from, const ReturnedMsg& m);
  void on(int from, const SignalMsg& m);
  void on(int from, const HeartbeatMsg& m);
  void on(int from, const FatalMsg& m);
  void on(int from, const ClosedMsg& m);
  template <class M>
  void on(int from, const M& m);  // messages the coordinator never receives

  [[nodiscard]] double now() const;
  void broadcast(const Message& m);  // every other rank first, rank 0 last
  std::optional<Assigned> release(const std::string& id, int from, const char* what);
  void free_slot(Assigned& a);
  void dispatch();
  // The deadline gate (DeadlineGate) for handing `item` to replica `k` now; closes the
  // replica when its next request cannot end in time.
  [[nodiscard]] bool fits_deadline(int k, const WorkItem& item);
  // When replica k's model is expected to be free (now when it is idle); calibrated cost only.
  [[nodiscard]] double model_free_at(int k) const;
  void drain_if_nothing_fits();
  void begin_drain(bool abandon);
  void check_done();
  void begin_shutdown();
  [[nodiscard]] SummaryInputs summary_inputs_now() const;
  void finish();

  CoordinatorOptions options_;
  Send send_;
  CostModel cost_;
  WorkQueue work_;
  Phase phase_ = Phase::setup;
  DispatchPolicy dispatch_policy_;
  std::vector<ReplicaLoad> load_;
  std::vector<ReplicaState> replicas_;
  std::unordered_map<std::string, Assigned> outstanding_;
  std::size_t handed_out_ = 0;  // distinct requests assigned
  std::uint64_t assign_seq_ = 0;
  bool deadline_closed_any_ = false;
  std::size_t completed_ = 0;
  std::size_t failed_ = 0;
  std::vector<double> latencies_;
  std::vector<results::FlopsSample> flops_;  // the ok requests with a model FLOP count
  results::ForwardTotals forwards_;          // the ok requests' transformer forwards
  CostFeatures done_features_;
  double go_time_ = 0.0;
  double last_completion_ = 0.0;
  int signal_level_ = 0;
  bool drain_requested_ = false;
  bool drained_ = false;
  bool abandon_sent_ = false;
  bool has_fatal_ = false;
  ErrorInfo fatal_;
  int closed_ = 0;
  int exit_code_ = 0;
  std::string abort_reason_;
  RunSummary summary_;
  SummaryInputs summary_inputs_;  // from begin_shutdown; busy seconds from each rank's Closed
  ProgressReporter progress_;
  std::optional<MetricsTextfile> metrics_file_;
};

}  // namespace omnidp::runtime
