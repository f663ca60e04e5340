// The test-only rank-kill faults as sink decorators: off unless they name this rank. (The
// kills themselves run under mpirun: mpi_job_test.cpp, "faults.kill_rank".)
#include "omnidp/runtime/faults.hpp"

#include <gtest/gtest.h>

#include "job_test_support.hpp"

namespace omnidp::runtime {
namespace {

using testing::MemoryResults;
using testing::MemorySink;

TEST(Faults, KillAfterWritesLeavesTheSinkAsItIsUnlessItNamesThisRank) {
  auto results = std::make_shared<MemoryResults>();
  FaultConfig faults;  // the defaults: off
  auto sink = std::make_unique<MemorySink>(results, 0);
  ResultSink* const raw = sink.get();
  auto same = with_kill_after_writes(std::move(sink), faults, 0);
  EXPECT_EQ(same.get(), raw);

  faults.kill_rank = 1;
  faults.kill_after = 2;
  same = with_kill_after_writes(std::move(same), faults, 0);  // another rank
  EXPECT_EQ(same.get(), raw);
  faults.kill_rank = 0;
  faults.kill_in_write = true;  // the RankWriter's hook kills instead
  same = with_kill_after_writes(std::move(same), faults, 0);
  EXPECT_EQ(same.get(), raw);
}

TEST(Faults, KillAfterWritesForwardsTheWritesBeforeItsLimit) {
  auto results = std::make_shared<MemoryResults>();
  FaultConfig faults;
  faults.kill_rank = 3;
  faults.kill_after = 2;
  auto sink = with_kill_after_writes(std::make_unique<MemorySink>(results, 3), faults, 3);
  ResultRecord r;
  r.id = "a";
  sink->write(r, nullptr);  // the first write of two: the process lives on
  sink->close();
  ASSERT_EQ(results->rows.size(), 1U);
  EXPECT_EQ(results->rows[0].id, "a");
  EXPECT_EQ(results->closed, std::vector<int>{3});
}

TEST(Faults, KillInWriteHookOnlyOnTheNamedRank) {
  FaultConfig faults;
  EXPECT_FALSE(kill_in_write_hook(faults, 0));
  faults.kill_rank = 1;
  faults.kill_after = 1;
  EXPECT_FALSE(kill_in_write_hook(faults, 1));  // kill_in_write not set
  faults.kill_in_write = true;
  EXPECT_FALSE(kill_in_write_hook(faults, 0));
  EXPECT_TRUE(kill_in_write_hook(faults, 1));
}

}  // namespace
}  // namespace omnidp::runtime
