// omni-dp-bench-hv15: times one HunyuanVideo-1.5 transformer forward, the VAE decode and one
// full request (denoising loop with CFG + decode) for a size, depth, dtype and device, and
// prints tokens, seconds and TFLOP/s. FLOPs per forward: hv15_forward_flops
// (models/hv15/flops.hpp, the count the MFU figures use): L x [2S(4D^2 + 2DF) + 4 S^2 D] over
// S = N video + T text tokens.
//
//   omni-dp-bench-hv15 --layers 2 --size 256x256x9 --steps 2              # CPU, reduced depth
//   omni-dp-bench-hv15 --size 848x480x121 --dtype bf16 --device cuda      # the real model
//   omni-dp-bench-hv15 --path /models/HunyuanVideo-1.5 --dtype bf16 --device cuda
//
// A benchmark, never a test: figures go to stdout, one `key value` block per measurement.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/models/hv15/flops.hpp"
#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/torch_settings.hpp"
#include "omnidp/models/sample_schedule.hpp"

namespace {

namespace hv = omnidp::models::hv15;
using omnidp::bench::Clock;
using omnidp::bench::time_it;

int run(int argc, char** argv) {
  CLI::App app{"omni-dp-bench-hv15: HunyuanVideo-1.5 forward, VAE decode and full-request timings"};
  omnidp::bench::TimingOptions o;
  o.size = "848x480x121";
  o.what = "forward,decode,request";
  o.steps = 50;
  o.guidance = 6.0;
  omnidp::bench::add_timing_options(
      app, o,
      {.path = "Diffusers snapshot folder (pretrained weights); default: random weights",
       .size = "WIDTHxHEIGHTxFRAMES, or a comma list (forward at each)",
       .what = "comma list of forward, decode, request",
       .guidance = "CFG scale of the full request (1: no CFG)"});
  int layers = -1;
  int refiner_layers = -1;
  int text_valid = 256;
  int glyph_valid = 0;
  bool vae_tiling = false;
  app.add_flag("--vae-tiling", vae_tiling, "decode in 256x256 tiles (Diffusers enable_tiling)");
  app.add_option("--layers", layers, "double-stream blocks (default: the config's; reduce for CPU)");
  app.add_option("--refiner-layers", refiner_layers, "token refiner blocks (default: the config's)");
  app.add_option("--text-valid", text_valid, "valid Qwen tokens (of 1000)")->capture_default_str();
  app.add_option("--glyph-valid", glyph_valid, "valid byT5 tokens (of 256)")->capture_default_str();
  bool eager = false;
  app.add_flag("--eager", eager,
               "the Diffusers-equivalent eager path only: no fused elementwise kernels, libtorch's "
               "attention choice");
  bool compare = false;
  app.add_flag("--compare-eager", compare,
               "forward on the fused path (--attention) and then the eager path");
  bool fp8 = false;
  app.add_flag("--fp8", fp8,
               "after the measurements in the weights' dtype, quantize the transformer to FP8 "
               "(model.quantization fp8) and repeat forward and request; prints the request "
               "video's PSNR against the unquantized one (uint8, peak 255, as omni-dp-compare)");
  std::string fp8_plans = "fast:0";
  app.add_option("--fp8-plans", fp8_plans,
                 "with --fp8: comma list of ACCUMULATION:EDGE plans, each measured in turn "
                 "(ACCUMULATION fast | exact, EDGE the blocks kept bf16 at each end of the stack; "
                 "Fp8Plan, layers/quantization.hpp)")
      ->capture_default_str();
  std::string attention = "auto";
  app.add_option("--attention", attention,
                 "SDPA kernels on CUDA: auto | flash | cudnn | efficient | math")
      ->capture_default_str();
  bool strict = false;
  app.add_flag("--strict", strict, "determinism.strict: deterministic kernels (its cost)");
  std::string batches = "1";
  app.add_option("--batch", batches,
                 "forward batch sizes, comma list of 1 and 2 (2: prompt and negative prompt in "
                 "the ragged text layout, one CFG step)")
      ->capture_default_str();
  std::string key_padding = "on";
  app.add_option("--key-padding", key_padding,
                 "the joint attention's keys padded to a multiple of 128 on cuDNN "
                 "(layers/attention.hpp): on | off | on,off (each in turn, with the videos' "
                 "difference)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  {
    omnidp::Config settings;  // the product's one place for libtorch's process-wide settings
    settings.determinism.strict = strict;
    settings.model.fused_kernels = !eager;
    omnidp::models::apply_torch_settings(settings);
  }
  omnidp::models::set_attention_backend(omnidp::models::parse_attention_backend(attention));

  // --size takes a comma list: forward runs at each size; decode and request at the first.
  const auto sizes = omnidp::bench::parse_sizes(o.size);
  const int width = sizes.front().width, height = sizes.front().height, frames = sizes.front().frames;
  if (o.threads > 0) torch::set_num_threads(o.threads);
  const auto dtype = omnidp::models::to_scalar_type(omnidp::bench::parse_dtype(o.dtype));
  const torch::Device device(o.device);

  const auto load_start = Clock::now();
  std::unique_ptr<hv::HunyuanVideo15Pipeline> pipeline;
  if (!o.path.empty()) {
    hv::PipelineParts parts;
    parts.transformer =
        hv::load_transformer(std::filesystem::path(o.path) / "transformer", dtype, device);
    parts.vae = hv::load_vae(std::filesystem::path(o.path) / "vae", dtype, device);
    pipeline = std::make_unique<hv::HunyuanVideo15Pipeline>(std::move(parts), device);
  } else {
    hv::TransformerOptions to;  // the released configuration
    if (layers >= 0) to.num_layers = layers;
    if (refiner_layers >= 0) to.num_refiner_layers = refiner_layers;
    pipeline = hv::make_random_pipeline(to, hv::VaeOptions{}, o.weights_seed, dtype, device);
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  if (vae_tiling) {
    omnidp::models::hv15::VaeTiling tiling;
    tiling.enabled = true;
    pipeline->vae()->set_tiling(tiling);
  }
  auto transformer = pipeline->transformer();
  const auto& to = transformer->options();
  const auto shape = pipeline->latent_shape(frames, height, width);
  const std::int64_t tokens =
      shape[2] / to.patch_size_t * (shape[3] / to.patch_size) * (shape[4] / to.patch_size);

  std::cout << omnidp::version_line() << "\n"
            << "model hunyuanvideo-1.5 "
            << (o.path.empty() ? "(random weights)" : "(" + o.path + ")") << ", " << to.num_layers
            << " blocks, " << to.num_refiner_layers << " refiner blocks, hidden " << to.inner_dim()
            << "\n"
            << "device " << device.str() << "  dtype " << o.dtype << "  threads "
            << torch::get_num_threads() << "\n"
            << "size " << width << "x" << height << "x" << frames << "  latent [" << shape[1]
            << ", " << shape[2] << ", " << shape[3] << ", " << shape[4] << "]\n"
            << "attention " << attention << "  path "
            << (eager ? "eager (reference expressions)" : "fused") << "\n"
            << "load_seconds " << load_s << "\n";

  c10::InferenceMode inference;
  const auto has = [&](const char* w) { return o.what.find(w) != std::string::npos; };
  hv::RandomTextShape text_shape;
  text_shape.text_valid = text_valid;
  text_shape.glyph_valid = glyph_valid;
  const auto prompt = hv::random_text_conditioning("a benchmark prompt", to, text_shape);
  const auto negative = hv::random_text_conditioning("", to, text_shape);
  const std::int64_t text_tokens = text_valid + glyph_valid;  // padding is dropped at batch 1

  const auto forwards = [&](const std::string& label) {
    for (const auto& whf : sizes) {
      if (!has("forward")) break;
      const auto fshape = pipeline->latent_shape(whf.frames, whf.height, whf.width);
      const std::int64_t ftokens =
          fshape[2] / to.patch_size_t * (fshape[3] / to.patch_size) * (fshape[4] / to.patch_size);
      for (const auto& batch_text : omnidp::bench::split_list(batches)) {
        const auto batch = std::stoi(batch_text);
        if (batch != 1 && batch != 2)
          throw omnidp::UsageError("--batch takes 1 and 2, got " + batch_text);
        const auto both = [&](const torch::Tensor& a, const torch::Tensor& b) {
          return (batch == 1 ? a : torch::cat({a, b}, 0)).to(device);
        };
        hv::TransformerInputs in;
        in.hidden_states =
            omnidp::models::randn_cpu({batch, to.in_channels, fshape[2], fshape[3], fshape[4]}, 1)
                .to(device, dtype);
        in.timestep = torch::full({batch}, 500.0F).to(device, dtype);
        in.encoder_hidden_states = both(prompt.embeds, negative.embeds).to(dtype);
        in.encoder_attention_mask = both(prompt.mask, negative.mask);
        in.encoder_hidden_states_2 = both(prompt.embeds_2, negative.embeds_2).to(dtype);
        in.encoder_attention_mask_2 = both(prompt.mask_2, negative.mask_2);
        for (const bool fused : compare ? std::vector<bool>{true, false} : std::vector<bool>{!eager}) {
          omnidp::models::set_fused_elementwise(fused);
          omnidp::models::set_attention_backend(
              omnidp::models::parse_attention_backend(fused ? attention : std::string("auto")));
          const auto t = time_it(device, o.warmup, o.repeat, [&] { (void)transformer->forward(in); });
          const double flops = batch * hv::hv15_forward_flops(to, ftokens, text_tokens);
          std::cout << "\n[forward] " << whf.text << label << ", batch " << batch
                    << (batch == 1 ? ", padding dropped, " : ", ragged text (a CFG step), ")
                    << (strict ? "strict, " : "")
                    << (fused ? "fused path, attention " + attention
                              : std::string("eager path, attention auto"))
                    << "\nvideo_tokens " << ftokens << "\ntext_tokens " << text_tokens << "\n"
                    << "seconds_median " << t.median << "\nseconds_min " << t.min << "\n"
                    << "tflop " << flops / 1e12 << "\ntflops_per_s " << flops / t.median / 1e12
                    << "\n";
        }
      }
      omnidp::models::set_fused_elementwise(!eager);
      omnidp::models::set_attention_backend(omnidp::models::parse_attention_backend(attention));
    }
  };
  if (has("decode")) {
    auto vae = pipeline->vae();
    const auto z = omnidp::models::randn_cpu(shape, 3).to(device, dtype);
    const auto t = time_it(device, std::min(o.warmup, 1), o.repeat, [&] { (void)vae->decode(z); });
    std::cout << "\n[decode] " << shape[2] << " latent frames -> " << (shape[2] - 1) * 4 + 1
              << " frames" << (vae_tiling ? ", 256x256 tiles" : ", untiled") << "\n"
              << "seconds_median " << t.median << "\nseconds_min " << t.min << "\n";
  }
  // The request's video as uint8 (the pipeline's round(255 x)), for the FP8 PSNR.
  const auto request = [&](const std::string& label) {
    torch::Tensor video;
    if (!has("request")) return video;
    hv::SampleInputs in;
    omnidp::models::set_schedule(in, omnidp::bench::bench_request(sizes.front(), o));
    in.noise = omnidp::models::randn_cpu(shape, 4);
    in.prompt = prompt;
    in.negative = negative;
    const auto t = time_it(device, std::min(o.warmup, 1), o.request_repeat,
                           [&] { video = pipeline->sample(in, nullptr).video; });
    const int passes = o.guidance != 1.0 ? 2 : 1;
    const double flops = passes * o.steps * hv::hv15_forward_flops(to, tokens, text_tokens);
    std::cout << "\n[request]" << label << " " << o.steps << " steps, guidance " << o.guidance
              << " (" << (passes == 2 ? "CFG as one batch of 2" : "one forward per step")
              << "), VAE decode included\n"
              << "seconds_median " << t.median << "\nvideos_per_min " << 60.0 / t.median << "\n"
              << "transformer_tflops_per_s " << flops / t.median / 1e12 << "\n";
    return (video * 255.0).round().clamp(0, 255).to(torch::kCPU, torch::kUInt8);
  };
  const auto compare_videos = [&](const torch::Tensor& a, const torch::Tensor& b,
                                  const std::string& what) {
    const auto diff = a.to(torch::kFloat64) - b.to(torch::kFloat64);
    const double mse = diff.pow(2).mean().item<double>();
    std::cout << "\n[" << what << "] request video\nmax_level_diff "
              << diff.abs().max().item<double>() << "\npsnr_db "
              << (mse == 0.0 ? INFINITY : 10.0 * std::log10(255.0 * 255.0 / mse)) << "\n";
  };
  torch::Tensor reference;
  std::string reference_label;
  for (const auto& setting : omnidp::bench::split_list(key_padding)) {
    if (setting != "on" && setting != "off")
      throw omnidp::UsageError("--key-padding takes on and off, got " + setting);
    omnidp::models::set_attention_key_padding(setting == "on");
    const auto label = ", key padding " + setting;
    forwards(label);
    const auto video = request(label);
    if (!reference.defined()) {
      reference = video;
      reference_label = label;
    } else if (video.defined()) {
      compare_videos(reference, video,
                     "key padding: " + reference_label.substr(2) + " against " + label.substr(2));
    }
  }
  for (const auto& plan_text :
       fp8 ? omnidp::bench::split_list(fp8_plans) : std::vector<std::string>{}) {
    const auto colon = plan_text.find(':');
    const auto accumulation = plan_text.substr(0, colon);
    omnidp::models::Fp8Plan plan;
    if (colon == std::string::npos || (accumulation != "fast" && accumulation != "exact"))
      throw omnidp::UsageError("--fp8-plans takes fast:N or exact:N, got " + plan_text);
    plan.accumulation = accumulation == "fast" ? omnidp::models::Fp8Accumulation::fast
                                               : omnidp::models::Fp8Accumulation::exact;
    plan.bf16_edge_blocks = std::stoll(plan_text.substr(colon + 1));
    transformer->quantize_fp8(plan);
    const auto label = ", fp8 " + accumulation + " accumulation, " +
                       std::to_string(plan.bf16_edge_blocks) + " bf16 blocks at each end";
    forwards(label);
    const auto quantized = request(label);
    if (reference.defined()) compare_videos(reference, quantized, "fp8 against " + o.dtype + label);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omnidp::bench::guarded_main("omni-dp-bench-hv15", run, argc, argv);
}
