#include "omnidp/models/hv15/pipeline.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixture_inputs.hpp"
#include "fixtures.hpp"
#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/hv15/factory.hpp"
#include "omnidp/models/hv15/flops.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/pipelines/image_preprocess.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/text/encoder.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/runtime/collective.hpp"
#include "png_file.hpp"
#include "request_shape.hpp"
#include "temp_dir.hpp"
#include "video_difference.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {

const fs::path kRef = omnidp::test::fixture("diffusers-ref");

// A Diffusers-layout snapshot whose transformer/ and vae/ are the tiny fixture folders.
class Hv15Pipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    OMNIDP_REQUIRE_FIXTURES();
    fs::create_directories(dir_ / "snapshot");
    fs::create_directory_symlink(kRef / "hv15_transformer", dir_ / "snapshot" / "transformer");
    fs::create_directory_symlink(kRef / "hv15_vae", dir_ / "snapshot" / "vae");
  }

  omnidp::Config config(omnidp::WeightsSource weights) const {
    omnidp::Config c;
    c.model.name = "hunyuanvideo-1.5";
    c.model.path = (dir_ / "snapshot").string();
    c.model.weights = weights;
    c.model.weights_seed = 5;
    c.model.dtype = omnidp::DType::fp32;
    c.model.device = omnidp::DeviceKind::cpu;
    return c;
  }

  static hv::HunyuanVideo15Pipeline& as_hv15(std::unique_ptr<omnidp::Pipeline>& p) {
    return dynamic_cast<hv::HunyuanVideo15Pipeline&>(*p);
  }

  // Request "i" (seed 3) for image-to-video from a 50 x 40 RGB PNG in the test folder, its
  // image_sha256 that of the file (the pipeline checks the bytes it decodes against it).
  omnidp::Request i2v_request() const {
    const auto png = dir_ / "in.png";
    EXPECT_TRUE(omnidp::test::write_rgb_png(png, 50, 40, omnidp::test::gradient_rgb(50, 40)));
    auto r = request("i", 3);
    r.task = omnidp::Task::i2v;
    r.image = png.string();
    r.image_sha256 = omnidp::sha256_file_hex(png);
    return r;
  }

  static omnidp::Request request(const std::string& id, std::uint64_t seed) {
    omnidp::Request r = omnidp::test::sized_request(9, 64, 96, 2, 6.0, 5.0);
    r.id = id;
    r.prompt = "a red kite over the sea";
    r.negative_prompt = "blurry";
    r.seed = seed;
    return r;
  }

  // Embeddings of the fixture's sizes (Qwen 48-d, byT5 40-d) written as a prompt_embeds file.
  fs::path write_embeds(bool with_negative) const {
    const auto path = dir_ / (with_negative ? "embeds_neg.safetensors" : "embeds.safetensors");
    auto mask = torch::ones({1, 7});
    mask.slice(1, 5).zero_();
    std::vector<std::pair<std::string, torch::Tensor>> t = {
        {"prompt_embeds", omnidp::models::randn_cpu({1, 7, 48}, 1)},
        {"prompt_embeds_mask", mask},
        {"prompt_embeds_2", omnidp::models::randn_cpu({1, 4, 40}, 2)},
        {"prompt_embeds_mask_2", torch::tensor({{1.0F, 1.0F, 0.0F, 0.0F}})},
    };
    if (with_negative) {
      t.emplace_back("negative_prompt_embeds", omnidp::models::randn_cpu({1, 3, 48}, 3));
      t.emplace_back("negative_prompt_embeds_mask", torch::ones({1, 3}));
    }
    omnidp::models::save_safetensors(path, t);
    return path;
  }

  omnidp::test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

// The fixture transformer with random weights and a small random VAE whose encoder works (the
// fixture VAE's block_out_channels[-1] = 32 < 2 x 32 latent channels cannot encode); guidance
// on the steps before `guidance_stop` of them (the guider's stop) and `cache` as the requests'
// step cache.
std::unique_ptr<hv::HunyuanVideo15Pipeline> random_pipeline(double guidance_stop = 1.0,
                                                            const omnidp::StepCacheConfig& cache = {}) {
  hv::VaeOptions vo{.block_out_channels = {8, 16, 16, 64, 64}, .layers_per_block = 1};
  hv::PipelineParts parts;
  parts.transformer = hv::random_transformer(
      hv::TransformerOptions::from_json(
          omnidp::models::read_json(kRef / "hv15_transformer" / "config.json"), "t"),
      5, torch::kFloat32, torch::kCPU);
  parts.vae = hv::random_vae(vo, 6, torch::kFloat32, torch::kCPU);
  parts.random_conditioning = true;
  parts.guidance.stop = guidance_stop;
  parts.cache = cache;
  return std::make_unique<hv::HunyuanVideo15Pipeline>(std::move(parts), torch::kCPU);
}

std::unique_ptr<hv::HunyuanVideo15Pipeline> i2v_pipeline() { return random_pipeline(); }

hv::TextConditioning conditioning(std::uint64_t seed, std::int64_t len, std::int64_t valid) {
  hv::TextConditioning c;
  c.embeds = omnidp::models::randn_cpu({1, len, 48}, seed);
  c.mask = torch::zeros({1, len});
  c.mask.slice(1, 0, valid).fill_(1.0);
  c.embeds_2 = omnidp::models::randn_cpu({1, 3, 40}, seed + 100);
  c.mask_2 = torch::tensor({{1.0F, 0.0F, 1.0F}});
  return c;
}

// SampleInputs of `frames` x `height` x `width`, `steps` steps at `guidance` (flow shift 5),
// noise of seed `noise_seed` in `pipe`'s latent shape; no text or image conditioning yet.
hv::SampleInputs sample_inputs(const hv::HunyuanVideo15Pipeline& pipe, int frames, int height,
                               int width, int steps, double guidance, std::uint64_t noise_seed) {
  hv::SampleInputs in;
  omnidp::models::set_schedule(
      in, omnidp::test::sized_request(frames, height, width, steps, guidance, 5.0));
  in.noise = omnidp::models::randn_cpu(pipe.latent_shape(frames, height, width), noise_seed);
  return in;
}

}  // namespace

TEST_F(Hv15Pipeline, OneStepIsEulerOverClassifierFreeGuidance) {
  auto p = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::pretrained), {});
  auto& pipe = as_hv15(p);
  torch::NoGradGuard no_grad;
  hv::SampleInputs in = sample_inputs(pipe, 9, 64, 96, 1, 6.0, 42);
  in.prompt = conditioning(1, 6, 4);
  in.negative = conditioning(2, 5, 5);
  const auto latents = pipe.denoise(in, nullptr);

  // One step: sigma 1 -> 0 at timestep 1000; input = [noise, zero condition, zero mask].
  auto forward = [&](const hv::TextConditioning& c) {
    hv::TransformerInputs t;
    t.hidden_states =
        torch::cat({in.noise, torch::zeros_like(in.noise), torch::zeros({1, 1, 3, 4, 6})}, 1);
    t.timestep = torch::tensor({1000.0F});
    t.encoder_hidden_states = c.embeds;
    t.encoder_attention_mask = c.mask;
    t.encoder_hidden_states_2 = c.embeds_2;
    t.encoder_attention_mask_2 = c.mask_2;
    return pipe.transformer()->forward(t);
  };
  const auto cond = forward(in.prompt);
  const auto uncond = forward(in.negative);
  const auto expected = in.noise - (uncond + 6.0 * (cond - uncond));
  // The pipeline runs both branches as one ragged batch of 2 (CFG batched), these two forwards
  // at batch 1: equal up to float rounding, which guidance 6 amplifies 11-fold, so the bound is
  // relative to the latents' size (as in CfgParallelGroupEqualsTheSingleRun).
  EXPECT_LT((latents - expected).abs().max().item<double>(),
            1e-5 * std::max(1.0, expected.abs().max().item<double>()));

  // guidance 1: no negative pass (and none needed).
  in.guidance_scale = 1.0;
  in.negative = {};
  const auto plain = pipe.denoise(in, nullptr);
  EXPECT_LT((plain - (in.noise - cond)).abs().max().item<double>(), 1e-5);
  in.guidance_scale = 3.0;
  EXPECT_THROW((void)pipe.denoise(in, nullptr), omnidp::ModelError);
}

// CFG-parallel on two threads (in-process collectives), with guidance on the first half of
// the steps only (guider stop 0.5): the guided steps exchange both branches, the others run on
// rank 0 and are broadcast; both ranks end on the same latents, bit for bit, and on the single
// run's (its CFG as one batch of 2) up to float rounding.
TEST_F(Hv15Pipeline, CfgParallelGroupEqualsTheSingleRun) {
  const auto make = [] { return random_pipeline(0.5); };
  const auto single = make();
  hv::SampleInputs in = sample_inputs(*single, 5, 32, 32, 4, 6.0, 42);
  in.prompt = conditioning(1, 6, 4);
  in.negative = conditioning(2, 5, 5);
  const auto want = single->denoise(in, nullptr);
  std::vector<torch::Tensor> got(2);
  omnidp::models::testing::on_group(
      2,
      [&](int r, omnidp::Collective& c) {
        const auto pipeline = make();
        omnidp::GenerateContext ctx;
        ctx.cfg = &c;
        got[static_cast<std::size_t>(r)] = pipeline->denoise(in, &ctx);
      },
      omnidp::runtime::replica_group_name(0, {0, 1}));
  // Both ranks hold the same latents; each ran its branch at batch 1, the single run both as one
  // ragged batch of 2 (CFG batched): the same up to float rounding.
  EXPECT_TRUE(torch::equal(got[0], got[1]));
  EXPECT_LT((got[0] - want).abs().max().item<double>(),
            1e-5 * std::max(1.0, want.abs().max().item<double>()));
  // The guided steps matter: without guidance the latents differ.
  in.guidance_scale = 1.0;
  EXPECT_FALSE(torch::equal(single->denoise(in, nullptr), want));
}

// Step caching (pipelines/step_cache.hpp) on the double-stream blocks, with guidance on the
// first half of the steps only: each branch keeps its own cache over the forwards it runs (the
// unconditional one 4 of 8), and a cache whose schedule computes every forward gives the
// uncached latents (its CFG as one ragged batch) up to float rounding.
TEST_F(Hv15Pipeline, StepCachesKeepOneStatePerBranchOverTheDoubleStreamBlocks) {
  const auto make = [](const omnidp::StepCacheConfig& cache) { return random_pipeline(0.5, cache); };
  omnidp::StepCacheConfig off;
  const auto plain = make(off);
  hv::SampleInputs in = sample_inputs(*plain, 5, 32, 32, 8, 6.0, 42);
  in.prompt = conditioning(1, 6, 4);
  in.negative = conditioning(2, 5, 5);
  omnidp::models::CacheReport report;
  const auto want = plain->denoise(in, nullptr, &report);
  EXPECT_EQ(report.forwards, (omnidp::ForwardCounts{12, 12}));  // 4 guided steps batched: 2 each

  omnidp::StepCacheConfig warm;
  warm.policy = omnidp::CachePolicy::taylorseer;
  warm.disable_cache_before_step = 8;
  const auto all = make(warm)->denoise(in, nullptr, &report);
  EXPECT_LT((all - want).abs().max().item<double>(),
            1e-5 * std::max(1.0, want.abs().max().item<double>()));
  EXPECT_EQ(report.decisions, "transformer 0 cond CCCCCCCC, transformer 0 uncond CCCC");

  omnidp::StepCacheConfig taylor;
  taylor.policy = omnidp::CachePolicy::taylorseer;
  const auto cached = make(taylor)->denoise(in, nullptr, &report);
  EXPECT_EQ(report.decisions, "transformer 0 cond CCCSCSSS, transformer 0 uncond CCCS");
  EXPECT_EQ(report.forwards, (omnidp::ForwardCounts{12, 7}));
  EXPECT_GT((cached - want).abs().max().item<double>(), 1e-6);

  omnidp::StepCacheConfig loose;
  loose.policy = omnidp::CachePolicy::first_block;
  loose.threshold = 10.0;
  (void)make(loose)->denoise(in, nullptr, &report);
  EXPECT_EQ(report.decisions, "transformer 0 cond CSSSSSSS, transformer 0 uncond CSSS");
}

TEST_F(Hv15Pipeline, ImageToVideoConditionsTheFirstLatentFrame) {
  auto p = i2v_pipeline();
  auto& pipe = *p;
  torch::NoGradGuard no_grad;
  hv::SampleInputs in = sample_inputs(pipe, 9, 64, 96, 1, 1.0, 4);
  in.prompt = conditioning(1, 6, 6);
  in.image = torch::rand({1, 3, 64, 96}) * 2 - 1;
  in.image_embeds = omnidp::models::randn_cpu({1, 9, 24}, 8);
  const auto latents = pipe.denoise(in, nullptr);

  auto condition = torch::zeros_like(in.noise);
  condition.select(2, 0).copy_(pipe.vae()->encode_mean(in.image.unsqueeze(2)).select(2, 0) * 1.03682);
  auto mask = torch::zeros({1, 1, 3, 4, 6});
  mask.select(2, 0).fill_(1.0);
  hv::TransformerInputs t;
  t.hidden_states = torch::cat({in.noise, condition, mask}, 1);
  t.timestep = torch::tensor({1000.0F});
  t.encoder_hidden_states = in.prompt.embeds;
  t.encoder_attention_mask = in.prompt.mask;
  t.encoder_hidden_states_2 = in.prompt.embeds_2;
  t.encoder_attention_mask_2 = in.prompt.mask_2;
  t.image_embeds = in.image_embeds;
  const auto expected = in.noise - pipe.transformer()->forward(t);
  EXPECT_LT((latents - expected).abs().max().item<double>(), 1e-5);
  // The image tokens matter.
  in.image_embeds = omnidp::models::randn_cpu({1, 9, 24}, 9);
  EXPECT_GT((pipe.denoise(in, nullptr) - latents).abs().max().item<double>(), 1e-4);
}

TEST_F(Hv15Pipeline, GenerateIsDeterministicPerSeed) {
  auto p = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::random), {});
  EXPECT_EQ(p->model_name(), "hunyuanvideo-1.5");
  const auto a = p->generate(request("a", 7), {});
  EXPECT_EQ(a.frames, 9);
  EXPECT_EQ(a.height, 64);
  EXPECT_EQ(a.width, 96);
  ASSERT_EQ(a.data.size(), 9U * 64U * 96U * 3U);
  const auto b = p->generate(request("b", 7), {});
  EXPECT_EQ(a.data, b.data);
  const auto c = p->generate(request("c", 8), {});
  EXPECT_NE(a.data, c.data);
  auto other = request("d", 7);
  other.prompt = "another prompt";
  EXPECT_NE(a.data, p->generate(other, {}).data);
}

// diffusers has no HunyuanVideo-1.5 LoRA loader: a Diffusers-named adapter (low rank on the
// first block's attention, a lora_B.bias, a full .diff delta of its FFN output) gives the video
// of weights merged by hand (W + scale * B A, b + scale * bias, W + scale * diff) fused by
// model.lora, and within one uint8 level of it as a request's "lora" (the low rank beside the
// layer, the bias and the full delta fused; the base comes back exactly after it).
TEST_F(Hv15Pipeline, ALoraGivesTheVideoOfWeightsMergedByHand) {
  auto hand = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::random), {});
  auto params = as_hv15(hand).transformer()->named_parameters();
  const std::string q = "transformer_blocks.0.attn.to_q";
  const std::string out = "transformer_blocks.0.ff.net.2";
  ASSERT_NE(params.find(q + ".weight"), nullptr);
  ASSERT_NE(params.find(out + ".weight"), nullptr);
  const auto wq = params[q + ".weight"];
  const auto wo = params[out + ".weight"];
  auto g = at::detail::createCPUGenerator(3);
  const auto a = torch::randn({4, wq.size(1)}, g) * 0.2, b = torch::randn({wq.size(0), 4}, g) * 0.2;
  const auto bias = torch::randn({wq.size(0)}, g) * 0.1, diff = torch::randn(wo.sizes(), g) * 0.05;
  const auto file = dir_ / "hv15_lora.safetensors";
  omnidp::models::save_safetensors(file, {{"transformer." + q + ".lora_A.weight", a},
                                          {"transformer." + q + ".lora_B.weight", b},
                                          {"transformer." + q + ".lora_B.bias", bias},
                                          {"transformer." + out + ".diff", diff}});
  const omnidp::LoraAdapter adapter{.path = file.string(),
                                    .scale = 0.6,
                                    .expert = std::nullopt,
                                    .sha256 = omnidp::sha256_file_hex(file)};
  const auto base = hand->generate(request("a", 7), {});
  {
    torch::NoGradGuard no_grad;
    wq.add_(torch::matmul(b, a) * 0.6);
    params[q + ".bias"].add_(bias * 0.6);
    wo.add_(diff * 0.6);
  }
  const auto merged = hand->generate(request("a", 7), {});
  EXPECT_NE(merged.data, base.data);
  auto c = config(omnidp::WeightsSource::random);
  c.model.lora = {adapter};
  auto fused = hv::create_hunyuanvideo15_pipeline(c, {});
  EXPECT_EQ(fused->generate(request("a", 7), {}).data, merged.data);
  auto per_request = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::random), {});
  auto r = request("a", 7);
  r.lora = {adapter};
  const auto line = per_request->generate(r, {});
  EXPECT_NE(line.data, base.data);
  EXPECT_LE(omnidp::test::max_level_difference(line, merged), 1);
  EXPECT_EQ(per_request->generate(request("a", 7), {}).data, base.data);
}

// model.vae_tiling: Diffusers' enable_tiling() on the VAE. A video within one 256-pixel tile
// decodes as untiled (the same bytes); a larger one in blended tiles (other bytes).
TEST_F(Hv15Pipeline, VaeTilingTilesOnlyVideosLargerThanATile) {
  auto untiled = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::random), {});
  auto c = config(omnidp::WeightsSource::random);
  c.model.vae_tiling = true;
  auto tiled = hv::create_hunyuanvideo15_pipeline(c, {});
  EXPECT_FALSE(as_hv15(untiled).vae()->tiling().enabled);
  EXPECT_TRUE(as_hv15(tiled).vae()->tiling().enabled);
  EXPECT_EQ(untiled->generate(request("a", 7), {}).data, tiled->generate(request("a", 7), {}).data);
  auto large = request("b", 7);
  large.num_frames = 1;
  large.height = 288;
  large.width = 320;
  const auto plain = untiled->generate(large, {});
  const auto blended = tiled->generate(large, {});
  ASSERT_EQ(blended.data.size(), 288U * 320U * 3U);
  EXPECT_NE(plain.data, blended.data);
}

TEST_F(Hv15Pipeline, GenerateMatchesSampleOnTheEmbeddingsFile) {
  auto p = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::pretrained), {});
  auto& pipe = as_hv15(p);
  auto r = request("x", 11);
  r.prompt_embeds = write_embeds(true).string();
  int steps_seen = 0;
  omnidp::GenerateContext ctx;
  ctx.on_step = [&](int step, int total) {
    EXPECT_EQ(total, 2);
    steps_seen = step;
  };
  const auto video = p->generate(r, ctx);
  EXPECT_EQ(steps_seen, 2);

  hv::SampleInputs in = sample_inputs(pipe, 9, 64, 96, 2, 6.0, 11);
  in.prompt = pipe.prompt_conditioning(r, false);
  in.negative = pipe.prompt_conditioning(r, true);
  EXPECT_EQ(in.prompt.embeds.sizes(), (std::vector<std::int64_t>{1, 7, 48}));
  EXPECT_FALSE(in.negative.embeds_2.defined());  // no negative glyph text in the file
  const auto out = pipe.sample(in, nullptr);
  const auto bytes = (out.video[0] * 255).round().to(torch::kUInt8).contiguous();
  ASSERT_EQ(static_cast<std::size_t>(bytes.numel()), video.data.size());
  EXPECT_EQ(std::memcmp(bytes.data_ptr<std::uint8_t>(), video.data.data(), video.data.size()), 0);
}

// A request's embeddings file is mapped once: the FLOP count maps it, the conditioning of both
// branches reads that mapping (the file is gone by then), and another content of the same path
// (its prompt_embeds_sha256) is read anew.
TEST_F(Hv15Pipeline, TheEmbeddingsFileIsReadOncePerRequest) {
  const auto make = [&] {
    return hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::pretrained), {});
  };
  auto r = request("x", 11);
  const auto path = write_embeds(true);
  r.prompt_embeds = path.string();
  r.prompt_embeds_sha256 = "the manifest's hash of the file";
  const auto want = make()->generate(r, {});
  auto p = make();
  ASSERT_TRUE(p->flops(r).has_value());
  fs::remove(path);
  const auto got = p->generate(r, {});
  EXPECT_EQ(got.data, want.data);
  r.prompt_embeds_sha256 = "another content";
  try {
    (void)p->generate(r, {});
    FAIL() << "expected InputError";
  } catch (const omnidp::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST_F(Hv15Pipeline, PretrainedWeightsNeedEmbeddings) {
  auto p = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::pretrained), {});
  auto r = request("x", 1);
  try {
    (void)p->generate(r, {});
    FAIL() << "expected InputError";
  } catch (const omnidp::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("prompt_embeds"), std::string::npos) << e.what();
  }
  r.prompt_embeds = write_embeds(false).string();  // CFG on, but no negative embeddings
  try {
    (void)p->generate(r, {});
    FAIL() << "expected InputError";
  } catch (const omnidp::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("negative_prompt_embeds"), std::string::npos) << e.what();
  }
  r.guidance_scale = 1.0;  // no CFG: the positive embeddings suffice
  EXPECT_EQ(p->generate(r, {}).frames, 9);
}

TEST_F(Hv15Pipeline, AbandonStopsBetweenSteps) {
  auto p = hv::create_hunyuanvideo15_pipeline(config(omnidp::WeightsSource::random), {});
  omnidp::GenerateContext ctx;
  ctx.abandoned = [] { return true; };
  EXPECT_THROW((void)p->generate(request("a", 1), ctx), omnidp::ModelError);
}

TEST_F(Hv15Pipeline, ImageToVideoFromAPngAndRandomImageTokens) {
  auto p = i2v_pipeline();
  // 50 x 40 image: resized to cover 96 x 64 (96 x 76), centre-cropped.
  auto r = i2v_request();
  const auto a = p->generate(r, {});
  EXPECT_EQ(a.frames, 9);
  auto t2v = request("t", 3);
  EXPECT_NE(a.data, p->generate(t2v, {}).data);
  r.image = (dir_ / "missing.png").string();
  EXPECT_THROW((void)p->generate(r, {}), omnidp::InputError);
}

// A prompt encoder that counts its calls and returns seeded embeddings of the fixture's sizes.
class CountingEncoder final : public omnidp::models::TextEncoder {
 public:
  explicit CountingEncoder(int* calls) : calls_(calls) {}
  omnidp::models::PromptEmbedding encode(const std::string& prompt) override {
    ++*calls_;
    omnidp::models::PromptEmbedding e;
    const auto seed = static_cast<std::uint64_t>(prompt.size());
    e.embeds = omnidp::models::randn_cpu({1, 6, 48}, seed);
    e.mask = torch::tensor({{1, 1, 1, 1, 0, 0}});
    e.embeds_2 = torch::zeros({1, 4, 40});
    e.mask_2 = torch::zeros({1, 4}, torch::kLong);
    return e;
  }
  omnidp::models::EncodeCost encode_cost(const std::string& prompt) const override {
    return {100.0 * static_cast<double>(prompt.size()), 4, 0};  // 4 valid tokens, as encode()
  }

 private:
  int* calls_;
};

// The request FLOPs of what generate() runs (models/hv15/flops.hpp): the valid text tokens of
// each branch (random conditioning: 256; the embeddings file: its masks), the image tokens and
// the VAE encode for i2v.
TEST_F(Hv15Pipeline, FlopsOfWhatGenerateRuns) {
  const auto p = i2v_pipeline();
  const auto& to = p->transformer()->options();
  const auto& vo = p->vae()->options();
  const std::int64_t n = 3 / to.patch_size_t * (4 / to.patch_size) * (6 / to.patch_size);
  const auto t2v = request("t", 3);  // 9 x 64 x 96: 3 x 4 x 6 latents; 2 steps, CFG on both
  auto f = p->flops(t2v);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer,
            2.0 * hv::hv15_forward_flops(to, n, 256) + 2.0 * hv::hv15_forward_flops(to, n, 256));
  EXPECT_EQ(f->vae, hv::hv15_vae_decode_flops(vo, 3, 4, 6));
  EXPECT_EQ(f->text, 0.0);  // random embeddings: no encoder ran
  f = p->flops(i2v_request());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 4.0 * hv::hv15_forward_flops(to, n, 256 + 729));
  EXPECT_EQ(f->vae,
            hv::hv15_vae_decode_flops(vo, 3, 4, 6) + hv::hv15_vae_encode_image_flops(vo, 64, 96));
  auto embedded = request("e", 3);
  embedded.prompt_embeds = write_embeds(true).string();  // 5 + 2 valid, negative 3
  f = p->flops(embedded);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer,
            2.0 * hv::hv15_forward_flops(to, n, 7) + 2.0 * hv::hv15_forward_flops(to, n, 3));
  embedded.guidance_scale = 1.0;  // no CFG step: one branch
  f = p->flops(embedded);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 2.0 * hv::hv15_forward_flops(to, n, 7));
}

TEST_F(Hv15Pipeline, TextEncoderIsUsedAndTheNegativeIsCached) {
  int calls = 0;
  hv::PipelineParts parts;
  parts.transformer = hv::load_transformer(kRef / "hv15_transformer", torch::kFloat32, torch::kCPU);
  parts.vae = hv::load_vae(kRef / "hv15_vae", torch::kFloat32, torch::kCPU);
  parts.text_encoder = std::make_unique<CountingEncoder>(&calls);
  hv::HunyuanVideo15Pipeline pipe(std::move(parts), torch::kCPU);
  auto r = request("e", 2);
  r.num_inference_steps = 1;
  const auto a = pipe.generate(r, {});
  EXPECT_EQ(calls, 2);  // prompt + negative prompt
  r.prompt = "a different prompt";
  const auto b = pipe.generate(r, {});
  EXPECT_EQ(calls, 3);  // the negative prompt's encoding is reused
  EXPECT_NE(a.data, b.data);
  r.negative_prompt = "other";
  (void)pipe.generate(r, {});
  EXPECT_EQ(calls, 5);
  // A prompt_embeds file wins over the encoder.
  r.prompt_embeds = write_embeds(true).string();
  (void)pipe.generate(r, {});
  EXPECT_EQ(calls, 5);
}

TEST(Hv15PipelineConfig, SchedulerConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto cfg =
      omnidp::models::read_json(kRef / "hv15_pipeline_t2v" / "scheduler" / "scheduler_config.json");
  const auto o = hv::scheduler_options_from_json(cfg, "s");
  EXPECT_DOUBLE_EQ(o.shift, 5.0);
  EXPECT_EQ(o.num_train_timesteps, 1000);
  auto bad = cfg;
  bad["use_dynamic_shifting"] = true;
  try {
    (void)hv::scheduler_options_from_json(bad, "scheduler/scheduler_config.json");
    FAIL() << "dynamic shifting accepted";
  } catch (const omnidp::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("'use_dynamic_shifting' is not supported"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("scheduler/scheduler_config.json"), std::string::npos)
        << e.what();
  }
  bad = cfg;
  bad["shift_terminal"] = 0.1;
  EXPECT_THROW((void)hv::scheduler_options_from_json(bad, "s"), omnidp::ModelError);
  EXPECT_THROW((void)hv::scheduler_options_from_json(
                   nlohmann::json{{"_class_name", "UniPCMultistepScheduler"}}, "s"),
               omnidp::ModelError);
}

// An image encoder that records the image it was given and returns seeded tokens.
class RecordingImageEncoder final : public omnidp::models::ImageEncoder {
 public:
  RecordingImageEncoder(std::vector<omnidp::RgbImage>* seen, std::int64_t dim)
      : seen_(seen), dim_(dim) {}
  torch::Tensor encode(const omnidp::RgbImage& image) override {
    seen_->push_back(image);
    return omnidp::models::randn_cpu({1, 5, dim_}, 77);
  }

 private:
  std::vector<omnidp::RgbImage>* seen_;
  std::int64_t dim_;
};

TEST_F(Hv15Pipeline, ImageEncoderGetsTheResizedImageAndFeedsTheTransformer) {
  auto r = i2v_request();
  r.num_inference_steps = 1;

  std::vector<omnidp::RgbImage> seen;
  auto with_encoder = i2v_pipeline();
  const auto random_tokens = with_encoder->generate(r, {});
  hv::PipelineParts parts;
  parts.transformer = with_encoder->transformer();
  parts.vae = with_encoder->vae();
  const auto dim = parts.transformer->options().image_embed_dim;
  parts.image_encoder = std::make_unique<RecordingImageEncoder>(&seen, dim);
  parts.random_conditioning = true;
  hv::HunyuanVideo15Pipeline pipe(std::move(parts), torch::kCPU);
  const auto encoded = pipe.generate(r, {});
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].width, 96);
  EXPECT_EQ(seen[0].height, 64);
  omnidp::RgbImage decoded;
  decoded.width = 50;
  decoded.height = 40;
  decoded.data = omnidp::test::gradient_rgb(50, 40);  // i2v_request's image
  EXPECT_EQ(seen[0].data, omnidp::models::resize_and_crop(decoded, 96, 64).data);
  EXPECT_NE(encoded.data, random_tokens.data);  // the encoder's tokens, not the seeded ones
}

// --- the released variants (docs/models.md, "HunyuanVideo-1.5's released variants") ---------

namespace {

// A tiny transformer of the fixture's widths (Qwen 48, byT5 40, image 24) with random weights,
// use_meanflow as asked, and a small random VAE that encodes (for i2v); no fixtures needed.
std::unique_ptr<hv::HunyuanVideo15Pipeline> variant_pipeline(
    bool meanflow, omnidp::models::GuidanceOptions guidance = {}) {
  hv::TransformerOptions to = hv::testing::fixture_width_options(2, 1);
  to.use_meanflow = meanflow;
  hv::VaeOptions vo{.block_out_channels = {8, 16, 16, 64, 64}, .layers_per_block = 1};
  hv::PipelineParts parts;
  parts.transformer = hv::random_transformer(to, 21, torch::kFloat32, torch::kCPU);
  parts.vae = hv::random_vae(vo, 22, torch::kFloat32, torch::kCPU);
  parts.random_conditioning = true;
  parts.guidance = guidance;
  return std::make_unique<hv::HunyuanVideo15Pipeline>(std::move(parts), torch::kCPU);
}

// Image-to-video inputs of 5 x 32 x 32 (2 x 2 x 2 latents), `steps` steps at `guidance`.
hv::SampleInputs meanflow_inputs(const hv::HunyuanVideo15Pipeline& pipe, int steps, double guidance) {
  hv::SampleInputs in = sample_inputs(pipe, 5, 32, 32, steps, guidance, 11);
  in.prompt = conditioning(1, 6, 4);
  in.negative = conditioning(2, 5, 5);
  in.image = omnidp::models::randn_cpu({1, 3, 32, 32}, 12).clamp(-1.0, 1.0);
  in.image_embeds = omnidp::models::randn_cpu({1, 9, 24}, 8);
  return in;
}

// The denoising loop written out with one forward per branch: timestep_r as given per step
// (`with_r`: the next timestep, 0 at the last; otherwise none), Euler steps of the scheduler.
torch::Tensor meanflow_by_hand(hv::HunyuanVideo15Pipeline& pipe, const hv::SampleInputs& in,
                               bool with_r) {
  omnidp::models::FlowMatchEulerOptions so;
  so.shift = in.flow_shift;
  omnidp::models::FlowMatchEulerScheduler scheduler(so);
  scheduler.set_timesteps(in.num_inference_steps);
  const auto& timesteps = scheduler.timesteps();
  auto condition = torch::zeros_like(in.noise);
  auto mask = torch::zeros({1, 1, in.noise.size(2), in.noise.size(3), in.noise.size(4)});
  if (in.image.defined()) {
    condition.select(2, 0).copy_(pipe.vae()->encode_mean(in.image.unsqueeze(2)).select(2, 0) *
                                 pipe.vae()->options().scaling_factor);
    mask.select(2, 0).fill_(1.0);
  }
  auto x = in.noise.clone();
  for (int i = 0; i < in.num_inference_steps; ++i) {
    const auto forward = [&](const hv::TextConditioning& c) {
      hv::TransformerInputs t;
      t.hidden_states = torch::cat({x, condition, mask}, 1);
      t.timestep = timesteps[i].expand({1});
      if (with_r) {
        t.timestep_r =
            i + 1 < in.num_inference_steps ? timesteps[i + 1].expand({1}) : torch::zeros({1});
      }
      t.encoder_hidden_states = c.embeds;
      t.encoder_attention_mask = c.mask;
      t.encoder_hidden_states_2 = c.embeds_2;
      t.encoder_attention_mask_2 = c.mask_2;
      if (in.image_embeds.defined()) t.image_embeds = in.image_embeds;
      return pipe.transformer()->forward(t);
    };
    auto pred = forward(in.prompt);
    if (std::abs(in.guidance_scale - 1.0) > 1e-12) {
      const auto uncond = forward(in.negative);
      pred = uncond + in.guidance_scale * (pred - uncond);
    }
    x = scheduler.step(pred, i, x);
  }
  return x;
}

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
}

}  // namespace

TEST(Hv15Variants, NextTimestepIsTheFollowingOneAndZeroAtTheEnd) {
  const auto ts = torch::tensor({1000.0F, 937.5F, 833.3F});
  EXPECT_FLOAT_EQ(hv::next_timestep(ts, 0).item<float>(), 937.5F);
  EXPECT_FLOAT_EQ(hv::next_timestep(ts, 1).item<float>(), 833.3F);
  EXPECT_FLOAT_EQ(hv::next_timestep(ts, 2).item<float>(), 0.0F);
  EXPECT_EQ(hv::next_timestep(ts, 2).scalar_type(), torch::kFloat32);
  EXPECT_THROW((void)hv::next_timestep(ts, 3), omnidp::ModelError);
  EXPECT_THROW((void)hv::next_timestep(ts, -1), omnidp::ModelError);
  hv::TransformerOptions o;
  EXPECT_FALSE(hv::meanflow_timestep_r(o, true));
  o.use_meanflow = true;
  EXPECT_TRUE(hv::meanflow_timestep_r(o, true));
  EXPECT_FALSE(hv::meanflow_timestep_r(o, false));  // Diffusers' T2V pipeline passes none
}

// The step-distilled I2V (use_meanflow): each step's transformer call gets timestep_r = the
// next timestep and the last one 0, as HunyuanVideo15ImageToVideoPipeline passes it; the loop
// written out with that timestep_r is what denoise() computes, and without it the result differs.
TEST(Hv15Variants, MeanflowImageToVideoPassesTheNextTimestepAsTimestepR) {
  auto pipe = variant_pipeline(true);
  torch::NoGradGuard no_grad;
  const auto in = meanflow_inputs(*pipe, 3, 1.0);
  const auto latents = pipe->denoise(in, nullptr);
  const auto want = meanflow_by_hand(*pipe, in, true);
  EXPECT_LT(rel_diff(latents, want), 1e-5);
  EXPECT_GT(rel_diff(latents, meanflow_by_hand(*pipe, in, false)), 1e-4);
}

// Diffusers' text-to-video pipeline never passes timestep_r, whatever the transformer: so
// neither does ours (the result is the loop without it, and differs from the one with it).
TEST(Hv15Variants, MeanflowTextToVideoPassesNoTimestepRAsDiffusers) {
  auto pipe = variant_pipeline(true);
  torch::NoGradGuard no_grad;
  auto in = meanflow_inputs(*pipe, 2, 1.0);
  in.image = torch::Tensor();
  in.image_embeds = torch::Tensor();
  const auto latents = pipe->denoise(in, nullptr);
  EXPECT_LT(rel_diff(latents, meanflow_by_hand(*pipe, in, false)), 1e-5);
  EXPECT_GT(rel_diff(latents, meanflow_by_hand(*pipe, in, true)), 1e-4);
}

// With CFG the timestep_r reaches every branch in every layout: CFG as one batch of 2 (the
// single run), a CFG-parallel group of 2 and a sequence-parallel (Ulysses) group of 2 all give
// the loop written out with two forwards per step, each with timestep_r.
TEST(Hv15Variants, MeanflowTimestepRUnderCfgBatchedCfgParallelAndSequenceParallel) {
  auto single = variant_pipeline(true);
  torch::NoGradGuard no_grad;
  const auto in = meanflow_inputs(*single, 2, 6.0);
  const auto want = single->denoise(in, nullptr);
  EXPECT_LT(rel_diff(want, meanflow_by_hand(*single, in, true)), 1e-5);
  EXPECT_GT(rel_diff(want, meanflow_by_hand(*single, in, false)), 1e-4);
  for (const bool cfg_group : {true, false}) {
    SCOPED_TRACE(cfg_group ? "cfg-parallel" : "sequence-parallel");
    std::vector<torch::Tensor> got(2);
    omnidp::models::testing::on_group(
        2,
        [&](int r, omnidp::Collective& c) {
          const auto pipeline = variant_pipeline(true);
          omnidp::GenerateContext ctx;
          (cfg_group ? ctx.cfg : ctx.sequence) = &c;
          got[static_cast<std::size_t>(r)] = pipeline->denoise(in, &ctx);
        },
        omnidp::runtime::replica_group_name(0, {0, 1}));
    EXPECT_TRUE(torch::equal(got[0], got[1]));
    EXPECT_LT(rel_diff(got[0], want), 1e-5);
  }
}

// The cfg-distilled checkpoints (guider guidance_scale 1, which the request takes as its
// default): one forward per step, and the negative prompt is never encoded; the FLOPs count one
// branch. With CFG the same pipeline encodes it and counts both.
TEST(Hv15Variants, CfgDistilledEncodesNoNegativePromptAndCountsOneForward) {
  omnidp::models::GuidanceOptions guider;
  guider.guidance_scale = 1.0;
  auto random = variant_pipeline(false, guider);
  int calls = 0;
  hv::PipelineParts parts;
  parts.transformer = random->transformer();
  parts.vae = random->vae();
  parts.guidance = guider;
  parts.text_encoder = std::make_unique<CountingEncoder>(&calls);
  hv::HunyuanVideo15Pipeline pipe(std::move(parts), torch::kCPU);
  auto r = omnidp::test::sized_request(5, 32, 32, 2, 1.0, 5.0);
  r.id = "d";
  r.prompt = "a red kite over the sea";
  r.negative_prompt = "blurry";
  r.seed = 4;
  const auto& to = pipe.transformer()->options();
  const std::int64_t n = 2 * 2 * 2;
  auto f = pipe.flops(r);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 2.0 * hv::hv15_forward_flops(to, n, 4));
  EXPECT_EQ(f->text, 100.0 * static_cast<double>(r.prompt.size()));  // the prompt's alone
  const auto distilled = pipe.generate(r, {});
  EXPECT_EQ(calls, 1);  // the prompt only
  (void)pipe.generate(r, {});
  EXPECT_EQ(calls, 2);
  r.guidance_scale = 6.0;  // CFG on: the negative prompt is encoded and counted
  f = pipe.flops(r);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 4.0 * hv::hv15_forward_flops(to, n, 4));
  const auto guided = pipe.generate(r, {});
  EXPECT_EQ(calls, 4);
  EXPECT_NE(guided.data, distilled.data);
}
