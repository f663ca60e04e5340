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
#include "omnidp/manifest/manifest_line.hpp"
#include "omnidp/manifest/manifest_options.hpp"
#include "omnidp/manifest/request.hpp"

namespace omnidp {

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
