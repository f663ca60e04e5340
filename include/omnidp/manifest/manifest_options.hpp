#pragma once
// What a manifest reader is told (manifest.hpp: ManifestReader, manifest_options() builds it
// from a resolved Config): the defaults a line leaves out, the limits its inputs must keep and
// the model's rules for its fields. A plain value; the hash cache it may share is not
// thread-safe (rank 0 reads the manifest on one thread).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/request.hpp"

namespace omnidp {

struct ManifestOptions {
  std::filesystem::path path;  // the JSONL file; image paths resolve against its folder
  // Fills the fields a line leaves out. An unset guidance_scale / flow_shift here makes a line
  // without its own a ManifestError (job_manifest_options fills them from the snapshot or the
  // model's default, models/pipeline.hpp).
  GenerationConfig defaults;
  std::string model_name;                 // part of the input key
  std::string weights_identity;           // part of the input key (models/pipeline.hpp)
  std::size_t max_line_bytes = 1U << 20;  // longer lines are refused (line end not counted)
  std::uint64_t max_image_pixels = 4096ULL * 4096ULL;
  double max_image_aspect = 32.0;  // longer side / shorter side (image_aspect_problem)
  // height and width must be multiples of this (the model's VAE x patch size, ModelInfo::
  // size_multiple(); 32 for Wan); lines that are not are rejected with the nearest values.
  int size_multiple = 16;
  // false: a line's guidance_scale_2 is refused (the model has one transformer).
  bool guidance_scale_2 = true;
  // A line's last_image (first-last-frame to video): refused unless `last_image`; with
  // `requires_last_image` (a first-last-frame checkpoint), every line must give one.
  bool last_image = true;
  bool requires_last_image = false;
  // false: a line's "cache" other than off is refused (the model has no block stack that
  // step caching runs over: ModelInfo::step_cache).
  bool step_cache = true;
  // false: a line's "lora" is refused (the model takes no adapters: ModelInfo::lora).
  bool lora = true;
  // With read_inputs: the model's check of a line's adapter (its file read and matched against
  // the transformer: models/weights/lora.hpp), "" when it fits, else the reason; a reason is a
  // ManifestError (exit 2 before any video). Called once per distinct file and expert set.
  // Empty: only the file itself is checked (a regular file, hashed).
  std::function<std::string(const LoraAdapter& adapter)> lora_problem;
  // true: open, probe (header only) and hash each image / embeddings file, and compute
  // input_key. false: path rules only (no file is opened; image_sha256, prompt_embeds_sha256,
  // input_key stay empty, input_error is never set): a fast syntax/duplicate check.
  bool read_inputs = true;
  // With read_inputs: the hashes (and image sizes) of unchanged files come from here, new ones
  // are added (docs/manifest.md "File hash cache"). Null: every file is probed and hashed.
  // Shared by the readers of one job on one thread (not thread-safe).
  std::shared_ptr<FileHashCache> hash_cache;
  // Where reading starts: a position an earlier reader of the same file gave
  // (ManifestReader::position()). Lines before it are neither read nor checked (their ids are
  // not in the duplicate set). Default: the start of the file.
  struct Position {
    std::uint64_t offset = 0;  // byte offset of a line's start
    std::size_t line = 0;      // lines before it
    std::size_t requests = 0;  // requests before it
  };
  Position start;
  // The model's own output size for an i2v request, {height, width} from the image's
  // (height, width) (HunyuanVideo-1.5's aspect-ratio buckets); empty: generation's height and
  // width. Applied while reading inputs (read_inputs) to i2v lines that set neither height
  // nor width, before the input key is computed; a line's own height/width override it. An
  // exception it throws becomes the request's input_error.
  std::function<std::pair<int, int>(int image_height, int image_width)> size_from_image;
  // Set: the model serves only this task; a line of the other task is a ManifestError naming
  // the line, its task, this task and `only_task_origin` (where the snapshot says so).
  std::optional<Task> only_task;
  std::string only_task_origin;
  // input.tasks: the tasks whose lines next() returns; empty: all. A line of another task is
  // still checked in full (syntax, fields, duplicate id) but its files are not read, it is no
  // request (not counted in requests(), no index) and only_task does not apply to it; it is
  // counted in ManifestReader::filtered().
  std::vector<Task> tasks;
};

}  // namespace omnidp
