#include "omnidp/models/synthetic.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"
#include "request_shape.hpp"

namespace omnidp::models {
namespace {

// The reference generator, written out independently of the implementation.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

Request request(const std::string& id, std::uint64_t seed, int frames, int h, int w, int steps) {
  Request r = test::sized_request(frames, h, w, steps, 6.0, 0.0);
  r.id = id;
  r.seed = seed;
  return r;
}

TEST(SyntheticVideo, CounterModeBytes) {
  const Video v = synthetic_video(7, 5, 16, 32);
  ASSERT_EQ(v.frames, 5);
  ASSERT_EQ(v.height, 16);
  ASSERT_EQ(v.width, 32);
  ASSERT_EQ(v.data.size(), 5U * 16U * 32U * 3U);
  std::uint64_t key = mix(7);
  key = mix(key ^ 5U);
  key = mix(key ^ 16U);
  key = mix(key ^ 32U);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8},
                        std::size_t{4093}, v.data.size() - 1}) {
    EXPECT_EQ(v.data[i], static_cast<std::uint8_t>(mix(key + i / 8) >> (8 * (i % 8)))) << i;
  }
  EXPECT_EQ(video_sha256(v), video_sha256(synthetic_video(7, 5, 16, 32)));  // deterministic
  EXPECT_NE(video_sha256(v), video_sha256(synthetic_video(8, 5, 16, 32)));
  EXPECT_NE(video_sha256(v), video_sha256(synthetic_video(7, 9, 16, 32)));
  EXPECT_THROW((void)synthetic_video(7, 0, 16, 32), ModelError);
}

// Computed independently (a Python transcription of the documented generator), so that the
// format cannot drift silently: stored results would stop matching.
TEST(SyntheticVideo, PinnedDigest) {
  EXPECT_EQ(video_sha256(synthetic_video(42, 1, 16, 16)),
            "0c44efa89d3574e6b5b7b2c389bbfbc918fad27c202b074203de43697cdc9c89");
}

Config config_with(double seconds_per_gcost) {
  Config c;
  c.model.name = "synthetic";
  c.synthetic.seconds_per_gcost = seconds_per_gcost;
  return c;
}

TEST(SyntheticPipeline, TimeIsProportionalToTheCost) {
  const Config c = config_with(2.0);
  const Request r = request("a", 1, 33, 480, 848, 50);
  // 14310 tokens, 100 passes: 4 x 100 x 14310^2 + 24 x 100 x 14310 cost units.
  const double cost = 4.0 * 100 * 14310.0 * 14310.0 + 24.0 * 100 * 14310.0;
  EXPECT_DOUBLE_EQ(prior_cost(describe_model(c.model), r), cost);
  EXPECT_DOUBLE_EQ(synthetic_seconds(c, r), 2.0 * cost / 1e9);
}

TEST(SyntheticPipeline, GeneratesReportsStepsAndHonoursFaults) {
  Config c = config_with(0.0);
  c.faults.fail_ids = {"bad"};
  c.faults.transient_fail_ids = {"flaky"};
  c.faults.hang_ids = {"hang"};
  SyntheticPipeline p(c, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  EXPECT_EQ(p.model_name(), "synthetic");
  EXPECT_EQ(p.device_name(), "cpu");

  GenerateContext ctx;
  std::vector<int> steps;
  ctx.on_step = [&](int step, int total) {
    EXPECT_EQ(total, 3);
    steps.push_back(step);
  };
  const Video v = p.generate(request("ok", 3, 9, 16, 32, 3), ctx);
  EXPECT_EQ(video_sha256(v), video_sha256(synthetic_video(3, 9, 16, 32)));
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3}));

  try {
    (void)p.generate(request("bad", 1, 5, 16, 16, 1), GenerateContext{});
    FAIL();
  } catch (const TransientModelError&) {
    FAIL() << "a permanent failure must not be transient";
  } catch (const ModelError& e) {
    EXPECT_STREQ(e.what(), "request bad: synthetic failure injected (faults.fail_ids)");
  }
  GenerateContext first;
  first.attempt = 1;
  EXPECT_THROW((void)p.generate(request("flaky", 1, 5, 16, 16, 1), first), TransientModelError);
  GenerateContext second;
  second.attempt = 2;
  EXPECT_EQ(p.generate(request("flaky", 1, 5, 16, 16, 1), second).frames, 5);

  // A hung request returns only once abandoned.
  GenerateContext abandon;
  int polls = 0;
  abandon.abandoned = [&] { return ++polls >= 3; };
  try {
    (void)p.generate(request("hang", 1, 5, 16, 16, 1), abandon);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_STREQ(e.what(), "request hang: abandoned while hanging (faults.hang_ids)");
  }
  EXPECT_EQ(polls, 3);
}

TEST(SyntheticPipeline, AbandonedBetweenSteps) {
  Config c = config_with(0.0);
  SyntheticPipeline p(c, DeviceBinding{});
  GenerateContext ctx;
  int polls = 0;
  ctx.abandoned = [&] { return ++polls > 2; };
  try {
    (void)p.generate(request("x", 1, 5, 16, 16, 4), ctx);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_STREQ(e.what(), "request x: abandoned at step 3/4");
  }
}

}  // namespace
}  // namespace omnidp::models
