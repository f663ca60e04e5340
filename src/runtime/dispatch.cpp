#include "omnidp/runtime/dispatch.hpp"

#include <algorithm>
#include <sstream>
#include <tuple>

namespace omnidp::runtime {

std::vector<int> DispatchPolicy::candidates(const std::vector<ReplicaLoad>& replicas,
                                            std::size_t requests_left) const {
  const bool tail = policy_ == SchedulerPolicy::dynamic && requests_left <= replicas.size();
  std::vector<int> order;
  for (std::size_t k = 0; k < replicas.size(); ++k) {
    const auto& r = replicas[k];
    const bool wants = r.in_model == 0 || (r.pull && !tail);
    if (r.ready && !r.closed && wants && r.in_model < r.slots &&
        r.outstanding < r.slots + kWriteBacklog) {
      order.push_back(static_cast<int>(k));
    }
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& ra = replicas[static_cast<std::size_t>(a)];
    const auto& rb = replicas[static_cast<std::size_t>(b)];
    return std::tie(ra.in_model, ra.outstanding_cost, a) <
           std::tie(rb.in_model, rb.outstanding_cost, b);
  });
  return order;
}

double DeadlineGate::model_free_at(double now, const ReplicaLoad& replica,
                                   const std::vector<double>& in_model) {
  if (replica.in_model == 0 || in_model.empty()) return now;
  double queued = 0.0;
  for (const double s : in_model) queued += s;
  const double running = in_model.front();
  // The oldest one runs since model_since; the rest wait behind it.
  const double left_running = std::max(0.0, running - (now - replica.model_since));
  return now + left_running + (queued - running);
}

DeadlineGate::Decision DeadlineGate::decide(double now, int k, const ReplicaLoad& replica,
                                            const std::string& id, std::optional<double> estimate,
                                            double free_at) const {
  const double limit = deadline_ - margin_s_;
  double ends = now;
  if (!estimate) {
    if (replica.outstanding > 0 && now < limit) return {Fit::wait, {}};
  } else {
    ends = free_at + *estimate;
  }
  if (now < limit && ends <= limit) return {Fit::yes, {}};
  std::ostringstream why;
  why.precision(3);
  why << "coordinator: deadline: replica " << k << " gets no more work: request '" << id << "'";
  if (estimate) why << " (estimated " << *estimate << " s) would end in " << ends - now << " s,";
  why << " the deadline minus the margin of " << margin_s_ << " s is "
      << (limit - now >= 0.0 ? "in " : "") << limit - now << " s"
      << (limit - now >= 0.0 ? "" : " (passed)");
  return {Fit::no, why.str()};
}

}  // namespace omnidp::runtime
