#include "omnidp/results/attempt_log.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "child_process.hpp"
#include "omnidp/common/error.hpp"
#include "results/odd_files.hpp"
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

// Issue 52, classes 3 and 5: a FIFO named like a rank's attempt log blocked its worker (a 2-rank
// job never ended); the logs' folder walk threw on a link loop. The log of each member is
// refused at once, never opened blocking; the reader counts the other logs and names it.
TEST(AttemptLog, ANonFileUnderALogsNameIsRefusedNeverBlocks) {
  for (const testing::Odd kind : testing::odd_kinds()) {
    // A dangling link is followed: the log is created at its target, as any file created
    // through a link is.
    if (kind == testing::Odd::dangling_link) continue;
    SCOPED_TRACE(testing::odd_name(kind));
    ScratchDir dir("attempts-odd");
    {
      AttemptLog log(dir.path(), 0);
      log.started("hang", "k1", 1);
    }
    const auto path = attempt_log_path(dir.path(), 1);
    testing::make_odd(path, kind);
    testing::make_odd(dir.path() / "junk", kind);
    const auto o = test::run_in_child([&] {
      try {
        AttemptLog log(dir.path(), 1);
        return 2;  // opened
      } catch (const IoError& e) {
        std::cout << e.what() << "\n";
      }
      const auto logs = read_attempt_logs(dir.path());
      return logs.size() == 1 && logs.at(attempt_key("hang", "k1")).interrupted == 1 ? 0 : 1;
    });
    ASSERT_EQ(o.code, 0) << test::describe(o);
    EXPECT_EQ(o.out,
              path.string() + ": cannot open the attempt log: " + testing::odd_problem(kind) + "\n");
    EXPECT_NE(o.err.find("resume: " + path.string() + ": cannot read the attempt log: " +
                         testing::odd_problem(kind) + "; its attempts are not counted"),
              std::string::npos)
        << o.err;
  }
}

// Issue 52, class 1: a kill of rank 1 (twice) made every rerun refuse the request rank 0 was
// running when mpirun ended the job. Only an attempt cut short by its own rank's end counts:
// a rank told to stop from outside notes the signal, and what it leaves unended in that run
// is excused; an abort for a request past its timeout counts whatever follows it.
TEST(AttemptLog, OnlyAnAttemptCutShortByItsOwnRanksEndCounts) {
  ScratchDir dir("attempts-blame");
  for (int run = 1; run <= 2; ++run) {
    AttemptLog rank0(dir.path(), 0);  // mpirun's SIGTERM while "big" runs: excused
    rank0.started("big", "kb", run);
    rank0.make_current();
    AttemptLog::note_signal(15);
    AttemptLog rank1(dir.path(), 1);  // its rank dies unannounced (SIGKILL, OOM): counts
    rank1.started("victim", "kv", run);
  }
  {
    AttemptLog rank2(dir.path(), 2);  // aborts the job for "hang", then mpirun's TERM: counts
    rank2.make_current();
    rank2.started("hang", "kh", 1);
    rank2.started("other", "ko", 1);  // the same segment's other attempt: excused by the TERM
    AttemptLog::note_timeout("hang", "kh", 1);
    AttemptLog::note_signal(15);
  }
  {
    AttemptLog rank3(dir.path(), 3);  // a run's unannounced death ...
    rank3.started("early", "ke", 1);
  }
  {
    AttemptLog rank3(dir.path(), 3);  // ... is not excused by a later run's signal
    rank3.signalled(10);              // a drain asked before this log was opened
    rank3.started("drained", "kd", 1);
  }
  {  // a log of an older omni-dp: no run or signal lines
    std::ofstream out(attempt_log_path(dir.path(), 4), std::ios::binary);
    out << "start\t1\tkx\told\nstart\t1\tky\tdone\nend\t1\tky\tdone\n";
  }
  const auto logs = read_attempt_logs(dir.path());
  const auto expect = [&](const char* id, const char* key, int last, int interrupted, int excused) {
    const auto it = logs.find(attempt_key(id, key));
    ASSERT_NE(it, logs.end()) << id;
    EXPECT_EQ(it->second.last_attempt, last) << id;
    EXPECT_EQ(it->second.interrupted, interrupted) << id;
    EXPECT_EQ(it->second.excused, excused) << id;
  };
  expect("big", "kb", 2, 0, 2);
  expect("victim", "kv", 2, 2, 0);
  expect("hang", "kh", 1, 1, 0);
  expect("other", "ko", 1, 0, 1);
  expect("early", "ke", 1, 1, 0);
  expect("drained", "kd", 1, 0, 1);
  expect("old", "kx", 1, 1, 0);
  expect("done", "ky", 1, 0, 0);
  EXPECT_EQ(logs.size(), 8U);
}

}  // namespace
}  // namespace omnidp::results
