#pragma once
// The coordinator's view of the manifest before work starts (rank 0 only, not thread-safe):
// request sources over the streaming manifest reader, the resume filter, and the pre-start
// pass that counts and prices the work (the manifest is read twice: once here, in constant
// memory, and once while handing out work).

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "omnidp/manifest/manifest.hpp"
#include "omnidp/runtime/cost_model.hpp"
#include "omnidp/runtime/scheduler.hpp"

namespace omnidp::runtime {

// id -> input_key of the requests already done (ok rows of earlier rank files).
using DoneMap = std::unordered_map<std::string, std::string>;

class ManifestSource final : public RequestSource {
 public:
  explicit ManifestSource(ManifestOptions options) : reader_(std::move(options)) {}
  std::optional<Request> next() override { return reader_.next(); }

 private:
  ManifestReader reader_;
};

// Skips the requests of `inner` that are done with the same input key. A done id whose input
// key differs throws ManifestError (file:line:id) naming both keys: the manifest, the model or
// its weights changed since the earlier run.
class ResumeSource final : public RequestSource {
 public:
  ResumeSource(RequestSource& inner, const DoneMap& done, std::string manifest_file,
               std::string output_dir);
  std::optional<Request> next() override;
  [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }

 private:
  RequestSource& inner_;
  const DoneMap& done_;
  std::string manifest_file_;
  std::string output_dir_;
  std::size_t skipped_ = 0;
};

struct JobPlan {
  std::size_t to_run = 0;        // requests the job will hand out
  std::size_t input_errors = 0;  // of which recorded as failed without running
  CostFeatures total_features;   // summed over to_run
  double total_cost = 0.0;       // prior cost units
  double max_cost = 0.0;
};

// One pass over `source` (usually a ResumeSource).
[[nodiscard]] JobPlan scan_plan(RequestSource& source, const CostModel& cost);

}  // namespace omnidp::runtime
