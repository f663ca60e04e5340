#pragma once
// What the Wan pipeline tests run: tiny-wan with seeded random weights (seed 5), fp32 on the
// CPU, strict determinism, and their t2v request.
#include <cstdint>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"
#include "request_shape.hpp"

namespace omnidp::models::wan::testing {

inline Config tiny_config() {
  Config c;
  c.model.name = "tiny-wan";
  c.model.weights = WeightsSource::random;
  c.model.weights_seed = 5;
  c.model.dtype = DType::fp32;
  c.model.device = DeviceKind::cpu;
  c.determinism.strict = true;
  return c;
}

// Request "r1", "a cat", t2v: 5 frames of 32 x 64, 3 steps at guidance 5, flow shift 5, 16 fps.
inline Request tiny_request(std::uint64_t seed = 3) {
  Request r = test::sized_request(5, 32, 64, 3, 5.0, 5.0);
  r.id = "r1";
  r.prompt = "a cat";
  r.seed = seed;
  r.task = Task::t2v;
  r.fps = 16;
  return r;
}

}  // namespace omnidp::models::wan::testing
