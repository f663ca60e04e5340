// What a rank's actors share: their roles from the topology, the errors they carry.
#include "omnidp/runtime/actor.hpp"

#include <gtest/gtest.h>

#include "actor_test_support.hpp"

namespace omnidp::runtime {
namespace {

using testing::ActorHarness;

TEST(ActorContext, RolesFollowTheTopology) {
  JobOptions o;
  ActorHarness alone(o);
  EXPECT_EQ(alone.context->rank, 0);
  EXPECT_EQ(alone.context->replica, 0);
  EXPECT_TRUE(alone.context->leader);
  EXPECT_FALSE(alone.context->member);

  o.config.parallel.coordinator_runs_work = false;
  ActorHarness coordinator_only(o, 2);  // rank 0 only coordinates
  EXPECT_EQ(coordinator_only.context->replica, -1);
  EXPECT_FALSE(coordinator_only.context->leader);
  EXPECT_FALSE(coordinator_only.context->member);
}

TEST(ActorContext, PostQueuesAMessageForTheCommThread) {
  ActorHarness h{JobOptions{}};
  h.context->post(3, GeneratedMsg{"r1"});
  const auto messages = ActorHarness::messages(h.events());
  ASSERT_EQ(messages.size(), 1U);
  EXPECT_EQ(messages[0].dest, 3);
  EXPECT_EQ(std::get<GeneratedMsg>(messages[0].message), GeneratedMsg{"r1"});
}

TEST(ActorContext, ClockIsTheInjectedOne) {
  JobOptions o;
  o.clock = [] { return 123.5; };
  ActorHarness h(o);
  EXPECT_EQ(h.context->clock_s(), 123.5);
}

TEST(ErrorInfoOf, KeepsTheKindOfAnOmnidpError) {
  EXPECT_EQ(error_info(std::make_exception_ptr(ModelError("nan in the latents"))),
            (ErrorInfo{ErrorKind::model, "nan in the latents"}));
  EXPECT_EQ(error_info(std::make_exception_ptr(std::out_of_range("index 9"))),
            (ErrorInfo{ErrorKind::runtime, "index 9"}));
  EXPECT_EQ(error_info(std::make_exception_ptr(42)),
            (ErrorInfo{ErrorKind::runtime, "unknown exception"}));
}

}  // namespace
}  // namespace omnidp::runtime
