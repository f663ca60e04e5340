#pragma once
// The writer actor of a replica leader (docs/runtime.md, "Actors"). Its first item is the
// OpenCmd (sent once the model loaded): it opens the rank's ResultSink (JobOptions::make_sink,
// wrapped by the test-only faults, faults.hpp) and posts Opened. Then, for each finished
// request, it hashes the video (video_sha256, off the model's critical path), writes the row
// and only then has Done sent to the coordinator. Once its sink failed, every later request
// is given back (Returned) and the failure posted once (WriterFailed). When its mailbox is
// closed it closes the sink and posts WriterClosed.

#include "omnidp/runtime/actor.hpp"

namespace omnidp::runtime {

class Writer {
 public:
  explicit Writer(ActorContext& context) : c_(context) {}

  // The thread's body: returns after WriterClosed.
  void run();

 private:
  ActorContext& c_;
};

}  // namespace omnidp::runtime
