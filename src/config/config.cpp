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
#include "yaml_schema.hpp"

namespace omnidp {
namespace detail {
extern const char* const kDefaultConfigYaml;  // generated from configs/tiny.yaml at configure time
}  // namespace detail

namespace {

using namespace config_schema;  // the config area's YAML vocabulary (yaml_schema.hpp)

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
          step_cache_field()}});
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
