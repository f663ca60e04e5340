#include "omnidp/refcheck/hv15_cases.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/hv15/vae.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/pipelines/guided_step.hpp"
#include "omnidp/models/schedulers/flow_match_euler.hpp"
#include "omnidp/models/size_buckets.hpp"
#include "omnidp/models/snapshot_config.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {

// A value given both in case.json and in a component config must agree.
void check_agrees(const nlohmann::json& j, const char* key, double config_value,
                  const std::string& config, const fs::path& case_dir) {
  if (!j.contains(key)) return;
  const auto v = j.at(key).get<double>();
  if (std::abs(v - config_value) > 1e-12 * std::max(1.0, std::abs(v))) {
    throw ModelError(
        fmt::format("case.json '{}' = {:f} but {} says {:f}", key, v, config, config_value),
        {case_dir.string()});
  }
}

// A transformer folder whose index names a shard the folder lacks (a MeanFlow fixture: shard 1
// is another fixture's file, which its case.json's transformer_shard_1 names): a temporary
// folder of links to its files and to that shard, removed with this object; otherwise the
// folder itself.
class StagedTransformer {
 public:
  explicit StagedTransformer(const fs::path& dir) : path_(dir) {
    const MissingShards missing = missing_shards(dir);
    if (missing.names.empty() || missing.shard_1.empty()) return;
    const fs::path shard_1 = (dir / missing.shard_1).lexically_normal();
    static int serial = 0;
    staged_ = fs::temp_directory_path() / fmt::format("omnidp-refcheck-{}-{}-{}", ::getpid(),
                                                      ++serial, dir.filename().string());
    fs::remove_all(staged_);
    fs::create_directories(staged_);
    for (const auto& entry : fs::directory_iterator(dir)) {
      fs::create_symlink(fs::absolute(entry.path()), staged_ / entry.path().filename());
    }
    for (const auto& shard : missing.names) {
      fs::create_symlink(fs::absolute(shard_1), staged_ / shard);
    }
    path_ = staged_;
  }
  ~StagedTransformer() {
    std::error_code ignored;
    if (!staged_.empty()) fs::remove_all(staged_, ignored);
  }
  StagedTransformer(const StagedTransformer&) = delete;
  StagedTransformer& operator=(const StagedTransformer&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
  fs::path staged_;
};

hv::TextConditioning conditioning(const models::SafetensorsFile& io, const std::string& prefix) {
  hv::TextConditioning c;
  c.embeds = io.tensor(prefix + "prompt_embeds");
  c.mask = io.tensor(prefix + "prompt_embeds_mask");
  if (io.contains(prefix + "prompt_embeds_2")) {
    c.embeds_2 = io.tensor(prefix + "prompt_embeds_2");
    c.mask_2 = io.tensor(prefix + "prompt_embeds_mask_2");
  }
  return c;
}

CaseResult exact_size(const std::string& check, int ours_h, int ours_w, int ref_h, int ref_w) {
  CaseResult r;
  r.check = check;
  r.max_rel_error = std::max(std::abs(ours_h - ref_h), std::abs(ours_w - ref_w));
  r.tolerance = 0.0;
  r.status = r.max_rel_error == 0.0 ? CaseResult::Status::pass : CaseResult::Status::fail;
  r.note = fmt::format("ours {}x{}, case.json {}x{}", ours_h, ours_w, ref_h, ref_w);
  return r;
}

std::vector<CaseResult> run_hv15_pipeline(const fs::path& case_dir, const nlohmann::json& j,
                                          const RefcheckOptions& options, bool i2v,
                                          const Hv15ImageEncoderLoader& load_image_encoder) {
  torch::NoGradGuard no_grad;
  const models::SafetensorsFile io(case_dir / "io.safetensors");
  const auto rel = [&](const char* key) {
    return case_dir / required<std::string>(j, key, case_dir);
  };

  hv::PipelineParts parts;
  const StagedTransformer transformer(rel("transformer"));
  parts.transformer = hv::load_transformer(transformer.path(), options.dtype, options.device);
  parts.vae = hv::load_vae(rel("vae"), options.dtype, options.device);
  const auto guider = models::component_file(case_dir / "guider", "guider_config.json");
  const auto scheduler = models::component_file(case_dir / "scheduler", "scheduler_config.json");
  if (!guider || !scheduler) {
    throw ModelError(
        "the case needs guider/ and scheduler/ configs (config.json, guider_config.json or "
        "scheduler_config.json)",
        {case_dir.string()});
  }
  parts.guidance = models::guidance_options_from_json(models::read_json(*guider), guider->string());
  parts.scheduler =
      hv::scheduler_options_from_json(models::read_json(*scheduler), scheduler->string());
  parts.model_name = "refcheck";
  parts.device_name = options.device.str();
  const auto to = parts.transformer->options();
  const int spatial = static_cast<int>(parts.vae->options().spatial_compression_ratio);

  hv::SampleInputs in;
  in.num_frames = required<int>(j, "num_frames", case_dir);
  in.num_inference_steps = required<int>(j, "steps", case_dir);
  in.cache = case_step_cache(j, case_dir);
  // The guider's and scheduler's configs are what the reference ran with; case.json repeats them.
  in.guidance_scale = parts.guidance.guidance_scale
                          ? *parts.guidance.guidance_scale
                          : required<double>(j, "guidance_scale", case_dir);
  check_agrees(j, "guidance_scale", in.guidance_scale, guider->string(), case_dir);
  in.flow_shift = parts.scheduler.shift;
  check_agrees(j, "flow_shift", in.flow_shift, scheduler->string(), case_dir);
  in.prompt = conditioning(io, "");
  if (io.contains("negative_prompt_embeds")) in.negative = conditioning(io, "negative_");

  std::vector<CaseResult> results;
  // What the reference's transformer received on each call (scripts/hv15_variant_fixtures.py
  // records it): one or two calls per step as the guider has one or two conditions, the step's
  // timestep, and timestep_r (-1: none) = the next timestep for a MeanFlow transformer on I2V.
  if (io.contains("call_timestep") && io.contains("call_timestep_r")) {
    models::FlowMatchEulerOptions so = parts.scheduler;
    so.shift = in.flow_shift;
    models::FlowMatchEulerScheduler call_scheduler(so);
    call_scheduler.set_timesteps(in.num_inference_steps);
    const auto& timesteps = call_scheduler.timesteps();
    const bool with_r = hv::meanflow_timestep_r(to, i2v);
    std::vector<float> calls;
    for (int i = 0; i < in.num_inference_steps; ++i) {
      const int branches =
          models::cfg_enabled(in.guidance_scale, parts.guidance, i, in.num_inference_steps) ? 2 : 1;
      const float t = timesteps[i].item<float>();
      const float r = with_r ? hv::next_timestep(timesteps, i).item<float>() : -1.0F;
      for (int b = 0; b < branches; ++b) calls.insert(calls.end(), {t, r});
    }
    const auto ours = torch::tensor(calls).view({static_cast<std::int64_t>(calls.size() / 2), 2});
    const auto ref = torch::stack({io.tensor("call_timestep"), io.tensor("call_timestep_r")}, 1);
    results.push_back(compare("transformer_calls", ours, ref,
                              tolerance(ToleranceClass::scheduler, options),
                              fmt::format("{} calls (timestep, timestep_r)", ours.size(0))));
  }
  std::unique_ptr<models::ImageEncoder> encoder;
  RgbImage resized;
  if (i2v) {
    const RgbImage image = models::image_from_pixels(io.tensor("image_rgb_uint8"));
    // The pipeline's own size choice from the image and the transformer's target_size.
    const auto size = models::hv15_bucket_size(image.height, image.width,
                                               static_cast<int>(to.target_size), spatial);
    in.height = size.height;
    in.width = size.width;
    results.push_back(exact_size("size_from_image", in.height, in.width,
                                 required<int>(j, "height", case_dir),
                                 required<int>(j, "width", case_dir)));
    resized = omnidp::models::resize_and_crop(image, in.width, in.height);
    in.image = omnidp::models::image_to_tensor(resized);
    if (load_image_encoder) {
      const auto encoder_dir = case_dir / required<std::string>(j, "image_encoder", case_dir);
      const auto processor_dir =
          case_dir / (j.contains("feature_extractor")
                          ? j.at("feature_extractor").get<std::string>()
                          : required<std::string>(j, "image_encoder", case_dir));
      encoder = load_image_encoder(encoder_dir, processor_dir, options);
    }
  } else {
    in.height = required<int>(j, "height", case_dir);
    in.width = required<int>(j, "width", case_dir);
  }
  hv::HunyuanVideo15Pipeline pipeline(std::move(parts), options.device);

  const auto shape = pipeline.latent_shape(in.num_frames, in.height, in.width);
  in.noise = models::randn_cpu(shape, required<std::uint64_t>(j, "latents_seed", case_dir));
  results.push_back(compare("noise_from_seed", in.noise, io.tensor("latents"),
                            tolerance(ToleranceClass::exact, options)));

  if (i2v) {
    if (io.contains("image_embeds")) {
      in.image_embeds = io.tensor("image_embeds");
    } else if (encoder) {
      in.image_embeds = encoder->encode(resized);
    } else {
      // The reference encodes the resized and cropped image with SigLIP; without those tokens
      // the denoising cannot be compared (the condition frame's VAE encoding is checked by
      // hv15_vae_encode, the size and noise above).
      results.push_back(skip("final_latents", "needs the SigLIP image encoder"));
      results.push_back(skip("video", "needs the SigLIP image encoder"));
      return results;
    }
  }
  const auto out = pipeline.sample(in, nullptr);
  compare_pipeline(results, pipeline_bounds(i2v ? "hv15_pipeline_i2v" : "hv15_pipeline_t2v", options),
                   out.final_latents, io.tensor("final_latents"), out.video, io.tensor("video"));
  compare_cache_decisions(results, j, out.cache.decisions);
  return results;
}

}  // namespace

std::vector<CaseResult> run_hv15_transformer(const fs::path& case_dir,
                                             const nlohmann::json& /*case_json*/,
                                             const RefcheckOptions& options) {
  torch::NoGradGuard no_grad;
  const auto config = models::read_json(case_dir / "config.json");
  hv::HunyuanVideo15Transformer3DModel model(
      hv::TransformerOptions::from_json(config, (case_dir / "config.json").string()));
  const StagedTransformer weights(case_dir);
  models::load_state_dict(*model, models::Checkpoint::open(weights.path()), options.dtype,
                          options.device);
  model->eval();

  const models::SafetensorsFile io(case_dir / "io.safetensors");
  auto get = [&](const char* name) { return io.tensor(name).to(options.device); };
  hv::TransformerInputs in;
  in.hidden_states = get("hidden_states");
  in.timestep = get("timestep");
  in.encoder_hidden_states = get("encoder_hidden_states");
  in.encoder_attention_mask = get("encoder_attention_mask");
  in.encoder_hidden_states_2 = get("encoder_hidden_states_2");
  in.encoder_attention_mask_2 = get("encoder_attention_mask_2");
  if (io.contains("image_embeds")) in.image_embeds = get("image_embeds");
  if (io.contains("timestep_r")) in.timestep_r = get("timestep_r");
  const auto expected = io.tensor("out");
  const double tol = tolerance(ToleranceClass::forward, options);

  std::vector<CaseResult> results;
  model->set_text_padding(hv::TextPadding::mask);
  results.push_back(
      compare("out", model->forward(in).to(torch::kCPU, torch::kFloat32), expected, tol));
  if (in.hidden_states.size(0) == 1) {
    model->set_text_padding(hv::TextPadding::drop);
    results.push_back(compare("out_drop_padding",
                              model->forward(in).to(torch::kCPU, torch::kFloat32), expected, tol));
  }
  return results;
}

std::vector<CaseResult> run_hv15_vae(const fs::path& case_dir, const nlohmann::json& /*case_json*/,
                                     const RefcheckOptions& options) {
  torch::NoGradGuard no_grad;
  const auto config = models::read_json(case_dir / "config.json");
  hv::AutoencoderKLHunyuanVideo15 vae(
      hv::VaeOptions::from_json(config, (case_dir / "config.json").string()));
  models::load_state_dict(*vae, models::Checkpoint::open(case_dir), options.dtype, options.device);
  vae->eval();

  const models::SafetensorsFile io(case_dir / "io.safetensors");
  const double tol = tolerance(ToleranceClass::forward, options);
  std::vector<CaseResult> results;
  if (io.contains("latents") && io.contains("decoded")) {
    const auto decoded = vae->decode(io.tensor("latents").to(options.device));
    results.push_back(
        compare("decoded", decoded.to(torch::kCPU, torch::kFloat32), io.tensor("decoded"), tol));
  }
  // encode: the Wan case's names (`image` or `video` in, `encoded_mean` / `encoded_logvar` out).
  const char* input = io.contains("image") ? "image" : "video";
  if (io.contains(input) && io.contains("encoded_mean")) {
    const auto moments =
        vae->encode_moments(io.tensor(input).to(options.device)).to(torch::kCPU, torch::kFloat32);
    const auto latent = vae->options().latent_channels;
    results.push_back(
        compare("encoded_mean", moments.slice(1, 0, latent), io.tensor("encoded_mean"), tol));
    if (io.contains("encoded_logvar")) {
      // DiagonalGaussianDistribution clamps logvar to [-30, 20].
      results.push_back(compare("encoded_logvar", moments.slice(1, latent).clamp(-30.0, 20.0),
                                io.tensor("encoded_logvar"), tol));
    }
  }
  if (results.empty())
    results.push_back(
        skip("decoded", "io.safetensors has neither latents/decoded nor image/encoded_mean"));
  return results;
}

std::vector<CaseResult> run_hv15_pipeline_t2v(const fs::path& case_dir,
                                              const nlohmann::json& case_json,
                                              const RefcheckOptions& options) {
  return run_hv15_pipeline(case_dir, case_json, options, false, {});
}

std::vector<CaseResult> run_hv15_pipeline_i2v(const fs::path& case_dir,
                                              const nlohmann::json& case_json,
                                              const RefcheckOptions& options,
                                              const Hv15ImageEncoderLoader& load_image_encoder) {
  return run_hv15_pipeline(case_dir, case_json, options, true, load_image_encoder);
}

std::vector<CaseResult> run_hv15_pipeline_i2v(const fs::path& case_dir,
                                              const nlohmann::json& case_json,
                                              const RefcheckOptions& options) {
  return run_hv15_pipeline_i2v(case_dir, case_json, options, {});
}

}  // namespace omnidp::refcheck
