// The coordinator driven step by step over a manually delivered in-process network: the test
// plays the replicas and checks exactly which request each one gets.
#include "omnidp/runtime/coordinator.hpp"

#include <gtest/gtest.h>

#include "omnidp/runtime/progress.hpp"
#include "omnidp/runtime/transport.hpp"
#include "runtime/small_request.hpp"

namespace omnidp::runtime {
namespace {

// small_request with the input key "key<index>".
Request req(std::size_t index, int frames) {
  Request r = testing::small_request(index, frames);
  r.input_key = "key" + std::to_string(index);
  return r;
}

class Harness {
 public:
  Harness(int world, const std::vector<int>& frames, SchedulerConfig sched, int drain_after = 0,
          std::optional<double> deadline = std::nullopt)
      : net_(world, Delivery::manual), inbox_(static_cast<std::size_t>(world)) {
    std::vector<Request> requests;
    for (std::size_t i = 0; i < frames.size(); ++i) requests.push_back(req(i, frames[i]));
    source_ = std::make_unique<VectorSource>(requests);
    CoordinatorOptions o;
    o.config.model.name = "synthetic";
    o.config.scheduler = sched;
    o.config.faults.drain_after = drain_after;
    o.topology = make_topology(o.config.parallel, world);
    o.plan.to_run = frames.size();
    o.now = [this] { return clock_; };
    o.deadline = deadline;
    o.finalize = [this](const RunSummary& s) { finalized_.push_back(s); };
    coordinator_ = std::make_unique<Coordinator>(o, *source_, [this](int dest, const Message& m) {
      send_message(net_.endpoint(0), dest, m);
    });
  }

  // Delivers everything in flight; the coordinator handles what reaches it, the rest is kept
  // per rank for the test to read.
  void pump() {
    while (net_.deliver_all() > 0) {
      for (int r = 0; r < net_.size(); ++r) {
        while (auto env = poll_message(net_.endpoint(r))) {
          if (r == 0 && for_coordinator(env->message)) {
            coordinator_->handle(*env);
          } else {
            inbox_[static_cast<std::size_t>(r)].push_back(env->message);
          }
        }
      }
    }
  }
  std::vector<Message> take(int rank) {
    pump();
    return std::exchange(inbox_[static_cast<std::size_t>(rank)], {});
  }
  // The ids assigned to `rank` since the last call.
  std::vector<std::string> assigned(int rank) {
    std::vector<std::string> ids;
    for (const auto& m : take(rank)) {
      if (const auto* a = std::get_if<AssignMsg>(&m))
        ids.push_back(a->request.id + "#" + std::to_string(a->attempt));
    }
    return ids;
  }
  void reply(int rank, const Message& m) {
    send_message(net_.endpoint(rank), 0, m);
    pump();
  }
  void ready_all(int slots) {
    for (int r = 0; r < net_.size(); ++r) reply(r, ReadyMsg{r, slots, "cpu", true, {}});
  }
  void done(int rank, const std::string& id, double seconds,
            RequestStatus status = RequestStatus::ok, int forwards = 0, int computed = 0) {
    reply(rank, DoneMsg{id, status, status == RequestStatus::ok ? "" : "boom", rank, rank, 1, 0, 0,
                        seconds, 0.0, forwards, computed});
  }
  // Every rank's Closed, with the busy seconds it measured (0 where not listed).
  void close_all(const std::vector<double>& busy = {}) {
    for (int r = 0; r < net_.size(); ++r) {
      reply(r, ClosedMsg{static_cast<std::size_t>(r) < busy.size() ? busy[static_cast<std::size_t>(r)]
                                                                   : 0.0});
    }
  }

  Coordinator& coordinator() { return *coordinator_; }
  double clock_ = 100.0;
  std::vector<RunSummary> finalized_;

 private:
  InProcessNetwork net_;
  std::vector<std::vector<Message>> inbox_;
  std::unique_ptr<VectorSource> source_;
  std::unique_ptr<Coordinator> coordinator_;
};

template <class T>
std::size_t count_of(const std::vector<Message>& ms) {
  return static_cast<std::size_t>(std::count_if(
      ms.begin(), ms.end(), [](const Message& m) { return std::holds_alternative<T>(m); }));
}

SchedulerConfig round_robin(int prefetch) {
  SchedulerConfig s;
  s.policy = SchedulerPolicy::round_robin;
  s.prefetch = prefetch;
  return s;
}

TEST(Coordinator, RoundRobinAssignsIndexModuloReplicas) {
  Harness h(3, {5, 5, 5, 5, 5, 5, 5}, round_robin(0));
  h.coordinator().start();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(count_of<StartMsg>(h.take(r)), 1U) << r;
  h.reply(0, ReadyMsg{0, 1, "cpu", true, {}});
  h.reply(1, ReadyMsg{1, 1, "cpu", true, {}});
  EXPECT_TRUE(h.assigned(0).empty());  // nothing before every replica is ready
  h.reply(2, ReadyMsg{2, 1, "cpu", true, {}});
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::running);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1"}));
  EXPECT_EQ(h.assigned(2), (std::vector<std::string>{"r2#1"}));
  // Replica 2 finishes first but only ever gets 2, 5: static assignment.
  h.done(2, "r2", 1.0);
  EXPECT_EQ(h.assigned(2), (std::vector<std::string>{"r5#1"}));
  h.done(2, "r5", 1.0);
  EXPECT_TRUE(h.assigned(2).empty());
  h.done(1, "r1", 1.0);
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r4#1"}));
  h.done(0, "r0", 1.0);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r3#1"}));
  h.done(0, "r3", 1.0);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r6#1"}));
  h.done(0, "r6", 1.0);
  h.done(1, "r4", 1.0);
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(count_of<ShutdownMsg>(h.take(r)), 1U);
  h.close_all();
  ASSERT_TRUE(h.coordinator().finished());
  EXPECT_EQ(h.coordinator().exit_code(), 0);
  for (int r = 0; r < 3; ++r) {
    const auto ms = h.take(r);
    ASSERT_EQ(ms.size(), 1U);
    EXPECT_EQ(std::get<FinishMsg>(ms[0]).exit_code, 0);
  }
  ASSERT_EQ(h.finalized_.size(), 1U);
  EXPECT_EQ(h.finalized_[0].completed, 7U);
}

TEST(Coordinator, DynamicCostDescWithLateBoundPrefetch) {
  SchedulerConfig s;  // dynamic, cost_desc
  s.prefetch = 1;
  //          r0 r1  r2 r3 r4 r5 r6 r7
  Harness h(2, {5, 121, 9, 33, 5, 65, 17, 13}, s);
  h.coordinator().start();
  h.ready_all(2);
  // The two biggest start at once; prefetch slots stay empty until a replica pulls.
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r1#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r5#1"}));
  h.reply(1, HeartbeatMsg{1, "r5", 1.0, 0.0});
  EXPECT_TRUE(h.assigned(1).empty());
  // Replica 1's request is nearly done first: it gets the biggest pending one (33 frames),
  // bound only now, not when the job started.
  h.reply(1, PullMsg{1, "r5"});
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r3#1"}));
  h.reply(1, PullMsg{1, "r5"});  // the prefetch (1) is full: nothing more
  EXPECT_TRUE(h.assigned(1).empty());
  EXPECT_EQ(h.coordinator().outstanding(1), 2U);
  h.reply(0, PullMsg{0, "r1"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r6#1"}));
  // r5 is generated: r3 runs on replica 1 and will pull in turn.
  h.reply(1, GeneratedMsg{"r5"});
  EXPECT_TRUE(h.assigned(1).empty());
  h.reply(1, PullMsg{1, "r3"});
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r7#1"}));
  h.reply(1, PullMsg{1, "r999"});  // stale: ignored
  EXPECT_TRUE(h.assigned(1).empty());
  // Tail: no more requests left (r2, r0, r4) than... 3 > 2 replicas, so this pull is served.
  h.reply(0, GeneratedMsg{"r1"});
  h.reply(0, PullMsg{0, "r6"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r2#1"}));
  // Now 2 left (r0, r4) for 2 replicas: nothing is queued behind a running request, only an
  // idle replica gets work.
  h.reply(1, GeneratedMsg{"r3"});
  h.reply(1, PullMsg{1, "r7"});
  EXPECT_TRUE(h.assigned(1).empty());
  h.reply(1, GeneratedMsg{"r7"});
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r0#1"}));
  h.reply(0, GeneratedMsg{"r6"});
  h.reply(0, GeneratedMsg{"r2"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r4#1"}));
  for (const auto& [rank, id] : std::vector<std::pair<int, std::string>>{
           {0, "r1"}, {0, "r6"}, {0, "r2"}, {0, "r4"}, {1, "r5"}, {1, "r3"}, {1, "r7"}, {1, "r0"}}) {
    h.done(rank, id, 0.5);
  }
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
}

TEST(Coordinator, GeneratedFreesTheSlotAndTheWriteBacklogIsBounded) {
  SchedulerConfig s = testing::manifest_order(0);
  Harness h(1, {5, 5, 5, 5, 5, 5}, s);
  h.coordinator().start();
  h.ready_all(1);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  // The model is done with r0 while its write is pending: the next one comes at once.
  h.reply(0, GeneratedMsg{"r0"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r1#1"}));
  h.reply(0, GeneratedMsg{"r1"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r2#1"}));
  // Three requests not yet durable = 1 slot + a write backlog of 2: no more until a Done.
  h.reply(0, GeneratedMsg{"r2"});
  EXPECT_TRUE(h.assigned(0).empty());
  EXPECT_EQ(h.coordinator().outstanding(0), 3U);
  h.done(0, "r0", 1.0);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r3#1"}));
  for (const char* id : {"r1", "r2", "r3"}) h.done(0, id, 1.0);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r4#1"}));
  h.done(0, "r4", 1.0);  // Done without Generated (e.g. an older leader) frees the slot too
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r5#1"}));
}

TEST(Coordinator, TransientFailureRetriedOnAnotherReplicaAndFailuresIsolated) {
  SchedulerConfig s = testing::manifest_order(0);
  Harness h(2, {5, 5, 5, 5}, s);
  h.coordinator().start();
  h.ready_all(1);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1"}));
  h.reply(0, RetryMsg{"r0", 0, 1, "CUDA out of memory", 0.25});
  // Replica 0 is free, but the retry waits for another replica; replica 0 takes new work.
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r2#1"}));
  h.done(1, "r1", 1.0, RequestStatus::failed);  // a permanent failure: the job goes on
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r0#2"}));
  h.done(1, "r0", 1.0);
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r3#1"}));
  h.done(0, "r2", 1.0);
  h.done(1, "r3", 1.0);
  h.close_all();
  ASSERT_TRUE(h.coordinator().finished());
  EXPECT_EQ(h.coordinator().completed(), 3U);
  EXPECT_EQ(h.coordinator().failed(), 1U);
  EXPECT_EQ(h.coordinator().exit_code(), 1);
}

TEST(Coordinator, SignalDrainsThenSecondSignalAbandons) {
  SchedulerConfig s = testing::manifest_order(1);
  Harness h(2, {5, 5, 5, 5, 5, 5}, s);
  h.coordinator().start();
  h.ready_all(2);
  h.reply(0, PullMsg{0, "r0"});
  h.reply(1, PullMsg{1, "r1"});
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1", "r2#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1", "r3#1"}));
  h.reply(1, SignalMsg{1, 10});  // SIGUSR1 on rank 1 drains the whole job
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::draining);
  for (int r = 0; r < 2; ++r) {
    const auto ms = h.take(r);
    ASSERT_EQ(ms.size(), 1U);
    EXPECT_EQ(std::get<DrainMsg>(ms[0]).abandon, false);
  }
  // Queued requests come back; running ones finish; nothing new is handed out.
  h.reply(0, ReturnedMsg{0, {"r2"}});
  h.reply(1, ReturnedMsg{1, {"r3"}});
  h.done(0, "r0", 1.0);
  EXPECT_TRUE(h.assigned(0).empty());
  h.reply(0, SignalMsg{2, 10});  // second signal: abandon
  for (int r = 0; r < 2; ++r) {
    const auto ms = h.take(r);
    ASSERT_EQ(ms.size(), 1U);
    EXPECT_EQ(std::get<DrainMsg>(ms[0]).abandon, true);
  }
  h.reply(1, ReturnedMsg{1, {"r1"}});
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  h.close_all();
  EXPECT_EQ(h.coordinator().exit_code(), 75);
  ASSERT_EQ(h.finalized_.size(), 1U);
  EXPECT_TRUE(h.finalized_[0].interrupted);
  EXPECT_EQ(h.finalized_[0].completed, 1U);
  EXPECT_EQ(h.finalized_[0].total, 6U);
}

TEST(Coordinator, DrainAfterHandsOutExactlyNAndSummaryFigures) {
  SchedulerConfig s = testing::manifest_order(0);
  Harness h(2, {5, 5, 5, 5}, s, /*drain_after=*/2);
  h.coordinator().start();
  h.ready_all(1);  // work starts at t = 100
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1"}));
  h.clock_ = 103.0;
  h.done(0, "r0", 3.0);
  EXPECT_TRUE(h.assigned(0).empty());  // only the first 2 requests are handed out
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::running);
  h.clock_ = 104.0;
  h.done(1, "r1", 4.0);  // the second completion: drain, and nothing is outstanding
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  h.close_all({3.0, 4.0});  // each rank's own busy seconds
  ASSERT_EQ(h.finalized_.size(), 1U);
  const RunSummary& sum = h.finalized_[0];
  EXPECT_EQ(sum.completed, 2U);
  EXPECT_EQ(sum.total, 4U);
  EXPECT_TRUE(sum.interrupted);
  EXPECT_DOUBLE_EQ(sum.makespan_s, 4.0);
  EXPECT_DOUBLE_EQ(sum.videos_per_min, 30.0);
  EXPECT_DOUBLE_EQ(sum.latency_p50_s, 3.5);
  EXPECT_DOUBLE_EQ(sum.latency_p90_s, 3.9);
  EXPECT_DOUBLE_EQ(sum.latency_max_s, 4.0);
  EXPECT_EQ(sum.busy_s_per_rank, (std::vector<double>{3.0, 4.0}));
  EXPECT_DOUBLE_EQ(sum.busy_fraction_per_rank[0], 0.75);
  EXPECT_DOUBLE_EQ(sum.scheduling_efficiency, 7.0 / 8.0);
  EXPECT_EQ(sum.policy, "dynamic");
  EXPECT_EQ(sum.order, "manifest");
  EXPECT_EQ(h.coordinator().exit_code(), 75);
}

// The run's summary holds the step cache's skip rate of the Done messages: ok rows 60/20 and
// 60/60 -> 1 - 80/120; a failed row's counts and a row without them are left out. The printed
// summary has its step cache line only then.
TEST(Coordinator, SummaryHasTheSkipRateOfTheDoneRequests) {
  Harness h(2, {5, 5, 5, 5}, testing::manifest_order(0));
  h.coordinator().start();
  h.ready_all(1);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1"}));
  h.done(0, "r0", 1.0, RequestStatus::ok, 60, 20);
  h.done(1, "r1", 1.0, RequestStatus::ok, 60, 60);
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r2#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r3#1"}));
  h.done(0, "r2", 1.0, RequestStatus::failed, 50, 10);
  h.done(1, "r3", 1.0);
  h.close_all();
  ASSERT_EQ(h.finalized_.size(), 1U);
  const RunSummary& sum = h.finalized_[0];
  EXPECT_EQ(sum.forwards, 120U);
  EXPECT_EQ(sum.forwards_computed, 80U);
  EXPECT_EQ(sum.cache_skip_rate, 1.0 - 80.0 / 120.0);
  EXPECT_NE(format_summary(sum).find("\n  step cache skip rate 33.33% (40 of 120 transformer "
                                     "forwards skipped, 80 computed)\n"),
            std::string::npos)
      << format_summary(sum);
}

// Deadline-aware dispatch with an injected clock: deadline 130, margin 5 -> every request
// must be expected to end by 125; every request takes 10 s.
TEST(Coordinator, DeadlineHandsOutOnlyWhatEndsBeforeTheDeadlineMinusTheMargin) {
  SchedulerConfig s = testing::manifest_order(1);
  s.deadline_margin_s = 5.0;
  Harness h(2, {5, 5, 5, 5, 5, 5}, s, 0, /*deadline=*/130.0);
  h.coordinator().start();
  h.ready_all(2);  // t = 100, no completion yet: one request per idle replica, no prefetch
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r0#1"}));
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r1#1"}));
  h.reply(0, PullMsg{0, "r0"});
  EXPECT_TRUE(h.assigned(0).empty()) << "no time scale before the first completion";
  h.clock_ = 110.0;
  h.done(0, "r0", 10.0);  // calibrated: 10 s per request; replica 0 idle: ends 120 <= 125
  EXPECT_EQ(h.assigned(0), (std::vector<std::string>{"r2#1"}));
  h.reply(1, PullMsg{1, "r1"});  // r1 (started 100) ends at 110: r3 behind it ends 120
  EXPECT_EQ(h.assigned(1), (std::vector<std::string>{"r3#1"}));
  h.clock_ = 112.0;
  h.reply(0, PullMsg{0, "r2"});  // the tail (2 left for 2 replicas): nothing queued behind r2
  EXPECT_TRUE(h.assigned(0).empty());
  h.clock_ = 120.0;
  h.done(1, "r1", 10.0);  // r3 runs on replica 1 now
  h.done(0, "r2", 10.0);  // replica 0 is idle, but r4 would end 130 > 125: no more work for it
  EXPECT_TRUE(h.assigned(0).empty());
  EXPECT_TRUE(h.assigned(1).empty());
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::running);  // r3 still runs
  h.clock_ = 130.0;
  h.done(1, "r3", 10.0);  // r4 would end 140 on replica 1 too; nothing outstanding: drain
  for (int r = 0; r < 2; ++r) {
    const auto ms = h.take(r);
    EXPECT_EQ(count_of<DrainMsg>(ms), 1U) << "rank " << r;
    EXPECT_EQ(count_of<ShutdownMsg>(ms), 1U) << "rank " << r;
    EXPECT_EQ(count_of<AssignMsg>(ms), 0U) << "rank " << r;
  }
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  h.close_all();
  EXPECT_EQ(h.coordinator().exit_code(), 75);
  ASSERT_EQ(h.finalized_.size(), 1U);
  EXPECT_EQ(h.finalized_[0].completed, 4U);
  EXPECT_EQ(h.finalized_[0].total, 6U);
  EXPECT_TRUE(h.finalized_[0].interrupted);
}

TEST(Coordinator, DeadlineAlreadyPassedHandsOutNothing) {
  SchedulerConfig s;
  s.deadline_margin_s = 0.0;
  Harness h(2, {5, 5}, s, 0, /*deadline=*/99.0);  // the clock reads 100
  h.coordinator().start();
  h.ready_all(2);
  EXPECT_TRUE(h.assigned(0).empty());
  EXPECT_TRUE(h.assigned(1).empty());
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  h.close_all();
  // Issue 39, class 6: this exited 75 ("run again"), and every rerun did the same (--deadline
  // @1 under the README's sbatch script: a requeue loop). Nothing was handed out and the next
  // run could not do better: exit 2 with the reason. The partial results are still written.
  EXPECT_EQ(h.coordinator().exit_code(), 2);
  EXPECT_EQ(h.finalized_.at(0).completed, 0U);
  const auto ms = h.take(1);
  const auto& fin = std::get<FinishMsg>(ms.back());
  EXPECT_TRUE(fin.has_error);
  EXPECT_EQ(fin.error.kind, ErrorKind::config);
  EXPECT_EQ(fin.error.message,
            "deadline: no request was handed out: the job's end minus "
            "scheduler.deadline_margin_s (0 s) had passed when the job started, so a rerun would "
            "do the same (exit 2, not the 75 that asks for one): give a later --deadline or a "
            "smaller scheduler.deadline_margin_s");
}

// The same deadline after a signal drained the job: the rerun is what the signal asked for, 75.
TEST(Coordinator, ADrainBySignalBeforeAnyHandOutStillAsksForARerun) {
  SchedulerConfig s;
  s.deadline_margin_s = 0.0;
  Harness h(2, {5, 5}, s, 0, /*deadline=*/99.0);
  h.coordinator().start();
  h.reply(1, SignalMsg{1, 10});
  h.ready_all(2);
  EXPECT_TRUE(h.assigned(0).empty());
  h.close_all();
  EXPECT_EQ(h.coordinator().exit_code(), 75);
}

TEST(Coordinator, DeadlineThatLeavesRoomForEverythingEndsNormally) {
  SchedulerConfig s = testing::manifest_order(0);
  s.deadline_margin_s = 60.0;
  Harness h(1, {5, 5, 5}, s, 0, /*deadline=*/1000.0);
  h.coordinator().start();
  h.ready_all(1);
  for (int i = 0; i < 3; ++i) {
    std::string id = std::to_string(i);
    id.insert(0, 1, 'r');  // not "r" + ...: GCC 12 warns falsely (-Wrestrict)
    std::string assigned = id;
    assigned.append("#1");
    EXPECT_EQ(h.assigned(0), (std::vector<std::string>{assigned}));
    h.clock_ += 10.0;
    h.done(0, id, 10.0);
  }
  EXPECT_EQ(h.coordinator().phase(), Coordinator::Phase::closing);
  h.close_all();
  EXPECT_EQ(h.coordinator().exit_code(), 0);
}

TEST(Coordinator, AReplicaThatCannotStartStopsTheJob) {
  Harness h(2, {5}, SchedulerConfig{});
  h.coordinator().start();
  (void)h.take(0);
  (void)h.take(1);
  h.reply(0, ReadyMsg{0, 2, "cpu", true, {}});
  h.reply(1, ReadyMsg{1, 0, "", false, ErrorInfo{ErrorKind::weights, "x.safetensors: truncated"}});
  ASSERT_TRUE(h.coordinator().finished());
  EXPECT_EQ(h.coordinator().exit_code(), 2);
  for (int r = 0; r < 2; ++r) {
    const auto ms = h.take(r);
    ASSERT_EQ(ms.size(), 1U);
    const auto& fin = std::get<FinishMsg>(ms[0]);
    EXPECT_TRUE(fin.has_error);
    EXPECT_EQ(fin.error.kind, ErrorKind::weights);
    EXPECT_EQ(fin.error.message, "x.safetensors: truncated");
  }
  EXPECT_TRUE(h.finalized_.empty());
}

TEST(Coordinator, AWriterFailureDrainsAndEndsWithItsError) {
  SchedulerConfig s = testing::manifest_order(0);
  Harness h(2, {5, 5, 5}, s);
  h.coordinator().start();
  h.ready_all(1);
  (void)h.assigned(0);
  (void)h.assigned(1);
  h.reply(1, FatalMsg{ErrorInfo{ErrorKind::hdf5, "disk full"}});
  h.reply(1, ReturnedMsg{1, {"r1"}});
  h.done(0, "r0", 1.0);
  EXPECT_TRUE(h.assigned(0).empty());
  h.close_all();
  ASSERT_TRUE(h.coordinator().finished());
  EXPECT_EQ(h.coordinator().exit_code(), 1);
  const auto ms = h.take(1);
  const auto& fin = std::get<FinishMsg>(ms.back());
  EXPECT_TRUE(fin.has_error);
  EXPECT_EQ(fin.error.message, "disk full");
}

// A replica that sends nothing (a stopped process: `kill -STOP`) made the job wait forever while
// the progress line said "ETA 1s". From three missed heartbeats on the progress line says which
// replica is silent and gives no ETA; past scheduler.silent_timeout_s the coordinator asks for
// the job's abort (exit 75: a rerun finishes it). Rank 0's own replica is never judged: it
// shares the coordinator's process.
TEST(Coordinator, ASilentReplicaStallsTheEtaThenAbortsTheJob) {
  SchedulerConfig s = testing::manifest_order(0);
  s.heartbeat_s = 5.0;
  s.silent_timeout_s = 60.0;
  Harness h(3, {5, 5, 5, 5, 5, 5}, s);
  h.coordinator().start();
  h.ready_all(1);  // every replica heard at t = 100
  (void)h.assigned(1);
  h.clock_ = 119.0;  // 19 s <= 3 heartbeats + 5 s: not yet silent
  h.reply(1, HeartbeatMsg{1, "r1", 19.0, 19.0});
  h.coordinator().tick();
  EXPECT_EQ(h.coordinator().progress().stalled, "");
  h.clock_ = 141.0;  // replica 1 heard at 119, replica 2 last at 100: silent for 41 s
  h.reply(1, HeartbeatMsg{1, "r1", 41.0, 41.0});
  h.coordinator().tick();
  const ProgressSnapshot p = h.coordinator().progress();
  EXPECT_EQ(p.stalled, "replica 2 (rank 2) silent for 41 s");
  EXPECT_LT(p.eta_s, 0.0);
  EXPECT_NE(format_progress(p).find(", ETA --, replica 2 (rank 2) silent for 41 s"),
            std::string::npos);
  EXPECT_EQ(h.coordinator().abort_reason(), "");
  h.clock_ = 161.0;  // 61 s > 60
  h.reply(1, HeartbeatMsg{1, "r1", 61.0, 61.0});
  h.coordinator().tick();
  EXPECT_EQ(h.coordinator().abort_reason(),
            "coordinator: replica 2 (rank 2) sent nothing for 61 s (scheduler.silent_timeout_s = "
            "60): the process is stopped, hung outside a request or unreachable; aborting the job "
            "(exit 75) so that a rerun finishes it (the replica's requests are generated again)");
  // Rank 0 (the coordinator's own process) silent as long: no verdict on it.
  Harness alone(1, {5}, s);
  alone.coordinator().start();
  alone.ready_all(1);
  alone.clock_ = 1000.0;
  alone.coordinator().tick();
  EXPECT_EQ(alone.coordinator().abort_reason(), "");
  EXPECT_EQ(alone.coordinator().progress().stalled, "");
}

// silent_timeout_s 0 turns the watch off.
TEST(Coordinator, NoSilentTimeoutNoAbort) {
  SchedulerConfig s = testing::manifest_order(0);
  s.silent_timeout_s = 0.0;
  Harness h(2, {5, 5}, s);
  h.coordinator().start();
  h.ready_all(1);
  h.clock_ = 10000.0;
  h.coordinator().tick();
  EXPECT_EQ(h.coordinator().abort_reason(), "");
  EXPECT_EQ(h.coordinator().progress().stalled, "replica 1 (rank 1) silent for 9900 s");
}

}  // namespace
}  // namespace omnidp::runtime
