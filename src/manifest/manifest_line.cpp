#include "omnidp/manifest/manifest_line.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/suggest.hpp"
#include "omnidp/manifest/line_text.hpp"

namespace omnidp {
namespace {

using Json = nlohmann::json;
constexpr std::size_t kMaxIdBytes = 256;
constexpr auto kFieldCount = static_cast<std::size_t>(ManifestField::count);

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names{
      "id",         "prompt", "negative_prompt",     "seed",
      "task",       "image",  "prompt_embeds",       "num_frames",
      "height",     "width",  "num_inference_steps", "guidance_scale",
      "flow_shift", "fps",    "guidance_scale_2",    "last_image",
      "cache",      "lora"};
  return names;
}

struct Value {
  enum class Kind { null, boolean, integer, unsigned_integer, floating, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::int64_t integer = 0;
  std::uint64_t unsigned_integer = 0;
  double floating = 0.0;
  std::string text;  // a string's content, or a float's literal
};

// What a value is, for "must be X, got Y" messages.
std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::null: return "null";
    case Value::Kind::boolean: return v.boolean ? "true" : "false";
    case Value::Kind::integer: return std::to_string(v.integer);
    case Value::Kind::unsigned_integer: return std::to_string(v.unsigned_integer);
    case Value::Kind::floating: return printable(v.text);
    case Value::Kind::string: return "the string " + in_quotes(v.text);
    case Value::Kind::array: return "an array";
    case Value::Kind::object: return "an object";
  }
  return "?";
}

using FieldValues = std::array<std::optional<Value>, kFieldCount>;

// nlohmann SAX consumer for one line: a flat object of known fields. Records the first problem
// (with the field it concerns) and stops the parse. Nested values (a field's object or array)
// are checked for what no later reader could see: a key given twice in any object (nlohmann's
// own parse keeps the last; issue 52, class 10) and nesting deeper than kMaxValueNesting
// (issue 52, class 4: the cache text was re-read recursively and crashed).
class LineSax {
 public:
  FieldValues fields;
  std::string error_field;
  std::string error_reason;

  bool null() { return scalar(Value{}); }
  bool boolean(bool b) {
    Value v;
    v.kind = Value::Kind::boolean;
    v.boolean = b;
    return scalar(std::move(v));
  }
  bool number_integer(Json::number_integer_t n) {
    Value v;
    v.kind = Value::Kind::integer;
    v.integer = n;
    return scalar(std::move(v));
  }
  bool number_unsigned(Json::number_unsigned_t n) {
    Value v;
    v.kind = Value::Kind::unsigned_integer;
    v.unsigned_integer = n;
    return scalar(std::move(v));
  }
  bool number_float(Json::number_float_t x, const Json::string_t& literal) {
    Value v;
    v.kind = Value::Kind::floating;
    v.floating = x;
    v.text = literal;
    return scalar(std::move(v));
  }
  bool string(Json::string_t& s) {
    Value v;
    v.kind = Value::Kind::string;
    v.text = std::move(s);
    return scalar(std::move(v));
  }
  bool binary(Json::binary_t& /*b*/) { return fail("", "binary values are not JSON"); }

  bool start_object(std::size_t /*elements*/) {
    if (depth_ == 0) {
      if (done_) return fail("", "more than one JSON value on the line");
      depth_ = 1;
      return true;
    }
    return open_nested(Value::Kind::object);
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) {
    if (depth_ == 0) return fail("", "a line must be a JSON object, got an array");
    return open_nested(Value::Kind::array);
  }
  bool end_array() { return close(); }

  bool key(Json::string_t& name) {
    if (depth_ != 1) {  // inside a nested object: its reader takes the value as a whole
      Frame& frame = nested_.back();
      if (!frame.keys.insert(name).second) return fail(nested_path() + "." + name, "given twice");
      frame.key = std::move(name);
      return true;
    }
    const auto& names = field_names();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return fail(printable(name), "unknown field" + suggestion_suffix(name, names));
    }
    current_ = static_cast<std::size_t>(it - names.begin());
    if (fields[current_]) return fail(name, "given twice");
    in_value_ = true;
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..."
    std::string what = ex.what();
    if (const auto end = what.find("] ");
        what.starts_with("[json.exception.") && end != std::string::npos) {
      what.erase(0, end + 2);
    }
    if (what.starts_with("parse error at line 1, ")) what.erase(0, 23);
    const std::string field = in_value_ ? field_name(static_cast<ManifestField>(current_)) : "";
    if (done_) {
      error_reason = "unexpected text after the JSON object (" + printable(what, 200) + ")";
    } else if (what.find("UTF-8") != std::string::npos) {
      error_reason = in_value_ ? "invalid UTF-8 in the value" : "invalid UTF-8 in a field name";
    } else {
      error_reason = "invalid JSON: " + printable(what, 200);
    }
    error_field = field;
    return false;
  }

 private:
  bool fail(const std::string& field, std::string reason) {
    error_field = field;
    error_reason = std::move(reason);
    return false;
  }

  bool scalar(Value v) {
    if (depth_ == 0) return fail("", "a line must be a JSON object, got " + describe(v));
    element_starts();
    if (depth_ == 1) {
      fields[current_] = std::move(v);
      in_value_ = false;
    }
    return true;
  }

  bool open_nested(Value::Kind kind) {
    element_starts();
    if (depth_ == 1) {
      Value v;
      v.kind = kind;
      fields[current_] = std::move(v);
    }
    if (depth_ >= static_cast<std::size_t>(kMaxValueNesting)) {
      return fail(field_name(static_cast<ManifestField>(current_)),
                  fmt::format("nested deeper than {} levels of arrays and objects (the line's "
                              "object counted)",
                              kMaxValueNesting));
    }
    ++depth_;
    nested_.push_back(Frame{kind == Value::Kind::object, {}, {}, 0});
    return true;
  }

  // A value starts: in an array, it is the next element.
  void element_starts() {
    if (!nested_.empty() && !nested_.back().object) ++nested_.back().elements;
  }

  // "cache.a[2]": the field and the keys and indices down to the innermost open value.
  [[nodiscard]] std::string nested_path() const {
    std::string path = field_name(static_cast<ManifestField>(current_));
    for (std::size_t i = 0; i + 1 < nested_.size(); ++i) {
      const Frame& f = nested_[i];
      path += f.object ? "." + f.key : fmt::format("[{}]", f.elements - 1);
    }
    return path;
  }

  bool close() {
    if (depth_ > 1) nested_.pop_back();
    --depth_;
    if (depth_ == 1) in_value_ = false;
    if (depth_ == 0) done_ = true;
    return true;
  }

  // An open object or array inside a field's value.
  struct Frame {
    bool object = false;
    std::set<std::string> keys;  // an object's keys so far
    std::string key;             // an object's key whose value is being read
    std::size_t elements = 0;    // an array's elements so far
  };

  std::size_t depth_ = 0;
  std::vector<Frame> nested_;
  std::size_t current_ = 0;
  bool in_value_ = false;  // between a key and the end of its value
  bool done_ = false;      // the top-level object is complete
};

// Turns a parsed line into Request fields, throwing ManifestError for the first bad field.
class LineReader {
 public:
  LineReader(const FieldValues& fields, const std::string& file, std::size_t line)
      : fields_(fields), file_(file), line_(line) {}

  [[noreturn]] void fail(ManifestField field, const std::string& reason) const {
    throw ManifestError(file_, line_, field_name(field), reason);
  }

  [[nodiscard]] bool has(ManifestField field) const {
    return fields_[static_cast<std::size_t>(field)].has_value();
  }

  [[nodiscard]] const Value& get(ManifestField field) const {
    return *fields_[static_cast<std::size_t>(field)];
  }

  // A string without NUL characters (valid UTF-8 is guaranteed by the parser).
  [[nodiscard]] std::optional<std::string> string(ManifestField field) const {
    if (!has(field)) return std::nullopt;
    const Value& v = get(field);
    if (v.kind != Value::Kind::string) fail(field, "must be a string, got " + describe(v));
    if (v.text.find('\0') != std::string::npos) {
      fail(field, "contains a NUL character (\\u0000)");
    }
    return v.text;
  }

  // A JSON integer (no fraction, no exponent) within int64.
  [[nodiscard]] std::optional<long long> integer(ManifestField field) const {
    if (!has(field)) return std::nullopt;
    const Value& v = get(field);
    switch (v.kind) {
      case Value::Kind::integer: return v.integer;
      case Value::Kind::unsigned_integer:
        if (v.unsigned_integer <= static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) {
          return static_cast<long long>(v.unsigned_integer);
        }
        fail(field, describe(v) + " is out of range");
      case Value::Kind::floating:
        if (v.text.find_first_of(".eE") == std::string::npos) {
          fail(field, describe(v) + " is out of range");
        }
        fail(field, "must be an integer, got " + describe(v));
      default: fail(field, "must be an integer, got " + describe(v));
    }
  }

  [[nodiscard]] std::optional<double> number(ManifestField field) const {
    if (!has(field)) return std::nullopt;
    const Value& v = get(field);
    switch (v.kind) {
      case Value::Kind::integer: return static_cast<double>(v.integer);
      case Value::Kind::unsigned_integer: return static_cast<double>(v.unsigned_integer);
      case Value::Kind::floating: return v.floating;
      default: fail(field, "must be a number, got " + describe(v));
    }
  }

  // seed: an integer in 0 .. 2^63-1.
  [[nodiscard]] std::optional<std::uint64_t> seed() const {
    if (!has(ManifestField::seed)) return std::nullopt;
    const Value& v = get(ManifestField::seed);
    const std::string range = "must be an integer in 0..9223372036854775807 (2^63-1), got ";
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (v.kind == Value::Kind::integer && v.integer >= 0) {
      return static_cast<std::uint64_t>(v.integer);
    }
    if (v.kind == Value::Kind::unsigned_integer && v.unsigned_integer <= kMax) {
      return v.unsigned_integer;
    }
    fail(ManifestField::seed, range + describe(v));
  }

  void check(ManifestField field, const std::string& reason) const {
    if (!reason.empty()) fail(field, reason);
  }

  // "cache": a policy name or an object {"policy": ..., <its keys>}, by generation.cache's
  // rules (a fault names the key: "cache.threshold").
  [[nodiscard]] std::optional<StepCacheConfig> cache() const {
    if (!has(ManifestField::cache)) return std::nullopt;
    const Value& v = get(ManifestField::cache);
    if (v.kind != Value::Kind::string && v.kind != Value::Kind::object) {
      fail(ManifestField::cache,
           "must be a policy name (off | first_block | taylorseer | magcache) or an object "
           "{\"policy\": ..., <its keys>}, got " +
               describe(v));
    }
    try {
      return parse_step_cache(v.kind == Value::Kind::string ? Json(v.text).dump() : v.text,
                              field_name(ManifestField::cache));
    } catch (const ConfigError& e) {
      throw ManifestError(file_, line_, e.path(), e.message());
    }
  }

  // "lora": a list of adapters, each a path or {"path", "scale", "expert"}, by model.lora's
  // rules (a fault names the item: "lora[1].scale"). Paths as written (the reader resolves
  // them against the manifest's folder).
  [[nodiscard]] std::vector<LoraAdapter> lora() const {
    if (!has(ManifestField::lora)) return {};
    const Value& v = get(ManifestField::lora);
    if (v.kind != Value::Kind::array) {
      fail(ManifestField::lora,
           "must be a list of adapters, each a path or {\"path\": ..., \"scale\": ..., "
           "\"expert\": ...}, got " +
               describe(v));
    }
    try {
      return parse_lora_list(v.text, field_name(ManifestField::lora));
    } catch (const ConfigError& e) {
      throw ManifestError(file_, line_, e.path(), e.message());
    }
  }

 private:
  const FieldValues& fields_;
  const std::string& file_;
  std::size_t line_;
};

FieldValues parse_fields(std::string_view text, const std::string& file, std::size_t line) {
  // nlohmann's lexer takes a NUL byte for the end of its input: the rest of the line would be
  // dropped unread (issue 39, class 10). JSON text has none (a string escapes it as \u0000).
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw ManifestError(file, line, "",
                        "a NUL byte at column " + std::to_string(nul + 1) +
                            " (a manifest line is JSON text; inside a string write \\u0000)");
  }
  LineSax sax;
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, Json::input_format_t::json,
                                  /*strict=*/true);
  if (!ok) throw ManifestError(file, line, sax.error_field, sax.error_reason);
  // The one nested field: "cache" keeps its JSON text (the SAX pass records only its kind),
  // which generation.cache's reader takes as YAML flow syntax.
  auto& cache = sax.fields[static_cast<std::size_t>(ManifestField::cache)];
  if (cache && cache->kind == Value::Kind::object) {
    cache->text = Json::parse(text.begin(), text.end())["cache"].dump(1);
  }
  // ... and "lora", a list read by model.lora's rules.
  auto& lora = sax.fields[static_cast<std::size_t>(ManifestField::lora)];
  if (lora && lora->kind == Value::Kind::array) {
    lora->text = Json::parse(text.begin(), text.end())["lora"].dump(1);
  }
  return std::move(sax.fields);
}

std::string read_id(const LineReader& in) {
  const auto id = in.string(ManifestField::id);
  if (!id) in.fail(ManifestField::id, "required field is missing");
  if (id->empty()) in.fail(ManifestField::id, "must not be empty");
  if (id->size() > kMaxIdBytes) {
    in.fail(ManifestField::id,
            fmt::format("is {} bytes long, over the limit of {}", id->size(), kMaxIdBytes));
  }
  const auto control = std::find_if(id->begin(), id->end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
  if (control != id->end()) {
    in.fail(ManifestField::id, in_quotes(*id) + " contains a control character");
  }
  return *id;
}

Request build_request(const LineReader& in, std::string id, const GenerationConfig& defaults,
                      int size_multiple) {
  Request r;
  r.id = std::move(id);
  const auto prompt = in.string(ManifestField::prompt);
  if (!prompt) in.fail(ManifestField::prompt, "required field is missing");
  r.prompt = *prompt;
  r.negative_prompt = in.string(ManifestField::negative_prompt).value_or(defaults.negative_prompt);
  r.seed = in.seed().value_or(defaults.seed);

  const auto integer_field = [&in](ManifestField field, int fallback,
                                   std::string (*check)(long long)) {
    const auto value = in.integer(field);
    if (!value) return fallback;
    in.check(field, check(*value));
    return static_cast<int>(*value);
  };
  r.num_frames = integer_field(ManifestField::num_frames, defaults.num_frames, &check_num_frames);
  r.height = integer_field(ManifestField::height, defaults.height, &check_frame_size);
  r.width = integer_field(ManifestField::width, defaults.width, &check_frame_size);
  // The model's own granularity (VAE x patch; 32 for Wan), beyond the generic multiple of 16.
  for (const auto& [field, value, key] :
       {std::tuple{ManifestField::height, r.height, "generation.height"},
        std::tuple{ManifestField::width, r.width, "generation.width"}}) {
    if (size_multiple > 0 && value % size_multiple != 0) {
      const int below = value - value % size_multiple;
      in.fail(field,
              fmt::format("{}{} is not a multiple of {}, which this model needs (e.g. {} or {})",
                          value, (in.has(field) ? "" : std::string(" (from ") + key + ")"),
                          size_multiple, below, below + size_multiple));
    }
  }
  r.num_inference_steps = integer_field(ManifestField::num_inference_steps,
                                        defaults.num_inference_steps, &check_num_inference_steps);
  r.fps = integer_field(ManifestField::fps, defaults.fps, &check_fps);
  // An unset default: the caller did not resolve it (job_manifest_options does).
  const auto double_field = [&in](ManifestField field, const std::optional<double>& fallback,
                                  std::string (*check)(double)) {
    const auto value = in.number(field);
    if (!value) {
      if (!fallback) {
        in.fail(field, std::string("not set: the line has none and no default was resolved for "
                                   "generation.") +
                           field_name(field));
      }
      return *fallback;
    }
    in.check(field, check(*value));
    return *value;
  };
  r.guidance_scale =
      double_field(ManifestField::guidance_scale, defaults.guidance_scale, &check_guidance_scale);
  r.flow_shift = double_field(ManifestField::flow_shift, defaults.flow_shift, &check_flow_shift);
  if (const auto g2 = in.number(ManifestField::guidance_scale_2)) {
    in.check(ManifestField::guidance_scale_2, check_guidance_scale(*g2));
    r.guidance_scale_2 = *g2;
  } else {
    r.guidance_scale_2 = defaults.guidance_scale_2;
  }
  r.cache = in.cache();
  r.lora = in.lora();
  r.line_sets_size = in.has(ManifestField::height) || in.has(ManifestField::width);
  r.line_sets_guidance_scale = in.has(ManifestField::guidance_scale);
  r.line_sets_flow_shift = in.has(ManifestField::flow_shift);

  const auto path_field = [&in](ManifestField field) {
    auto value = in.string(field);
    if (value && value->empty()) in.fail(field, "must not be empty");
    return value.value_or(std::string());
  };
  r.image = path_field(ManifestField::image);
  r.last_image = path_field(ManifestField::last_image);
  r.prompt_embeds = path_field(ManifestField::prompt_embeds);

  const auto task = in.string(ManifestField::task);
  if (!task) {
    r.task = r.image.empty() ? Task::t2v : Task::i2v;
  } else if (*task == "t2v") {
    r.task = Task::t2v;
  } else if (*task == "i2v") {
    r.task = Task::i2v;
  } else {
    in.fail(ManifestField::task,
            "unknown task " + in_quotes(*task) +
                suggestion_suffix(*task, {std::string("t2v"), std::string("i2v")}));
  }
  if (r.task == Task::i2v && r.image.empty()) {
    in.fail(ManifestField::task, "task i2v needs an \"image\"");
  }
  if (r.task == Task::t2v && !r.image.empty()) {
    in.fail(ManifestField::image, "given for a t2v request (drop it, or use \"task\": \"i2v\")");
  }
  if (!r.last_image.empty() && r.image.empty()) {
    in.fail(ManifestField::last_image,
            "needs an \"image\" (first-last-frame to video: image is the first frame)");
  }
  return r;
}

}  // namespace

const std::string& field_name(ManifestField field) {
  return field_names()[static_cast<std::size_t>(field)];
}

struct ManifestLine::Fields {
  FieldValues values;
};

ManifestLine::ManifestLine(std::string_view text, std::string file, std::size_t line)
    : fields_(std::make_unique<Fields>()), file_(std::move(file)), line_(line) {
  fields_->values = parse_fields(text, file_, line_);
}
ManifestLine::~ManifestLine() = default;
ManifestLine::ManifestLine(ManifestLine&&) noexcept = default;
ManifestLine& ManifestLine::operator=(ManifestLine&&) noexcept = default;

std::string ManifestLine::id() const { return read_id(LineReader(fields_->values, file_, line_)); }

Request ManifestLine::request(std::string id, const GenerationConfig& defaults,
                              int size_multiple) const {
  Request r = build_request(LineReader(fields_->values, file_, line_), std::move(id), defaults,
                            size_multiple);
  r.line = line_;
  return r;
}

void ManifestLine::fail(ManifestField field, const std::string& reason) const {
  throw ManifestError(file_, line_, field_name(field), reason);
}

Request parse_manifest_line(std::string_view text, const GenerationConfig& defaults,
                            const std::string& file, std::size_t line) {
  const ManifestLine parsed(text, file, line);
  return parsed.request(parsed.id(), defaults, 16);
}

}  // namespace omnidp
