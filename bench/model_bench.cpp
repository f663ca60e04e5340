// omni-dp-bench-model: times one Wan transformer forward, one full request (denoising loop +
// VAE decode) and the VAE decode alone for a model, size, dtype and device, and prints tokens,
// seconds and TFLOP/s (FLOPs as docs/performance.md counts them, generalised to the config).
//
//   omni-dp-bench-model --model tiny-wan --size 832x480x33 --dtype fp32 --device cpu
//   omni-dp-bench-model --model wan2.2-ti2v-5b --size 1280x704x121 --dtype bf16 --device cuda
//
// A benchmark, never a test: figures go to stdout, one `key value` block per measurement.

#include <torch/torch.h>
#include <torch/version.h>
#include <CLI/CLI.hpp>
#if TORCH_VERSION_MAJOR >= 2 && __has_include(<torch/csrc/autograd/profiler_kineto.h>)
#include <torch/csrc/autograd/profiler_kineto.h>
#define OMNIDP_HAVE_KINETO 1
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/wan/factory.hpp"
#include "omnidp/models/wan/flops.hpp"
#include "omnidp/models/wan/pipeline.hpp"

namespace {

using omnidp::bench::Clock;
using omnidp::bench::time_it;
using omnidp::models::wan::WanPipeline;

// Runs fn once under libtorch's Kineto profiler (CPU ops and CUDA kernels) and writes a
// Chrome trace to `path` (scripts/profile_summary.py tabulates it).
template <typename F>
void profile_to(const std::string& path, const torch::Device& device, F&& fn) {
#ifdef OMNIDP_HAVE_KINETO
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  fn();
  omnidp::bench::sync(device);
  prof::disableProfiler()->save(path);
  std::cout << "profile " << path << "\n";
#else
  (void)device;
  (void)fn;
  throw omnidp::UsageError("--profile needs libtorch >= 2 with Kineto (" + path + ")");
#endif
}

void print_cold_and_warm(const omnidp::bench::ColdAndWarm& t) {
  std::cout << "first_run_seconds " << t.first << "\nseconds_median " << t.warm.median
            << "\nseconds_min " << t.warm.min << "\nvideos_per_min " << 60.0 / t.warm.median << "\n";
}

int run(int argc, char** argv) {
  CLI::App app{"omni-dp-bench-model: Wan transformer forward, full request and VAE decode timings"};
  std::string model = "tiny-wan";
  omnidp::bench::TimingOptions o;
  o.size = "832x480x33";
  o.what = "forward,request,decode";
  o.steps = 30;
  o.guidance = 5.0;
  o.repeat = 5;
  int text_tokens = 512;
  bool scalar_timestep = false;
  std::string decode_chunks = "1";
  std::string batch_list = "1";
  std::string vae_layout = "channels-last";
  int profile_steps = 3;
  std::string cudnn_benchmark;
  app.add_option("--model", model, "tiny-wan | wan2.2-ti2v-5b")->capture_default_str();
  omnidp::bench::add_timing_options(
      app, o,
      {.path = "Diffusers snapshot folder (pretrained weights); default: seeded random weights",
       .size = "WIDTHxHEIGHTxFRAMES, or a comma list (one model load)",
       .what = "comma list of forward, request (sampling + decode, first size only), generate "
               "(the product's path: text encoding, noise, sampling, decode, uint8 frames; "
               "first size only), decode",
       .guidance = "CFG scale of the full request (<= 1: no CFG)"});
  app.add_option("--text-tokens", text_tokens, "text context length")->capture_default_str();
  app.add_option("--decode-chunk", decode_chunks,
                 "latent frames per VAE decode step, a comma list (each timed; the largest "
                 "difference from the first one's video printed)")
      ->capture_default_str();
  app.add_option("--batch", batch_list, "forward batch sizes, a comma list (2 = a CFG step)")
      ->capture_default_str();
  app.add_option("--vae-layout", vae_layout,
                 "VAE weight layout for decode: channels-last (the CUDA default) | contiguous, or "
                 "a comma list")
      ->capture_default_str();
  app.add_option(
      "--cudnn-benchmark", cudnn_benchmark,
      "full request with cuDNN autotuning off and/or on, a comma list in order (default: the "
      "config's choice, on outside strict mode); the first run is timed apart");
  app.add_option("--profile-steps", profile_steps, "denoising steps of the profiled request")
      ->capture_default_str();
  app.add_flag("--scalar-timestep", scalar_timestep,
               "forward with one timestep per sample (default: per token)");
  std::string attention = "auto";
  app.add_option("--attention", attention,
                 "SDPA kernels on CUDA: auto | flash | cudnn | efficient | math, or a comma list")
      ->capture_default_str();
  std::string profile;
  app.add_option(
      "--profile", profile,
      "Chrome traces (libtorch >= 2): one forward to PREFIX.<size>.b<batch>.<attention>.json, one "
      "request (--profile-steps) to PREFIX.request.<size>.<attention>.json, one decode to "
      "PREFIX.decode.<size>.json");
  bool verbose = false;
  app.add_flag("--verbose", verbose, "debug log lines (e.g. the phases of the model load)");
  bool strict = false;
  app.add_flag("--strict", strict, "determinism.strict: deterministic kernels (its cost)");
  bool nan_fill = false;
  app.add_flag("--strict-nan-fill", nan_fill,
               "with --strict: libtorch's NaN fill of every new tensor back on (strict mode as it "
               "was before; its cost)");
  bool offload_text_encoder = false;
  app.add_option("--offload-text-encoder", offload_text_encoder,
                 "model.offload_text_encoder for --what generate (the shipped H200 configs: false)")
      ->capture_default_str();
  std::string quantization = "none";
  app.add_option("--quantization", quantization, "model.quantization: none | fp8 (W8A8 block GEMMs)")
      ->check(CLI::IsMember({"none", "fp8"}))
      ->capture_default_str();
  bool eager = false;
  app.add_flag("--eager", eager,
               "the Diffusers-equivalent eager path: per-token modulation, no fused "
               "elementwise kernels (layers/fused.hpp)");
  CLI11_PARSE(app, argc, argv);
  omnidp::models::set_fused_elementwise(!eager);
  if (verbose) omnidp::set_log_level(omnidp::LogLevel::debug);

  const auto sizes = omnidp::bench::parse_sizes(o.size);
  const auto layouts = omnidp::bench::split_list(vae_layout);
  for (const auto& layout : layouts) {
    if (layout != "channels-last" && layout != "contiguous") {
      throw omnidp::UsageError("--vae-layout: contiguous or channels-last, got '" + layout + "'");
    }
  }
  const auto backends = omnidp::bench::split_list(attention);
  for (const auto& b : backends) (void)omnidp::models::parse_attention_backend(b);
  if (o.threads > 0) torch::set_num_threads(o.threads);
  std::vector<std::int64_t> batches;
  for (const auto& b : omnidp::bench::split_list(batch_list)) {
    batches.push_back(std::stoll(b));
    if (batches.back() < 1) throw omnidp::UsageError("--batch must be positive");
  }

  omnidp::Config config;
  config.model.name = model;
  config.model.path = o.path;
  config.model.weights =
      o.path.empty() ? omnidp::WeightsSource::random : omnidp::WeightsSource::pretrained;
  config.model.weights_seed = o.weights_seed;
  config.model.dtype = omnidp::bench::parse_dtype(o.dtype);
  config.model.device =
      o.device.rfind("cuda", 0) == 0 ? omnidp::DeviceKind::cuda : omnidp::DeviceKind::cpu;
  config.determinism.strict = strict;
  config.model.offload_text_encoder = offload_text_encoder;
  config.model.fused_kernels = !eager;  // the factory applies it (layers/torch_settings.hpp)
  config.model.quantization =
      quantization == "fp8" ? omnidp::Quantization::fp8 : omnidp::Quantization::none;
  omnidp::DeviceBinding binding;
  binding.kind = config.model.device;
  binding.index = o.device.size() > 5 ? std::stoi(o.device.substr(5)) : 0;
  binding.name = o.device;

  const auto load_start = Clock::now();
  auto owned = omnidp::models::wan::create_wan_pipeline(config, binding);
  auto* pipeline = dynamic_cast<WanPipeline*>(owned.get());
  if (pipeline == nullptr) throw omnidp::UsageError("--model " + model + " is not a Wan pipeline");
  const double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  if (nan_fill) at::globalContext().setDeterministicFillUninitializedMemory(true);
#endif
  auto transformer = pipeline->transformer();
  const auto device = pipeline->device();
  const auto& to = transformer->options();
  const auto tdtype = transformer->dtype();

  std::cout << omnidp::version_line() << "\n"
            << "model " << model << (o.path.empty() ? " (random weights)" : " (" + o.path + ")")
            << "\n"
            << "device " << device.str() << "  dtype " << o.dtype << "  threads "
            << torch::get_num_threads() << "\n"
            << "path " << (eager ? "eager (reference expressions)" : "fused")
            << (strict ? "  determinism strict" : "") << (nan_fill ? " (NaN fill on)" : "")
            << "  quantization " << quantization << "\n"
            << "load_seconds " << load_s << "\n"
            << "peak_host_gib " << omnidp::bench::peak_host_gib() << "\n";

  c10::InferenceMode inference;
  const auto has = [&](const char* w) { return o.what.find(w) != std::string::npos; };
  const auto opts = torch::TensorOptions().device(device);
  for (const auto& sz : sizes) {
    const auto shape = pipeline->latent_shape(sz.frames, sz.height, sz.width);
    const std::int64_t tokens =
        shape[2] / to.patch_size[0] * (shape[3] / to.patch_size[1]) * (shape[4] / to.patch_size[2]);
    std::cout << "\n=== size " << sz.text << "  latent [" << shape[1] << ", " << shape[2] << ", "
              << shape[3] << ", " << shape[4] << "]\n";
    const auto latents = omnidp::models::randn_cpu(shape, 1).to(device, tdtype);
    const auto context =
        omnidp::models::randn_cpu({1, text_tokens, to.text_dim}, 2).to(device, tdtype);
    for (const auto& backend : backends) {
      omnidp::models::set_attention_backend(omnidp::models::parse_attention_backend(backend));
      if (has("forward")) {
        for (const auto batch : batches) {
          const auto x = latents.expand({batch, -1, -1, -1, -1}).contiguous();
          const auto c = context.expand({batch, -1, -1}).contiguous();
          const auto timestep =
              scalar_timestep ? torch::full({batch}, 500.0F, opts.dtype(torch::kFloat32))
                              : torch::full({batch, tokens}, 500.0F, opts.dtype(torch::kFloat32));
          const auto forward = [&] { (void)transformer->forward(x, timestep, c); };
          const auto t = time_it(device, o.warmup, o.repeat, forward);
          const double flops = static_cast<double>(batch) *
                               omnidp::models::wan::wan_forward_flops(to, tokens, text_tokens);
          std::cout << "\n[forward] batch " << batch << ", "
                    << (scalar_timestep ? "scalar" : "per-token") << " timesteps, attention "
                    << backend << "\n"
                    << "tokens " << tokens << "\ntext_tokens " << text_tokens << "\n"
                    << "seconds_median " << t.median << "\nseconds_min " << t.min << "\n"
                    << "tflop " << flops / 1e12 << "\ntflops_per_s " << flops / t.median / 1e12
                    << "\n";
          if (!profile.empty()) {
            profile_to(
                profile + "." + sz.text + ".b" + std::to_string(batch) + "." + backend + ".json",
                device, forward);
          }
        }
      }
      if (has("request") && &sz == &sizes.front()) {  // the first size only
        omnidp::models::wan::WanSampleInputs in;
        omnidp::models::set_schedule(in, omnidp::bench::bench_request(sz, o));
        in.noise = omnidp::models::randn_cpu(shape, 4);
        in.prompt_embeds = omnidp::models::randn_cpu({1, text_tokens, to.text_dim}, 5);
        in.negative_prompt_embeds = omnidp::models::randn_cpu({1, text_tokens, to.text_dim}, 6);
        const int passes = o.guidance > 1.0 ? 2 : 1;
        const double flops =
            passes * o.steps * omnidp::models::wan::wan_forward_flops(to, tokens, text_tokens);
        const auto settings = cudnn_benchmark.empty() ? std::vector<std::string>{""}
                                                      : omnidp::bench::split_list(cudnn_benchmark);
        for (const auto& setting : settings) {
          if (!setting.empty()) {
            if (setting != "on" && setting != "off")
              throw omnidp::UsageError("--cudnn-benchmark: on or off");
            at::globalContext().setBenchmarkCuDNN(setting == "on");
          }
          const auto t = omnidp::bench::time_cold_then_warm(
              device, o.warmup, o.request_repeat, [&] { (void)pipeline->sample(in, nullptr); });
          std::cout << "\n[request] " << o.steps << " steps, guidance " << o.guidance
                    << " (CFG as one batch of " << passes << "), VAE decode included, attention "
                    << backend << ", cuDNN autotuning "
                    << (at::globalContext().benchmarkCuDNN() ? "on" : "off") << "\n";
          print_cold_and_warm(t);
          std::cout << "transformer_tflops_per_s " << flops / t.warm.median / 1e12 << "\n";
        }
        if (!profile.empty()) {
          in.num_inference_steps = profile_steps;
          profile_to(profile + ".request." + sz.text + "." + backend + ".json", device,
                     [&] { (void)pipeline->sample(in, nullptr); });
        }
      }
    }
    if (has("generate") && &sz == &sizes.front()) {
      omnidp::Request req = omnidp::bench::bench_request(sz, o);
      const auto generate = [&] { (void)pipeline->generate(req, omnidp::GenerateContext{}); };
      const auto t = omnidp::bench::time_cold_then_warm(device, o.warmup, o.request_repeat, generate);
      std::cout << "\n[generate] " << o.steps << " steps, guidance " << o.guidance
                << ", text encoder" << (offload_text_encoder ? " (offloaded)" : " (resident)")
                << ", noise and uint8 frames included\n";
      print_cold_and_warm(t);
      if (!profile.empty()) {
        req.num_inference_steps = profile_steps;
        profile_to(profile + ".generate." + sz.text + ".json", device, generate);
      }
    }
    if (has("decode")) {
      auto vae = pipeline->vae();
      const auto z = omnidp::models::randn_cpu(shape, 3).to(device, vae->dtype());
      for (const auto& layout : layouts) {
        vae->set_channels_last(layout == "channels-last");
        torch::Tensor first;
        for (const auto& chunk_text : omnidp::bench::split_list(decode_chunks)) {
          const auto chunk = std::stoll(chunk_text);
          torch::Tensor video;
          const auto decode = [&] { video = vae->decode(z, chunk); };
          omnidp::models::cuda_reset_peak_memory();
          const auto t = time_it(device, std::min(o.warmup, 1), o.repeat, decode);
          const double peak_gib = omnidp::models::cuda_peak_allocated_gib();
          std::cout << "\n[decode] " << shape[2] << " latent frames -> " << sz.frames
                    << " frames, chunk " << chunk << ", weights " << layout << "\nseconds_median "
                    << t.median << "\nseconds_min " << t.min << "\n";
          if (peak_gib >= 0) std::cout << "peak_gpu_allocated_gib " << peak_gib << "\n";
          if (first.defined()) {
            std::cout << "max_abs_diff_from_chunk_"
                      << decode_chunks.substr(0, decode_chunks.find(',')) << " "
                      << (video - first).abs().max().item<double>() << "\n";
          } else {
            first = video;
          }
          if (!profile.empty()) {
            profile_to(
                profile + ".decode." + sz.text + "." + layout + ".chunk" + chunk_text + ".json",
                device, decode);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omnidp::bench::guarded_main("omni-dp-bench-model", run, argc, argv);
}
