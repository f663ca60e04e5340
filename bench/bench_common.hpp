#pragma once
// Helpers shared by the model benchmarks (omni-dp-bench-model, omni-dp-bench-hv15): the options
// both take, timing with device synchronisation, the comma lists and dtype of their options, and
// main()'s error handling. Header-only, bench-only; link CLI11.

#include <sys/resource.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"

namespace omnidp::bench {

// --dtype: "fp32" | "bf16" | "fp16"; UsageError otherwise.
// The process's peak resident host memory so far, GiB (getrusage: kilobytes on Linux).
inline double peak_host_gib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);
}

inline DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::fp32;
  if (s == "bf16") return DType::bf16;
  if (s == "fp16") return DType::fp16;
  throw UsageError("--dtype must be fp32, bf16 or fp16");
}

// The options both model benchmarks take; each sets its own defaults before
// add_timing_options.
struct TimingOptions {
  std::string path;  // a Diffusers snapshot folder; empty: seeded random weights
  std::uint64_t weights_seed = 0;
  std::string size;
  std::string dtype = "fp32";
  std::string device = "cpu";
  std::string what;
  int steps = 0;
  double guidance = 0.0;
  int repeat = 3;
  int warmup = 1;
  int request_repeat = 1;
  int threads = 0;
};

// The help lines that differ between the benchmarks.
struct TimingHelp {
  const char* path = "";
  const char* size = "";
  const char* what = "";
  const char* guidance = "";
};

// --path, --weights-seed, --size, --dtype, --device, --what, --steps, --guidance, --repeat,
// --request-repeat, --warmup and --threads into `o` (its values are the defaults shown).
inline void add_timing_options(CLI::App& app, TimingOptions& o, const TimingHelp& help) {
  app.add_option("--path", o.path, help.path);
  app.add_option("--weights-seed", o.weights_seed, "seed of the random weights")->capture_default_str();
  app.add_option("--size", o.size, help.size)->capture_default_str();
  app.add_option("--dtype", o.dtype, "fp32 | bf16 | fp16")->capture_default_str();
  app.add_option("--device", o.device, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--what", o.what, help.what)->capture_default_str();
  app.add_option("--steps", o.steps, "denoising steps of the full request")->capture_default_str();
  app.add_option("--guidance", o.guidance, help.guidance)->capture_default_str();
  app.add_option("--repeat", o.repeat, "timed runs of forward/decode (median reported)")
      ->capture_default_str();
  app.add_option("--request-repeat", o.request_repeat, "timed runs of the full request")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed runs first")->capture_default_str();
  app.add_option("--threads", o.threads, "torch intra-op threads (0 = default)")->capture_default_str();
}

// main()'s body: run(argc, argv); an omni-dp Error prints "<name>: <what>" and exits with its
// exit code, any other exception with 1.
template <typename Run>
int guarded_main(const char* name, Run&& run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
}

using Clock = std::chrono::steady_clock;

struct Timing {
  double median = 0.0;
  double min = 0.0;
};

inline void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// `warmup` untimed runs, then at least one timed run; median and minimum in seconds, with
// the device synchronised around every run.
template <typename F>
Timing time_it(const torch::Device& device, int warmup, int repeat, F&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  sync(device);
  std::vector<double> seconds;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    const auto start = Clock::now();
    fn();
    sync(device);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2], seconds.front()};
}

struct ColdAndWarm {
  double first = 0.0;  // seconds of the first run (attention plans, allocator growth, ...)
  Timing warm;
};

// One timed cold run, then warmup - 1 untimed runs and `repeat` timed ones.
template <typename F>
ColdAndWarm time_cold_then_warm(const torch::Device& device, int warmup, int repeat, F&& fn) {
  ColdAndWarm t;
  t.first = time_it(device, 0, 1, fn).median;
  t.warm = time_it(device, std::max(warmup - 1, 0), repeat, fn);
  return t;
}

// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto comma = text.find(',', begin);
    const auto end = comma == std::string::npos ? text.size() : comma;
    if (end > begin) items.push_back(text.substr(begin, end - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return items;
}

struct VideoSize {
  int width = 0;
  int height = 0;
  int frames = 0;
  std::string text;  // as given, "WxHxF"
};

// "832x480x33,1280x704x121" -> sizes; UsageError for a malformed item or an empty list.
inline std::vector<VideoSize> parse_sizes(const std::string& text) {
  std::vector<VideoSize> sizes;
  for (const auto& item : split_list(text)) {
    VideoSize s;
    if (std::sscanf(item.c_str(), "%dx%dx%d", &s.width, &s.height, &s.frames) != 3) {
      throw UsageError("--size must be WIDTHxHEIGHTxFRAMES[,...], got '" + item + "'");
    }
    s.text = item;
    sizes.push_back(s);
  }
  if (sizes.empty())
    throw UsageError("--size must be WIDTHxHEIGHTxFRAMES[,...], got '" + text + "'");
  return sizes;
}

// The request of the full-request and generate timings: `size`, --steps at --guidance, flow
// shift 5.
inline Request bench_request(const VideoSize& size, const TimingOptions& o) {
  Request r;
  r.id = "bench";
  r.prompt = "A red fox running through fresh snow";
  r.seed = 1;
  r.num_frames = size.frames;
  r.height = size.height;
  r.width = size.width;
  r.num_inference_steps = o.steps;
  r.guidance_scale = o.guidance;
  r.flow_shift = 5.0;
  return r;
}

}  // namespace omnidp::bench
