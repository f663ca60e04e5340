#pragma once
// What every video pipeline samples a request with, copied one way: its size (num_frames,
// height, width) and its denoising schedule (num_inference_steps, guidance_scale, flow_shift).
// Header-only and torch-free.

#include "omnidp/manifest/request.hpp"

namespace omnidp::models {

// Sets those six fields of a pipeline's sample inputs (hv15::SampleInputs,
// wan::WanSampleInputs) from `request`; the inputs' other fields are left as they are.
template <typename SampleInputs>
void set_schedule(SampleInputs& in, const Request& request) {
  in.num_frames = request.num_frames;
  in.height = request.height;
  in.width = request.width;
  in.num_inference_steps = request.num_inference_steps;
  in.guidance_scale = request.guidance_scale;
  in.flow_shift = request.flow_shift;
}

}  // namespace omnidp::models
