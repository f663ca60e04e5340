#include "omnidp/config/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/config/head_split.hpp"
#include "omnidp/config/suggest.hpp"

namespace omnidp {
namespace detail {
extern const char* const kDefaultConfigYaml;  // generated from configs/tiny.yaml at configure time
}  // namespace detail

namespace {

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
const char* enum_name(E value) noexcept {
  for (const auto& entry : EnumTable<E>::names) {
    if (entry.value == value) return entry.name.data();
  }
  return "unknown";
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& entry : EnumTable<E>::names) out.emplace_back(entry.name);
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string format_double(double value) {
  std::string text = shortest(value);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// ---------------------------------------------------------------------------------------------
// Reading scalars. Numbers and booleans must be plain YAML scalars (a quoted "9" is a string);
// strings may be plain or quoted. Null is never a value.

std::string describe(const Node& node) {
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

[[noreturn]] void type_error(const std::string& path, std::string_view expected, const Node& node) {
  throw ConfigError(path, "expected " + std::string(expected) + ", got " + describe(node));
}

bool is_plain_scalar(const Node& node) { return node.IsScalar() && node.Tag() != "!"; }

// ---------------------------------------------------------------------------------------------
// Tags (issue 52, class 11). An untagged value is read by its key's type; a quoted scalar has
// the non-specific tag "!" (a string); a standard tag of the YAML core schema is read when it
// agrees with the key's type (`!!int 9` on an integer key) and is an error when it contradicts
// it (`!!float 9`); any other tag (`!foo`, `!!binary`) is an error.

enum class Tag { none, quoted, str, integer, floating, boolean, null, seq, map, unknown };

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

Tag tag_of(const Node& node) {
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
std::string tag_text(const Node& node) {
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
void require_tag(const Node& node, const std::string& path, std::initializer_list<Tag> agree,
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
bool is_null(const Node& node) {
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
std::string location_of(const std::string& origin, const YAML::Mark& mark) {
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

void read_into(const Node& node, const std::string& path, std::string& out) {
  if (!node.IsScalar()) type_error(path, "a string", node);
  require_tag(node, path, {Tag::str}, "a string");
  out = node.Scalar();
}

void read_into(const Node& node, const std::string& path, bool& out) {
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
void read_into(const Node& node, const std::string& path, T& out) {
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

void read_into(const Node& node, const std::string& path, double& out) {
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

void read_into(const Node& node, const std::string& path, std::vector<std::string>& out) {
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
void read_into(const Node& node, const std::string& path, E& out) {
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

bool reads_back_as_plain(const std::string& text) {
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

void write_value(YAML::Emitter& out, const std::string& value) {
  if (reads_back_as_plain(value)) {
    out << value;
  } else {
    out << YAML::DoubleQuoted << value;
  }
}
void write_value(YAML::Emitter& out, bool value) { out << (value ? "true" : "false"); }
template <class T>
requires std::is_integral_v<T>
void write_value(YAML::Emitter& out, T value) { out << std::to_string(value); }
void write_value(YAML::Emitter& out, double value) { out << format_double(value); }
void write_value(YAML::Emitter& out, const std::vector<std::string>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& value : values) write_value(out, value);
  out << YAML::EndSeq;
}
template <class E>
requires std::is_enum_v<E>
void write_value(YAML::Emitter& out, E value) { out << enum_name(value); }

// ---------------------------------------------------------------------------------------------
// Validation helpers.

void require(bool ok, const std::string& path, const std::string& reason) {
  if (!ok) throw ConfigError(path, reason);
}

void check(const std::string& reason, const std::string& path) {
  if (!reason.empty()) throw ConfigError(path, reason);
}

std::string range_reason(long long value, long long lo, long long hi) {
  if (value >= lo && value <= hi) return {};
  return fmt::format("{} is out of range [{}, {}]", value, lo, hi);
}

void check_int(long long value, long long lo, long long hi, const std::string& path) {
  check(range_reason(value, lo, hi), path);
}

// A finite number >= 0 (or > 0 when zero is not allowed).
void check_non_negative(double value, bool zero_allowed, const std::string& path) {
  const bool ok = std::isfinite(value) && (zero_allowed ? value >= 0.0 : value > 0.0);
  require(ok, path,
          format_double(value) + " is out of range (expected a finite number " +
              (zero_allowed ? ">= 0)" : "> 0)"));
}

void check_ids(const std::vector<std::string>& ids, const std::string& path) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    require(!ids[i].empty(), fmt::format("{}[{}]", path, i), "an empty id");
  }
}

bool is_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// A device entry: "cpu", "cuda:N" or a bare CUDA ordinal "N".
void check_devices(const Config& config) {
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
Check<T> in_range(T lo, T hi) {
  return [lo, hi](const T& value, const std::string& path) {
    require(value >= lo && value <= hi, path,
            fmt::format("{} is out of range [{}, {}]", value, lo, hi));
  };
}

// A finite number >= 0 (or > 0 when zero is not allowed).
Check<double> non_negative(bool zero_allowed) {
  return [zero_allowed](const double& value, const std::string& path) {
    check_non_negative(value, zero_allowed, path);
  };
}

// One of the shared range rules (check_num_frames, ...): "" when the value is valid.
template <class T, class V>
Check<T> rule(std::string (*reason)(V)) {
  return [reason](const T& value, const std::string& path) {
    check(reason(static_cast<V>(value)), path);
  };
}

// A minimum with the meaning of the value below it: "V is out of range (expected >= lo; ...)".
Check<int> at_least(int lo, const char* off) {
  return [lo, off](const int& value, const std::string& path) {
    require(value >= lo, path,
            fmt::format("{} is out of range (expected >= {}; {})", value, lo, off));
  };
}

Check<std::string> required() {
  return [](const std::string& value, const std::string& path) {
    require(!value.empty(), path, "required (got '')");
  };
}

Check<std::vector<std::string>> ids() {
  return
      [](const std::vector<std::string>& value, const std::string& path) { check_ids(value, path); };
}

// Each of `value` one of `allowed`, at most once.
// `suggest`: an unknown one names the nearest allowed one.
Check<std::vector<std::string>> distinct_of(std::vector<std::string> allowed, std::string what,
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

// parallel.data_parallel_size: `auto` (0) or an integer >= 1.
FieldSpec data_parallel_field() {
  return FieldSpec{
      "data_parallel_size",
      [](Config& config, const Node& node, const std::string& path) {
        if (node.IsScalar() && node.Scalar() == "auto") {
          require_tag(node, path, {Tag::str}, "'auto' or an integer >= 1");
          config.parallel.data_parallel_size = 0;
          return;
        }
        int value = 0;
        if (!is_plain_scalar(node)) type_error(path, "'auto' or an integer >= 1", node);
        read_into(node, path, value);
        if (value < 1) {
          throw ConfigError(
              path, fmt::format("{} is out of range (expected 'auto' or an integer >= 1)", value));
        }
        config.parallel.data_parallel_size = value;
      },
      [](const Config& config, YAML::Emitter& out) {
        if (config.parallel.data_parallel_size == 0) {
          out << "auto";
        } else {
          write_value(out, config.parallel.data_parallel_size);
        }
      },
      {},
      [](const Config& config, const std::string& path) {
        require(config.parallel.data_parallel_size >= 0, path,
                fmt::format("{} is out of range (expected 'auto' or an integer >= 1)",
                            config.parallel.data_parallel_size));
      }};
}

// parallel.ulysses_degree: an alias of sequence_parallel_size, written back only when set.
FieldSpec ulysses_degree_field() {
  FieldSpec f = field("ulysses_degree", &Config::parallel, &ParallelConfig::ulysses_degree);
  f.present = [](const Config& config) { return config.parallel.ulysses_degree != 0; };
  return f;
}

// parallel.devices: `auto` (empty list) or a non-empty list.
FieldSpec devices_field() {
  return FieldSpec{"devices",
                   [](Config& config, const Node& node, const std::string& path) {
                     if (node.IsScalar() && node.Scalar() == "auto") {
                       require_tag(node, path, {Tag::str}, "'auto' or a list of devices");
                       config.parallel.devices.clear();
                       return;
                     }
                     if (!node.IsSequence()) type_error(path, "'auto' or a list of devices", node);
                     std::vector<std::string> values;
                     read_into(node, path, values);
                     if (values.empty())
                       throw ConfigError(path, "an empty list (write 'auto' for the default)");
                     config.parallel.devices = std::move(values);
                   },
                   [](const Config& config, YAML::Emitter& out) {
                     if (config.parallel.devices.empty()) {
                       out << "auto";
                     } else {
                       write_value(out, config.parallel.devices);
                     }
                   },
                   {}};
}

// output.compression: none | gzip:N (N in 1..9) | lzf.
FieldSpec compression_field() {
  return FieldSpec{
      "compression",
      [](Config& config, const Node& node, const std::string& path) {
        if (!node.IsScalar()) type_error(path, "none | gzip:1-9 | lzf", node);
        require_tag(node, path, {Tag::str}, "none | gzip:1-9 | lzf");
        const std::string& text = node.Scalar();
        auto& output = config.output;
        if (text == "none" || text == "lzf") {
          output.compression = text == "none" ? CompressionKind::none : CompressionKind::lzf;
          output.gzip_level = 0;
          return;
        }
        if (text.size() == 6 && text.starts_with("gzip:") && text[5] >= '1' && text[5] <= '9') {
          output.compression = CompressionKind::gzip;
          output.gzip_level = text[5] - '0';
          return;
        }
        throw ConfigError(path, "invalid value '" + text + "' (expected none | gzip:1-9 | lzf)");
      },
      [](const Config& config, YAML::Emitter& out) { out << compression_string(config.output); },
      {},
      [](const Config& config, const std::string& path) {
        if (config.output.compression == CompressionKind::gzip) {
          check_int(config.output.gzip_level, 1, 9, path);
        } else {
          require(config.output.gzip_level == 0, path,
                  fmt::format("a gzip level {} without gzip", config.output.gzip_level));
        }
      }};
}

// generation.cache: a policy name, or a map {policy: ..., the policy's own keys}; a key of
// another policy is an error, not ignored. One entry per key: how it is read and written.
struct CacheKey {
  std::string name;
  std::function<void(StepCacheConfig&, const Node&, const std::string& path)> read;
  std::function<void(const StepCacheConfig&, YAML::Emitter&)> write;
};

template <class T>
CacheKey cache_key(std::string name, T StepCacheConfig::*member) {
  return {std::move(name),
          [member](StepCacheConfig& c, const Node& node, const std::string& path) {
            read_into(node, path, c.*member);
          },
          [member](const StepCacheConfig& c, YAML::Emitter& out) { write_value(out, c.*member); }};
}

// The keys of each policy's map, in the order they are written.
const std::vector<CacheKey>& cache_keys(CachePolicy policy) {
  using C = StepCacheConfig;
  static const CacheKey threshold{
      "threshold",
      [](C& c, const Node& node, const std::string& path) {
        double v = 0.0;
        read_into(node, path, v);
        c.threshold = v;
      },
      [](const C& c, YAML::Emitter& out) { write_value(out, c.resolved_threshold()); }};
  static const CacheKey mag_ratios{"mag_ratios",
                                   [](C& c, const Node& node, const std::string& path) {
                                     if (!node.IsSequence())
                                       type_error(path, "a list of numbers", node);
                                     require_tag(node, path, {Tag::seq}, "a list of numbers");
                                     c.mag_ratios.assign(node.size(), 0.0);
                                     for (std::size_t i = 0; i < node.size(); ++i)
                                       read_into(node[i], fmt::format("{}[{}]", path, i),
                                                 c.mag_ratios[i]);
                                   },
                                   [](const C& c, YAML::Emitter& out) {
                                     out << YAML::Flow << YAML::BeginSeq;
                                     for (const double v : c.mag_ratios) write_value(out, v);
                                     out << YAML::EndSeq;
                                   }};
  static const std::vector<CacheKey> none;
  static const std::vector<CacheKey> first_block{threshold};
  static const std::vector<CacheKey> taylorseer{
      cache_key("cache_interval", &C::cache_interval),
      cache_key("disable_cache_before_step", &C::disable_cache_before_step),
      cache_key("max_order", &C::max_order)};
  static const std::vector<CacheKey> magcache{threshold,
                                              cache_key("max_skip_steps", &C::max_skip_steps),
                                              cache_key("retention_ratio", &C::retention_ratio),
                                              mag_ratios, cache_key("calibrate", &C::calibrate)};
  switch (policy) {
    case CachePolicy::first_block: return first_block;
    case CachePolicy::taylorseer: return taylorseer;
    case CachePolicy::magcache: return magcache;
    case CachePolicy::off: break;
  }
  return none;
}

std::string key_text(const Node& key, const std::string& parent);

StepCacheConfig read_step_cache(const Node& node, const std::string& path) {
  StepCacheConfig c;
  if (node.IsScalar()) {
    read_into(node, path, c.policy);
    return c;
  }
  if (!node.IsMap()) {
    type_error(path, "off | first_block | taylorseer | magcache, or a map with a policy", node);
  }
  require_tag(node, path, {Tag::map}, "a policy name or a map with a policy");
  const Node policy = node["policy"];
  if (!policy) {
    throw ConfigError(path + ".policy",
                      "required in a cache map (expected off | first_block | "
                      "taylorseer | magcache)");
  }
  read_into(policy, path + ".policy", c.policy);
  const auto& keys = cache_keys(c.policy);
  for (const auto& item : node) {
    const std::string key = key_text(item.first, path);
    if (key == "policy") continue;
    const std::string at = path + "." + key;
    const auto spec =
        std::find_if(keys.begin(), keys.end(), [&](const CacheKey& k) { return k.name == key; });
    if (spec == keys.end()) {
      std::vector<std::string> names;
      for (const auto& k : keys) names.push_back(k.name);
      throw ConfigError(at,
                        fmt::format("not a key of the {} cache (its keys: {})", enum_name(c.policy),
                                    names.empty() ? std::string("none") : join(names, ", ")));
    }
    spec->read(c, item.second, at);
  }
  return c;
}

void check_step_cache(const StepCacheConfig& c, const std::string& path) {
  const double t = c.resolved_threshold();
  if (c.policy == CachePolicy::first_block || c.policy == CachePolicy::magcache) {
    require(std::isfinite(t) && t > 0.0 && t <= 10.0, path + ".threshold",
            format_double(t) + " is out of range (expected a number in (0, 10])");
  }
  check_int(c.cache_interval, 1, 1000, path + ".cache_interval");
  check_int(c.disable_cache_before_step, 0, 10000, path + ".disable_cache_before_step");
  check_int(c.max_order, 0, 8, path + ".max_order");
  check_int(c.max_skip_steps, 1, 1000, path + ".max_skip_steps");
  require(c.retention_ratio >= 0.0 && c.retention_ratio <= 1.0, path + ".retention_ratio",
          format_double(c.retention_ratio) + " is out of range (expected a number in [0, 1])");
  for (std::size_t i = 0; i < c.mag_ratios.size(); ++i) {
    const double r = c.mag_ratios[i];
    require(std::isfinite(r) && r > 0.0 && r <= 100.0, fmt::format("{}.mag_ratios[{}]", path, i),
            format_double(r) + " is out of range (expected a number in (0, 100])");
  }
  require(!(c.calibrate && !c.mag_ratios.empty()), path + ".calibrate",
          "calibrate measures the ratios: leave mag_ratios out");
  require(c.policy != CachePolicy::magcache || c.calibrate || !c.mag_ratios.empty(),
          path + ".mag_ratios",
          "required by the magcache policy (one ratio per step, calibrated for the "
          "checkpoint): measure them with calibrate: true (docs/models.md, \"Step "
          "caching\")");
}

FieldSpec cache_field() {
  return FieldSpec{
      "cache",
      [](Config& config, const Node& node, const std::string& path) {
        config.generation.cache = read_step_cache(node, path);
      },
      [](const Config& config, YAML::Emitter& out) {
        const StepCacheConfig& c = config.generation.cache;
        if (c.policy == CachePolicy::off) {
          out << "off";
          return;
        }
        out << YAML::BeginMap << YAML::Key << "policy" << YAML::Value << enum_name(c.policy);
        for (const auto& key : cache_keys(c.policy)) {
          out << YAML::Key << key.name << YAML::Value;
          key.write(c, out);
        }
        out << YAML::EndMap;
      },
      [](const Config& config) { return config.generation.cache.policy != CachePolicy::off; },
      [](const Config& config, const std::string& path) {
        check_step_cache(config.generation.cache, path);
      }};
}

// model.lora: a list of adapters (config/lora.hpp's rules); to_yaml leaves an empty one out.
FieldSpec lora_field() {
  return FieldSpec{"lora",
                   [](Config& config, const Node& node, const std::string& path) {
                     config.model.lora = parse_lora_list(YAML::Dump(node), path);
                   },
                   [](const Config& config, YAML::Emitter& out) {
                     out << YAML::Load(lora_list_yaml(config.model.lora));
                   },
                   [](const Config& config) { return !config.model.lora.empty(); }};
}

// Checks across the keys of `parallel` (docs/runtime.md, "Replica groups").
void check_parallel(const Config& config) { check_devices(config); }

const std::vector<SectionSpec>& schema() {
  static const std::vector<SectionSpec> sections = [] {
    using C = Config;
    using Strings = std::vector<std::string>;
    std::vector<SectionSpec> s;
    s.push_back({"model",
                 {field("name", &C::model, &ModelConfig::name),  // in validate_and_resolve
                  field("path", &C::model, &ModelConfig::path),
                  field("plugin", &C::model, &ModelConfig::plugin),
                  field("weights", &C::model, &ModelConfig::weights),
                  field("weights_seed", &C::model, &ModelConfig::weights_seed),
                  field("dtype", &C::model, &ModelConfig::dtype),
                  field("device", &C::model, &ModelConfig::device),
                  field("torch_threads", &C::model, &ModelConfig::torch_threads, in_range(0, 1024)),
                  field("offload_text_encoder", &C::model, &ModelConfig::offload_text_encoder),
                  field("attention", &C::model, &ModelConfig::attention),
                  field("fused_kernels", &C::model, &ModelConfig::fused_kernels),
                  field("quantization", &C::model, &ModelConfig::quantization),
                  field("expert_residency", &C::model, &ModelConfig::expert_residency),
                  field("vae_tiling", &C::model, &ModelConfig::vae_tiling), lora_field()}});
    s.push_back(
        {"parallel",
         {data_parallel_field(),
          field("tensor_parallel_size", &C::parallel, &ParallelConfig::tensor_parallel_size,
                in_range(1, 1024)),
          field("sequence_parallel_size", &C::parallel, &ParallelConfig::sequence_parallel_size,
                in_range(1, 1024)),
          ulysses_degree_field(),
          field("cfg_parallel_size", &C::parallel, &ParallelConfig::cfg_parallel_size,
                Check<int>([](const int& v, const std::string& path) {
                  require(v == 1 || v == 2, path,
                          fmt::format("{} is not allowed (expected 1 or 2)", v));
                })),
          field("collective_backend", &C::parallel, &ParallelConfig::collective_backend),
          devices_field(),
          field("coordinator_runs_work", &C::parallel, &ParallelConfig::coordinator_runs_work)},
         check_parallel});
    s.push_back(
        {"scheduler",
         {field("policy", &C::scheduler, &SchedulerConfig::policy),
          field("order", &C::scheduler, &SchedulerConfig::order),
          field("prefetch", &C::scheduler, &SchedulerConfig::prefetch, in_range(0, 1024)),
          field("max_retries", &C::scheduler, &SchedulerConfig::max_retries, in_range(0, 100)),
          field("request_timeout_s", &C::scheduler, &SchedulerConfig::request_timeout_s,
                non_negative(true)),
          field("lookahead", &C::scheduler, &SchedulerConfig::lookahead,
                in_range<std::size_t>(1, 100'000'000)),
          field("heartbeat_s", &C::scheduler, &SchedulerConfig::heartbeat_s, non_negative(false)),
          field("silent_timeout_s", &C::scheduler, &SchedulerConfig::silent_timeout_s,
                non_negative(true)),
          field("deadline_margin_s", &C::scheduler, &SchedulerConfig::deadline_margin_s,
                non_negative(true))},
         [](const Config& config) {
           const auto& sched = config.scheduler;
           require(
               sched.silent_timeout_s == 0.0 || sched.silent_timeout_s >= 2.0 * sched.heartbeat_s,
               "scheduler.silent_timeout_s",
               fmt::format("{} is shorter than two heartbeats (scheduler.heartbeat_s {}): a "
                           "live replica would be taken for lost (0 turns the watch off)",
                           format_double(sched.silent_timeout_s), format_double(sched.heartbeat_s)));
         }});
    s.push_back(
        {"generation",
         {field("num_frames", &C::generation, &GenerationConfig::num_frames,
                rule<int>(&check_num_frames)),
          field("height", &C::generation, &GenerationConfig::height, rule<int>(&check_frame_size)),
          field("width", &C::generation, &GenerationConfig::width, rule<int>(&check_frame_size)),
          field("num_inference_steps", &C::generation, &GenerationConfig::num_inference_steps,
                rule<int>(&check_num_inference_steps)),
          optional_field("guidance_scale", &C::generation, &GenerationConfig::guidance_scale,
                         rule<double>(&check_guidance_scale)),
          optional_field("flow_shift", &C::generation, &GenerationConfig::flow_shift,
                         rule<double>(&check_flow_shift)),
          optional_field("guidance_scale_2", &C::generation, &GenerationConfig::guidance_scale_2,
                         rule<double>(&check_guidance_scale)),
          field("seed", &C::generation, &GenerationConfig::seed,
                Check<std::uint64_t>([](const std::uint64_t& v, const std::string& path) {
                  require(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                          path, fmt::format("{} is out of range [0, 2^63-1]", v));
                })),
          field("fps", &C::generation, &GenerationConfig::fps, rule<int>(&check_fps)),
          field("negative_prompt", &C::generation, &GenerationConfig::negative_prompt),
          cache_field()}});
    s.push_back(
        {"input",
         {field("manifest", &C::input, &InputConfig::manifest, required()),
          field("tasks", &C::input, &InputConfig::tasks,
                Check<Strings>([known = distinct_of({"t2v", "i2v"}, "task", "t2v or i2v", true)](
                                   const Strings& v, const std::string& path) {
                  require(!v.empty(), path,
                          "an empty list (expected some of t2v, i2v; leave the key out "
                          "for both)");
                  known(v, path);
                })),
          field("max_line_bytes", &C::input, &InputConfig::max_line_bytes,
                in_range<std::size_t>(256, std::size_t{1} << 30)),
          field("max_image_pixels", &C::input, &InputConfig::max_image_pixels,
                in_range<std::uint64_t>(1, std::uint64_t{1} << 32)),
          field("max_image_aspect", &C::input, &InputConfig::max_image_aspect,
                Check<double>([](const double& v, const std::string& path) {
                  require(std::isfinite(v) && v >= 1.0 && v <= 1e6, path,
                          format_double(v) + " is out of range (expected a number in [1, 1e6])");
                }))}});
    s.push_back({"output",
                 {field("dir", &C::output, &OutputConfig::dir, required()),
                  field("store_video", &C::output, &OutputConfig::store_video), compression_field(),
                  // Written during the run by the export area (docs/export.md); whether this
                  // build can write MP4/GIF is checked at startup
                  // (video_export::check_export_support).
                  field("export", &C::output, &OutputConfig::export_formats,
                        distinct_of({"mp4", "png", "gif"}, "format", "mp4, png or gif", false)),
                  field("file_locking", &C::output, &OutputConfig::file_locking),
                  field("metrics_textfile", &C::output, &OutputConfig::metrics_textfile,
                        Check<std::string>([](const std::string& file, const std::string& path) {
                          if (file.empty()) return;  // off
                          require(file.size() > 5 && file.ends_with(".prom") && file.back() != '/',
                                  path,
                                  "'" + file +
                                      "' does not end in .prom (node_exporter's textfile "
                                      "collector reads only *.prom files)");
                        })),
                  field("metrics_interval_s", &C::output, &OutputConfig::metrics_interval_s,
                        non_negative(false))}});
    s.push_back({"determinism", {field("strict", &C::determinism, &DeterminismConfig::strict)}});
    s.push_back({"runtime",
                 {optional_field("peak_tflops", &C::runtime, &RuntimeConfig::peak_tflops,
                                 non_negative(false))}});
    s.push_back({"synthetic",
                 {field("seconds_per_gcost", &C::synthetic, &SyntheticConfig::seconds_per_gcost,
                        non_negative(true)),
                  field("wait", &C::synthetic, &SyntheticConfig::wait)}});
    // Test-only (docs/configuration.md): a run prints it only once a fault is set
    // (effective_yaml.hpp).
    s.push_back(
        {"faults",
         {field("fail_ids", &C::faults, &FaultConfig::fail_ids, ids()),
          field("transient_fail_ids", &C::faults, &FaultConfig::transient_fail_ids, ids()),
          field("drain_after", &C::faults, &FaultConfig::drain_after, at_least(0, "0 = off")),
          field("kill_rank", &C::faults, &FaultConfig::kill_rank, at_least(-1, "-1 = off")),
          field("kill_after", &C::faults, &FaultConfig::kill_after, at_least(0, "0 = off")),
          field("kill_in_write", &C::faults, &FaultConfig::kill_in_write),
          field("stop_not_kill", &C::faults, &FaultConfig::stop_not_kill),
          field("hang_ids", &C::faults, &FaultConfig::hang_ids, ids()),
          field("signal_at_start", &C::faults, &FaultConfig::signal_at_start)}});
    return s;
  }();
  return sections;
}

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  for (const auto& section : schema()) names.push_back(section.key);
  return names;
}

std::vector<std::string> field_names(const SectionSpec& section) {
  std::vector<std::string> names;
  for (const auto& f : section.fields) names.push_back(f.key);
  return names;
}

[[noreturn]] void unknown_key(const std::string& path, const std::string& key,
                              const std::vector<std::string>& valid) {
  throw ConfigError(path, "unknown key" + suggestion_suffix(key, valid));
}

std::string key_text(const Node& key, const std::string& parent) {
  if (!key.IsScalar()) {
    throw ConfigError(parent.empty() ? "<top level>" : parent,
                      "keys must be names, got " + describe(key));
  }
  return key.Scalar();
}

const SectionSpec& find_section(const std::string& key) {
  for (const auto& section : schema()) {
    if (section.key == key) return section;
  }
  unknown_key(key, key, section_names());
}

const FieldSpec& find_field(const SectionSpec& section, const std::string& key) {
  for (const auto& f : section.fields) {
    if (f.key == key) return f;
  }
  unknown_key(section.key + "." + key, key, field_names(section));
}

void apply_section(Config& config, const SectionSpec& section, const Node& node) {
  if (node.IsNull()) return;  // "faults:" with nothing under it
  if (!node.IsMap()) type_error(section.key, "a map of keys", node);
  for (const auto& item : node) {  // no key twice (ShapeCheck)
    const std::string key = key_text(item.first, section.key);
    const std::string path = section.key + "." + key;
    find_field(section, key).read(config, item.second, path);
  }
}

void apply_document(Config& config, const Node& root) {
  if (!root || root.IsNull()) return;  // an empty file: the defaults
  if (!root.IsMap()) {
    throw ConfigError("<top level>", "expected a map of sections (" + join(section_names(), ", ") +
                                         "), got " + describe(root));
  }
  for (const auto& item : root) {  // no key twice (ShapeCheck)
    const std::string key = key_text(item.first, "");
    apply_section(config, find_section(key), item.second);
  }
}

// The 1-based line of the '---' that starts the document whose content yaml-cpp marks at
// 0-based line `mark_line` (an empty document is marked past its marker).
std::size_t document_start_line(const std::string& text, int mark_line) {
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  const auto is_marker = [](std::string_view line) {
    return line.starts_with("---") &&
           (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
  };
  for (auto i = std::min(static_cast<std::size_t>(std::max(mark_line, 0)), lines.size()); i-- > 0;) {
    if (is_marker(lines[i])) return i + 1;
  }
  return static_cast<std::size_t>(std::max(mark_line, 0)) + 1;
}

// The one document of `text`, its shape checked (ShapeCheck). `path`: the YAML path of the
// text's value ("" for a file, "generation.cache" for a --set value), which its nesting counts
// from.
Node load_yaml(const std::string& text, const std::string& origin, const std::string& path = "") {
  try {
    // One document: a second one (after '---') was read as nothing (issue 39, class 10).
    std::vector<Node> documents = YAML::LoadAll(text);
    if (documents.size() > 1) {
      throw ConfigError(
          origin + ":" + std::to_string(document_start_line(text, documents[1].Mark().line)),
          "a second YAML document starts here: a configuration holds one "
          "document (remove this '---' and what follows it, or merge the two)");
    }
    if (documents.empty()) return Node();
    const int depth =
        path.empty() ? 1 : 2 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
    ShapeCheck(origin).check(documents.front(), path, depth);
    return documents.front();
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard, which stops its recursive parser at a few hundred levels.
    throw ConfigError(
        fmt::format("{}:{}:{}", origin, e.mark.line + 1, e.mark.column + 1),
        fmt::format("nested deeper than {} levels of lists and maps", kMaxValueNesting));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}", origin, e.mark.line + 1, e.mark.column + 1),
                      "invalid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin, std::string("invalid YAML: ") + e.what());
  }
}

std::filesystem::path resolve_against(const std::filesystem::path& base, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal();
  return (base / p).lexically_normal();
}

}  // namespace

// -------------------------------------------------------------------------------------------------

std::string check_num_frames(long long frames) {
  if (std::string reason = range_reason(frames, 1, 1025); !reason.empty()) return reason;
  if ((frames - 1) % 4 != 0) {
    const long long below = frames - (frames - 1) % 4;
    return fmt::format("{} is not of the form 4k+1 (e.g. {} or {})", frames, below, below + 4);
  }
  return {};
}

std::string check_frame_size(long long pixels) {
  if (std::string reason = range_reason(pixels, 16, 4096); !reason.empty()) return reason;
  if (pixels % 16 != 0) {
    const long long below = pixels - pixels % 16;
    return fmt::format("{} is not a multiple of 16 (e.g. {} or {})", pixels, below, below + 16);
  }
  return {};
}

std::string check_num_inference_steps(long long steps) { return range_reason(steps, 1, 1000); }

// The bounds are far past any recipe (Wan 3-5, HunyuanVideo-1.5 6; shifts 3-17) and below
// the values that overflow the latents (guidance 1e300 made NaN videos).
std::string check_guidance_scale(double scale) {
  if (std::isfinite(scale) && scale >= 0.0 && scale <= 100.0) return {};
  return format_double(scale) + " is out of range (expected a number in [0, 100])";
}

std::string check_flow_shift(double shift) {
  if (std::isfinite(shift) && shift > 0.0 && shift <= 100.0) return {};
  return format_double(shift) + " is out of range (expected a number in (0, 100])";
}

std::string check_fps(long long fps) { return range_reason(fps, 1, 240); }

std::string check_seed(long long seed) {
  if (seed >= 0) return {};
  return fmt::format("{} is out of range [0, 2^63-1]", seed);
}

Config parse_config_yaml(const std::string& yaml_text, const std::string& origin) {
  Config config;
  const Node root = load_yaml(yaml_text, origin);
  try {
    apply_document(config, root);
  } catch (const TagError& e) {
    throw ConfigError(location_of(origin, e.mark()), e.path(), e.message());
  }
  return config;
}

StepCacheConfig parse_step_cache(const std::string& text, const std::string& path) {
  const Node root = load_yaml(text, path, path);
  StepCacheConfig c;
  try {
    c = read_step_cache(root, path);
  } catch (const TagError& e) {
    throw ConfigError(location_of(path, e.mark()), e.path(), e.message());
  }
  check_step_cache(c, path);
  return c;
}

Config load_config_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path.string(), "cannot read the config file: it is a folder");
  }
  // /dev/null, a FIFO: not "no such file" (issue 39, class 13), and never read as empty.
  if (std::filesystem::exists(path, ec)) {
    if (const std::string problem = regular_file_problem(path); !problem.empty()) {
      throw ConfigError(path.string(), "cannot read the config file: it " + problem);
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(path.string(), "cannot read the config file: no such file or not readable");
  std::ostringstream text;
  text << in.rdbuf();
  Config config = parse_config_yaml(text.str(), path.string());
  config.source_file = std::filesystem::absolute(path).lexically_normal();
  return config;
}

Config default_config() {
  return parse_config_yaml(detail::kDefaultConfigYaml, "<embedded tiny.yaml>");
}

void apply_overrides(Config& config, const std::vector<std::string>& assignments) {
  for (const auto& assignment : assignments) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos) {
      throw ConfigError("--set", "'" + assignment + "' is not of the form section.key=value");
    }
    const std::string path = assignment.substr(0, eq);
    // Every name of the key path is there: ".x", "x.", "a..b" and "" are refused, not read as
    // the names around the gap.
    if (path.empty()) {
      throw ConfigError("--set",
                        "'" + assignment + "': the key path is empty (expected section.key=value)");
    }
    if (path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos) {
      throw ConfigError("--set", "'" + assignment + "': the key path '" + path +
                                     "' has an empty name (expected section.key=value)");
    }
    const std::string value = assignment.substr(eq + 1);
    const auto dot = path.find('.');
    const std::string section_key = path.substr(0, dot);
    const SectionSpec& section = find_section(section_key);
    if (dot == std::string::npos) {
      throw ConfigError(path, "a section, not a key: use " + path +
                                  ".KEY=value (keys: " + join(field_names(section), ", ") + ")");
    }
    const std::string key = path.substr(dot + 1);
    const FieldSpec& spec = find_field(section, key);
    const Node node = load_yaml(value, "--set " + path, path);
    try {
      spec.read(config, node, path);
    } catch (const TagError& e) {
      throw ConfigError("--set", e.path(), e.message());
    }
  }
}

void validate_and_resolve(Config& config, const std::vector<ModelChoice>& models) {
  // model
  const auto& model = config.model;
  const auto chosen = std::find_if(models.begin(), models.end(),
                                   [&](const ModelChoice& m) { return m.name == model.name; });
  {
    std::vector<std::string> names;
    for (const auto& m : models) names.push_back(m.name);
    const std::string nearest = nearest_name(model.name, names);
    require(chosen != models.end(), "model.name",
            "unknown model '" + model.name + "' (expected " + join(names, " | ") +
                (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") +
                (model.plugin.empty() ? "" : "; model.plugin " + plugin_path(config) + " is loaded") +
                ")");
  }
  if (model.weights == WeightsSource::pretrained) {
    require(chosen->has_weights, "model.weights",
            "'pretrained' is not available for model '" + model.name +
                "', which has no weights (use random)");
    require(!model.path.empty(), "model.path",
            "required when model.weights is 'pretrained' (got '')");
  }
  // parallel.ulysses_degree is sequence_parallel_size under the reference server's name.
  if (config.parallel.ulysses_degree != 0) {
    const auto& parallel = config.parallel;
    check_int(parallel.ulysses_degree, 1, 1024, "parallel.ulysses_degree");
    require(parallel.sequence_parallel_size == 1 ||
                parallel.sequence_parallel_size == parallel.ulysses_degree,
            "parallel.ulysses_degree",
            fmt::format("{} disagrees with parallel.sequence_parallel_size {} (the same setting "
                        "under its two names: set one)",
                        parallel.ulysses_degree, parallel.sequence_parallel_size));
    config.parallel.sequence_parallel_size = parallel.ulysses_degree;
  }
  // Every key's own check, then each section's checks across its keys, in schema order.
  for (const auto& section : schema()) {
    for (const auto& f : section.fields) {
      if (f.check) f.check(config, section.key + "." + f.key);
    }
    if (section.check) section.check(config);
  }
  // Never run a group on its leader while its members idle (docs/runtime.md, "Replica groups").
  require(config.parallel.tensor_parallel_size == 1 || chosen->tensor_parallel,
          "parallel.tensor_parallel_size",
          fmt::format("{}: tensor parallelism is not implemented by model '{}' (expected 1)",
                      config.parallel.tensor_parallel_size, model.name));

  if (model.quantization == Quantization::fp8) {
    require(
        chosen->fp8, "model.quantization",
        "fp8: FP8 quantization is not implemented by model '" + model.name + "' (expected none)");
    require(model.device == DeviceKind::cuda && model.dtype == DType::bf16, "model.quantization",
            std::string("fp8 needs model.device cuda and model.dtype bf16 (got ") +
                to_string(model.device) + ", " + to_string(model.dtype) + ")");
  }

  require(!model.vae_tiling || chosen->vae_tiling, "model.vae_tiling",
          "true: a tiled VAE decode is not implemented by model '" + model.name +
              "' (expected false; HunyuanVideo-1.5 has it)");

  require(model.lora.empty() || chosen->lora, "model.lora",
          "LoRA adapters are not implemented by model '" + model.name +
              "' (expected no adapters; the Wan family and HunyuanVideo-1.5 take them)");

  if (model.expert_residency == ExpertResidency::swap) {
    require(model.device == DeviceKind::cuda, "model.expert_residency",
            "swap keeps the idle expert in host memory: it needs model.device cuda (on the CPU "
            "both experts are in host memory already)");
    require(model.quantization == Quantization::none, "model.expert_residency",
            "swap with model.quantization fp8 is not supported (the experts move as bf16 "
            "weights)");
  }

  // Paths: the file's own paths against its folder, the output against the current directory.
  const std::filesystem::path cwd = std::filesystem::current_path();
  const std::filesystem::path base =
      config.source_file.empty() ? cwd : config.source_file.parent_path();
  config.input.manifest = resolve_against(base, config.input.manifest).string();
  if (!config.model.path.empty()) {
    config.model.path = resolve_against(base, config.model.path).string();
  }
  config.model.plugin = plugin_path(config);
  // Each adapter file is there and hashed now: its SHA-256 is part of every input key and row.
  for (std::size_t i = 0; i < config.model.lora.size(); ++i) {
    auto& adapter = config.model.lora[i];
    adapter.path = resolve_against(base, adapter.path).string();
    const std::string at = fmt::format("model.lora[{}].path", i);
    std::error_code ec;
    if (!std::filesystem::exists(adapter.path, ec)) {
      throw ConfigError(at, adapter.path + ": no such file");
    }
    if (const std::string problem = regular_file_problem(adapter.path); !problem.empty()) {
      throw ConfigError(at, adapter.path + ": " + problem);
    }
    try {
      adapter.sha256 = sha256_file_hex(adapter.path);
    } catch (const Error& e) {
      throw ConfigError(at, e.what());
    }
  }
  config.output.dir = resolve_against(cwd, config.output.dir).string();

  // The heads split over the group (after the paths, which a snapshot's head count is read
  // from): config/head_split.hpp, the rule the models apply too.
  if ((config.parallel.tensor_parallel_size > 1 || config.parallel.sequence_parallel_size > 1) &&
      chosen->attention_heads) {
    const auto error = head_split_error(
        chosen->attention_heads(config.model), config.parallel.tensor_parallel_size,
        config.parallel.sequence_parallel_size, "model '" + config.model.name + "'");
    if (error) require(false, error->key, error->message);
  }
}

std::string plugin_path(const Config& config) {
  if (config.model.plugin.empty()) return {};
  const std::filesystem::path base = config.source_file.empty() ? std::filesystem::current_path()
                                                                : config.source_file.parent_path();
  return resolve_against(base, config.model.plugin).string();
}

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& section : schema()) {
    // A section with every key unset (runtime without peak_tflops) is left out, not `{}`.
    if (std::none_of(section.fields.begin(), section.fields.end(),
                     [&](const FieldSpec& f) { return !f.present || f.present(config); })) {
      continue;
    }
    out << YAML::Key << section.key << YAML::Value << YAML::BeginMap;
    for (const auto& f : section.fields) {
      if (f.present && !f.present(config)) continue;
      out << YAML::Key << f.key << YAML::Value;
      f.write(config, out);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!out.good()) throw ConfigError("<to_yaml>", "YAML emitter error: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

const char* to_string(DType v) noexcept { return enum_name(v); }
const char* to_string(DeviceKind v) noexcept { return enum_name(v); }
const char* to_string(WeightsSource v) noexcept { return enum_name(v); }
const char* to_string(AttentionKernel v) noexcept { return enum_name(v); }
const char* to_string(Quantization v) noexcept { return enum_name(v); }
const char* to_string(ExpertResidency v) noexcept { return enum_name(v); }
const char* to_string(CachePolicy v) noexcept { return enum_name(v); }

double StepCacheConfig::default_threshold() const noexcept {
  switch (policy) {
    case CachePolicy::first_block: return 0.05;
    case CachePolicy::magcache: return 0.06;
    case CachePolicy::off:
    case CachePolicy::taylorseer: break;
  }
  return 0.0;
}

std::string describe_cache(const StepCacheConfig& c) {
  switch (c.policy) {
    case CachePolicy::off: return "off";
    case CachePolicy::first_block:
      return fmt::format("first_block(threshold {})", format_double(c.resolved_threshold()));
    case CachePolicy::taylorseer:
      return fmt::format(
          "taylorseer(cache_interval {}, disable_cache_before_step {}, max_order {})",
          c.cache_interval, c.disable_cache_before_step, c.max_order);
    case CachePolicy::magcache: {
      std::string ratios = "preset";  // the checkpoint's published ratios (mag_presets.hpp)
      if (c.calibrate) {
        ratios = "calibrate";
      } else if (!c.mag_ratios.empty()) {
        std::string text;
        for (const double r : c.mag_ratios) text += format_double(r) + ",";
        ratios = fmt::format("{}:{}", c.mag_ratios.size(), sha256_hex(text).substr(0, 12));
      }
      return fmt::format(
          "magcache(threshold {}, max_skip_steps {}, retention_ratio {}, mag_ratios {})",
          format_double(c.resolved_threshold()), c.max_skip_steps, format_double(c.retention_ratio),
          ratios);
    }
  }
  return "off";
}
const char* to_string(SchedulerPolicy v) noexcept { return enum_name(v); }
const char* to_string(WorkOrder v) noexcept { return enum_name(v); }
const char* to_string(WaitMode v) noexcept { return enum_name(v); }
const char* to_string(FileLocking v) noexcept { return enum_name(v); }
const char* to_string(CollectiveBackend v) noexcept { return enum_name(v); }

std::string compression_string(const OutputConfig& output) {
  switch (output.compression) {
    case CompressionKind::none: return "none";
    case CompressionKind::lzf: return "lzf";
    case CompressionKind::gzip: return fmt::format("gzip:{}", output.gzip_level);
  }
  return "none";
}

}  // namespace omnidp
