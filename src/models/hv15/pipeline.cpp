#include "omnidp/models/hv15/pipeline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/image.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/hv15/flops.hpp"
#include "omnidp/models/hv15/lora_names.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/pipelines/image_preprocess.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/schedulers/flow_match_euler.hpp"
#include "omnidp/models/vision/siglip_encoder.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::hv15 {
namespace fs = std::filesystem;

namespace {

// A seed from a domain tag and a text: the first 8 bytes of SHA-256(tag \0 text).
std::uint64_t text_seed(std::string_view tag, std::string_view text) {
  Sha256 h;
  h.update(tag);
  h.update(std::string_view("\0", 1));
  h.update(text);
  const auto d = h.finish();
  std::uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed = (seed << 8) | d[static_cast<std::size_t>(i)];
  return seed & 0x7fffffffffffffffULL;
}

torch::Tensor valid_prefix_mask(std::int64_t length, std::int64_t valid) {
  auto mask = torch::zeros({1, length}, torch::kFloat32);
  mask.slice(1, 0, std::min(valid, length)).fill_(1.0);
  return mask;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool meanflow_timestep_r(const TransformerOptions& options, bool image_to_video) noexcept {
  return options.use_meanflow && image_to_video;
}

torch::Tensor next_timestep(const torch::Tensor& timesteps, int index) {
  if (timesteps.dim() != 1 || index < 0 || index >= timesteps.size(0)) {
    throw ModelError("next_timestep: index " + std::to_string(index) + " outside the " +
                     std::to_string(timesteps.dim() == 1 ? timesteps.size(0) : 0) + " timesteps");
  }
  if (index + 1 == timesteps.size(0)) return torch::zeros({}, timesteps.options());
  return timesteps[index + 1];
}

FlowMatchEulerOptions scheduler_options_from_json(const nlohmann::json& config,
                                                  const std::string& origin) {
  if (!config.is_object()) throw ModelError("scheduler config is not an object", {origin});
  const auto cls = config.value("_class_name", std::string("FlowMatchEulerDiscreteScheduler"));
  if (cls != "FlowMatchEulerDiscreteScheduler") {
    throw ModelError(
        "scheduler '" + cls + "' is not supported (only FlowMatchEulerDiscreteScheduler)", {origin});
  }
  FlowMatchEulerOptions o;
  try {
    for (const char* flag : {"use_dynamic_shifting", "use_karras_sigmas", "use_exponential_sigmas",
                             "use_beta_sigmas", "invert_sigmas", "stochastic_sampling"}) {
      const auto it = config.find(flag);
      if (it != config.end() && !it->is_null() && it->get<bool>()) {
        throw ModelError(std::string("scheduler setting '") + flag + "' is not supported", {origin});
      }
    }
    if (const auto it = config.find("shift_terminal"); it != config.end() && !it->is_null()) {
      throw ModelError("scheduler setting 'shift_terminal' is not supported", {origin});
    }
    o.shift = config.value("shift", o.shift);
    o.num_train_timesteps = config.value("num_train_timesteps", o.num_train_timesteps);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(std::string("bad scheduler config: ") + e.what(), {origin});
  }
  if (!(o.shift > 0.0) || o.num_train_timesteps <= 0) {
    throw ModelError("scheduler config needs shift > 0 and num_train_timesteps > 0", {origin});
  }
  return o;
}

TextConditioning random_text_conditioning(const std::string& text, const TransformerOptions& options,
                                          const RandomTextShape& shape) {
  TextConditioning c;
  c.embeds = randn_cpu({1, shape.text_tokens, options.text_embed_dim}, text_seed("hv15-qwen", text));
  c.mask = valid_prefix_mask(shape.text_tokens, std::max<std::int64_t>(shape.text_valid, 1));
  if (shape.glyph_valid > 0) {
    c.embeds_2 =
        randn_cpu({1, shape.glyph_tokens, options.text_embed_2_dim}, text_seed("hv15-byt5", text));
  } else {
    c.embeds_2 = torch::zeros({1, shape.glyph_tokens, options.text_embed_2_dim});
  }
  c.mask_2 = valid_prefix_mask(shape.glyph_tokens, shape.glyph_valid);
  return c;
}

HunyuanVideo15Pipeline::HunyuanVideo15Pipeline(PipelineParts parts, torch::Device device)
    : parts_(std::move(parts)), device_(device) {
  if (parts_.transformer.is_empty() || parts_.vae.is_empty()) {
    throw ModelError("HunyuanVideo15Pipeline needs a transformer and a VAE");
  }
  const auto& to = parts_.transformer->options();
  const auto latent = parts_.vae->options().latent_channels;
  if (to.in_channels != 2 * latent + 1 || to.out_channels != latent) {
    throw ModelError("transformer in/out channels (" + std::to_string(to.in_channels) + "/" +
                     std::to_string(to.out_channels) + ") do not match the VAE's latent channels " +
                     std::to_string(latent) + " (in = 2 x latent + 1, out = latent)");
  }
  if (parts_.device_name.empty()) parts_.device_name = device_.str();
  adapters_ = std::make_unique<RequestAdapters>(
      hv15_lora_names(), std::vector<torch::nn::Module*>{parts_.transformer.get()});
}

PlanRules HunyuanVideo15Pipeline::plan_rules() const {
  const auto& vo = parts_.vae->options();
  PlanRules rules;
  rules.vae_temporal = static_cast<int>(vo.temporal_compression_ratio);
  rules.vae_spatial = static_cast<int>(vo.spatial_compression_ratio);
  rules.guidance = {GuidanceRule::guider, parts_.guidance};
  return rules;
}

std::vector<std::int64_t> HunyuanVideo15Pipeline::latent_shape(int num_frames, int height,
                                                               int width) const {
  const auto& vo = parts_.vae->options();
  return {1, vo.latent_channels, (num_frames - 1) / vo.temporal_compression_ratio + 1,
          height / vo.spatial_compression_ratio, width / vo.spatial_compression_ratio};
}

torch::Tensor HunyuanVideo15Pipeline::denoise(const SampleInputs& in, const GenerateContext* ctx,
                                              CacheReport* report) {
  c10::InferenceMode inference;
  const StepCacheConfig& cache_config = in.cache ? *in.cache : parts_.cache;
  auto& transformer = parts_.transformer;
  auto& vae = parts_.vae;
  const auto& to = transformer->options();
  // Tensor parallel and Ulysses (GenerateContext::tensor, ::sequence): the transformer's shard
  // runs with its groups; with a sequence group it shards the video tokens over it and returns
  // the whole prediction on every rank.
  Collective* sequence = ctx != nullptr ? ctx->sequence : nullptr;
  transformer->bind_parallel({ctx != nullptr ? ctx->tensor : nullptr, sequence});
  if (in.num_frames < 1 || in.height < 1 || in.width < 1)
    throw ModelError("frames, height and width must be >= 1");
  if (in.num_inference_steps < 1) throw ModelError("num_inference_steps must be >= 1");
  const auto shape = latent_shape(in.num_frames, in.height, in.width);
  if (shape[3] % to.patch_size != 0 || shape[4] % to.patch_size != 0 || shape[3] < 1 || shape[4] < 1) {
    throw ModelError(
        "height and width must give latent sizes >= 1 that are multiples of the patch size");
  }
  if (!in.noise.defined() || in.noise.sizes().vec() != shape) {
    throw ModelError("noise must have the latent shape [1, latent, (F-1)/4+1, H/16, W/16]");
  }
  const auto dtype = transformer->parameters().front().scalar_type();
  const auto opts = torch::TensorOptions().dtype(dtype).device(device_);

  // Condition latent and mask: zeros for T2V; the encoded image on frame 0 for I2V.
  auto condition = torch::zeros(shape, opts);
  auto mask = torch::zeros({shape[0], 1, shape[2], shape[3], shape[4]}, opts);
  if (in.image.defined()) {
    if (in.image.dim() != 4 || in.image.size(1) != 3 || in.image.size(2) != in.height ||
        in.image.size(3) != in.width) {
      throw ModelError("image must be [1, 3, height, width]");
    }
    const auto latent =
        vae->encode_mean(in.image.to(device_).unsqueeze(2)) * vae->options().scaling_factor;
    condition.select(2, 0).copy_(latent.select(2, 0).to(dtype));
    mask.select(2, 0).fill_(1.0);
  }
  torch::Tensor image_embeds = in.image_embeds;
  if (!image_embeds.defined()) {
    // The T2V reference passes zeros of [B, 729, image_embed_dim]; all-zero embeds are dropped.
    image_embeds = torch::zeros({1, 0, to.image_embed_dim}, opts);
  }

  FlowMatchEulerOptions so = parts_.scheduler;
  so.shift = in.flow_shift;
  FlowMatchEulerScheduler scheduler(so);
  scheduler.set_timesteps(in.num_inference_steps);
  const int steps = scheduler.num_steps();

  auto text_inputs = [&](const TextConditioning& c) {
    TransformerInputs t;
    t.encoder_hidden_states = c.embeds.to(device_, dtype);
    t.encoder_attention_mask = c.mask.to(device_);
    if (c.embeds_2.defined()) {
      t.encoder_hidden_states_2 = c.embeds_2.to(device_, dtype);
      t.encoder_attention_mask_2 = c.mask_2.to(device_);
    } else {
      t.encoder_hidden_states_2 = torch::zeros({1, 0, to.text_embed_2_dim}, opts);
      t.encoder_attention_mask_2 = torch::zeros({1, 0}, opts);
    }
    t.image_embeds = image_embeds.to(device_, dtype);
    return t;
  };
  // CFG-parallel (GenerateContext::cfg): rank 0 runs the conditional branch of every step,
  // rank 1 the unconditional one; a step without guidance runs on rank 0 and is broadcast.
  Collective* cfg = ctx != nullptr ? ctx->cfg : nullptr;
  check_cfg_group(cfg);
  auto cond_in = text_inputs(in.prompt);
  const StepGuidance guidance = plan_rules().guidance;
  const bool any_cfg = guided_steps(guidance, in.guidance_scale, steps) > 0;
  TransformerInputs uncond_in;
  if (any_cfg) {
    if (!in.negative.embeds.defined())
      throw ModelError("guidance_scale != 1 needs negative prompt embeddings");
    uncond_in = text_inputs(in.negative);
  }
  // CFG as one batch of 2 (the transformer's ragged text layout: each branch attends over its
  // own valid text); with a sequence group the branches stay two forwards (the Ulysses
  // exchange would need their text masked).
  // With a step cache each branch keeps its own cache: two forwards, never one batch.
  const CfgLayout layout{cfg, any_cfg && cfg == nullptr && sequence == nullptr &&
                                  cache_config.policy == CachePolicy::off};
  RequestCaches caches(cache_config, steps, sequence,
                       find_mag_cache_preset("hunyuanvideo-1.5", steps, false, 0, 0));
  TransformerInputs both_in;
  if (layout.batched) {
    both_in.encoder_hidden_states =
        pad_cat(cond_in.encoder_hidden_states, uncond_in.encoder_hidden_states);
    both_in.encoder_attention_mask =
        pad_cat(cond_in.encoder_attention_mask, uncond_in.encoder_attention_mask);
    both_in.encoder_hidden_states_2 =
        pad_cat(cond_in.encoder_hidden_states_2, uncond_in.encoder_hidden_states_2);
    both_in.encoder_attention_mask_2 =
        pad_cat(cond_in.encoder_attention_mask_2, uncond_in.encoder_attention_mask_2);
    both_in.image_embeds = pad_cat(cond_in.image_embeds, uncond_in.image_embeds);
  }

  auto latents = in.noise.to(device_, dtype);
  const auto timesteps = scheduler.timesteps();
  // MeanFlow (use_meanflow, the step-distilled I2V checkpoint): Diffusers' image-to-video
  // pipeline passes timestep_r = the next timestep (0 after the last), in the latents' dtype, to
  // every branch; its text-to-video pipeline passes none, and neither does this one.
  const bool with_timestep_r = meanflow_timestep_r(to, in.image.defined());
  run_denoising_steps(steps, ctx, device_, [&](int i) {
    const auto model_input = torch::cat({latents, condition, mask}, 1);
    const auto t = timesteps[i].to(device_).expand({1}).to(dtype);
    const auto r = with_timestep_r ? next_timestep(timesteps, i).to(device_).expand({1}).to(dtype)
                                   : torch::Tensor();
    const auto forward = [&](CfgBranch branch) {
      auto& inputs = branch == CfgBranch::both          ? both_in
                     : branch == CfgBranch::conditional ? cond_in
                                                        : uncond_in;
      const bool both = branch == CfgBranch::both;
      inputs.hidden_states = both ? torch::cat({model_input, model_input}, 0) : model_input;
      inputs.timestep = both ? t.expand({2}) : t;
      inputs.timestep_r = r.defined() && both ? r.expand({2}) : r;
      return caches.forward(0, branch, i,
                            [&](StepCache* cache) { return transformer->forward(inputs, cache); });
    };
    const bool guided = step_guided(guidance, in.guidance_scale, i, steps);
    const auto noise_pred =
        guided_prediction(layout, guided, in.guidance_scale, parts_.guidance, forward, latents);
    latents = scheduler.step(noise_pred, i, latents);
  });
  if (report != nullptr) *report = caches.report(cfg, device_);
  return latents;
}

SampleOutputs HunyuanVideo15Pipeline::sample(const SampleInputs& in, const GenerateContext* ctx) {
  c10::InferenceMode inference;
  SampleOutputs out;
  out.final_latents = denoise(in, ctx, &out.cache);
  if (!group_leader(ctx)) return out;  // a parallel group: only its leader decodes
  require_finite_latents(out.final_latents);
  auto& vae = parts_.vae;
  const auto vae_dtype = vae->parameters().front().scalar_type();
  auto video = vae->decode(out.final_latents.to(vae_dtype) / vae->options().scaling_factor);
  video = (video / 2 + 0.5).clamp(0, 1);
  out.video = video.to(torch::kFloat32).permute({0, 2, 3, 4, 1}).contiguous();
  return out;
}

TextConditioning HunyuanVideo15Pipeline::prompt_conditioning(const Request& request, bool negative) {
  const auto& to = parts_.transformer->options();
  const std::string prefix = negative ? "negative_" : "";
  const auto key = prefix + "prompt_embeds";
  if (const auto* file = embeddings_file(request)) {
    const auto& path = request.prompt_embeds;
    if (file->contains(key)) {
      auto read = [&](const std::string& name, std::int64_t rank) {
        if (!file->contains(name))
          throw InputError(path, "'" + key + "' is present but '" + name + "' is missing");
        auto t = file->tensor(name, torch::kFloat32);
        if (t.dim() == rank - 1) t = t.unsqueeze(0);
        if (t.dim() != rank || t.size(0) != 1) {
          throw InputError(path, "'" + name + "' must have batch 1 and rank " + std::to_string(rank));
        }
        return t;
      };
      TextConditioning c;
      c.embeds = read(key, 3);
      c.mask = read(key + "_mask", 2);
      if (c.embeds.size(2) != to.text_embed_dim || c.mask.size(1) != c.embeds.size(1)) {
        throw InputError(path, "'" + key + "' must be [1, L, " + std::to_string(to.text_embed_dim) +
                                   "] with a [1, L] mask");
      }
      if (!(c.mask != 0).any().item<bool>())
        throw InputError(path, "'" + key + "_mask' marks no token valid");
      const auto key2 = prefix + "prompt_embeds_2";
      if (file->contains(key2)) {
        c.embeds_2 = read(key2, 3);
        c.mask_2 = read(prefix + "prompt_embeds_mask_2", 2);
        if (c.embeds_2.size(2) != to.text_embed_2_dim || c.mask_2.size(1) != c.embeds_2.size(1)) {
          throw InputError(path, "'" + key2 + "' must be [1, L2, " +
                                     std::to_string(to.text_embed_2_dim) + "] with a [1, L2] mask");
        }
      }
      return c;
    }
  }
  const auto& text = negative ? request.negative_prompt : request.prompt;
  if (parts_.text_encoder) {
    if (negative && cached_negative_.embeds.defined() && cached_negative_text_ == text)
      return cached_negative_;
    const auto e = parts_.text_encoder->encode(text);
    TextConditioning c{e.embeds, e.mask, e.embeds_2, e.mask_2};
    if (negative) {
      cached_negative_ = c;
      cached_negative_text_ = text;
    }
    return c;
  }
  if (parts_.random_conditioning) return random_text_conditioning(text, to, parts_.random_shape);
  if (!request.prompt_embeds.empty())
    throw InputError(request.prompt_embeds, "has no '" + key + "'");
  throw InputError("<prompt_embeds>",
                   "model '" + parts_.model_name +
                       "' has no prompt encoder in this build: give the request a "
                       "prompt_embeds file (docs/models.md)");
}

torch::Tensor HunyuanVideo15Pipeline::image_embeds_for(const Request& request,
                                                       const RgbImage& resized) {
  const auto& to = parts_.transformer->options();
  if (const auto* file = embeddings_file(request)) {
    if (file->contains("image_embeds")) {
      auto t = file->tensor("image_embeds", torch::kFloat32);
      if (t.dim() == 2) t = t.unsqueeze(0);
      if (t.dim() != 3 || t.size(0) != 1 || t.size(2) != to.image_embed_dim) {
        throw InputError(request.prompt_embeds, "'image_embeds' must be [1, L, " +
                                                    std::to_string(to.image_embed_dim) + "]");
      }
      return t;
    }
  }
  if (parts_.image_encoder) {
    auto t = parts_.image_encoder->encode(resized);
    if (t.dim() != 3 || t.size(0) != 1 || t.size(2) != to.image_embed_dim) {
      throw ModelError("the image encoder's tokens must be [1, L, " +
                       std::to_string(to.image_embed_dim) + "] (the transformer's image_embed_dim)");
    }
    return t;
  }
  if (!parts_.random_conditioning) {
    throw InputError(
        request.prompt_embeds.empty() ? request.image : request.prompt_embeds,
        "i2v needs 'image_embeds' (SigLIP tokens) in the request's prompt_embeds file: this "
        "pipeline has no image encoder");
  }
  return randn_cpu({1, parts_.random_shape.image_tokens, to.image_embed_dim},
                   text_seed("hv15-siglip", request.image_sha256));
}

std::optional<EncodeCost> HunyuanVideo15Pipeline::text_cost(const Request& request,
                                                            bool negative) const {
  const std::string key = negative ? "negative_prompt_embeds" : "prompt_embeds";
  if (const auto* file = embeddings_file(request)) {
    if (file->contains(key)) {
      const auto valid = [&](const std::string& name) {
        if (!file->contains(name)) return std::int64_t{0};
        return (file->tensor(name, torch::kFloat32) != 0).sum().item<std::int64_t>();
      };
      return EncodeCost{0.0, valid(key + "_mask"),
                        file->contains(key + "_2") ? valid(key + "_mask_2") : 0};
    }
  }
  const auto& text = negative ? request.negative_prompt : request.prompt;
  if (parts_.text_encoder) return parts_.text_encoder->encode_cost(text);
  if (parts_.random_conditioning) {
    return EncodeCost{0.0, std::max<std::int64_t>(parts_.random_shape.text_valid, 1),
                      parts_.random_shape.glyph_valid};
  }
  return std::nullopt;
}

const SafetensorsFile* HunyuanVideo15Pipeline::embeddings_file(const Request& request) const {
  if (request.prompt_embeds.empty()) return nullptr;
  auto& cache = embeddings_;
  // A request without its content hash (not from a manifest) is never served from the cache.
  if (!cache.file || cache.path != request.prompt_embeds || request.prompt_embeds_sha256.empty() ||
      cache.sha256 != request.prompt_embeds_sha256) {
    cache = {};
    try {
      cache.file = std::make_shared<const SafetensorsFile>(request.prompt_embeds);
    } catch (const Error& e) {
      throw InputError(request.prompt_embeds, e.message());
    }
    cache.path = request.prompt_embeds;
    cache.sha256 = request.prompt_embeds_sha256;
  }
  return cache.file.get();
}

std::optional<RequestFlops> HunyuanVideo15Pipeline::flops(const Request& request) const {
  Hv15FlopsInputs in;
  in.num_frames = request.num_frames;
  in.height = request.height;
  in.width = request.width;
  in.num_inference_steps = request.num_inference_steps;
  in.cfg_steps = plan_request(plan_rules(), request).guided_steps();
  in.i2v = request.task == Task::i2v;
  const auto prompt = text_cost(request, false);
  if (!prompt) return std::nullopt;
  in.text_tokens = prompt->valid_tokens + prompt->valid_tokens_2;
  in.text_flops = prompt->flops;
  if (in.cfg_steps > 0) {
    const auto negative = text_cost(request, true);
    if (!negative) return std::nullopt;
    in.negative_text_tokens = negative->valid_tokens + negative->valid_tokens_2;
    in.text_flops += negative->flops;
  }
  if (in.i2v) {
    std::int64_t image_tokens = -1;
    if (const auto* file = embeddings_file(request)) {
      if (file->contains("image_embeds")) {
        const auto& shape = file->meta("image_embeds").shape;
        image_tokens = shape.size() >= 2 ? shape[shape.size() - 2] : 0;
      }
    }
    if (image_tokens < 0 && parts_.image_encoder) {
      const auto* siglip =
          dynamic_cast<const vision::SiglipImageEncoder*>(parts_.image_encoder.get());
      if (siglip == nullptr) return std::nullopt;  // an encoder without a count
      image_tokens = siglip->tokens();
      in.image_flops = siglip->encode_flops();
    }
    if (image_tokens < 0) {
      if (!parts_.random_conditioning) return std::nullopt;
      image_tokens = parts_.random_shape.image_tokens;
    }
    in.text_tokens += image_tokens;
    in.negative_text_tokens += image_tokens;
  }
  const auto& vo = parts_.vae->options();
  return hv15_request_flops(parts_.transformer->options(), vo, in);
}

Video HunyuanVideo15Pipeline::generate(const Request& request, const GenerateContext& ctx) {
  // A line's adapters, before inference mode: the weights change in place.
  if (adapters_->select(request.lora) && parts_.fp8) parts_.transformer->quantize_fp8();
  c10::InferenceMode inference;
  SampleInputs in;
  set_schedule(in, request);
  in.prompt = prompt_conditioning(request, false);
  if (plan_request(plan_rules(), request).guided_steps() > 0)
    in.negative = prompt_conditioning(request, true);
  if (request.task == Task::i2v) {
    if (request.image.empty()) throw InputError("<manifest>", "i2v request without an image");
    const RgbImage image =
        decode_image_rgb(request.image, parts_.max_image_pixels, request.image_sha256);
    const RgbImage resized = resize_and_crop(image, request.width, request.height);
    in.image = image_to_tensor(resized);
    in.image_embeds = image_embeds_for(request, resized);
  }
  in.cache = request.cache;
  in.noise = randn_cpu(latent_shape(request.num_frames, request.height, request.width), request.seed);
  const auto out = sample(in, &ctx);
  report_forwards(request, ctx, out.cache, request.cache.value_or(parts_.cache));
  if (!out.video.defined())
    return Video{};  // a CFG-parallel or tensor-parallel member: the leader has it
  return video_from_frames(out.video);
}

// ---------------------------------------------------------------------------------------------
// Construction

namespace {

void set_vae_gains_to_one(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters(true)) {
    const auto& name = p.key();
    if (name.size() >= 5 && name.compare(name.size() - 5, 5, "gamma") == 0) p.value().fill_(1.0);
  }
}

template <typename M>
M ready(M model, torch::ScalarType dtype, torch::Device device) {
  model->to(device, dtype);
  freeze(*model);
  model->eval();
  return model;
}

}  // namespace

HunyuanVideo15Transformer3DModel random_transformer(const TransformerOptions& options,
                                                    std::uint64_t seed, torch::ScalarType dtype,
                                                    torch::Device device, TensorShard shard) {
  HunyuanVideo15Transformer3DModel model(options, shard);
  init_random_weights(*model, seed, model->shard_plan());
  return ready(model, dtype, device);
}

AutoencoderKLHunyuanVideo15 random_vae(const VaeOptions& options, std::uint64_t seed,
                                       torch::ScalarType dtype, torch::Device device) {
  AutoencoderKLHunyuanVideo15 vae(options);
  init_random_weights(*vae, seed);
  set_vae_gains_to_one(*vae);
  return ready(vae, dtype, device);
}

HunyuanVideo15Transformer3DModel load_transformer(const fs::path& dir, torch::ScalarType dtype,
                                                  torch::Device device, TensorShard shard) {
  const auto config = dir / "config.json";
  HunyuanVideo15Transformer3DModel model(
      TransformerOptions::from_json(read_json(config), config.string()), shard);
  LoadOptions options;
  options.shard = model->shard_plan();  // only this rank's slices are read
  load_state_dict(*model, Checkpoint::open(dir), dtype, device, options);
  return ready(model, dtype, device);
}

AutoencoderKLHunyuanVideo15 load_vae(const fs::path& dir, torch::ScalarType dtype,
                                     torch::Device device) {
  const auto config = dir / "config.json";
  AutoencoderKLHunyuanVideo15 vae(VaeOptions::from_json(read_json(config), config.string()));
  load_state_dict(*vae, Checkpoint::open(dir), dtype, device);
  return ready(vae, dtype, device);
}

std::unique_ptr<HunyuanVideo15Pipeline> make_random_pipeline(
    const TransformerOptions& transformer, const VaeOptions& vae, std::uint64_t seed,
    torch::ScalarType dtype, torch::Device device, TensorShard shard) {
  PipelineParts parts;
  parts.transformer = random_transformer(transformer, seed, dtype, device, shard);
  parts.vae = random_vae(vae, seed + 1, dtype, device);
  parts.random_conditioning = true;
  parts.device_name = device.str();
  return std::make_unique<HunyuanVideo15Pipeline>(std::move(parts), device);
}

}  // namespace omnidp::models::hv15
