#include "omnidp/runtime/scheduler.hpp"

#include <gtest/gtest.h>

#include "omnidp/models/model_facts.hpp"
#include "omnidp/runtime/cost_model.hpp"
#include "runtime/small_request.hpp"

namespace omnidp::runtime {
namespace {

ModelInfo synthetic_info() {
  ModelConfig m;
  m.name = "synthetic";
  return describe_model(m);
}

using testing::small_request;

Request req(std::size_t index, int frames) { return small_request(index, frames); }

std::vector<Request> with_frames(const std::vector<int>& frames) {
  std::vector<Request> out;
  for (std::size_t i = 0; i < frames.size(); ++i) out.push_back(req(i, frames[i]));
  return out;
}

TEST(CostModel, PriorFeaturesAndExactCalibration) {
  const ModelInfo info = synthetic_info();
  // 33 frames -> 9 latent frames, 480x848 -> 30 x 53 tokens: 14310 tokens; CFG doubles passes.
  Request r = req(0, 33);
  r.height = 480;
  r.width = 848;
  r.num_inference_steps = 50;
  r.guidance_scale = 6.0;
  EXPECT_DOUBLE_EQ(latent_tokens(info, 33, 480, 848), 14310.0);
  const CostFeatures f = cost_features(info, r);
  EXPECT_DOUBLE_EQ(f.quadratic, 100.0 * 14310.0 * 14310.0);
  EXPECT_DOUBLE_EQ(f.linear, 100.0 * 14310.0);
  EXPECT_DOUBLE_EQ(prior_cost(info, r), 4.0 * f.quadratic + 24.0 * f.linear);

  CostModel model(info);
  EXPECT_FALSE(model.calibrated());
  // Durations from alpha = 2e-9 s, beta = 3e-6 s: the fit recovers them from two shapes.
  const double alpha = 2e-9;
  const double beta = 3e-6;
  for (int frames : {5, 33, 121}) {
    const CostFeatures g = model.features(req(0, frames));
    model.observe(g, alpha * g.quadratic + beta * g.linear);
  }
  EXPECT_NEAR(model.fitted().a, alpha, alpha * 1e-9);
  EXPECT_NEAR(model.fitted().b, beta, beta * 1e-9);
  const CostFeatures h = model.features(req(0, 65));
  EXPECT_NEAR(model.estimate(h), alpha * h.quadratic + beta * h.linear, 1e-12);
}

TEST(CostModel, OneShapeScalesThePrior) {
  CostModel model(synthetic_info());
  const CostFeatures f = model.features(req(0, 9));
  model.observe(f, 2.0);
  model.observe(f, 2.0);  // collinear: only the scale can be fitted
  EXPECT_NEAR(model.estimate(f), 2.0, 1e-12);
  EXPECT_NEAR(model.fitted().a / model.fitted().b, 4.0 / 24.0, 1e-12);
  Request bad = req(1, 9);
  bad.input_error = "missing image";
  EXPECT_EQ(model.features(bad).quadratic, 0.0);
}

TEST(WorkQueue, RoundRobinIsIndexModuloReplicas) {
  const CostModel cost(synthetic_info());
  SchedulerConfig cfg;
  cfg.policy = SchedulerPolicy::round_robin;
  VectorSource source(with_frames({5, 121, 9, 33, 5, 5, 65}));
  WorkQueue q(cfg, 3, source, cost);
  // Replica 2 asks first: it gets request 2, the reader buffers 0 and 1 for the others.
  EXPECT_EQ(q.next_for(2)->request.index, 2U);
  EXPECT_EQ(q.buffered(), 2U);
  EXPECT_EQ(q.next_for(2)->request.index, 5U);
  EXPECT_EQ(q.next_for(0)->request.index, 0U);
  EXPECT_EQ(q.next_for(0)->request.index, 3U);
  EXPECT_EQ(q.next_for(0)->request.index, 6U);
  EXPECT_EQ(q.next_for(0), std::nullopt);
  EXPECT_EQ(q.next_for(2), std::nullopt);
  EXPECT_FALSE(q.exhausted());
  EXPECT_EQ(q.next_for(1)->request.index, 1U);
  EXPECT_EQ(q.next_for(1)->request.index, 4U);
  EXPECT_EQ(q.next_for(1), std::nullopt);
  EXPECT_TRUE(q.exhausted());
}

TEST(WorkQueue, CostDescServesTheBiggestFirst) {
  const CostModel cost(synthetic_info());
  SchedulerConfig cfg;  // dynamic, cost_desc, lookahead 4096
  VectorSource source(with_frames({5, 121, 9, 33, 5, 65}));
  WorkQueue q(cfg, 2, source, cost);
  std::vector<std::size_t> order;
  while (auto item = q.next_for(static_cast<int>(order.size() % 2)))
    order.push_back(item->request.index);
  // 121 > 65 > 33 > 9 > 5 = 5 (ties: manifest order).
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 5, 3, 2, 0, 4}));
  EXPECT_EQ(q.peak_buffered(), 6U);
  EXPECT_TRUE(q.exhausted());
}

// Requests of 4 adapter sets interleaved in the manifest: each replica keeps the set it holds
// while the window has one of it, so it switches sets at most once per set, not per request;
// without adapters the order is cost_desc's.
TEST(WorkQueue, ReplicasKeepTheirAdapterSetWhileTheWindowHasOne) {
  const CostModel cost(synthetic_info());
  SchedulerConfig cfg;
  std::vector<Request> requests;
  for (std::size_t i = 0; i < 32; ++i) {
    Request r = req(i, i % 3 == 0 ? 33 : 9);
    r.lora = {LoraAdapter{.path = "s",
                          .scale = 1.0,
                          .expert = std::nullopt,
                          .sha256 = std::string(64, static_cast<char>('a' + i % 4))}};
    requests.push_back(std::move(r));
  }
  VectorSource source(requests);
  WorkQueue q(cfg, 2, source, cost);
  std::vector<std::vector<std::string>> sets(2);
  std::size_t served = 0;
  for (int replica = 0;; replica = 1 - replica) {
    auto item = q.next_for(replica);
    if (!item) break;
    ++served;
    sets[static_cast<std::size_t>(replica)].push_back(item->adapters);
  }
  EXPECT_EQ(served, 32U);
  for (const auto& seq : sets) {
    int switches = 0;
    for (std::size_t i = 1; i < seq.size(); ++i) switches += seq[i] != seq[i - 1] ? 1 : 0;
    EXPECT_LE(switches, 4) << "a replica switched adapter sets " << switches << " times";
  }
  // The first request each replica gets is the most expensive one (cost_desc's first pick).
  EXPECT_EQ(sets[0].front(), describe_lora(requests[0].lora));
}

TEST(WorkQueue, LookaheadBoundsTheWindow) {
  const CostModel cost(synthetic_info());
  SchedulerConfig cfg;
  cfg.lookahead = 2;
  VectorSource source(with_frames({5, 33, 9, 121, 5}));
  WorkQueue q(cfg, 1, source, cost);
  std::vector<std::size_t> order;
  while (auto item = q.next_for(0)) order.push_back(item->request.index);
  // Windows: {0,1} -> 1; {0,2} -> 2; {0,3} -> 3; {0,4} -> 0 (tie, earlier); {4} -> 4.
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 2, 3, 0, 4}));
  EXPECT_EQ(q.peak_buffered(), 2U);
}

TEST(WorkQueue, ManifestOrderReadsOneAtATime) {
  const CostModel cost(synthetic_info());
  const SchedulerConfig cfg = testing::manifest_order();
  VectorSource source(with_frames({5, 121, 9}));
  WorkQueue q(cfg, 4, source, cost);
  EXPECT_EQ(q.next_for(3)->request.index, 0U);
  EXPECT_EQ(q.next_for(0)->request.index, 1U);
  EXPECT_EQ(q.next_for(0)->request.index, 2U);
  EXPECT_EQ(q.peak_buffered(), 1U);
  EXPECT_EQ(q.next_for(0), std::nullopt);
}

TEST(WorkQueue, RetriesGoFirstAndToAnotherReplica) {
  const CostModel cost(synthetic_info());
  const SchedulerConfig cfg = testing::manifest_order();
  VectorSource source(with_frames({5, 9, 13}));
  WorkQueue q(cfg, 2, source, cost);
  auto first = q.next_for(0);
  ASSERT_TRUE(first);
  first->attempt = 2;
  q.retry(std::move(*first), 0);
  // Replica 0 failed it: replica 0 gets new work, replica 1 gets the retry.
  EXPECT_EQ(q.next_for(0)->request.index, 1U);
  auto retried = q.next_for(1);
  EXPECT_EQ(retried->request.index, 0U);
  EXPECT_EQ(retried->attempt, 2);
  EXPECT_EQ(retried->avoid_replica, 0);
  // With a single replica the retry goes back to it.
  VectorSource one(with_frames({5}));
  WorkQueue single(cfg, 1, one, cost);
  auto item = single.next_for(0);
  single.retry(std::move(*item), 0);
  EXPECT_EQ(single.next_for(0)->request.index, 0U);
}

}  // namespace
}  // namespace omnidp::runtime
