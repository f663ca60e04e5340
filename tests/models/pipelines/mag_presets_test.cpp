// MagCache's published calibrations: each preset as the authors wrote it (length, the padding
// of step 0, cond and uncond apart), the preset a request of each checkpoint takes, and a
// request's caches taking each branch's ratios from it.
#include "omnidp/models/pipelines/mag_presets.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "omnidp/models/pipelines/step_cache.hpp"

namespace omnidp::models {
namespace {

TEST(MagCachePresets, EachHoldsTwoRatiosPerStepAfterTheFirst) {
  std::set<std::string_view> names;
  for (const auto& p : mag_cache_presets()) {
    SCOPED_TRACE(std::string(p.name));
    EXPECT_TRUE(names.insert(p.name).second);
    EXPECT_EQ(p.interleaved.size(), static_cast<std::size_t>(2 * p.steps - 2));
    for (const auto b : {CfgBranch::conditional, CfgBranch::unconditional}) {
      const auto ratios = p.branch(b);
      ASSERT_EQ(ratios.size(), static_cast<std::size_t>(p.steps));
      EXPECT_EQ(ratios.front(), 1.0);
      for (const double r : ratios) EXPECT_TRUE(r > 0.5 && r < 1.1) << r;
    }
    EXPECT_GT(p.threshold, 0.0);
    EXPECT_GT(p.max_skip_steps, 0);
  }
  EXPECT_EQ(names.size(), 10U);
}

// Figures as published: the A14B arrays dip where the low-noise expert takes over (step 26 of
// 40 at shift 12 for T2V, step 15 at shift 5 for I2V), cond before uncond.
TEST(MagCachePresets, TheFiguresAreThePublishedOnes) {
  const auto* t2v = find_mag_cache_preset("wan2.2-t2v-a14b", 40, false, 480, 832);
  ASSERT_NE(t2v, nullptr);
  EXPECT_EQ(t2v->branch(CfgBranch::conditional)[26], 0.65523);
  EXPECT_EQ(t2v->branch(CfgBranch::unconditional)[26], 0.65252);
  EXPECT_EQ(t2v->branch(CfgBranch::conditional)[1], 1.00124);
  EXPECT_EQ(t2v->branch(CfgBranch::unconditional)[39], 0.80181);
  const auto* i2v = find_mag_cache_preset("wan2.2-i2v-a14b", 40, true, 480, 832);
  ASSERT_NE(i2v, nullptr);
  EXPECT_EQ(i2v->branch(CfgBranch::conditional)[15], 0.91076);
  EXPECT_EQ(i2v->branch(CfgBranch::unconditional)[15], 0.91046);
  EXPECT_EQ(i2v->retention_ratio, 0.1);
  const auto* hv = find_mag_cache_preset("hunyuanvideo-1.5", 50, false, 0, 0);
  ASSERT_NE(hv, nullptr);
  EXPECT_EQ(hv->name, "hunyuanvideo-1.5-40steps");
  EXPECT_EQ(hv->branch(CfgBranch::conditional)[1], 1.04199);
  EXPECT_EQ(hv->branch(CfgBranch::unconditional)[1], 1.01953);
}

TEST(MagCachePresets, ARequestTakesThePresetOfItsCheckpointImageAndSize) {
  const auto name = [](std::string_view checkpoint, int steps, bool image, int h, int w) {
    const auto* p = find_mag_cache_preset(checkpoint, steps, image, h, w);
    return p == nullptr ? std::string("none") : std::string(p->name);
  };
  EXPECT_EQ(name("wan2.2-ti2v-5b", 50, false, 704, 1280), "wan2.2-ti2v-5b-t2v");
  EXPECT_EQ(name("wan2.2-ti2v-5b", 30, true, 704, 1280), "wan2.2-ti2v-5b-i2v");
  EXPECT_EQ(name("wan2.1-i2v-14b", 40, true, 480, 832), "wan2.1-i2v-14b-480p");
  EXPECT_EQ(name("wan2.1-i2v-14b", 40, true, 720, 1280), "wan2.1-i2v-14b-720p");
  EXPECT_EQ(name("wan2.1-t2v-1.3b", 50, false, 480, 832), "wan2.1-t2v-1.3b");
  EXPECT_EQ(name("wan2.1-t2v-14b", 50, false, 720, 1280), "wan2.1-t2v-14b");
  EXPECT_EQ(name("hunyuanvideo-1.5", 8, false, 0, 0), "hunyuanvideo-1.5-20steps");
  EXPECT_EQ(name("hunyuanvideo-1.5", 20, false, 0, 0), "hunyuanvideo-1.5-20steps");
  EXPECT_EQ(name("hunyuanvideo-1.5", 21, false, 0, 0), "hunyuanvideo-1.5-40steps");
  EXPECT_EQ(name("", 50, false, 480, 832), "none");
  EXPECT_EQ(name("wan2.1-flf2v-14b", 50, true, 720, 1280), "none");
}

// magcache without mag_ratios: each branch its own ratios from the preset (resampled to the
// request's steps); the decisions say which preset; explicit mag_ratios win.
TEST(MagCachePresets, ARequestsCachesTakeEachBranchsRatios) {
  MagCachePreset preset;
  preset.name = "test";
  preset.steps = 4;
  preset.interleaved = {1.05, 1.0, 1.02, 1.0, 0.99, 1.0};  // cond 1, 1.05, 1.02, 0.99; uncond 1s
  StepCacheConfig c;
  c.policy = CachePolicy::magcache;
  c.retention_ratio = 0.0;
  const auto run = [](StepCache* cache) {
    return run_blocks(cache, BlockStreams{torch::zeros({1, 1, 2}), {}}, 2,
                      [](std::size_t i, BlockStreams s) {
                        return BlockStreams{s.hidden + static_cast<double>(i + 1), {}};
                      })
        .hidden;
  };
  RequestCaches caches(c, 4, nullptr, &preset);
  for (int s = 0; s < 4; ++s) {
    (void)caches.forward(0, CfgBranch::conditional, s, run);
    (void)caches.forward(0, CfgBranch::unconditional, s, run);
  }
  // cond as StepCache.MagCacheComputesWhereTheRatiosAccumulateMoreThanTheThreshold; uncond's
  // ratios of 1 skip until max_skip_steps (3).
  EXPECT_EQ(caches.describe(),
            "ratios of preset test: transformer 0 cond CSCS, transformer 0 uncond CSSS");
  c.mag_ratios = {1.0, 1.0, 1.0, 1.0};
  RequestCaches given(c, 4, nullptr, &preset);
  for (int s = 0; s < 4; ++s) (void)given.forward(0, CfgBranch::conditional, s, run);
  EXPECT_EQ(given.describe(), "transformer 0 cond CSSS");
}

}  // namespace
}  // namespace omnidp::models
