// Tensor parallelism of the Wan transformer (docs/models.md, "Tensor parallelism"): shards on
// threads with in-process collectives against the unsharded model, the shard loader's slices,
// the head-count errors and a whole generate() per rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include "models/fused_switch.hpp"
#include "models/in_process_group.hpp"
#include "models/wan/tiny_config.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/wan/factory.hpp"
#include "omnidp/models/wan/pipeline.hpp"
#include "omnidp/models/wan/transformer.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {
namespace {
namespace fs = std::filesystem;
using models::testing::FusedSwitch;
using models::testing::max_diff;
using models::testing::on_group;

// tiny-wan with 4 heads of 32 (the same width), so that 2 and 4 shards divide it.
WanTransformerOptions four_heads() {
  auto o = WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "tiny");
  o.num_attention_heads = 4;
  o.attention_head_dim = 32;
  return o;
}

// Every shard's forward equals the unsharded forward within float32 rounding, on the eager path
// and with the fused kernels (the deferred-bias path), per-sample and per-token timesteps.
TEST(WanTensorParallel, ShardedForwardEqualsTheWholeModel) {
  torch::NoGradGuard no_grad;
  const auto o = four_heads();
  torch::manual_seed(3);
  const auto x = torch::randn({1, 48, 2, 4, 6});
  const auto context = torch::randn({1, 5, 32});
  const auto t_scalar = torch::tensor({700.0F});
  auto t_token = torch::full({1, 12}, 700.0F);
  t_token.narrow(1, 0, 6).fill_(0.0F);  // a conditioned first frame (TI2V)
  for (const bool deferred : {false, true}) {
    const FusedSwitch kernels(deferred);
    WanTransformer3DModel whole(o);
    init_random_weights(*whole, 7);
    const auto want_scalar = whole->forward(x, t_scalar, context);
    const auto want_token = whole->forward(x, t_token, context);
    for (const int size : {2, 4}) {
      std::vector<torch::Tensor> scalar(static_cast<std::size_t>(size)),
          token(static_cast<std::size_t>(size));
      on_group(size, [&](int r, Collective& c) {
        torch::NoGradGuard guard;
        const TensorShard shard{r, size};
        WanTransformer3DModel model(o, shard);
        init_random_weights(*model, 7, model->shard_plan());
        model->bind_parallel({&c, nullptr});
        scalar[static_cast<std::size_t>(r)] = model->forward(x, t_scalar, context);
        token[static_cast<std::size_t>(r)] =
            model->forward(x, t_token, model->prepare_context(context));
      });
      for (int r = 0; r < size; ++r) {
        const auto i = static_cast<std::size_t>(r);
        EXPECT_LT(max_diff(scalar[i], want_scalar), 2e-5)
            << "deferred " << deferred << " size " << size << " rank " << r;
        EXPECT_LT(max_diff(token[i], want_token), 2e-5)
            << "deferred " << deferred << " size " << size << " rank " << r;
      }
    }
  }
}

// Wan2.1 I2V's image path shards as the text path: add_k_proj / add_v_proj and norm_added_k
// column-split, the image embedder replicated; 2 shards equal the whole model.
TEST(WanTensorParallel, TheImageTokensShardAsTheText) {
  torch::NoGradGuard no_grad;
  auto o = four_heads();
  o.in_channels = 36;
  o.out_channels = 16;
  o.image_dim = 24;
  o.added_kv_proj_dim = o.inner_dim();
  o.pos_embed_seq_len = 6;
  torch::manual_seed(4);
  const auto x = torch::randn({1, 36, 2, 4, 6});
  const auto context = torch::randn({1, 5, 32});
  const auto image = torch::randn({1, 6, 24});
  const auto t = torch::tensor({500.0F});
  WanTransformer3DModel whole(o);
  init_random_weights(*whole, 9);
  const auto want = whole->forward(x, t, context, image);
  std::vector<torch::Tensor> got(2);
  on_group(2, [&](int r, Collective& c) {
    torch::NoGradGuard guard;
    WanTransformer3DModel model(o, TensorShard{r, 2});
    const auto plan = model->shard_plan();
    EXPECT_TRUE(plan("blocks.0.attn2.add_k_proj.weight").has_value());
    EXPECT_TRUE(plan("blocks.0.attn2.norm_added_k.weight").has_value());
    EXPECT_FALSE(plan("condition_embedder.image_embedder.ff.net.2.weight").has_value());
    init_random_weights(*model, 9, plan);
    model->bind_parallel({&c, nullptr});
    got[static_cast<std::size_t>(r)] = model->forward(x, t, context, image);
  });
  for (const auto& g : got) EXPECT_LT(max_diff(g, want), 2e-5);
}

// The loader reads only this shard's slices: every parameter of shard r is the checkpoint
// tensor's part r along the plan's dim (or the whole tensor where the plan has none).
TEST(WanTensorParallel, TheLoaderReadsExactlyTheShardsSlices) {
  const fs::path dir = fs::temp_directory_path() / ("omnidp_wan_tp_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto o = four_heads();
  WanTransformer3DModel whole(o);
  init_random_weights(*whole, 9);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : whole->named_parameters(true)) {
    tensors.emplace_back(item.key(), item.value().to(torch::kBFloat16));  // bf16 -> fp32 is exact
  }
  save_safetensors(dir / "diffusion_pytorch_model.safetensors", tensors);
  std::ofstream(dir / "config.json") << tiny_wan_transformer_config();
  // The config says 2 heads of 64; the checkpoint has the same shapes as 4 heads of 32.
  const auto whole_params = whole->named_parameters(true);
  for (const int size : {1, 2}) {
    for (int r = 0; r < size; ++r) {
      const TensorShard shard{r, size};
      auto model = load_wan_transformer(dir, torch::kFloat32, torch::kCPU, shard);
      const auto plan = model->shard_plan();
      int sliced = 0;
      for (const auto& item : model->named_parameters(true)) {
        auto want = whole_params[item.key()];
        if (plan) {
          if (const auto s = plan(item.key())) {
            want = want.narrow(s->dim, r * want.size(s->dim) / size, want.size(s->dim) / size);
            ++sliced;
          }
        }
        EXPECT_TRUE(torch::equal(item.value(), want)) << item.key() << " shard " << r << "/" << size;
      }
      // 2 blocks x (2 attentions x (6 q/k/v + 2 norms + 1 out) + 3 ffn).
      EXPECT_EQ(sliced, size == 1 ? 0 : 2 * (2 * 9 + 3));
    }
  }
  // The FFN's slices are its parallel layers' own declarations (layer_shard_plan).
  WanTransformer3DModel second(o, TensorShard{1, 2});
  const auto plan = second->shard_plan();
  EXPECT_EQ(plan("blocks.0.attn1.to_out.0.bias"), std::nullopt);
  EXPECT_EQ(plan("blocks.0.ffn.net.2.weight"), (TensorSlice{1, 1, 2}));
  EXPECT_EQ(plan("blocks.1.ffn.net.0.proj.bias"), (TensorSlice{0, 1, 2}));
  EXPECT_EQ(plan("blocks.0.ffn.net.2.bias"), std::nullopt);
  EXPECT_EQ(plan("condition_embedder.time_proj.weight"), std::nullopt);
  fs::remove_all(dir);
}

TEST(WanTensorParallel, HeadCountsTheShardsDoNotDivideAreConfigErrors) {
  const auto expect_config_error = [](const WanTransformerOptions& o, TensorShard shard,
                                      const std::string& message) {
    try {
      WanTransformer3DModel model(o, shard);
      FAIL() << "no error for " << shard.size << " shards";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "parallel.tensor_parallel_size");
      EXPECT_EQ(e.message(), message);
    }
  };
  const auto tiny = WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "tiny");
  expect_config_error(
      tiny, {0, 4},
      "4 does not divide the 2 attention heads of WanTransformer3DModel (tensor parallelism splits "
      "the heads: use a divisor of 2)");
  auto real = WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(), "5b");
  real.num_layers = 0;  // the check comes before any block
  expect_config_error(
      real, {0, 5},
      "5 does not divide the 24 attention heads of WanTransformer3DModel (tensor parallelism "
      "splits the heads: use a divisor of 24)");
  auto odd_ffn = four_heads();
  odd_ffn.ffn_dim = 130;
  expect_config_error(
      odd_ffn, {0, 4},
      "WanTransformer3DModel has 130 FFN columns (ffn_dim), which tensor_parallel_size 4 does not "
      "divide");
  // A shard must run in a group of its size and rank.
  WanTransformer3DModel shard(four_heads(), TensorShard{1, 2});
  EXPECT_THROW(shard->bind_parallel({nullptr, nullptr}), ModelError);
  auto group = make_in_process_collectives(2, "g");
  EXPECT_THROW(shard->bind_parallel({group[0].get(), nullptr}), ModelError);
  EXPECT_NO_THROW(shard->bind_parallel({group[1].get(), nullptr}));
}

using testing::tiny_config;

// A whole generate() per rank of a tensor group of 2 (tiny-wan: 2 heads) gives the
// single-rank video within one uint8 level; only the leader decodes.
TEST(WanTensorParallel, TwoShardsGenerateTheSingleRankVideo) {
  Request r = testing::tiny_request();
  r.negative_prompt = "blurry";
  const auto single = create_wan_pipeline(tiny_config(), DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  const Video want = single->generate(r, {});
  std::vector<Video> got(2);
  on_group(2, [&](int rank, Collective& c) {
    DeviceBinding binding{DeviceKind::cpu, 0, "cpu"};
    binding.tensor_rank = rank;
    binding.tensor_size = 2;
    const auto pipeline = create_wan_pipeline(tiny_config(), binding);
    GenerateContext ctx;
    ctx.tensor = &c;
    got[static_cast<std::size_t>(rank)] = pipeline->generate(r, ctx);
  });
  EXPECT_EQ(got[0].frames, want.frames);
  models::testing::expect_leader_has_the_single_rank_video(want, got);
}

}  // namespace
}  // namespace omnidp::models::wan
