#pragma once
// The configuration of one omni-dp job (SPEC section 3).
//
// Flow: YAML text -> RawConfig-free parse straight into these plain structs (defaults below)
// -> --set overrides -> validate_and_resolve() -> one immutable Config shared by every actor.
// Every error is a ConfigError naming the YAML path and the bad value; unknown keys also name
// the nearest valid key. Owned by value; read-only after resolution, so safe to share across
// threads.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace omnidp {

enum class DType { fp32, bf16, fp16 };
enum class DeviceKind { cuda, cpu };
enum class WeightsSource { pretrained, random };
enum class SchedulerPolicy { dynamic, round_robin };
enum class WorkOrder { cost_desc, manifest };
enum class CompressionKind { none, gzip, lzf };
enum class WaitMode { sleep, busy };

struct ModelConfig {
  std::string name = "tiny-wan";  // synthetic | tiny-wan | wan2.2-ti2v-5b | hunyuanvideo-1.5
  std::string path;               // Diffusers snapshot folder (weights: pretrained)
  WeightsSource weights = WeightsSource::random;
  std::uint64_t weights_seed = 0;  // seed of `weights: random`
  DType dtype = DType::fp32;
  DeviceKind device = DeviceKind::cpu;
  int torch_threads = 0;            // intra-op threads per rank; 0 = libtorch's default
  bool offload_text_encoder = true;  // move text encoders to the CPU after encoding
};

struct ParallelConfig {
  int data_parallel_size = 0;  // 0 = auto = world size / ranks per replica
  int tensor_parallel_size = 1;
  int cfg_parallel_size = 1;
  std::vector<std::string> devices;  // empty = auto (GPU local_rank); else one per local rank
  bool coordinator_runs_work = true;
};

struct SchedulerConfig {
  SchedulerPolicy policy = SchedulerPolicy::dynamic;
  WorkOrder order = WorkOrder::cost_desc;
  int prefetch = 1;                 // requests queued per replica beyond the running one
  int max_retries = 1;              // extra attempts for transient failures
  double request_timeout_s = 0.0;   // 0 = off; hung request -> MPI_Abort
  std::size_t lookahead = 4096;     // cost_desc: requests read ahead and ordered
  double heartbeat_s = 5.0;         // worker heartbeat period
};

struct GenerationConfig {  // defaults; each manifest line may override them
  int num_frames = 121;
  int height = 480;
  int width = 848;
  int num_inference_steps = 50;
  double guidance_scale = 6.0;
  double flow_shift = 5.0;
  std::uint64_t seed = 42;
  int fps = 24;
  std::string negative_prompt;
};

struct InputConfig {
  std::string manifest;                       // JSONL; relative to the config file's folder
  std::size_t max_line_bytes = 1U << 20;      // longer lines are refused
  std::uint64_t max_image_pixels = 4096ULL * 4096ULL;  // larger images refused before decoding
};

struct OutputConfig {
  std::string dir = "results";
  bool store_video = true;
  CompressionKind compression = CompressionKind::none;
  int gzip_level = 0;                 // 1..9 when compression is gzip
  std::vector<std::string> export_formats;  // e.g. [mp4]
};

struct DeterminismConfig {
  bool strict = true;
};

// Timing of the `synthetic` model (SPEC section 8).
struct SyntheticConfig {
  double seconds_per_gcost = 0.0;  // wall seconds per 1e9 units of estimated cost
  WaitMode wait = WaitMode::sleep;
};

// Fault injection, for tests and drills. All off by default.
struct FaultConfig {
  std::vector<std::string> fail_ids;            // these requests always fail
  std::vector<std::string> transient_fail_ids;  // these fail on their first attempt only
  int drain_after = 0;           // rank 0 drains the job after this many completions (0 = off)
  int kill_rank = -1;            // this rank SIGKILLs itself ...
  int kill_after = 0;            // ... after this many of its own completions (0 = off)
  bool kill_in_write = false;    // ... between the dataset write and the flush instead
  std::vector<std::string> hang_ids;  // these requests never finish (request_timeout tests)
};

struct Config {
  ModelConfig model;
  ParallelConfig parallel;
  SchedulerConfig scheduler;
  GenerationConfig generation;
  InputConfig input;
  OutputConfig output;
  DeterminismConfig determinism;
  SyntheticConfig synthetic;
  FaultConfig faults;
  std::filesystem::path source_file;  // the YAML file, if any (relative paths resolve from it)
};

// Parses YAML text into a Config on top of the defaults. `origin` names the text in errors.
[[nodiscard]] Config parse_config_yaml(const std::string& yaml_text, const std::string& origin);
// Reads and parses a file; relative paths in it resolve against its folder.
[[nodiscard]] Config load_config_file(const std::filesystem::path& path);
// The embedded default (configs/tiny.yaml compiled in).
[[nodiscard]] Config default_config();
// Applies "a.b=c" overrides (YAML scalar or flow syntax for c), with the same checks as a file.
void apply_overrides(Config& config, const std::vector<std::string>& assignments);
// Checks ranges and cross-field rules; resolves relative paths. Throws ConfigError.
void validate_and_resolve(Config& config);
// Serializes to YAML that parse_config_yaml() reads back to an equal Config.
[[nodiscard]] std::string to_yaml(const Config& config);

[[nodiscard]] const char* to_string(DType v) noexcept;
[[nodiscard]] const char* to_string(DeviceKind v) noexcept;
[[nodiscard]] const char* to_string(WeightsSource v) noexcept;
[[nodiscard]] const char* to_string(SchedulerPolicy v) noexcept;
[[nodiscard]] const char* to_string(WorkOrder v) noexcept;
[[nodiscard]] const char* to_string(WaitMode v) noexcept;
[[nodiscard]] std::string compression_string(const OutputConfig& output);  // none | gzip:N | lzf

}  // namespace omnidp
