#include "omnidp/runtime/protocol.hpp"

#include <bit>
#include <limits>
#include <type_traits>

namespace omnidp::runtime {
namespace {

[[noreturn]] void protocol_error(const std::string& what) {
  throw RuntimeError(what, {"protocol"});
}

void encode_strings(Encoder& out, const std::vector<std::string>& list) {
  out.u32(static_cast<std::uint32_t>(list.size()));
  for (const auto& s : list) out.str(s);
}
std::vector<std::string> decode_strings(Decoder& in) {
  const std::uint32_t n = in.u32();
  std::vector<std::string> list;
  for (std::uint32_t i = 0; i < n; ++i) list.push_back(in.str());
  return list;
}

ErrorKind decode_kind(std::uint8_t v) {
  if (v > static_cast<std::uint8_t>(ErrorKind::interrupted)) {
    protocol_error("unknown error kind " + std::to_string(v));
  }
  return static_cast<ErrorKind>(v);
}

}  // namespace

void Encoder::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void Encoder::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void Encoder::f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
void Encoder::str(const std::string& v) {
  if (v.size() > std::numeric_limits<std::uint32_t>::max()) protocol_error("string too long");
  u32(static_cast<std::uint32_t>(v.size()));
  bytes_.insert(bytes_.end(), v.begin(), v.end());
}

void Decoder::need(std::size_t n) const {
  if (bytes_.size() - pos_ < n) {
    protocol_error("truncated message: need " + std::to_string(n) + " bytes at offset " +
                   std::to_string(pos_) + " of " + std::to_string(bytes_.size()));
  }
}
std::uint8_t Decoder::u8() {
  need(1);
  return bytes_[pos_++];
}
std::uint32_t Decoder::u32() {
  need(4);
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(bytes_[pos_++]) << (8 * i);
  return v;
}
std::uint64_t Decoder::u64() {
  need(8);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(bytes_[pos_++]) << (8 * i);
  return v;
}
double Decoder::f64() { return std::bit_cast<double>(u64()); }
bool Decoder::boolean() {
  const std::uint8_t v = u8();
  if (v > 1) protocol_error("invalid boolean " + std::to_string(v));
  return v == 1;
}
std::string Decoder::str() {
  const std::uint32_t n = u32();
  need(n);
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
  pos_ += n;
  return s;
}
void Decoder::finish() const {
  if (pos_ != bytes_.size()) {
    protocol_error(std::to_string(bytes_.size() - pos_) + " trailing bytes after the message");
  }
}

void encode(Encoder& out, const Request& r) {
  out.str(r.id);
  out.str(r.prompt);
  out.str(r.negative_prompt);
  out.u64(r.seed);
  out.u8(static_cast<std::uint8_t>(r.task));
  out.str(r.image);
  out.str(r.image_sha256);
  out.str(r.prompt_embeds);
  out.str(r.prompt_embeds_sha256);
  out.i32(r.num_frames);
  out.i32(r.height);
  out.i32(r.width);
  out.i32(r.num_inference_steps);
  out.f64(r.guidance_scale);
  out.f64(r.flow_shift);
  out.i32(r.fps);
  out.u64(r.line);
  out.u64(r.index);
  out.str(r.input_key);
  out.str(r.input_error);
}

Request decode_request(Decoder& in) {
  Request r;
  r.id = in.str();
  r.prompt = in.str();
  r.negative_prompt = in.str();
  r.seed = in.u64();
  const std::uint8_t task = in.u8();
  if (task > static_cast<std::uint8_t>(Task::i2v))
    protocol_error("unknown task " + std::to_string(task));
  r.task = static_cast<Task>(task);
  r.image = in.str();
  r.image_sha256 = in.str();
  r.prompt_embeds = in.str();
  r.prompt_embeds_sha256 = in.str();
  r.num_frames = in.i32();
  r.height = in.i32();
  r.width = in.i32();
  r.num_inference_steps = in.i32();
  r.guidance_scale = in.f64();
  r.flow_shift = in.f64();
  r.fps = in.i32();
  r.line = static_cast<std::size_t>(in.u64());
  r.index = static_cast<std::size_t>(in.u64());
  r.input_key = in.str();
  r.input_error = in.str();
  return r;
}

void ErrorInfo::encode(Encoder& out) const {
  out.u8(static_cast<std::uint8_t>(kind));
  out.str(message);
}
ErrorInfo ErrorInfo::decode(Decoder& in) {
  ErrorInfo e;
  e.kind = decode_kind(in.u8());
  e.message = in.str();
  return e;
}

void StartMsg::encode(Encoder& out) const { out.u64(total); }
StartMsg StartMsg::decode(Decoder& in) { return StartMsg{in.u64()}; }

void ReadyMsg::encode(Encoder& out) const {
  out.i32(replica);
  out.i32(slots);
  out.str(device);
  out.boolean(ok);
  error.encode(out);
}
ReadyMsg ReadyMsg::decode(Decoder& in) {
  ReadyMsg m;
  m.replica = in.i32();
  m.slots = in.i32();
  m.device = in.str();
  m.ok = in.boolean();
  m.error = ErrorInfo::decode(in);
  return m;
}

void AssignMsg::encode(Encoder& out) const {
  runtime::encode(out, request);
  out.i32(attempt);
}
AssignMsg AssignMsg::decode(Decoder& in) {
  AssignMsg m;
  m.request = decode_request(in);
  m.attempt = in.i32();
  return m;
}

void DoneMsg::encode(Encoder& out) const {
  out.str(id);
  out.u8(static_cast<std::uint8_t>(status));
  out.str(error);
  out.i32(rank);
  out.i32(replica);
  out.i32(attempt);
  out.f64(start_time);
  out.f64(end_time);
  out.f64(seconds);
}
DoneMsg DoneMsg::decode(Decoder& in) {
  DoneMsg m;
  m.id = in.str();
  const std::uint8_t status = in.u8();
  if (status > static_cast<std::uint8_t>(RequestStatus::failed)) protocol_error("unknown status");
  m.status = static_cast<RequestStatus>(status);
  m.error = in.str();
  m.rank = in.i32();
  m.replica = in.i32();
  m.attempt = in.i32();
  m.start_time = in.f64();
  m.end_time = in.f64();
  m.seconds = in.f64();
  return m;
}

void RetryMsg::encode(Encoder& out) const {
  out.str(id);
  out.i32(replica);
  out.i32(attempt);
  out.str(error);
  out.f64(seconds);
}
RetryMsg RetryMsg::decode(Decoder& in) {
  RetryMsg m;
  m.id = in.str();
  m.replica = in.i32();
  m.attempt = in.i32();
  m.error = in.str();
  m.seconds = in.f64();
  return m;
}

void ReturnedMsg::encode(Encoder& out) const {
  out.i32(replica);
  encode_strings(out, ids);
}
ReturnedMsg ReturnedMsg::decode(Decoder& in) {
  ReturnedMsg m;
  m.replica = in.i32();
  m.ids = decode_strings(in);
  return m;
}

void DrainMsg::encode(Encoder& out) const { out.boolean(abandon); }
DrainMsg DrainMsg::decode(Decoder& in) { return DrainMsg{in.boolean()}; }

void SignalMsg::encode(Encoder& out) const {
  out.i32(level);
  out.i32(signal);
}
SignalMsg SignalMsg::decode(Decoder& in) {
  SignalMsg m;
  m.level = in.i32();
  m.signal = in.i32();
  return m;
}

void HeartbeatMsg::encode(Encoder& out) const {
  out.i32(replica);
  out.str(running_id);
  out.f64(running_s);
  out.f64(busy_s);
}
HeartbeatMsg HeartbeatMsg::decode(Decoder& in) {
  HeartbeatMsg m;
  m.replica = in.i32();
  m.running_id = in.str();
  m.running_s = in.f64();
  m.busy_s = in.f64();
  return m;
}

void FatalMsg::encode(Encoder& out) const { error.encode(out); }
FatalMsg FatalMsg::decode(Decoder& in) { return FatalMsg{ErrorInfo::decode(in)}; }

void ShutdownMsg::encode(Encoder& /*out*/) const {}
ShutdownMsg ShutdownMsg::decode(Decoder& /*in*/) { return {}; }

void ClosedMsg::encode(Encoder& out) const { out.f64(busy_s); }
ClosedMsg ClosedMsg::decode(Decoder& in) { return ClosedMsg{in.f64()}; }

void FinishMsg::encode(Encoder& out) const {
  out.i32(exit_code);
  out.boolean(has_error);
  error.encode(out);
}
FinishMsg FinishMsg::decode(Decoder& in) {
  FinishMsg m;
  m.exit_code = in.i32();
  m.has_error = in.boolean();
  m.error = ErrorInfo::decode(in);
  return m;
}

void GeneratedMsg::encode(Encoder& out) const { out.str(id); }
GeneratedMsg GeneratedMsg::decode(Decoder& in) { return GeneratedMsg{in.str()}; }

void PullMsg::encode(Encoder& out) const {
  out.i32(replica);
  out.str(id);
}
PullMsg PullMsg::decode(Decoder& in) {
  PullMsg m;
  m.replica = in.i32();
  m.id = in.str();
  return m;
}

void GroupRunMsg::encode(Encoder& out) const {
  runtime::encode(out, request);
  out.i32(attempt);
}
GroupRunMsg GroupRunMsg::decode(Decoder& in) {
  GroupRunMsg m;
  m.request = decode_request(in);
  m.attempt = in.i32();
  return m;
}
void GroupIdleMsg::encode(Encoder& out) const { out.str(id); }
GroupIdleMsg GroupIdleMsg::decode(Decoder& in) { return GroupIdleMsg{in.str()}; }

std::vector<std::uint8_t> encode(const Message& message) {
  Encoder out;
  std::visit(
      [&](const auto& m) {
        out.u8(static_cast<std::uint8_t>(std::decay_t<decltype(m)>::type));
        m.encode(out);
      },
      message);
  return out.take();
}

namespace {
template <std::size_t I = 0>
Message decode_as(MessageType type, Decoder& in) {
  if constexpr (I == std::variant_size_v<Message>) {
    protocol_error("unknown message type " + std::to_string(static_cast<int>(type)));
  } else {
    using T = std::variant_alternative_t<I, Message>;
    if (T::type == type) return Message{T::decode(in)};
    return decode_as<I + 1>(type, in);
  }
}
}  // namespace

Message decode(std::span<const std::uint8_t> bytes) {
  Decoder in(bytes);
  const auto type = static_cast<MessageType>(in.u8());
  Message m = decode_as(type, in);
  in.finish();
  return m;
}

const char* message_name(const Message& message) noexcept {
  constexpr const char* kNames[] = {"Start",     "Ready",  "Assign", "Done",      "Retry",
                                    "Returned",  "Drain",  "Signal", "Heartbeat", "Fatal",
                                    "Shutdown",  "Closed", "Finish", "GroupRun",  "GroupIdle",
                                    "Generated", "Pull"};
  static_assert(std::size(kNames) == std::variant_size_v<Message>);
  return kNames[message.index()];
}

bool for_coordinator(const Message& m) noexcept {
  return std::holds_alternative<ReadyMsg>(m) || std::holds_alternative<GeneratedMsg>(m) ||
         std::holds_alternative<PullMsg>(m) || std::holds_alternative<DoneMsg>(m) ||
         std::holds_alternative<RetryMsg>(m) || std::holds_alternative<ReturnedMsg>(m) ||
         std::holds_alternative<SignalMsg>(m) || std::holds_alternative<HeartbeatMsg>(m) ||
         std::holds_alternative<FatalMsg>(m) || std::holds_alternative<ClosedMsg>(m);
}

}  // namespace omnidp::runtime
