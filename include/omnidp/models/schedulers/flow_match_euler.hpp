#pragma once
// Flow-matching Euler as HunyuanVideo-1.5 uses it: Diffusers' FlowMatchEulerDiscreteScheduler
// with set_timesteps(sigmas = linspace(1, 0, n + 1)[:-1]). Arithmetic as the reference: the
// float64 linspace is cast to float32, shifted in float32 (sigma' = shift*s / (1 + (shift-1)*s)),
// timesteps = sigma' * 1000 in float32, a final sigma 0, and
// step: x + (sigma[i+1] - sigma[i]) * v computed in float32, returned in v's dtype.

#include "omnidp/models/schedulers/scheduler.hpp"

namespace omnidp::models {

struct FlowMatchEulerOptions {
  double shift = 5.0;
  int num_train_timesteps = 1000;
};

class FlowMatchEulerScheduler final : public Scheduler {
 public:
  explicit FlowMatchEulerScheduler(FlowMatchEulerOptions options = {});
  void set_timesteps(int num_inference_steps) override;
  [[nodiscard]] const torch::Tensor& timesteps() const override { return timesteps_; }
  [[nodiscard]] const torch::Tensor& sigmas() const override { return sigmas_; }
  [[nodiscard]] torch::Tensor step(const torch::Tensor& model_output, int index,
                                   const torch::Tensor& sample) override;
  [[nodiscard]] const FlowMatchEulerOptions& options() const noexcept { return options_; }

 private:
  FlowMatchEulerOptions options_;
  torch::Tensor timesteps_;
  torch::Tensor sigmas_;
  int next_index_ = 0;
};

}  // namespace omnidp::models
