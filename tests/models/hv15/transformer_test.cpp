#include "omnidp/models/hv15/transformer.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "fixture_inputs.hpp"
#include "fixtures.hpp"
#include "models/fused_switch.hpp"
#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {

const fs::path kCase = omnidp::test::fixture("diffusers-ref/hv15_transformer");

hv::TransformerOptions fixture_options() {
  return hv::TransformerOptions::from_json(omnidp::models::read_json(kCase / "config.json"),
                                           "fixture");
}

// A small random model (fixture config) for the behavioural tests.
hv::HunyuanVideo15Transformer3DModel random_model(std::uint64_t seed = 7) {
  hv::HunyuanVideo15Transformer3DModel model(fixture_options());
  omnidp::models::init_random_weights(*model, seed);
  model->eval();
  return model;
}

using hv::testing::random_inputs;

using omnidp::models::testing::max_diff;

}  // namespace

TEST(Hv15Transformer, FixtureMatchesDiffusersMaskedAndDropped) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  hv::HunyuanVideo15Transformer3DModel model(fixture_options());
  omnidp::models::load_state_dict(*model, omnidp::models::Checkpoint::open(kCase), torch::kFloat32,
                                  torch::kCPU);
  const omnidp::models::SafetensorsFile io(kCase / "io.safetensors");
  hv::TransformerInputs in = hv::testing::fixture_inputs(io);
  const auto expected = io.tensor("out");
  for (const auto padding : {hv::TextPadding::mask, hv::TextPadding::drop}) {
    model->set_text_padding(padding);
    const auto out = model->forward(in);
    ASSERT_EQ(out.sizes(), expected.sizes());
    const double rel = max_diff(out, expected) / std::max(1.0, expected.abs().max().item<double>());
    EXPECT_LE(rel, 1e-4) << (padding == hv::TextPadding::mask ? "mask" : "drop");
  }
}

TEST(Hv15Transformer, ParameterNamesAreTheCheckpointNames) {
  OMNIDP_REQUIRE_FIXTURES();
  hv::HunyuanVideo15Transformer3DModel model(fixture_options());
  std::set<std::string> ours;
  for (const auto& p : model->named_parameters(true)) ours.insert(p.key());
  const auto ckpt = omnidp::models::Checkpoint::open(kCase);
  const auto names = ckpt.names();
  const std::set<std::string> theirs(names.begin(), names.end());
  EXPECT_EQ(ours, theirs);
}

TEST(Hv15Transformer, StrictLoadingNamesMissingTensors) {
  OMNIDP_REQUIRE_FIXTURES();
  auto o = fixture_options();
  o.num_layers = 3;  // the checkpoint has 2 blocks
  hv::HunyuanVideo15Transformer3DModel model(o);
  try {
    omnidp::models::load_state_dict(*model, omnidp::models::Checkpoint::open(kCase),
                                    torch::kFloat32, torch::kCPU);
    FAIL() << "expected WeightsError";
  } catch (const omnidp::WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("transformer_blocks.2.attn.to_q.weight"), std::string::npos)
        << e.what();
  }
}

TEST(Hv15Transformer, DropAndMaskPaddingGiveTheSameOutput) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  auto model = random_model();
  for (const bool with_image : {false, true}) {
    const auto in = random_inputs(model->options(), 1, with_image, 11);
    model->set_text_padding(hv::TextPadding::mask);
    const auto masked = model->forward(in);
    model->set_text_padding(hv::TextPadding::drop);
    const auto dropped = model->forward(in);
    EXPECT_EQ(masked.sizes(), (std::vector<std::int64_t>{1, 32, 2, 4, 6}));
    EXPECT_TRUE(torch::isfinite(masked).all().item<bool>());
    EXPECT_LT(max_diff(masked, dropped), 2e-5 * std::max(1.0, masked.abs().max().item<double>()))
        << "with_image=" << with_image;
  }
}

TEST(Hv15Transformer, PaddingValuesDoNotMatter) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  auto model = random_model();
  model->set_text_padding(hv::TextPadding::mask);
  auto in = random_inputs(model->options(), 1, true, 3);
  const auto before = model->forward(in);
  in.encoder_hidden_states.slice(1, 7).fill_(1e3);       // masked Qwen tokens
  in.encoder_hidden_states_2.slice(1, 2, 4).fill_(-50);  // masked byT5 tokens
  const auto after = model->forward(in);
  EXPECT_LT(max_diff(before, after), 1e-5);
  // A valid token does matter.
  in.encoder_hidden_states.select(1, 0).fill_(3.0);
  EXPECT_GT(max_diff(before, model->forward(in)), 1e-3);
}

namespace {
// A batch of two entries with their own text padding (CFG's prompt and negative prompt) in the
// masked and the ragged layout (automatic picks ragged) equals each entry alone (dropped).
void expect_batch_equals_entries(hv::HunyuanVideo15Transformer3DModel& model,
                                 const hv::TransformerInputs& in, double tolerance) {
  for (const auto padding :
       {hv::TextPadding::mask, hv::TextPadding::ragged, hv::TextPadding::automatic}) {
    model->set_text_padding(padding);
    const auto batched = model->forward(in);
    model->set_text_padding(hv::TextPadding::drop);
    for (std::int64_t b = 0; b < 2; ++b) {
      hv::TransformerInputs one;
      one.hidden_states = in.hidden_states.slice(0, b, b + 1);
      one.timestep = in.timestep.slice(0, b, b + 1);
      one.encoder_hidden_states = in.encoder_hidden_states.slice(0, b, b + 1);
      one.encoder_attention_mask = in.encoder_attention_mask.slice(0, b, b + 1);
      one.encoder_hidden_states_2 = in.encoder_hidden_states_2.slice(0, b, b + 1);
      one.encoder_attention_mask_2 = in.encoder_attention_mask_2.slice(0, b, b + 1);
      if (in.image_embeds.defined()) one.image_embeds = in.image_embeds.slice(0, b, b + 1);
      const auto single = model->forward(one);
      EXPECT_LT(max_diff(batched.slice(0, b, b + 1), single), tolerance)
          << "sample " << b << ", padding " << static_cast<int>(padding);
    }
  }
}
}  // namespace

TEST(Hv15Transformer, BatchWithItsOwnPaddingPerSampleEqualsEachSampleAlone) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  auto model = random_model();
  auto in = random_inputs(model->options(), 2, true, 5);
  // Different padding per sample; sample 1 is t2v-like text-only padding pattern.
  in.encoder_attention_mask[1].fill_(1.0);
  in.encoder_attention_mask[1].slice(0, 4).zero_();
  in.encoder_attention_mask_2[1].zero_();
  in.timestep[1] = 20.0F;
  expect_batch_equals_entries(model, in, 2e-5);
}

TEST(Hv15Transformer, DropNeedsBatchOne) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  auto model = random_model();
  model->set_text_padding(hv::TextPadding::drop);
  EXPECT_THROW((void)model->forward(random_inputs(model->options(), 2, false, 1)),
               omnidp::ModelError);
}

TEST(Hv15Transformer, RejectsWrongInputShapes) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  auto model = random_model();
  auto in = random_inputs(model->options(), 1, false, 1);
  in.hidden_states = torch::randn({1, 64, 2, 4, 6});
  try {
    (void)model->forward(in);
    FAIL() << "expected ModelError";
  } catch (const omnidp::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_states has 64 channels, the model 65"), std::string::npos)
        << e.what();
  }
  in = random_inputs(model->options(), 1, false, 1);
  in.encoder_attention_mask = torch::ones({1, 9});
  EXPECT_THROW((void)model->forward(in), omnidp::ModelError);
}

TEST(Hv15Transformer, RopeRotatesEachPairByItsAxisAngleInBothFormulations) {
  // axes (2, 2, 4), theta 256 over a 2 x 3 x 4 grid (layers/rope_test.cpp checks the tables).
  hv::TransformerOptions o{.rope_theta = 256.0, .rope_axes_dim = {2, 2, 4}};
  omnidp::models::Rope3d rope(hv::hv15_rope_options(o));
  const auto freqs = rope.freqs(2, 3, 4, torch::kCPU);
  // Rotating the pair (1, 0) of token 12 (f = 1, h = 0, w = 0) by angle 1 gives (cos 1, sin 1);
  // pair 3 of token 5 (w = 1) turns by 1/16.
  auto x = torch::zeros({1, 24, 1, 8});
  x.index_put_({0, 12, 0, 0}, 1.0);
  x.index_put_({0, 5, 0, 6}, 1.0);
  for (const bool fused : {false, true}) {
    omnidp::models::testing::FusedSwitch on(fused);
    const auto y = omnidp::models::apply_rope(x, freqs.view({1, 24, 1, 4}));
    EXPECT_NEAR(y[0][12][0][0].item<double>(), std::cos(1.0), 1e-6) << fused;
    EXPECT_NEAR(y[0][12][0][1].item<double>(), std::sin(1.0), 1e-6) << fused;
    EXPECT_NEAR(y[0][12][0][2].item<double>(), 0.0, 1e-7) << fused;
    EXPECT_NEAR(y[0][5][0][6].item<double>(), std::cos(1.0 / 16.0), 1e-6) << fused;
    EXPECT_NEAR(y[0][5][0][7].item<double>(), std::sin(1.0 / 16.0), 1e-6) << fused;
  }
}

// --- Ulysses sequence parallel: the forward sharded over 2 and 4 threads of in-process
// collectives equals the single-rank forward, with the text padding masked and dropped.

namespace {

// A small config with 4 heads of 16 (no fixture needed).
hv::TransformerOptions four_head_options() {
  hv::TransformerOptions o{.num_attention_heads = 4,
                           .attention_head_dim = 16,
                           .num_layers = 2,
                           .num_refiner_layers = 1,
                           .text_embed_dim = 24,
                           .text_embed_2_dim = 20,
                           .image_embed_dim = 12,
                           .rope_axes_dim = {4, 6, 6},
                           .task_type = "t2v"};
  return o;
}

hv::HunyuanVideo15Transformer3DModel four_head_model(hv::TextPadding padding) {
  hv::HunyuanVideo15Transformer3DModel model(four_head_options());
  omnidp::models::init_random_weights(*model, 13);
  model->eval();
  model->set_text_padding(padding);
  return model;
}

// The same without fixtures: T2V prompt and negative prompt of different valid lengths, the
// negative without glyph tokens (CFG's batch of 2).
TEST(Hv15Transformer, CfgBatchInTheRaggedLayoutEqualsTwoForwards) {
  torch::NoGradGuard no_grad;
  auto model = four_head_model(hv::TextPadding::automatic);
  auto in = random_inputs(model->options(), 2, false, 17);
  in.encoder_attention_mask[0].fill_(1.0);
  in.encoder_attention_mask[0].slice(0, 6).zero_();
  in.encoder_attention_mask[1].fill_(1.0);
  in.encoder_attention_mask[1].slice(0, 2).zero_();
  in.encoder_attention_mask_2[1].zero_();
  in.timestep[1] = in.timestep[0];
  expect_batch_equals_entries(model, in, 2e-5);
}

// model.quantization fp8 quantizes the blocks' projections on a GPU only: on the CPU a
// ModelError with the reason, and the model still runs unquantized.
TEST(Hv15Transformer, Fp8NeedsAGpu) {
  torch::NoGradGuard no_grad;
  auto model = four_head_model(hv::TextPadding::automatic);
  const auto in = random_inputs(model->options(), 1, false, 3);
  const auto before = model->forward(in);
  try {
    model->quantize_fp8();
    FAIL() << "no ModelError";
  } catch (const omnidp::ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.quantization fp8: " + omnidp::models::fp8_unavailable_reason(torch::kCPU));
  }
  EXPECT_TRUE(torch::equal(model->forward(in), before));
}

// An FP8 plan's edge blocks keep the weights' dtype: with one bf16 block at each end of this
// two-block model nothing is quantized, so the plan applies on the CPU too and the forward is
// unchanged (a plan with FP8 blocks needs a GPU, above); a negative count is refused.
TEST(Hv15Transformer, Fp8PlanEdgeBlocksStayInTheWeightsDtype) {
  torch::NoGradGuard no_grad;
  auto model = four_head_model(hv::TextPadding::automatic);
  const auto in = random_inputs(model->options(), 1, false, 3);
  const auto before = model->forward(in);
  omnidp::models::Fp8Plan plan;
  plan.accumulation = omnidp::models::Fp8Accumulation::exact;
  plan.bf16_edge_blocks = 1;
  model->quantize_fp8(plan);
  EXPECT_TRUE(torch::equal(model->forward(in), before));
  plan.bf16_edge_blocks = 0;  // both blocks FP8: the CPU refuses
  EXPECT_THROW(model->quantize_fp8(plan), omnidp::ModelError);
  plan.bf16_edge_blocks = -1;
  try {
    model->quantize_fp8(plan);
    FAIL() << "no ModelError";
  } catch (const omnidp::ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "FP8 plan: bf16_edge_blocks must be >= 0 (got -1)");
  }
}

TEST(Hv15TransformerSequenceParallel, TwoAndFourShardsEqualTheSingleRankForward) {
  torch::NoGradGuard no_grad;  // inference, as the worker runs it (and the group's threads)
  const auto o = four_head_options();
  for (const auto padding : {hv::TextPadding::mask, hv::TextPadding::drop, hv::TextPadding::ragged}) {
    for (const bool with_image : {false, true}) {
      // 2 x 4 x 6 latent = 48 tokens; hidden 2 x 5 x 3 = 30 for 4 ranks: 8 each, 2 padded.
      for (const auto& grid :
           {std::array<std::int64_t, 3>{2, 4, 6}, std::array<std::int64_t, 3>{2, 5, 3}}) {
        auto in = random_inputs(o, 1, with_image, 21);
        in.hidden_states = torch::randn({1, o.in_channels, grid[0], grid[1], grid[2]});
        auto single = four_head_model(padding);
        const auto want = single->forward(in);
        for (const int ranks : {2, 4}) {
          std::vector<hv::HunyuanVideo15Transformer3DModel> models;
          for (int r = 0; r < ranks; ++r) models.push_back(four_head_model(padding));
          std::vector<torch::Tensor> got(static_cast<std::size_t>(ranks));
          const auto errors = omnidp::models::testing::on_group_errors(
              ranks,
              [&](int r, omnidp::Collective& c) {
                const auto i = static_cast<std::size_t>(r);
                models[i]->bind_parallel({nullptr, &c});
                got[i] = models[i]->forward(in);
              },
              "test sequence group");
          for (int r = 0; r < ranks; ++r) {
            const auto i = static_cast<std::size_t>(r);
            ASSERT_EQ(errors[i], "");
            ASSERT_EQ(got[i].sizes(), want.sizes());
            EXPECT_LT(max_diff(got[i], want), 1e-4)
                << ranks << " ranks, rank " << r << ", grid " << grid[1] << "x" << grid[2]
                << ", padding " << static_cast<int>(padding) << (with_image ? ", image" : "");
            EXPECT_TRUE(torch::equal(got[0], got[i]));
          }
        }
      }
    }
  }
}

TEST(Hv15TransformerSequenceParallel, HeadsThatDoNotSplitAreAModelError) {
  auto o = four_head_options();
  o.num_attention_heads = 2;
  o.attention_head_dim = 32;
  o.rope_axes_dim = {8, 12, 12};
  hv::HunyuanVideo15Transformer3DModel model(o);
  omnidp::models::init_random_weights(*model, 1);
  auto group = omnidp::make_in_process_collectives(4, "test sequence group");
  const std::string message = omnidp::test::error_of<omnidp::ConfigError>([&] {
    model->bind_parallel({nullptr, group[0].get()});
  });
  EXPECT_NE(message.find("4 does not divide the 2 attention heads of the HunyuanVideo-1.5 "
                         "transformer"),
            std::string::npos)
      << message;
}

}  // namespace
