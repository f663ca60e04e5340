#pragma once
// The worker actor of a replica leader or group member (docs/runtime.md, "Actors"): loads the
// rank's Pipeline (Loaded), then runs one request at a time from ActorContext::work until it is
// closed. A leader reports each request's start, its last step (the prefetch pull) and its end
// to the comm thread, posts Generated and hands the row to the writer, or posts Retry (a
// transient failure) or Returned (abandoned). A group member runs each request the leader
// starts with it and reports only its own busy seconds (WorkerIdle, then WorkerExited).

#include <string>

#include "omnidp/models/pipeline.hpp"
#include "omnidp/runtime/actor.hpp"

namespace omnidp::runtime {

class Worker {
 public:
  explicit Worker(ActorContext& context) : c_(context), s_(context.setup) {}

  // The thread's body: returns once the work mailbox is closed and empty (or the load failed).
  void run();

 private:
  void run_as_leader(Pipeline& pipeline, const std::string& device);
  void run_as_member(Pipeline& pipeline, const AssignMsg& assignment, double& busy);

  ActorContext& c_;
  const RankSetup& s_;
};

// The model TFLOP of the work a request did (its row's model_tflop; docs/performance.md,
// "MFU"): flops.total() / 10^12, its transformer part scaled by counts.computed /
// counts.forwards when a step cache skipped forwards (a skipped forward does no transformer
// GEMMs). The first block that a first-block cache still runs on a skipped step is not counted.
// Counts with forwards <= 0 (not recorded) leave the count as the pipeline gave it; computed is
// taken within 0..forwards.
[[nodiscard]] double computed_model_tflop(const RequestFlops& flops,
                                          const ForwardCounts& counts) noexcept;

// Whether a pipeline failure may go away on another attempt: an out-of-memory report from a
// library (e.g. a c10::Error "CUDA out of memory") or an illegal CUDA memory access.
[[nodiscard]] bool looks_transient(const std::string& what);

}  // namespace omnidp::runtime
