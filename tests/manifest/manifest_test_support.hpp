#pragma once
// What the manifest tests share: the generation defaults their lines fall back on, and the
// message of a ManifestError.

#include <functional>
#include <string>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp::test {

inline GenerationConfig test_defaults() {
  GenerationConfig g;
  g.num_frames = 9;
  g.height = 64;
  g.width = 96;
  g.num_inference_steps = 4;
  g.guidance_scale = 5.0;
  g.flow_shift = 3.0;
  g.seed = 42;
  g.fps = 16;
  g.negative_prompt = "low quality";
  return g;
}

inline std::string manifest_error_of(const std::function<void()>& fn) {
  return error_of<ManifestError>(fn);
}

}  // namespace omnidp::test
