#include "omnidp/models/schedulers/flow_match_euler.hpp"

#include <fmt/format.h>
#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp::models {

FlowMatchEulerScheduler::FlowMatchEulerScheduler(FlowMatchEulerOptions options)
    : options_(options) {
  if (!(options_.shift > 0.0)) throw ModelError("flow-match Euler: shift must be > 0");
  if (options_.num_train_timesteps <= 0) {
    throw ModelError("flow-match Euler: num_train_timesteps must be > 0");
  }
}

void FlowMatchEulerScheduler::set_timesteps(int num_inference_steps) {
  if (num_inference_steps < 1) {
    throw ModelError(fmt::format("flow-match Euler: num_inference_steps must be >= 1, got {}",
                                 num_inference_steps));
  }
  const auto s64 = numpy_linspace(1.0, 0.0, num_inference_steps + 1);
  const auto shift = static_cast<float>(options_.shift);
  const auto shift_m1 = static_cast<float>(options_.shift - 1.0);
  sigmas_ = torch::zeros({num_inference_steps + 1}, torch::kFloat32);
  timesteps_ = torch::empty({num_inference_steps}, torch::kFloat32);
  auto* sig = sigmas_.data_ptr<float>();
  auto* ts = timesteps_.data_ptr<float>();
  const auto train = static_cast<float>(options_.num_train_timesteps);
  for (int i = 0; i < num_inference_steps; ++i) {
    // numpy float32 array arithmetic with Python-float scalars: every operation in float32.
    const auto s = static_cast<float>(s64[static_cast<std::size_t>(i)]);
    const float num = shift * s;
    const float den = 1.0F + shift_m1 * s;
    sig[i] = num / den;
    ts[i] = sig[i] * train;
  }
  next_index_ = 0;
}

torch::Tensor FlowMatchEulerScheduler::step(const torch::Tensor& model_output, int index,
                                            const torch::Tensor& sample) {
  if (!sigmas_.defined()) throw ModelError("flow-match Euler: step before set_timesteps");
  if (index != next_index_ || index >= num_steps()) {
    throw ModelError(fmt::format("flow-match Euler: step {} out of order (expected {} of {})",
                                 index, next_index_, num_steps()));
  }
  const auto dt = sigmas_[index + 1] - sigmas_[index];  // 0-d float32, as the reference
  auto prev = sample.to(torch::kFloat32) + dt * model_output;
  ++next_index_;
  return prev.to(model_output.scalar_type());
}

}  // namespace omnidp::models
