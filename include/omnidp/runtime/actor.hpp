#pragma once
// What the actors of one rank share (docs/runtime.md, "Actors"): the mailboxes between them,
// the events they post to the rank's comm thread (the only one that touches the transports),
// and the rank's identity. The rank (rank.cpp) owns one ActorContext and runs each actor on
// its own thread: the coordinator (coordinator_actor.hpp, rank 0), the worker (worker.hpp) and
// the writer (writer.hpp). The mailboxes are thread-safe; the rest is read-only.

#include <atomic>
#include <exception>
#include <string>
#include <utility>
#include <variant>

#include "omnidp/results/record.hpp"
#include "omnidp/runtime/mailbox.hpp"
#include "omnidp/runtime/protocol.hpp"
#include "omnidp/runtime/rank_setup.hpp"

namespace omnidp::runtime {

// Events posted to the comm thread by the rank's other actors.
struct OutMsg {  // send `message` to rank `dest`
  int dest = 0;
  Message message;
};
struct Loaded {  // the worker's model loaded (or failed to)
  std::string device;
  std::exception_ptr error;
};
struct Opened {  // the writer's sink opened (or failed to)
  std::exception_ptr error;
};
struct WorkerStarted {
  AssignMsg assignment;
  double since = 0.0;  // clock_s() on the worker when it started
};
struct WorkerNearlyDone {
  std::string id;
};
struct WorkerIdle {
  std::string id;
  double busy_s = 0.0;
};
struct WriterFailed {
  ErrorInfo error;
};
struct WriterClosed {};
struct WorkerExited {  // a group member's worker thread ended (its busy seconds are final)
  double busy_s = 0.0;
};
using LocalEvent = std::variant<OutMsg, Loaded, Opened, WorkerStarted, WorkerNearlyDone, WorkerIdle,
                                WriterFailed, WriterClosed, WorkerExited>;

// What the writer is given: open the sink on this device, then write each finished request.
struct OpenCmd {
  std::string device;
};
struct WriteJob {
  ResultRecord record;
  Video video;  // empty when failed
};
using WriterItem = std::variant<OpenCmd, WriteJob>;

struct ActorContext {
  explicit ActorContext(const RankSetup& setup);
  ActorContext(const ActorContext&) = delete;
  ActorContext& operator=(const ActorContext&) = delete;

  // Durations and the timeout watch: the injected clock (tests), else the steady clock.
  [[nodiscard]] double clock_s() const;
  // Has the comm thread send `m` to rank `dest`.
  void post(int dest, Message m) { events.push(OutMsg{dest, std::move(m)}); }

  const RankSetup& setup;
  const JobOptions& options;
  const Config& config;
  const int rank;
  const int replica;
  const bool leader;
  const bool member;  // a working rank of a group that is not its leader

  Mailbox<LocalEvent> events;  // to the comm thread
  Mailbox<AssignMsg> work;     // to the worker
  Mailbox<WriterItem> writes;  // to the writer
  std::atomic<bool> abandon{false};
};

// The job-level error an exception stands for (its ErrorKind, else runtime).
[[nodiscard]] ErrorInfo error_info(const std::exception_ptr& e);
[[nodiscard]] double steady_s();
[[nodiscard]] double unix_s();

}  // namespace omnidp::runtime
