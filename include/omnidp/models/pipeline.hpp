#pragma once
// The one narrow interface the worker sees of a model, plus what the coordinator may know of a
// model without loading it. Torch-free: runtime code includes this header only.
//
// Ownership: a worker owns its Pipeline (std::unique_ptr) for the whole job, creates it once
// on its own thread and calls generate() from that thread only, one request at a time.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "omnidp/common/video.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/manifest/request.hpp"
#include "omnidp/models/guidance.hpp"

namespace omnidp::runtime {
class Collective;  // runtime/collective.hpp: torch-free, MPI-free
}  // namespace omnidp::runtime

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
  // Heights and widths this model takes without rounding: VAE x patch (32 for Wan).
  [[nodiscard]] int size_multiple() const noexcept {
    return vae_spatial * (patch_h > patch_w ? patch_h : patch_w);
  }
};

// Facts of a registered model, without loading weights (reads at most a config.json of the
// snapshot: hunyuanvideo-1.5's transformer/config.json target_size). Throws ConfigError for
// unknown names, WeightsError for an unreadable config.
[[nodiscard]] ModelInfo describe_model(const ModelConfig& model);

// The defaults of the values a manifest line may leave out and a snapshot carries
// (docs/configuration.md "Generation defaults"): generation.guidance_scale / flow_shift when
// the YAML sets them; else, with model.path, the snapshot's guider/ guidance_scale
// (hunyuanvideo-1.5; config.json or guider_config.json) and scheduler/ shift
// (FlowMatchEulerDiscreteScheduler) or flow_shift (UniPCMultistepScheduler; config.json or
// scheduler_config.json); else the model's default. Reads those JSON files only, never
// weights. Throws ConfigError for an unknown model, WeightsError naming the file for a config
// that is unreadable or holds a bad value.
struct GenerationDefaults {
  ValueOrigin guidance_scale;
  ValueOrigin flow_shift;
};
[[nodiscard]] GenerationDefaults resolve_generation_defaults(const Config& config);
// "guidance_scale 6 (snapshot guider/guider_config.json), flow_shift 5 (model default)".
[[nodiscard]] std::string describe_generation_defaults(const GenerationDefaults& defaults);
// to_yaml(config) followed by a comment line with describe_generation_defaults(): the
// effective configuration as run_job prints it and the results files store it.
[[nodiscard]] std::string effective_config_yaml(const Config& config);

// The "weights identity" part of the input key: "synthetic", "random:<seed>" for seeded
// weights, otherwise "snapshot-sha256:<hex>": digest_snapshot(model.path) over the bytes of
// every weight, config and tokenizer file (models/snapshot_digest.hpp; hashed once, then
// cached). Throws WeightsError if the snapshot is unreadable. omni-dp-batch calls it (through
// job_manifest_options) on rank 0, the coordinator, and in --validate-only / --dry-run.
[[nodiscard]] std::string weights_identity(const ModelConfig& model);

// The options every reader of a job's manifest uses: manifest_options(config,
// weights_identity(config.model)), with the model's size_multiple() so that a size the model
// would round is an error, and, for a model with image_size_target, the size_from_image hook
// (i2v lines without height/width take the model's bucket), the snapshot's one task
// (only_task), and guidance_scale / flow_shift defaults from resolve_generation_defaults().
// Throws as those do.
[[nodiscard]] ManifestOptions job_manifest_options(const Config& config);

// The transformer forwards of one request (GenerateContext::on_forwards).
struct ForwardCounts {
  int forwards = 0;  // forwards the denoising loop asked for
  int computed = 0;  // of them, those whose whole block stack ran (the others: cache hits)
  friend bool operator==(const ForwardCounts&, const ForwardCounts&) = default;
};

// Passed to generate(): lets a long generation stop early when the job abandons work.
struct GenerateContext {
  std::function<bool()> abandoned;                   // polled between denoising steps; may be empty
  std::function<void(int step, int total)> on_step;  // progress callback; may be empty
  int attempt = 1;  // 1-based attempt of this request (retries after transient failures)
  // CFG-parallel (parallel.cfg_parallel_size 2): the replica group's collectives, rank 0 the
  // conditional branch and the group's leader, rank 1 the unconditional one; null otherwise.
  // Every rank of the group calls generate() with the same request; each runs its branch of
  // every step and exchanges the noise predictions, so all take the same scheduler steps.
  // Only the leader's video is kept: a pipeline may return an empty Video on rank 1.
  // With sequence or tensor parallelism too, `cfg` is over the group's ranks that share this
  // rank's sequence and tensor shard (size cfg_parallel_size; null when that is 1).
  runtime::Collective* cfg = nullptr;
  // Ulysses sequence parallel: the group's ranks that share this rank's cfg branch and tensor
  // shard, in sequence-shard order; null when parallel.sequence_parallel_size is 1.
  runtime::Collective* sequence = nullptr;
  // Tensor parallel: the group's ranks that share this rank's cfg branch and sequence shard, in
  // tensor-shard order; null when parallel.tensor_parallel_size is 1.
  runtime::Collective* tensor = nullptr;
  // Called once per successful generate(), before it returns, on every rank of the group, with
  // the whole request's transformer forwards (every CFG branch of the group counted: a guided
  // step asks for 2, an unguided one 1) and how many of them ran their whole block stack; they
  // differ only under a step cache (generation.cache, docs/models.md "Step caching"). May be
  // empty.
  std::function<void(const ForwardCounts&)> on_forwards;
};

// The model FLOPs of one request (docs/performance.md, "MFU"): analytic counts of the matrix
// multiplications and convolutions (2 FLOPs per multiply-add), not of the elementwise work.
struct RequestFlops {
  double transformer = 0.0;  // every denoising forward (x 2 branches with CFG)
  double vae = 0.0;          // the VAE decode, plus the encode of an i2v image
  double text = 0.0;         // the text encoder(s): the prompt, and the negative one with CFG
  double image = 0.0;        // image encoders (HunyuanVideo-1.5 i2v SigLIP)
  [[nodiscard]] double total() const noexcept { return transformer + vae + text + image; }
  friend bool operator==(const RequestFlops&, const RequestFlops&) = default;
};

class Pipeline {
 public:
  virtual ~Pipeline() = default;
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Generates one request. Throws omnidp::Error (ModelError, InputError, ...) on failure; the
  // worker records the failure and goes on. Must be deterministic given request.input_key.
  [[nodiscard]] virtual Video generate(const Request& request, const GenerateContext& ctx) = 0;
  // The model FLOPs of generating `request` (the whole group's work: every CFG branch and
  // sequence shard); nullopt for a model without a count (the worker then records 0 = not
  // counted). Cheap: no tensor work (a prompt may be tokenized).
  [[nodiscard]] virtual std::optional<RequestFlops> flops(const Request& request) const {
    (void)request;
    return std::nullopt;
  }
  [[nodiscard]] virtual std::string model_name() const = 0;
  [[nodiscard]] virtual std::string device_name() const = 0;
};

using PipelineFactory = std::function<std::unique_ptr<Pipeline>(const DeviceBinding&)>;

}  // namespace omnidp
