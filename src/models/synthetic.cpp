#include "omnidp/models/synthetic.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

#include "omnidp/common/error.hpp"
#include "omnidp/models/cost.hpp"

namespace omnidp::models {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// Waits until `deadline`, polling `abandoned` (if any) at least every `slice`. Returns false when
// abandoned first. Busy mode spins (for CPU-bound scheduling experiments), sleep mode sleeps.
bool wait_until(Clock::time_point deadline, WaitMode mode, const GenerateContext& ctx) {
  constexpr auto slice = std::chrono::milliseconds(20);
  while (true) {
    if (ctx.abandoned && ctx.abandoned()) return false;
    const auto now = Clock::now();
    if (now >= deadline) return true;
    const auto until = std::min(deadline, now + slice);
    if (mode == WaitMode::sleep) {
      std::this_thread::sleep_until(until);
    } else {
      while (Clock::now() < until) {
      }
    }
  }
}

std::unordered_set<std::string> to_set(const std::vector<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

}  // namespace

Video synthetic_video(std::uint64_t seed, int frames, int height, int width) {
  Video video;
  video.frames = frames;
  video.height = height;
  video.width = width;
  if (frames <= 0 || height <= 0 || width <= 0) {
    throw ModelError(fmt::format("synthetic: invalid video shape {}x{}x{}", frames, height, width));
  }
  video.data = std::vector<std::uint8_t>(video.byte_size());
  std::uint64_t key = splitmix64(seed);
  key = splitmix64(key ^ static_cast<std::uint64_t>(frames));
  key = splitmix64(key ^ static_cast<std::uint64_t>(height));
  key = splitmix64(key ^ static_cast<std::uint64_t>(width));
  const std::size_t size = video.data.size();
  const std::size_t words = size / 8;
  std::uint8_t* out = video.data.data();
  for (std::size_t w = 0; w < words; ++w) {
    const std::uint64_t v = splitmix64(key + w);
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out + w * 8, &v, 8);
    } else {
      for (std::size_t b = 0; b < 8; ++b) out[w * 8 + b] = static_cast<std::uint8_t>(v >> (8 * b));
    }
  }
  if (words * 8 < size) {
    const std::uint64_t v = splitmix64(key + words);
    for (std::size_t i = words * 8; i < size; ++i) {
      out[i] = static_cast<std::uint8_t>(v >> (8 * (i - words * 8)));
    }
  }
  return video;
}

ModelInfo synthetic_facts() {
  ModelInfo facts;
  facts.name = "synthetic";
  facts.patch_h = facts.patch_w = 1;
  facts.hidden_size = 1;
  facts.num_layers = 1;
  return facts;
}

double synthetic_seconds(const Config& config, const Request& request) {
  return config.synthetic.seconds_per_gcost * prior_cost(synthetic_facts(), request) / 1e9;
}

SyntheticPipeline::SyntheticPipeline(const Config& config, DeviceBinding device)
    : config_(config),
      device_(std::move(device)),
      fail_ids_(to_set(config.faults.fail_ids)),
      transient_fail_ids_(to_set(config.faults.transient_fail_ids)),
      hang_ids_(to_set(config.faults.hang_ids)) {
  if (device_.name.empty())
    device_.name = device_.kind == DeviceKind::cpu ? "cpu" : fmt::format("cuda:{}", device_.index);
}

Video SyntheticPipeline::generate(const Request& request, const GenerateContext& ctx) {
  const auto start = Clock::now();
  if (fail_ids_.contains(request.id)) {
    throw ModelError("synthetic failure injected (faults.fail_ids)", {"request " + request.id});
  }
  if (ctx.attempt <= 1 && transient_fail_ids_.contains(request.id)) {
    throw TransientModelError("synthetic transient failure injected (faults.transient_fail_ids)",
                              {"request " + request.id});
  }
  if (hang_ids_.contains(request.id)) {
    wait_until(Clock::time_point::max(), WaitMode::sleep, ctx);
    throw ModelError("abandoned while hanging (faults.hang_ids)", {"request " + request.id});
  }
  Video video = synthetic_video(request.seed, request.num_frames, request.height, request.width);
  const auto total = std::chrono::duration<double>(synthetic_seconds(config_, request));
  const int steps = std::max(1, request.num_inference_steps);
  for (int step = 1; step <= steps; ++step) {
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(total * step / steps);
    if (!wait_until(deadline, config_.synthetic.wait, ctx)) {
      throw ModelError(fmt::format("abandoned at step {}/{}", step, steps),
                       {"request " + request.id});
    }
    if (ctx.on_step) ctx.on_step(step, steps);
  }
  return video;
}

}  // namespace omnidp::models
