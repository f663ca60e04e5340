#include "omnidp/models/wan/pipeline.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "models/wan/tiny_config.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/pipelines/image_preprocess.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/text/flops.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/wan/factory.hpp"
#include "omnidp/models/wan/flops.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/runtime/collective.hpp"
#include "omnidp/runtime/rank.hpp"
#include "png_file.hpp"
#include "request_shape.hpp"
#include "runtime/job_test_support.hpp"
#include "temp_dir.hpp"
#include "video_difference.hpp"

namespace omnidp::models::wan {
namespace {
namespace fs = std::filesystem;

class WanPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::manual_seed(11);
    save_safetensors(dir_ / "embeds.safetensors",
                     {{"prompt_embeds", torch::randn({1, 6, 32})},
                      {"negative_prompt_embeds", torch::randn({1, 6, 32})}});
    save_safetensors(dir_ / "positive_only.safetensors",
                     {{"prompt_embeds", torch::randn({1, 6, 32})}});
    save_safetensors(dir_ / "wrong_dim.safetensors", {{"prompt_embeds", torch::randn({1, 6, 31})}});
  }

  static Config tiny_config() { return testing::tiny_config(); }

  // 3 guided steps at 32x64x5 from the seeded embeddings and noise.
  [[nodiscard]] WanSampleInputs guided_inputs() const { return embedded_inputs(3, 4.0, 3.0); }

  // `steps` steps at `guidance` and `flow_shift`, 32x64x5, from the seeded embeddings and noise.
  [[nodiscard]] WanSampleInputs embedded_inputs(int steps, double guidance, double flow_shift) const {
    const SafetensorsFile embeds(dir_ / "embeds.safetensors");
    WanSampleInputs in;
    set_schedule(in, test::sized_request(5, 32, 64, steps, guidance, flow_shift));
    in.noise = torch::randn({1, 48, 2, 2, 4});
    in.prompt_embeds = embeds.tensor("prompt_embeds");
    in.negative_prompt_embeds = embeds.tensor("negative_prompt_embeds");
    return in;
  }

  // tiny_request with the embeddings file.
  Request t2v(std::uint64_t seed = 3) const {
    Request r = testing::tiny_request(seed);
    r.prompt_embeds = (dir_ / "embeds.safetensors").string();
    return r;
  }

  // Both pipelines share one set of seeded modules.
  static WanPipelineParts tiny_parts(bool cfg_batch) {
    static WanTransformer3DModel transformer = [] {
      WanTransformer3DModel t(
          WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "t"));
      init_random_weights(*t, 1);
      return t;
    }();
    static AutoencoderKLWan vae = [] {
      AutoencoderKLWan v(AutoencoderKLWanOptions::from_json_text(tiny_wan_vae_config(), "v"));
      init_random_weights(*v, 2);
      return v;
    }();
    WanPipelineParts parts;
    parts.transformer = transformer;
    parts.vae = vae;
    parts.model_name = "tiny-wan";
    parts.device_name = "cpu";
    parts.cfg_batch = cfg_batch;
    parts.expand_timesteps = true;  // tiny-wan is the TI2V-5B layout
    return parts;
  }

  omnidp::test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(WanPipelineTest, TextToVideoIsDeterministicAndSeeded) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  EXPECT_EQ(pipeline->model_name(), "tiny-wan");
  EXPECT_EQ(pipeline->device_name(), "cpu");
  int steps_seen = 0;
  GenerateContext ctx;
  ctx.on_step = [&](int step, int total) {
    EXPECT_EQ(step, steps_seen + 1);
    EXPECT_EQ(total, 3);
    steps_seen = step;
  };
  const Video a = pipeline->generate(t2v(), ctx);
  EXPECT_EQ(steps_seen, 3);
  EXPECT_EQ(a.frames, 5);
  EXPECT_EQ(a.height, 32);
  EXPECT_EQ(a.width, 64);
  EXPECT_EQ(a.data.size(), a.byte_size());
  const Video b = pipeline->generate(t2v(), {});
  EXPECT_EQ(video_sha256(a), video_sha256(b));
  const Video c = pipeline->generate(t2v(4), {});
  EXPECT_NE(video_sha256(a), video_sha256(c));
  // A second pipeline with the same weights seed gives the same video.
  const auto again = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  EXPECT_EQ(video_sha256(again->generate(t2v(), {})), video_sha256(a));
}

// A Diffusers-named LoRA (rank 2, seeded) of every 2-D weight of `transformer`'s blocks.
std::string write_tiny_lora(const fs::path& path, std::uint64_t seed, torch::nn::Module& transformer) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  auto g = at::detail::createCPUGenerator(seed);
  for (const auto& item : transformer.named_parameters()) {
    const auto& name = item.key();
    if (!name.starts_with("blocks.") || !name.ends_with(".weight") || item.value().dim() != 2)
      continue;
    const auto module = name.substr(0, name.size() - std::string(".weight").size());
    const auto& w = item.value();
    tensors.emplace_back("transformer." + module + ".lora_A.weight",
                         torch::randn({2, w.size(1)}, g) * 0.3);
    tensors.emplace_back("transformer." + module + ".lora_B.weight",
                         torch::randn({w.size(0), 2}, g) * 0.3);
  }
  save_safetensors(path, tensors);
  return sha256_file_hex(path);
}

// The same adapter as model.lora (fused into the weights at load) or as a request's "lora"
// (beside the layers, unfused) gives the same video within one uint8 level; a request's set
// gives the same bytes whatever was held before, and a request without one the base's.
TEST_F(WanPipelineTest, JobAndRequestAdaptersAgreeAndASetNeverDependsOnTheOneBefore) {
  const auto plain = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  auto& wan = dynamic_cast<WanPipeline&>(*plain);
  const auto base = plain->generate(t2v(), {});
  const LoraAdapter style{
      .path = (dir_ / "style.safetensors").string(),
      .scale = 0.7,
      .expert = std::nullopt,
      .sha256 = write_tiny_lora(dir_ / "style.safetensors", 1, *wan.transformer())};
  const LoraAdapter other{
      .path = (dir_ / "other.safetensors").string(),
      .scale = 1.0,
      .expert = std::nullopt,
      .sha256 = write_tiny_lora(dir_ / "other.safetensors", 2, *wan.transformer())};
  Config with = tiny_config();
  with.model.lora = {style};
  const auto fused = create_wan_pipeline(with, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  const auto job = fused->generate(t2v(), {});
  EXPECT_NE(video_sha256(job), video_sha256(base));
  Request r = t2v();
  r.lora = {style};
  const auto line = plain->generate(r, {});
  EXPECT_LE(test::max_level_difference(line, job), 1);
  r.lora = {style, other};
  const auto both = video_sha256(plain->generate(r, {}));
  EXPECT_NE(both, video_sha256(line));
  EXPECT_EQ(video_sha256(plain->generate(t2v(), {})), video_sha256(base));
  r.lora = {style};
  EXPECT_EQ(video_sha256(plain->generate(r, {})), video_sha256(line));
  r.lora = {style, other};
  EXPECT_EQ(video_sha256(plain->generate(r, {})), both);
  // A line's set on top of the job's adapter: the job's fused, the line's beside.
  r.lora = {other};
  const auto on_job = fused->generate(r, {});
  r.lora = {style, other};
  EXPECT_LE(test::max_level_difference(on_job, plain->generate(r, {})), 1);
  // A file whose bytes changed after validation fails the request.
  r.lora = {LoraAdapter{
      .path = style.path, .scale = 0.7, .expert = std::nullopt, .sha256 = std::string(64, '0')}};
  EXPECT_THROW((void)plain->generate(r, {}), InputError);
}

// tiny-wan2.2-t2v-a14b: two experts with their own seeds; the low-noise expert's guidance is
// its own (guidance_scale_2), and a request of a one-transformer model cannot set it.
TEST_F(WanPipelineTest, TwoExpertsTakeTheSecondGuidanceAfterTheBoundary) {
  Config c = tiny_config();
  c.model.name = "tiny-wan2.2-t2v-a14b";
  const auto pipeline = create_wan_pipeline(c, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  auto r = testing::tiny_request();
  r.num_inference_steps = 4;  // sigmas 1, .94, .83, .63 at shift 5: the boundary is .875
  const auto base = video_sha256(pipeline->generate(r, {}));
  r.guidance_scale_2 = r.guidance_scale;  // unset means guidance_scale: the same video
  EXPECT_EQ(video_sha256(pipeline->generate(r, {})), base);
  r.guidance_scale_2 = 2.0;
  EXPECT_NE(video_sha256(pipeline->generate(r, {})), base);

  Config one = tiny_config();
  one.model.name = "tiny-wan2.1-t2v";
  const auto single = create_wan_pipeline(one, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  r.guidance_scale_2 = 2.0;
  EXPECT_THROW((void)single->generate(r, {}), ModelError);
  r.guidance_scale_2.reset();
  const Video v = single->generate(r, {});
  EXPECT_EQ(v.height, 32);
  EXPECT_EQ(v.width, 64);
}

// model.expert_residency swap: one expert resident at a time, moved where the schedule reaches
// it (the boundary, and the next request's first step), with the same videos as resident.
TEST_F(WanPipelineTest, SwappedExpertsGiveTheResidentVideos) {
  Config c = tiny_config();
  c.model.name = "tiny-wan2.2-t2v-a14b";
  const auto resident = create_wan_pipeline(c, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  c.model.expert_residency = ExpertResidency::swap;
  const auto swapped = create_wan_pipeline(c, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  auto* wan = dynamic_cast<WanPipeline*>(swapped.get());
  ASSERT_NE(wan, nullptr);
  EXPECT_EQ(wan->expert_swaps(), 0);
  auto r = testing::tiny_request();
  r.num_inference_steps = 4;  // the boundary (.875) after the first step
  r.guidance_scale_2 = 2.0;
  EXPECT_EQ(video_sha256(swapped->generate(r, {})), video_sha256(resident->generate(r, {})));
  EXPECT_EQ(wan->expert_swaps(), 1);  // to transformer_2 at the boundary
  r.seed += 1;
  EXPECT_EQ(video_sha256(swapped->generate(r, {})), video_sha256(resident->generate(r, {})));
  EXPECT_EQ(wan->expert_swaps(), 3);  // back for the first step, out again at the boundary
  auto* plain = dynamic_cast<WanPipeline*>(resident.get());
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->expert_swaps(), 0);
}

TEST_F(WanPipelineTest, SizesAreRoundedAsTheReference) {
  WanPipeline pipeline(tiny_parts(true), torch::kCPU);
  EXPECT_EQ(pipeline.latent_shape(5, 32, 64), (std::vector<std::int64_t>{1, 48, 2, 2, 4}));
  auto r = t2v();
  r.num_frames = 7;  // -> 5
  r.height = 40;     // -> 32
  const Video v = pipeline.generate(r, {});
  EXPECT_EQ(v.frames, 5);
  EXPECT_EQ(v.height, 32);
  EXPECT_EQ(v.width, 64);
}

TEST_F(WanPipelineTest, CfgAsOneBatchEqualsTwoPasses) {
  WanPipeline batched(tiny_parts(true), torch::kCPU);
  WanPipeline separate(tiny_parts(false), torch::kCPU);
  WanSampleInputs in = guided_inputs();
  const auto a = batched.sample(in, nullptr);
  const auto b = separate.sample(in, nullptr);
  EXPECT_LT((a.final_latents - b.final_latents).abs().max().item<double>(), 1e-5);
  EXPECT_LT((a.video - b.video).abs().max().item<double>(), 1e-5);
  EXPECT_EQ(a.video.sizes(), (std::vector<std::int64_t>{1, 5, 32, 64, 3}));
  EXPECT_GE(a.video.min().item<float>(), 0.0F);
  EXPECT_LE(a.video.max().item<float>(), 1.0F);
  // guidance <= 1 skips the unconditional pass: the negative embeddings are not needed.
  in.guidance_scale = 1.0;
  in.negative_prompt_embeds = torch::Tensor();
  const auto c = batched.sample(in, nullptr);
  EXPECT_GT((a.final_latents - c.final_latents).abs().max().item<double>(), 1e-4);
  in.guidance_scale = 2.0;
  EXPECT_THROW((void)batched.sample(in, nullptr), ModelError);
}

// CFG-parallel on two threads (in-process collectives): rank 0 the conditional branch, rank 1
// the unconditional one; both end on the latents of the two-pass single run, bit for bit, and
// only rank 0 decodes. An abandon on either rank stops both at the same step.
TEST_F(WanPipelineTest, CfgParallelGroupEqualsTwoPassesAndStopsTogether) {
  WanSampleInputs in = guided_inputs();
  WanPipeline single(tiny_parts(false), torch::kCPU);
  const auto want = single.sample(in, nullptr);
  auto run_group = [&](const std::function<bool(int rank, int steps)>& abandon) {
    auto group = make_in_process_collectives(2, runtime::replica_group_name(0, {0, 1}));
    std::vector<WanSampleOutputs> out(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        WanPipeline pipeline(tiny_parts(true), torch::kCPU);  // cfg_batch is off in a group
        GenerateContext ctx;
        ctx.cfg = group[static_cast<std::size_t>(r)].get();
        int steps = 0;
        ctx.on_step = [&](int, int) { ++steps; };
        ctx.abandoned = [&, r] { return abandon(r, steps); };
        try {
          out[static_cast<std::size_t>(r)] = pipeline.sample(in, &ctx);
        } catch (const ModelError& e) {
          errors[static_cast<std::size_t>(r)] = e.message();
        }
      });
    }
    for (auto& t : threads) t.join();
    return std::make_pair(out, errors);
  };
  const auto [out, errors] = run_group([](int, int) { return false; });
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_TRUE(torch::equal(out[0].final_latents, want.final_latents));
  EXPECT_TRUE(torch::equal(out[1].final_latents, want.final_latents));
  EXPECT_TRUE(torch::equal(out[0].video, want.video));
  EXPECT_FALSE(out[1].video.defined());  // only the leader decodes
  const auto stopped = run_group([](int rank, int steps) { return rank == 1 && steps >= 2; });
  EXPECT_EQ(stopped.second,
            (std::vector<std::string>{"abandoned at step 2/3", "abandoned at step 2/3"}));
  // Without guidance rank 0 runs every step and broadcasts its prediction.
  in.guidance_scale = 1.0;
  in.negative_prompt_embeds = torch::Tensor();
  const auto plain = single.sample(in, nullptr);
  const auto [unguided, unguided_errors] = run_group([](int, int) { return false; });
  ASSERT_EQ(unguided_errors, (std::vector<std::string>{"", ""}));
  EXPECT_TRUE(torch::equal(unguided[0].video, plain.video));
  EXPECT_TRUE(torch::equal(unguided[1].final_latents, plain.final_latents));
}

TEST_F(WanPipelineTest, ImageToVideoPinsTheFirstLatentFrameToTheImage) {
  WanPipeline pipeline(tiny_parts(true), torch::kCPU);
  WanSampleInputs in = embedded_inputs(2, 5.0, 5.0);
  in.image = torch::rand({1, 3, 32, 64}) * 2 - 1;
  const auto out = pipeline.sample(in, nullptr);
  c10::InferenceMode guard;
  const auto expected =
      pipeline.vae()->normalize_latents(pipeline.vae()->encode(in.image.unsqueeze(2)).mean);
  EXPECT_TRUE(torch::equal(out.final_latents.narrow(2, 0, 1), expected));
  // The other frames were denoised from the noise.
  in.image = torch::Tensor();
  const auto t2v_out = pipeline.sample(in, nullptr);
  EXPECT_GT((t2v_out.final_latents.narrow(2, 1, 1) - out.final_latents.narrow(2, 1, 1))
                .abs()
                .max()
                .item<double>(),
            1e-4);
}

TEST_F(WanPipelineTest, ImageRequestsReadPngs) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  const auto png = dir_ / "in.png";
  ASSERT_TRUE(omnidp::test::write_rgb_png(png, 48, 40, omnidp::test::gradient_rgb(48, 40, 7)));
  auto r = t2v();
  r.task = Task::i2v;
  r.image = png.string();
  const Video a = pipeline->generate(r, {});
  EXPECT_EQ(a.frames, 5);
  EXPECT_EQ(video_sha256(a), video_sha256(pipeline->generate(r, {})));
  EXPECT_NE(video_sha256(a), video_sha256(pipeline->generate(t2v(), {})));
  r.image = (dir_ / "missing.png").string();
  EXPECT_THROW((void)pipeline->generate(r, {}), InputError);
}

TEST_F(WanPipelineTest, TextInputErrorsAreInputErrors) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  auto r = t2v();
  r.prompt_embeds = (dir_ / "wrong_dim.safetensors").string();
  EXPECT_THROW((void)pipeline->generate(r, {}), InputError);
  r.prompt_embeds = (dir_ / "nope.safetensors").string();
  EXPECT_THROW((void)pipeline->generate(r, {}), InputError);
  // No negative embeddings in the file: the text encoder makes them from negative_prompt.
  r.prompt_embeds = (dir_ / "positive_only.safetensors").string();
  EXPECT_EQ(pipeline->generate(r, {}).frames, 5);
  r.guidance_scale = 1.0;
  EXPECT_EQ(pipeline->generate(r, {}).frames, 5);
}

TEST_F(WanPipelineTest, TextPromptsAloneUseTheTinyByteT5) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  auto r = t2v();
  r.prompt_embeds.clear();
  const Video a = pipeline->generate(r, {});
  EXPECT_EQ(video_sha256(a), video_sha256(pipeline->generate(r, {})));
  r.prompt = "a dog";
  EXPECT_NE(video_sha256(a), video_sha256(pipeline->generate(r, {})));
  // Another pipeline of the same config: the encoder's weights come from the seed.
  r.prompt = "a cat";
  const auto again = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  EXPECT_EQ(video_sha256(a), video_sha256(again->generate(r, {})));
}

TEST_F(WanPipelineTest, AbandonStopsBetweenSteps) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  GenerateContext ctx;
  int steps = 0;
  ctx.on_step = [&](int, int) { ++steps; };
  ctx.abandoned = [&] { return steps >= 1; };
  try {
    (void)pipeline->generate(t2v(), ctx);
    FAIL() << "not abandoned";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("abandoned at step 1/3"), std::string::npos) << e.what();
  }
}

TEST_F(WanPipelineTest, ConfigErrors) {
  auto c = tiny_config();
  c.model.weights = WeightsSource::pretrained;
  EXPECT_THROW((void)create_wan_pipeline(c, DeviceBinding{}), ConfigError);
  c = tiny_config();
  c.model.name = "wan2.2-ti2v-5b";
  c.model.weights = WeightsSource::pretrained;
  c.model.path = "";
  EXPECT_THROW((void)create_wan_pipeline(c, DeviceBinding{}), ConfigError);
}

// The request FLOPs of what generate() runs (models/wan/flops.hpp): the tiny request encodes
// "a cat" (6 byte tokens with </s>) and the empty negative prompt (1), and runs 3 steps x 2
// branches over 4 video tokens and 512 context tokens.
TEST_F(WanPipelineTest, FlopsOfWhatGenerateRuns) {
  const auto pipeline = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  const auto to = WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "tiny");
  const auto t5 = text::tiny_byte_t5_options(32);
  auto f = pipeline->flops(testing::tiny_request());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 427917312.0);
  EXPECT_EQ(f->vae, 439164928.0);
  EXPECT_EQ(f->text, text::t5_encoder_flops(t5, 6) + text::t5_encoder_flops(t5, 1));
  EXPECT_EQ(f->text, 296192.0);
  EXPECT_EQ(f->total(), 867378432.0);
  // From an embeddings file: its context lengths (6), no text encoder work.
  f = pipeline->flops(t2v());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 3.0 * 2.0 * wan_forward_flops(to, 4, 6));
  EXPECT_EQ(f->text, 0.0);
  // A file without the negative embeddings: the negative prompt is encoded (512 tokens).
  Request positive_only = testing::tiny_request();
  positive_only.prompt_embeds = (dir_ / "positive_only.safetensors").string();
  f = pipeline->flops(positive_only);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 3.0 * (wan_forward_flops(to, 4, 6) + wan_forward_flops(to, 4, 512)));
  EXPECT_EQ(f->text, text::t5_encoder_flops(t5, 1));
  // No CFG: one branch, no negative prompt.
  Request unguided = testing::tiny_request();
  unguided.guidance_scale = 1.0;
  f = pipeline->flops(unguided);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->transformer, 3.0 * wan_forward_flops(to, 4, 512));
  EXPECT_EQ(f->text, text::t5_encoder_flops(t5, 6));
}

// A tiny-wan job through the in-process runtime (worker, writer, coordinator): each row records
// the request's model TFLOP, and the run's summary reports them; on the CPU without
// runtime.peak_tflops there is no MFU, with it there is.
// Step caching (pipelines/step_cache.hpp) through the whole pipeline: a cache whose schedule
// computes every forward gives the uncached video bit for bit (the cache path changes no
// operation); the policies skip where their schedules say, per branch, and the report counts
// every branch's forwards.
WanPipelineParts with_cache(WanPipelineParts parts, const StepCacheConfig& cache) {
  parts.cache = cache;
  return parts;
}

StepCacheConfig cache_of(CachePolicy policy) {
  StepCacheConfig c;
  c.policy = policy;
  return c;
}

TEST_F(WanPipelineTest, AStepCacheThatComputesEveryForwardChangesNoByte) {
  const WanSampleInputs in = embedded_inputs(4, 4.0, 3.0);
  const auto want = WanPipeline(tiny_parts(false), torch::kCPU).sample(in, nullptr);
  EXPECT_EQ(want.cache.forwards, (ForwardCounts{8, 8}));
  EXPECT_EQ(want.cache.decisions, "");
  auto warm = cache_of(CachePolicy::taylorseer);
  warm.disable_cache_before_step = 4;  // every forward warms up
  auto strict = cache_of(CachePolicy::first_block);
  strict.threshold = 1e-9;  // every change of the first block's residual exceeds it
  auto retained = cache_of(CachePolicy::magcache);
  retained.mag_ratios = {1.0};
  retained.retention_ratio = 1.0;  // no step after the retained ones
  for (const auto& cache : {warm, strict, retained}) {
    SCOPED_TRACE(describe_cache(cache));
    // cfg_batch is on: a cache runs the branches as two forwards all the same.
    const auto got =
        WanPipeline(with_cache(tiny_parts(true), cache), torch::kCPU).sample(in, nullptr);
    EXPECT_TRUE(torch::equal(got.final_latents, want.final_latents));
    EXPECT_TRUE(torch::equal(got.video, want.video));
    EXPECT_EQ(got.cache.forwards, (ForwardCounts{8, 8}));
    EXPECT_EQ(got.cache.decisions, "transformer 0 cond CCCC, transformer 0 uncond CCCC");
  }
}

TEST_F(WanPipelineTest, StepCachesSkipOnTheirSchedulesPerBranch) {
  const WanSampleInputs in = embedded_inputs(8, 4.0, 3.0);
  const auto plain = WanPipeline(tiny_parts(false), torch::kCPU).sample(in, nullptr);
  auto mag = cache_of(CachePolicy::magcache);
  mag.mag_ratios = {1.0};  // no error accumulates: skips end only at max_skip_steps
  auto loose = cache_of(CachePolicy::first_block);
  loose.threshold = 10.0;  // no change of a random network's first block is that large
  const std::vector<std::pair<StepCacheConfig, std::string>> cases{
      // warm-up 0-2, then every 5th from step 4: 4 of 8 forwards per branch
      {cache_of(CachePolicy::taylorseer), "CCCSCSSS"},
      // int(0.2 x 8 + 0.5) = 2 retained steps, then at most 3 skips in a row
      {mag, "CCSSSCSS"},
      {loose, "CSSSSSSS"}};
  for (const auto& [cache, schedule] : cases) {
    SCOPED_TRACE(describe_cache(cache));
    WanPipeline pipeline(with_cache(tiny_parts(false), cache), torch::kCPU);
    const auto got = pipeline.sample(in, nullptr);
    EXPECT_EQ(got.cache.decisions,
              "transformer 0 cond " + schedule + ", transformer 0 uncond " + schedule);
    const auto computed = static_cast<int>(std::count(schedule.begin(), schedule.end(), 'C'));
    EXPECT_EQ(got.cache.forwards, (ForwardCounts{16, 2 * computed}));
    EXPECT_TRUE(torch::isfinite(got.video).all().item<bool>());
    EXPECT_GT((got.final_latents - plain.final_latents).abs().max().item<double>(), 1e-6);
  }
}

// generate() reports the request's forwards through GenerateContext::on_forwards; a
// CFG-parallel group runs one branch per rank with its own cache and both ranks report the
// whole request (each counted its branch), with the single rank's latents bit for bit.
TEST_F(WanPipelineTest, StepCacheCountsReachTheWorkerAndACfgGroupDecidesAsOneRank) {
  const auto cache = cache_of(CachePolicy::taylorseer);
  WanPipeline single(with_cache(tiny_parts(false), cache), torch::kCPU);
  ForwardCounts reported;
  GenerateContext ctx;
  ctx.on_forwards = [&](const ForwardCounts& c) { reported = c; };
  Request r = t2v();
  r.num_inference_steps = 6;
  r.guidance_scale = 4.0;
  (void)single.generate(r, ctx);
  EXPECT_EQ(reported, (ForwardCounts{12, 8}));  // CCCSCS per branch

  const WanSampleInputs in = embedded_inputs(6, 4.0, 3.0);
  const auto want = single.sample(in, nullptr);
  auto group = make_in_process_collectives(2, runtime::replica_group_name(0, {0, 1}));
  std::vector<WanSampleOutputs> out(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      WanPipeline pipeline(with_cache(tiny_parts(false), cache), torch::kCPU);
      GenerateContext c;
      c.cfg = group[static_cast<std::size_t>(rank)].get();
      out[static_cast<std::size_t>(rank)] = pipeline.sample(in, &c);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(torch::equal(out[0].final_latents, want.final_latents));
  EXPECT_TRUE(torch::equal(out[1].final_latents, want.final_latents));
  EXPECT_EQ(out[0].cache.decisions, "transformer 0 cond CCCSCS");
  EXPECT_EQ(out[1].cache.decisions, "transformer 0 uncond CCCSCS");
  EXPECT_EQ(out[0].cache.forwards, (ForwardCounts{12, 8}));
  EXPECT_EQ(out[1].cache.forwards, (ForwardCounts{12, 8}));
}

TEST(WanPipelineJob, RowsRecordTheModelTflopAndTheSummaryItsMfu) {
  if (model_table().find("tiny-wan") == nullptr) register_wan_models(model_table());
  for (const bool with_peak : {false, true}) {
    SCOPED_TRACE(with_peak ? "runtime.peak_tflops 0.5" : "no peak");
    omnidp::test::TempDir dir("wan-mfu-job");
    {
      std::ofstream manifest(dir.path() / "m.jsonl");
      manifest << R"({"id": "w0", "prompt": "a cat", "seed": 3, "num_frames": 5, "height": 32, )"
               << R"("width": 64, "num_inference_steps": 3, "guidance_scale": 5.0})"
               << "\n";
    }
    auto results = std::make_shared<runtime::testing::MemoryResults>();
    runtime::JobOptions o =
        runtime::testing::synthetic_job(dir.path() / "m.jsonl", dir.path() / "out", results);
    o.config.model = testing::tiny_config().model;
    if (with_peak) o.config.runtime.peak_tflops = 0.5;
    o.make_pipeline = [cfg = o.config](const DeviceBinding& d) {
      return create_wan_pipeline(cfg, d);
    };
    const auto outcomes = runtime::run_job_in_process(o, 1);
    ASSERT_EQ(outcomes.size(), 1U);
    ASSERT_FALSE(outcomes[0].threw) << outcomes[0].error;
    ASSERT_EQ(results->rows.size(), 1U);
    const ResultRecord& row = results->rows[0];
    ASSERT_EQ(row.status, RequestStatus::ok) << row.error;
    EXPECT_EQ(row.model_tflop, 867378432.0 / 1e12);
    const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
    EXPECT_EQ(s.flops_counted, 1U);
    EXPECT_EQ(s.model_tflop_per_video, 867378432.0 / 1e12);
    EXPECT_EQ(s.achieved_tflops_per_gpu, row.model_tflop / row.seconds);
    if (with_peak) {
      EXPECT_EQ(s.peak_tflops, 0.5);
      EXPECT_EQ(s.peak_source, "runtime.peak_tflops");
      EXPECT_EQ(s.mfu, s.achieved_tflops_per_gpu / 0.5);
      EXPECT_TRUE(s.makespan_mfu.has_value());
    } else {
      EXPECT_FALSE(s.peak_tflops.has_value());
      EXPECT_FALSE(s.mfu.has_value());
      EXPECT_FALSE(s.makespan_mfu.has_value());
    }
  }
}

}  // namespace
}  // namespace omnidp::models::wan
