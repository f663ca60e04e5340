#include "omnidp/manifest/manifest.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <system_error>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/manifest/chunked_lines.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/id_set.hpp"
#include "omnidp/manifest/input_files.hpp"
#include "omnidp/manifest/input_paths.hpp"
#include "omnidp/manifest/line_text.hpp"

namespace omnidp {
namespace fs = std::filesystem;

// ----------------------------------------------------------------------------- public ---

ManifestOptions manifest_options(const Config& config, std::string weights_identity) {
  ManifestOptions options;
  options.path = config.input.manifest;
  options.defaults = config.generation;
  options.model_name = config.model.name;
  options.weights_identity = std::move(weights_identity);
  options.max_line_bytes = config.input.max_line_bytes;
  options.max_image_pixels = config.input.max_image_pixels;
  options.max_image_aspect = config.input.max_image_aspect;
  std::vector<Task> tasks;
  for (const auto& task : config.input.tasks)
    tasks.push_back(task == "i2v" ? Task::i2v : Task::t2v);
  const bool all = std::find(tasks.begin(), tasks.end(), Task::t2v) != tasks.end() &&
                   std::find(tasks.begin(), tasks.end(), Task::i2v) != tasks.end();
  if (!all) options.tasks = std::move(tasks);
  return options;
}

struct ManifestReader::State {
  State(ManifestOptions opts)
      : options(std::move(opts)),
        file(options.path.string()),
        lines(options.path, options.max_line_bytes, options.start.offset, options.start.line),
        requests(options.start.requests),
        last(options.start) {
    std::error_code ec;
    root = fs::canonical(fs::absolute(options.path, ec).parent_path(), ec);
    if (ec) throw IoError(file, "cannot resolve the manifest's folder: " + ec.message());
  }

  ManifestOptions options;
  std::string file;  // options.path as shown in messages
  fs::path root;     // canonical folder of the manifest
  ChunkedLines lines;
  std::string text;  // the current line, at most max_line_bytes + 1 bytes
  std::size_t requests = 0;
  std::size_t filtered = 0;        // lines of tasks not in options.tasks
  ManifestOptions::Position last;  // of the request returned last
  IdSet ids;
  std::map<std::string, std::string> lora_checked;  // sha256@expert -> lora_problem's answer

  [[nodiscard]] bool wanted(Task task) const {
    return options.tasks.empty() ||
           std::find(options.tasks.begin(), options.tasks.end(), task) != options.tasks.end();
  }

  // A line's adapters: the model takes them, each expert is one this model has, and (reading
  // inputs) each file is a regular file whose hash and model check (options.lora_problem) are
  // done once per file. Every fault is a ManifestError: no request runs with a bad adapter.
  void check_lora(const ManifestLine& parsed, Request& r) {
    if (!options.lora) {
      parsed.fail(ManifestField::lora,
                  "the model takes no LoRA adapters (the Wan family and hunyuanvideo-1.5 do)");
    }
    try {
      check_lora_experts(r.lora, options.guidance_scale_2, field_name(ManifestField::lora));
    } catch (const ConfigError& e) {
      throw ManifestError(file, r.line, e.path(), e.message());
    }
    if (!options.read_inputs) return;
    for (std::size_t i = 0; i < r.lora.size(); ++i) {
      auto& a = r.lora[i];
      const std::string at = fmt::format("lora[{}].path", i);
      if (const auto problem = regular_file_problem(a.path); !problem.empty()) {
        throw ManifestError(file, r.line, at, a.path + ": " + problem);
      }
      try {
        const auto stamp = file_stamp(a.path);
        a.sha256 = options.hash_cache && stamp ? options.hash_cache->hash(a.path, *stamp)
                                               : sha256_file_hex(a.path);
      } catch (const Error& e) {
        throw ManifestError(file, r.line, at, e.what());
      }
      if (!options.lora_problem) continue;
      const std::string key =
          a.sha256 + "@" + to_string(resolve_lora_expert(a, options.guidance_scale_2));
      auto [it, fresh] = lora_checked.try_emplace(key);
      if (fresh) it->second = options.lora_problem(a);
      if (!it->second.empty()) throw ManifestError(file, r.line, at, a.path + ": " + it->second);
    }
  }

  std::optional<Request> next() {
    for (;;) {
      bool too_long = false;
      if (!lines.next(text, too_long)) return std::nullopt;
      const std::size_t line = lines.line();
      if (too_long) {
        throw ManifestError(
            file, line, "",
            fmt::format("line is longer than {} bytes (input.max_line_bytes); refused",
                        options.max_line_bytes));
      }
      if (is_blank_or_comment(text)) continue;
      const ManifestLine parsed(text, file, line);
      std::string id = parsed.id();
      if (const std::size_t first = ids.insert(id, line); first != 0) {
        parsed.fail(ManifestField::id,
                    fmt::format("duplicate id {}: first used on line {}", in_quotes(id), first));
      }
      Request r = parsed.request(std::move(id), options.defaults, options.size_multiple);
      for (auto [path, field] : {std::pair{&r.image, ManifestField::image},
                                 std::pair{&r.last_image, ManifestField::last_image},
                                 std::pair{&r.prompt_embeds, ManifestField::prompt_embeds}}) {
        if (!path->empty()) *path = resolve_input_path(*path, root, file, line, field_name(field));
      }
      for (std::size_t i = 0; i < r.lora.size(); ++i) {
        r.lora[i].path =
            resolve_input_path(r.lora[i].path, root, file, line, fmt::format("lora[{}].path", i));
      }
      if (!wanted(r.task)) {
        ++filtered;  // input.tasks: checked, but not this job's
        continue;
      }
      if (options.only_task && r.task != *options.only_task) {
        parsed.fail(ManifestField::task,
                    std::string("task ") + to_string(r.task) + ", but the snapshot serves " +
                        to_string(*options.only_task) + " only (" + options.only_task_origin +
                        "; input.tasks selects the lines a job runs)");
      }
      if (!options.guidance_scale_2 && r.guidance_scale_2) {
        parsed.fail(ManifestField::guidance_scale_2,
                    "the model has one transformer (guidance_scale_2 is the low-noise expert's "
                    "guidance of a two-expert model, Wan2.2-A14B)");
      }
      if (!options.last_image && !r.last_image.empty()) {
        parsed.fail(ManifestField::last_image,
                    "the model takes no last image (first-last-frame to video: Wan2.2-I2V-A14B "
                    "and the Wan2.1-FLF2V checkpoints)");
      }
      if (options.requires_last_image && r.task == Task::i2v && r.last_image.empty()) {
        parsed.fail(ManifestField::task,
                    "the snapshot is first-last-frame to video (its transformer's "
                    "pos_embed_seq_len): an i2v line needs \"last_image\"");
      }
      if (!options.step_cache && r.cache && r.cache->policy != CachePolicy::off) {
        parsed.fail(ManifestField::cache,
                    "the model has no transformer block stack to cache: a step cache applies to "
                    "the Wan family and hunyuanvideo-1.5 (docs/models.md, \"Step caching\")");
      }
      if (!r.lora.empty()) check_lora(parsed, r);
      if (options.read_inputs) read_input_files(r, r.line_sets_size, options, file);
      last = ManifestOptions::Position{lines.line_offset(), line - 1, requests};
      r.index = requests++;
      return r;
    }
  }
};

ManifestReader::ManifestReader(ManifestOptions options)
    : state_(std::make_unique<State>(std::move(options))) {}

ManifestReader::~ManifestReader() = default;
ManifestReader::ManifestReader(ManifestReader&&) noexcept = default;
ManifestReader& ManifestReader::operator=(ManifestReader&&) noexcept = default;

std::optional<Request> ManifestReader::next() { return state_->next(); }
std::size_t ManifestReader::line() const noexcept { return state_->lines.line(); }
std::size_t ManifestReader::requests() const noexcept { return state_->requests; }
std::size_t ManifestReader::filtered() const noexcept { return state_->filtered; }
ManifestOptions::Position ManifestReader::position() const noexcept { return state_->last; }
std::size_t ManifestReader::peak_buffer_bytes() const noexcept {
  return state_->lines.peak_buffer_bytes();
}
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
  return ManifestError(
      options.path.string(), line, "",
      fmt::format("no requests of input.tasks [{}]: all {} request line{} of other tasks", tasks,
                  filtered, (filtered == 1 ? " is" : "s are")));
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
