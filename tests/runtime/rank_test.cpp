// Whole jobs as N simulated ranks in one process (in-process transport, synthetic model,
// in-memory results): every request exactly once, failures isolated, drains, errors.
#include "omnidp/runtime/rank.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>

#include "job_test_support.hpp"
#include "omnidp/results/summary.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

std::vector<std::string> ids(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "r%03d", i);
    out.emplace_back(id);
  }
  return out;
}

std::vector<std::string> row_ids(const MemoryResults& r) {
  std::vector<std::string> out;
  for (const auto& row : r.rows) out.push_back(row.id);
  std::sort(out.begin(), out.end());
  return out;
}

void expect_all(const std::vector<RankOutcome>& outcomes, ExitCode code) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_FALSE(outcomes[r].threw) << "rank " << r << ": " << outcomes[r].error;
    EXPECT_EQ(outcomes[r].code, code) << "rank " << r;
  }
}

class JobSizes : public ::testing::TestWithParam<int> {};

TEST_P(JobSizes, EveryRequestExactlyOnceWithDeterministicVideos) {
  const int world = GetParam();
  TempDir dir("exactly-once-" + std::to_string(world));
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 13), dir.path() / "out", results);
  int merges = 0;
  o.merge = [&](const fs::path& d, const RunSummary& s, const std::string& yaml) {
    ++merges;
    EXPECT_EQ(d, dir.path() / "out");
    EXPECT_EQ(s.completed, 13U);
    EXPECT_NE(yaml.find("synthetic"), std::string::npos);
  };
  expect_all(run_job_in_process(o, world), ExitCode::ok);
  EXPECT_EQ(row_ids(*results), ids(13));
  EXPECT_EQ(merges, 1);
  for (const auto& row : results->rows) {
    EXPECT_EQ(row.status, RequestStatus::ok);
    EXPECT_EQ(row.attempt, 1);
    EXPECT_EQ(row.replica, row.rank);
    EXPECT_EQ(row.video_sha256, results->sha_of_video.at(row.id));
    const int i = std::stoi(row.id.substr(1));
    const Video expected = models::synthetic_video(1000 + i, row.frames, 32, 48);
    EXPECT_EQ(row.video_sha256, video_sha256(expected)) << row.id;
    EXPECT_FALSE(row.input_key.empty());
  }
  std::sort(results->closed.begin(), results->closed.end());
  std::vector<int> all(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) all[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(results->closed, all);
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.total, 13U);
  EXPECT_EQ(s.completed, 13U);
  EXPECT_EQ(s.failed, 0U);
  EXPECT_EQ(s.replicas, world);
  EXPECT_EQ(s.busy_s_per_rank.size(), static_cast<std::size_t>(world));
}

INSTANTIATE_TEST_SUITE_P(Ranks, JobSizes, ::testing::Values(1, 2, 4));

TEST(InProcessJob, RoundRobinRankIsIndexModuloReplicas) {
  TempDir dir("rr");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 11), dir.path() / "out", results);
  o.config.scheduler.policy = SchedulerPolicy::round_robin;
  expect_all(run_job_in_process(o, 3), ExitCode::ok);
  ASSERT_EQ(row_ids(*results), ids(11));
  for (const auto& row : results->rows) {
    EXPECT_EQ(row.rank, std::stoi(row.id.substr(1)) % 3) << row.id;
  }
}

TEST(InProcessJob, FailuresAreIsolatedAndTransientOnesRetried) {
  TempDir dir("failures");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(
      write_manifest(
          dir.path(), 8,
          {R"({"id": "img", "prompt": "p", "image": "missing.png", "num_frames": 5, "height": 32, "width": 32, "num_inference_steps": 1})"}),
      dir.path() / "out", results);
  o.config.faults.fail_ids = {"r003"};
  o.config.faults.transient_fail_ids = {"r005"};
  refresh_pipeline(o);
  expect_all(run_job_in_process(o, 2), ExitCode::some_failed);
  auto expected = ids(8);
  expected.push_back("img");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(row_ids(*results), expected);
  for (const auto& row : results->rows) {
    if (row.id == "r003") {
      EXPECT_EQ(row.status, RequestStatus::failed);
      EXPECT_EQ(row.error, "request r003: synthetic failure injected (faults.fail_ids)");
      EXPECT_TRUE(row.video_sha256.empty());
    } else if (row.id == "img") {
      EXPECT_EQ(row.status, RequestStatus::failed);
      EXPECT_TRUE(row.error.starts_with("input error: ")) << row.error;
      EXPECT_NE(row.error.find("missing.png"), std::string::npos) << row.error;
    } else {
      EXPECT_EQ(row.status, RequestStatus::ok) << row.id << ": " << row.error;
      EXPECT_EQ(row.attempt, row.id == "r005" ? 2 : 1) << row.id;
    }
  }
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.completed, 7U);
  EXPECT_EQ(s.failed, 2U);
}

TEST(InProcessJob, DrainAfterThenResumeCompletesTheRest) {
  TempDir dir("drain");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 20), dir.path() / "out", results);
  o.config.faults.drain_after = 3;  // exactly the first 3 requests are handed out, then drain
  o.config.scheduler.order = WorkOrder::manifest;
  refresh_pipeline(o);
  expect_all(run_job_in_process(o, 2), ExitCode::interrupted);
  const auto first = row_ids(*results);
  EXPECT_EQ(first, (std::vector<std::string>{"r000", "r001", "r002"}));
  const RunSummary drained = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_TRUE(drained.interrupted);
  EXPECT_EQ(drained.completed, 3U);
  EXPECT_EQ(drained.total, 20U);

  // Resume: the done rows are skipped, the rest run, nothing twice.
  o.config.faults.drain_after = 0;
  refresh_pipeline(o);
  o.scan_done = [results](const fs::path&) {
    std::unordered_map<std::string, std::string> done;
    for (const auto& row : results->rows) done[row.id] = row.input_key;
    return done;
  };
  expect_all(run_job_in_process(o, 2), ExitCode::ok);
  EXPECT_EQ(row_ids(*results), ids(20));
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.skipped_resume, 3U);
  EXPECT_EQ(s.completed, 17U);
}

// A clock that only moves when the model works: every generate() takes exactly 10 s of it.
struct FakeClock {
  std::atomic<double> now{1'800'000'000.0};
  double read() const { return now.load(); }
};

class TimedPipeline final : public Pipeline {
 public:
  TimedPipeline(std::unique_ptr<Pipeline> inner, std::shared_ptr<FakeClock> clock, double seconds)
      : inner_(std::move(inner)), clock_(std::move(clock)), seconds_(seconds) {}
  Video generate(const Request& r, const GenerateContext& ctx) override {
    clock_->now.store(clock_->now.load() + seconds_);
    return inner_->generate(r, ctx);
  }
  std::string model_name() const override { return inner_->model_name(); }
  std::string device_name() const override { return inner_->device_name(); }

 private:
  std::unique_ptr<Pipeline> inner_;
  std::shared_ptr<FakeClock> clock_;
  double seconds_;
};

// Deadline-aware dispatch in a whole job, deterministic through the injected clock: 6 equal
// requests of 10 s on one replica, deadline start + 37 s, margin 5 s (limit start + 32): r000
// (no time scale yet), r001 (ends +20), r002 (ends +30) fit, r003 (ends +40) does not. No
// signal: the job drains by itself, exit 75; a rerun without a deadline does the rest.
TEST(InProcessJob, DeadlineDrainsWhenNothingMoreFitsThenResumeCompletesTheRest) {
  TempDir dir("deadline");
  const std::vector<std::string> lines = sized_lines(6, 70, 2);
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 0, lines), dir.path() / "out", results);
  o.config.scheduler.order = WorkOrder::manifest;
  o.config.scheduler.deadline_margin_s = 5.0;
  auto clock = std::make_shared<FakeClock>();
  const double start = clock->read();
  o.clock = [clock] { return clock->read(); };
  o.deadline = Deadline{start + 37.0, "test"};
  o.make_pipeline = [cfg = o.config, clock](const DeviceBinding& d) -> std::unique_ptr<Pipeline> {
    return std::make_unique<TimedPipeline>(std::make_unique<models::SyntheticPipeline>(cfg, d),
                                           clock, 10.0);
  };
  expect_all(run_job_in_process(o, 1), ExitCode::interrupted);
  EXPECT_EQ(row_ids(*results), (std::vector<std::string>{"d0", "d1", "d2"}));
  for (const auto& row : results->rows) EXPECT_EQ(row.seconds, 10.0) << row.id;
  const RunSummary drained = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_TRUE(drained.interrupted);
  EXPECT_EQ(drained.completed, 3U);
  EXPECT_EQ(drained.total, 6U);

  // The rerun, without a deadline: the 3 others, nothing twice, every hash that of the
  // request's own video (as in a run that was never interrupted).
  o.deadline.reset();
  o.scan_done = [results](const fs::path&) {
    std::unordered_map<std::string, std::string> done;
    for (const auto& row : results->rows) done[row.id] = row.input_key;
    return done;
  };
  expect_all(run_job_in_process(o, 1), ExitCode::ok);
  std::vector<std::string> all;
  for (int i = 0; i < 6; ++i) all.push_back("d" + std::to_string(i));
  EXPECT_EQ(row_ids(*results), all);
  for (const auto& row : results->rows) {
    const int i = std::stoi(row.id.substr(1));
    EXPECT_EQ(row.video_sha256, video_sha256(models::synthetic_video(70 + i, 9, 32, 48))) << row.id;
  }
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.skipped_resume, 3U);
  EXPECT_EQ(s.completed, 3U);
}

TEST(InProcessJob, ResumeWithAChangedRequestNamesBothKeys) {
  TempDir dir("conflict");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 4), dir.path() / "out", results);
  fs::create_directories(dir.path() / "out");
  o.scan_done = [](const fs::path&) {
    return std::unordered_map<std::string, std::string>{{"r002", "oldkey"}};
  };
  const auto outcomes = run_job_in_process(o, 2);
  for (const auto& out : outcomes) {
    ASSERT_TRUE(out.threw);
    EXPECT_EQ(out.kind, ErrorKind::manifest);
    EXPECT_NE(
        out.error.find(":3:id: request 'r002' is already done in " + (dir.path() / "out").string() +
                       " with input key oldkey, but the manifest now gives input key "),
        std::string::npos)
        << out.error;
  }
  EXPECT_TRUE(results->rows.empty());
  EXPECT_TRUE(results->opened.empty());  // nothing was created: the job never started
}

TEST(InProcessJob, AModelThatFailsToLoadStopsEveryRank) {
  TempDir dir("load");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 4), dir.path() / "out", results);
  o.make_pipeline = [](const DeviceBinding&) -> std::unique_ptr<Pipeline> {
    throw WeightsError("/models/x/transformer.safetensors", "truncated header");
  };
  const auto outcomes = run_job_in_process(o, 3);
  for (const auto& out : outcomes) {
    ASSERT_TRUE(out.threw);
    EXPECT_EQ(out.kind, ErrorKind::weights);
    EXPECT_EQ(out.error, "/models/x/transformer.safetensors: truncated header");
  }
  EXPECT_TRUE(results->rows.empty());
  EXPECT_TRUE(results->opened.empty());
}

// The resume scan (rank 0) cannot end before a model load has begun: with the old order (load
// after the scan) the scan hook gives up after a minute and the job fails. The wait is a guard
// against a hang, not a synchronisation by time.
TEST(InProcessJob, ModelsLoadWhileRankZeroScans) {
  TempDir dir("overlap");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 4), dir.path() / "out", results);
  fs::create_directories(dir.path() / "out");
  auto loading = std::make_shared<std::promise<void>>();
  std::shared_future<void> loading_began = loading->get_future().share();
  auto once = std::make_shared<std::once_flag>();
  o.make_pipeline = [cfg = o.config, loading, once](const DeviceBinding& d) {
    std::call_once(*once, [&] { loading->set_value(); });
    return std::make_unique<models::SyntheticPipeline>(cfg, d);
  };
  o.scan_done = [loading_began](const fs::path&) {
    if (loading_began.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      throw RuntimeError("no model began loading while rank 0 scanned");
    }
    return std::unordered_map<std::string, std::string>{};
  };
  const auto outcomes = run_job_in_process(o, 2);
  expect_all(outcomes, ExitCode::ok);
  EXPECT_EQ(row_ids(*results), ids(4));
}

// A model loads before Start, but nothing is created when the manifest turns out bad.
TEST(InProcessJob, ABadManifestStopsTheJobAfterTheLoadsWithoutOpeningResults) {
  TempDir dir("overlap-bad");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 3, {R"({"id": "r000", "prompt": "x"})"}),
                               dir.path() / "out", results);
  auto loads = std::make_shared<std::atomic<int>>(0);
  o.make_pipeline = [cfg = o.config, loads](const DeviceBinding& d) {
    ++*loads;
    return std::make_unique<models::SyntheticPipeline>(cfg, d);
  };
  const auto outcomes = run_job_in_process(o, 3);
  for (const auto& out : outcomes) {
    ASSERT_TRUE(out.threw);
    EXPECT_EQ(out.kind, ErrorKind::manifest);
    EXPECT_NE(out.error.find(":4:id: duplicate id \"r000\": first used on line 1"), std::string::npos)
        << out.error;
  }
  EXPECT_TRUE(results->opened.empty());
  EXPECT_TRUE(results->rows.empty());
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(InProcessJob, CoordinatorThatDoesNotWorkAndReplicaGroups) {
  {
    TempDir dir("coord-only");
    auto results = std::make_shared<MemoryResults>();
    JobOptions o = synthetic_job(write_manifest(dir.path(), 7), dir.path() / "out", results);
    o.config.parallel.coordinator_runs_work = false;
    expect_all(run_job_in_process(o, 3), ExitCode::ok);
    EXPECT_EQ(row_ids(*results), ids(7));
    for (const auto& row : results->rows) {
      EXPECT_NE(row.rank, 0);
      EXPECT_EQ(row.replica, row.rank - 1);
    }
  }
  {
    TempDir dir("groups");
    auto results = std::make_shared<MemoryResults>();
    JobOptions o = synthetic_job(write_manifest(dir.path(), 9), dir.path() / "out", results);
    o.config.parallel.cfg_parallel_size = 2;
    o.config.scheduler.policy = SchedulerPolicy::round_robin;
    expect_all(run_job_in_process(o, 4), ExitCode::ok);
    EXPECT_EQ(row_ids(*results), ids(9));
    for (const auto& row : results->rows) {
      const int i = std::stoi(row.id.substr(1));
      EXPECT_EQ(row.replica, i % 2) << row.id;
      EXPECT_EQ(row.rank, 2 * (i % 2)) << row.id;  // the group leaders run the requests
    }
    const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
    EXPECT_EQ(s.replicas, 2);
    EXPECT_EQ(s.cfg_parallel_size, 2);
    ASSERT_EQ(s.busy_s_per_rank.size(), 4U);
    // The members ran every request of their group themselves (the synthetic model runs on
    // every rank of a group) and report the seconds they measured.
    EXPECT_GT(s.busy_s_per_rank[1], 0.0);
    EXPECT_GT(s.busy_s_per_rank[3], 0.0);
  }
}

// Wraps the synthetic model and records what each rank's GenerateContext holds on each axis:
// "<axis>: <group name>, rank r of n, sum s" (s: an all_reduce_sum of 1 over the axis).
class AxesPipeline final : public Pipeline {
 public:
  AxesPipeline(std::unique_ptr<Pipeline> inner, std::shared_ptr<std::mutex> mutex,
               std::shared_ptr<std::set<std::string>> seen)
      : inner_(std::move(inner)), mutex_(std::move(mutex)), seen_(std::move(seen)) {}
  Video generate(const Request& r, const GenerateContext& ctx) override {
    const std::pair<const char*, Collective*> axes[] = {
        {"cfg", ctx.cfg}, {"sequence", ctx.sequence}, {"tensor", ctx.tensor}};
    for (const auto& [name, c] : axes) {
      if (c == nullptr) continue;
      std::int32_t one = 1;
      c->all_reduce_sum(&one, 1, ElementType::i32);
      const std::lock_guard lock(*mutex_);
      seen_->insert(std::string(name) + ": " + c->group_name() + ", rank " +
                    std::to_string(c->rank()) + " of " + std::to_string(c->size()) + ", sum " +
                    std::to_string(one));
    }
    return inner_->generate(r, ctx);
  }
  std::string model_name() const override { return inner_->model_name(); }
  std::string device_name() const override { return inner_->device_name(); }

 private:
  std::unique_ptr<Pipeline> inner_;
  std::shared_ptr<std::mutex> mutex_;
  std::shared_ptr<std::set<std::string>> seen_;
};

TEST(InProcessJob, EachAxisOfAGroupHasItsOwnCollectives) {
  TempDir dir("axes");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 2), dir.path() / "out", results);
  o.config.parallel.cfg_parallel_size = 2;
  o.config.parallel.sequence_parallel_size = 2;
  auto mutex = std::make_shared<std::mutex>();
  auto seen = std::make_shared<std::set<std::string>>();
  o.make_pipeline = [cfg = o.config, mutex, seen](const DeviceBinding& d) {
    return std::make_unique<AxesPipeline>(std::make_unique<models::SyntheticPipeline>(cfg, d),
                                          mutex, seen);
  };
  expect_all(run_job_in_process(o, 4), ExitCode::ok);
  EXPECT_EQ(row_ids(*results), ids(2));
  for (const auto& row : results->rows) EXPECT_EQ(row.rank, 0) << row.id;  // the leader records
  const std::string g = "replica group 0 (world ranks 0,1,2,3), ";
  EXPECT_EQ(*seen, (std::set<std::string>{
                       "cfg: " + g + "cfg axis (world ranks 0,2), rank 0 of 2, sum 2",
                       "cfg: " + g + "cfg axis (world ranks 0,2), rank 1 of 2, sum 2",
                       "cfg: " + g + "cfg axis (world ranks 1,3), rank 0 of 2, sum 2",
                       "cfg: " + g + "cfg axis (world ranks 1,3), rank 1 of 2, sum 2",
                       "sequence: " + g + "sequence axis (world ranks 0,1), rank 0 of 2, sum 2",
                       "sequence: " + g + "sequence axis (world ranks 0,1), rank 1 of 2, sum 2",
                       "sequence: " + g + "sequence axis (world ranks 2,3), rank 0 of 2, sum 2",
                       "sequence: " + g + "sequence axis (world ranks 2,3), rank 1 of 2, sum 2"}));
}

// Wraps the synthetic model and reports when a given request starts.
class WatchedPipeline final : public Pipeline {
 public:
  WatchedPipeline(std::unique_ptr<Pipeline> inner, std::string id,
                  std::shared_ptr<std::promise<void>> started)
      : inner_(std::move(inner)), id_(std::move(id)), started_(std::move(started)) {}
  Video generate(const Request& r, const GenerateContext& ctx) override {
    if (r.id == id_) started_->set_value();
    return inner_->generate(r, ctx);
  }
  std::string model_name() const override { return inner_->model_name(); }
  std::string device_name() const override { return inner_->device_name(); }

 private:
  std::unique_ptr<Pipeline> inner_;
  std::string id_;
  std::shared_ptr<std::promise<void>> started_;
};

TEST(InProcessJob, SignalOnAnyRankDrainsAndASecondAbandons) {
  TempDir dir("signal");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 6), dir.path() / "out", results);
  o.config.faults.hang_ids = {"r003"};  // never finishes unless abandoned
  o.config.scheduler.order = WorkOrder::manifest;
  auto started = std::make_shared<std::promise<void>>();
  std::future<void> running = started->get_future();
  o.make_pipeline = [cfg = o.config, started](const DeviceBinding& d) -> std::unique_ptr<Pipeline> {
    return std::make_unique<WatchedPipeline>(std::make_unique<models::SyntheticPipeline>(cfg, d),
                                             "r003", started);
  };
  std::atomic<int> level0{0};
  std::atomic<int> level1{0};
  std::vector<RankOutcome> outcomes;
  std::thread job([&] { outcomes = run_job_in_process(o, 2, {&level0, &level1}); });
  running.wait();   // r003 hangs now
  level1.store(1);  // SIGUSR1 on rank 1: drain
  level1.store(2);  // and again: abandon the hung request
  job.join();
  expect_all(outcomes, ExitCode::interrupted);
  const auto done = row_ids(*results);
  EXPECT_EQ(std::count(done.begin(), done.end(), "r003"), 0);
  EXPECT_TRUE(std::adjacent_find(done.begin(), done.end()) == done.end());
  EXPECT_TRUE(results::read_summary_json(dir.path() / "out" / "summary.json").interrupted);
}

TEST(InProcessJob, AHungRequestPastTheTimeoutAbortsTheJob) {
  TempDir dir("timeout");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 3), dir.path() / "out", results);
  o.config.faults.hang_ids = {"r001"};
  o.config.scheduler.order = WorkOrder::manifest;
  o.config.scheduler.request_timeout_s = 30.0;
  // The injected clock stands still until r001 (which never ends) has started; then it jumps
  // 1000 s: the watch fires for r001, and only for it (nothing else runs on the one replica).
  auto clock = std::make_shared<FakeClock>();
  o.clock = [clock] { return clock->read(); };
  auto started = std::make_shared<std::promise<void>>();
  std::future<void> running = started->get_future();
  o.make_pipeline = [cfg = o.config, started](const DeviceBinding& d) -> std::unique_ptr<Pipeline> {
    return std::make_unique<WatchedPipeline>(std::make_unique<models::SyntheticPipeline>(cfg, d),
                                             "r001", started);
  };
  std::vector<RankOutcome> outcomes;
  std::thread job([&] { outcomes = run_job_in_process(o, 1); });
  running.wait();
  clock->now.store(clock->read() + 1000.0);
  job.join();
  ASSERT_EQ(outcomes.size(), 1U);
  ASSERT_TRUE(outcomes[0].threw);
  EXPECT_EQ(outcomes[0].error,
            "job aborted with exit code 75: request 'r001' on rank 0 has run for 1000 s, longer "
            "than scheduler.request_timeout_s = 30 s; aborting the job (rerun with --resume to "
            "finish the rest)");
}

}  // namespace
}  // namespace omnidp::runtime
