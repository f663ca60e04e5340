#pragma once
// The streaming JSONL manifest reader (docs/manifest.md).
//
// Rank 0 only (the coordinator, and `omni-dp-batch --validate-only`). Reads the file in
// fixed-size chunks: memory stays constant whatever the file's size, except for the set of ids
// seen (20 bytes a slot, see docs/manifest.md). Not thread-safe; move-only.
//
// Two kinds of defects (docs/reliability.md, "Bad input"):
//  - a malformed manifest (JSON syntax, types, ranges, unknown fields, duplicate ids, paths that
//    escape the manifest's folder, over-long lines) throws ManifestError "file:line:field:
//    reason": the job must stop before it starts;
//  - a per-request input defect (image missing, unreadable, not a PNG/JPEG, too many pixels;
//    embeddings file missing) does not throw: next() returns the request with
//    Request::input_error set, and the job records it as failed.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/manifest_line.hpp"
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

// Options from a resolved Config: input.manifest, generation, model.name, input limits,
// input.tasks (empty `tasks` when it lists both).
[[nodiscard]] ManifestOptions manifest_options(const Config& config, std::string weights_identity);

class ManifestReader {
 public:
  // Opens the file; IoError if it cannot be opened or its folder cannot be resolved.
  explicit ManifestReader(ManifestOptions options);
  ~ManifestReader();
  ManifestReader(ManifestReader&&) noexcept;
  ManifestReader& operator=(ManifestReader&&) noexcept;
  ManifestReader(const ManifestReader&) = delete;
  ManifestReader& operator=(const ManifestReader&) = delete;

  // The next request (blank and '#' lines skipped), or nullopt at the end of the file.
  // A malformed line throws ManifestError; the reader stays usable and the next call goes on
  // with the following line (validate_manifest(all_errors) relies on this). An id is
  // remembered as soon as it is read, so a later duplicate of a rejected line is reported too.
  // IoError if reading fails.
  [[nodiscard]] std::optional<Request> next();

  [[nodiscard]] std::size_t line() const noexcept;      // lines read so far (1-based last line)
  [[nodiscard]] std::size_t requests() const noexcept;  // requests returned so far
  // Lines skipped so far because their task is not in options.tasks (input.tasks).
  [[nodiscard]] std::size_t filtered() const noexcept;
  // Where the line of the request next() returned last begins (options.start before any):
  // start another reader there to read that request again and those after it.
  [[nodiscard]] ManifestOptions::Position position() const noexcept;
  // High-water mark of the line and chunk buffers: the constant-memory counter. Bounded by
  // the chunk size (64 KiB) plus about 2 x the longest accepted line, never by the file size.
  [[nodiscard]] std::size_t peak_buffer_bytes() const noexcept;
  // Bytes held by the duplicate-id set now (grows with the number of distinct ids).
  [[nodiscard]] std::size_t id_set_bytes() const noexcept;
  [[nodiscard]] const ManifestOptions& options() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct ValidationReport {
  std::size_t requests = 0;           // valid request lines (including those with input errors)
  std::size_t filtered = 0;           // valid lines of tasks not in input.tasks (skipped)
  std::vector<ManifestError> errors;  // malformed lines: the job must not start
  // Per-request input defects (each request's Request::input_error, "file:line:field:
  // reason"): the job would run and record these requests as failed.
  std::vector<std::string> input_errors;
  [[nodiscard]] bool ok() const noexcept { return errors.empty(); }
};

// Whole-file validation (for --validate-only and the pre-start check of a job). Stops at the
// first error unless all_errors. A manifest without any request is an error too (reported at
// the last line read, field empty; when input.tasks skipped every line, it says so). IoError
// if the file cannot be read.
// The error of a manifest without a request to run (`line`: the last line read): empty, or,
// when `filtered` > 0, every line of a task that options.tasks leaves out.
[[nodiscard]] ManifestError no_requests_error(const ManifestOptions& options, std::size_t line,
                                              std::size_t filtered);

[[nodiscard]] ValidationReport validate_manifest(const ManifestOptions& options, bool all_errors);

}  // namespace omnidp
