// The tensor-parallel linear layers on the in-process backend (threads): column and row
// shards compose to the whole layer, each declares the slices it holds, the loader's plan is
// built from those declarations, and a sharded layer refuses a group that is not its shard's.
#include "omnidp/models/layers/parallel_linear.hpp"

#include <gtest/gtest.h>

#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models {
namespace {

using testing::max_diff;
using testing::on_group;

// The whole layer's weight and bias, drawn once.
struct WholeLinear {
  torch::Tensor weight = torch::randn({8, 16});
  torch::Tensor bias = torch::randn({8});
};

TEST(ParallelLinear, UnshardedLayersAreLinearBitForBit) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const WholeLinear w;
  const auto x = torch::randn({2, 5, 16});
  Linear plain(16, 8);
  plain->weight.copy_(w.weight);
  plain->bias.copy_(w.bias);
  ColumnParallelLinear column(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  RowParallelLinear row(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  for (auto* p : {&column->weight, &row->weight}) p->copy_(w.weight);
  for (auto* p : {&column->bias, &row->bias}) p->copy_(w.bias);
  const auto want = plain->forward(x);
  EXPECT_TRUE(torch::equal(column->forward(x), want));
  EXPECT_TRUE(torch::equal(row->forward(x), want));
  const auto [value, bias] = row->forward_skip_bias(x);
  EXPECT_TRUE(torch::equal(value, linear_bias(x, w.weight, {})));
  EXPECT_TRUE(torch::equal(bias, w.bias));
  EXPECT_FALSE(column->method().quantized());
  EXPECT_TRUE(column->parameter_slices().empty());
  EXPECT_TRUE(row->parameter_slices().empty());
  EXPECT_FALSE(static_cast<bool>(layer_shard_plan(*column)));
}

TEST(ParallelLinear, ColumnThenRowShardsComposeToTheWholeLayers) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(2);
  const WholeLinear up;                            // 16 -> 8
  const auto down_weight = torch::randn({16, 8});  // 8 -> 16
  const auto down_bias = torch::randn({16});
  const auto x = torch::randn({3, 16});
  const auto hidden = linear_bias(x, up.weight, up.bias);
  const auto want = linear_bias(hidden, down_weight, down_bias);
  for (const int size : {2, 4}) {
    std::vector<torch::Tensor> columns(static_cast<std::size_t>(size)),
        outputs(static_cast<std::size_t>(size)), unbiased(static_cast<std::size_t>(size));
    on_group(size, [&](int r, Collective& c) {
      torch::NoGradGuard guard;
      const TensorShard shard{r, size};
      ColumnParallelLinear column(16, 8, true, shard, ParamSpec{}, "m");
      RowParallelLinear row(8, 16, true, shard, ParamSpec{}, "m");
      column->weight.copy_(up.weight.chunk(size, 0)[r]);
      column->bias.copy_(up.bias.chunk(size, 0)[r]);
      row->weight.copy_(down_weight.chunk(size, 1)[r]);
      row->bias.copy_(down_bias);
      row->bind_tensor_group(&c);
      const auto mine = column->forward(x);
      columns[static_cast<std::size_t>(r)] = mine;
      outputs[static_cast<std::size_t>(r)] = row->forward(mine);
      unbiased[static_cast<std::size_t>(r)] = row->forward_skip_bias(mine).first;
    });
    EXPECT_LT(max_diff(torch::cat(columns, -1), hidden), 1e-5) << size;
    for (int r = 0; r < size; ++r) {
      const auto i = static_cast<std::size_t>(r);
      EXPECT_LT(max_diff(outputs[i], want), 1e-4) << size << " " << r;
      // The bias once, after the reduce: every rank holds the same sum.
      EXPECT_TRUE(torch::equal(outputs[i], unbiased[i] + down_bias)) << size << " " << r;
      EXPECT_TRUE(torch::equal(outputs[i], outputs[0])) << size << " " << r;
    }
  }
}

// A module with a column and a row layer, as a model nests them.
struct TwoLayers : torch::nn::Module {
  explicit TwoLayers(TensorShard shard) {
    auto inner = register_module("inner", std::make_shared<torch::nn::Module>("inner"));
    up = inner->register_module("up", ColumnParallelLinear(4, 8, true, shard, ParamSpec{}, "two"));
    down = register_module("down", RowParallelLinear(8, 4, true, shard, ParamSpec{}, "two"));
    head = register_module("head", Linear(4, 4));
  }
  ColumnParallelLinear up{nullptr};
  RowParallelLinear down{nullptr};
  Linear head{nullptr};
};

TEST(ParallelLinear, TheLoadersPlanIsWhatTheLayersDeclare) {
  torch::NoGradGuard no_grad;
  TwoLayers m({1, 2});
  EXPECT_EQ(m.up->parameter_slices(), (std::vector<std::pair<std::string, TensorSlice>>{
                                          {"weight", {0, 1, 2}}, {"bias", {0, 1, 2}}}));
  EXPECT_EQ(m.down->parameter_slices(),
            (std::vector<std::pair<std::string, TensorSlice>>{{"weight", {1, 1, 2}}}));
  const auto plan = layer_shard_plan(m);
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ(plan("inner.up.weight"), (TensorSlice{0, 1, 2}));
  EXPECT_EQ(plan("inner.up.bias"), (TensorSlice{0, 1, 2}));
  EXPECT_EQ(plan("down.weight"), (TensorSlice{1, 1, 2}));
  EXPECT_EQ(plan("down.bias"), std::nullopt);  // the whole bias, added after the reduce
  EXPECT_EQ(plan("head.weight"), std::nullopt);
  EXPECT_EQ(plan("up.weight"), std::nullopt);  // full names only

  // Seeded random weights through the plan: each shard holds its slice of the whole values.
  TwoLayers whole({0, 1});
  init_random_weights(whole, 5, layer_shard_plan(whole));
  for (int r = 0; r < 2; ++r) {
    TwoLayers shard({r, 2});
    init_random_weights(shard, 5, layer_shard_plan(shard));
    EXPECT_TRUE(torch::equal(shard.up->weight, whole.up->weight.chunk(2, 0)[r]));
    EXPECT_TRUE(torch::equal(shard.up->bias, whole.up->bias.chunk(2, 0)[r]));
    EXPECT_TRUE(torch::equal(shard.down->weight, whole.down->weight.chunk(2, 1)[r]));
    EXPECT_TRUE(torch::equal(shard.down->bias, whole.down->bias));
    EXPECT_TRUE(torch::equal(shard.head->weight, whole.head->weight));
  }
}

TEST(ParallelLinear, AShardedLayerTakesOnlyItsShardsGroup) {
  torch::NoGradGuard no_grad;
  auto groups = make_in_process_collectives(2, "g");
  TwoLayers sharded({1, 2});
  try {
    bind_tensor_groups(sharded, nullptr);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor shard 1 of 2, but runs in no tensor group"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(bind_tensor_groups(sharded, groups[0].get()), ModelError);  // rank 0, not 1
  bind_tensor_groups(sharded, groups[1].get());
  // Layers built whole are replicated: they ignore the group and stay single-rank.
  TwoLayers replicated({0, 1});
  bind_tensor_groups(replicated, groups[1].get());
  const auto x = torch::randn({2, 8});
  EXPECT_TRUE(torch::equal(replicated.down->forward(x),
                           linear_bias(x, replicated.down->weight, replicated.down->bias)));
}

// The two output projections of a joint attention: without a group each layer's forward;
// with one, both reduced in one all-reduce, the biases after it, as two separate reductions.
TEST(JointRowParallelLinear, ReducesBothProductsTogetherAndAddsEachBiasAfter) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const WholeLinear first, second;  // 16 -> 8 each
  const auto x = torch::randn({2, 5, 16});
  const auto y = torch::randn({2, 3, 16});
  RowParallelLinear a(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  RowParallelLinear b(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  a->weight.copy_(first.weight);
  a->bias.copy_(first.bias);
  b->weight.copy_(second.weight);
  b->bias.copy_(second.bias);
  const auto [whole_x, whole_y] = JointRowParallelLinear(a, b).forward(x, y);
  EXPECT_TRUE(torch::equal(whole_x, a->forward(x)));
  EXPECT_TRUE(torch::equal(whole_y, b->forward(y)));
  const int size = 2;
  std::vector<torch::Tensor> xs(size), ys(size), want_x(size), want_y(size);
  on_group(size, [&](int r, Collective& c) {
    torch::NoGradGuard guard;
    const TensorShard shard{r, size};
    RowParallelLinear ra(16, 8, true, shard, ParamSpec{}, "m");
    RowParallelLinear rb(16, 8, true, shard, ParamSpec{}, "m");
    ra->weight.copy_(first.weight.chunk(size, 1)[r]);
    ra->bias.copy_(first.bias);
    rb->weight.copy_(second.weight.chunk(size, 1)[r]);
    rb->bias.copy_(second.bias);
    ra->bind_tensor_group(&c);
    rb->bind_tensor_group(&c);
    JointRowParallelLinear joint(ra, rb);
    joint.bind_tensor_group(&c);
    const auto i = static_cast<std::size_t>(r);
    const auto xr = x.chunk(size, 2)[r];
    const auto yr = y.chunk(size, 2)[r];
    std::tie(xs[i], ys[i]) = joint.forward(xr, yr);
    want_x[i] = ra->forward(xr);
    want_y[i] = rb->forward(yr);
  });
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::equal(xs[i], want_x[i])) << i;
    EXPECT_TRUE(torch::equal(ys[i], want_y[i])) << i;
  }
}

TEST(ParallelLinear, ShardsThatDoNotDivideAreConfigErrors) {
  try {
    ColumnParallelLinear layer(16, 6, true, TensorShard{0, 4}, ParamSpec{}, "tiny-model");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "parallel.tensor_parallel_size");
    EXPECT_EQ(e.message(),
              "tiny-model has 6 output features, which tensor_parallel_size 4 does not divide");
  }
  try {
    RowParallelLinear layer(6, 16, true, TensorShard{0, 4}, ParamSpec{}, "tiny-model");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message(),
              "tiny-model has 6 input features, which tensor_parallel_size 4 does not divide");
  }
}

// An attention's projections as Diffusers names them, on one fused QKVParallelLinear.
struct Attention : torch::nn::Module {
  Attention(TensorShard shard, std::size_t parts)
      : qkv(16, 8, parts, true, shard, ParamSpec{}, "att") {
    const char* names[] = {"to_q", "to_k", "to_v"};
    for (std::size_t i = 0; i < parts; ++i) register_module(names[i], qkv.part(i));
  }
  QKVParallelLinear qkv;
};

TEST(QKVParallelLinear, OneGemmOverThePartsWhichKeepTheCheckpointNames) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  Attention a({0, 1}, 3);
  EXPECT_EQ(a.named_parameters(true).keys(),
            (std::vector<std::string>{"to_q.weight", "to_q.bias", "to_k.weight", "to_k.bias",
                                      "to_v.weight", "to_v.bias"}));
  // Loaded in place through the parts (as load_state_dict and init_random_weights do).
  std::vector<WholeLinear> whole(3);
  for (std::size_t i = 0; i < 3; ++i) {
    a.qkv.part(i)->weight.copy_(whole[i].weight);
    a.qkv.part(i)->bias.copy_(whole[i].bias);
    EXPECT_TRUE(a.qkv.part(i)->weight.is_alias_of(a.qkv.part(0)->weight)) << i;
  }
  const auto x = torch::randn({2, 5, 16});
  const auto fused_weight = torch::cat({whole[0].weight, whole[1].weight, whole[2].weight}, 0);
  const auto fused_bias = torch::cat({whole[0].bias, whole[1].bias, whole[2].bias}, 0);
  const auto want = linear_bias(x, fused_weight, fused_bias).chunk(3, -1);
  const auto got = a.qkv.forward(x);
  const auto unbiased = a.qkv.forward_skip_bias(x);
  ASSERT_EQ(got.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(torch::equal(got[i], want[i])) << i;  // the one fused GEMM, bit for bit
    EXPECT_LT(max_diff(got[i], linear_bias(x, whole[i].weight, whole[i].bias)), 1e-5) << i;
    EXPECT_LT(max_diff(unbiased[i] + whole[i].bias, got[i]), 1e-5) << i;
  }
  EXPECT_FALSE(a.qkv.method().quantized());

  // Converted by to(): the values and the views stay; set_data on a part breaks them loudly.
  a.qkv.to(torch::kCPU, torch::kBFloat16);
  EXPECT_EQ(a.qkv.part(2)->weight.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(a.qkv.part(2)->weight, whole[2].weight.to(torch::kBFloat16)));
  EXPECT_EQ(a.qkv.forward(x.to(torch::kBFloat16))[1].scalar_type(), torch::kBFloat16);
  a.qkv.part(1)->weight.set_data(a.qkv.part(1)->weight.clone());
  try {
    (void)a.qkv.forward(x.to(torch::kBFloat16));
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(
        std::string(e.what()).find("att: a fused projection's part no longer shares its storage"),
        std::string::npos)
        << e.what();
  }
  a.qkv.to(torch::kCPU, torch::kFloat32);  // rebuilt from the parts
  const auto again = a.qkv.forward(x);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_LT(max_diff(again[i], linear_bias(x, whole[i].weight, whole[i].bias)), 5e-2) << i;
  }
}

TEST(QKVParallelLinear, EachShardFusesItsSlicesOfEveryPart) {
  torch::NoGradGuard no_grad;
  Attention whole({0, 1}, 2);
  init_random_weights(whole, 9, layer_shard_plan(whole));
  const auto x = torch::randn({3, 16});
  const auto want = whole.qkv.forward(x);
  for (int r = 0; r < 2; ++r) {
    Attention shard({r, 2}, 2);
    const auto plan = layer_shard_plan(shard);
    ASSERT_TRUE(static_cast<bool>(plan));
    EXPECT_EQ(plan("to_q.weight"), (TensorSlice{0, r, 2}));
    EXPECT_EQ(plan("to_k.bias"), (TensorSlice{0, r, 2}));
    init_random_weights(shard, 9, plan);
    const auto got = shard.qkv.forward(x);
    ASSERT_EQ(got.size(), 2U);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(got[i].size(-1), 4);
      EXPECT_LT(max_diff(got[i], want[i].chunk(2, -1)[r]), 1e-5) << r << " " << i;
    }
  }
  EXPECT_THROW(QKVParallelLinear(16, 6, 3, true, TensorShard{0, 4}, ParamSpec{}, "att"), ConfigError);
}

// Low-rank updates beside a layer (an unfused LoRA): a column, a row and a fused QKV layer give
// the outputs of their weights merged with up @ down, each update in its own columns; the
// quantization switch keeps them, clearing gives the layer back bit for bit.
TEST(ParallelLinear, LowRankUpdatesActAsTheMergedWeight) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const WholeLinear w;
  const auto x = torch::randn({2, 5, 16});
  const auto down = torch::randn({3, 16}) * 0.3;
  const auto up = torch::randn({8, 3}) * 0.3;
  ColumnParallelLinear column(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  RowParallelLinear row(16, 8, true, TensorShard{}, ParamSpec{}, "m");
  for (auto* p : {&column->weight, &row->weight}) p->copy_(w.weight);
  for (auto* p : {&column->bias, &row->bias}) p->copy_(w.bias);
  const auto plain = column->forward(x);
  const auto merged = linear_bias(x, w.weight + torch::matmul(up, down), w.bias);
  column->set_low_rank({LowRankUpdate{down, up, 0}});
  row->set_low_rank({LowRankUpdate{down, up, 0}});
  EXPECT_LT(max_diff(column->forward(x), merged), 1e-4);
  EXPECT_LT(max_diff(row->forward(x), merged), 1e-4);
  EXPECT_LT(max_diff(row->forward_skip_bias(x).first + w.bias, merged), 1e-4);
  const auto v = torch::randn({16});
  EXPECT_LT(max_diff(row->partial_matvec_f32(v), torch::mv(w.weight + torch::matmul(up, down), v)),
            1e-4);
  // Only the last 4 columns: the first 4 stay the layer's own.
  column->set_low_rank({LowRankUpdate{down, up.narrow(0, 4, 4), 4}});
  const auto half = column->forward(x);
  EXPECT_TRUE(torch::equal(half.narrow(-1, 0, 4), plain.narrow(-1, 0, 4)));
  EXPECT_LT(max_diff(half.narrow(-1, 4, 4), merged.narrow(-1, 4, 4)), 1e-4);
  column->set_fp8(std::nullopt);
  EXPECT_EQ(column->method().low_rank().size(), 1U);
  column->set_low_rank({});
  EXPECT_TRUE(torch::equal(column->forward(x), plain));
  try {
    column->set_low_rank({LowRankUpdate{down, up, 2}});
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_STREQ(e.what(),
                 "m: a low-rank update of down [3, 16], up [8, 3] at column 2 does not fit 8 "
                 "output features");
  }

  Attention a({0, 1}, 3);
  init_random_weights(a, 3, layer_shard_plan(a));
  const auto before = a.qkv.forward(x);
  a.qkv.set_low_rank(1, {LowRankUpdate{down, up, 0}});
  const auto after = a.qkv.forward(x);
  EXPECT_TRUE(torch::equal(after[0], before[0]));
  EXPECT_TRUE(torch::equal(after[2], before[2]));
  EXPECT_LT(max_diff(after[1], linear_bias(x, a.qkv.part(1)->weight + torch::matmul(up, down),
                                           a.qkv.part(1)->bias)),
            1e-4);
  a.qkv.set_low_rank(2, {LowRankUpdate{down, up, 0}});  // part 1's stays (one GEMM for both downs)
  EXPECT_LT(max_diff(a.qkv.forward(x)[1], after[1]), 1e-5);
  a.qkv.set_low_rank(1, {});
  a.qkv.set_low_rank(2, {});
  EXPECT_TRUE(torch::equal(a.qkv.forward(x)[1], before[1]));
}

// Sharded: a column shard takes its rows of up, a row shard its columns of down; the shards'
// outputs compose to the whole layer's with the update (the row layer's partial low-rank
// products summed by its all-reduce).
TEST(ParallelLinear, ShardsOfALowRankUpdateComposeToTheWholeUpdate) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const WholeLinear a;  // 16 -> 8
  const auto b_weight = torch::randn({16, 8});
  const auto b_bias = torch::randn({16});
  const auto x = torch::randn({3, 16});
  const auto da = torch::randn({2, 16}), ua = torch::randn({8, 2});
  const auto db = torch::randn({2, 8}), ub = torch::randn({16, 2});
  const auto hidden = linear_bias(x, a.weight + torch::matmul(ua, da), a.bias);
  const auto want = linear_bias(hidden, b_weight + torch::matmul(ub, db), b_bias);
  std::vector<torch::Tensor> outputs(2);
  on_group(2, [&](int r, Collective& c) {
    torch::NoGradGuard guard;
    const TensorShard shard{r, 2};
    ColumnParallelLinear column(16, 8, true, shard, ParamSpec{}, "m");
    RowParallelLinear row(8, 16, true, shard, ParamSpec{}, "m");
    column->weight.copy_(a.weight.chunk(2, 0)[r]);
    column->bias.copy_(a.bias.chunk(2, 0)[r]);
    row->weight.copy_(b_weight.chunk(2, 1)[r]);
    row->bias.copy_(b_bias);
    row->bind_tensor_group(&c);
    column->set_low_rank({LowRankUpdate{da, ua.chunk(2, 0)[r], 0}});
    row->set_low_rank({LowRankUpdate{db.chunk(2, 1)[r], ub, 0}});
    outputs[static_cast<std::size_t>(r)] = row->forward(column->forward(x));
  });
  for (const auto& out : outputs) EXPECT_LT(max_diff(out, want), 1e-3);
}

TEST(ParallelLinear, Fp8MethodNeedsAGpuThatRunsIt) {
  ColumnParallelLinear layer(16, 16, false, TensorShard{}, ParamSpec{}, "m");
  if (!fp8_unavailable_reason(torch::kCPU).empty()) {
    EXPECT_THROW(layer->set_fp8(Fp8Accumulation::fast), ModelError);
    EXPECT_FALSE(layer->method().quantized());
  }
  layer->set_fp8(std::nullopt);  // back to the weights' dtype: always possible
  EXPECT_FALSE(layer->method().quantized());
}

}  // namespace
}  // namespace omnidp::models
