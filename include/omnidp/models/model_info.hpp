#pragma once
// What the job knows of a model without loading it (torch-free): the device a replica runs on,
// the model family's static facts (describe_model, pipeline.hpp) and the generation defaults
// with where each came from. Plain values; the model table (model_table.hpp) holds one
// ModelInfo per registered model.

#include <optional>
#include <string>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"
#include "omnidp/models/cost_terms.hpp"
#include "omnidp/models/guidance.hpp"

namespace omnidp {

// The device a rank's replica runs on.
struct DeviceBinding {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;     // CUDA ordinal (ignored on cpu)
  std::string name;  // human-readable, e.g. "cuda:3 (NVIDIA H200)" or "cpu"
  // This rank's tensor shard (parallel.tensor_parallel_size): the factory builds and loads
  // only shard tensor_rank of tensor_size of the transformer (docs/models.md, "Tensor
  // parallelism"); generate() then gets GenerateContext::tensor of that size and rank.
  // Filled by the caller of bind_device: tensor_size = tensor_parallel_size, tensor_rank =
  // group rank % tensor_parallel_size (runtime/topology.hpp).
  int tensor_rank = 0;
  int tensor_size = 1;
};

// A generation value and where it came from: "manifest line N", "yaml generation.KEY",
// "snapshot guider/guider_config.json" (the file, relative to model.path), "model default".
struct ValueOrigin {
  double value = 0.0;
  std::string origin;
};

// Static facts of a model family used for cost estimates and latent shapes.
struct ModelInfo {
  std::string name;
  int vae_temporal = 4;  // latent frames = (frames - 1) / vae_temporal + 1
  int vae_spatial = 16;  // latent height = height / vae_spatial
  int patch_t = 1;
  int patch_h = 1;
  int patch_w = 1;
  bool supports_i2v = true;
  int hidden_size = 0;  // transformer width (cost model's a, b scale with it)
  // Attention heads of the transformer (a snapshot's config.json may set them: describe);
  // parallel.sequence_parallel_size must divide them. 0: not checked.
  int attention_heads = 0;
  // The transformer implements parallel.tensor_parallel_size > 1.
  bool tensor_parallel = false;
  // The transformer implements model.quantization fp8 (W8A8 FP8 linear layers).
  bool fp8 = false;
  // The VAE implements model.vae_tiling (Diffusers' enable_tiling()).
  bool vae_tiling = false;
  // The transformer takes LoRA adapters (model.lora, a manifest line's "lora").
  bool lora = false;
  int num_layers = 0;
  // > 0: the model picks an i2v request's output size from its image (HunyuanVideo-1.5: the
  // transformer config's target_size, models/size_buckets.hpp) unless the manifest line sets
  // height/width; 0: every request takes generation.height x width.
  int image_size_target = 0;
  // The Wan image-to-video checkpoints (A14B I2V, Wan2.1 I2V): an i2v request without
  // height/width keeps its image's aspect ratio at the area of generation.height x width,
  // each side rounded down to size_multiple() (diffusers' max_area recipe), instead of taking
  // generation.height x width. Exclusive with image_size_target.
  bool image_size_from_area = false;
  // An i2v line may give last_image (first-last-frame to video: the Wan image-to-video
  // checkpoints without CLIP tokens, or with a first-last-frame transformer); a first-last-frame
  // transformer (pos_embed_seq_len) needs it on every line.
  bool last_image = false;
  bool requires_last_image = false;
  // The one task a loaded snapshot serves (HunyuanVideo-1.5 pretrained: model_index.json's
  // pipeline class, else transformer/config.json task_type) and where that was read; empty:
  // both (Wan TI2V, random weights).
  std::optional<Task> snapshot_task;
  std::string snapshot_task_origin;
  // The model's documented generation defaults (docs/models.md), taken when neither the
  // manifest line, the YAML nor the snapshot sets a value (resolve_generation_defaults).
  double default_guidance_scale = 5.0;
  double default_flow_shift = 5.0;
  // Which steps of a request are guided (models/guidance.hpp): the Wan family's guidance_scale
  // > 1, HunyuanVideo-1.5's guider (its snapshot's guider/ config when model.path has one), as
  // the pipeline runs them; the cost model counts a guided step twice.
  models::StepGuidance guidance;
  // The pipeline rounds a request's size as its reference does (the Wan family:
  // models/request_plan.hpp, sample_size); false: it samples the size as given.
  bool rounds_size = false;
  // Two experts (Wan2.2-A14B): generation.guidance_scale_2 / a line's guidance_scale_2 apply;
  // other models refuse them.
  bool two_experts = false;
  // The pipeline routes its forwards through RequestCaches (generation.cache applies); a
  // model without it refuses a cache rather than record one it never ran.
  bool step_cache = false;
  // The registration's own a-priori cost coefficients (ModelRegistration::cost), set by
  // describe_model; empty: the generic prior (cost.hpp, prior_coefficients).
  std::optional<CostCoefficients> cost_prior;
  // Heights and widths this model takes without rounding: VAE x patch (32 for Wan).
  [[nodiscard]] int size_multiple() const noexcept {
    return vae_spatial * (patch_h > patch_w ? patch_h : patch_w);
  }
};

// The values a manifest line may leave out, with their origins (resolve_generation_defaults,
// pipeline.hpp).
struct GenerationDefaults {
  ValueOrigin guidance_scale;
  ValueOrigin flow_shift;
};

}  // namespace omnidp
