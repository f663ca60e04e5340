#pragma once
// UniPC multistep as Wan uses it: Diffusers' UniPCMultistepScheduler with
// prediction_type="flow_prediction", use_flow_sigmas=True, predict_x0=True, solver_type="bh2",
// lower_order_final=True, final_sigmas_type="zero", no thresholding, no disabled correctors.
// Schedule (float64 as numpy, then float32): sigmas = shift*s / (1 + (shift-1)*s) over
// s = linspace(1, 1/T, n+1)[:-1], a first sigma of 1 lowered by 1e-6, then a final 0;
// timesteps = int(sigma * T) (truncated, as the reference's int64 cast). Step: the UniC corrector
// on the previous prediction, then the UniP predictor of order min(solver_order, steps done + 1, steps
// left), with all scalar coefficients computed as float32 tensors in the reference's order (log
// correctly rounded, the small linear solve in float64 rounded to float32: what the reference's
// PyTorch 2.x / MKL produce). Samples and history are float32; the result has the sample's dtype.

#include <deque>
#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "omnidp/models/schedulers/scheduler.hpp"

namespace omnidp::models {

struct UniPCOptions {
  double flow_shift = 5.0;
  int num_train_timesteps = 1000;
  int solver_order = 2;  // 1..3
  bool lower_order_final = true;
};

// Options from a Diffusers scheduler_config.json (UniPCMultistepScheduler). Throws ModelError
// when the config asks for a variant this implementation does not have (another
// prediction_type, no flow sigmas, bh1, thresholding, ...).
[[nodiscard]] UniPCOptions unipc_options_from_config(const nlohmann::json& config);

class UniPCScheduler final : public Scheduler {
 public:
  explicit UniPCScheduler(UniPCOptions options = {});
  void set_timesteps(int num_inference_steps) override;
  [[nodiscard]] const torch::Tensor& timesteps() const override { return timesteps_; }
  [[nodiscard]] const torch::Tensor& sigmas() const override { return sigmas_; }
  [[nodiscard]] torch::Tensor step(const torch::Tensor& model_output, int index,
                                   const torch::Tensor& sample) override;
  [[nodiscard]] const UniPCOptions& options() const noexcept { return options_; }

 private:
  [[nodiscard]] torch::Tensor sigma(int i) const;
  [[nodiscard]] torch::Tensor lambda(int i) const;
  [[nodiscard]] torch::Tensor predictor(const torch::Tensor& x, int order) const;
  [[nodiscard]] torch::Tensor corrector(const torch::Tensor& model_t, const torch::Tensor& last,
                                        const torch::Tensor& x_t, int order) const;

  UniPCOptions options_;
  torch::Tensor timesteps_;
  torch::Tensor sigmas_;
  std::deque<torch::Tensor> model_outputs_;  // converted (x0) predictions, newest last
  std::optional<torch::Tensor> last_sample_;
  int lower_order_nums_ = 0;
  int this_order_ = 1;
  int step_index_ = 0;
};

}  // namespace omnidp::models
