#pragma once
// The request most model and runtime tests start from: its size and its denoising schedule.

#include "omnidp/manifest/request.hpp"

namespace omnidp::test {

// A Request of `frames` frames of `height` x `width`, `steps` denoising steps at `guidance`
// with `flow_shift`; every other field as a default Request has it.
[[nodiscard]] inline Request sized_request(int frames, int height, int width, int steps,
                                           double guidance, double flow_shift) {
  Request r;
  r.num_frames = frames;
  r.height = height;
  r.width = width;
  r.num_inference_steps = steps;
  r.guidance_scale = guidance;
  r.flow_shift = flow_shift;
  return r;
}

}  // namespace omnidp::test
