#include "omnidp/models/schedulers/unipc.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

[[noreturn]] void unsupported(const std::string& what) {
  throw ModelError("UniPC: unsupported scheduler configuration: " + what);
}

// A 0-d float32 CPU tensor (the reference's scalar arithmetic is on such tensors).
torch::Tensor scalar(double v) { return torch::scalar_tensor(v, torch::kFloat32); }

// log of a 0-d float32 tensor, correctly rounded (computed in double): PyTorch 2.x's float32
// log gives these values; libtorch 1.13's can be 1 ulp off, which moves trajectories by
// ~1e-6 over 50 steps.
torch::Tensor log32(const torch::Tensor& x) {
  return scalar(static_cast<float>(std::log(static_cast<double>(x.item<float>()))));
}

// The reference's float32 torch.linalg.solve (LAPACK) agrees best with the float64 solution
// rounded to float32; the system is at most 3x3.
torch::Tensor solve32(const torch::Tensor& a, const torch::Tensor& b) {
  return at::linalg_solve(a.to(torch::kFloat64), b.to(torch::kFloat64)).to(torch::kFloat32);
}

// The bh2 linear system of the predictor and the corrector for `order` and step size h:
// rows rks^(i-1) and right-hand sides h_phi_i * i! / b_h (i = 1..order), with h_phi_1 and
// b_h = expm1(-h).
struct Bh2System {
  torch::Tensor h_phi_1;
  torch::Tensor b_h;
  std::vector<torch::Tensor> r_rows;
  std::vector<torch::Tensor> b;
};

Bh2System bh2_system(const torch::Tensor& h, const torch::Tensor& rks_t, int order) {
  const auto hh = -h;
  Bh2System sys{torch::expm1(hh), torch::expm1(hh), {}, {}};
  auto h_phi_k = sys.h_phi_1 / hh - 1;
  std::int64_t factorial_i = 1;
  for (int i = 1; i <= order; ++i) {
    sys.r_rows.push_back(torch::pow(rks_t, i - 1));
    sys.b.push_back(h_phi_k * factorial_i / sys.b_h);
    factorial_i *= i + 1;
    h_phi_k = h_phi_k / hh - 1.0 / static_cast<double>(factorial_i);
  }
  return sys;
}

}  // namespace

UniPCOptions unipc_options_from_config(const nlohmann::json& config) {
  UniPCOptions o;
  if (!config.is_object()) unsupported("scheduler config is not a JSON object");
  const auto get = [&](const char* key) -> const nlohmann::json* {
    const auto it = config.find(key);
    return it == config.end() || it->is_null() ? nullptr : &*it;
  };
  const auto expect_string = [&](const char* key, const char* want, bool required) {
    const auto* v = get(key);
    if (v == nullptr) {
      if (required) unsupported(std::string(key) + " must be \"" + want + "\"");
      return;
    }
    if (!v->is_string() || v->get<std::string>() != want) {
      unsupported(std::string(key) + " = " + v->dump() + " (supported: \"" + want + "\")");
    }
  };
  const auto expect_bool = [&](const char* key, bool want, bool missing_ok) {
    const auto* v = get(key);
    if (v == nullptr) {
      if (!missing_ok) unsupported(std::string(key) + " must be " + (want ? "true" : "false"));
      return;
    }
    if (!v->is_boolean() || v->get<bool>() != want) {
      unsupported(std::string(key) + " = " + v->dump());
    }
  };
  expect_string("prediction_type", "flow_prediction", true);
  expect_bool("use_flow_sigmas", true, false);
  expect_string("solver_type", "bh2", false);
  expect_bool("predict_x0", true, true);
  expect_bool("thresholding", false, true);
  expect_bool("use_karras_sigmas", false, true);
  expect_bool("use_exponential_sigmas", false, true);
  expect_bool("use_beta_sigmas", false, true);
  expect_bool("use_dynamic_shifting", false, true);
  expect_string("final_sigmas_type", "zero", false);
  if (const auto* v = get("disable_corrector"); v != nullptr && !(v->is_array() && v->empty())) {
    unsupported("disable_corrector = " + v->dump());
  }
  if (const auto* v = get("flow_shift")) o.flow_shift = v->get<double>();
  if (const auto* v = get("num_train_timesteps")) o.num_train_timesteps = v->get<int>();
  if (const auto* v = get("solver_order")) o.solver_order = v->get<int>();
  if (const auto* v = get("lower_order_final")) o.lower_order_final = v->get<bool>();
  return o;
}

UniPCScheduler::UniPCScheduler(UniPCOptions options) : options_(options) {
  if (!(options_.flow_shift > 0.0)) throw ModelError("UniPC: flow_shift must be > 0");
  if (options_.num_train_timesteps <= 0) throw ModelError("UniPC: num_train_timesteps must be > 0");
  if (options_.solver_order < 1 || options_.solver_order > 3) {
    throw ModelError("UniPC: solver_order must be 1, 2 or 3");
  }
}

void UniPCScheduler::set_timesteps(int num_inference_steps) {
  if (num_inference_steps < 1) {
    throw ModelError(
        fmt::format("UniPC: num_inference_steps must be >= 1, got {}", num_inference_steps));
  }
  const int n = num_inference_steps;
  const double train = options_.num_train_timesteps;
  const double shift = options_.flow_shift;
  // sigmas = linspace(1, 1/T, n+1)[:-1], shifted; a first sigma of 1 becomes 1 - 1e-6 (so
  // that log(sigma) and log(1 - sigma) stay finite).
  auto shifted = numpy_linspace(1.0, 1.0 / train, n + 1);
  shifted.pop_back();
  for (auto& s : shifted) s = shift * s / (1.0 + (shift - 1.0) * s);
  constexpr double kEps = 1e-6;
  if (std::abs(shifted.front() - 1.0) < kEps) shifted.front() -= kEps;
  sigmas_ = torch::zeros({n + 1}, torch::kFloat32);
  timesteps_ = torch::empty({n}, torch::kFloat32);
  auto* sig = sigmas_.data_ptr<float>();
  auto* ts = timesteps_.data_ptr<float>();
  for (int i = 0; i < n; ++i) {
    const double s = shifted[static_cast<std::size_t>(i)];
    sig[i] = static_cast<float>(s);
    ts[i] = static_cast<float>(static_cast<std::int64_t>(s * train));  // int64 cast truncates
  }
  model_outputs_.clear();
  last_sample_.reset();
  lower_order_nums_ = 0;
  this_order_ = 1;
  step_index_ = 0;
}

torch::Tensor UniPCScheduler::sigma(int i) const { return sigmas_[i]; }

torch::Tensor UniPCScheduler::lambda(int i) const {
  const auto s = sigma(i);
  const auto a = 1.0 - s;  // flow: alpha_t = 1 - sigma, sigma_t = sigma
  return log32(a) - log32(s);
}

// UniP (B(h) = expm1(hh), bh2) from step_index_ to step_index_ + 1. model_outputs_.back() is
// the current x0 prediction.
torch::Tensor UniPCScheduler::predictor(const torch::Tensor& x, int order) const {
  const int k = step_index_;
  const auto& m0 = model_outputs_.back();
  const auto sigma_t = sigma(k + 1);
  const auto sigma_s0 = sigma(k);
  const auto alpha_t = 1.0 - sigma_t;
  const auto lambda_s0 = lambda(k);
  const auto h = (log32(alpha_t) - log32(sigma_t)) - lambda_s0;

  std::vector<torch::Tensor> rks;
  std::vector<torch::Tensor> d1s;
  for (int i = 1; i < order; ++i) {
    const auto& mi = model_outputs_[model_outputs_.size() - 1 - static_cast<std::size_t>(i)];
    const auto rk = (lambda(k - i) - lambda_s0) / h;
    rks.push_back(rk);
    d1s.push_back((mi - m0) / rk);
  }
  rks.push_back(scalar(1.0));
  const auto rks_t = torch::stack(rks);

  const auto [h_phi_1, b_h, r_rows, b] = bh2_system(h, rks_t, order);

  auto x_t = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0;
  if (!d1s.empty()) {
    torch::Tensor rhos_p;
    if (order == 2) {
      rhos_p = torch::full({1}, 0.5, torch::kFloat32);
    } else {
      const auto r = torch::stack(r_rows);
      const auto bt = torch::stack(b);
      const auto n = order - 1;
      rhos_p = solve32(r.slice(0, 0, n).slice(1, 0, n), bt.slice(0, 0, n));
    }
    auto pred_res = rhos_p[0] * d1s[0];
    for (std::size_t j = 1; j < d1s.size(); ++j) {
      pred_res = pred_res + rhos_p[static_cast<std::int64_t>(j)] * d1s[j];
    }
    x_t = x_t - alpha_t * b_h * pred_res;
  }
  return x_t;
}

// UniC: corrects x_t (the predictor's result for step_index_) with the new prediction model_t.
// model_outputs_.back() is still the previous step's prediction here.
torch::Tensor UniPCScheduler::corrector(const torch::Tensor& model_t, const torch::Tensor& last,
                                        const torch::Tensor& /*x_t*/, int order) const {
  const int k = step_index_;
  const auto& m0 = model_outputs_.back();
  const auto sigma_t = sigma(k);
  const auto sigma_s0 = sigma(k - 1);
  const auto alpha_t = 1.0 - sigma_t;
  const auto lambda_s0 = lambda(k - 1);
  const auto h = (log32(alpha_t) - log32(sigma_t)) - lambda_s0;

  std::vector<torch::Tensor> rks;
  std::vector<torch::Tensor> d1s;
  for (int i = 1; i < order; ++i) {
    const auto& mi = model_outputs_[model_outputs_.size() - 1 - static_cast<std::size_t>(i)];
    const auto rk = (lambda(k - (i + 1)) - lambda_s0) / h;
    rks.push_back(rk);
    d1s.push_back((mi - m0) / rk);
  }
  rks.push_back(scalar(1.0));
  const auto rks_t = torch::stack(rks);

  const auto [h_phi_1, b_h, r_rows, b] = bh2_system(h, rks_t, order);
  const auto rhos_c = order == 1 ? torch::full({1}, 0.5, torch::kFloat32)
                                 : solve32(torch::stack(r_rows), torch::stack(b));

  const auto x_t_ = sigma_t / sigma_s0 * last - alpha_t * h_phi_1 * m0;
  const auto d1_t = model_t - m0;
  torch::Tensor inner;
  if (!d1s.empty()) {
    auto corr_res = rhos_c[0] * d1s[0];
    for (std::size_t j = 1; j < d1s.size(); ++j) {
      corr_res = corr_res + rhos_c[static_cast<std::int64_t>(j)] * d1s[j];
    }
    inner = corr_res + rhos_c[order - 1] * d1_t;
  } else {
    inner = rhos_c[order - 1] * d1_t;
  }
  return x_t_ - alpha_t * b_h * inner;
}

torch::Tensor UniPCScheduler::step(const torch::Tensor& model_output, int index,
                                   const torch::Tensor& sample) {
  if (!sigmas_.defined()) throw ModelError("UniPC: step before set_timesteps");
  if (index != step_index_ || index >= num_steps()) {
    throw ModelError(fmt::format("UniPC: step {} out of order (expected {} of {})", index,
                                 step_index_, num_steps()));
  }
  const auto v = model_output.to(torch::kFloat32);
  auto x = sample.to(torch::kFloat32);
  const int k = step_index_;
  // flow_prediction: x0 = x - sigma * v.
  const auto converted = x - sigma(k) * v;
  if (k > 0 && last_sample_.has_value()) {
    x = corrector(converted, *last_sample_, x, this_order_);
  }
  model_outputs_.push_back(converted);
  while (static_cast<int>(model_outputs_.size()) > options_.solver_order) {
    model_outputs_.pop_front();
  }
  int order = options_.solver_order;
  if (options_.lower_order_final) order = std::min(order, num_steps() - k);
  this_order_ = std::min(order, lower_order_nums_ + 1);
  last_sample_ = x;
  auto prev = predictor(x, this_order_);
  lower_order_nums_ = std::min(lower_order_nums_ + 1, options_.solver_order);
  ++step_index_;
  return prev.to(sample.scalar_type());
}

}  // namespace omnidp::models
