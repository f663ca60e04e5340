#include "omnidp/results/attempt_log.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

// Issue 39, class 6: a request that hangs or kills its rank ended every run before its row,
// so a requeued job ran it forever. Its attempts are logged across runs and ranks.
TEST(AttemptLog, AttemptsStartedAndNeverEndedAreCountedAcrossRunsAndRanks) {
  ScratchDir dir("attempts");
  {
    AttemptLog run1(dir.path(), 0);  // run 1: "hang" interrupted, "ok" ended
    run1.started("hang", "k1", 1);
    run1.started("ok", "k2", 1);
    run1.ended("ok", "k2", 1);
  }
  {
    AttemptLog run2(dir.path(), 0);  // run 2 appends: "hang" interrupted again
    run2.started("hang", "k1", 2);
    AttemptLog other_rank(dir.path(), 1);  // a retry on rank 1 that ended, then one cut short
    other_rank.started("retry", "k3", 1);
    other_rank.ended("retry", "k3", 1);
    other_rank.started("retry", "k3", 2);
  }
  {  // a line torn by a kill, and one with the old input key of "hang"
    std::ofstream out(attempt_log_path(dir.path(), 1), std::ios::app | std::ios::binary);
    out << "start\t1\tk0\thang\nstart\t3\tk1\tha";
  }
  const auto logs = read_attempt_logs(dir.path());
  ASSERT_EQ(logs.size(), 4U);
  EXPECT_EQ(logs.at(attempt_key("hang", "k1")).last_attempt, 2);
  EXPECT_EQ(logs.at(attempt_key("hang", "k1")).interrupted, 2);
  EXPECT_EQ(logs.at(attempt_key("hang", "k0")).interrupted, 1);
  EXPECT_EQ(logs.at(attempt_key("ok", "k2")).last_attempt, 1);
  EXPECT_EQ(logs.at(attempt_key("ok", "k2")).interrupted, 0);
  EXPECT_EQ(logs.at(attempt_key("retry", "k3")).last_attempt, 2);
  EXPECT_EQ(logs.at(attempt_key("retry", "k3")).interrupted, 1);
  EXPECT_EQ(attempt_log_path(dir.path(), 3), dir.path() / "attempts-rank-00003.log");
  EXPECT_TRUE(read_attempt_logs(dir.path() / "missing").empty());
}

}  // namespace
}  // namespace omnidp::results
