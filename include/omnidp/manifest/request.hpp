#pragma once
// One validated video request: a manifest line with the generation defaults filled in.
// Plain value type; serialized for MPI by runtime/protocol.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"

namespace omnidp {

enum class Task { t2v, i2v };
[[nodiscard]] const char* to_string(Task task) noexcept;

struct Request {
  std::string id;
  std::string prompt;
  std::string negative_prompt;
  std::uint64_t seed = 0;  // 0 .. 2^63-1
  Task task = Task::t2v;
  std::string image;         // absolute path, empty for t2v
  std::string image_sha256;  // hex SHA-256 of the image bytes, empty for t2v
  // The video's last frame (first-last-frame to video, i2v only): absolute path, empty without.
  std::string last_image;
  std::string last_image_sha256;     // hex SHA-256 of its bytes, empty without one
  std::string prompt_embeds;         // absolute path of precomputed embeddings, may be empty
  std::string prompt_embeds_sha256;  // hex SHA-256 of that file's bytes, empty without one
  int num_frames = 0;
  int height = 0;
  int width = 0;
  int num_inference_steps = 0;
  double guidance_scale = 0.0;
  double flow_shift = 0.0;
  // The low-noise expert's guidance (two-expert models only); unset: guidance_scale.
  std::optional<double> guidance_scale_2;
  int fps = 0;
  // The line's step cache ("cache"): overrides generation.cache for this request; unset: the
  // job's. Part of the input key when set; the row's numerics profile names it (cache=line:...).
  std::optional<StepCacheConfig> cache;
  // The line's LoRA adapters ("lora"), applied on top of the job's model.lora for this request:
  // absolute paths, each sha256 filled by the reader (read_inputs). Part of the input key when
  // not empty; the row's numerics profile names them (lora_line=...).
  std::vector<LoraAdapter> lora;
  // Where the values came from (rank 0 only, for --dry-run; not sent to workers): whether the
  // line itself set height or width, guidance_scale, flow_shift (else the defaults or, for
  // the size of an i2v request, the model's choice from the image), and the probed image's
  // size (0 without an image or before its inputs were read).
  bool line_sets_size = false;
  bool line_sets_guidance_scale = false;
  bool line_sets_flow_shift = false;
  int image_height = 0;
  int image_width = 0;
  std::size_t line = 0;   // 1-based line in the manifest
  std::size_t index = 0;  // 0-based position among the manifest's requests
  std::string input_key;  // hex SHA-256 of the canonical encoding (docs/manifest.md)
  // A per-request input defect found while reading the manifest (image missing, unreadable,
  // not a PNG/JPEG, over the pixel limit; embeddings file missing). Empty when the inputs are
  // fine. Non-empty: the request is recorded as failed with this message and never runs; its
  // image_sha256/prompt_embeds_sha256 and input_key are then empty. See docs/manifest.md.
  std::string input_error;
  // Set by rank 0's pre-start pass when the request's earlier attempts with this input key were
  // interrupted (the job killed, aborted or timed out while it ran) more than
  // scheduler.max_retries times, counted across runs (results/attempt_log.hpp): the request is
  // then recorded failed with this message and never runs (docs/reliability.md, requeue loops).
  std::string refused;
  // Rank 0 only (not sent): the attempts of this id and input key started by earlier runs of
  // the folder; this run's first attempt is prior_attempts + 1 (the row's `attempt`).
  int prior_attempts = 0;
};

}  // namespace omnidp
