#pragma once
// Samplers of the diffusion loop, behind one small interface so a pipeline can swap them:
//
//   scheduler.set_timesteps(n);
//   for (int i = 0; i < scheduler.num_steps(); ++i) {
//     auto v = model(x, scheduler.timesteps()[i]);        // flow velocity
//     x = scheduler.step(v, i, x);
//   }
//
// Implementations reproduce Diffusers numerically (same float32/float64 arithmetic order):
// FlowMatchEulerScheduler (flow_match_euler.hpp) and UniPCScheduler (unipc.hpp).
// Not thread-safe: one scheduler per request loop (UniPC keeps a history between steps).

#include <torch/torch.h>

#include <vector>

namespace omnidp::models {

// numpy.linspace(start, stop, num) in float64, bit for bit: start + i * step with
// step = (stop - start) / (num - 1), the last value exactly `stop`.
[[nodiscard]] std::vector<double> numpy_linspace(double start, double stop, int num);

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Computes the schedule for n >= 1 steps and resets any history.
  virtual void set_timesteps(int num_inference_steps) = 0;
  // [n] float32 on the CPU: the timestep the model is given at step i (in [0, 1000)).
  [[nodiscard]] virtual const torch::Tensor& timesteps() const = 0;
  // [n + 1] float32 on the CPU: sigma at each step, the last one 0.
  [[nodiscard]] virtual const torch::Tensor& sigmas() const = 0;
  [[nodiscard]] int num_steps() const { return static_cast<int>(timesteps().size(0)); }
  // One denoising step: the sample for step index + 1. Steps must be taken in order
  // 0, 1, ..., n-1 after set_timesteps (ModelError otherwise). The result is on sample's
  // device, in the dtype the reference returns (Euler: model_output's, UniPC: sample's).
  [[nodiscard]] virtual torch::Tensor step(const torch::Tensor& model_output, int index,
                                           const torch::Tensor& sample) = 0;
};

}  // namespace omnidp::models
