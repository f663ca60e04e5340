#include "omnidp/runtime/protocol.hpp"

#include <fmt/format.h>
#include <bit>
#include <limits>
#include <tuple>
#include <type_traits>

namespace omnidp::runtime {
namespace {

[[noreturn]] void protocol_error(const std::string& what) {
  throw RuntimeError(what, {"protocol"});
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
    protocol_error(
        fmt::format("truncated message: need {} bytes at offset {} of {}", n, pos_, bytes_.size()));
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
  if (v > 1) protocol_error(fmt::format("invalid boolean {}", v));
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
    protocol_error(fmt::format("{} trailing bytes after the message", bytes_.size() - pos_));
  }
}

namespace {

// The wire fields of a Request, in order (the manifest's Request has no list of its own).
auto request_fields(auto& r) {
  return std::tie(r.id, r.prompt, r.negative_prompt, r.seed, r.task, r.image, r.image_sha256,
                  r.last_image, r.last_image_sha256, r.prompt_embeds, r.prompt_embeds_sha256,
                  r.num_frames, r.height, r.width, r.num_inference_steps, r.guidance_scale,
                  r.flow_shift, r.guidance_scale_2, r.fps, r.cache, r.lora, r.line, r.index,
                  r.input_key, r.input_error, r.refused);
}

// A request's step cache (a manifest line's "cache").
auto cache_fields(auto& c) {
  return std::tie(c.policy, c.threshold, c.cache_interval, c.disable_cache_before_step, c.max_order,
                  c.max_skip_steps, c.retention_ratio, c.mag_ratios, c.calibrate);
}

// One put/get pair per wire type; a struct with a field list is its fields in order.
template <class T>
concept HasFields = requires(T& t) {
  T::fields(t);
};

void put(Encoder& out, bool v) { out.boolean(v); }
void put(Encoder& out, std::int32_t v) { out.i32(v); }
void put(Encoder& out, std::uint64_t v) { out.u64(v); }
void put(Encoder& out, double v) { out.f64(v); }
void put(Encoder& out, const std::optional<double>& v) {
  out.boolean(v.has_value());
  if (v) out.f64(*v);
}
void put(Encoder& out, const std::string& v) { out.str(v); }
void put(Encoder& out, Task v) { out.u8(static_cast<std::uint8_t>(v)); }
void put(Encoder& out, RequestStatus v) { out.u8(static_cast<std::uint8_t>(v)); }
void put(Encoder& out, ErrorKind v) { out.u8(static_cast<std::uint8_t>(v)); }
void put(Encoder& out, const std::vector<std::string>& list) {
  out.u32(static_cast<std::uint32_t>(list.size()));
  for (const auto& s : list) out.str(s);
}
void put(Encoder& out, const std::vector<double>& list) {
  out.u32(static_cast<std::uint32_t>(list.size()));
  for (const double v : list) out.f64(v);
}
void put(Encoder& out, CachePolicy v) { out.u8(static_cast<std::uint8_t>(v)); }
template <class Tuple>
void put_all(Encoder& out, const Tuple& fields);
void put(Encoder& out, const std::optional<StepCacheConfig>& v) {
  out.boolean(v.has_value());
  if (v) put_all(out, cache_fields(*v));
}
void put(Encoder& out, const std::vector<LoraAdapter>& list) {
  out.u32(static_cast<std::uint32_t>(list.size()));
  for (const auto& a : list) {
    out.str(a.path);
    out.f64(a.scale);
    out.u8(a.expert ? static_cast<std::uint8_t>(*a.expert) + 1U : 0U);
    out.str(a.sha256);
  }
}
void put(Encoder& out, const Request& r);
template <HasFields T>
void put(Encoder& out, const T& v);
template <class Tuple>
void put_all(Encoder& out, const Tuple& fields) {
  std::apply([&out](const auto&... f) { (put(out, f), ...); }, fields);
}
void put(Encoder& out, const Request& r) { put_all(out, request_fields(r)); }
template <HasFields T>
void put(Encoder& out, const T& v) {
  put_all(out, T::fields(v));
}

void get(Decoder& in, bool& v) { v = in.boolean(); }
void get(Decoder& in, std::int32_t& v) { v = in.i32(); }
void get(Decoder& in, std::uint64_t& v) { v = in.u64(); }
void get(Decoder& in, double& v) { v = in.f64(); }
void get(Decoder& in, std::optional<double>& v) {
  v.reset();
  if (in.boolean()) v = in.f64();
}
void get(Decoder& in, std::string& v) { v = in.str(); }
void get(Decoder& in, Task& v) {
  const std::uint8_t task = in.u8();
  if (task > static_cast<std::uint8_t>(Task::i2v))
    protocol_error(fmt::format("unknown task {}", task));
  v = static_cast<Task>(task);
}
void get(Decoder& in, RequestStatus& v) {
  const std::uint8_t status = in.u8();
  if (status > static_cast<std::uint8_t>(RequestStatus::failed)) protocol_error("unknown status");
  v = static_cast<RequestStatus>(status);
}
void get(Decoder& in, ErrorKind& v) {
  const std::uint8_t kind = in.u8();
  if (kind > static_cast<std::uint8_t>(ErrorKind::interrupted)) {
    protocol_error(fmt::format("unknown error kind {}", kind));
  }
  v = static_cast<ErrorKind>(kind);
}
void get(Decoder& in, std::vector<std::string>& list) {
  const std::uint32_t n = in.u32();
  list.clear();
  for (std::uint32_t i = 0; i < n; ++i) list.push_back(in.str());
}
void get(Decoder& in, std::vector<double>& list) {
  const std::uint32_t n = in.u32();
  list.clear();
  for (std::uint32_t i = 0; i < n; ++i) list.push_back(in.f64());
}
void get(Decoder& in, CachePolicy& v) {
  const std::uint8_t policy = in.u8();
  if (policy > static_cast<std::uint8_t>(CachePolicy::magcache)) {
    protocol_error(fmt::format("unknown cache policy {}", policy));
  }
  v = static_cast<CachePolicy>(policy);
}
template <class Tuple>
void get_all(Decoder& in, const Tuple& fields);
void get(Decoder& in, std::optional<StepCacheConfig>& v) {
  v.reset();
  if (!in.boolean()) return;
  StepCacheConfig c;
  get_all(in, cache_fields(c));
  v = std::move(c);
}
void get(Decoder& in, std::vector<LoraAdapter>& list) {
  const std::uint32_t n = in.u32();
  list.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    LoraAdapter a;
    a.path = in.str();
    a.scale = in.f64();
    const std::uint8_t expert = in.u8();
    if (expert > static_cast<std::uint8_t>(LoraExpert::low_noise) + 1U) {
      protocol_error(fmt::format("unknown LoRA expert {}", expert));
    }
    if (expert != 0) a.expert = static_cast<LoraExpert>(expert - 1U);
    a.sha256 = in.str();
    list.push_back(std::move(a));
  }
}
void get(Decoder& in, Request& r);
template <HasFields T>
void get(Decoder& in, T& v);
template <class Tuple>
void get_all(Decoder& in, const Tuple& fields) {  // a comma fold: left to right
  std::apply([&in](auto&... f) { (get(in, f), ...); }, fields);
}
void get(Decoder& in, Request& r) { get_all(in, request_fields(r)); }
template <HasFields T>
void get(Decoder& in, T& v) {
  get_all(in, T::fields(v));
}

}  // namespace

void encode(Encoder& out, const Request& request) { put(out, request); }

Request decode_request(Decoder& in) {
  Request r;
  get(in, r);
  return r;
}

std::vector<std::uint8_t> encode(const Message& message) {
  Encoder out;
  std::visit(
      [&](const auto& m) {
        out.u8(static_cast<std::uint8_t>(std::decay_t<decltype(m)>::type));
        put(out, m);
      },
      message);
  return out.take();
}

namespace {
template <std::size_t I = 0>
Message decode_as(MessageType type, Decoder& in) {
  if constexpr (I == std::variant_size_v<Message>) {
    protocol_error(fmt::format("unknown message type {}", static_cast<int>(type)));
  } else {
    using T = std::variant_alternative_t<I, Message>;
    if (T::type == type) {
      T m;
      get(in, m);
      return Message{std::move(m)};
    }
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
