// The shared FeedForward: Diffusers' checkpoint names, both activations against their
// definitions, the tensor-parallel shards (in-process group) against the whole layer, and the
// bias returned unapplied.
#include "omnidp/models/layers/feed_forward.hpp"

#include <gtest/gtest.h>

#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models {
namespace {

using testing::max_diff;
using testing::on_group;

FeedForward random_ffn(FeedForwardActivation activation, TensorShard shard = {}) {
  FeedForward ffn(8, 24, activation, shard, ParamSpec{}, "tiny");
  init_random_weights(*ffn, 3, layer_shard_plan(*ffn));
  return ffn;
}

TEST(FeedForward, CheckpointNamesAreDiffusers) {
  const FeedForward ffn(8, 24, FeedForwardActivation::gelu_tanh, TensorShard{}, ParamSpec{}, "tiny");
  std::vector<std::string> names;
  for (const auto& p : ffn->named_parameters(true)) {
    names.push_back(p.key() + " " + c10::str(p.value().sizes()));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"net.0.proj.weight [24, 8]", "net.0.proj.bias [24]",
                                             "net.2.weight [8, 24]", "net.2.bias [8]"}));
}

TEST(FeedForward, EachActivationFollowsItsDefinition) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 5, 8});
  for (const auto activation : {FeedForwardActivation::gelu_tanh, FeedForwardActivation::gelu,
                                FeedForwardActivation::silu}) {
    const auto ffn = random_ffn(activation);
    const auto pre = torch::nn::functional::linear(x, ffn->proj->weight, ffn->proj->bias);
    const auto up = activation == FeedForwardActivation::silu   ? torch::silu(pre)
                    : activation == FeedForwardActivation::gelu ? torch::gelu(pre)
                                                                : torch::gelu(pre, "tanh");
    const auto want = torch::nn::functional::linear(up, ffn->out->weight, ffn->out->bias);
    EXPECT_LT(max_diff(ffn->forward(x), want), 1e-6);
    const auto [value, bias] = ffn->forward_skip_bias(x);
    EXPECT_TRUE(torch::equal(bias, ffn->out->bias));
    EXPECT_TRUE(torch::equal(value + bias, ffn->forward(x)));
  }
  EXPECT_EQ(feed_forward_activation("gelu-approximate"), FeedForwardActivation::gelu_tanh);
  EXPECT_EQ(feed_forward_activation("gelu"), FeedForwardActivation::gelu);
  EXPECT_EQ(feed_forward_activation("linear-silu"), FeedForwardActivation::silu);
  EXPECT_THROW((void)feed_forward_activation("geglu"), ModelError);
}

// Diffusers' dim_out (Wan's image embedder: 1280 -> 1280 -> 5120): net.2 widens the output.
TEST(FeedForward, AnOutputWidthOfItsOwn) {
  torch::NoGradGuard no_grad;
  FeedForward ffn(8, 8, FeedForwardActivation::gelu, TensorShard{}, ParamSpec{}, "tiny", 12);
  init_random_weights(*ffn, 4);
  EXPECT_EQ(ffn->out->weight.sizes(), (std::vector<std::int64_t>{12, 8}));
  const auto x = torch::randn({3, 8});
  const auto want = torch::nn::functional::linear(
      torch::gelu(torch::nn::functional::linear(x, ffn->proj->weight, ffn->proj->bias)),
      ffn->out->weight, ffn->out->bias);
  EXPECT_LT(max_diff(ffn->forward(x), want), 1e-6);
}

TEST(FeedForward, TensorParallelShardsEqualTheWholeLayer) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({3, 8});
  const auto whole = random_ffn(FeedForwardActivation::gelu_tanh);
  const auto want = whole->forward(x);
  for (const int size : {2, 3}) {
    std::vector<torch::Tensor> got(static_cast<std::size_t>(size));
    on_group(size, [&](int r, Collective& c) {
      torch::NoGradGuard guard;
      auto ffn = random_ffn(FeedForwardActivation::gelu_tanh, {r, size});
      EXPECT_EQ(ffn->proj->weight.size(0), 24 / size);
      bind_tensor_groups(*ffn, &c);
      got[static_cast<std::size_t>(r)] = ffn->forward(x);
    });
    for (int r = 0; r < size; ++r) {
      EXPECT_LT(max_diff(got[static_cast<std::size_t>(r)], want), 1e-5) << size << " " << r;
    }
  }
  try {
    FeedForward ffn(8, 24, FeedForwardActivation::silu, TensorShard{0, 5}, ParamSpec{}, "tiny");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message(), "tiny has 24 FFN columns, which tensor_parallel_size 5 does not divide");
  }
}

}  // namespace
}  // namespace omnidp::models
