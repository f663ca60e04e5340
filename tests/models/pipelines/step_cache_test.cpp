// Step caching: each policy's compute-or-skip schedule and what it returns on a skipped forward,
// on block stacks whose outputs are known in closed form; the per-branch states and the counts
// of a request; a sequence-parallel group deciding as one rank.
#include "omnidp/models/pipelines/step_cache.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

using testing::on_group;

StepCacheConfig policy(CachePolicy p) {
  StepCacheConfig c;
  c.policy = p;
  return c;
}

// A stack of `count` blocks that add (i + 1) * scale to the video tokens and i + 1 to the text.
struct AddingStack {
  double scale = 1.0;
  int calls = 0;
  BlockStreams operator()(std::size_t i, BlockStreams in) {
    ++calls;
    const double add = static_cast<double>(i + 1);
    return {in.hidden + add * scale, in.context.defined() ? in.context + add : in.context};
  }
};

// One transformer forward through `cache`: the stack of 3 blocks on x (and a text stream).
torch::Tensor forward_once(StepCache& cache, const torch::Tensor& x, AddingStack& stack,
                           torch::Tensor* context = nullptr) {
  return cache.forward([&](StepCache* c) {
    BlockStreams in{x, context != nullptr ? *context : torch::Tensor()};
    auto out = run_blocks(c, in, 3, [&](std::size_t i, BlockStreams s) { return stack(i, s); });
    if (context != nullptr) *context = out.context;
    return out.hidden;
  });
}

TEST(StepCache, TaylorSeerComputesOnItsScheduleAndExtrapolatesExactlyALine) {
  StepCache cache(policy(CachePolicy::taylorseer), 12, 0, {}, nullptr);
  std::vector<torch::Tensor> outputs;
  for (int s = 0; s < 12; ++s) {
    // The transformer's output is 1 + 0.5 s: a first-order prediction is exact.
    outputs.push_back(cache.forward([&](StepCache*) {
      return torch::full({2, 3}, 1.0 + 0.5 * s, torch::kFloat32);
    }));
  }
  // Steps 0-2 warm up; then (s - 3 - 1) mod 5 == 0: 4 and 9 (Python's modulo: step 3 is cached).
  EXPECT_EQ(cache.decisions(), "CCCSCSSSSCSS");
  EXPECT_EQ(cache.computed(), 5);
  for (int s = 0; s < 12; ++s) {
    EXPECT_TRUE(torch::equal(outputs[static_cast<std::size_t>(s)],
                             torch::full({2, 3}, 1.0 + 0.5 * s, torch::kFloat32)))
        << "step " << s;
  }
}

TEST(StepCache, TaylorSeerOfOrderZeroRepeatsTheLastComputedOutput) {
  auto c = policy(CachePolicy::taylorseer);
  c.max_order = 0;
  c.cache_interval = 2;
  c.disable_cache_before_step = 1;
  StepCache cache(c, 6, 0, {}, nullptr);
  std::vector<double> got;
  for (int s = 0; s < 6; ++s) {
    got.push_back(cache
                      .forward([&](StepCache*) {
                        return torch::full({1}, static_cast<double>(s * s), torch::kFloat64);
                      })
                      .item<double>());
  }
  // (s - 2) mod 2 == 0: steps 2 and 4 compute.
  EXPECT_EQ(cache.decisions(), "CSCSCS");
  EXPECT_EQ(got, (std::vector<double>{0, 0, 4, 4, 16, 16}));
}

TEST(StepCache, FirstBlockSkipsTheRestWhileTheFirstResidualHoldsStill) {
  auto c = policy(CachePolicy::first_block);
  StepCache cache(c, 4, 0, {}, nullptr);
  AddingStack stack;
  const auto x = torch::zeros({1, 4, 2});
  auto text = torch::zeros({1, 2, 2});
  // The first forward computes; the first block's residual (1) then never changes: skipped,
  // and the skipped forward returns block 0's output + the other blocks' residual (2 + 3).
  const auto first = forward_once(cache, x, stack, &text);
  EXPECT_EQ(stack.calls, 3);
  const auto second = forward_once(cache, x + 10, stack, &text);
  EXPECT_EQ(stack.calls, 4);  // block 0 only
  EXPECT_TRUE(torch::equal(first, torch::full({1, 4, 2}, 6.0F)));
  EXPECT_TRUE(torch::equal(second, torch::full({1, 4, 2}, 16.0F)));
  EXPECT_TRUE(torch::equal(text, torch::full({1, 2, 2}, 12.0F)));  // 6 + 1 + (2 + 3)
  // A first-block residual 6 % larger than the cached one (> 0.05): all blocks run again.
  stack.scale = 1.06;
  (void)forward_once(cache, x, stack);
  EXPECT_EQ(stack.calls, 7);
  // 1 % larger than the residual of that computed forward: skipped.
  stack.scale = 1.06 * 1.01;
  (void)forward_once(cache, x, stack);
  EXPECT_EQ(cache.decisions(), "CSCS");
  EXPECT_EQ(cache.computed(), 2);
}

TEST(StepCache, FirstBlockNeedsTwoBlocks) {
  StepCache cache(policy(CachePolicy::first_block), 4, 0, {}, nullptr);
  try {
    (void)cache.forward([&](StepCache* c) {
      return run_blocks(c, {torch::zeros({1}), {}}, 1, [](std::size_t, BlockStreams s) { return s; })
          .hidden;
    });
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2 blocks"), std::string::npos);
  }
}

TEST(StepCache, MagCacheSkipsWithinItsErrorAndRunLengthAfterTheRetainedSteps) {
  auto c = policy(CachePolicy::magcache);
  c.max_skip_steps = 3;
  c.retention_ratio = 0.2;  // int(0.2 * 10 + 0.5) = 2 steps always computed
  StepCache cache(c, 10, 0, std::vector<double>(10, 1.0), nullptr);
  AddingStack stack;
  std::vector<torch::Tensor> outputs;
  for (int s = 0; s < 10; ++s) {
    outputs.push_back(forward_once(cache, torch::full({1, 2, 2}, static_cast<float>(s)), stack));
  }
  // Ratios of 1 accumulate no error: only the run length (at most 3 skips) forces a compute.
  EXPECT_EQ(cache.decisions(), "CCSSSCSSSC");
  // A skipped forward adds the stack's last residual (1 + 2 + 3) to its input.
  for (int s = 0; s < 10; ++s) {
    EXPECT_TRUE(torch::equal(outputs[static_cast<std::size_t>(s)],
                             torch::full({1, 2, 2}, static_cast<float>(s) + 6.0F)));
  }
}

TEST(StepCache, MagCacheComputesWhereTheRatiosAccumulateMoreThanTheThreshold) {
  auto c = policy(CachePolicy::magcache);
  c.retention_ratio = 0.0;
  // Step 1: |1 - 1.05| = 0.05 <= 0.06, skipped; step 2: ratio 1.05 * 1.02 = 1.071, error
  // 0.05 + 0.071 > 0.06: computed (and reset); step 3: |1 - 0.99| = 0.01: skipped.
  StepCache cache(c, 4, 0, {1.0, 1.05, 1.02, 0.99}, nullptr);
  AddingStack stack;
  for (int s = 0; s < 4; ++s) (void)forward_once(cache, torch::zeros({1, 1, 2}), stack);
  EXPECT_EQ(cache.decisions(), "CSCS");
}

TEST(StepCache, MagCacheCalibrationRecordsTheResidualNormRatios) {
  auto c = policy(CachePolicy::magcache);
  c.calibrate = true;
  StepCache cache(c, 3, 0, {}, nullptr);
  AddingStack stack;
  for (const double scale : {1.0, 2.0, 3.0}) {
    stack.scale = scale;
    (void)forward_once(cache, torch::zeros({1, 2, 4}), stack);
  }
  EXPECT_EQ(cache.decisions(), "CCC");
  ASSERT_EQ(cache.calibration().size(), 3U);
  EXPECT_DOUBLE_EQ(cache.calibration()[0], 1.0);
  EXPECT_NEAR(cache.calibration()[1], 2.0, 1e-6);
  EXPECT_NEAR(cache.calibration()[2], 1.5, 1e-6);
}

TEST(StepCache, MagCacheRatiosAreResampledAsDiffusersDoes) {
  EXPECT_EQ(nearest_interp({1, 2, 3, 4, 5}, 3), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(nearest_interp({1, 2, 3, 4, 5}, 4), (std::vector<double>{1, 2, 4, 5}));
  EXPECT_EQ(nearest_interp({7, 8}, 3), (std::vector<double>{7, 7, 8}));  // 0.5 rounds to even
  EXPECT_EQ(nearest_interp({7, 8}, 1), (std::vector<double>{8}));
  try {
    StepCache cache(policy(CachePolicy::magcache), 4, 0, {}, nullptr);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("calibrate: true"), std::string::npos);
  }
}

TEST(RequestCaches, OneStatePerTransformerAndBranchAndTheCounts) {
  RequestCaches caches(policy(CachePolicy::taylorseer), 6, nullptr);
  const auto run = [](StepCache*) { return torch::ones({1}); };
  for (int s = 0; s < 6; ++s) {
    (void)caches.forward(0, CfgBranch::conditional, s, run);
    if (s < 4) (void)caches.forward(0, CfgBranch::unconditional, s, run);
  }
  (void)caches.forward(1, CfgBranch::conditional, 5, run);
  EXPECT_EQ(caches.find(0, CfgBranch::conditional)->decisions(), "CCCSCS");
  EXPECT_EQ(caches.find(0, CfgBranch::unconditional)->decisions(), "CCCS");
  EXPECT_EQ(caches.find(1, CfgBranch::conditional)->decisions(), "C");
  EXPECT_EQ(caches.counts(), (ForwardCounts{11, 8}));
  EXPECT_EQ(caches.describe(),
            "transformer 0 cond CCCSCS, transformer 0 uncond CCCS, transformer 1 cond C");
  EXPECT_THROW((void)caches.forward(0, CfgBranch::both, 0, run), ModelError);

  RequestCaches off(StepCacheConfig{}, 6, nullptr);
  (void)off.forward(0, CfgBranch::both, 0, run);
  (void)off.forward(0, CfgBranch::conditional, 1, run);
  EXPECT_EQ(off.counts(), (ForwardCounts{3, 3}));
  EXPECT_EQ(off.describe(), "");
}

// Two sequence shards of one stack decide as the whole: shard 0's first-block residual
// changes by 20 %, shard 1's not at all, so the whole changes by 10 % (> 0.05), and both
// shards compute, although shard 1 alone would have skipped.
TEST(StepCache, FirstBlockShardsOfASequenceGroupDecideAsOne) {
  std::vector<std::string> decisions(2);
  on_group(
      2,
      [&](int rank, Collective& group) {
        StepCache cache(policy(CachePolicy::first_block), 2, 0, {}, &group);
        AddingStack stack;
        const auto x = torch::zeros({1, 4, 2});
        (void)forward_once(cache, x, stack);
        stack.scale = rank == 0 ? 1.2 : 1.0;
        (void)forward_once(cache, x, stack);
        decisions[static_cast<std::size_t>(rank)] = cache.decisions();
      },
      "sequence group");
  EXPECT_EQ(decisions[0], "CC");
  EXPECT_EQ(decisions[1], "CC");
}

}  // namespace
}  // namespace omnidp::models
