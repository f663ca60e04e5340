#pragma once
// The coordinator's view of the manifest before work starts (rank 0 only, not thread-safe):
// request sources over the streaming manifest reader, the resume filter, and the pre-start
// pass that checks, counts and prices the work and keeps the requests to run for the hand-out
// (PlannedSource: one pass over the manifest, docs/runtime.md "Job startup").

#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/results/attempt_log.hpp"
#include "omnidp/runtime/cost_model.hpp"
#include "omnidp/runtime/scheduler.hpp"

namespace omnidp::runtime {

// id -> input_key of the requests already done (ok rows of earlier rank files).
using DoneMap = std::unordered_map<std::string, std::string>;
// results::attempt_key(id, input_key) -> the attempts of earlier runs (results/attempt_log.hpp).
using AttemptMap = std::unordered_map<std::string, results::AttemptHistory>;

// How the attempts of earlier runs shape a request to run (issue 39, class 6): its attempts
// continue after the last one started (Request::prior_attempts), and one whose attempts with
// this input key were interrupted more than `max_retries` times is refused (Request::refused:
// recorded failed without running). No map: nothing changes.
struct AttemptRule {
  const AttemptMap* attempts = nullptr;
  int max_retries = 0;
  // Sets prior_attempts and, past the limit, refused.
  void apply(Request& request) const;
};

class ManifestSource final : public RequestSource {
 public:
  explicit ManifestSource(ManifestOptions options) : reader_(std::move(options)) {}
  std::optional<Request> next() override { return reader_.next(); }
  [[nodiscard]] const ManifestReader& reader() const noexcept { return reader_; }

 private:
  ManifestReader reader_;
};

// Skips the requests of `inner` that are done with the same input key. A done id whose input
// key differs throws ManifestError (file:line:id) naming both keys: the manifest, the model or
// its weights changed since the earlier run.
class ResumeSource final : public RequestSource {
 public:
  ResumeSource(RequestSource& inner, const DoneMap& done, std::string manifest_file,
               std::string output_dir, AttemptRule attempts = {});
  std::optional<Request> next() override;
  [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }

 private:
  RequestSource& inner_;
  const DoneMap& done_;
  std::string manifest_file_;
  std::string output_dir_;
  AttemptRule attempts_;
  std::size_t skipped_ = 0;
};

struct JobPlan {
  std::size_t to_run = 0;        // requests the job will hand out
  std::size_t input_errors = 0;  // of which recorded as failed without running
  std::size_t filtered = 0;      // manifest lines of tasks not in input.tasks: skipped, not run
  CostFeatures total_features;   // summed over to_run
  double total_cost = 0.0;       // prior cost units
  double max_cost = 0.0;
};

// One pass over `source` (usually a ResumeSource).
[[nodiscard]] JobPlan scan_plan(RequestSource& source, const CostModel& cost);

// The requests kept in memory by a PlannedSource: 256 MiB of them (about a million small
// requests), by their estimated size.
inline constexpr std::size_t kDefaultKeptBytes = std::size_t{256} << 20;

// The pre-start pass and the hand-out in one: the constructor reads the whole manifest once
// (resume filter applied) and throws what that pass throws (ManifestError for a malformed
// manifest or a changed done request, IoError), so a bad manifest stops the job before any work.
// It keeps the requests to run, in order, while their estimated size stays within
// `max_kept_bytes`; next() serves them without reading the manifest again. Only when they do
// not fit does next(), after the kept ones, read the manifest a second time, from the line of
// the first request not kept (ManifestReader::position()), with the same resume filter and
// file hash cache (so no file is hashed twice).
class PlannedSource final : public RequestSource {
 public:
  // `observe`, when set, sees every request to run of the pre-start pass, in manifest order
  // (the dry run's listing).
  PlannedSource(ManifestOptions options, const DoneMap& done, std::string output_dir,
                const CostModel& cost, std::size_t max_kept_bytes = kDefaultKeptBytes,
                const std::function<void(const Request&)>& observe = {}, AttemptRule attempts = {});
  // `done` is kept by reference: a temporary would dangle.
  PlannedSource(ManifestOptions options, const DoneMap&& done, std::string output_dir,
                const CostModel& cost, std::size_t max_kept_bytes = kDefaultKeptBytes,
                const std::function<void(const Request&)>& observe = {},
                AttemptRule attempts = {}) = delete;
  std::optional<Request> next() override;

  [[nodiscard]] const JobPlan& plan() const noexcept { return plan_; }
  [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }  // done (resume)
  // Whether every request to run is in memory (the manifest was read once).
  [[nodiscard]] bool all_kept() const noexcept { return !tail_start_.has_value(); }
  [[nodiscard]] std::size_t kept() const noexcept { return kept_.size(); }
  // Times the manifest was opened for reading: 1, or 2 once the tail is read again.
  [[nodiscard]] int passes() const noexcept { return passes_; }

 private:
  ManifestOptions options_;
  const DoneMap& done_;
  std::string output_dir_;
  AttemptRule attempts_;
  JobPlan plan_;
  std::size_t skipped_ = 0;
  std::deque<Request> kept_;
  std::optional<ManifestOptions::Position> tail_start_;  // the first request not kept
  std::unique_ptr<ManifestSource> tail_source_;
  std::unique_ptr<ResumeSource> tail_;
  int passes_ = 0;
};

// A job's pre-start pass, the one plan of the coordinator and of the dry run (docs/runtime.md,
// "Job startup"): the config's manifest options with the output folder's file hash cache
// loaded, the done requests of the output folder when `resume` (by `scan_done`, when set and
// the folder exists), the model's cost model and the PlannedSource over them. Throws what the
// PlannedSource throws, and the no-requests ManifestError when there is nothing to do (exit 2).
// Not copyable or movable: the source keeps references into it.
class JobInputs {
 public:
  using DoneScan = std::function<DoneMap(const std::filesystem::path& dir)>;
  // `count_attempts`: the attempt logs of the output folder are read (when `resume`) and
  // applied by the AttemptRule of config.scheduler.max_retries.
  JobInputs(const Config& config, bool resume, const DoneScan& scan_done,
            const std::function<void(const Request&)>& observe = {}, bool count_attempts = false);
  JobInputs(const JobInputs&) = delete;
  JobInputs& operator=(const JobInputs&) = delete;

  [[nodiscard]] const ManifestOptions& manifest() const noexcept { return manifest_; }
  [[nodiscard]] const CostModel& cost() const noexcept { return cost_; }
  [[nodiscard]] PlannedSource& source() noexcept { return *source_; }
  [[nodiscard]] const JobPlan& plan() const noexcept { return source_->plan(); }
  [[nodiscard]] std::size_t skipped() const noexcept { return source_->skipped(); }
  // Saves the file hash cache into the output folder once, when it changed and the folder
  // exists (the job's writers create it after Start: a job that stops before leaves no
  // output). A failure is a warning: the job goes on without the cache. The dry run never calls
  // it.
  void save_hash_cache();
  // Frees the done requests; call only when the source reads no more requests.
  void release_done() { DoneMap().swap(done_); }

 private:
  std::filesystem::path dir_;
  ManifestOptions manifest_;
  DoneMap done_;
  AttemptMap attempts_;
  CostModel cost_;
  std::unique_ptr<PlannedSource> source_;
  bool cache_saved_ = false;
};

// Estimated heap and object bytes of a request (what PlannedSource counts).
[[nodiscard]] std::size_t request_bytes(const Request& request) noexcept;

}  // namespace omnidp::runtime
