#pragma once
// The configuration of one omni-dp job (docs/configuration.md).
//
// Flow: YAML text -> parsed straight into these plain structs (defaults below) -> --set
// overrides -> validate_and_resolve() -> one immutable Config shared by every actor.
// The YAML keys are exactly the field names below, in sections named like the members of
// Config (docs/configuration.md lists them). Special YAML forms: parallel.data_parallel_size
// `auto` (stored as 0), parallel.devices `auto` (stored as an empty list), output.compression
// `none | gzip:N | lzf` (stored as compression + gzip_level), generation.guidance_scale and
// flow_shift left out or null (stored as nullopt; to_yaml leaves them out).
// Every error is a ConfigError naming the YAML path and the bad value; unknown keys also name
// the nearest valid key. Owned by value; read-only after resolution, so safe to share across
// threads.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/config/lora.hpp"
#include "omnidp/config/step_cache.hpp"

namespace omnidp {

enum class DType { fp32, bf16, fp16 };
enum class DeviceKind { cuda, cpu };
enum class WeightsSource { pretrained, random };
enum class SchedulerPolicy { dynamic, round_robin };
enum class WorkOrder { cost_desc, manifest };
enum class CompressionKind { none, gzip, lzf };
enum class WaitMode { sleep, busy };
// HDF5 file locking of the results files (docs/results.md, "File locking").
enum class FileLocking { automatic, on, off };  // YAML: auto | on | off
enum class AttentionKernel { automatic, flash, cudnn, efficient, math };
// Weight/activation quantization of the transformer's linear layers (docs/models.md, "FP8").
enum class Quantization { none, fp8 };
// Where a two-expert model's idle expert lives (docs/models.md, "Two experts"): resident (both on
// the GPU) or swap (the idle one in host memory, moved in where the schedule reaches it).
enum class ExpertResidency { resident, swap };
// The replica groups' collectives (docs/runtime.md, "Collectives"). YAML: auto | mpi | nccl.
enum class CollectiveBackend { automatic, mpi, nccl };

struct ModelConfig {
  std::string name = "tiny-wan";  // a registered model (models/model_table.hpp)
  // A shared library that registers more models (docs/models.md, "Out-of-tree models"); "" = none.
  std::string plugin;
  std::string path;  // Diffusers snapshot folder (weights: pretrained)
  WeightsSource weights = WeightsSource::random;
  std::uint64_t weights_seed = 0;  // seed of `weights: random`
  DType dtype = DType::fp32;
  DeviceKind device = DeviceKind::cpu;
  int torch_threads = 0;             // intra-op threads per rank; 0 = libtorch's default
  bool offload_text_encoder = true;  // move text encoders to the CPU after encoding
  // CUDA attention kernels: auto (libtorch's choice) | flash | cudnn | efficient | math.
  AttentionKernel attention = AttentionKernel::automatic;
  // The fused elementwise kernels (models/layers/fused.hpp); false: the reference's eager
  // expressions, kernel for kernel. Part of the numerics profile (config/numerics.hpp).
  bool fused_kernels = true;
  // fp8: W8A8 FP8 GEMMs in the transformer blocks (per-channel weight scales, per-token
  // activation scales; attention stays bf16). Part of the numerics profile.
  Quantization quantization = Quantization::none;
  ExpertResidency expert_residency = ExpertResidency::resident;
  // Decode in spatial tiles, as Diffusers' vae.enable_tiling() (HunyuanVideo-1.5: 256-pixel
  // tiles, 25 % overlap, linear blends): less GPU memory for large videos, other bytes than the
  // untiled decode. Part of the numerics profile.
  bool vae_tiling = false;
  // LoRA adapters fused into the transformer(s) at load for every request (docs/models.md,
  // "LoRA"); a manifest line's "lora" adds its own on top. Paths resolved against the config
  // file's folder; part of the weights identity and the numerics profile.
  std::vector<LoraAdapter> lora;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

struct ParallelConfig {
  int data_parallel_size = 0;      // 0 = auto = world size / ranks per replica
  int tensor_parallel_size = 1;    // > 1 only for a model that implements it (ModelChoice)
  int sequence_parallel_size = 1;  // Ulysses sequence parallel; must divide the model's heads
  // parallel.ulysses_degree, the reference server's name of sequence_parallel_size: 0 = unset;
  // set, it is sequence_parallel_size (validate_and_resolve; both set differently: ConfigError).
  int ulysses_degree = 0;
  int cfg_parallel_size = 1;  // 2: the two CFG branches on the two ranks of a group
  CollectiveBackend collective_backend = CollectiveBackend::automatic;
  std::vector<std::string> devices;  // empty = auto (GPU local_rank); else one per local rank
  bool coordinator_runs_work = true;

  friend bool operator==(const ParallelConfig&, const ParallelConfig&) = default;
};

struct SchedulerConfig {
  SchedulerPolicy policy = SchedulerPolicy::dynamic;
  WorkOrder order = WorkOrder::cost_desc;
  int prefetch = 1;                // requests queued per replica beyond the running one
  int max_retries = 1;             // extra attempts for transient failures
  double request_timeout_s = 0.0;  // 0 = off; hung request -> MPI_Abort
  std::size_t lookahead = 4096;    // cost_desc: requests read ahead and ordered
  double heartbeat_s = 5.0;        // worker heartbeat period
  // A replica that sent nothing (no heartbeat, no message) for this long is taken for lost (a
  // stopped or hung process, an unreachable node): rank 0 aborts the job with exit 75 so that
  // a rerun finishes it. 0 = off; needs heartbeat_s > 0.
  double silent_timeout_s = 300.0;
  // Deadline-aware dispatch (docs/slurm.md): a request is handed out only when it is expected
  // to finish this many seconds before the job's end (--deadline or Slurm's end time).
  double deadline_margin_s = 60.0;

  friend bool operator==(const SchedulerConfig&, const SchedulerConfig&) = default;
};

struct GenerationConfig {  // defaults; each manifest line may override them
  int num_frames = 121;
  int height = 480;
  int width = 848;
  int num_inference_steps = 50;
  // Unset (the key left out, or null): the snapshot's value (guider/ guidance_scale,
  // scheduler/ shift or flow_shift), else the model's documented default
  // (models/pipeline.hpp resolve_generation_defaults; docs/configuration.md "Generation
  // defaults"). Precedence: manifest line > these > snapshot > model default.
  std::optional<double> guidance_scale;
  std::optional<double> flow_shift;
  // The low-noise expert's guidance of a two-expert model (Wan2.2-A14B: transformer_2); unset:
  // guidance_scale, as diffusers does. A model with one transformer refuses it.
  std::optional<double> guidance_scale_2;
  std::uint64_t seed = 42;
  int fps = 24;
  std::string negative_prompt;
  StepCacheConfig cache;  // off by default; a manifest line's "cache" overrides it

  friend bool operator==(const GenerationConfig&, const GenerationConfig&) = default;
};

struct InputConfig {
  std::string manifest;  // JSONL; relative to the config file's folder
  // The tasks whose lines this job runs ("t2v", "i2v"; each at most once, not empty); the
  // lines of other tasks are skipped, neither run nor failed (docs/manifest.md "Tasks").
  std::vector<std::string> tasks{"t2v", "i2v"};
  std::size_t max_line_bytes = 1U << 20;               // longer lines are refused
  std::uint64_t max_image_pixels = 4096ULL * 4096ULL;  // larger images refused before decoding
  // An image whose longer side is more than this many times its shorter side is refused from
  // its header (that request fails): preparing it costs by its shape, not its pixels.
  double max_image_aspect = 32.0;

  friend bool operator==(const InputConfig&, const InputConfig&) = default;
};

struct OutputConfig {
  std::string dir = "results";
  bool store_video = true;
  CompressionKind compression = CompressionKind::none;
  int gzip_level = 0;                                 // 1..9 when compression is gzip
  std::vector<std::string> export_formats;            // e.g. [mp4]
  FileLocking file_locking = FileLocking::automatic;  // auto: off on Lustre, GPFS, NFS, ...
  // Prometheus text file rank 0 rewrites during the run (docs/export.md, "Live metrics");
  // "" = none. Must end in ".prom" (node_exporter's textfile collector reads only those).
  std::string metrics_textfile;
  double metrics_interval_s = 5.0;  // seconds between rewrites, > 0

  friend bool operator==(const OutputConfig&, const OutputConfig&) = default;
};

struct DeterminismConfig {
  bool strict = true;

  friend bool operator==(const DeterminismConfig&, const DeterminismConfig&) = default;
};

// What a run reports of itself (docs/configuration.md, "runtime").
struct RuntimeConfig {
  // Dense bf16 peak TFLOP/s of one GPU for the MFU figures (docs/performance.md, "MFU"); unset
  // (left out or null): the device table of config/peak_flops.hpp, else no MFU. > 0 when set.
  std::optional<double> peak_tflops;

  friend bool operator==(const RuntimeConfig&, const RuntimeConfig&) = default;
};

// Timing of the `synthetic` model (docs/runtime.md, "The synthetic model").
struct SyntheticConfig {
  double seconds_per_gcost = 0.0;  // wall seconds per 1e9 units of estimated cost
  WaitMode wait = WaitMode::sleep;

  friend bool operator==(const SyntheticConfig&, const SyntheticConfig&) = default;
};

// Fault injection, for tests and drills. All off by default.
struct FaultConfig {
  std::vector<std::string> fail_ids;            // these requests always fail
  std::vector<std::string> transient_fail_ids;  // these fail on their first attempt only
  int drain_after = 0;         // rank 0 hands out only this many requests and drains once they
                               // completed (0 = off)
  int kill_rank = -1;          // this rank SIGKILLs itself ...
  int kill_after = 0;          // ... after this many of its own completions (0 = off)
  bool kill_in_write = false;  // ... between the dataset write and the flush instead
  bool stop_not_kill = false;  // ... with SIGSTOP instead (a silent rank: silent_timeout_s)
  std::vector<std::string> hang_ids;  // these requests never finish (request_timeout tests)
  bool signal_at_start = false;       // every rank raises SIGUSR1 at itself before MPI_Init

  friend bool operator==(const FaultConfig&, const FaultConfig&) = default;
};

struct Config {
  ModelConfig model;
  ParallelConfig parallel;
  SchedulerConfig scheduler;
  GenerationConfig generation;
  InputConfig input;
  OutputConfig output;
  DeterminismConfig determinism;
  RuntimeConfig runtime;
  SyntheticConfig synthetic;
  FaultConfig faults;
  std::filesystem::path source_file;  // the YAML file, if any (relative paths resolve from it)

  friend bool operator==(const Config&, const Config&) = default;
};

// How deep lists and maps (JSON arrays and objects) may nest, the outermost one counted: the
// YAML document's map is level 1 and a section's map level 2; a manifest line's object is level
// 1 and its "cache" object level 2 (issue 52, class 4: deep input crashed the recursive
// readers). Deeper is an error naming the file, line and key; the keys nest 4 levels at most.
inline constexpr int kMaxValueNesting = 64;

// Parses YAML text into a Config on top of the defaults. `origin` names the text in YAML
// syntax errors ("<origin>:<line>:<col>: ..."). Unknown keys, duplicate keys (in any map, at
// any depth), values nested deeper than kMaxValueNesting, unknown YAML tags and tags that
// contradict a key's type (`num_frames: !!float 9`; a standard tag that agrees, `!!int 9`, is
// read) throw ConfigError; the last three and duplicates name "<origin>:<line>" first.
// Ranges are checked later by validate_and_resolve().
[[nodiscard]] Config parse_config_yaml(const std::string& yaml_text, const std::string& origin);
// Reads and parses a file and sets `source_file` (absolute): relative `input.manifest` and
// `model.path` in it resolve against its folder. An unreadable file is a ConfigError.
[[nodiscard]] Config load_config_file(const std::filesystem::path& path);
// The embedded default (configs/tiny.yaml compiled in); `source_file` stays empty, so its
// relative paths resolve against the current directory.
[[nodiscard]] Config default_config();
// Applies "section.key=value" overrides in order. `value` is parsed as YAML (a scalar, or
// flow syntax such as [a, b]) and goes through the same checks as the file (their location is
// "--set").
void apply_overrides(Config& config, const std::vector<std::string>& assignments);
// Checks ranges and cross-field rules (first violation -> ConfigError naming the YAML path
// and the bad value), then resolves paths: `input.manifest` and `model.path` against the
// config file's folder (the current directory without one), `output.dir` against the current
// directory. Idempotent.
// `models` are the registered models (models::model_table().choices(); models::validate_config
// passes them): an unknown model.name is an error listing them, with the nearest as a suggestion.
struct ModelChoice {
  std::string name;
  bool has_weights = true;  // false: `weights: pretrained` is refused
  // The transformer's attention head count for this model config (a snapshot's config.json
  // may set it); called only when parallel.sequence_parallel_size > 1, which must divide it.
  // Empty: not checked.
  std::function<int(const ModelConfig&)> attention_heads;
  // false: parallel.tensor_parallel_size > 1 is a ConfigError ("not implemented by model X").
  bool tensor_parallel = false;
  // false: model.quantization fp8 is a ConfigError ("not implemented by model X").
  bool fp8 = false;
  // false: model.vae_tiling true is a ConfigError ("not implemented by model X").
  bool vae_tiling = false;
  // false: model.lora (and a manifest line's "lora") is a ConfigError.
  bool lora = false;
};
void validate_and_resolve(Config& config, const std::vector<ModelChoice>& models);
// model.plugin resolved as validate_and_resolve() resolves it (against the config file's
// folder); "" when unset. The plugin is loaded before validation, which needs its models.
[[nodiscard]] std::string plugin_path(const Config& config);
// Serializes every key (not `source_file`) to YAML that parse_config_yaml() reads back to an
// equal Config; doubles are written in shortest round-trip form.
[[nodiscard]] std::string to_yaml(const Config& config);

// A step cache written as YAML or JSON text (a policy name, or a map {policy: ..., <its
// keys>}: a manifest line's "cache"), read and checked by generation.cache's rules. Faults
// are ConfigErrors whose path starts with `path` ("cache.threshold").
[[nodiscard]] StepCacheConfig parse_step_cache(const std::string& text, const std::string& path);

// Range rules of the generation values, shared with the manifest reader so that a manifest
// line and the config accept the same values. Each returns "" when the value is valid, else
// the reason, naming the value (e.g. "10 is not of the form 4k+1 (e.g. 9 or 13)").
[[nodiscard]] std::string check_num_frames(long long frames);
[[nodiscard]] std::string check_frame_size(long long pixels);  // height or width
[[nodiscard]] std::string check_num_inference_steps(long long steps);
[[nodiscard]] std::string check_guidance_scale(double scale);
[[nodiscard]] std::string check_flow_shift(double shift);
[[nodiscard]] std::string check_fps(long long fps);
[[nodiscard]] std::string check_seed(long long seed);  // 0 .. 2^63-1

[[nodiscard]] const char* to_string(DType v) noexcept;
[[nodiscard]] const char* to_string(DeviceKind v) noexcept;
[[nodiscard]] const char* to_string(WeightsSource v) noexcept;
[[nodiscard]] const char* to_string(AttentionKernel v) noexcept;
[[nodiscard]] const char* to_string(Quantization v) noexcept;
[[nodiscard]] const char* to_string(ExpertResidency v) noexcept;
[[nodiscard]] const char* to_string(CachePolicy v) noexcept;
[[nodiscard]] const char* to_string(SchedulerPolicy v) noexcept;
[[nodiscard]] const char* to_string(WorkOrder v) noexcept;
[[nodiscard]] const char* to_string(WaitMode v) noexcept;
[[nodiscard]] const char* to_string(FileLocking v) noexcept;
[[nodiscard]] const char* to_string(CollectiveBackend v) noexcept;
[[nodiscard]] std::string compression_string(const OutputConfig& output);  // none | gzip:N | lzf

}  // namespace omnidp
