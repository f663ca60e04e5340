#include "omnidp/manifest/manifest.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>
#include <tuple>
#include <utility>

#include "omnidp/common/image.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/config/suggest.hpp"
#include "omnidp/manifest/id_set.hpp"
#include "omnidp/manifest/input_key.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::size_t kChunkBytes = 64 * 1024;
constexpr std::size_t kMaxIdBytes = 256;
constexpr std::size_t kShownBytes = 60;        // longest value quoted in a message
constexpr std::size_t kShownPathBytes = 4096;  // longest path quoted in a message

// ------------------------------------------------------------------------ text helpers ---

// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not valid.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

// `text` shown in a message: JSON-style escapes, invalid UTF-8 bytes as \xNN, cut after
// about `limit` bytes (on a character boundary) with "...".
std::string printable(std::string_view text, std::size_t limit = kShownBytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (i >= limit) {
      out += "...";
      break;
    }
    const std::size_t n = utf8_sequence(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += n == 0 ? "\\x" : "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      i += 1;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      i += 1;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string in_quotes(std::string_view text, std::size_t limit = kShownBytes) {
  std::string out(1, '"');
  out += printable(text, limit);
  out += '"';
  return out;
}

bool is_blank_or_comment(std::string_view line) {
  const std::size_t first = line.find_first_not_of(" \t\r\f\v");
  return first == std::string_view::npos || line[first] == '#';
}

// ------------------------------------------------------------------------- line fields ---

enum class Field : std::size_t {
  id,
  prompt,
  negative_prompt,
  seed,
  task,
  image,
  prompt_embeds,
  num_frames,
  height,
  width,
  num_inference_steps,
  guidance_scale,
  flow_shift,
  fps,
  count
};
constexpr auto kFieldCount = static_cast<std::size_t>(Field::count);

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names{
      "id",         "prompt", "negative_prompt",     "seed",
      "task",       "image",  "prompt_embeds",       "num_frames",
      "height",     "width",  "num_inference_steps", "guidance_scale",
      "flow_shift", "fps"};
  return names;
}

const std::string& name_of(Field field) { return field_names()[static_cast<std::size_t>(field)]; }

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

using Fields = std::array<std::optional<Value>, kFieldCount>;

// nlohmann SAX consumer for one line: a flat object of known fields. Records the first problem
// (with the field it concerns) and stops the parse.
class LineSax {
 public:
  Fields fields;
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
    if (depth_ != 1) return true;  // inside a nested value: rejected as a whole later
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
    const std::string field = in_value_ ? name_of(static_cast<Field>(current_)) : "";
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
    if (depth_ == 1) {
      fields[current_] = std::move(v);
      in_value_ = false;
    }
    return true;
  }

  bool open_nested(Value::Kind kind) {
    if (depth_ == 1) {
      Value v;
      v.kind = kind;
      fields[current_] = std::move(v);
    }
    ++depth_;
    return true;
  }

  bool close() {
    --depth_;
    if (depth_ == 1) in_value_ = false;
    if (depth_ == 0) done_ = true;
    return true;
  }

  std::size_t depth_ = 0;
  std::size_t current_ = 0;
  bool in_value_ = false;  // between a key and the end of its value
  bool done_ = false;      // the top-level object is complete
};

// Turns a parsed line into Request fields, throwing ManifestError for the first bad field.
class LineReader {
 public:
  LineReader(const Fields& fields, const std::string& file, std::size_t line)
      : fields_(fields), file_(file), line_(line) {}

  [[noreturn]] void fail(Field field, const std::string& reason) const {
    throw ManifestError(file_, line_, name_of(field), reason);
  }

  [[nodiscard]] bool has(Field field) const {
    return fields_[static_cast<std::size_t>(field)].has_value();
  }

  [[nodiscard]] const Value& get(Field field) const {
    return *fields_[static_cast<std::size_t>(field)];
  }

  // A string without NUL characters (valid UTF-8 is guaranteed by the parser).
  [[nodiscard]] std::optional<std::string> string(Field field) const {
    if (!has(field)) return std::nullopt;
    const Value& v = get(field);
    if (v.kind != Value::Kind::string) fail(field, "must be a string, got " + describe(v));
    if (v.text.find('\0') != std::string::npos) {
      fail(field, "contains a NUL character (\\u0000)");
    }
    return v.text;
  }

  // A JSON integer (no fraction, no exponent) within int64.
  [[nodiscard]] std::optional<long long> integer(Field field) const {
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

  [[nodiscard]] std::optional<double> number(Field field) const {
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
    if (!has(Field::seed)) return std::nullopt;
    const Value& v = get(Field::seed);
    const std::string range = "must be an integer in 0..9223372036854775807 (2^63-1), got ";
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (v.kind == Value::Kind::integer && v.integer >= 0) {
      return static_cast<std::uint64_t>(v.integer);
    }
    if (v.kind == Value::Kind::unsigned_integer && v.unsigned_integer <= kMax) {
      return v.unsigned_integer;
    }
    fail(Field::seed, range + describe(v));
  }

  void check(Field field, const std::string& reason) const {
    if (!reason.empty()) fail(field, reason);
  }

 private:
  const Fields& fields_;
  const std::string& file_;
  std::size_t line_;
};

Fields parse_fields(std::string_view text, const std::string& file, std::size_t line) {
  LineSax sax;
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, Json::input_format_t::json,
                                  /*strict=*/true);
  if (!ok) throw ManifestError(file, line, sax.error_field, sax.error_reason);
  return std::move(sax.fields);
}

std::string read_id(const LineReader& in) {
  const auto id = in.string(Field::id);
  if (!id) in.fail(Field::id, "required field is missing");
  if (id->empty()) in.fail(Field::id, "must not be empty");
  if (id->size() > kMaxIdBytes) {
    in.fail(Field::id, "is " + std::to_string(id->size()) + " bytes long, over the limit of " +
                           std::to_string(kMaxIdBytes));
  }
  const auto control = std::find_if(id->begin(), id->end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
  if (control != id->end()) {
    in.fail(Field::id, in_quotes(*id) + " contains a control character");
  }
  return *id;
}

Request build_request(const LineReader& in, std::string id, const GenerationConfig& defaults,
                      int size_multiple) {
  Request r;
  r.id = std::move(id);
  const auto prompt = in.string(Field::prompt);
  if (!prompt) in.fail(Field::prompt, "required field is missing");
  r.prompt = *prompt;
  r.negative_prompt = in.string(Field::negative_prompt).value_or(defaults.negative_prompt);
  r.seed = in.seed().value_or(defaults.seed);

  const auto integer_field = [&in](Field field, int fallback, std::string (*check)(long long)) {
    const auto value = in.integer(field);
    if (!value) return fallback;
    in.check(field, check(*value));
    return static_cast<int>(*value);
  };
  r.num_frames = integer_field(Field::num_frames, defaults.num_frames, &check_num_frames);
  r.height = integer_field(Field::height, defaults.height, &check_frame_size);
  r.width = integer_field(Field::width, defaults.width, &check_frame_size);
  // The model's own granularity (VAE x patch; 32 for Wan), beyond the generic multiple of 16.
  for (const auto& [field, value, key] : {std::tuple{Field::height, r.height, "generation.height"},
                                          std::tuple{Field::width, r.width, "generation.width"}}) {
    if (size_multiple > 0 && value % size_multiple != 0) {
      const int below = value - value % size_multiple;
      in.fail(field, std::to_string(value) +
                         (in.has(field) ? "" : std::string(" (from ") + key + ")") +
                         " is not a multiple of " + std::to_string(size_multiple) +
                         ", which this model needs (e.g. " + std::to_string(below) + " or " +
                         std::to_string(below + size_multiple) + ")");
    }
  }
  r.num_inference_steps = integer_field(Field::num_inference_steps, defaults.num_inference_steps,
                                        &check_num_inference_steps);
  r.fps = integer_field(Field::fps, defaults.fps, &check_fps);
  // An unset default: the caller did not resolve it (job_manifest_options does).
  const auto double_field = [&in](Field field, const std::optional<double>& fallback,
                                  std::string (*check)(double)) {
    const auto value = in.number(field);
    if (!value) {
      if (!fallback) {
        in.fail(field, std::string("not set: the line has none and no default was resolved for "
                                   "generation.") +
                           name_of(field));
      }
      return *fallback;
    }
    in.check(field, check(*value));
    return *value;
  };
  r.guidance_scale =
      double_field(Field::guidance_scale, defaults.guidance_scale, &check_guidance_scale);
  r.flow_shift = double_field(Field::flow_shift, defaults.flow_shift, &check_flow_shift);
  r.line_sets_size = in.has(Field::height) || in.has(Field::width);
  r.line_sets_guidance_scale = in.has(Field::guidance_scale);
  r.line_sets_flow_shift = in.has(Field::flow_shift);

  const auto path_field = [&in](Field field) {
    auto value = in.string(field);
    if (value && value->empty()) in.fail(field, "must not be empty");
    return value.value_or(std::string());
  };
  r.image = path_field(Field::image);
  r.prompt_embeds = path_field(Field::prompt_embeds);

  const auto task = in.string(Field::task);
  if (!task) {
    r.task = r.image.empty() ? Task::t2v : Task::i2v;
  } else if (*task == "t2v") {
    r.task = Task::t2v;
  } else if (*task == "i2v") {
    r.task = Task::i2v;
  } else {
    in.fail(Field::task, "unknown task " + in_quotes(*task) +
                             suggestion_suffix(*task, {std::string("t2v"), std::string("i2v")}));
  }
  if (r.task == Task::i2v && r.image.empty()) {
    in.fail(Field::task, "task i2v needs an \"image\"");
  }
  if (r.task == Task::t2v && !r.image.empty()) {
    in.fail(Field::image, "given for a t2v request (drop it, or use \"task\": \"i2v\")");
  }
  return r;
}

// ------------------------------------------------------------------------------ paths ---

// Whether `path` (absolute, normal) is `root` or inside it, component by component.
bool is_within(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

// An input path resolved against the manifest's folder; symlinks of the existing part are
// followed. Throws ManifestError if the result leaves the folder.
std::string resolve_input(const std::string& text, const fs::path& root, const std::string& file,
                          std::size_t line, Field field) {
  const fs::path given(text);
  const fs::path joined = (given.is_absolute() ? given : root / given).lexically_normal();
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(joined, ec);
  if (ec) resolved = joined;  // unreadable parent: checked lexically, reading it fails later
  if (!is_within(resolved, root)) {
    throw ManifestError(file, line, name_of(field),
                        "path " + in_quotes(text, kShownPathBytes) +
                            " leaves the manifest's folder " +
                            in_quotes(root.string(), kShownPathBytes) + " (it resolves to " +
                            in_quotes(resolved.string(), kShownPathBytes) + ")");
  }
  return resolved.string();
}

}  // namespace

// ----------------------------------------------------------------------------- public ---

ManifestOptions manifest_options(const Config& config, std::string weights_identity) {
  ManifestOptions options;
  options.path = config.input.manifest;
  options.defaults = config.generation;
  options.model_name = config.model.name;
  options.weights_identity = std::move(weights_identity);
  options.max_line_bytes = config.input.max_line_bytes;
  options.max_image_pixels = config.input.max_image_pixels;
  std::vector<Task> tasks;
  for (const auto& task : config.input.tasks)
    tasks.push_back(task == "i2v" ? Task::i2v : Task::t2v);
  const bool all = std::find(tasks.begin(), tasks.end(), Task::t2v) != tasks.end() &&
                   std::find(tasks.begin(), tasks.end(), Task::i2v) != tasks.end();
  if (!all) options.tasks = std::move(tasks);
  return options;
}

Request parse_manifest_line(std::string_view text, const GenerationConfig& defaults,
                            const std::string& file, std::size_t line) {
  const Fields fields = parse_fields(text, file, line);
  const LineReader in(fields, file, line);
  std::string id = read_id(in);
  Request r = build_request(in, std::move(id), defaults, 16);
  r.line = line;
  return r;
}

struct ManifestReader::State {
  ManifestOptions options;
  std::string file;  // options.path as shown in messages
  fs::path root;     // canonical folder of the manifest
  std::ifstream in;
  std::vector<char> chunk = std::vector<char>(kChunkBytes);
  std::size_t chunk_pos = 0;
  std::size_t chunk_end = 0;
  std::uint64_t chunk_offset = 0;  // file offset of chunk[0]
  std::uint64_t line_offset = 0;   // file offset of the current line's start
  ManifestOptions::Position last;  // of the request returned last
  std::string text;                // the current line, at most max_line_bytes + 1 bytes
  std::size_t line = 0;
  std::size_t requests = 0;
  std::size_t filtered = 0;  // lines of tasks not in options.tasks
  std::size_t peak_buffer_bytes = 0;
  IdSet ids;

  // Refills the chunk; false at the end of the file.
  bool fill() {
    chunk_offset += chunk_end;
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (in.bad()) throw IoError(file, "read failed after line " + std::to_string(line));
    chunk_pos = 0;
    chunk_end = static_cast<std::size_t>(in.gcount());
    return chunk_end > 0;
  }

  // Reads the next line into `text` without its line end (LF or CRLF). A line over the limit
  // is skipped to its end without being held; `too_long` tells. False at the end of the file.
  bool read_line(bool& too_long) {
    text.clear();
    too_long = false;
    bool any = false;
    line_offset = chunk_offset + chunk_pos;
    for (;;) {
      if (chunk_pos == chunk_end && !fill()) {
        if (!any) return false;
        break;  // a last line without a line end
      }
      if (!any) line_offset = chunk_offset + chunk_pos;
      any = true;
      const char* begin = chunk.data() + chunk_pos;
      const std::size_t available = chunk_end - chunk_pos;
      const void* newline = std::memchr(begin, '\n', available);
      const std::size_t n = newline != nullptr
                                ? static_cast<std::size_t>(static_cast<const char*>(newline) - begin)
                                : available;
      if (!too_long) {
        if (text.size() + n > options.max_line_bytes + 1) {  // + 1: room for a CR
          too_long = true;
          text.clear();
        } else {
          text.append(begin, n);
          peak_buffer_bytes = std::max(peak_buffer_bytes, chunk.capacity() + text.capacity());
        }
      }
      chunk_pos += n;
      if (newline != nullptr) {
        ++chunk_pos;
        break;
      }
    }
    ++line;
    if (!too_long && !text.empty() && text.back() == '\r') text.pop_back();
    if (text.size() > options.max_line_bytes) too_long = true;
    if (line == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 BOM
    return true;
  }

  [[nodiscard]] std::string input_error(Field field, const std::string& reason) const {
    return ManifestError(file, line, name_of(field), reason).what();
  }

  // SHA-256 of an input file: from the cache when it has the file unchanged.
  [[nodiscard]] std::string hash_input(const std::string& path,
                                       const std::optional<FileStamp>& stamp) const {
    if (options.hash_cache && stamp) return options.hash_cache->hash(path, *stamp);
    return sha256_file_hex(path);
  }

  // Probes and hashes the request's files; a defect goes to request.input_error. With a hash
  // cache, an unchanged file is not opened at all.
  // `size_given`: the line sets height or width (then the model's size_from_image is not used).
  void read_inputs(Request& r, bool size_given) const {
    FileHashCache* cache = options.hash_cache.get();
    if (!r.image.empty()) {
      ImageInfo info;
      try {
        const std::optional<FileStamp> stamp = cache != nullptr ? file_stamp(r.image) : std::nullopt;
        const FileHashCache::Entry* cached = stamp ? cache->find(r.image, *stamp) : nullptr;
        const bool probed = cached == nullptr || cached->width == 0;
        if (probed) {
          info = probe_image(r.image);
        } else {
          info.width = cached->width;
          info.height = cached->height;
        }
        r.image_height = info.height;
        r.image_width = info.width;
        const auto pixels =
            static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height);
        if (pixels > options.max_image_pixels) {
          r.input_error =
              input_error(Field::image, r.image + ": image is " + std::to_string(info.width) + "x" +
                                            std::to_string(info.height) + " = " +
                                            std::to_string(pixels) + " pixels, over the limit of " +
                                            std::to_string(options.max_image_pixels) +
                                            " (input.max_image_pixels)");
          return;
        }
        r.image_sha256 = hash_input(r.image, stamp);
        if (stamp && probed) {
          cache->put(r.image, *stamp, FileHashCache::Entry{r.image_sha256, info.width, info.height});
        }
      } catch (const Error& e) {  // InputError from probing, IoError from hashing
        r.input_error = input_error(Field::image, e.what());
        return;
      }
      if (r.task == Task::i2v && !size_given && options.size_from_image) {
        try {
          std::tie(r.height, r.width) = options.size_from_image(info.height, info.width);
        } catch (const std::exception& e) {
          r.input_error =
              input_error(Field::image, std::string("no output size for this image: ") + e.what());
          return;
        }
      }
    }
    if (!r.prompt_embeds.empty()) {
      std::error_code ec;
      if (!fs::is_regular_file(r.prompt_embeds, ec)) {
        r.input_error =
            input_error(Field::prompt_embeds,
                        r.prompt_embeds + (fs::exists(r.prompt_embeds, ec) ? ": not a regular file"
                                                                           : ": file not found"));
        return;
      }
      try {
        r.prompt_embeds_sha256 = hash_input(
            r.prompt_embeds, cache != nullptr ? file_stamp(r.prompt_embeds) : std::nullopt);
      } catch (const Error& e) {
        r.input_error = input_error(Field::prompt_embeds, e.what());
        return;
      }
    }
    r.input_key = compute_input_key(r, options.model_name, options.weights_identity);
  }

  std::optional<Request> next() {
    for (;;) {
      bool too_long = false;
      if (!read_line(too_long)) return std::nullopt;
      if (too_long) {
        throw ManifestError(file, line, "",
                            "line is longer than " + std::to_string(options.max_line_bytes) +
                                " bytes (input.max_line_bytes); refused");
      }
      if (is_blank_or_comment(text)) continue;
      const Fields fields = parse_fields(text, file, line);
      const LineReader in(fields, file, line);
      std::string id = read_id(in);
      if (const std::size_t first = ids.insert(id, line); first != 0) {
        in.fail(Field::id,
                "duplicate id " + in_quotes(id) + ": first used on line " + std::to_string(first));
      }
      Request r = build_request(in, std::move(id), options.defaults, options.size_multiple);
      r.line = line;
      if (!r.image.empty()) r.image = resolve_input(r.image, root, file, line, Field::image);
      if (!r.prompt_embeds.empty()) {
        r.prompt_embeds = resolve_input(r.prompt_embeds, root, file, line, Field::prompt_embeds);
      }
      if (!options.tasks.empty() &&
          std::find(options.tasks.begin(), options.tasks.end(), r.task) == options.tasks.end()) {
        ++filtered;  // input.tasks: checked, but not this job's
        continue;
      }
      if (options.only_task && r.task != *options.only_task) {
        in.fail(Field::task, std::string("task ") + to_string(r.task) +
                                 ", but the snapshot serves " + to_string(*options.only_task) +
                                 " only (" + options.only_task_origin +
                                 "; input.tasks selects the lines a job runs)");
      }
      if (options.read_inputs) read_inputs(r, r.line_sets_size);
      last = ManifestOptions::Position{line_offset, line - 1, requests};
      r.index = requests++;
      return r;
    }
  }
};

ManifestReader::ManifestReader(ManifestOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  s.file = s.options.path.string();
  std::error_code ec;
  if (fs::is_directory(s.options.path, ec)) {
    throw ManifestError(s.file, 0, "", "is a folder, not a manifest file");
  }
  s.in.open(s.options.path, std::ios::binary);
  if (!s.in) {  // a usage error (exit 2), like any other defect of the manifest itself
    throw ManifestError(s.file, 0, "",
                        std::string("cannot open the manifest: ") + std::strerror(errno));
  }
  s.root = fs::canonical(fs::absolute(s.options.path, ec).parent_path(), ec);
  if (ec) throw IoError(s.file, "cannot resolve the manifest's folder: " + ec.message());
  const ManifestOptions::Position& start = s.options.start;
  if (start.offset > 0) {
    s.in.seekg(static_cast<std::streamoff>(start.offset));
    if (!s.in) throw IoError(s.file, "cannot seek to byte " + std::to_string(start.offset));
  }
  s.chunk_offset = start.offset;
  s.line = start.line;
  s.requests = start.requests;
  s.last = start;
  s.peak_buffer_bytes = s.chunk.capacity() + s.text.capacity();
}

ManifestReader::~ManifestReader() = default;
ManifestReader::ManifestReader(ManifestReader&&) noexcept = default;
ManifestReader& ManifestReader::operator=(ManifestReader&&) noexcept = default;

std::optional<Request> ManifestReader::next() { return state_->next(); }
std::size_t ManifestReader::line() const noexcept { return state_->line; }
std::size_t ManifestReader::requests() const noexcept { return state_->requests; }
std::size_t ManifestReader::filtered() const noexcept { return state_->filtered; }
ManifestOptions::Position ManifestReader::position() const noexcept { return state_->last; }
std::size_t ManifestReader::peak_buffer_bytes() const noexcept { return state_->peak_buffer_bytes; }
std::size_t ManifestReader::id_set_bytes() const noexcept { return state_->ids.bytes(); }
const ManifestOptions& ManifestReader::options() const noexcept { return state_->options; }

ManifestError no_requests_error(const ManifestOptions& options, std::size_t line,
                                std::size_t filtered) {
  if (filtered == 0) {
    return ManifestError(
        options.path.string(), line, "",
        "no requests: the manifest is empty or holds only blank and comment lines");
  }
  std::string tasks;
  for (const Task t : options.tasks) tasks += std::string(tasks.empty() ? "" : ", ") + to_string(t);
  return ManifestError(options.path.string(), line, "",
                       "no requests of input.tasks [" + tasks + "]: all " + std::to_string(filtered) +
                           " request line" + (filtered == 1 ? " is" : "s are") + " of other tasks");
}

ValidationReport validate_manifest(const ManifestOptions& options, bool all_errors) {
  ValidationReport report;
  ManifestReader reader(options);
  for (;;) {
    try {
      const auto request = reader.next();
      if (!request) break;
      ++report.requests;
      if (!request->input_error.empty()) report.input_errors.push_back(request->input_error);
    } catch (const ManifestError& e) {
      report.errors.push_back(e);
      if (!all_errors) return report;
    }
  }
  report.filtered = reader.filtered();
  if (report.requests == 0 && report.errors.empty()) {
    report.errors.push_back(no_requests_error(options, reader.line(), report.filtered));
  }
  return report;
}

}  // namespace omnidp
