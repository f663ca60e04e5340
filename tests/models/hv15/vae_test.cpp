#include "omnidp/models/hv15/vae.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {

const fs::path kCase = omnidp::test::fixture("diffusers-ref/hv15_vae");

hv::VaeOptions fixture_options() {
  return hv::VaeOptions::from_json(omnidp::models::read_json(kCase / "config.json"), "fixture");
}

// A small config whose encoder works (block_out_channels[-1] >= 2 * latent_channels).
hv::VaeOptions small_options() {
  hv::VaeOptions o;
  o.block_out_channels = {8, 16, 16, 32, 32};
  o.latent_channels = 8;
  o.layers_per_block = 1;
  return o;
}

hv::AutoencoderKLHunyuanVideo15 random_vae(const hv::VaeOptions& o, std::uint64_t seed = 3) {
  hv::AutoencoderKLHunyuanVideo15 vae(o);
  omnidp::models::init_random_weights(*vae, seed);
  torch::NoGradGuard no_grad;
  for (auto& p : vae->named_parameters(true)) {
    if (p.key().size() > 5 && p.key().substr(p.key().size() - 5) == "gamma") p.value().fill_(1.0);
  }
  vae->eval();
  return vae;
}

}  // namespace

TEST(Hv15Vae, FixtureDecodeMatchesDiffusers) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  hv::AutoencoderKLHunyuanVideo15 vae(fixture_options());
  omnidp::models::load_state_dict(*vae, omnidp::models::Checkpoint::open(kCase), torch::kFloat32,
                                  torch::kCPU);
  const omnidp::models::SafetensorsFile io(kCase / "io.safetensors");
  const auto expected = io.tensor("decoded");
  const auto out = vae->decode(io.tensor("latents"));
  ASSERT_EQ(out.sizes(), expected.sizes());
  const double rel = (out - expected).abs().max().item<double>() /
                     std::max(1.0, expected.abs().max().item<double>());
  EXPECT_LE(rel, 1e-4);
}

TEST(Hv15Vae, ParameterNamesAreTheCheckpointNames) {
  OMNIDP_REQUIRE_FIXTURES();
  hv::AutoencoderKLHunyuanVideo15 vae(fixture_options());
  std::set<std::string> ours;
  for (const auto& p : vae->named_parameters(true)) ours.insert(p.key());
  const auto names = omnidp::models::Checkpoint::open(kCase).names();
  EXPECT_EQ(ours, std::set<std::string>(names.begin(), names.end()));
}

TEST(Hv15Vae, StrictLoadingRejectsAnEncoderlessModel) {
  OMNIDP_REQUIRE_FIXTURES();
  hv::AutoencoderKLHunyuanVideo15 vae(fixture_options(), /*with_encoder=*/false);
  EXPECT_FALSE(vae->has_encoder());
  try {
    omnidp::models::load_state_dict(*vae, omnidp::models::Checkpoint::open(kCase), torch::kFloat32,
                                    torch::kCPU);
    FAIL() << "expected WeightsError";
  } catch (const omnidp::WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder.conv_in.conv.weight"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)vae->encode_mean(torch::zeros({1, 3, 1, 32, 32})), omnidp::ModelError);
}

TEST(Hv15Vae, ShapesOfDecodeAndEncode) {
  torch::NoGradGuard no_grad;
  auto vae = random_vae(small_options());
  const auto video = vae->decode(torch::randn({1, 8, 3, 2, 3}));
  EXPECT_EQ(video.sizes(), (std::vector<std::int64_t>{1, 3, 9, 32, 48}));
  const auto moments = vae->encode_moments(torch::rand({1, 3, 9, 32, 48}) * 2 - 1);
  EXPECT_EQ(moments.sizes(), (std::vector<std::int64_t>{1, 16, 3, 2, 3}));
  // A single image encodes to a single latent frame (I2V).
  const auto image_latent = vae->encode_mean(torch::rand({1, 3, 1, 32, 32}));
  EXPECT_EQ(image_latent.sizes(), (std::vector<std::int64_t>{1, 8, 1, 2, 2}));
  EXPECT_TRUE(torch::isfinite(image_latent).all().item<bool>());
}

TEST(Hv15Vae, DecoderAndEncoderAreCausalInTime) {
  torch::NoGradGuard no_grad;
  auto vae = random_vae(small_options());
  auto z = torch::randn({1, 8, 3, 2, 2});
  const auto a = vae->decode(z);
  z.select(2, 2).add_(1.0);  // change the last latent frame
  const auto b = vae->decode(z);
  // Output frames 0..4 come from latent frames 0..1 only.
  EXPECT_EQ((a.slice(2, 0, 5) - b.slice(2, 0, 5)).abs().max().item<double>(), 0.0);
  EXPECT_GT((a.slice(2, 5) - b.slice(2, 5)).abs().max().item<double>(), 1e-4);

  auto x = torch::rand({1, 3, 9, 32, 32});
  const auto ea = vae->encode_moments(x);
  x.select(2, 8).fill_(-1.0);
  const auto eb = vae->encode_moments(x);
  EXPECT_EQ((ea.slice(2, 0, 2) - eb.slice(2, 0, 2)).abs().max().item<double>(), 0.0);
}

TEST(Hv15Vae, FrameByFrameAttentionEqualsTheMaskedAttention) {
  torch::NoGradGuard no_grad;
  hv::VaeAttention attn(8);
  omnidp::models::init_random_weights(*attn, 5);
  const auto x = torch::randn({1, 8, 3, 2, 3});
  const auto ours = attn(x);
  // Reference formulation: one attention over all positions with the block-causal -inf mask.
  const std::int64_t hw = 6, s = 18;
  auto mask = torch::full({s, s}, -std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < s; ++i) mask[i].slice(0, 0, (i / hw + 1) * hw).fill_(0.0);
  // Recompute q, k, v through the module's own weights.
  auto params = attn->named_parameters(true);
  const auto gamma = params["norm.gamma"];
  const auto h =
      torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1)) *
      std::sqrt(8.0) * gamma;
  auto conv = [&](const std::string& n) {
    return torch::conv3d(h, params[n + ".weight"], params[n + ".bias"]);
  };
  auto tok = [&](const torch::Tensor& t) {
    return t.reshape({1, 8, s}).permute({0, 2, 1}).unsqueeze(1);
  };
  const auto o = omnidp::models::scaled_dot_product_attention(
      tok(conv("to_q")), tok(conv("to_k")), tok(conv("to_v")), mask.view({1, 1, s, s}));
  const auto o5 = o.squeeze(1).reshape({1, 3, 2, 3, 8}).permute({0, 4, 1, 2, 3});
  const auto expected = torch::conv3d(o5, params["proj_out.weight"], params["proj_out.bias"]) + x;
  EXPECT_LT((ours - expected).abs().max().item<double>(), 1e-5);
}

TEST(Hv15Vae, TiledDecodeShapesAndTheSingleTileCase) {
  torch::NoGradGuard no_grad;
  auto vae = random_vae(small_options());
  const auto z = torch::randn({1, 8, 2, 5, 7});
  const auto plain = vae->decode(z);
  hv::VaeTiling tiling;
  tiling.enabled = true;  // 256-pixel tiles: the latent (5 x 7) fits in one, so no tiling
  vae->set_tiling(tiling);
  EXPECT_TRUE(torch::equal(vae->decode(z), plain));
  tiling.tile_sample_min_height = 64;  // 4-latent tiles with a stride of 3, 16-pixel blends
  tiling.tile_sample_min_width = 64;
  vae->set_tiling(tiling);
  const auto tiled = vae->decode(z);
  EXPECT_EQ(tiled.sizes(), plain.sizes());
  EXPECT_TRUE(torch::isfinite(tiled).all().item<bool>());
  // The top-left corner (48 x 48 pixels) is the first tile's, untouched by any blend.
  vae->set_tiling({});
  const auto first_tile = vae->decode(z.slice(3, 0, 4).slice(4, 0, 4));
  EXPECT_TRUE(torch::equal(tiled.slice(3, 0, 48).slice(4, 0, 48),
                           first_tile.slice(3, 0, 48).slice(4, 0, 48)));
  EXPECT_FALSE(torch::equal(tiled, plain));
}

TEST(Hv15Vae, CausalConvPadsTheSameInEveryDtype) {
  torch::NoGradGuard no_grad;
  hv::CausalConv3d conv(2, 3);
  omnidp::models::init_random_weights(*conv, 1);  // bf16-exact weights
  const auto x = torch::randn({1, 2, 3, 4, 5}).to(torch::kBFloat16).to(torch::kFloat32);
  const auto ref = conv(x);
  conv->to(torch::kBFloat16);
  const auto low = conv(x.to(torch::kBFloat16)).to(torch::kFloat32);
  EXPECT_EQ(low.sizes(), ref.sizes());
  EXPECT_LT((low - ref).abs().max().item<double>(),
            0.05 * std::max(1.0, ref.abs().max().item<double>()));
  // Causal padding: output frame 0 sees only input frame 0 (replicated).
  auto y = x.clone();
  y.select(2, 2).fill_(7.0);
  conv->to(torch::kFloat32);
  EXPECT_TRUE(torch::equal(conv(y).select(2, 0), ref.select(2, 0)));
}

TEST(Hv15Vae, OptionsFromJsonValidate) {
  OMNIDP_REQUIRE_FIXTURES();
  auto cfg = omnidp::models::read_json(kCase / "config.json");
  const auto o = hv::VaeOptions::from_json(cfg, "x");
  EXPECT_EQ(o.block_out_channels, (std::vector<std::int64_t>{8, 16, 16, 32, 32}));
  EXPECT_DOUBLE_EQ(o.scaling_factor, 1.03682);
  cfg["spatial_compression_ratio"] = 12;
  EXPECT_THROW((void)hv::VaeOptions::from_json(cfg, "x"), omnidp::WeightsError);
  const hv::VaeOptions real;
  EXPECT_EQ(real.latent_channels, 32);
  EXPECT_EQ(real.block_out_channels, (std::vector<std::int64_t>{128, 256, 512, 1024, 1024}));
}
