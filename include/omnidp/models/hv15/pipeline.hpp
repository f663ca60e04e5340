#pragma once
// HunyuanVideo15Pipeline: HunyuanVideo-1.5 text-to-video and image-to-video as Diffusers'
// HunyuanVideo15Pipeline / HunyuanVideo15ImageToVideoPipeline:
//
//   noise = randn_cpu([1, 32, (F-1)/4+1, H/16, W/16], seed) -> device, transformer dtype;
//   flow-match Euler (sigmas linspace(1, 0, n+1)[:-1], shift = request.flow_shift);
//   per step: transformer(cat[latents, condition latent, mask]) for the prompt and, when
//   guidance_scale != 1, for the negative prompt (never encoded otherwise: the cfg-distilled
//   checkpoints' guider says 1, so one forward per step); CFG uncond + g (cond - uncond); a
//   `use_meanflow` transformer (the step-distilled I2V) also gets timestep_r = the next
//   timestep, 0 at the last step, on image-to-video only (meanflow_timestep_r);
//   latents / scaling_factor -> VAE decode -> (x/2 + 0.5).clamp(0, 1) -> uint8 round(255 x).
//   I2V: the image (resized to cover the request size with PIL's Lanczos, centre-cropped) is
//   VAE-encoded (posterior mean x scaling_factor) into the first condition frame, the mask
//   channel is 1 on that frame, and the SigLIP tokens of that resized image enter through
//   `image_embeds` (PipelineParts::image_encoder). The request's size is already the model's
//   choice from the image's aspect ratio unless the manifest line set one (docs/manifest.md).
//
// Text, from the first source that has it: a request's `prompt_embeds` safetensors file with
// the pipeline's own argument names (docs/models.md): prompt_embeds [1, L, 3584],
// prompt_embeds_mask [1, L], prompt_embeds_2 [1, L2, 1472], prompt_embeds_mask_2 [1, L2] (byT5;
// absent = no quoted text), the same four with a `negative_` prefix (needed when CFG runs) and
// image_embeds [1, 729, 1152] (I2V SigLIP tokens); the pipeline's TextEncoder (Qwen2.5-VL +
// byT5); with `weights: random`, seeded random embeddings of the real shapes (benchmarks).
//
// Ownership and threading: the worker owns the pipeline and calls generate() from one thread.

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/common/image.hpp"
#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/hv15/vae.hpp"
#include "omnidp/models/layers/image_encoder.hpp"
#include "omnidp/models/pipeline.hpp"
#include "omnidp/models/pipelines/adapters.hpp"
#include "omnidp/models/pipelines/guided_step.hpp"
#include "omnidp/models/pipelines/step_cache.hpp"
#include "omnidp/models/request_plan.hpp"
#include "omnidp/models/schedulers/flow_match_euler.hpp"
#include "omnidp/models/text/encoder.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models::hv15 {

// One prompt's conditioning (masks 1/0, any dtype). embeds_2 may be undefined (no glyph text).
struct TextConditioning {
  torch::Tensor embeds;    // [1, L, text_embed_dim]
  torch::Tensor mask;      // [1, L]
  torch::Tensor embeds_2;  // [1, L2, text_embed_2_dim]
  torch::Tensor mask_2;    // [1, L2]
};

// Shapes of the seeded random embeddings used with `weights: random` (benchmarks): the
// reference's padded lengths, of which the first *_valid tokens are marked valid.
struct RandomTextShape {
  std::int64_t text_tokens = 1000;
  std::int64_t text_valid = 256;
  std::int64_t glyph_tokens = 256;
  std::int64_t glyph_valid = 0;
  std::int64_t image_tokens = 729;
};

struct PipelineParts {
  HunyuanVideo15Transformer3DModel transformer{nullptr};
  AutoencoderKLHunyuanVideo15 vae{nullptr};
  GuidanceOptions guidance;
  // FlowMatchEulerDiscreteScheduler (scheduler/scheduler_config.json); a request's flow_shift
  // replaces `shift`.
  FlowMatchEulerOptions scheduler;
  // Qwen2.5-VL + byT5 prompt encoder (PromptEmbedding with embeds_2/mask_2); may be null: then
  // requests need a prompt_embeds file (or weights: random for seeded embeddings).
  std::unique_ptr<TextEncoder> text_encoder;
  // SigLIP image tokens for I2V (the reference's image_encoder + feature_extractor); may be
  // null: then image_embeds come from the request's prompt_embeds file, or are seeded random
  // with weights: random.
  std::unique_ptr<ImageEncoder> image_encoder;
  std::string model_name = "hunyuanvideo-1.5";
  std::string device_name;
  bool random_conditioning = false;  // weights: random -> seeded embeddings when missing
  RandomTextShape random_shape;
  std::uint64_t max_image_pixels = 4096ULL * 4096ULL;
  // generation.cache: the step cache of every request (pipelines/step_cache.hpp); with one the
  // branches run as two forwards.
  StepCacheConfig cache;
  // The transformer's block GEMMs run in FP8: a request's adapters are fused, then quantized
  // again.
  bool fp8 = false;
};

// One sampling run with everything explicit (tests and benchmarks call it directly).
struct SampleInputs {
  int num_frames = 0;
  int height = 0;
  int width = 0;
  int num_inference_steps = 0;
  double guidance_scale = 6.0;
  double flow_shift = 5.0;
  torch::Tensor noise;  // [1, latent, (F-1)/4+1, H/16, W/16] float32, any device
  TextConditioning prompt;
  TextConditioning negative;   // needed when CFG runs
  torch::Tensor image;         // I2V: [1, 3, H, W] in [-1, 1]; undefined for T2V
  torch::Tensor image_embeds;  // I2V: [1, Li, image_embed_dim]; undefined for T2V  // This request's
                               // step cache (a manifest line's "cache"); unset: the parts' generation.cache.
  std::optional<StepCacheConfig> cache;
};

struct SampleOutputs {
  torch::Tensor final_latents;  // [1, latent, T, h, w] (before / scaling_factor)
  CacheReport cache;            // the transformer forwards and the step cache's decisions
  torch::Tensor video;          // [1, F, H, W, 3] float32 in [0, 1] on the pipeline's device
};

class HunyuanVideo15Pipeline final : public Pipeline {
 public:
  HunyuanVideo15Pipeline(PipelineParts parts, torch::Device device);

  [[nodiscard]] Video generate(const Request& request, const GenerateContext& ctx) override;
  [[nodiscard]] std::string model_name() const override { return parts_.model_name; }
  [[nodiscard]] std::string device_name() const override { return parts_.device_name; }
  // hv15_request_flops (models/hv15/flops.hpp) for the request: the valid text tokens and the
  // text encoders' FLOPs from the embeddings file's masks, the text encoder (encode_cost) or the
  // random shapes, for the prompt and, on the steps with CFG, the negative prompt; i2v adds the
  // image tokens to both branches, the VAE encode and the SigLIP encoder's FLOPs. nullopt where
  // generate() would fail for want of a source.
  [[nodiscard]] std::optional<RequestFlops> flops(const Request& request) const override;

  // The denoising loop and decode; `ctx` may be null. Throws ModelError on bad shapes and
  // when abandoned.
  [[nodiscard]] SampleOutputs sample(const SampleInputs& in, const GenerateContext* ctx);
  // Only the latents (no decode), for benchmarks.
  [[nodiscard]] torch::Tensor denoise(const SampleInputs& in, const GenerateContext* ctx,
                                      CacheReport* report = nullptr);

  // [1, latent, (F-1)/4+1, H/16, W/16] as the reference's prepare_latents.
  [[nodiscard]] std::vector<std::int64_t> latent_shape(int num_frames, int height, int width) const;

  // The conditioning of a request, from the first source that has it: its prompt_embeds file,
  // the text encoder (the negative prompt's encoding is cached per replica), seeded random
  // embeddings (weights: random). Throws InputError naming the file and the missing/bad key.
  [[nodiscard]] TextConditioning prompt_conditioning(const Request& request, bool negative);

  [[nodiscard]] HunyuanVideo15Transformer3DModel& transformer() noexcept {
    return parts_.transformer;
  }
  [[nodiscard]] AutoencoderKLHunyuanVideo15& vae() noexcept { return parts_.vae; }
  [[nodiscard]] torch::Device device() const noexcept { return device_; }

 private:
  // How this pipeline resolves a request (models/request_plan.hpp): the size as given, the
  // guider's steps (PipelineParts::guidance).
  [[nodiscard]] PlanRules plan_rules() const;

  // image_embeds of an I2V request: its prompt_embeds file's `image_embeds`, else the image
  // encoder on `resized`, else seeded random (weights: random).
  [[nodiscard]] torch::Tensor image_embeds_for(const Request& request, const RgbImage& resized);

  // The valid tokens and the encoders' FLOPs of one branch's text; nullopt without a source.
  [[nodiscard]] std::optional<EncodeCost> text_cost(const Request& request, bool negative) const;

  // The request's prompt_embeds file (null: it has none), mapped once per request and shared
  // by the FLOP count, both branches' conditioning and the image tokens: the file of the last
  // request is kept until a request names another path or content (prompt_embeds_sha256, which
  // the manifest reader fills; a request without it is always read anew).
  // InputError naming the file when it cannot be read. Called on the worker thread only.
  [[nodiscard]] const SafetensorsFile* embeddings_file(const Request& request) const;

  PipelineParts parts_;
  torch::Device device_;
  // A request's LoRA adapters (a manifest line's "lora").
  std::unique_ptr<RequestAdapters> adapters_;
  std::string cached_negative_text_;
  TextConditioning cached_negative_;
  struct EmbeddingsFile {
    std::string path, sha256;
    std::shared_ptr<const SafetensorsFile> file;
  };
  mutable EmbeddingsFile embeddings_;  // embeddings_file()'s one-entry cache
};

// Whether a denoising step passes `timestep_r` (TransformerInputs::timestep_r): only a
// `use_meanflow` transformer, and only for image-to-video, as Diffusers'
// HunyuanVideo15ImageToVideoPipeline does (its HunyuanVideo15Pipeline, text-to-video, never
// passes it; docs/models.md, "HunyuanVideo-1.5's released variants").
[[nodiscard]] bool meanflow_timestep_r(const TransformerOptions& options,
                                       bool image_to_video) noexcept;

// The MeanFlow `timestep_r` of step `index`: timesteps[index + 1], or 0 at the last step (a 0-d
// tensor of the schedule's dtype). Throws ModelError for an index outside the schedule.
[[nodiscard]] torch::Tensor next_timestep(const torch::Tensor& timesteps, int index);

// Seeded random conditioning of the real shapes (also used by benchmarks): Qwen and byT5
// embeddings drawn with randn_cpu from a seed derived from `text`, masks valid on the first
// *_valid tokens.
[[nodiscard]] TextConditioning random_text_conditioning(const std::string& text,
                                                        const TransformerOptions& options,
                                                        const RandomTextShape& shape);

// FlowMatchEulerDiscreteScheduler options from a Diffusers scheduler config: shift and
// num_train_timesteps; settings this scheduler does not implement (dynamic shifting, Karras /
// exponential / beta sigmas, shift_terminal, invert_sigmas, stochastic sampling) and another
// class are ModelErrors naming `origin`.
[[nodiscard]] FlowMatchEulerOptions scheduler_options_from_json(const nlohmann::json& config,
                                                                const std::string& origin);

// Seeded random weights (init_random_weights; the VAE's [C,1,1,1] RMS gains set to 1 like
// real norm gains), frozen, in eval mode, on `device` in `dtype`. A transformer for a tensor
// shard gets its slices of the unsharded model's weights (HunyuanVideo15Transformer3DModelImpl::shard_plan).
[[nodiscard]] HunyuanVideo15Transformer3DModel random_transformer(const TransformerOptions& options,
                                                                  std::uint64_t seed,
                                                                  torch::ScalarType dtype,
                                                                  torch::Device device,
                                                                  TensorShard shard = {});
[[nodiscard]] AutoencoderKLHunyuanVideo15 random_vae(const VaeOptions& options, std::uint64_t seed,
                                                     torch::ScalarType dtype, torch::Device device);
// A Diffusers component folder (config.json + safetensors or shards), loaded strictly; for a
// tensor shard only its slices are read (HunyuanVideo15Transformer3DModelImpl::shard_plan).
[[nodiscard]] HunyuanVideo15Transformer3DModel load_transformer(const std::filesystem::path& dir,
                                                                torch::ScalarType dtype,
                                                                torch::Device device,
                                                                TensorShard shard = {});
[[nodiscard]] AutoencoderKLHunyuanVideo15 load_vae(const std::filesystem::path& dir,
                                                   torch::ScalarType dtype, torch::Device device);

// Builds a pipeline from explicit options with seeded random weights (tests, benchmarks).
[[nodiscard]] std::unique_ptr<HunyuanVideo15Pipeline> make_random_pipeline(
    const TransformerOptions& transformer, const VaeOptions& vae, std::uint64_t seed,
    torch::ScalarType dtype, torch::Device device, TensorShard shard = {});

}  // namespace omnidp::models::hv15
