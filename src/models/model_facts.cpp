#include "omnidp/models/model_facts.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/config/effective_yaml.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/size_buckets.hpp"
#include "omnidp/models/snapshot_digest.hpp"

namespace omnidp {
namespace fs = std::filesystem;

ModelInfo describe_model(const ModelConfig& model) {
  const auto* registration = models::model_table().find(model.name);
  if (registration == nullptr) {
    throw ConfigError(
        "model.name", "model '" + model.name + "' is not registered in this process (registered: " + [] {
          std::string out;
          for (const auto& n : models::model_table().names()) out += (out.empty() ? "" : ", ") + n;
          return out;
        }() + ")");
  }
  ModelInfo info = registration->facts;
  if (registration->describe) registration->describe(model, info);
  if (registration->cost) info.cost_prior = registration->cost(info);
  return info;
}

std::string weights_identity(const ModelConfig& model) {
  const auto* registration = models::model_table().find(model.name);
  if (registration != nullptr && !registration->has_weights) return model.name;
  // The job's LoRA adapters (model.lora) are not part of it: like model.dtype they are numerics
  // of the job (the profile's `lora`), so a resume with others is refused and --resume-mixed
  // keeps the rows made with the old ones (docs/models.md, "LoRA").
  if (model.weights == WeightsSource::random) return fmt::format("random:{}", model.weights_seed);
  return "snapshot-sha256:" + digest_snapshot(fs::path(model.path)).sha256;
}

GenerationDefaults resolve_generation_defaults(const Config& config) {
  const ModelInfo info = describe_model(config.model);
  GenerationDefaults d{{info.default_guidance_scale, "model default"},
                       {info.default_flow_shift, "model default"}};
  const auto* registration = models::model_table().find(config.model.name);
  if (registration != nullptr && registration->snapshot_defaults && !config.model.path.empty()) {
    registration->snapshot_defaults(config, d);
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
  return fmt::format("guidance_scale {} ({}), flow_shift {} ({})", shortest(d.guidance_scale.value),
                     d.guidance_scale.origin, shortest(d.flow_shift.value), d.flow_shift.origin);
}

std::string effective_config_yaml(const Config& config) {
  return to_run_yaml(config) + "# generation defaults: " +
         describe_generation_defaults(resolve_generation_defaults(config)) + "\n";
}

ManifestOptions job_manifest_options(const Config& config) {
  ManifestOptions options = manifest_options(config, weights_identity(config.model));
  const GenerationDefaults defaults = resolve_generation_defaults(config);
  options.defaults.guidance_scale = defaults.guidance_scale.value;
  options.defaults.flow_shift = defaults.flow_shift.value;
  const ModelInfo info = describe_model(config.model);
  if (!info.two_experts && config.generation.guidance_scale_2) {
    throw ConfigError("generation.guidance_scale_2",
                      "model '" + config.model.name +
                          "' has one transformer: guidance_scale_2 is the low-noise expert's "
                          "guidance of a two-expert model (Wan2.2-A14B)");
  }
  if (!info.two_experts && config.model.expert_residency == ExpertResidency::swap) {
    throw ConfigError("model.expert_residency",
                      "model '" + config.model.name +
                          "' has one transformer: swap moves the idle expert of a two-expert "
                          "model (Wan2.2-A14B) between host and GPU memory");
  }
  options.guidance_scale_2 = info.two_experts;
  options.lora = info.lora;
  if (!config.model.lora.empty()) {
    check_lora_experts(config.model.lora, info.two_experts, "model.lora");
  }
  if (const auto* registration = models::model_table().find(config.model.name);
      registration != nullptr && registration->lora_problem) {
    for (std::size_t i = 0; i < config.model.lora.size(); ++i) {
      const auto& adapter = config.model.lora[i];
      if (const auto problem = registration->lora_problem(config.model, adapter); !problem.empty()) {
        throw ConfigError(fmt::format("model.lora[{}].path", i), adapter.path + ": " + problem);
      }
    }
    options.lora_problem = [model = config.model, check = registration->lora_problem](
                               const LoraAdapter& adapter) { return check(model, adapter); };
  }
  options.last_image = info.last_image;
  options.requires_last_image = info.requires_last_image;
  options.step_cache = info.step_cache;
  options.size_multiple = info.size_multiple();
  options.only_task = info.snapshot_task;
  options.only_task_origin = info.snapshot_task_origin;
  if (info.image_size_target > 0) {
    options.size_from_image = [target = info.image_size_target, patch = info.vae_spatial](int h,
                                                                                          int w) {
      const auto size = models::hv15_bucket_size(h, w, target, patch);
      return std::pair{size.height, size.width};
    };
  } else if (info.image_size_from_area) {
    options.size_from_image = [area = static_cast<double>(config.generation.height) *
                                      config.generation.width,
                               multiple = info.size_multiple()](int h, int w) {
      const auto size = models::area_size(h, w, area, multiple);
      for (const int side : {size.height, size.width}) {
        // An extreme aspect ratio: the side a line could not set either.
        if (std::string reason = check_frame_size(side); !reason.empty()) {
          throw std::invalid_argument(
              fmt::format("{} x {} at the area of generation.height x width: {}", size.height,
                          size.width, reason));
        }
      }
      return std::pair{size.height, size.width};
    };
  }
  if (config.generation.cache.policy != CachePolicy::off && !info.step_cache) {
    throw ConfigError("generation.cache",
                      "model '" + config.model.name +
                          "' has no transformer block stack to cache: a step cache applies to the "
                          "Wan family and hunyuanvideo-1.5 (docs/models.md, \"Step caching\")");
  }
  return options;
}

}  // namespace omnidp
