#pragma once
// The `synthetic` model (docs/runtime.md, "The synthetic model"): no network, no torch. It produces
// a deterministic uint8 video from (seed, frames, height, width) with a counter-mode hash and takes
// a time proportional to the request's a-priori cost (models/cost.hpp):
//   seconds = synthetic.seconds_per_gcost x prior_cost / 1e9,
// sleeping or busy-waiting (synthetic.wait), so scheduling can be tested and benchmarked on
// any machine. The wall time of generate() is that target (computing the bytes is included in
// it when it is shorter). Fault injection from `faults`: fail_ids always throw ModelError,
// transient_fail_ids throw TransientModelError on attempt 1 only, hang_ids never finish (they
// return only by throwing once GenerateContext::abandoned() is true).
//
// Threading: like every Pipeline, one thread calls generate() at a time.

#include <cstdint>
#include <string>
#include <unordered_set>

#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

// Byte i of the video is byte (i % 8) of splitmix64(key + i / 8), where key mixes the seed and
// the shape; pure and deterministic.
[[nodiscard]] Video synthetic_video(std::uint64_t seed, int frames, int height, int width);

// Seconds the synthetic model takes for a request.
[[nodiscard]] double synthetic_seconds(const Config& config, const Request& request);

// The synthetic model's facts: one layer of width 1, no patching (its registration in the model
// table, model_table.cpp, and its seconds).
[[nodiscard]] ModelInfo synthetic_facts();

class SyntheticPipeline final : public Pipeline {
 public:
  SyntheticPipeline(const Config& config, DeviceBinding device);

  [[nodiscard]] Video generate(const Request& request, const GenerateContext& ctx) override;
  [[nodiscard]] std::string model_name() const override { return "synthetic"; }
  [[nodiscard]] std::string device_name() const override { return device_.name; }

 private:
  Config config_;
  DeviceBinding device_;
  std::unordered_set<std::string> fail_ids_;
  std::unordered_set<std::string> transient_fail_ids_;
  std::unordered_set<std::string> hang_ids_;
};

}  // namespace omnidp::models
