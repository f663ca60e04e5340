#pragma once
// The coordinator actor of rank 0 (docs/runtime.md, "Actors" and "Job startup"): the
// pre-start pass over the manifest (JobInputs, plan.hpp) while the workers load their models,
// the deadline, then the Coordinator state machine fed from its inbox (the comm thread routes
// every coordinator message there) until the job finished. The coordinator's messages go out
// through ActorContext::post. A failure before or during the job is kept (error()) and ends
// the job with Finish{error} to every rank.

#include <exception>

#include "omnidp/runtime/actor.hpp"

namespace omnidp::runtime {

class CoordinatorActor {
 public:
  CoordinatorActor(ActorContext& context, Mailbox<Envelope>& inbox) : c_(context), inbox_(inbox) {}

  // The thread's body: returns once the job finished or the inbox was closed.
  void run();
  // What ended the job with an error, or null; read after the thread ended.
  [[nodiscard]] const std::exception_ptr& error() const noexcept { return error_; }

 private:
  void coordinate();

  ActorContext& c_;
  Mailbox<Envelope>& inbox_;
  std::exception_ptr error_;
};

}  // namespace omnidp::runtime
