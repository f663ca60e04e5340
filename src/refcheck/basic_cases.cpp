#include "omnidp/refcheck/basic_cases.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <tuple>

#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/schedulers/flow_match_euler.hpp"
#include "omnidp/models/schedulers/unipc.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
namespace {

// "5" / "5.0" / "2p5" -> 5.0 / 5.0 / 2.5
double parse_shift(std::string text) {
  std::replace(text.begin(), text.end(), 'p', '.');
  return std::stod(text);
}

}  // namespace

std::vector<CaseResult> run_rng(const fs::path& case_dir, const nlohmann::json& /*case_json*/,
                                const RefcheckOptions& options) {
  const models::SafetensorsFile io(case_dir / "io.safetensors");
  static const std::regex pattern(R"(^randn_seed([0-9]+)_.*$)");
  std::vector<CaseResult> results;
  for (const auto& name : io.names()) {
    std::smatch m;
    if (!std::regex_match(name, m, pattern)) continue;
    const auto seed = std::stoull(m[1].str());
    const auto expected = io.tensor(name, torch::kFloat32);
    const auto ours = models::randn_cpu(expected.sizes(), seed);
    results.push_back(compare(name, ours, expected, tolerance(ToleranceClass::exact, options)));
  }
  return results;
}

std::vector<CaseResult> run_schedulers(const fs::path& case_dir, const nlohmann::json& /*case_json*/,
                                       const RefcheckOptions& options) {
  const models::SafetensorsFile io(case_dir / "io.safetensors");
  static const std::regex pattern(R"(^(euler|unipc)_shift([0-9.p]+)_n([0-9]+)_(.+)$)");
  // (scheduler, shift text, n) -> the group's prefix
  std::map<std::tuple<std::string, std::string, int>, std::string> groups;
  for (const auto& name : io.names()) {
    std::smatch m;
    if (!std::regex_match(name, m, pattern)) continue;
    const auto prefix = m[1].str() + "_shift" + m[2].str() + "_n" + m[3].str();
    groups.emplace(std::make_tuple(m[1].str(), m[2].str(), std::stoi(m[3].str())), prefix);
  }
  const double tol = tolerance(ToleranceClass::scheduler, options);
  std::vector<CaseResult> results;
  for (const auto& [key, prefix] : groups) {
    const auto& [kind, shift_text, n] = key;
    const double shift = parse_shift(shift_text);
    std::unique_ptr<models::Scheduler> scheduler;
    if (kind == "euler") {
      models::FlowMatchEulerOptions o;
      o.shift = shift;
      scheduler = std::make_unique<models::FlowMatchEulerScheduler>(o);
    } else {
      models::UniPCOptions o;
      o.flow_shift = shift;
      scheduler = std::make_unique<models::UniPCScheduler>(o);
    }
    scheduler->set_timesteps(n);
    for (const char* what : {"sigmas", "timesteps"}) {
      const auto name = prefix + "_" + what;
      if (!io.contains(name)) continue;
      const auto& ours = std::string(what) == "sigmas" ? scheduler->sigmas() : scheduler->timesteps();
      results.push_back(compare(name, ours, io.tensor(name), tol));
    }
    // A recorded trajectory: x0 and model_out0..n-1, closed loop through our own samples.
    if (!io.contains(prefix + "_x0") || !io.contains(prefix + "_model_out0")) continue;
    auto x = io.tensor(prefix + "_x0").to(options.device);
    double worst = 0.0;
    int worst_step = 0;
    int steps = 0;
    bool shape_ok = true;
    for (int i = 0; i < n; ++i) {
      const auto out_name = fmt::format("{}_model_out{}", prefix, i);
      const auto x_name = fmt::format("{}_x{}", prefix, i + 1);
      if (!io.contains(out_name) || !io.contains(x_name)) break;
      const auto v = io.tensor(out_name).to(options.device);
      x = scheduler->step(v, i, x);
      const auto expected = io.tensor(x_name);
      if (expected.sizes() != x.sizes()) {
        shape_ok = false;
        results.push_back(compare(prefix + "_trajectory", x, expected, tol, {}));
        break;
      }
      const double err = max_rel_error(x, expected);
      if (err >= worst) {
        worst = err;
        worst_step = i + 1;
      }
      ++steps;
    }
    if (!shape_ok) continue;
    CaseResult r;
    r.check = prefix + "_trajectory";
    r.max_rel_error = worst;
    r.tolerance = tol;
    r.status = worst <= tol && steps == n ? CaseResult::Status::pass : CaseResult::Status::fail;
    r.note = fmt::format("{}/{} steps, worst at x{}", steps, n, worst_step);
    if (steps != n) r.note += " (the trajectory is incomplete in io.safetensors)";
    results.push_back(r);
  }
  return results;
}

}  // namespace omnidp::refcheck
