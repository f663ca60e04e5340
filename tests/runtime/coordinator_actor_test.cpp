// The coordinator actor alone: the pre-start pass before Start, and a job that cannot start
// ending with Finish{error} on every rank.
#include "omnidp/runtime/coordinator_actor.hpp"

#include <gtest/gtest.h>

#include "actor_test_support.hpp"
#include "job_test_support.hpp"

namespace omnidp::runtime {
namespace {

using testing::ActorHarness;
using testing::MemoryResults;
using testing::TempDir;

// Rank 0 of two, on a manifest of `requests` synthetic requests in `dir`.
ActorHarness two_ranks(const TempDir& dir, int requests) {
  return ActorHarness(testing::synthetic_job(testing::write_manifest(dir.path(), requests),
                                             dir.path() / "out", std::make_shared<MemoryResults>()),
                      2);
}

TEST(CoordinatorActor, ReadsTheManifestThenStartsEveryRank) {
  TempDir dir("coordinator-actor-start");
  ActorHarness h = two_ranks(dir, 3);
  Mailbox<Envelope> inbox;
  inbox.close();  // the rank stops at once: the actor returns after Start
  CoordinatorActor actor(*h.context, inbox);
  actor.run();

  EXPECT_EQ(actor.error(), nullptr);
  const auto messages = ActorHarness::messages(h.events());
  ASSERT_EQ(messages.size(), 2U);  // every other rank first, rank 0 last
  EXPECT_EQ(messages[0].dest, 1);
  EXPECT_EQ(std::get<StartMsg>(messages[0].message), StartMsg{3});
  EXPECT_EQ(messages[1].dest, 0);
  EXPECT_EQ(std::get<StartMsg>(messages[1].message), StartMsg{3});
  // A job writes its output only after Start.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST(CoordinatorActor, AJobThatCannotStartFinishesEveryRankWithItsError) {
  TempDir dir("coordinator-actor-empty");
  ActorHarness h = two_ranks(dir, 0);
  Mailbox<Envelope> inbox;
  CoordinatorActor actor(*h.context, inbox);
  actor.run();

  ASSERT_NE(actor.error(), nullptr);
  const ErrorInfo error = error_info(actor.error());
  EXPECT_EQ(error.kind, ErrorKind::manifest);
  const auto messages = ActorHarness::messages(h.events());
  ASSERT_EQ(messages.size(), 2U);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i].dest, i == 0 ? 1 : 0);
    const auto& finish = std::get<FinishMsg>(messages[i].message);
    EXPECT_TRUE(finish.has_error);
    EXPECT_EQ(finish.error, error);
    EXPECT_EQ(finish.exit_code, static_cast<int>(ExitCode::usage));
  }
}

}  // namespace
}  // namespace omnidp::runtime
