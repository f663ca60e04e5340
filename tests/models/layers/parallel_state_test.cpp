// The parallel state a model binds once (layers/parallel_state.hpp): checked against the shard
// and the heads, the tensor group handed to the layers.
#include "omnidp/models/layers/parallel_state.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.hpp"
#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

struct Row : torch::nn::Module {
  explicit Row(TensorShard shard) {
    layer = register_module("out", RowParallelLinear(4, 2, true, shard, ParamSpec{}, "test"));
  }
  RowParallelLinear layer{nullptr};
};

TEST(ParallelState, BindsTheTensorGroupToTheLayersAndKeepsBothAxes) {
  torch::manual_seed(2);
  const auto x = torch::randn({3, 4});
  Row whole(TensorShard{});
  const auto want = whole.layer->forward(x);
  std::vector<torch::Tensor> got(2);
  std::vector<ParallelState> kept(2);
  auto sequence = make_in_process_collectives(2, "test sequence group");
  testing::on_group(2, [&](int r, Collective& c) {
    const auto i = static_cast<std::size_t>(r);
    Row part(TensorShard{r, 2});
    part.layer->weight.copy_(whole.layer->weight.narrow(1, 2 * r, 2));
    part.layer->bias.copy_(whole.layer->bias);
    kept[i] = bind_parallel_state(part, {r, 2}, 4, {&c, sequence[i].get()}, "a model");
    got[i] = part.layer->forward(x.narrow(1, 2 * r, 2));  // all-reduced over the bound group
  });
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::allclose(got[i], want, 1e-6, 1e-6)) << i;
    EXPECT_EQ(kept[i].sequence, sequence[i].get());
    EXPECT_NE(kept[i].tensor, nullptr);
  }
}

TEST(ParallelState, RefusesAGroupOfAnotherShardOrHeadsThatDoNotSplit) {
  Row part(TensorShard{0, 2});
  EXPECT_THROW((void)bind_parallel_state(part, {0, 2}, 4, {}, "a model"), ModelError);
  Row whole(TensorShard{});
  auto sequence = make_in_process_collectives(3, "test sequence group");
  const auto message = test::error_of<ConfigError>([&] {
    (void)bind_parallel_state(whole, {}, 4, {nullptr, sequence[0].get()}, "a model");
  });
  EXPECT_NE(message.find("3 does not divide the 4 attention heads of a model"), std::string::npos)
      << message;
  const auto none = bind_parallel_state(whole, {}, 4, {}, "a model");
  EXPECT_EQ(none.tensor, nullptr);
  EXPECT_EQ(none.sequence, nullptr);
}

}  // namespace
}  // namespace omnidp::models
