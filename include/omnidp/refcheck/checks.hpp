#pragma once
// What a refcheck case runner compares with (refcheck.hpp dispatches the case folders to the
// runners, the *_cases.hpp headers declare them): the options, one check's result, the error
// measure and the tolerance classes of the fixture READMEs, the case.json readers and the
// pipeline and step-cache comparisons the runners share. Thread-safety: run from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp::refcheck {

struct RefcheckOptions {
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat32;  // kFloat32 or kBFloat16 (model weights/compute)
  std::string filter;  // run only cases whose name contains this (empty: all)
  // A case's LoRA adapters as a manifest line's set (beside the layers, RequestAdapters)
  // instead of fused as model.lora.
  bool lora_per_request = false;
};

struct CaseResult {
  std::string case_name;  // folder path relative to DIR
  std::string check;      // what was compared, e.g. "out_scalar_t"
  double max_rel_error = 0.0;
  double tolerance = 0.0;
  enum class Status { pass, fail, skip } status = Status::skip;
  std::string note;  // why a check failed or was skipped; optional detail otherwise
};

[[nodiscard]] std::string_view to_string(CaseResult::Status status) noexcept;

// max|ours - ref| / max(1, max|ref|) over the whole tensor, in float64 on the CPU.
// NaN or inf in `ours` gives +inf. Shapes must match (throws std::invalid_argument otherwise).
[[nodiscard]] double max_rel_error(const torch::Tensor& ours, const torch::Tensor& ref);

// Tolerance classes of the fixture READMEs. float32: exact 0, scheduler 1e-6, forward 1e-4
// (one transformer / VAE / text-encoder forward), pipeline 1e-3 (video in [0,1]).
// bf16 (weights and compute in bf16): forward 8e-2 and pipeline 5e-2; exact and scheduler
// checks are computed in float32/float64 whatever the dtype and keep their tolerances.
enum class ToleranceClass { exact, scheduler, forward, pipeline };
[[nodiscard]] double tolerance(ToleranceClass cls, const RefcheckOptions& options) noexcept;

// One check: PASS when the shapes match and max_rel_error <= tol; FAIL otherwise (the note
// says why: shape mismatch, non-finite values).
[[nodiscard]] CaseResult compare(const std::string& check, const torch::Tensor& ours,
                                 const torch::Tensor& ref, double tol, std::string note = {});
[[nodiscard]] CaseResult skip(const std::string& check, std::string note);

// The shards a folder's safetensors index names that the folder lacks (each once), and where
// its case.json's transformer_shard_1 says they are, as written there ("" without one): a
// MeanFlow fixture's shard 1 is another fixture's file.
struct MissingShards {
  std::vector<std::string> names;
  std::string shard_1;
};
[[nodiscard]] MissingShards missing_shards(const std::filesystem::path& folder);

// case.json's value of `key` as a T; a missing key is a ModelError naming the case folder.
template <typename T>
[[nodiscard]] T required(const nlohmann::json& case_json, const char* key,
                         const std::filesystem::path& case_dir) {
  if (!case_json.contains(key)) {
    throw ModelError(std::string("case.json lacks '") + key + "'", {case_dir.string()});
  }
  return case_json.at(key).get<T>();
}

// The bounds of a whole pipeline's three checks. float32: the fixture README's 1e-3 on the
// final latents and the video, and 1 uint8 level. bf16: the pipeline class (5e-2, 13 levels),
// or, for a case on which the reference implementation itself strays further in bf16,
// 1.25 x what the reference reaches there (diffusers in bf16 on an H200 against the float32
// fixture; table and command in docs/models.md, "Tolerances").
struct PipelineBounds {
  double final_latents = 0.0;  // max_rel_error
  double video = 0.0;          // max_rel_error of the video in [0,1]
  double video_uint8 = 0.0;    // largest difference of round(255 x video), in levels
};
[[nodiscard]] PipelineBounds pipeline_bounds(std::string_view kind, const RefcheckOptions& options);

// Appends "final_latents" (when `ref_latents` is defined), "video" and "video_uint8".
void compare_pipeline(std::vector<CaseResult>& results, const PipelineBounds& bounds,
                      const torch::Tensor& final_latents, const torch::Tensor& ref_latents,
                      const torch::Tensor& video, const torch::Tensor& ref_video);

// Step-cache cases (scripts/step_cache_fixtures.py): case.json's "cache" as generation.cache
// reads it (a ConfigError whose path names the case's case.json where it does not), or nullopt
// for a case without one.
[[nodiscard]] std::optional<StepCacheConfig> case_step_cache(const nlohmann::json& case_json,
                                                             const std::filesystem::path& case_dir);
// Appends one exact check per CFG branch of case.json's "cache_decisions" ({"cond": "CCS...",
// "uncond": ...}: one letter per forward, C computed, S served from the cache) against the
// decisions the pipeline reports for transformer 0 (CacheReport::decisions: "transformer 0
// cond CCS..., transformer 0 uncond ..."), "cond_2" and "uncond_2" against transformer 1's
// (Wan2.2-A14B's second expert); nothing for a case without them.
void compare_cache_decisions(std::vector<CaseResult>& results, const nlohmann::json& case_json,
                             const std::string& decisions);

// What every case runner is: the checks of one case folder, read from the folder and its
// case.json. The *_cases.hpp headers declare their runners with it (`CaseRunner run_x;`).
using CaseRunner = std::vector<CaseResult>(const std::filesystem::path& case_dir,
                                           const nlohmann::json& case_json,
                                           const RefcheckOptions& options);
}  // namespace omnidp::refcheck
