#pragma once
// WanPipeline: the Wan family's text-to-video and image-to-video as Diffusers' WanPipeline /
// WanImageToVideoPipeline:
//   - expand_timesteps (Wan2.2-TI2V-5B): per-token timesteps; in I2V the first latent frame is
//     the encoded image, blended in with a mask and given timestep 0;
//   - otherwise (Wan2.1, Wan2.2-A14B) one timestep per sample; in I2V the transformer takes
//     36 channels: the noisy latents, a 4-channel first-frame mask (the first frame's mask
//     repeated 4x in time) and the VAE latents of the image followed by zero frames;
//   - CLIP image tokens (Wan2.1 I2V, a transformer with image_dim): the image encoder's
//     hidden_states[-2] of the image (and of the last image after it: first-last-frame) go to
//     every block's added K/V cross-attention, for both CFG branches;
//   - two experts (Wan2.2-A14B): steps with t >= boundary_ratio x num_train_timesteps run
//     `transformer` (high noise) with guidance_scale, the rest `transformer_2` with
//     guidance_scale_2 (unset: guidance_scale).
//
//   noise = randn_cpu([1, z, T, h, w], seed) -> device; UniPC (flow, shift = request.flow_shift);
//   CFG (cond + uncond as one batch of 2 when both text contexts have the same length; skipped
//   when guidance <= 1); latents / (1/std) + mean; VAE decode; (x/2 + 0.5).clamp(0, 1);
//   uint8 = round(255 x video) -> Video [F, H, W, 3].
//
// Built by create_wan_pipeline (factory.hpp) for the Wan family's registry names (family.hpp).
// Text: a request's `prompt_embeds` safetensors file
// (`prompt_embeds` [1, L, D], optional `negative_prompt_embeds`) or the pipeline's TextEncoder.
//
// Ownership and threading: the worker owns the pipeline and calls generate() from one thread.

#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/models/layers/host_weights.hpp"
#include "omnidp/models/pipeline.hpp"
#include "omnidp/models/pipelines/adapters.hpp"
#include "omnidp/models/pipelines/step_cache.hpp"
#include "omnidp/models/request_plan.hpp"
#include "omnidp/models/schedulers/unipc.hpp"
#include "omnidp/models/text/encoder.hpp"
#include "omnidp/models/vision/clip.hpp"
#include "omnidp/models/wan/transformer.hpp"
#include "omnidp/models/wan/vae.hpp"

namespace omnidp::models::wan {

struct WanPipelineParts {
  WanTransformer3DModel transformer{nullptr};
  WanTransformer3DModel transformer_2{nullptr};  // the low-noise expert (Wan2.2-A14B), or none
  std::optional<double> boundary_ratio;          // model_index.json; set exactly with transformer_2
  // model.expert_residency swap: one expert on the device at a time; both are given in host
  // memory, keep a page-locked host copy made at construction, and take turns in one device
  // buffer, so a move is one host-to-device copy; needs transformer_2.
  bool swap_experts = false;
  bool expand_timesteps = false;  // model_index.json (Wan2.2-TI2V-5B: true)
  AutoencoderKLWan vae{nullptr};
  std::unique_ptr<TextEncoder> text_encoder;  // may be null: requests then need prompt_embeds
  // image_encoder/ + image_processor/ (Wan2.1 I2V); set exactly when the transformer has
  // image_dim.
  std::unique_ptr<vision::ClipImageEncoder> image_encoder;
  UniPCOptions scheduler;  // flow_shift is replaced per request
  std::string model_name;
  // The released checkpoint the layout is (wan_variant_name; empty: none): its MagCache preset.
  std::string checkpoint;
  std::string device_name;
  bool cfg_batch = true;  // cond + uncond as one forward of batch 2 (when the shapes allow)
  // generation.cache: the step cache of every request (pipelines/step_cache.hpp); with one
  // the branches run as two forwards.
  StepCacheConfig cache;
  std::uint64_t max_image_pixels = 4096ULL * 4096ULL;  // I2V images larger are refused
  // The transformers' block GEMMs run in FP8 (quantize_fp8 was called): a request's LoRA
  // adapters are fused into the weights, then quantized again.
  bool fp8 = false;
};

// One sampling run, everything explicit (the refcheck runners call this directly).
struct WanSampleInputs {
  int num_frames = 0;  // rounded down to 4k+1 as the reference does
  int height = 0;      // rounded down to a multiple of vae_spatial * patch
  int width = 0;
  int num_inference_steps = 0;
  double guidance_scale = 5.0;
  std::optional<double> guidance_scale_2;  // the low-noise expert's; unset: guidance_scale
  double flow_shift = 5.0;
  torch::Tensor noise;                   // [1, z, T, h, w] float32, any device
  torch::Tensor prompt_embeds;           // [1, L, text_dim]
  torch::Tensor negative_prompt_embeds;  // [1, L', text_dim]; needed when guidance > 1
  torch::Tensor image;                   // [1, 3, H, W] in [-1, 1] (I2V); undefined for T2V
  torch::Tensor last_image;  // [1, 3, H, W]: first-last-frame to video (not expand_timesteps)
  // [1, Li, image_dim]: the CLIP tokens (encode_image) for a transformer with image_dim.
  torch::Tensor image_embeds;  // This request's step cache (a manifest line's "cache"); unset: the parts' generation.cache.
  std::optional<StepCacheConfig> cache;
};

struct WanSampleOutputs {
  torch::Tensor final_latents;  // [1, z, T, h, w] float32 (before de-normalisation)
  CacheReport cache;            // the transformer forwards and the step cache's decisions
  torch::Tensor video;          // [1, F, H, W, 3] float32 in [0, 1] on the pipeline's device
};

// The text side of one sampling run (WanPipeline::sample): the contexts on the device, whether
// its steps are guided and how the CFG branches run on this rank.
struct WanTextInputs {
  bool guided = false;    // guidance_scale > 1 (models/guidance.hpp, GuidanceRule::scale_above_one)
  bool batched = false;   // both branches as one forward of batch 2 (`context` holds both)
  torch::Tensor context;  // the prompt's [1, L, D], or prompt and negative as [2, L, D]
  torch::Tensor negative;      // guided: the negative prompt's [1, L', D]
  torch::Tensor image_tokens;  // the CLIP tokens, for the transformer with image_dim
  Collective* cfg = nullptr;   // GenerateContext::cfg
  int branch = 0;              // this rank's branch in `cfg` (0: conditional)
};

// The image side of one sampling run: expand_timesteps blends `condition` into the latents
// where `mask` is 0; the channel-concat transformers take `concat` after the latents.
struct WanImageConditioning {
  torch::Tensor mask;        // [1, 1, T, h, w]: 0 on a conditioned latent frame
  torch::Tensor condition;   // expand_timesteps with an image: its normalised latent
  torch::Tensor concat;      // image-to-video channels: [frame mask (4 ch), image latents]
  torch::Tensor token_mask;  // `mask` per transformer token (expand_timesteps' timesteps)
  // (1 - mask) x condition + mask x latents with a condition; `latents` otherwise.
  [[nodiscard]] torch::Tensor blend(const torch::Tensor& latents) const;
};

class WanPipeline final : public Pipeline {
 public:
  WanPipeline(WanPipelineParts parts, torch::Device device);

  [[nodiscard]] Video generate(const Request& request, const GenerateContext& ctx) override;
  [[nodiscard]] std::string model_name() const override { return parts_.model_name; }
  [[nodiscard]] std::string device_name() const override { return parts_.device_name; }
  // wan_request_flops (models/wan/flops.hpp) at the size generate() runs: the context length
  // of an embeddings file's tensors, else 512; the text encoder's FLOPs for the prompt (and the
  // negative prompt with CFG) unless the file holds them. nullopt when a prompt needs the text
  // encoder and the pipeline has none (generate() fails then).
  [[nodiscard]] std::optional<RequestFlops> flops(const Request& request) const override;

  // The denoising loop and decode. `ctx` may be null. Throws ModelError on bad shapes and
  // when abandoned.
  [[nodiscard]] WanSampleOutputs sample(const WanSampleInputs& in, const GenerateContext* ctx);

  // The image encoder's tokens of `image`, followed by those of `last_image` where given
  // (first-last-frame: the transformer's pos_embed covers both), [1, Li, image_dim]; ModelError
  // without an image encoder.
  [[nodiscard]] torch::Tensor encode_image(const RgbImage& image,
                                           const RgbImage* last_image = nullptr);

  // The latent shape [1, z, T, h, w] of a request size (after the reference's rounding); z is
  // the VAE's z_dim.
  [[nodiscard]] std::vector<std::int64_t> latent_shape(int num_frames, int height, int width) const;

  // Expert moves so far (swap_experts): one at the boundary of each request that crosses it,
  // one at the start of each request after the first.
  [[nodiscard]] std::int64_t expert_swaps() const noexcept { return expert_swaps_; }

  [[nodiscard]] WanTransformer3DModel& transformer() noexcept { return parts_.transformer; }
  [[nodiscard]] AutoencoderKLWan& vae() noexcept { return parts_.vae; }
  [[nodiscard]] torch::Device device() const noexcept { return device_; }

 private:
  // How this pipeline resolves a request (models/request_plan.hpp): the size rounded as
  // WanPipeline does with this VAE and patch, every step guided when guidance_scale > 1.
  [[nodiscard]] PlanRules plan_rules() const;
  // sample()'s parts, in order: the size (rounded, with a warning) checked against the noise;
  // the text contexts; the image conditioning (VAE-encodes the image); the denoising loop
  // (the experts by timestep, the guided steps, the step cache: its report into `report`),
  // returning the final latents; the leader's decode to [1, F, H, W, 3] float32 in [0, 1].
  [[nodiscard]] VideoSize checked_size(const WanSampleInputs& in) const;
  [[nodiscard]] WanTextInputs text_inputs(const WanSampleInputs& in, const GenerateContext* ctx,
                                          const StepCacheConfig& cache) const;
  [[nodiscard]] WanImageConditioning image_conditioning(const WanSampleInputs& in,
                                                        const VideoSize& size);
  [[nodiscard]] torch::Tensor denoise(const WanSampleInputs& in, const WanTextInputs& text,
                                      const WanImageConditioning& image, const StepCacheConfig& cache,
                                      const GenerateContext* ctx, CacheReport& report);
  [[nodiscard]] torch::Tensor decode(const torch::Tensor& latents);
  // The expert of each step of `timesteps` (0: transformer, 1: transformer_2 below the
  // boundary_ratio x num_train_timesteps).
  [[nodiscard]] std::vector<int> expert_schedule(const torch::Tensor& timesteps) const;

  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> text_embeddings(const Request& request,
                                                                        bool need_negative);
  [[nodiscard]] torch::Tensor encode_text(const std::string& text);

  WanPipelineParts parts_;
  torch::Device device_;
  // swap_experts: makes expert `index` (0: transformer, 1: transformer_2) the one on the device,
  // moving the other to host memory first; logs the seconds.
  void make_resident(int index);

  // A request's LoRA adapters (a manifest line's "lora") over the experts.
  std::unique_ptr<RequestAdapters> adapters_;
  void select_adapters(const Request& request);

  std::string cached_negative_text_;
  torch::Tensor cached_negative_;
  // swap_experts: each expert's page-locked host copy (layers/host_weights.hpp), by index.
  std::vector<std::unique_ptr<HostWeightCopy>> host_copies_;
  torch::Tensor expert_buffer_;  // swap_experts: the device buffer of the resident expert
  int resident_ = 0;             // swap_experts: the expert on the device
  std::int64_t expert_swaps_ = 0;
};

}  // namespace omnidp::models::wan
