#include "omnidp/models/wan/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/image.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/pipelines/guided_step.hpp"
#include "omnidp/models/pipelines/image_preprocess.hpp"
#include "omnidp/models/request_plan.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/wan/flops.hpp"
#include "omnidp/models/wan/lora_names.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models::wan {
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kWanTextTokens = 512;  // the pipelines' max_sequence_length

// Zeroes the positions the mask marks invalid and pads with zeros to 512 tokens, as
// WanPipeline._get_t5_prompt_embeds does.
torch::Tensor wan_text_context(const PromptEmbedding& e) {
  auto x = e.embeds.to(torch::kFloat32);
  if (e.mask.defined()) x = x * e.mask.to(x.device()).to(torch::kFloat32).unsqueeze(-1);
  if (x.size(1) < kWanTextTokens) {
    x = torch::cat(
        {x, torch::zeros({x.size(0), kWanTextTokens - x.size(1), x.size(2)}, x.options())}, 1);
  }
  return x;
}

std::string seconds_since(std::chrono::steady_clock::time_point start) {
  return fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
}

}  // namespace

WanPipeline::WanPipeline(WanPipelineParts parts, torch::Device device)
    : parts_(std::move(parts)), device_(device) {
  if (!parts_.transformer || !parts_.vae)
    throw ModelError("WanPipeline needs a transformer and a VAE");
  if (static_cast<bool>(parts_.transformer_2) != parts_.boundary_ratio.has_value()) {
    throw ModelError("WanPipeline: a second transformer and boundary_ratio go together");
  }
  const auto z = parts_.vae->options().z_dim;
  for (const auto* t : {&parts_.transformer, &parts_.transformer_2}) {
    if (!*t) continue;
    const auto& o = (*t)->options();
    const bool concat_i2v = !parts_.expand_timesteps &&
                            o.in_channels == 2 * z + parts_.vae->options().scale_factor_temporal;
    if ((o.in_channels != z && !concat_i2v) || o.out_channels != z) {
      throw ModelError("transformer in/out channels " + std::to_string(o.in_channels) + "/" +
                       std::to_string(o.out_channels) + " do not match the VAE z_dim " +
                       std::to_string(z) + " (text-to-video: z -> z; image-to-video: 2z + " +
                       std::to_string(parts_.vae->options().scale_factor_temporal) + " -> z)");
    }
  }
  if (parts_.transformer_2 &&
      parts_.transformer_2->options().in_channels != parts_.transformer->options().in_channels) {
    throw ModelError("the two transformers take different input channels");
  }
  if (parts_.swap_experts) {
    if (!parts_.transformer_2) throw ModelError("swapping experts needs a second transformer");
    // Both experts (built in host memory) get their page-locked host copy once, which releases
    // their pageable load; one device buffer then takes the expert the schedule needs.
    const auto start = std::chrono::steady_clock::now();
    std::int64_t largest = 0;
    for (auto* t : {&parts_.transformer, &parts_.transformer_2}) {
      host_copies_.push_back(std::make_unique<HostWeightCopy>(**t));
      host_copies_.back()->to_host();
      largest = std::max(largest, host_copies_.back()->bytes());
    }
    expert_buffer_ =
        torch::empty({largest}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
    host_copies_[0]->to_device(expert_buffer_);
    synchronize(device_);
    log_info("wan: expert swap: both experts copied to " +
             std::string(host_copies_[0]->pinned() ? "page-locked" : "pageable") + " host memory (" +
             fixed(static_cast<double>(host_copies_[0]->bytes() + host_copies_[1]->bytes()) / 1e9, 2) +
             " GB) in " + seconds_since(start) + " s");
  }
  if (parts_.transformer->options().image_tokens() != static_cast<bool>(parts_.image_encoder)) {
    throw ModelError(parts_.image_encoder
                         ? "an image encoder needs a transformer with image_dim"
                         : "a transformer with image_dim needs an image encoder (image_encoder/)");
  }
  std::vector<torch::nn::Module*> experts{parts_.transformer.get()};
  if (parts_.transformer_2) experts.push_back(parts_.transformer_2.get());
  adapters_ = std::make_unique<RequestAdapters>(wan_lora_names(), std::move(experts));
}

void WanPipeline::select_adapters(const Request& request) {
  if (parts_.swap_experts && !request.lora.empty()) {
    throw ModelError(
        "a manifest line's \"lora\" with model.expert_residency swap is not supported (the "
        "experts move as their page-locked copies; put the adapters in model.lora, which is fused "
        "before the copies are made)");
  }
  if (!adapters_->select(request.lora) || !parts_.fp8) return;
  parts_.transformer->quantize_fp8();
  if (parts_.transformer_2) parts_.transformer_2->quantize_fp8();
}

torch::Tensor WanPipeline::encode_image(const RgbImage& image, const RgbImage* last_image) {
  if (!parts_.image_encoder) throw ModelError("this Wan pipeline has no image encoder");
  auto tokens = parts_.image_encoder->encode(image);
  if (last_image != nullptr)
    tokens = torch::cat({tokens, parts_.image_encoder->encode(*last_image)}, 1);
  return tokens;
}

void WanPipeline::make_resident(int index) {
  if (!parts_.swap_experts || index == resident_) return;
  // The leaving expert's queued forwards finish first, so that the seconds logged are the
  // move's own (the copy would wait for them in any case).
  synchronize(device_);
  const auto start = std::chrono::steady_clock::now();
  // Out (the tensors point into the host copy again, no copy), then one host-to-device copy
  // into the buffer the other expert left. A move that throws leaves resident_ unknown (-1):
  // the next call moves every expert out before its own in.
  resident_ = -1;
  for (auto& copy : host_copies_) copy->to_host();
  host_copies_.at(static_cast<std::size_t>(index))->to_device(expert_buffer_);
  synchronize(device_);
  resident_ = index;
  ++expert_swaps_;
  log_info("wan: expert swap: " + std::string(index == 0 ? "transformer" : "transformer_2") +
           " in, the other out, in " + seconds_since(start) + " s");
}

std::vector<std::int64_t> WanPipeline::latent_shape(int num_frames, int height, int width) const {
  const auto& vo = parts_.vae->options();
  return {1, vo.z_dim, (num_frames - 1) / vo.scale_factor_temporal + 1,
          height / vo.scale_factor_spatial, width / vo.scale_factor_spatial};
}

PlanRules WanPipeline::plan_rules() const {
  const auto& vo = parts_.vae->options();
  const auto& to = parts_.transformer->options();
  PlanRules rules;
  rules.vae_temporal = static_cast<int>(vo.scale_factor_temporal);
  rules.vae_spatial = static_cast<int>(vo.scale_factor_spatial);
  rules.patch_h = static_cast<int>(to.patch_size[1]);
  rules.patch_w = static_cast<int>(to.patch_size[2]);
  rules.round_size = true;
  return rules;  // guidance: GuidanceRule::scale_above_one, as WanPipeline's guidance_scale > 1
}

VideoSize WanPipeline::checked_size(const WanSampleInputs& in) const {
  const VideoSize requested{in.num_frames, in.height, in.width};
  const VideoSize size = sample_size(plan_rules(), requested);
  if (size != requested) {
    log_warn("wan: size " + std::to_string(in.width) + "x" + std::to_string(in.height) + "x" +
             std::to_string(in.num_frames) + " adjusted to " + std::to_string(size.width) + "x" +
             std::to_string(size.height) + "x" + std::to_string(size.num_frames) +
             " as the reference does");
  }
  if (size.height <= 0 || size.width <= 0) throw ModelError("height and width must be at least 32");
  if (in.num_inference_steps < 1) throw ModelError("num_inference_steps must be >= 1");
  if (!in.noise.defined() ||
      in.noise.sizes().vec() != latent_shape(size.num_frames, size.height, size.width)) {
    throw ModelError("noise must have the latent shape [1, z, T, h, w]");
  }
  return size;
}

WanTextInputs WanPipeline::text_inputs(const WanSampleInputs& in, const GenerateContext* ctx,
                                       const StepCacheConfig& cache) const {
  if (in.guidance_scale_2 && !parts_.transformer_2) {
    throw ModelError("guidance_scale_2 needs a second transformer (boundary_ratio)");
  }
  const auto& to = parts_.transformer->options();
  const auto tdtype = parts_.transformer->dtype();
  WanTextInputs text;
  text.guided = guided_steps(plan_rules().guidance, in.guidance_scale, in.num_inference_steps) > 0;
  const auto prompt = in.prompt_embeds.to(device_, tdtype);
  if (text.guided) {
    if (!in.negative_prompt_embeds.defined()) {
      throw ModelError("guidance_scale > 1 needs negative prompt embeddings");
    }
    text.negative = in.negative_prompt_embeds.to(device_, tdtype);
  }
  // CFG-parallel (GenerateContext::cfg): this rank runs one branch of every step, rank 0 the
  // conditional one, rank 1 the unconditional one; both combine the gathered predictions alike.
  text.cfg = ctx != nullptr ? ctx->cfg : nullptr;
  check_cfg_group(text.cfg);
  text.branch = text.cfg != nullptr ? text.cfg->rank() : 0;
  // With a step cache each branch keeps its own cache: two forwards, never one batch.
  text.batched = text.cfg == nullptr && text.guided && parts_.cfg_batch &&
                 cache.policy == CachePolicy::off && prompt.sizes() == text.negative.sizes();
  text.context = text.batched ? torch::cat({prompt, text.negative}, 0) : prompt;
  // CLIP image tokens (Wan2.1 I2V): the same for both branches, in the transformer's dtype.
  if (to.image_tokens() != in.image_embeds.defined()) {
    throw ModelError(to.image_tokens()
                         ? "this transformer (image_dim) needs the image's CLIP tokens"
                         : "image tokens given to a transformer without image_dim");
  }
  if (to.image_tokens() && in.last_image.defined() && to.pos_embed_seq_len == 0) {
    throw ModelError(
        "last_image needs a first-last-frame transformer (pos_embed_seq_len): this one "
        "takes the first image's CLIP tokens only");
  }
  if (in.image_embeds.defined()) text.image_tokens = in.image_embeds.to(device_, tdtype);
  return text;
}

WanImageConditioning WanPipeline::image_conditioning(const WanSampleInputs& in,
                                                     const VideoSize& size) {
  // Image conditioning. expand_timesteps: mask 0 on the conditioned first latent frame, whose
  // latent is blended in. Otherwise (channel concat): y = [mask (4 ch), image latents], the
  // image (and the last image) with zero frames between them encoded as one video.
  auto& vae = parts_.vae;
  const auto& to = parts_.transformer->options();
  const auto& vo = vae->options();
  const auto shape = latent_shape(size.num_frames, size.height, size.width);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  const int frames = size.num_frames;
  WanImageConditioning c;
  c.mask = torch::ones({1, 1, shape[2], shape[3], shape[4]}, f32);
  const bool image_channels = to.in_channels != vo.z_dim;
  if (image_channels && !in.image.defined()) {
    throw ModelError("this transformer takes image conditioning (" + std::to_string(to.in_channels) +
                     " input channels): the request needs an image");
  }
  if (in.last_image.defined() && (parts_.expand_timesteps || !image_channels)) {
    throw ModelError("last_image needs an image-to-video transformer without expand_timesteps");
  }
  if (in.image.defined() && parts_.expand_timesteps) {
    const auto image = in.image.to(device_, torch::kFloat32).unsqueeze(2).to(vae->dtype());
    const auto latent = vae->encode(image).mean.to(torch::kFloat32);
    c.condition = vae->normalize_latents(latent);
    c.mask.select(2, 0).zero_();
  } else if (in.image.defined()) {
    if (!image_channels) {
      throw ModelError("an image-to-video request needs an image-to-video transformer");
    }
    const auto first = in.image.to(device_, torch::kFloat32).unsqueeze(2);
    std::vector<torch::Tensor> video{first};
    const auto gap = frames - (in.last_image.defined() ? 2 : 1);
    if (gap > 0) video.push_back(torch::zeros({1, 3, gap, size.height, size.width}, f32));
    if (in.last_image.defined())
      video.push_back(in.last_image.to(device_, torch::kFloat32).unsqueeze(2));
    const auto latent = vae->encode(torch::cat(video, 2).to(vae->dtype())).mean.to(torch::kFloat32);
    const auto t_factor = vo.scale_factor_temporal;
    auto frame_mask = torch::zeros({1, 1, frames, shape[3], shape[4]}, f32);
    frame_mask.select(2, 0).fill_(1);
    if (in.last_image.defined()) frame_mask.select(2, frames - 1).fill_(1);
    frame_mask = torch::cat({frame_mask.slice(2, 0, 1).repeat_interleave(t_factor, 2),
                             frame_mask.slice(2, 1, frames)},
                            2)
                     .view({1, -1, t_factor, shape[3], shape[4]})
                     .transpose(1, 2);
    c.concat = torch::cat({frame_mask, vae->normalize_latents(latent)}, 1);
  }
  c.token_mask = c.mask[0][0]
                     .slice(0, 0, shape[2], to.patch_size[0])
                     .slice(1, 0, shape[3], to.patch_size[1])
                     .slice(2, 0, shape[4], to.patch_size[2])
                     .flatten();
  return c;
}

torch::Tensor WanImageConditioning::blend(const torch::Tensor& x) const {
  return condition.defined() ? (1 - mask) * condition + mask * x : x;
}

std::vector<int> WanPipeline::expert_schedule(const torch::Tensor& timesteps) const {
  // The high-noise expert for t >= boundary, the low-noise one after it.
  const double boundary = parts_.boundary_ratio.value_or(0.0) * parts_.scheduler.num_train_timesteps;
  const auto cpu = timesteps.to(torch::kCPU, torch::kFloat64);
  std::vector<int> experts;
  for (std::int64_t i = 0; i < cpu.size(0); ++i) {
    experts.push_back(parts_.transformer_2 && cpu[i].item<double>() < boundary ? 1 : 0);
  }
  return experts;
}

torch::Tensor WanPipeline::denoise(const WanSampleInputs& in, const WanTextInputs& text,
                                   const WanImageConditioning& image,
                                   const StepCacheConfig& cache_config, const GenerateContext* ctx,
                                   CacheReport& report) {
  const auto tdtype = parts_.transformer->dtype();
  const auto z_dim = parts_.vae->options().z_dim;
  // Tensor parallel and Ulysses (GenerateContext::tensor, ::sequence): the transformer's shard
  // runs with its groups; with a sequence group every forward shards the video tokens over it
  // and returns the whole prediction on every rank, so the steps stay identical.
  Collective* sequence = ctx != nullptr ? ctx->sequence : nullptr;

  // The experts and the text side of every step, once per expert: the embedded context's keys
  // and values per block.
  struct Expert {
    WanTransformer3DModel* model;
    double guidance;
    bool prepared = false;
    WanPreparedContext text, negative_text;
  };
  std::vector<Expert> experts;
  for (auto* m : {&parts_.transformer, &parts_.transformer_2}) {
    if (!*m) continue;
    (*m)->bind_parallel({ctx != nullptr ? ctx->tensor : nullptr, sequence});
    experts.push_back(
        {m,
         experts.empty() ? in.guidance_scale : in.guidance_scale_2.value_or(in.guidance_scale),
         false,
         {},
         {}});
  }
  // An expert's context is prepared where it first runs: on the device, also when it was swapped
  // in (model.expert_residency swap).
  const auto use_expert = [&](int index) -> Expert& {
    make_resident(index);
    auto& e = experts[static_cast<std::size_t>(index)];
    if (e.prepared) return e;
    auto& m = *e.model;
    // The image tokens belong to the transformer that has image_dim (one expert only).
    const auto tokens = m->options().image_tokens() ? text.image_tokens : torch::Tensor();
    if (text.branch == 0) e.text = m->prepare_context(text.context, tokens);
    if (text.guided && !text.batched && (text.cfg == nullptr || text.branch == 1)) {
      e.negative_text = m->prepare_context(text.negative, tokens);
    }
    e.prepared = true;
    return e;
  };

  UniPCOptions so = parts_.scheduler;
  so.flow_shift = in.flow_shift;
  UniPCScheduler scheduler(so);
  scheduler.set_timesteps(in.num_inference_steps);
  const int steps = scheduler.num_steps();
  const auto expert_of_step = expert_schedule(scheduler.timesteps());
  const auto timesteps = scheduler.timesteps().to(device_);
  const CfgLayout layout{text.cfg, text.batched};
  RequestCaches caches(
      cache_config, steps, sequence,
      find_mag_cache_preset(parts_.checkpoint, steps, in.image.defined(), in.height, in.width));
  auto latents = in.noise.to(device_, torch::kFloat32);
  run_denoising_steps(steps, ctx, device_, [&](int i) {
    const int expert_index = expert_of_step[static_cast<std::size_t>(i)];
    const Expert& expert = use_expert(expert_index);
    auto& model = *expert.model;
    auto model_input = image.blend(latents);
    if (image.concat.defined()) model_input = torch::cat({model_input, image.concat}, 1);
    model_input = model_input.to(tdtype);
    // expand_timesteps: a timestep per token [1, N]; otherwise one per sample [1].
    const auto ts = parts_.expand_timesteps ? (image.token_mask * timesteps[i]).unsqueeze(0)
                                            : timesteps[i].reshape({1});
    const auto forward = [&](CfgBranch b) {
      return caches.forward(expert_index, b, i, [&](StepCache* cache) {
        if (b == CfgBranch::both) {
          return model->forward(torch::cat({model_input, model_input}, 0),
                                parts_.expand_timesteps ? ts.expand({2, -1}) : ts.expand({2}),
                                expert.text);
        }
        return model->forward(
            model_input, ts, b == CfgBranch::conditional ? expert.text : expert.negative_text, cache);
      });
    };
    const auto noise_pred = guided_prediction(layout, text.guided, expert.guidance, {}, forward,
                                              model_input.narrow(1, 0, z_dim));
    latents = scheduler.step(noise_pred, i, latents);
  });
  report = caches.report(text.cfg, device_);
  return image.blend(latents);
}

torch::Tensor WanPipeline::decode(const torch::Tensor& latents) {
  require_finite_latents(latents);
  auto& vae = parts_.vae;
  const auto z = vae->denormalize_latents(latents.to(vae->dtype()));
  auto video = vae->decode(z);  // [1, 3, F, H, W]
  video = (video / 2 + 0.5).clamp(0, 1);
  return video.to(torch::kFloat32).permute({0, 2, 3, 4, 1}).contiguous();
}

WanSampleOutputs WanPipeline::sample(const WanSampleInputs& in, const GenerateContext* ctx) {
  c10::InferenceMode inference;
  const StepCacheConfig& cache = in.cache ? *in.cache : parts_.cache;
  const VideoSize size = checked_size(in);
  const WanTextInputs text = text_inputs(in, ctx, cache);
  const WanImageConditioning image = image_conditioning(in, size);
  WanSampleOutputs out;
  out.final_latents = denoise(in, text, image, cache, ctx, out.cache);
  if (!group_leader(ctx)) return out;  // a parallel group: only its leader decodes
  out.video = decode(out.final_latents);
  return out;
}

torch::Tensor WanPipeline::encode_text(const std::string& text) {
  if (!parts_.text_encoder) {
    throw InputError("<prompt>", "model '" + parts_.model_name +
                                     "' has no text encoder in this build: give the request a "
                                     "prompt_embeds file");
  }
  return wan_text_context(parts_.text_encoder->encode(text));
}

std::pair<torch::Tensor, torch::Tensor> WanPipeline::text_embeddings(const Request& request,
                                                                     bool need_negative) {
  const auto text_dim = parts_.transformer->options().text_dim;
  torch::Tensor positive, negative;
  if (!request.prompt_embeds.empty()) {
    try {
      const SafetensorsFile file(request.prompt_embeds);
      positive = file.tensor("prompt_embeds", torch::kFloat32);
      if (need_negative && file.contains("negative_prompt_embeds")) {
        negative = file.tensor("negative_prompt_embeds", torch::kFloat32);
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::input) throw;
      throw InputError(request.prompt_embeds, e.what());
    }
    for (const auto* t : {&positive, &negative}) {
      if (t->defined() && (t->dim() != 3 || t->size(0) != 1 || t->size(2) != text_dim)) {
        throw InputError(request.prompt_embeds,
                         "embeddings must be [1, L, " + std::to_string(text_dim) + "]");
      }
    }
  } else {
    positive = encode_text(request.prompt);
  }
  if (need_negative && !negative.defined()) {
    if (!cached_negative_.defined() || cached_negative_text_ != request.negative_prompt) {
      cached_negative_ = encode_text(request.negative_prompt);
      cached_negative_text_ = request.negative_prompt;
    }
    negative = cached_negative_;
  }
  return {positive, negative};
}

std::optional<RequestFlops> WanPipeline::flops(const Request& request) const {
  const bool cfg = plan_request(plan_rules(), request).guided_steps() > 0;
  WanFlopsInputs in;
  const auto& vo = parts_.vae->options();
  const auto& to = parts_.transformer->options();
  const auto size = plan_request(plan_rules(), request).size;
  in.num_frames = size.num_frames;
  in.height = size.height;
  in.width = size.width;
  in.num_inference_steps = request.num_inference_steps;
  in.cfg = cfg;
  in.i2v = request.task == Task::i2v;
  in.text_tokens = kWanTextTokens;
  in.negative_text_tokens = kWanTextTokens;
  if (parts_.image_encoder && in.i2v) {
    const int images = request.last_image.empty() ? 1 : 2;  // first-last-frame: both encoded
    in.image_tokens = images * parts_.image_encoder->tokens();
    in.image_flops = images * parts_.image_encoder->encode_flops();
  }
  bool prompt_from_file = false;
  bool negative_from_file = false;
  if (!request.prompt_embeds.empty()) {
    const SafetensorsFile file(request.prompt_embeds);
    in.text_tokens = file.meta("prompt_embeds").shape.at(1);
    prompt_from_file = true;
    if (cfg && file.contains("negative_prompt_embeds")) {
      in.negative_text_tokens = file.meta("negative_prompt_embeds").shape.at(1);
      negative_from_file = true;
    }
  }
  if ((!prompt_from_file || (cfg && !negative_from_file)) && !parts_.text_encoder) {
    return std::nullopt;
  }
  if (!prompt_from_file) in.text_flops += parts_.text_encoder->encode_cost(request.prompt).flops;
  if (cfg && !negative_from_file) {
    in.text_flops += parts_.text_encoder->encode_cost(request.negative_prompt).flops;
  }
  return wan_request_flops(to, vo, in);
}

Video WanPipeline::generate(const Request& request, const GenerateContext& ctx) {
  select_adapters(request);  // before inference mode: the weights change in place
  c10::InferenceMode inference;
  const RequestPlan plan = plan_request(plan_rules(), request);
  WanSampleInputs in;
  set_schedule(in, request);
  in.guidance_scale_2 = request.guidance_scale_2;
  std::tie(in.prompt_embeds, in.negative_prompt_embeds) =
      text_embeddings(request, plan.guided_steps() > 0);
  if (request.task == Task::i2v) {
    if (request.image.empty()) throw InputError("<manifest>", "i2v request without an image");
    const RgbImage image =
        decode_image_rgb(request.image, parts_.max_image_pixels, request.image_sha256);
    in.image = preprocess_image(image, request.height, request.width);
    std::optional<RgbImage> last;
    if (!request.last_image.empty()) {
      last = decode_image_rgb(request.last_image, parts_.max_image_pixels, request.last_image_sha256);
      in.last_image = preprocess_image(*last, request.height, request.width);
    }
    if (parts_.image_encoder) in.image_embeds = encode_image(image, last ? &*last : nullptr);
  }
  // The sampled size decides the latent shape (sample() resolves it alike).
  in.cache = request.cache.value_or(parts_.cache);
  in.noise =
      randn_cpu(latent_shape(plan.size.num_frames, plan.size.height, plan.size.width), request.seed);
  const auto out = sample(in, &ctx);
  report_forwards(request, ctx, out.cache, *in.cache);
  if (!out.video.defined())
    return Video{};  // a CFG-parallel or tensor-parallel member: the leader has it
  return video_from_frames(out.video);
}

}  // namespace omnidp::models::wan
