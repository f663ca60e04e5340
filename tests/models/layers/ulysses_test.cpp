// The Ulysses exchanges (layers/ulysses.hpp) on the in-process backend: exact values of the
// token shards, the head shards and their inverses, with and without padding; the attention
// over the shards against the single-rank one.
#include "omnidp/models/layers/ulysses.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/collective_ops.hpp"

namespace omnidp::models {
namespace {

// body(rank, collective) on `size` threads of one sequence group.
void on_group(int size, const std::function<void(int, Collective&)>& body) {
  testing::on_group(size, body, "test sequence group");
}

TEST(Ulysses, ShardsPadTheLastRankAndGatherDropsThePadding) {
  // 7 tokens over 3 ranks: 3 each, the last holds token 6 and two zeros.
  const auto x = torch::arange(1, 1 + 2 * 7 * 2, torch::kFloat).reshape({2, 7, 2});
  std::vector<torch::Tensor> shards(3), positions(3), gathered(3);
  std::vector<SequenceShard> s(3);
  std::vector<std::int64_t> padded(3);
  on_group(3, [&](int r, Collective& c) {
    const auto i = static_cast<std::size_t>(r);
    s[i] = make_sequence_shard(&c, 7);
    padded[i] = s[i].padded();  // the group lives only as long as on_group
    shards[i] = shard_tokens(s[i], x, 1);
    positions[i] = shard_positions(s[i], torch::kCPU);
    gathered[i] = gather_tokens(s[i], shards[i] * 2);
  });
  for (int r = 0; r < 3; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_EQ(s[i].local, 3);
    EXPECT_EQ(s[i].offset, 3 * r);
    EXPECT_EQ(padded[i], 9);
    EXPECT_TRUE(torch::equal(gathered[i], x * 2)) << r;
  }
  EXPECT_TRUE(torch::equal(shards[0], x.narrow(1, 0, 3)));
  EXPECT_TRUE(torch::equal(shards[2].narrow(1, 0, 1), x.narrow(1, 6, 1)));
  EXPECT_TRUE(torch::equal(shards[2].narrow(1, 1, 2), torch::zeros({2, 2, 2})));
  EXPECT_TRUE(torch::equal(positions[2], torch::tensor({6, 6, 6}, torch::kLong)));
  EXPECT_TRUE(torch::equal(positions[1], torch::tensor({3, 4, 5}, torch::kLong)));
}

TEST(Ulysses, TokensToHeadsGivesEveryTokenOfTheHeadShardAndBack) {
  // [B 1, N 5, H 4, D 3] over 2 ranks: 3 tokens each (one padded), 2 heads each.
  const auto q = torch::randn({1, 5, 4, 3});
  const auto k = torch::randn({1, 5, 4, 3});
  std::vector<std::vector<torch::Tensor>> heads(2);
  std::vector<torch::Tensor> back(2), local(2), all(2);
  on_group(2, [&](int r, Collective& c) {
    const auto i = static_cast<std::size_t>(r);
    const auto s = make_sequence_shard(&c, 5);
    heads[i] = tokens_to_heads(s, {shard_tokens(s, q, 1), shard_tokens(s, k, 1)});
    back[i] = heads_to_tokens(s, heads[i][0]);
    local[i] = local_heads(s, q);
    all[i] = gather_heads(s, local[i]);
  });
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    ASSERT_EQ(heads[i].size(), 2U);
    ASSERT_EQ(heads[i][0].sizes(), (std::vector<std::int64_t>{1, 6, 2, 3}));
    EXPECT_TRUE(torch::equal(heads[i][0].narrow(1, 0, 5), q.narrow(2, 2 * r, 2))) << r;
    EXPECT_TRUE(torch::equal(heads[i][1].narrow(1, 0, 5), k.narrow(2, 2 * r, 2))) << r;
    EXPECT_TRUE(torch::equal(heads[i][0].narrow(1, 5, 1), torch::zeros({1, 1, 2, 3})));  // the padding
    EXPECT_TRUE(torch::equal(local[i], q.narrow(2, 2 * r, 2)));
    EXPECT_TRUE(torch::equal(all[i], q));
  }
  EXPECT_TRUE(torch::equal(back[0], q.narrow(1, 0, 3)));
  EXPECT_TRUE(torch::equal(back[1].narrow(1, 0, 2), q.narrow(1, 3, 2)));
}

// The attention over the shards equals the single-rank attention: video tokens alone (Wan),
// with joint text (HunyuanVideo-1.5), and with masked text keys (their rows zero).
TEST(Ulysses, AttentionOverTheShardsIsTheWholeAttention) {
  torch::manual_seed(3);
  const auto q = torch::randn({2, 5, 4, 8});  // [B, N 5 (padded over 2 ranks), H 4, D 8]
  const auto k = torch::randn({2, 5, 4, 8});
  const auto v = torch::randn({2, 5, 4, 8});
  const auto cq = torch::randn({2, 3, 4, 8});
  const auto ck = torch::randn({2, 3, 4, 8});
  const auto cv = torch::randn({2, 3, 4, 8});
  const auto mask = torch::tensor({{1, 1, 0}, {1, 0, 0}}).to(torch::kBool);
  const auto sdpa = [](const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                       const std::optional<torch::Tensor>& keys) {  // [B, L, H, D] -> [B, L, H*D]
    return models::scaled_dot_product_attention(a.transpose(1, 2), b.transpose(1, 2),
                                                c.transpose(1, 2), keys)
        .transpose(1, 2)
        .flatten(2, 3);
  };
  const auto want_alone = sdpa(q, k, v, std::nullopt);
  const auto joint = [](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::cat({a, b}, 1);
  };
  const auto want_joint = sdpa(joint(q, cq), joint(k, ck), joint(v, cv), std::nullopt);
  const auto keys = torch::cat({torch::ones({2, 5}, torch::kBool), mask}, 1).view({2, 1, 1, 8});
  const auto rows = torch::cat({torch::ones({2, 5}), mask.to(torch::kFloat)}, 1).unsqueeze(-1);
  const auto want_masked = sdpa(joint(q, cq), joint(k, ck), joint(v, cv), keys) * rows;
  std::vector<torch::Tensor> alone(2), video(2), text(2), masked_video(2), masked_text(2);
  std::vector<bool> no_text(2);
  on_group(2, [&](int r, Collective& c) {
    const auto i = static_cast<std::size_t>(r);
    const auto s = make_sequence_shard(&c, 5);
    const auto mine = [&](const torch::Tensor& x) { return shard_tokens(s, x, 1); };
    const auto a = ulysses_attention(s, mine(q), mine(k), mine(v));
    alone[i] = gather_tokens(s, a.first);
    no_text[i] = !a.second.defined();
    const auto j = ulysses_attention(s, mine(q), mine(k), mine(v), {cq, ck, cv, {}, {}});
    video[i] = gather_tokens(s, j.first);
    text[i] = j.second;
    const auto m = ulysses_attention(s, mine(q), mine(k), mine(v), {cq, ck, cv, mask, {}});
    masked_video[i] = gather_tokens(s, m.first);
    masked_text[i] = m.second;
  });
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(no_text[i]);
    EXPECT_TRUE(torch::allclose(alone[i], want_alone, 1e-5, 1e-5)) << i;
    EXPECT_TRUE(torch::allclose(video[i], want_joint.narrow(1, 0, 5), 1e-5, 1e-5)) << i;
    EXPECT_TRUE(torch::allclose(text[i], want_joint.narrow(1, 5, 3), 1e-5, 1e-5)) << i;
    EXPECT_TRUE(torch::allclose(masked_video[i], want_masked.narrow(1, 0, 5), 1e-5, 1e-5)) << i;
    EXPECT_TRUE(torch::allclose(masked_text[i], want_masked.narrow(1, 5, 3), 1e-5, 1e-5)) << i;
  }
  // A masked text token's own row is zero.
  EXPECT_TRUE(torch::equal(masked_text[0].select(1, 2), torch::zeros({2, 32})));
}

TEST(Ulysses, WithoutAGroupNothingIsSharded) {
  const auto x = torch::randn({1, 4, 2});
  const auto s = make_sequence_shard(nullptr, 4);
  EXPECT_FALSE(s.active());
  EXPECT_EQ(s.local, 4);
  EXPECT_TRUE(shard_tokens(s, x, 1).is_same(x));  // no copy
  EXPECT_TRUE(gather_tokens(s, x).is_same(x));
  EXPECT_NO_THROW(check_head_split(3, 1, s.size(), "a model"));
}

// The rule of config/head_split.hpp, raised by the models on the key to change.
TEST(Ulysses, HeadsThatDoNotSplitNameBothCountsAndTheKey) {
  const auto error = [](std::int64_t heads, std::int64_t tensor, std::int64_t sequence) {
    try {
      check_head_split(heads, tensor, sequence, "the test model");
    } catch (const ConfigError& e) {
      return e.path() + ": " + e.message();
    }
    return std::string();
  };
  EXPECT_EQ(error(3, 1, 2),
            "parallel.sequence_parallel_size: 2 does not divide the 3 attention heads of the test "
            "model (Ulysses shards the heads over the sequence group: use a divisor of 3)");
  EXPECT_EQ(error(6, 4, 1),
            "parallel.tensor_parallel_size: 4 does not divide the 6 attention heads of the test "
            "model (tensor parallelism splits the heads: use a divisor of 6)");
  EXPECT_EQ(error(8, 2, 8),
            "parallel.sequence_parallel_size: 8 does not divide the 4 attention heads of each "
            "tensor shard of the test model (8 heads over tensor_parallel_size 2)");
  EXPECT_EQ(error(8, 2, 4), "");
  EXPECT_EQ(error(3, 1, 1), "");
}

TEST(Ulysses, GroupStepOverTwoAxesReachesTheWholeGroup) {
  // A 2 x 2 group: cfg axis {0, 2}, {1, 3}; sequence axis {0, 1}, {2, 3}. Rank 3 stops.
  std::vector<std::vector<std::unique_ptr<Collective>>> cfg, seq;
  for (const char* name : {"a", "b"}) {
    cfg.push_back(make_in_process_collectives(2, std::string("cfg ") + name));
    seq.push_back(make_in_process_collectives(2, std::string("seq ") + name));
  }
  std::vector<int> stopped(4, -1);
  std::vector<std::thread> threads;
  for (int g = 0; g < 4; ++g) {
    threads.emplace_back([&, g] {
      auto* c = cfg[static_cast<std::size_t>(g % 2)][static_cast<std::size_t>(g / 2)].get();
      auto* s = seq[static_cast<std::size_t>(g / 2)][static_cast<std::size_t>(g % 2)].get();
      stopped[static_cast<std::size_t>(g)] =
          group_step({c, s, nullptr}, g == 3, 1, 4, torch::kCPU) ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(stopped, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_FALSE(group_step({nullptr, nullptr, nullptr}, false, 0, 1, torch::kCPU));
  EXPECT_TRUE(group_step({nullptr, nullptr, nullptr}, true, 0, 1, torch::kCPU));
}

}  // namespace
}  // namespace omnidp::models
