#include "omnidp/models/wan/vae.hpp"

#include <gtest/gtest.h>

#include <ATen/Context.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {
namespace {

namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("diffusers-ref/wan22_vae");

double rel_error(const torch::Tensor& ours, const torch::Tensor& ref) {
  EXPECT_EQ(ours.sizes(), ref.sizes());
  const auto diff = (ours.to(torch::kFloat64) - ref.to(torch::kFloat64)).abs().max().item<double>();
  return diff / std::max(1.0, ref.abs().max().item<double>());
}

// The fixture's VAE in float32, loaded once for the whole binary.
AutoencoderKLWan& fixture_vae() {
  static AutoencoderKLWan vae = load_autoencoder_kl_wan(kCase, torch::kFloat32, torch::kCPU);
  return vae;
}

const SafetensorsFile& fixture_io() {
  static const SafetensorsFile io(kCase / "io.safetensors");
  return io;
}

template <typename E = ModelError>
std::string message_of(const std::function<void()>& f) {
  return omnidp::test::error_of<E>(f);
}

TEST(WanVaeOptions, ParsesTheFixtureConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto o = AutoencoderKLWanOptions::from_file(kCase);
  EXPECT_EQ(o.base_dim, 8);
  EXPECT_EQ(o.decoder_base_dim, 16);
  EXPECT_EQ(o.z_dim, 48);
  EXPECT_EQ(o.dim_mult, (std::vector<std::int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(o.num_res_blocks, 1);
  EXPECT_EQ(o.temperal_downsample, (std::vector<bool>{false, true, true}));
  EXPECT_TRUE(o.is_residual);
  EXPECT_EQ(o.in_channels, 12);
  EXPECT_EQ(o.out_channels, 12);
  EXPECT_EQ(o.patch_size, 2);
  EXPECT_EQ(o.scale_factor_spatial, 16);
  ASSERT_EQ(o.latents_mean.size(), 48U);
  ASSERT_EQ(o.latents_std.size(), 48U);
  EXPECT_DOUBLE_EQ(o.latents_mean[0], -0.7627979516983032);
  EXPECT_DOUBLE_EQ(o.latents_std[47], 1.2627638578414917);
}

TEST(WanVaeOptions, NullFieldsTakeTheReferenceDefaults) {
  const auto o = AutoencoderKLWanOptions::from_json_text(
      R"({"base_dim": 32, "decoder_base_dim": null, "patch_size": null, "is_residual": true})",
      "inline");
  EXPECT_EQ(o.decoder_base_dim, 32);
  EXPECT_EQ(o.patch_size, 1);
  EXPECT_EQ(o.in_channels, 3);
  // Without latents_mean / latents_std: AutoencoderKLWan's defaults, the Wan2.1 statistics.
  ASSERT_EQ(o.latents_mean.size(), 16U);
  EXPECT_DOUBLE_EQ(o.latents_mean[0], -0.7571);
  EXPECT_DOUBLE_EQ(o.latents_std[15], 1.9160);
}

TEST(WanVaeOptions, TheWan21LayoutIsParsedAndBuilt) {
  const auto o = AutoencoderKLWanOptions::from_json_text(
      R"({"base_dim": 8, "z_dim": 16, "is_residual": false, "dim_mult": [1, 2, 4, 4],
          "num_res_blocks": 2, "temperal_downsample": [false, true, true]})",
      "inline");
  EXPECT_FALSE(o.is_residual);
  EXPECT_EQ(o.patch_size, 1);
  EXPECT_EQ(o.scale_factor_spatial, 8);
  AutoencoderKLWan vae(o);
  const auto params = vae->named_parameters();
  // The encoder's blocks are flat (resnets, then the level's resampler); each decoder level
  // after the first starts at half width, its upsampler halving the channels.
  EXPECT_EQ(params["encoder.down_blocks.2.resample.1.weight"].sizes(),
            (std::vector<std::int64_t>{8, 8, 3, 3}));
  EXPECT_EQ(params["encoder.down_blocks.5.time_conv.weight"].sizes(),
            (std::vector<std::int64_t>{16, 16, 3, 1, 1}));
  EXPECT_EQ(params["decoder.up_blocks.0.upsamplers.0.resample.1.weight"].sizes(),
            (std::vector<std::int64_t>{16, 32, 3, 3}));
  EXPECT_EQ(params["decoder.up_blocks.1.resnets.0.conv1.weight"].sizes(),
            (std::vector<std::int64_t>{32, 16, 3, 3, 3}));
  EXPECT_EQ(params["decoder.up_blocks.2.upsamplers.0.resample.1.weight"].sizes(),
            (std::vector<std::int64_t>{8, 16, 3, 3}));
  EXPECT_FALSE(params.contains("decoder.up_blocks.3.upsamplers.0.resample.1.weight"));
  EXPECT_EQ(AutoencoderKLWanOptions::wan21().base_dim, 96);
  EXPECT_FALSE(AutoencoderKLWanOptions::wan21().is_residual);
}

TEST(WanVaeOptions, RejectsUnsupportedOrInconsistentConfigs) {
  EXPECT_EQ(message_of<WeightsError>([] {
              (void)AutoencoderKLWanOptions::from_json_text(R"({"attn_scales": [0.5]})", "cfg");
            }),
            "cfg: attn_scales are not supported (the released Wan VAEs have attention only in "
            "their mid blocks)");
  EXPECT_EQ(message_of<WeightsError>([] {
              (void)AutoencoderKLWanOptions::from_json_text(
                  R"({"is_residual": true, "z_dim": 4, "latents_mean": [1, 2]})", "cfg");
            }),
            "cfg: latents_mean has 2 values, z_dim is 4");
  EXPECT_EQ(message_of<WeightsError>([] {
              (void)AutoencoderKLWanOptions::from_json_text(
                  R"({"is_residual": true, "dim_mult": [1, 2], "temperal_downsample": [true, true]})",
                  "cfg");
            }),
            "cfg: temperal_downsample must have one entry fewer than dim_mult (2 levels)");
  EXPECT_THROW((void)AutoencoderKLWanOptions::from_json_text("{not json", "cfg"), WeightsError);
  EXPECT_THROW((void)AutoencoderKLWanOptions::from_json_text(R"({"z_dim": "x"})", "cfg"),
               WeightsError);
}

TEST(WanVaeOptions, RealConfigPresetIsTheTi2v5bVae) {
  const auto o = AutoencoderKLWanOptions::wan22_ti2v_5b();
  EXPECT_EQ(o.base_dim, 160);
  EXPECT_EQ(o.decoder_base_dim, 256);
  EXPECT_EQ(o.z_dim, 48);
  EXPECT_EQ(o.in_channels, 12);
  EXPECT_EQ(o.patch_size, 2);
  EXPECT_EQ(o.num_res_blocks, 2);
  ASSERT_EQ(o.latents_mean.size(), 48U);
  ASSERT_EQ(o.latents_std.size(), 48U);
  EXPECT_DOUBLE_EQ(o.latents_mean[0], -0.2289);
  EXPECT_DOUBLE_EQ(o.latents_std[47], 0.7744);
  EXPECT_NO_THROW(o.validate("preset"));
}

TEST(WanVae, StrictLoadOfTheFixtureCoversEveryTensor) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto checkpoint = Checkpoint::open(kCase);
  auto& vae = fixture_vae();
  std::set<std::string> ours;
  for (const auto& p : vae->named_parameters()) {
    ours.insert(p.key());
  }
  const auto names = checkpoint.names();
  EXPECT_EQ(ours, std::set<std::string>(names.begin(), names.end()));
  // Loaded values, not initial ones.
  EXPECT_TRUE(torch::equal(vae->named_parameters()["decoder.norm_out.gamma"],
                           checkpoint.tensor("decoder.norm_out.gamma")));
}

TEST(WanVae, StrictLoadRejectsAMismatchedConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  auto o = AutoencoderKLWanOptions::from_file(kCase);
  o.num_res_blocks = 2;
  AutoencoderKLWan vae(o);
  EXPECT_THROW(load_state_dict(*vae, Checkpoint::open(kCase), torch::kFloat32, torch::kCPU),
               WeightsError);
}

TEST(WanVae, DecodeMatchesTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto decoded = fixture_vae()->decode(fixture_io().tensor("latents"));
  EXPECT_LE(rel_error(decoded, fixture_io().tensor("decoded")), 1e-4);
}

TEST(WanVae, EncodeMatchesTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dist = fixture_vae()->encode(fixture_io().tensor("image"));
  EXPECT_LE(rel_error(dist.mean, fixture_io().tensor("encoded_mean")), 1e-4);
  EXPECT_LE(rel_error(dist.logvar, fixture_io().tensor("encoded_logvar")), 1e-4);
}

// Decoding all latent frames in one call (or any chunking) equals the reference's
// frame-by-frame decode.
TEST(WanVae, DecodeChunkingDoesNotChangeTheResult) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::manual_seed(11);
  const auto z = torch::randn({2, 48, 5, 3, 2});
  auto& vae = fixture_vae();
  const auto reference = vae->decode(z, 1);
  ASSERT_EQ(reference.sizes(), (std::vector<std::int64_t>{2, 3, 17, 48, 32}));
  for (const std::int64_t chunk : {2, 3, 5, 8}) {
    EXPECT_LE(rel_error(vae->decode(z, chunk), reference), 1e-5) << "chunk " << chunk;
  }
}

// The channels-last layout (the CUDA default) computes the same decode and encode; the switch
// stores the convolution weights in that layout and back.
TEST(WanVae, ChannelsLastLayoutGivesTheReferenceResults) {
  OMNIDP_REQUIRE_FIXTURES();
  AutoencoderKLWan vae(AutoencoderKLWanOptions::from_file(kCase));
  load_state_dict(*vae, Checkpoint::open(kCase), torch::kFloat32, torch::kCPU);
  vae->set_channels_last(true);
  const auto weight = vae->named_parameters()["decoder.conv_in.weight"];  // [out, in, 3, 3, 3]
  EXPECT_TRUE(weight.is_contiguous(at::MemoryFormat::ChannelsLast3d));
  EXPECT_FALSE(weight.is_contiguous());
  EXPECT_LE(rel_error(vae->decode(fixture_io().tensor("latents")), fixture_io().tensor("decoded")),
            1e-4);
  const auto dist = vae->encode(fixture_io().tensor("image"));
  EXPECT_LE(rel_error(dist.mean, fixture_io().tensor("encoded_mean")), 1e-4);
  vae->set_channels_last(false);
  EXPECT_TRUE(vae->named_parameters()["decoder.conv_in.weight"].is_contiguous());
}

TEST(WanVae, DecodeIsCausalInTime) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::manual_seed(12);
  auto z = torch::randn({1, 48, 3, 2, 2});
  auto& vae = fixture_vae();
  const auto before = vae->decode(z);
  z.slice(2, 2, 3).add_(1.0);  // change the last latent frame only
  const auto after = vae->decode(z);
  ASSERT_EQ(before.size(2), 9);
  // Latent frames 0 and 1 give video frames 0..4; those are unchanged.
  EXPECT_TRUE(torch::equal(before.slice(2, 0, 5), after.slice(2, 0, 5)));
  EXPECT_GT((before.slice(2, 5) - after.slice(2, 5)).abs().max().item<float>(), 1e-3F);
}

TEST(WanVae, EncodeChunkingAndTrailingFrames) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::manual_seed(13);
  const auto video = torch::rand({1, 3, 11, 32, 32}) * 2 - 1;
  auto& vae = fixture_vae();
  const auto reference = vae->encode(video, 4);
  ASSERT_EQ(reference.mean.sizes(), (std::vector<std::int64_t>{1, 48, 3, 2, 2}));
  const auto whole = vae->encode(video, 8);
  EXPECT_LE(rel_error(whole.mean, reference.mean), 1e-5);
  EXPECT_LE(rel_error(whole.logvar, reference.logvar), 1e-5);
  // Frames beyond 1 + 4k are dropped, as the reference does.
  const auto nine = vae->encode(video.slice(2, 0, 9), 4);
  EXPECT_TRUE(torch::equal(nine.mean, reference.mean));
}

TEST(WanVae, FrameCountsFollowTheTemporalCompression) {
  OMNIDP_REQUIRE_FIXTURES();
  auto& vae = fixture_vae();
  EXPECT_EQ(vae->video_frames(31), 121);
  EXPECT_EQ(vae->latent_frames(121), 31);
  EXPECT_EQ(vae->latent_frames(1), 1);
  EXPECT_EQ(vae->video_frames(1), 1);
}

TEST(WanVae, RejectsBadShapesAndChunks) {
  OMNIDP_REQUIRE_FIXTURES();
  auto& vae = fixture_vae();
  EXPECT_EQ(message_of([&] {
              (void)vae->decode(torch::zeros({1, 16, 1, 2, 2}));
            }),
            "AutoencoderKLWan.decode: expected latents [B, 48, T>=1, h, w], got [1, 16, 1, 2, 2]");
  EXPECT_THROW((void)vae->decode(torch::zeros({1, 48, 1, 2, 2}), 0), ModelError);
  EXPECT_THROW((void)vae->encode(torch::zeros({1, 3, 5, 32, 32}), 6), ModelError);
  EXPECT_THROW((void)vae->encode(torch::zeros({1, 4, 1, 32, 32})), ModelError);
  EXPECT_THROW((void)vae->encode(torch::zeros({1, 3, 1, 31, 32})), ModelError);
}

TEST(WanVae, LatentNormalisationUsesTheConfigStatistics) {
  OMNIDP_REQUIRE_FIXTURES();
  auto& vae = fixture_vae();
  torch::manual_seed(14);
  const auto z = torch::randn({1, 48, 2, 2, 2});
  const auto normalized = vae->normalize_latents(z);
  const auto& o = vae->options();
  const auto expected0 = (z[0][0] - o.latents_mean[0]) / o.latents_std[0];
  EXPECT_LT((normalized[0][0] - expected0).abs().max().item<float>(), 1e-5F);
  EXPECT_LT((vae->denormalize_latents(normalized) - z).abs().max().item<float>(), 1e-5F);
  AutoencoderKLWan bare(AutoencoderKLWanOptions::from_json_text(R"({"is_residual": true,
      "base_dim": 4, "dim_mult": [1, 1], "temperal_downsample": [false]})",
                                                                "cfg"));
  // A config without statistics takes the Wan2.1 ones, as diffusers does.
  EXPECT_FLOAT_EQ(
      bare->denormalize_latents(torch::zeros({1, 16, 1, 1, 1}))[0][0][0][0][0].item<float>(),
      -0.7571F);
}

// bf16 weights and activations, float32 accumulation in every convolution (layers/conv.hpp):
// 3.4e-2 measured on the CPU (libtorch 1.13) for this random tiny model. Without oneDNN
// (libtorch's bf16 path on CPUs without AVX-512, e.g. an AMD EPYC with AVX2) the convolutions
// accumulated in bf16 and the error was 0.18; the second pass takes that path on any CPU.
TEST(WanVae, Bfloat16DecodeStaysCloseToTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  auto vae = load_autoencoder_kl_wan(kCase, torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(vae->dtype(), torch::kBFloat16);
  const bool onednn = at::globalContext().userEnabledMkldnn();
  for (const bool use_onednn : {true, false}) {
    at::globalContext().setUserEnabledMkldnn(use_onednn);
    const auto decoded = vae->decode(fixture_io().tensor("latents"));
    EXPECT_EQ(decoded.scalar_type(), torch::kBFloat16);
    EXPECT_LE(rel_error(decoded.to(torch::kFloat32), fixture_io().tensor("decoded")), 5e-2)
        << "oneDNN " << use_onednn;
  }
  at::globalContext().setUserEnabledMkldnn(onednn);
}

TEST(WanVae, RandomWeightsAreSeededWithUnitGains) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto options = AutoencoderKLWanOptions::from_file(kCase);
  AutoencoderKLWan a(options), b(options), c(options);
  init_random_vae_weights(*a, 7);
  init_random_vae_weights(*b, 7);
  init_random_vae_weights(*c, 8);
  const auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  EXPECT_TRUE(torch::equal(pa["decoder.norm_out.gamma"], torch::ones({16, 1, 1, 1})));
  EXPECT_TRUE(torch::equal(pa["decoder.mid_block.attentions.0.norm.gamma"], torch::ones({32, 1, 1})));
  EXPECT_TRUE(torch::equal(pa["decoder.conv_in.weight"], pb["decoder.conv_in.weight"]));
  EXPECT_FALSE(torch::equal(pa["decoder.conv_in.weight"], pc["decoder.conv_in.weight"]));
  const auto video = a->decode(torch::randn({1, 48, 2, 2, 2}));
  EXPECT_TRUE(torch::isfinite(video).all().item<bool>());
  EXPECT_GT(video.abs().max().item<float>(), 0.0F);
}

}  // namespace
}  // namespace omnidp::models::wan
