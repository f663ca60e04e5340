// Tensor parallelism of the HunyuanVideo-1.5 transformer (docs/models.md, "Tensor
// parallelism"): shards on threads with in-process collectives against the unsharded model
// (the fixture weights, loaded shard by shard, and random weights at 2 and 4 shards), the
// head-count errors and a whole generate() per rank from the fixture snapshot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <vector>

#include "fixture_inputs.hpp"
#include "fixtures.hpp"
#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/hv15/factory.hpp"
#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"
#include "request_shape.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;
using omnidp::models::TensorShard;
using omnidp::models::testing::max_diff;
using omnidp::models::testing::on_group;

namespace {

const fs::path kRef = omnidp::test::fixture("diffusers-ref");

// The fixture's sizes with 4 heads of 32, so that 4 shards divide it.
hv::TransformerOptions four_heads() { return hv::testing::fixture_width_options(4, 2); }

// Seeded random inputs, the image embeddings included.
hv::TransformerInputs inputs(const hv::TransformerOptions& o, std::int64_t batch) {
  return hv::testing::random_inputs(o, batch, true, 5);
}

}  // namespace

// Random weights: shards 2 and 4 equal the whole model within float32 rounding, with the
// padding dropped (batch 1) and masked (batch 2).
TEST(Hv15TensorParallel, ShardedForwardEqualsTheWholeModel) {
  torch::NoGradGuard no_grad;
  const auto o = four_heads();
  auto whole = hv::random_transformer(o, 7, torch::kFloat32, torch::kCPU);
  const std::vector<hv::TransformerInputs> in{inputs(o, 1), inputs(o, 2)};
  const std::vector<torch::Tensor> want{whole->forward(in[0]), whole->forward(in[1])};
  for (const int size : {2, 4}) {
    std::vector<std::vector<torch::Tensor>> got(static_cast<std::size_t>(size));
    on_group(size, [&](int r, omnidp::Collective& c) {
      torch::NoGradGuard guard;
      auto model = hv::random_transformer(o, 7, torch::kFloat32, torch::kCPU, TensorShard{r, size});
      model->bind_parallel({&c, nullptr});
      for (const auto& x : in) got[static_cast<std::size_t>(r)].push_back(model->forward(x));
    });
    for (int r = 0; r < size; ++r) {
      for (std::size_t b = 0; b < in.size(); ++b) {
        EXPECT_LT(max_diff(got[static_cast<std::size_t>(r)].at(b), want[b]), 2e-5)
            << "batch " << b + 1 << " size " << size << " rank " << r;
      }
    }
  }
}

// The fixture weights loaded shard by shard (only the slices are read) give the whole model's
// output and the Diffusers reference's.
TEST(Hv15TensorParallel, FixtureWeightsInTwoShardsMatchTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  torch::NoGradGuard no_grad;
  const auto dir = kRef / "hv15_transformer";
  const omnidp::models::SafetensorsFile io(dir / "io.safetensors");
  hv::TransformerInputs in = hv::testing::fixture_inputs(io);
  const auto expected = io.tensor("out");
  const auto whole = hv::load_transformer(dir, torch::kFloat32, torch::kCPU)->forward(in);
  const auto ckpt = omnidp::models::Checkpoint::open(dir);
  std::vector<torch::Tensor> got(2);
  on_group(2, [&](int r, omnidp::Collective& c) {
    torch::NoGradGuard guard;
    auto model = hv::load_transformer(dir, torch::kFloat32, torch::kCPU, TensorShard{r, 2});
    // Shard r holds rows r of to_q and columns r of to_out.0, whole biases of to_out.0.
    const auto params = model->named_parameters(true);
    const auto q = ckpt.tensor("transformer_blocks.1.attn.to_q.weight");
    const auto out = ckpt.tensor("transformer_blocks.1.attn.to_out.0.weight");
    EXPECT_TRUE(torch::equal(params["transformer_blocks.1.attn.to_q.weight"], q.chunk(2, 0)[r]));
    EXPECT_TRUE(torch::equal(params["transformer_blocks.1.attn.to_out.0.weight"], out.chunk(2, 1)[r]));
    EXPECT_TRUE(torch::equal(params["transformer_blocks.1.attn.to_out.0.bias"],
                             ckpt.tensor("transformer_blocks.1.attn.to_out.0.bias")));
    model->bind_parallel({&c, nullptr});
    got[static_cast<std::size_t>(r)] = model->forward(in);
  });
  for (int r = 0; r < 2; ++r) {
    const auto& g = got[static_cast<std::size_t>(r)];
    EXPECT_LT(max_diff(g, whole), 2e-5) << "rank " << r;
    EXPECT_LE(max_diff(g, expected) / std::max(1.0, expected.abs().max().item<double>()), 1e-4)
        << "rank " << r;
  }
}

TEST(Hv15TensorParallel, HeadCountsTheShardsDoNotDivideAreConfigErrors) {
  const auto expect_config_error = [](const hv::TransformerOptions& o, TensorShard shard,
                                      const std::string& message) {
    try {
      hv::HunyuanVideo15Transformer3DModel model(o, shard);
      FAIL() << "no error for " << shard.size << " shards";
    } catch (const omnidp::ConfigError& e) {
      EXPECT_EQ(e.path(), "parallel.tensor_parallel_size");
      EXPECT_EQ(e.message(), message);
    }
  };
  auto two = four_heads();
  two.num_attention_heads = 2;
  two.attention_head_dim = 64;
  two.rope_axes_dim = {16, 24, 24};
  expect_config_error(
      two, {0, 4},
      "4 does not divide the 2 attention heads of HunyuanVideo15Transformer3DModel (tensor "
      "parallelism splits the heads: use a divisor of 2)");
  hv::TransformerOptions real;  // the released 8.3B configuration: 16 heads
  expect_config_error(
      real, {2, 3},
      "3 does not divide the 16 attention heads of HunyuanVideo15Transformer3DModel (tensor "
      "parallelism splits the heads: use a divisor of 16)");
  auto shard =
      hv::random_transformer(four_heads(), 1, torch::kFloat32, torch::kCPU, TensorShard{0, 2});
  EXPECT_THROW(shard->bind_parallel({nullptr, nullptr}), omnidp::ModelError);
}

// A whole generate() per rank of a tensor group of 2 from the fixture snapshot (transformer
// and VAE, prompt_embeds file) gives the single-rank video within one uint8 level.
TEST(Hv15TensorParallel, TwoShardsGenerateTheSingleRankVideo) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fs::temp_directory_path() / ("omnidp-hv15-tp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "snapshot");
  fs::create_directory_symlink(kRef / "hv15_transformer", dir / "snapshot" / "transformer");
  fs::create_directory_symlink(kRef / "hv15_vae", dir / "snapshot" / "vae");
  auto mask = torch::ones({1, 7});
  mask.slice(1, 5).zero_();
  omnidp::models::save_safetensors(
      dir / "embeds.safetensors",
      {{"prompt_embeds", omnidp::models::randn_cpu({1, 7, 48}, 1)},
       {"prompt_embeds_mask", mask},
       {"prompt_embeds_2", omnidp::models::randn_cpu({1, 4, 40}, 2)},
       {"prompt_embeds_mask_2", torch::tensor({{1.0F, 1.0F, 0.0F, 0.0F}})},
       {"negative_prompt_embeds", omnidp::models::randn_cpu({1, 3, 48}, 3)},
       {"negative_prompt_embeds_mask", torch::ones({1, 3})}});
  omnidp::Config config;
  config.model.name = "hunyuanvideo-1.5";
  config.model.path = (dir / "snapshot").string();
  config.model.weights = omnidp::WeightsSource::pretrained;
  config.model.dtype = omnidp::DType::fp32;
  config.model.device = omnidp::DeviceKind::cpu;
  omnidp::Request r = omnidp::test::sized_request(5, 32, 48, 2, 6.0, 5.0);
  r.id = "x";
  r.prompt = "a red kite over the sea";
  r.seed = 11;
  r.prompt_embeds = (dir / "embeds.safetensors").string();
  const auto want = hv::create_hunyuanvideo15_pipeline(config, {})->generate(r, {});
  std::vector<omnidp::Video> got(2);
  on_group(2, [&](int rank, omnidp::Collective& c) {
    omnidp::DeviceBinding binding;
    binding.tensor_rank = rank;
    binding.tensor_size = 2;
    const auto pipeline = hv::create_hunyuanvideo15_pipeline(config, binding);
    omnidp::GenerateContext ctx;
    ctx.tensor = &c;
    got[static_cast<std::size_t>(rank)] = pipeline->generate(r, ctx);
  });
  fs::remove_all(dir);
  omnidp::models::testing::expect_leader_has_the_single_rank_video(want, got);
}
