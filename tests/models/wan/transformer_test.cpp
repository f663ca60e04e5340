#include "omnidp/models/wan/transformer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "models/fused_switch.hpp"
#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {
namespace {
namespace fs = std::filesystem;

const fs::path kFixture = omnidp::test::fixture("diffusers-ref/wan_transformer");

WanTransformerOptions tiny_options() {
  return WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "tiny");
}

WanTransformer3DModel random_tiny(std::uint64_t seed = 7) {
  WanTransformer3DModel model(tiny_options());
  init_random_weights(*model, seed);
  return model;
}

TEST(WanTransformerOptions, ParsesTheFixtureConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto o = WanTransformerOptions::from_file(kFixture / "config.json");
  EXPECT_EQ(o.patch_size, (std::array<std::int64_t, 3>{1, 2, 2}));
  EXPECT_EQ(o.num_attention_heads, 2);
  EXPECT_EQ(o.attention_head_dim, 64);
  EXPECT_EQ(o.inner_dim(), 128);
  EXPECT_EQ(o.in_channels, 48);
  EXPECT_EQ(o.out_channels, 48);
  EXPECT_EQ(o.text_dim, 32);
  EXPECT_EQ(o.freq_dim, 256);
  EXPECT_EQ(o.ffn_dim, 128);
  EXPECT_EQ(o.num_layers, 2);
  EXPECT_TRUE(o.cross_attn_norm);
  EXPECT_DOUBLE_EQ(o.eps, 1e-6);
  EXPECT_EQ(o.rope_max_seq_len, 1024);
}

TEST(WanTransformerOptions, TheRealConfigIsTheSpecs) {
  const auto o = WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(), "5b");
  EXPECT_EQ(o.num_layers, 30);
  EXPECT_EQ(o.inner_dim(), 3072);
  EXPECT_EQ(o.num_attention_heads, 24);
  EXPECT_EQ(o.ffn_dim, 14336);
  EXPECT_EQ(o.in_channels, 48);
  EXPECT_EQ(o.text_dim, 4096);
}

// Wan2.1 I2V's keys: image_dim and added_kv_proj_dim together, the latter the inner width,
// pos_embed_seq_len only with them; every other combination is no released checkpoint.
TEST(WanTransformerOptions, TheImageTokenKeysAreReadAndCheckedTogether) {
  const auto o = WanTransformerOptions::from_json_text(
      R"({"num_attention_heads": 2, "attention_head_dim": 32, "image_dim": 48,
          "added_kv_proj_dim": 64, "pos_embed_seq_len": 34})",
      "cfg.json");
  EXPECT_TRUE(o.image_tokens());
  EXPECT_EQ(o.image_dim, 48);
  EXPECT_EQ(o.added_kv_proj_dim, 64);
  EXPECT_EQ(o.pos_embed_seq_len, 34);
  EXPECT_FALSE(WanTransformerOptions::from_json_text(R"({"image_dim": null})", "x").image_tokens());
  const auto error = [](const char* text) {
    return test::error_of<WeightsError>(
        [&] { (void)WanTransformerOptions::from_json_text(text, "cfg.json"); });
  };
  EXPECT_EQ(error(R"({"image_dim": 1280})"),
            "cfg.json: image_dim and added_kv_proj_dim go together (Wan2.1 image-to-video: the "
            "CLIP image tokens and the cross-attention's added K/V projections)");
  EXPECT_EQ(error(R"({"image_dim": 1280, "added_kv_proj_dim": 4096})"),
            "cfg.json: added_kv_proj_dim 4096 must equal num_attention_heads x attention_head_dim "
            "5120 (the embedded image tokens are that wide)");
  EXPECT_EQ(error(R"({"pos_embed_seq_len": 514})"),
            "cfg.json: pos_embed_seq_len needs image_dim (the image embedder's positions)");
  EXPECT_EQ(error(R"({"image_dim": 0, "added_kv_proj_dim": 5120})"),
            "cfg.json: image_dim must be > 0 or null");
  EXPECT_THROW((void)WanTransformerOptions::from_json_text(R"({"qk_norm": "rms_norm"})", "x"),
               WeightsError);
  EXPECT_THROW((void)WanTransformerOptions::from_json_text("{not json", "x"), WeightsError);
}

TEST(WanRope, IsTheSharedRopeWithTheReferenceSplit) {
  // head_dim 64 (the fixture): tables t = 24, h = w = 20 columns, read split as [22, 21, 21]
  // (layers/rope_test.cpp checks what that split does), float64 on the CPU, up to 1024.
  WanTransformerOptions o{.attention_head_dim = 64};
  const auto rope = wan_rope_options(o);
  EXPECT_EQ(rope.axes_dim, (std::array<std::int64_t, 3>{24, 20, 20}));
  EXPECT_EQ(rope.split_dim, (std::array<std::int64_t, 3>{22, 21, 21}));
  EXPECT_EQ(rope.tables, RopeTables::cpu_float64);
  EXPECT_EQ(rope.max_positions, 1024);
  o.attention_head_dim = 128;  // the released models: both splits agree
  EXPECT_EQ(wan_rope_options(o).axes_dim, wan_rope_options(o).split_dim);
}

TEST(WanTimestepGroups, OneGroupPerSampleFramePerFrameOrPerToken) {
  // Scalar timesteps, and per-token timesteps equal within each sample: one group.
  auto [t1, g1] = wan_timestep_groups(torch::tensor({3.0F, 5.0F}), 3);
  EXPECT_EQ(g1, 1);
  EXPECT_TRUE(torch::equal(t1, torch::tensor({3.0F, 5.0F}).view({2, 1})));
  auto [t2, g2] = wan_timestep_groups(torch::full({2, 12}, 7.0F), 3);
  EXPECT_EQ(g2, 1);
  EXPECT_TRUE(torch::equal(t2, torch::full({2, 1}, 7.0F)));
  // TI2V: the first frame's 4 tokens at 0, the rest at 7: one group per frame.
  auto ti2v = torch::full({1, 12}, 7.0F);
  ti2v.slice(1, 0, 4).zero_();
  auto [t3, g3] = wan_timestep_groups(ti2v, 3);
  EXPECT_EQ(g3, 3);
  EXPECT_TRUE(torch::equal(t3, torch::tensor({0.0F, 7.0F, 7.0F}).view({1, 3})));
  // Anything else: per token.
  auto mixed = ti2v.clone();
  mixed[0][5] = 1.0F;
  auto [t4, g4] = wan_timestep_groups(mixed, 3);
  EXPECT_EQ(g4, 12);
  EXPECT_TRUE(torch::equal(t4, mixed));
}

TEST(WanTransformerBlock, GroupedModulationEqualsPerTokenModulation) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  auto block = model->blocks[0]->as<WanTransformerBlock>();
  const auto& o = model->options();
  const std::int64_t frames = 3, per_frame = 4, dim = o.inner_dim();
  const auto x = torch::randn({2, frames * per_frame, dim});
  const auto ctx = torch::randn({2, 5, dim});
  Rope3d rope(wan_rope_options(o));
  const auto freqs = rope.freqs(frames, 2, 2, torch::kCPU);
  const auto per_group = torch::randn({2, frames, 6, dim});
  const auto grouped = block->forward(x, ctx, per_group, freqs);
  const auto per_token = block->forward(x, ctx, per_group.repeat_interleave(per_frame, 1), freqs);
  EXPECT_LT((grouped - per_token).abs().max().item<double>(), 1e-5);
  // One group for all tokens equals that group's row repeated for every token.
  const auto one = per_group.narrow(1, 1, 1);
  EXPECT_LT((block->forward(x, ctx, one, freqs) -
             block->forward(x, ctx, one.expand({2, frames * per_frame, 6, dim}).contiguous(), freqs))
                .abs()
                .max()
                .item<double>(),
            1e-5);
}

TEST(WanTransformer, LoadsTheFixtureStrictly) {
  OMNIDP_REQUIRE_FIXTURES();
  auto model = load_wan_transformer(kFixture, torch::kFloat32, torch::kCPU);
  const auto ckpt = Checkpoint::open(kFixture);
  EXPECT_EQ(model->named_parameters(true).size(), ckpt.size());
  // Values are the checkpoint's (bf16 -> fp32 exact).
  EXPECT_TRUE(torch::equal(model->blocks[1]->as<WanTransformerBlock>()->ffn->out->weight,
                           ckpt.tensor("blocks.1.ffn.net.2.weight")));
  EXPECT_TRUE(torch::equal(model->scale_shift_table, ckpt.tensor("scale_shift_table")));
}

TEST(WanTransformer, MatchesTheReferenceOutputsInBothTimestepModes) {
  OMNIDP_REQUIRE_FIXTURES();
  auto model = load_wan_transformer(kFixture, torch::kFloat32, torch::kCPU);
  const SafetensorsFile io(kFixture / "io.safetensors");
  const auto hidden = io.tensor("hidden_states");
  const auto context = io.tensor("encoder_hidden_states");
  const auto rel = [](const torch::Tensor& ours, const torch::Tensor& ref) {
    return (ours - ref).abs().max().item<double>() / std::max(1.0, ref.abs().max().item<double>());
  };
  const auto scalar_ref = io.tensor("out_scalar_t");
  const auto per_token_ref = io.tensor("out_per_token_t");
  EXPECT_LT(rel(model->forward(hidden, io.tensor("timestep"), context), scalar_ref), 1e-4);
  EXPECT_LT(rel(model->forward(hidden, io.tensor("timestep_per_token"), context), per_token_ref),
            1e-4);
  const testing::FusedSwitch eager(false);  // every bias in its projection
  EXPECT_LT(rel(model->forward(hidden, io.tensor("timestep_per_token"), context), per_token_ref),
            1e-4);
}

TEST(WanTransformer, AWrongConfigFailsToLoadWithTheNames) {
  OMNIDP_REQUIRE_FIXTURES();
  auto o = tiny_options();
  o.num_layers = 3;
  WanTransformer3DModel model(o);
  try {
    load_state_dict(*model, Checkpoint::open(kFixture), torch::kFloat32, torch::kCPU);
    FAIL() << "no error";
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.2.attn1.to_q.weight"), std::string::npos)
        << e.what();
  }
}

TEST(WanTransformer, OutputShapeEqualsInputShape) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 48, 3, 4, 6});
  const auto ctx = torch::randn({2, 5, 32});
  const auto out = model->forward(x, torch::tensor({900.0F, 10.0F}), ctx);
  EXPECT_EQ(out.sizes(), x.sizes());
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  EXPECT_THROW((void)model->forward(torch::randn({1, 48, 3, 3, 6}), torch::tensor({1.0F}),
                                    torch::randn({1, 5, 32})),
               ModelError);
  EXPECT_THROW((void)model->forward(torch::randn({1, 48, 3, 4, 6}), torch::ones({1, 17}),
                                    torch::randn({1, 5, 32})),
               ModelError);
}

// The pipelines prepare the text side once per request: the same operations, so the same bits.
TEST(WanTransformer, APreparedContextGivesTheSameBits) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 48, 3, 4, 6});
  const auto ctx = torch::randn({2, 5, 32});
  const auto t = torch::full({2, 18}, 700.0F);
  const auto prepared = model->prepare_context(ctx);
  EXPECT_EQ(prepared.batch, 2);
  ASSERT_EQ(prepared.blocks.size(), model->blocks->size());
  const auto& o = model->options();
  EXPECT_EQ(prepared.blocks[0].context_kv.first.sizes(),
            (std::vector<std::int64_t>{2, 5, o.num_attention_heads, o.attention_head_dim}));
  EXPECT_TRUE(torch::equal(model->forward(x, t, prepared), model->forward(x, t, ctx)));
  try {
    (void)model->forward(x.narrow(0, 0, 1), t.narrow(0, 0, 1), prepared);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("prepared text context is for batch 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)model->prepare_context(torch::randn({2, 5, 31})), ModelError);
  // Prepared on the eager path: no folded self-attention bias for the deferred one.
  WanPreparedContext eager;
  {
    const testing::FusedSwitch off(false);
    eager = model->prepare_context(ctx);
  }
  EXPECT_NE(test::error_of<ModelError>([&] {
              (void)model->forward(x, t, eager);
            }).find("no folded self-attention output bias"),
            std::string::npos);
}

TEST(WanTransformer, PerTokenTimestepsEqualScalarWhenAllEqual) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 48, 3, 4, 6});
  const auto ctx = torch::randn({1, 7, 32});
  const auto scalar = model->forward(x, torch::tensor({637.0F}), ctx);
  const auto per_token = model->forward(x, torch::full({1, 18}, 637.0F), ctx);
  EXPECT_LT((scalar - per_token).abs().max().item<double>(), 1e-5);
  // ... and differ when the first frame's tokens get t = 0.
  auto ts = torch::full({1, 18}, 637.0F);
  ts.slice(1, 0, 6).zero_();
  const auto mixed = model->forward(x, ts, ctx);
  EXPECT_GT((scalar - mixed).abs().max().item<double>(), 1e-3);
}

// q/k/v are one QKVParallelLinear under the checkpoint's names: a model converted the
// pipelines' way keeps them one weight; Module::to, which replaces each part, is refused.
TEST(WanTransformer, FusedProjectionsKeepTheCheckpointNamesThroughConversion) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 48, 3, 4, 6});
  const auto ctx = torch::randn({1, 7, 32});
  const auto t = torch::tensor({500.0F});
  const auto names = model->named_parameters(true).keys();
  for (const char* name : {"blocks.0.attn1.to_q.weight", "blocks.0.attn1.to_k.bias",
                           "blocks.1.attn2.to_v.weight", "blocks.1.attn2.to_q.bias"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  model->to_dtype(torch::kCPU, torch::kBFloat16);
  auto attn1 = model->blocks[0]->as<WanTransformerBlock>()->attn1;
  EXPECT_TRUE(attn1->to_k->weight.is_alias_of(attn1->to_q->weight));
  EXPECT_EQ(attn1->to_k->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(model->named_parameters(true).keys(), names);
  EXPECT_EQ(model->forward(x.to(torch::kBFloat16), t, ctx.to(torch::kBFloat16)).scalar_type(),
            torch::kBFloat16);
  model->to(torch::kFloat32);
  EXPECT_THROW((void)model->forward(x, t, ctx), ModelError);
}

TEST(WanTransformer, Bf16KeepsTheReferenceFp32Modules) {
  auto model = random_tiny();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 48, 3, 4, 6});
  const auto ctx = torch::randn({1, 7, 32});
  const auto t = torch::tensor({500.0F});
  const auto ref = model->forward(x, t, ctx);
  model->to_dtype(torch::kCPU, torch::kBFloat16);
  const auto params = model->named_parameters(true);
  EXPECT_EQ(params["condition_embedder.time_embedder.linear_1.weight"].scalar_type(),
            torch::kFloat32);
  EXPECT_EQ(params["scale_shift_table"].scalar_type(), torch::kFloat32);
  EXPECT_EQ(params["blocks.0.scale_shift_table"].scalar_type(), torch::kFloat32);
  EXPECT_EQ(params["blocks.0.norm2.weight"].scalar_type(), torch::kFloat32);
  EXPECT_EQ(params["blocks.0.attn1.to_q.weight"].scalar_type(), torch::kBFloat16);
  EXPECT_EQ(params["condition_embedder.time_proj.weight"].scalar_type(), torch::kBFloat16);
  EXPECT_EQ(model->dtype(), torch::kBFloat16);
  const auto out = model->forward(x.to(torch::kBFloat16), t, ctx.to(torch::kBFloat16));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  const double rel = (out.to(torch::kFloat32) - ref).abs().max().item<double>() /
                     std::max(1.0, ref.abs().max().item<double>());
  EXPECT_LT(rel, 5e-2);
}

TEST(WanTransformer, BuiltInItsFinalDtypesItHoldsWhatToDtypeGivesAndTheSameRandomWeights) {
  // The fp32 build converted by to_dtype, against the bf16 build (ParamSpec): the same dtype
  // per parameter and, after the same seeded init, the same values.
  WanTransformer3DModel staged(tiny_options());
  init_random_weights(*staged, 11);
  staged->to_dtype(torch::kCPU, torch::kBFloat16);
  WanTransformer3DModel direct(tiny_options(), TensorShard{},
                               ParamSpec{torch::kBFloat16, torch::kCPU});
  init_random_weights(*direct, 11);
  const auto a = staged->named_parameters(true);
  const auto b = direct->named_parameters(true);
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& item : a) {
    const auto& other = b[item.key()];
    EXPECT_EQ(item.value().scalar_type(), other.scalar_type()) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), other)) << item.key();
  }
  EXPECT_EQ(b["blocks.0.norm2.weight"].scalar_type(), torch::kFloat32);
  EXPECT_EQ(b["condition_embedder.time_embedder.linear_2.bias"].scalar_type(), torch::kFloat32);
  EXPECT_EQ(b["blocks.1.ffn.net.2.weight"].scalar_type(), torch::kBFloat16);
}

TEST(WanTransformer, Fp8NeedsTheFusedGpuPath) {
  auto model = random_tiny();
  // On the CPU the bias-deferring path is off or FP8 GEMMs are unavailable: a ModelError
  // either way, never a silent bf16 model; the reason is layers/fp8.hpp's one check.
  for (const bool fused : {false, true}) {
    const testing::FusedSwitch kernels(fused);
    EXPECT_EQ(
        omnidp::test::error_of<ModelError>([&] { model->quantize_fp8(); }),
        "model.quantization fp8: " + fp8_unavailable_reason(torch::kCPU, Fp8Needs::deferred_biases))
        << fused;
  }
}

TEST(WanTransformer, Fp8PlanTakesEveryBlockGemmButTheTextKeysAndValues) {
  auto model = random_tiny();
  const auto layers = fp8_plan_layers(*model, WanTransformer3DModelImpl::fp8_plan());
  std::vector<std::string> want;
  for (std::size_t i = 0; i < model->blocks->size(); ++i) {
    const auto b = "blocks." + std::to_string(i) + ".";
    for (const char* n : {"attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "attn2.to_q",
                          "attn2.to_out.0", "ffn.net.0.proj", "ffn.net.2"}) {
      want.push_back(b + n);
    }
  }
  std::sort(want.begin(), want.end());
  auto got = layers;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

// The CLIP image path (Wan2.1 I2V): Diffusers' parameter names and shapes, the image embedder's
// norms kept float32 in a bf16 model, the image tokens required exactly when image_dim is set
// and of the pos_embed length where there is one, and changing the output.
WanTransformerOptions image_token_options(std::int64_t pos_embed = 0) {
  auto o = tiny_options();
  o.in_channels = 36;
  o.out_channels = 16;
  o.image_dim = 24;
  o.added_kv_proj_dim = o.inner_dim();
  o.pos_embed_seq_len = pos_embed;
  return o;
}

TEST(WanTransformer, ImageTokensTakeTheDiffusersNamesAndAreRequired) {
  WanTransformer3DModel model(image_token_options(10));
  init_random_weights(*model, 5);
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& p : model->named_parameters(true)) shapes[p.key()] = p.value().sizes().vec();
  const std::map<std::string, std::vector<std::int64_t>> want{
      {"condition_embedder.image_embedder.norm1.weight", {24}},
      {"condition_embedder.image_embedder.ff.net.0.proj.weight", {24, 24}},
      {"condition_embedder.image_embedder.ff.net.2.weight", {128, 24}},
      {"condition_embedder.image_embedder.norm2.bias", {128}},
      {"condition_embedder.image_embedder.pos_embed", {1, 10, 24}},
      {"blocks.1.attn2.add_k_proj.weight", {128, 128}},
      {"blocks.1.attn2.add_v_proj.bias", {128}},
      {"blocks.1.attn2.norm_added_k.weight", {128}}};
  for (const auto& [name, shape] : want) {
    ASSERT_EQ(shapes.count(name), 1U) << name;
    EXPECT_EQ(shapes[name], shape) << name;
  }
  EXPECT_EQ(shapes.count("blocks.0.attn1.add_k_proj.weight"), 0U);
  // The image keys and values, computed once per request, keep their dtype under FP8 as the
  // text's do: the same layers are planned as without image tokens.
  EXPECT_EQ(fp8_plan_layers(*model, WanTransformer3DModelImpl::fp8_plan()),
            fp8_plan_layers(*random_tiny(), WanTransformer3DModelImpl::fp8_plan()));

  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 36, 2, 4, 6});
  const auto t = torch::tensor({600.0F});
  const auto ctx = torch::randn({1, 5, 32});
  const auto image = torch::randn({1, 10, 24});
  const auto out = model->forward(x, t, ctx, image);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{1, 16, 2, 4, 6}));
  EXPECT_GT((out - model->forward(x, t, ctx, image * 2)).abs().max().item<double>(), 1e-4);
  // A batch of 2 (CFG) takes one image for both.
  const auto two = model->forward(torch::cat({x, x}), t.expand({2}), torch::cat({ctx, ctx}), image);
  EXPECT_LT((two[0] - out[0]).abs().max().item<double>(), 1e-5);
  EXPECT_NE(test::error_of<ModelError>([&] {
              (void)model->forward(x, t, ctx);
            }).find("needs the CLIP image tokens"),
            std::string::npos);
  EXPECT_NE(test::error_of<ModelError>([&] {
              (void)model->forward(x, t, ctx, torch::randn({1, 9, 24}));
            }).find("image tokens must be [B, 10, 24]"),
            std::string::npos);
  auto plain = random_tiny();
  EXPECT_NE(test::error_of<ModelError>([&] {
              (void)plain->prepare_context(ctx, image);
            }).find("without image_dim"),
            std::string::npos);

  model->to_dtype(torch::kCPU, torch::kBFloat16);
  const auto& embedder = model->condition_embedder->image_embedder;
  EXPECT_EQ(embedder->norm1->weight.scalar_type(), torch::kFloat32);
  EXPECT_EQ(embedder->norm2->bias.scalar_type(), torch::kFloat32);
  EXPECT_EQ(embedder->ff->proj->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(embedder->pos_embed.scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace omnidp::models::wan

// --- Ulysses sequence parallel: the forward sharded over 2 and 4 threads of in-process
// collectives equals the single-rank forward.

namespace omnidp::models::wan {
namespace {

// The tiny config with 4 heads of 32 (same width), so that 2 and 4 ranks split them.
WanTransformerOptions four_head_options() {
  auto o = tiny_options();
  o.num_attention_heads = 4;
  o.attention_head_dim = 32;
  return o;
}

// Each rank's forward on its own copy of the model (same seed), on its own thread.
std::vector<torch::Tensor> sharded_forward(int ranks, const WanTransformerOptions& o,
                                           const torch::Tensor& hidden, const torch::Tensor& timestep,
                                           const torch::Tensor& context) {
  auto group = make_in_process_collectives(ranks, "test sequence group");
  std::vector<WanTransformer3DModel> models;
  for (int r = 0; r < ranks; ++r) {
    models.emplace_back(o);
    init_random_weights(*models.back(), 11);
  }
  std::vector<torch::Tensor> out(static_cast<std::size_t>(ranks));
  const auto errors = models::testing::on_group_errors(
      ranks,
      [&](int r, Collective& c) {
        const auto i = static_cast<std::size_t>(r);
        models[i]->bind_parallel({nullptr, &c});
        out[i] = models[i]->forward(hidden, timestep, context);
      },
      "test sequence group");
  for (const auto& e : errors) EXPECT_EQ(e, "");
  return out;
}

TEST(WanTransformerSequenceParallel, TwoAndFourShardsEqualTheSingleRankForward) {
  const auto o = four_head_options();
  torch::manual_seed(5);
  // 3 x 2 x 3 = 18 tokens: 9 per rank of 2; 5 per rank of 4, the last padded by 2.
  const auto hidden = torch::randn({1, o.in_channels, 3, 4, 6});
  const auto context = torch::randn({1, 7, o.text_dim});
  auto per_frame = torch::full({1, 18}, 700.0F);  // TI2V: the first latent frame at t = 0
  per_frame.narrow(1, 0, 6).zero_();
  for (const bool deferred : {false, true}) {  // the eager path, then the fused kernels'
    const testing::FusedSwitch kernels(deferred);
    WanTransformer3DModel single(o);
    init_random_weights(*single, 11);
    for (const auto& timestep : {torch::full({1}, 700.0F), per_frame}) {
      const auto want = single->forward(hidden, timestep, context);
      for (const int ranks : {2, 4}) {
        const auto got = sharded_forward(ranks, o, hidden, timestep, context);
        for (int r = 0; r < ranks; ++r) {
          const auto& g = got[static_cast<std::size_t>(r)];
          ASSERT_TRUE(g.defined());
          ASSERT_EQ(g.sizes(), want.sizes());
          EXPECT_LT((g - want).abs().max().item<double>(), 1e-4)
              << ranks << " ranks, rank " << r << (deferred ? ", deferred" : "") << ", timestep "
              << timestep.sizes();
        }
        // Every rank holds the same whole prediction.
        for (int r = 1; r < ranks; ++r)
          EXPECT_TRUE(torch::equal(got[0], got[static_cast<std::size_t>(r)]));
      }
    }
  }
}

TEST(WanTransformerSequenceParallel, HeadsThatDoNotSplitAreAConfigError) {
  auto group = make_in_process_collectives(4, "test sequence group");
  const auto o = tiny_options();  // 2 heads
  WanTransformer3DModel model(o);
  init_random_weights(*model, 1);
  const std::string message = test::error_of<ConfigError>([&] {
    model->bind_parallel({nullptr, group[0].get()});
  });
  EXPECT_NE(message.find("4 does not divide the 2 attention heads of the Wan transformer"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace omnidp::models::wan
