#include "omnidp/models/pipeline.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/size_buckets.hpp"
#include "omnidp/models/snapshot_digest.hpp"

namespace omnidp {
namespace fs = std::filesystem;

namespace {
nlohmann::json read_config(const fs::path& file) {
  std::ifstream in(file);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(file.string(), std::string("bad config: ") + e.what());
  }
}

// HunyuanVideo-1.5 snapshot facts: transformer/config.json target_size (640, the released 480p
// configuration, without model.path or the key) and, for pretrained weights, the one task the
// snapshot serves (model_index.json's pipeline class, else the transformer's task_type).
void hv15_facts(const ModelConfig& model, ModelInfo& info) {
  constexpr int kReleased = 640;
  info.image_size_target = kReleased;
  if (model.path.empty()) return;
  std::error_code ec;
  const auto config = fs::path(model.path) / "transformer" / "config.json";
  if (fs::is_regular_file(config, ec)) {
    const auto j = read_config(config);
    try {
      info.image_size_target = j.value("target_size", kReleased);
      if (model.weights == WeightsSource::pretrained && j.contains("task_type")) {
        const auto task = j.at("task_type").get<std::string>();
        if (task != "t2v" && task != "i2v") throw WeightsError(config.string(), "task_type '" + task + "' is not t2v or i2v");
        info.snapshot_task = task == "t2v" ? Task::t2v : Task::i2v;
        info.snapshot_task_origin = "task_type in " + config.string();
      }
    } catch (const nlohmann::json::exception& e) {
      throw WeightsError(config.string(), std::string("bad config: ") + e.what());
    }
    if (info.image_size_target <= 0) throw WeightsError(config.string(), "target_size must be > 0");
  }
  const auto index = fs::path(model.path) / "model_index.json";
  if (model.weights == WeightsSource::pretrained && fs::is_regular_file(index, ec)) {
    const auto cls = read_config(index).value("_class_name", std::string());
    if (cls == "HunyuanVideo15Pipeline" || cls == "HunyuanVideo15ImageToVideoPipeline") {
      info.snapshot_task = cls == "HunyuanVideo15Pipeline" ? Task::t2v : Task::i2v;
      info.snapshot_task_origin = cls + " in " + index.string();
    }
  }
}
}  // namespace

ModelInfo describe_model(const ModelConfig& model) {
  ModelInfo info;
  info.name = model.name;
  if (model.name == "synthetic") {
    info.patch_h = info.patch_w = 1;
    info.hidden_size = 1;
    info.num_layers = 1;
  } else if (model.name == "wan2.2-ti2v-5b") {
    info.patch_t = 1; info.patch_h = 2; info.patch_w = 2;
    info.hidden_size = 3072; info.num_layers = 30;
  } else if (model.name == "tiny-wan") {
    info.patch_t = 1; info.patch_h = 2; info.patch_w = 2;
    info.hidden_size = 128; info.num_layers = 2;
  } else if (model.name == "hunyuanvideo-1.5") {
    info.patch_t = 1; info.patch_h = 1; info.patch_w = 1;
    info.hidden_size = 2048; info.num_layers = 54;
    info.default_guidance_scale = 6.0;  // the released 480p pipelines: CFG 6, shift 5
    info.default_flow_shift = 5.0;
    hv15_facts(model, info);
  } else {
    throw ConfigError("model.name", "unknown model '" + model.name +
                                        "' (known: synthetic, tiny-wan, wan2.2-ti2v-5b, hunyuanvideo-1.5)");
  }
  return info;
}

std::string weights_identity(const ModelConfig& model) {
  if (model.name == "synthetic") return "synthetic";
  if (model.weights == WeightsSource::random) return "random:" + std::to_string(model.weights_seed);
  return "snapshot-sha256:" + digest_snapshot(fs::path(model.path)).sha256;
}

namespace {

// The config file of a snapshot component folder: config.json, else `alt_name` (what
// diffusers' save_pretrained writes for guiders and schedulers).
std::optional<fs::path> component_file(const fs::path& folder, const char* alt_name) {
  std::error_code ec;
  for (const char* name : {"config.json", alt_name}) {
    if (fs::is_regular_file(folder / name, ec)) return folder / name;
  }
  return std::nullopt;
}

// `key` of a snapshot config file as a finite number accepted by `check`, or nullopt when
// the file does not hold the key (or holds null).
std::optional<double> snapshot_number(const fs::path& file, const char* key,
                                      std::string (*check)(double)) {
  const auto j = read_config(file);
  if (!j.is_object()) throw WeightsError(file.string(), "bad config: not a JSON object");
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw WeightsError(file.string(), std::string(key) + " is not a number");
  const double value = it->get<double>();
  if (const std::string reason = check(value); !reason.empty()) {
    throw WeightsError(file.string(), std::string(key) + ": " + reason);
  }
  return value;
}

}  // namespace

std::string format_value(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

GenerationDefaults resolve_generation_defaults(const Config& config) {
  const ModelInfo info = describe_model(config.model);
  GenerationDefaults d{{info.default_guidance_scale, "model default"},
                       {info.default_flow_shift, "model default"}};
  const auto& m = config.model;
  const bool snapshot = !m.path.empty() && (m.name == "hunyuanvideo-1.5" || m.name == "wan2.2-ti2v-5b");
  if (snapshot) {
    const fs::path root(m.path);
    const auto relative = [&root](const fs::path& file) { return file.lexically_relative(root).string(); };
    if (!config.generation.guidance_scale && m.name == "hunyuanvideo-1.5") {  // Wan has no guider
      if (const auto file = component_file(root / "guider", "guider_config.json")) {
        if (const auto v = snapshot_number(*file, "guidance_scale", &check_guidance_scale)) {
          d.guidance_scale = {*v, "snapshot " + relative(*file)};
        }
      }
    }
    const auto file = config.generation.flow_shift
                          ? std::nullopt
                          : component_file(root / "scheduler", "scheduler_config.json");
    if (file) {
      // FlowMatchEulerDiscreteScheduler (HunyuanVideo-1.5): shift; UniPC (Wan): flow_shift.
      const auto cls = read_config(*file).value("_class_name", std::string());
      const char* key = cls == "UniPCMultistepScheduler" || (cls.empty() && m.name != "hunyuanvideo-1.5")
                            ? "flow_shift"
                            : "shift";
      if (const auto v = snapshot_number(*file, key, &check_flow_shift)) {
        d.flow_shift = {*v, "snapshot " + relative(*file)};
      }
    }
  }
  if (config.generation.guidance_scale) {
    d.guidance_scale = {*config.generation.guidance_scale, "yaml generation.guidance_scale"};
  }
  if (config.generation.flow_shift) {
    d.flow_shift = {*config.generation.flow_shift, "yaml generation.flow_shift"};
  }
  return d;
}

std::string describe_generation_defaults(const GenerationDefaults& d) {
  return "guidance_scale " + format_value(d.guidance_scale.value) + " (" + d.guidance_scale.origin +
         "), flow_shift " + format_value(d.flow_shift.value) + " (" + d.flow_shift.origin + ")";
}

std::string effective_config_yaml(const Config& config) {
  return to_yaml(config) + "# generation defaults: " +
         describe_generation_defaults(resolve_generation_defaults(config)) + "\n";
}

ManifestOptions job_manifest_options(const Config& config) {
  ManifestOptions options = manifest_options(config, weights_identity(config.model));
  const GenerationDefaults defaults = resolve_generation_defaults(config);
  options.defaults.guidance_scale = defaults.guidance_scale.value;
  options.defaults.flow_shift = defaults.flow_shift.value;
  const ModelInfo info = describe_model(config.model);
  options.size_multiple = info.size_multiple();
  options.only_task = info.snapshot_task;
  options.only_task_origin = info.snapshot_task_origin;
  if (info.image_size_target > 0) {
    options.size_from_image = [target = info.image_size_target, patch = info.vae_spatial](int h, int w) {
      const auto size = models::hv15_bucket_size(h, w, target, patch);
      return std::pair{size.height, size.width};
    };
  }
  return options;
}

}  // namespace omnidp
