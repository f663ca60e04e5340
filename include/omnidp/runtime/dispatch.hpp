#pragma once
// The coordinator's two dispatch decisions as plain values, tested without messages
// (docs/scheduling.md, "Flow control" and docs/slurm.md, "Deadline"):
//  - DispatchPolicy: which replicas may take a request now, in which order;
//  - DeadlineGate: whether a replica can take a given request and end it by the job's deadline
//    minus scheduler.deadline_margin_s.
// The coordinator keeps the replicas' state (ReplicaLoad) and the queue, feeds these and acts on
// their answers. Pure functions of their inputs; rank 0's coordinator thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"

namespace omnidp::runtime {

// What the coordinator knows of one replica's work.
struct ReplicaLoad {
  bool ready = false;
  bool closed = false;            // the deadline: its next request would not end in time
  int slots = 0;                  // 1 + scheduler.prefetch
  int in_model = 0;               // assigned, not yet generated (bounded by slots)
  bool pull = false;              // its running request is nearly done: fill the prefetch
  int outstanding = 0;            // assigned, not yet durable (bounded by slots + write backlog)
  double outstanding_cost = 0.0;  // estimated cost of the in_model ones (cost units)
  double model_since = 0.0;       // when its running request (the oldest in_model) started
};

class DispatchPolicy {
 public:
  // A replica holds at most this many generated requests that are not yet durable (bounded
  // memory when the writer is slower than the model).
  static constexpr int kWriteBacklog = 2;

  explicit DispatchPolicy(SchedulerPolicy policy) : policy_(policy) {}

  // The replicas that may take a request now, emptiest first (an idle one before a free
  // prefetch slot, then the least estimated work, then the lower index): ready, not closed,
  // wanting work (idle, or pulling and not at the tail), a model slot free and under the write
  // backlog. The tail: a dynamic job with no more requests left than replicas, where nothing
  // is queued behind a running request (an idle replica would watch it wait).
  [[nodiscard]] std::vector<int> candidates(const std::vector<ReplicaLoad>& replicas,
                                            std::size_t requests_left) const;

 private:
  SchedulerPolicy policy_;
};

class DeadlineGate {
 public:
  enum class Fit { yes, wait, no };
  struct Decision {
    Fit fit = Fit::yes;
    std::string why;  // Fit::no: the log line saying why the replica gets no more work
  };

  // `deadline` in the coordinator's clock; `margin_s` = scheduler.deadline_margin_s.
  DeadlineGate(double deadline, double margin_s) : deadline_(deadline), margin_s_(margin_s) {}

  // When a replica's model is expected to be free: now when idle; else the running request's
  // estimate less the time it has run (not below zero), plus the queued ones'. `in_model` holds
  // the seconds estimates of its requests not yet generated, oldest (the running one) first.
  [[nodiscard]] static double model_free_at(double now, const ReplicaLoad& replica,
                                            const std::vector<double>& in_model);

  // Whether `replica` (index `k`) may take request `id` now. Before the cost model is
  // calibrated (`estimate` nullopt: no time scale yet) a replica with nothing outstanding gets
  // a request while the limit has not passed, one with a request outstanding waits for the
  // first completion. Calibrated: yes when the request, started at `free_at`, ends by the limit.
  [[nodiscard]] Decision decide(double now, int k, const ReplicaLoad& replica, const std::string& id,
                                std::optional<double> estimate, double free_at) const;

 private:
  double deadline_;
  double margin_s_;
};

}  // namespace omnidp::runtime
