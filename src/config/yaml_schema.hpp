#pragma once
// The config area's own reading and writing of YAML (private to src/config): the enum name
// tables, the YAML tags a value may carry, read_into / write_value per type, the range checks
// and the key specs the schema is made of. config.cpp (the schema, parsing, validation) and
// step_cache_schema.cpp (generation.cache's schema) include it. Not installed, not thread-shared state.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/config/suggest.hpp"

namespace omnidp::config_schema {

using Node = YAML::Node;

// ---------------------------------------------------------------------------------------------
// Enum names: one table per enum, used for parsing, printing and suggestions.

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E>
struct EnumTable;

template <>
struct EnumTable<DType> {
  static constexpr std::array<EnumName<DType>, 3> names{
      {{DType::fp32, "fp32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"}}};
};
template <>
struct EnumTable<DeviceKind> {
  static constexpr std::array<EnumName<DeviceKind>, 2> names{
      {{DeviceKind::cuda, "cuda"}, {DeviceKind::cpu, "cpu"}}};
};
template <>
struct EnumTable<WeightsSource> {
  static constexpr std::array<EnumName<WeightsSource>, 2> names{
      {{WeightsSource::pretrained, "pretrained"}, {WeightsSource::random, "random"}}};
};
template <>
struct EnumTable<AttentionKernel> {
  static constexpr std::array<EnumName<AttentionKernel>, 5> names{
      {{AttentionKernel::automatic, "auto"},
       {AttentionKernel::flash, "flash"},
       {AttentionKernel::cudnn, "cudnn"},
       {AttentionKernel::efficient, "efficient"},
       {AttentionKernel::math, "math"}}};
};
template <>
struct EnumTable<CachePolicy> {
  static constexpr std::array<EnumName<CachePolicy>, 4> names{
      {{CachePolicy::off, "off"},
       {CachePolicy::first_block, "first_block"},
       {CachePolicy::taylorseer, "taylorseer"},
       {CachePolicy::magcache, "magcache"}}};
};
template <>
struct EnumTable<Quantization> {
  static constexpr std::array<EnumName<Quantization>, 2> names{
      {{Quantization::none, "none"}, {Quantization::fp8, "fp8"}}};
};
template <>
struct EnumTable<ExpertResidency> {
  static constexpr std::array<EnumName<ExpertResidency>, 2> names{
      {{ExpertResidency::resident, "resident"}, {ExpertResidency::swap, "swap"}}};
};
template <>
struct EnumTable<SchedulerPolicy> {
  static constexpr std::array<EnumName<SchedulerPolicy>, 2> names{
      {{SchedulerPolicy::dynamic, "dynamic"}, {SchedulerPolicy::round_robin, "round_robin"}}};
};
template <>
struct EnumTable<WorkOrder> {
  static constexpr std::array<EnumName<WorkOrder>, 2> names{
      {{WorkOrder::cost_desc, "cost_desc"}, {WorkOrder::manifest, "manifest"}}};
};
template <>
struct EnumTable<WaitMode> {
  static constexpr std::array<EnumName<WaitMode>, 2> names{
      {{WaitMode::sleep, "sleep"}, {WaitMode::busy, "busy"}}};
};
template <>
struct EnumTable<CollectiveBackend> {
  static constexpr std::array<EnumName<CollectiveBackend>, 3> names{
      {{CollectiveBackend::automatic, "auto"},
       {CollectiveBackend::mpi, "mpi"},
       {CollectiveBackend::nccl, "nccl"}}};
};

template <>
struct EnumTable<FileLocking> {
  static constexpr std::array<EnumName<FileLocking>, 3> names{
      {{FileLocking::automatic, "auto"}, {FileLocking::on, "on"}, {FileLocking::off, "off"}}};
};

template <class E>
inline const char* enum_name(E value) noexcept {
  for (const auto& entry : EnumTable<E>::names) {
    if (entry.value == value) return entry.name.data();
  }
  return "unknown";
}

template <class E>
inline std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& entry : EnumTable<E>::names) out.emplace_back(entry.name);
  return out;
}

inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

inline std::string format_double(double value) { return shortest_real(value); }

// ---------------------------------------------------------------------------------------------
// Reading scalars. Numbers and booleans must be plain YAML scalars (a quoted "9" is a string);
// strings may be plain or quoted. Null is never a value.

inline std::string describe(const Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Scalar:
      return node.Tag() == "!" ? "the string '" + node.Scalar() + "'" : "'" + node.Scalar() + "'";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

[[noreturn]] inline void type_error(const std::string& path, std::string_view expected,
                                    const Node& node) {
  throw ConfigError(path, "expected " + std::string(expected) + ", got " + describe(node));
}

inline bool is_plain_scalar(const Node& node) { return node.IsScalar() && node.Tag() != "!"; }

// ---------------------------------------------------------------------------------------------
// Tags (issue 52, class 11). An untagged value is read by its key's type; a quoted scalar has
// the non-specific tag "!" (a string); a standard tag of the YAML core schema is read when it
// agrees with the key's type (`!!int 9` on an integer key) and is an error when it contradicts
// it (`!!float 9`); any other tag (`!foo`, `!!binary`) is an error.

enum class Tag { none, quoted, str, integer, floating, boolean, null, seq, map, unknown };

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

inline Tag tag_of(const Node& node) {
  const std::string& tag = node.Tag();
  if (tag.empty() || tag == "?") return Tag::none;
  if (tag == "!") return Tag::quoted;
  if (!tag.starts_with(kCoreTagPrefix)) return Tag::unknown;
  const std::string_view name = std::string_view(tag).substr(kCoreTagPrefix.size());
  static constexpr std::array<std::pair<std::string_view, Tag>, 7> kCore{{{"str", Tag::str},
                                                                          {"int", Tag::integer},
                                                                          {"float", Tag::floating},
                                                                          {"bool", Tag::boolean},
                                                                          {"null", Tag::null},
                                                                          {"seq", Tag::seq},
                                                                          {"map", Tag::map}}};
  for (const auto& [core, kind] : kCore) {
    if (name == core) return kind;
  }
  return Tag::unknown;
}

// "!!float" for the core schema's tags, the tag as written otherwise ("!foo").
inline std::string tag_text(const Node& node) {
  const std::string& tag = node.Tag();
  if (tag.starts_with(kCoreTagPrefix)) return "!!" + tag.substr(kCoreTagPrefix.size());
  return tag;
}

// A key's value whose tag contradicts the key's type. Thrown where the key is read, which does
// not know the document; read_document() adds its location ("c.yaml:3") from `mark`.
class TagError : public ConfigError {
 public:
  TagError(const std::string& path, const std::string& message, const YAML::Mark& mark)
      : ConfigError(path, message), mark_(mark) {}
  [[nodiscard]] const YAML::Mark& mark() const noexcept { return mark_; }

 private:
  YAML::Mark mark_;
};

// Throws TagError unless `node` is untagged, quoted (the readers decide about a quoted value)
// or carries one of the standard tags in `agree`.
inline void require_tag(const Node& node, const std::string& path, std::initializer_list<Tag> agree,
                        std::string_view expected) {
  const Tag tag = tag_of(node);
  if (tag == Tag::none || tag == Tag::quoted) return;
  if (std::find(agree.begin(), agree.end(), tag) != agree.end()) return;
  throw TagError(path,
                 "the tag " + tag_text(node) + " contradicts the key's type (expected " +
                     std::string(expected) + ")",
                 node.Mark());
}

// Null: nothing (`key:`, `~`, `null`) or `!!null` on an empty or null-named scalar.
inline bool is_null(const Node& node) {
  if (node.IsNull()) return true;
  if (!node.IsScalar() || tag_of(node) != Tag::null) return false;
  const std::string& text = node.Scalar();
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// ---------------------------------------------------------------------------------------------
// The shape of a parsed document, checked once before any key is read: lists and maps nest at
// most kMaxValueNesting levels (issue 52, class 4), no map holds a key twice at any depth
// (class 10), every tag is a standard one that fits its node (class 11). Each fault names
// "<origin>:<line>" and the YAML path.

// At most this many nodes are visited: an alias (*a) repeats its anchor's nodes, so nested
// aliases could make a small text a walk of billions.
constexpr std::size_t kMaxDocumentNodes = 1'000'000;

// "c.yaml:3"; "--set" for a --set value (one line, named by the option); the origin alone
// where the node has no position.
inline std::string location_of(const std::string& origin, const YAML::Mark& mark) {
  if (origin.starts_with("--set")) return "--set";
  if (mark.is_null() || mark.line < 0) return origin;
  return fmt::format("{}:{}", origin, mark.line + 1);
}

class ShapeCheck {
 public:
  explicit ShapeCheck(const std::string& origin) : origin_(origin) {}

  // `node` at `path` ("" for the document) and nesting level `depth` (1 for the document).
  void check(const Node& node, const std::string& path, int depth) {
    if (++visited_ > kMaxDocumentNodes) {
      fail(node, path,
           fmt::format("more than {} values (aliases repeating large anchors?)", kMaxDocumentNodes));
    }
    check_tag(node, path);
    if (!node.IsMap() && !node.IsSequence()) return;
    if (depth > kMaxValueNesting) {
      fail(node, path,
           fmt::format("nested deeper than {} levels of lists and maps", kMaxValueNesting));
    }
    if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        check(node[i], fmt::format("{}[{}]", path, i), depth + 1);
      }
      return;
    }
    std::set<std::string> keys;
    for (const auto& item : node) {
      check_tag(item.first, path);
      if (!item.first.IsScalar()) continue;  // the reader refuses it: "keys must be names"
      const std::string child = path.empty() ? item.first.Scalar() : path + "." + item.first.Scalar();
      if (!keys.insert(item.first.Scalar()).second) fail(item.first, child, "duplicate key");
      check(item.second, child, depth + 1);
    }
  }

 private:
  [[noreturn]] void fail(const Node& node, const std::string& path, const std::string& reason) {
    throw ConfigError(location_of(origin_, node.Mark()), path.empty() ? "<top level>" : path, reason);
  }

  void check_tag(const Node& node, const std::string& path) {
    const Tag tag = tag_of(node);
    if (tag == Tag::unknown) {
      fail(node, path,
           "unknown tag " + tag_text(node) +
               " (the standard tags !!str, !!int, !!float, !!bool, !!null, !!seq and !!map are "
               "read where they agree with the key's type)");
    }
    const bool fits = node.IsMap()        ? (tag == Tag::none || tag == Tag::map)
                      : node.IsSequence() ? (tag == Tag::none || tag == Tag::seq)
                      : tag == Tag::null  ? is_null(node)
                                          : (tag != Tag::seq && tag != Tag::map);
    if (!fits) fail(node, path, "the tag " + tag_text(node) + " does not fit " + describe(node));
  }

  const std::string& origin_;
  std::size_t visited_ = 0;
};

inline void read_into(const Node& node, const std::string& path, std::string& out) {
  if (!node.IsScalar()) type_error(path, "a string", node);
  require_tag(node, path, {Tag::str}, "a string");
  out = node.Scalar();
}

inline void read_into(const Node& node, const std::string& path, bool& out) {
  if (!is_plain_scalar(node)) type_error(path, "true or false", node);
  require_tag(node, path, {Tag::boolean}, "true or false");
  const std::string& text = node.Scalar();
  if (text == "true" || text == "True" || text == "TRUE") {
    out = true;
  } else if (text == "false" || text == "False" || text == "FALSE") {
    out = false;
  } else {
    type_error(path, "true or false", node);
  }
}

template <class T>
requires std::is_integral_v<T>
inline void read_into(const Node& node, const std::string& path, T& out) {
  constexpr std::string_view expected = std::is_signed_v<T> ? "an integer" : "a non-negative integer";
  if (!is_plain_scalar(node)) type_error(path, expected, node);
  require_tag(node, path, {Tag::integer}, expected);
  const std::string& text = node.Scalar();
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    throw ConfigError(path, "'" + text + "' is out of range for this key");
  }
  if (ec != std::errc{} || ptr != text.data() + text.size()) type_error(path, expected, node);
  out = value;
}

inline void read_into(const Node& node, const std::string& path, double& out) {
  if (!is_plain_scalar(node)) type_error(path, "a number", node);
  require_tag(node, path, {Tag::integer, Tag::floating}, "a number");
  const std::string& text = node.Scalar();
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size() || !std::isfinite(value)) {
    type_error(path, "a finite number", node);
  }
  out = value;
}

inline void read_into(const Node& node, const std::string& path, std::vector<std::string>& out) {
  if (!node.IsSequence()) type_error(path, "a list of strings", node);
  require_tag(node, path, {Tag::seq}, "a list of strings");
  std::vector<std::string> values;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const Node item = node[i];
    std::string value;
    read_into(item, fmt::format("{}[{}]", path, i), value);
    values.push_back(std::move(value));
  }
  out = std::move(values);
}

template <class E>
requires std::is_enum_v<E>
inline void read_into(const Node& node, const std::string& path, E& out) {
  const std::vector<std::string> names = enum_names<E>();
  if (!node.IsScalar()) type_error(path, "one of " + join(names, " | "), node);
  require_tag(node, path, {Tag::str}, "one of " + join(names, " | "));
  const std::string& text = node.Scalar();
  for (const auto& entry : EnumTable<E>::names) {
    if (entry.name == text) {
      out = entry.value;
      return;
    }
  }
  const std::string nearest = nearest_name(text, names);
  throw ConfigError(path, "invalid value '" + text + "' (expected " + join(names, " | ") +
                              (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") + ")");
}

// ---------------------------------------------------------------------------------------------
// Writing values. Strings are written plain when they read back as the same string, quoted
// otherwise ("", "null", "~", leading blanks, ...).

inline bool reads_back_as_plain(const std::string& text) {
  YAML::Emitter probe;
  probe << text;
  if (!probe.good()) return false;
  try {
    const Node node = YAML::Load(probe.c_str());
    return node.IsScalar() && node.Tag() != "!" && node.Scalar() == text;
  } catch (const YAML::Exception&) {
    return false;
  }
}

inline void write_value(YAML::Emitter& out, const std::string& value) {
  if (reads_back_as_plain(value)) {
    out << value;
  } else {
    out << YAML::DoubleQuoted << value;
  }
}
inline void write_value(YAML::Emitter& out, bool value) { out << (value ? "true" : "false"); }
template <class T>
requires std::is_integral_v<T>
inline void write_value(YAML::Emitter& out, T value) { out << std::to_string(value); }
inline void write_value(YAML::Emitter& out, double value) { out << format_double(value); }
inline void write_value(YAML::Emitter& out, const std::vector<std::string>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& value : values) write_value(out, value);
  out << YAML::EndSeq;
}
template <class E>
requires std::is_enum_v<E>
inline void write_value(YAML::Emitter& out, E value) { out << enum_name(value); }

// ---------------------------------------------------------------------------------------------
// Validation helpers.

inline void require(bool ok, const std::string& path, const std::string& reason) {
  if (!ok) throw ConfigError(path, reason);
}

inline void check(const std::string& reason, const std::string& path) {
  if (!reason.empty()) throw ConfigError(path, reason);
}

inline std::string range_reason(long long value, long long lo, long long hi) {
  if (value >= lo && value <= hi) return {};
  return fmt::format("{} is out of range [{}, {}]", value, lo, hi);
}

inline void check_int(long long value, long long lo, long long hi, const std::string& path) {
  check(range_reason(value, lo, hi), path);
}

// A finite number >= 0 (or > 0 when zero is not allowed).
inline void check_non_negative(double value, bool zero_allowed, const std::string& path) {
  const bool ok = std::isfinite(value) && (zero_allowed ? value >= 0.0 : value > 0.0);
  require(ok, path,
          format_double(value) + " is out of range (expected a finite number " +
              (zero_allowed ? ">= 0)" : "> 0)"));
}

inline void check_ids(const std::vector<std::string>& ids, const std::string& path) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    require(!ids[i].empty(), fmt::format("{}[{}]", path, i), "an empty id");
  }
}

inline bool is_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// A device entry: "cpu", "cuda:N" or a bare CUDA ordinal "N".
inline void check_devices(const Config& config) {
  const auto& devices = config.parallel.devices;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string path = fmt::format("parallel.devices[{}]", i);
    const std::string& entry = devices[i];
    const bool cuda = is_digits(entry) ||
                      (entry.starts_with("cuda:") && is_digits(std::string_view(entry).substr(5)));
    require(cuda || entry == "cpu", path,
            "invalid device '" + entry + "' (expected cpu, cuda:N or a CUDA ordinal N)");
    if (config.model.device == DeviceKind::cpu) {
      require(entry == "cpu", path, "device '" + entry + "' with model.device cpu (expected cpu)");
    } else {
      require(cuda, path, "device '" + entry + "' with model.device cuda (expected cuda:N or N)");
    }
  }
}

// A check of one key's value: throws ConfigError(path, reason) for a bad one.
template <class T>
using Check = std::function<void(const T& value, const std::string& path)>;

// lo <= value <= hi: "V is out of range [lo, hi]".
template <class T>
inline Check<T> in_range(T lo, T hi) {
  return [lo, hi](const T& value, const std::string& path) {
    require(value >= lo && value <= hi, path,
            fmt::format("{} is out of range [{}, {}]", value, lo, hi));
  };
}

// A finite number >= 0 (or > 0 when zero is not allowed).
inline Check<double> non_negative(bool zero_allowed) {
  return [zero_allowed](const double& value, const std::string& path) {
    check_non_negative(value, zero_allowed, path);
  };
}

// One of the shared range rules (check_num_frames, ...): "" when the value is valid.
template <class T, class V>
inline Check<T> rule(std::string (*reason)(V)) {
  return [reason](const T& value, const std::string& path) {
    check(reason(static_cast<V>(value)), path);
  };
}

// A minimum with the meaning of the value below it: "V is out of range (expected >= lo; ...)".
inline Check<int> at_least(int lo, const char* off) {
  return [lo, off](const int& value, const std::string& path) {
    require(value >= lo, path,
            fmt::format("{} is out of range (expected >= {}; {})", value, lo, off));
  };
}

inline Check<std::string> required() {
  return [](const std::string& value, const std::string& path) {
    require(!value.empty(), path, "required (got '')");
  };
}

inline Check<std::vector<std::string>> ids() {
  return
      [](const std::vector<std::string>& value, const std::string& path) { check_ids(value, path); };
}

// Each of `value` one of `allowed`, at most once.
// `suggest`: an unknown one names the nearest allowed one.
inline Check<std::vector<std::string>> distinct_of(std::vector<std::string> allowed, std::string what,
                                                   std::string expected, bool suggest) {
  return [allowed = std::move(allowed), what = std::move(what), expected = std::move(expected),
          suggest](const std::vector<std::string>& value, const std::string& path) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string& item = value[i];
      const std::string at = fmt::format("{}[{}]", path, i);
      const std::string nearest = suggest ? nearest_name(item, allowed) : std::string();
      require(std::find(allowed.begin(), allowed.end(), item) != allowed.end(), at,
              "unknown " + what + " '" + item + "' (expected " + expected +
                  (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") + ")");
      for (std::size_t j = 0; j < i; ++j) {
        require(value[j] != item, at, what + " '" + item + "' is listed twice");
      }
    }
  };
}

// ---------------------------------------------------------------------------------------------
// The schema: every section and key, in the order to_yaml writes them, each key with its check.

// A key: how it is read, written back and checked (validate_and_resolve runs every key's
// check, in schema order).
struct FieldSpec {
  std::string key;
  std::function<void(Config&, const Node&, const std::string& path)> read;
  std::function<void(const Config&, YAML::Emitter&)> write;
  std::function<bool(const Config&)> present;                              // empty: always written
  std::function<void(const Config&, const std::string& path)> check = {};  // empty: any value
};

struct SectionSpec {
  std::string key;
  std::vector<FieldSpec> fields;
  // The rules across keys, run after the section's own key checks; empty: none.
  std::function<void(const Config&)> check = {};
};

template <class S, class T>
FieldSpec field(std::string key, S Config::*section, T S::*member,
                std::type_identity_t<Check<T>> check = {}) {
  FieldSpec spec{std::move(key),
                 [section, member](Config& config, const Node& node, const std::string& path) {
                   T value{};
                   read_into(node, path, value);
                   (config.*section).*member = std::move(value);
                 },
                 [section, member](const Config& config, YAML::Emitter& out) {
                   write_value(out, (config.*section).*member);
                 },
                 {}};
  if (check) {
    spec.check = [section, member, check = std::move(check)](const Config& config,
                                                             const std::string& path) {
      check((config.*section).*member, path);
    };
  }
  return spec;
}

// An optional number: null (or `key:` with nothing) leaves it unset; to_yaml leaves an unset
// one out.
template <class S>
FieldSpec optional_field(std::string key, S Config::*section, std::optional<double> S::*member,
                         Check<double> check) {
  return FieldSpec{
      std::move(key),
      [section, member](Config& config, const Node& node, const std::string& path) {
        if (is_null(node)) {
          ((config.*section).*member).reset();
          return;
        }
        double value = 0.0;
        read_into(node, path, value);
        (config.*section).*member = value;
      },
      [section, member](const Config& config, YAML::Emitter& out) {
        write_value(out, *((config.*section).*member));
      },
      [section, member](const Config& config) { return ((config.*section).*member).has_value(); },
      [section, member, check = std::move(check)](const Config& config, const std::string& path) {
        if (const auto& value = (config.*section).*member) check(*value, path);  // unset: valid
      }};
}

// A map key's text; a key that is no scalar is an error naming `parent`.
[[nodiscard]] inline std::string key_text(const Node& key, const std::string& parent) {
  if (!key.IsScalar()) {
    throw ConfigError(parent.empty() ? "<top level>" : parent,
                      "keys must be names, got " + describe(key));
  }
  return key.Scalar();
}

// Defined in step_cache_schema.cpp: generation.cache (a policy name, or a map with a policy and its
// own keys), read, checked and as a schema key.
[[nodiscard]] StepCacheConfig read_step_cache(const Node& node, const std::string& path);
void check_step_cache(const StepCacheConfig& c, const std::string& path);
[[nodiscard]] FieldSpec step_cache_field();

}  // namespace omnidp::config_schema
