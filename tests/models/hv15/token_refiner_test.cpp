// HunyuanVideo-1.5's token refiner: the checkpoint's parameter names and the output shape.
#include "omnidp/models/hv15/token_refiner.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hv = omnidp::models::hv15;

namespace {

TEST(Hv15TokenRefiner, CarriesTheCheckpointsNames) {
  hv::TokenRefiner refiner(24, 2, 8, 1, 4.0);
  std::vector<std::string> names;
  for (const auto& p : refiner->named_parameters()) names.push_back(p.key());
  const std::vector<std::string> want = {
      "time_text_embed.timestep_embedder.linear_1.weight",
      "time_text_embed.timestep_embedder.linear_1.bias",
      "time_text_embed.timestep_embedder.linear_2.weight",
      "time_text_embed.timestep_embedder.linear_2.bias",
      "time_text_embed.text_embedder.linear_1.weight",
      "time_text_embed.text_embedder.linear_1.bias",
      "time_text_embed.text_embedder.linear_2.weight",
      "time_text_embed.text_embedder.linear_2.bias",
      "proj_in.weight",
      "proj_in.bias",
      "token_refiner.refiner_blocks.0.norm1.weight",
      "token_refiner.refiner_blocks.0.norm1.bias",
      "token_refiner.refiner_blocks.0.attn.to_q.weight",
      "token_refiner.refiner_blocks.0.attn.to_q.bias",
      "token_refiner.refiner_blocks.0.attn.to_k.weight",
      "token_refiner.refiner_blocks.0.attn.to_k.bias",
      "token_refiner.refiner_blocks.0.attn.to_v.weight",
      "token_refiner.refiner_blocks.0.attn.to_v.bias",
      "token_refiner.refiner_blocks.0.attn.to_out.0.weight",
      "token_refiner.refiner_blocks.0.attn.to_out.0.bias",
      "token_refiner.refiner_blocks.0.norm2.weight",
      "token_refiner.refiner_blocks.0.norm2.bias",
      "token_refiner.refiner_blocks.0.ff.net.0.proj.weight",
      "token_refiner.refiner_blocks.0.ff.net.0.proj.bias",
      "token_refiner.refiner_blocks.0.ff.net.2.weight",
      "token_refiner.refiner_blocks.0.ff.net.2.bias",
      "token_refiner.refiner_blocks.0.norm_out.linear.weight",
      "token_refiner.refiner_blocks.0.norm_out.linear.bias",
  };
  EXPECT_EQ(names, want);
}

TEST(Hv15TokenRefiner, RefinesEachTokenToTheModelWidth) {
  torch::NoGradGuard no_grad;
  hv::TokenRefiner refiner(24, 2, 8, 1, 4.0);
  for (auto& p : refiner->parameters()) p.normal_(0.0, 0.1);
  const auto x = torch::randn({2, 5, 24});
  const auto mask = torch::tensor({{1, 1, 1, 0, 0}, {1, 1, 1, 1, 1}}).to(torch::kBool);
  const auto y = refiner->forward(x, torch::tensor({500.0, 20.0}), mask);
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 5, 16}));
  EXPECT_TRUE(y.isfinite().all().item<bool>());
}

}  // namespace
