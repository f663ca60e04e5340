#include "omnidp/runtime/dispatch.hpp"

#include <gtest/gtest.h>

namespace omnidp::runtime {
namespace {

ReplicaLoad idle(int slots = 2) {
  ReplicaLoad r;
  r.ready = true;
  r.slots = slots;
  return r;
}

ReplicaLoad running(double cost, bool pull = false, int slots = 2) {
  ReplicaLoad r = idle(slots);
  r.in_model = 1;
  r.outstanding = 1;
  r.outstanding_cost = cost;
  r.pull = pull;
  return r;
}

TEST(DispatchPolicy, IdleReplicasFirstThenTheLeastWorkThenTheIndex) {
  const DispatchPolicy policy(SchedulerPolicy::dynamic);
  const std::vector<ReplicaLoad> replicas = {running(5.0, true), idle(), running(2.0, true), idle(),
                                             running(9.0, false)};
  // Replica 4 runs and has not pulled: it waits; the others in order.
  EXPECT_EQ(policy.candidates(replicas, 100), (std::vector<int>{1, 3, 2, 0}));
}

TEST(DispatchPolicy, AtTheTailNothingQueuesBehindARunningRequest) {
  const std::vector<ReplicaLoad> replicas = {running(5.0, true), idle(), running(2.0, true)};
  const DispatchPolicy dynamic(SchedulerPolicy::dynamic);
  EXPECT_EQ(dynamic.candidates(replicas, 3), (std::vector<int>{1}));  // 3 left, 3 replicas
  EXPECT_EQ(dynamic.candidates(replicas, 4), (std::vector<int>{1, 2, 0}));
  // round_robin has no tail rule: its placement does not depend on timing.
  const DispatchPolicy round_robin(SchedulerPolicy::round_robin);
  EXPECT_EQ(round_robin.candidates(replicas, 1), (std::vector<int>{1, 2, 0}));
}

TEST(DispatchPolicy, NotReadyClosedFullOrBackloggedReplicasGetNothing) {
  const DispatchPolicy policy(SchedulerPolicy::dynamic);
  ReplicaLoad not_ready = idle();
  not_ready.ready = false;
  ReplicaLoad closed = idle();
  closed.closed = true;
  ReplicaLoad full = running(1.0, true, 1);  // slots 1: no prefetch slot
  ReplicaLoad backlogged = idle();
  backlogged.outstanding = 2 + DispatchPolicy::kWriteBacklog;  // generated, not yet durable
  EXPECT_TRUE(policy.candidates({not_ready, closed, full, backlogged}, 100).empty());
  backlogged.outstanding -= 1;
  EXPECT_EQ(policy.candidates({not_ready, closed, full, backlogged}, 100), (std::vector<int>{3}));
}

TEST(DeadlineGate, WhenAModelIsFree) {
  ReplicaLoad r = running(0.0);
  r.model_since = 100.0;
  EXPECT_EQ(DeadlineGate::model_free_at(110.0, idle(), {}), 110.0);
  // Running 30 s of an estimated 50, then 20 s queued: free in 20 + 20.
  r.in_model = 2;
  EXPECT_DOUBLE_EQ(DeadlineGate::model_free_at(130.0, r, {50.0, 20.0}), 170.0);
  // Over its estimate: the running one counts as ending now.
  EXPECT_DOUBLE_EQ(DeadlineGate::model_free_at(200.0, r, {50.0, 20.0}), 220.0);
}

TEST(DeadlineGate, CalibratedRequestsMustEndByTheDeadlineMinusTheMargin) {
  const DeadlineGate gate(1000.0, 100.0);  // the limit is 900
  const ReplicaLoad r = running(1.0);
  EXPECT_EQ(gate.decide(800.0, 0, r, "a", 50.0, 850.0).fit, DeadlineGate::Fit::yes);
  EXPECT_EQ(gate.decide(800.0, 0, r, "a", 50.0, 850.0001).fit, DeadlineGate::Fit::no);
  const auto no = gate.decide(800.0, 3, r, "big", 150.0, 800.0);
  EXPECT_EQ(no.fit, DeadlineGate::Fit::no);
  EXPECT_EQ(no.why,
            "coordinator: deadline: replica 3 gets no more work: request 'big' (estimated 150 s) "
            "would end in 150 s, the deadline minus the margin of 100 s is in 100 s");
  EXPECT_EQ(gate.decide(950.0, 0, idle(), "late", 1.0, 950.0).why,
            "coordinator: deadline: replica 0 gets no more work: request 'late' (estimated 1 s) "
            "would end in 1 s, the deadline minus the margin of 100 s is -50 s (passed)");
}

TEST(DeadlineGate, BeforeCalibrationOneRequestPerReplicaUntilTheLimit) {
  const DeadlineGate gate(1000.0, 100.0);
  EXPECT_EQ(gate.decide(800.0, 0, idle(), "a", std::nullopt, 800.0).fit, DeadlineGate::Fit::yes);
  EXPECT_EQ(gate.decide(800.0, 0, running(1.0), "a", std::nullopt, 800.0).fit,
            DeadlineGate::Fit::wait);
  const auto passed = gate.decide(900.0, 1, idle(), "a", std::nullopt, 900.0);
  EXPECT_EQ(passed.fit, DeadlineGate::Fit::no);
  EXPECT_EQ(passed.why,
            "coordinator: deadline: replica 1 gets no more work: request 'a' the deadline minus "
            "the margin of 100 s is in 0 s");
}

}  // namespace
}  // namespace omnidp::runtime
