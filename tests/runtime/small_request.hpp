#pragma once
// What the scheduler and coordinator tests queue, and in which order: cheap requests told apart
// by index, handed out in manifest order.

#include <cstddef>
#include <string>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"

namespace omnidp::runtime::testing {

// Request `index` (id "r<index>") with `frames` frames at 16x16, 1 step, no CFG: its tokens
// are its latent frames.
inline Request small_request(std::size_t index, int frames) {
  Request r;
  r.id = "r" + std::to_string(index);
  r.index = index;
  r.num_frames = frames;
  r.height = 16;
  r.width = 16;
  r.num_inference_steps = 1;
  r.guidance_scale = 1.0;
  return r;
}

// The scheduler settings with requests handed out in manifest order (the others default).
inline SchedulerConfig manifest_order() {
  SchedulerConfig s;
  s.order = WorkOrder::manifest;
  return s;
}

// The same with `prefetch` requests queued per replica beyond the running one.
inline SchedulerConfig manifest_order(int prefetch) {
  SchedulerConfig s = manifest_order();
  s.prefetch = prefetch;
  return s;
}

}  // namespace omnidp::runtime::testing
