#include "omnidp/refcheck/wan_cases.hpp"

#include <cmath>
#include <memory>
#include <optional>
#include <regex>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/pipelines/adapters.hpp"
#include "omnidp/models/pipelines/image_preprocess.hpp"
#include "omnidp/models/wan/lora_names.hpp"
#include "omnidp/models/wan/pipeline.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
using models::SafetensorsFile;

namespace {

torch::Tensor cpu_float(const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat32); }

double flow_shift_of(const nlohmann::json& j) {
  if (j.contains("flow_shift")) return j.at("flow_shift").get<double>();
  if (j.contains("scheduler") && j.at("scheduler").is_string()) {
    static const std::regex re(R"(flow_shift\s*=\s*([0-9.eE+-]+))");
    std::smatch m;
    const auto text = j.at("scheduler").get<std::string>();
    if (std::regex_search(text, m, re)) return std::stod(m[1].str());
  }
  return 5.0;
}

std::vector<CaseResult> run_wan_pipeline(const fs::path& case_dir, const nlohmann::json& j,
                                         const RefcheckOptions& options, bool i2v) {
  const SafetensorsFile io(case_dir / "io.safetensors");
  const auto rel = [&](const char* key) {
    return case_dir / required<std::string>(j, key, case_dir);
  };
  models::wan::WanPipelineParts parts;
  parts.transformer =
      models::wan::load_wan_transformer(rel("transformer"), options.dtype, options.device);
  if (j.contains("transformer_2")) {
    parts.transformer_2 =
        models::wan::load_wan_transformer(rel("transformer_2"), options.dtype, options.device);
    parts.boundary_ratio = required<double>(j, "boundary_ratio", case_dir);
  }
  // LoRA adapters as diffusers' load_lora_weights took them (scripts/lora_fixtures.py):
  // [{"file", "scale", "expert": all | high_noise | low_noise}], fused into the experts as
  // model.lora does, or selected as a manifest line's set (RefcheckOptions::lora_per_request).
  std::unique_ptr<models::RequestAdapters> line_adapters;
  if (j.contains("lora")) {
    std::vector<LoraAdapter> adapters;
    for (const auto& entry : j.at("lora")) {
      LoraAdapter a;
      a.path = (case_dir / entry.at("file").get<std::string>()).string();
      a.scale = entry.at("scale").get<double>();
      a.expert = parse_lora_list(
                     "[{path: x, expert: " + entry.at("expert").get<std::string>() + "}]", "lora")
                     .front()
                     .expert;
      adapters.push_back(std::move(a));
    }
    std::vector<torch::nn::Module*> experts{parts.transformer.get()};
    if (parts.transformer_2) experts.push_back(parts.transformer_2.get());
    if (options.lora_per_request) {
      line_adapters =
          std::make_unique<models::RequestAdapters>(models::wan::wan_lora_names(), experts);
      (void)line_adapters->select(adapters);
    } else {
      models::fuse_job_adapters(adapters, experts, models::wan::wan_lora_names());
    }
  }
  // The pipeline's expand_timesteps, as its description states it (Wan2.2-TI2V-5B: True).
  parts.expand_timesteps =
      required<std::string>(j, "pipeline", case_dir).find("expand_timesteps=True") !=
      std::string::npos;
  parts.vae = models::wan::load_autoencoder_kl_wan(rel("vae"), options.dtype, options.device);
  // Wan2.1 I2V: CLIPVisionModel and CLIPImageProcessor, saved into one folder.
  if (j.contains("image_encoder")) {
    parts.image_encoder = models::vision::load_clip_image_encoder(
        rel("image_encoder"), rel("image_encoder"), options.dtype, options.device);
  }
  parts.model_name = "refcheck";
  parts.device_name = options.device.str();
  models::wan::WanPipeline pipeline(std::move(parts), options.device);

  models::wan::WanSampleInputs in;
  in.num_frames = required<int>(j, "num_frames", case_dir);
  in.height = required<int>(j, "height", case_dir);
  in.width = required<int>(j, "width", case_dir);
  in.num_inference_steps = required<int>(j, "steps", case_dir);
  in.guidance_scale = required<double>(j, "guidance_scale", case_dir);
  if (j.contains("guidance_scale_2")) in.guidance_scale_2 = j.at("guidance_scale_2").get<double>();
  in.flow_shift = flow_shift_of(j);
  in.cache = case_step_cache(j, case_dir);
  in.noise = io.tensor("latents");
  in.prompt_embeds = io.tensor("prompt_embeds");
  if (io.contains("negative_prompt_embeds"))
    in.negative_prompt_embeds = io.tensor("negative_prompt_embeds");
  const auto rgb_of = [&](const char* key) { return models::image_from_pixels(io.tensor(key)); };
  if (i2v) {
    const auto first = rgb_of("image_rgb_uint8");
    in.image = models::preprocess_image(first, in.height, in.width);
    std::optional<RgbImage> last;
    if (io.contains("last_image_rgb_uint8")) {
      last = rgb_of("last_image_rgb_uint8");
      in.last_image = models::preprocess_image(*last, in.height, in.width);
    }
    if (j.contains("image_encoder")) {
      in.image_embeds = pipeline.encode_image(first, last ? &*last : nullptr);
    }
  }

  std::vector<CaseResult> results;
  if (j.contains("latents_seed")) {
    const auto noise = models::randn_cpu(in.noise.sizes(), j.at("latents_seed").get<std::uint64_t>());
    results.push_back(
        compare("noise_from_seed", noise, in.noise, tolerance(ToleranceClass::exact, options)));
  }
  const auto out = pipeline.sample(in, nullptr);
  compare_pipeline(results, pipeline_bounds(i2v ? "wan_pipeline_i2v" : "wan_pipeline_t2v", options),
                   out.final_latents,
                   io.contains("final_latents") ? io.tensor("final_latents") : torch::Tensor(),
                   out.video, io.tensor("video"));
  compare_cache_decisions(results, j, out.cache.decisions);
  return results;
}

}  // namespace

std::vector<CaseResult> run_wan_transformer(const fs::path& case_dir,
                                            const nlohmann::json& /*case_json*/,
                                            const RefcheckOptions& options) {
  const SafetensorsFile io(case_dir / "io.safetensors");
  auto model = models::wan::load_wan_transformer(case_dir, options.dtype, options.device);
  c10::InferenceMode inference;
  const auto dtype = model->dtype();
  const auto hidden = io.tensor("hidden_states").to(options.device, dtype);
  const auto context = io.tensor("encoder_hidden_states").to(options.device, dtype);
  const double tol = tolerance(ToleranceClass::forward, options);
  std::vector<CaseResult> results;
  const std::vector<std::pair<const char*, const char*>> checks{
      {"timestep", "out_scalar_t"}, {"timestep_per_token", "out_per_token_t"}};
  for (const auto& [input, expected] : checks) {
    if (!io.contains(input) || !io.contains(expected)) continue;
    const auto t = io.tensor(input).to(options.device);
    const auto out = model->forward(hidden, t, context);
    results.push_back(compare(expected, cpu_float(out), io.tensor(expected), tol));
  }
  return results;
}

std::vector<CaseResult> run_wan_pipeline_t2v(const fs::path& case_dir,
                                             const nlohmann::json& case_json,
                                             const RefcheckOptions& options) {
  return run_wan_pipeline(case_dir, case_json, options, false);
}

std::vector<CaseResult> run_wan_pipeline_i2v(const fs::path& case_dir,
                                             const nlohmann::json& case_json,
                                             const RefcheckOptions& options) {
  return run_wan_pipeline(case_dir, case_json, options, true);
}

}  // namespace omnidp::refcheck
