#include "omnidp/runtime/plan.hpp"

#include <algorithm>

namespace omnidp::runtime {

ResumeSource::ResumeSource(RequestSource& inner, const DoneMap& done, std::string manifest_file,
                           std::string output_dir)
    : inner_(inner),
      done_(done),
      manifest_file_(std::move(manifest_file)),
      output_dir_(std::move(output_dir)) {}

std::optional<Request> ResumeSource::next() {
  while (auto request = inner_.next()) {
    const auto it = done_.find(request->id);
    if (it == done_.end()) return request;
    if (it->second == request->input_key) {
      ++skipped_;
      continue;
    }
    const std::string now = request->input_key.empty()
                                ? "none (input error: " + request->input_error + ")"
                                : request->input_key;
    throw ManifestError(manifest_file_, request->line, "id",
                        "request '" + request->id + "' is already done in " + output_dir_ +
                            " with input key " + it->second +
                            ", but the manifest now gives input key " + now +
                            " (the request, the model or its weights changed): use a new "
                            "output.dir, or --no-resume to run it again");
  }
  return std::nullopt;
}

JobPlan scan_plan(RequestSource& source, const CostModel& cost) {
  JobPlan plan;
  while (auto request = source.next()) {
    ++plan.to_run;
    if (!request->input_error.empty()) {
      ++plan.input_errors;
      continue;
    }
    const CostFeatures f = cost.features(*request);
    plan.total_features.quadratic += f.quadratic;
    plan.total_features.linear += f.linear;
    const double c = cost.prior(f);
    plan.total_cost += c;
    plan.max_cost = std::max(plan.max_cost, c);
  }
  return plan;
}

}  // namespace omnidp::runtime
