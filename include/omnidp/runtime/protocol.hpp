#pragma once
// The typed messages between ranks (docs/runtime.md, "Protocol"). Each message lists its wire
// fields once, in `fields(m)` (a tuple of references): encode and decode both walk that list.
// Encoding: one type byte, then the fields in the order of that list;
// integers little-endian fixed width, doubles as their IEEE-754 bits, strings and lists as a
// u32 length and the elements. Decoding checks every length and refuses trailing bytes
// (RuntimeError "protocol: ..."). Pure value types; thread-safe.
//
// Flow (C = coordinator on rank 0, L = a replica's leader rank, M = a group member):
//   C->all Start; L->C Ready{slots}; C->L Assign; L->C Pull (near the end of a request),
//   then Generated then Done, or Retry, or Returned; any->C Signal,
//   Heartbeat, Fatal; C->all Drain{abandon}; C->all Shutdown; all->C Closed; C->all Finish.
//   L->M GroupRun{request} when the leader starts a request (the members run it with it:
//   docs/runtime.md, "Replica groups"), GroupIdle{id} when it ended on the leader, on the
//   replica's group communicator.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/manifest/request.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::runtime {

inline constexpr int kProtocolTag = 7101;  // world messages
inline constexpr int kGroupTag = 7102;     // replica-group messages
inline constexpr int kStartupTag = 7103;   // startup checks before the protocol (shared_dir.hpp)

class Encoder {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void f64(double v);
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(const std::string& v);
  [[nodiscard]] std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class Decoder {
 public:
  explicit Decoder(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  [[nodiscard]] std::uint8_t u8();
  [[nodiscard]] std::uint32_t u32();
  [[nodiscard]] std::uint64_t u64();
  [[nodiscard]] std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  [[nodiscard]] double f64();
  [[nodiscard]] bool boolean();
  [[nodiscard]] std::string str();
  // Throws unless every byte was consumed.
  void finish() const;

 private:
  void need(std::size_t n) const;
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

void encode(Encoder& out, const Request& request);
[[nodiscard]] Request decode_request(Decoder& in);

// A job-level error carried between ranks: its kind decides the exit code everywhere.
struct ErrorInfo {
  ErrorKind kind = ErrorKind::runtime;
  std::string message;  // the original what()
  static auto fields(auto& m) { return std::tie(m.kind, m.message); }
  bool operator==(const ErrorInfo&) const = default;
};

enum class MessageType : std::uint8_t {
  start = 1,
  ready,
  assign,
  done,
  retry,
  returned,
  drain,
  signal,
  heartbeat,
  fatal,
  shutdown,
  closed,
  finish,
  group_run,
  group_idle,
  generated,
  pull
};

// C -> every rank: the manifest passed the pre-start checks; load the model, open the rank
// file, then report Ready.
struct StartMsg {
  static constexpr MessageType type = MessageType::start;
  std::uint64_t total = 0;  // requests to run (after resume skips)
  static auto fields(auto& m) { return std::tie(m.total); }
  bool operator==(const StartMsg&) const = default;
};

// L -> C: the replica is ready with `slots` (1 running + prefetch), or could not start.
struct ReadyMsg {
  static constexpr MessageType type = MessageType::ready;
  std::int32_t replica = 0;
  std::int32_t slots = 0;
  std::string device;
  bool ok = true;
  ErrorInfo error;  // when !ok
  static auto fields(auto& m) { return std::tie(m.replica, m.slots, m.device, m.ok, m.error); }
  bool operator==(const ReadyMsg&) const = default;
};

// Run this request (attempt is 1-based): C -> L Assign; L -> M (group communicator) GroupRun,
// the leader starts it: run it with the group now.
template <MessageType T>
struct RunMsg {
  static constexpr MessageType type = T;
  Request request;
  std::int32_t attempt = 1;
  static auto fields(auto& m) { return std::tie(m.request, m.attempt); }
};
using AssignMsg = RunMsg<MessageType::assign>;
using GroupRunMsg = RunMsg<MessageType::group_run>;

// L -> C: the running request `id` is nearly done (its last denoising step): hand out this
// replica's prefetch now. Late binding keeps longest-first ordering exact while the model
// never waits for a round trip.
struct PullMsg {
  static constexpr MessageType type = MessageType::pull;
  std::int32_t replica = 0;
  std::string id;
  static auto fields(auto& m) { return std::tie(m.replica, m.id); }
  bool operator==(const PullMsg&) const = default;
};

// L -> C: the model is done with a request (ok or failed for good); its row is being written.
// Frees the replica's slot at once, so the model never waits for the writer.
struct GeneratedMsg {
  static constexpr MessageType type = MessageType::generated;
  std::string id;
  static auto fields(auto& m) { return std::tie(m.id); }
  bool operator==(const GeneratedMsg&) const = default;
};

// L -> C: a request finished, ok or failed for good, and its row is durable in the rank file.
struct DoneMsg {
  static constexpr MessageType type = MessageType::done;
  std::string id;
  RequestStatus status = RequestStatus::ok;
  std::string error;
  std::int32_t rank = 0;
  std::int32_t replica = 0;
  std::int32_t attempt = 1;
  double start_time = 0.0;  // Unix seconds
  double end_time = 0.0;
  double seconds = 0.0;      // generation time (busy time of the replica)
  double model_tflop = 0.0;  // the row's model_tflop (0 = not counted)
  // The row's transformer forwards and forwards_computed (0 = not recorded): the step cache's
  // skip rate in the run's summary.
  std::int32_t forwards = 0;
  std::int32_t forwards_computed = 0;
  static auto fields(auto& m) {
    return std::tie(m.id, m.status, m.error, m.rank, m.replica, m.attempt, m.start_time, m.end_time,
                    m.seconds, m.model_tflop, m.forwards, m.forwards_computed);
  }
  bool operator==(const DoneMsg&) const = default;
};

// L -> C: a transient failure (nothing recorded); the coordinator retries it elsewhere.
struct RetryMsg {
  static constexpr MessageType type = MessageType::retry;
  std::string id;
  std::int32_t replica = 0;
  std::int32_t attempt = 1;  // the attempt that failed
  std::string error;
  double seconds = 0.0;
  static auto fields(auto& m) { return std::tie(m.id, m.replica, m.attempt, m.error, m.seconds); }
  bool operator==(const RetryMsg&) const = default;
};

// L -> C: requests given back unfinished (queued when a drain came, or abandoned).
struct ReturnedMsg {
  static constexpr MessageType type = MessageType::returned;
  std::int32_t replica = 0;
  std::vector<std::string> ids;
  static auto fields(auto& m) { return std::tie(m.replica, m.ids); }
  bool operator==(const ReturnedMsg&) const = default;
};

// C -> every rank: stop taking work; give queued requests back; abandon running ones too.
struct DrainMsg {
  static constexpr MessageType type = MessageType::drain;
  bool abandon = false;
  static auto fields(auto& m) { return std::tie(m.abandon); }
  bool operator==(const DrainMsg&) const = default;
};

// any rank -> C: this rank received `level` drain signals so far (SIGUSR1/SIGTERM).
struct SignalMsg {
  static constexpr MessageType type = MessageType::signal;
  std::int32_t level = 1;
  std::int32_t signal = 0;
  static auto fields(auto& m) { return std::tie(m.level, m.signal); }
  bool operator==(const SignalMsg&) const = default;
};

// L -> C, every scheduler.heartbeat_s: liveness and what is running.
struct HeartbeatMsg {
  static constexpr MessageType type = MessageType::heartbeat;
  std::int32_t replica = 0;
  std::string running_id;  // empty when idle
  double running_s = 0.0;
  double busy_s = 0.0;
  static auto fields(auto& m) { return std::tie(m.replica, m.running_id, m.running_s, m.busy_s); }
  bool operator==(const HeartbeatMsg&) const = default;
};

// any rank -> C: a job-level failure on that rank (e.g. its rank file cannot be written): the
// coordinator drains the job and ends it with this error.
struct FatalMsg {
  static constexpr MessageType type = MessageType::fatal;
  ErrorInfo error;
  static auto fields(auto& m) { return std::tie(m.error); }
  bool operator==(const FatalMsg&) const = default;
};

// C -> every rank: no more work; close the rank file and report Closed.
struct ShutdownMsg {
  static constexpr MessageType type = MessageType::shutdown;
  static auto fields(auto& /*m*/) { return std::tuple<>(); }
  bool operator==(const ShutdownMsg&) const = default;
};

// any rank -> C: files closed (after Shutdown).
struct ClosedMsg {
  static constexpr MessageType type = MessageType::closed;
  double busy_s = 0.0;
  static auto fields(auto& m) { return std::tie(m.busy_s); }
  bool operator==(const ClosedMsg&) const = default;
};

// C -> every rank: the job is over (results.h5 written); return exit_code, or throw `error`
// when has_error (a job that could not start, or a job-level failure).
struct FinishMsg {
  static constexpr MessageType type = MessageType::finish;
  std::int32_t exit_code = 0;
  bool has_error = false;
  ErrorInfo error;
  static auto fields(auto& m) { return std::tie(m.exit_code, m.has_error, m.error); }
  bool operator==(const FinishMsg&) const = default;
};

// L -> M (group communicator): the leader's run of `id` ended.
struct GroupIdleMsg {
  static constexpr MessageType type = MessageType::group_idle;
  std::string id;
  static auto fields(auto& m) { return std::tie(m.id); }
  bool operator==(const GroupIdleMsg&) const = default;
};

using Message = std::variant<StartMsg, ReadyMsg, AssignMsg, DoneMsg, RetryMsg, ReturnedMsg,
                             DrainMsg, SignalMsg, HeartbeatMsg, FatalMsg, ShutdownMsg, ClosedMsg,
                             FinishMsg, GroupRunMsg, GroupIdleMsg, GeneratedMsg, PullMsg>;

[[nodiscard]] std::vector<std::uint8_t> encode(const Message& message);
// Throws RuntimeError on an unknown type, a truncated body or trailing bytes.
[[nodiscard]] Message decode(std::span<const std::uint8_t> bytes);
[[nodiscard]] const char* message_name(const Message& message) noexcept;
// True for the messages the coordinator handles (the rest go to a rank's agent).
[[nodiscard]] bool for_coordinator(const Message& message) noexcept;

// A message with the rank it came from.
struct Envelope {
  int from = 0;
  Message message;
};

}  // namespace omnidp::runtime
