// Whole jobs under mpirun at 1, 2 and 4 ranks (synthetic model, HDF5 rank files): every
// request done exactly once, failures isolated, round-robin assignment = i % R, drain + resume,
// a killed rank + resume, a hung request past the timeout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "job_test_support.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/results/attempt_log.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/summary.hpp"
#include "request_shape.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

struct RunResult {
  int exit_code = -1;
  std::string output;
};

// This process adopts every orphaned descendant (PR_SET_CHILD_SUBREAPER), so that it can wait
// for the ranks of a job that mpirun tore down: after a kill, mpirun can return while ranks it
// signalled are still exiting (slowly under ASan) and still hold their rank files' HDF5 locks.
void adopt_orphans() {
  static const bool adopted = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  ASSERT_TRUE(adopted) << "prctl(PR_SET_CHILD_SUBREAPER) failed";
}

// Waits until every descendant of this process has exited (waitpid until ECHILD).
void wait_for_descendants() {
  while (true) {
    int status = 0;
    if (::waitpid(-1, &status, 0) > 0) continue;
    if (errno == EINTR) continue;
    break;  // ECHILD: no process of an earlier job is left
  }
}

// Runs `mpirun -np N mpi_job_driver config overrides...`, capturing stdout and stderr. Returns
// once mpirun and every process it started are gone.
RunResult mpirun(int ranks, const fs::path& config, const std::vector<std::string>& overrides) {
  adopt_orphans();
  std::string cmd =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 "
      "mpirun --oversubscribe --bind-to none -np " +
      std::to_string(ranks) + " " + OMNIDP_BINARY_DIR "/tests/runtime/mpi_job_driver " +
      config.string();
  for (const auto& o : overrides) cmd += " '" + o + "'";
  cmd += " 2>&1";
  RunResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.output += buf;
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  wait_for_descendants();
  return r;
}

// Runs `cmd` under /bin/sh in the background with its output in `log`; returns its pid.
pid_t spawn_command(const std::string& cmd, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OMP_NUM_THREADS", "1", 1);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Starts mpirun in the background with its output in `log`; returns its pid.
pid_t spawn_mpirun(int ranks, const fs::path& config, const std::vector<std::string>& overrides,
                   const fs::path& log) {
  std::string cmd = "exec mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) +
                    " " + OMNIDP_BINARY_DIR "/tests/runtime/mpi_job_driver " + config.string();
  for (const auto& o : overrides) cmd += " '" + o + "'";
  return spawn_command(cmd, log);
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits (bounded) until `ready()` holds: an observed condition, not a fixed delay.
template <class F>
bool wait_for(F ready) {
  for (int i = 0; i < 3000; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Whether this machine's mpirun forwards SIGUSR1 to its processes, as Open MPI documents (the
// GPU machine's Open MPI 4.1.6 was seen to catch it and forward nothing): one sh rank that
// exits 0 on SIGUSR1 and 3 after 10 s without it.
bool mpirun_forwards_sigusr1(const fs::path& dir) {
  const fs::path log = dir / "probe.log";
  const pid_t pid = spawn_command(
      "exec mpirun --oversubscribe --bind-to none -np 1 sh -c 'trap \"exit 0\" USR1; echo ready; "
      "i=0; "
      "while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 3'",
      log);
  if (pid <= 0) return false;
  const bool ready = wait_for([&] { return read_text(log).find("ready") != std::string::npos; });
  if (ready) ::kill(pid, SIGUSR1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return ready && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

fs::path write_config(const fs::path& dir, const fs::path& manifest) {
  const fs::path file = dir / "job.yaml";
  std::ofstream out(file);
  out << "model:\n  name: synthetic\n  device: cpu\n"
      << "scheduler:\n  heartbeat_s: 0.5\n"
      << "input:\n  manifest: " << manifest.string() << "\n"
      << "output:\n  dir: " << (dir / "out").string() << "\n";
  return file;
}

// Every row of every rank file (not de-duplicated).
// A job of `requests` requests (write_manifest) in `dir` on `ranks` ranks with `overrides`.
RunResult mpirun_job(const fs::path& dir, int requests, int ranks,
                     const std::vector<std::string>& overrides) {
  return mpirun(ranks, write_config(dir, write_manifest(dir, requests)), overrides);
}

std::vector<results::StoredRow> all_rows(const fs::path& dir) {
  std::vector<results::StoredRow> rows;
  std::size_t order = 0;
  for (const auto& f : results::list_rank_files(dir)) {
    auto part = results::read_stored_rows(f, order++);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

std::map<std::string, int> count_ids(const std::vector<results::StoredRow>& rows) {
  std::map<std::string, int> n;
  for (const auto& r : rows) ++n[r.record.id];
  return n;
}

class MpiJob : public ::testing::TestWithParam<int> {};

TEST_P(MpiJob, EveryRequestOnceAndFailuresIsolated) {
  const int ranks = GetParam();
  TempDir dir("mpi-" + std::to_string(ranks));
  const auto run = mpirun_job(dir.path(), 16, ranks,
                              {"faults.fail_ids=[r005]", "faults.transient_fail_ids=[r007]"});
  ASSERT_EQ(run.exit_code, 1) << run.output;
  const auto rows = all_rows(dir.path() / "out");
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 16U) << run.output;
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
  for (const auto& row : rows) {
    const auto& r = row.record;
    EXPECT_GE(r.rank, 0);
    EXPECT_LT(r.rank, ranks);
    if (r.id == "r005") {
      EXPECT_EQ(r.status, RequestStatus::failed);
      EXPECT_EQ(r.error, "request r005: synthetic failure injected (faults.fail_ids)");
    } else {
      EXPECT_EQ(r.status, RequestStatus::ok) << r.id << ": " << r.error;
      EXPECT_TRUE(row.video_present) << r.id;
      const int i = std::stoi(r.id.substr(1));
      EXPECT_EQ(r.video_sha256, video_sha256(models::synthetic_video(1000 + i, r.frames, 32, 48)));
      EXPECT_EQ(r.attempt, r.id == "r007" ? 2 : 1) << r.id;
    }
  }
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "results.h5"));
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.completed, 15U);
  EXPECT_EQ(s.failed, 1U);
  EXPECT_EQ(s.world_size, ranks);
  EXPECT_NE(run.output.find("summary: 15 completed, 1 failed"), std::string::npos) << run.output;
}

TEST_P(MpiJob, RoundRobinRankIsIndexModuloRanks) {
  const int ranks = GetParam();
  TempDir dir("mpi-rr-" + std::to_string(ranks));
  const auto run = mpirun_job(dir.path(), 10, ranks, {"scheduler.policy=round_robin"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto rows = all_rows(dir.path() / "out");
  ASSERT_EQ(rows.size(), 10U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.rank, std::stoi(row.record.id.substr(1)) % ranks) << row.record.id;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, MpiJob, ::testing::Values(1, 2, 4));

TEST(MpiJobReliability, DrainThenResume) {
  TempDir dir("mpi-drain");
  const auto manifest = write_manifest(dir.path(), 16);
  const auto config = write_config(dir.path(), manifest);
  // faults.drain_after=3: exactly the first 3 requests (manifest order) run, then the drain.
  const auto first = mpirun(2, config, {"faults.drain_after=3", "scheduler.order=manifest"});
  ASSERT_EQ(first.exit_code, 75) << first.output;
  const auto partial = count_ids(all_rows(dir.path() / "out"));
  EXPECT_EQ(partial, (std::map<std::string, int>{{"r000", 1}, {"r001", 1}, {"r002", 1}}));
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "results.h5"));  // the partial set, merged
  const auto second = mpirun(2, config, {});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto counts = count_ids(all_rows(dir.path() / "out"));
  ASSERT_EQ(counts.size(), 16U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.skipped_resume, 3U);
}

// A drain signal before MPI_Init (a launcher's SIGUSR1 or SIGTERM in the first moments) finds
// the handlers in place: the job drains with nothing handed out, exit 75, and the rerun does
// everything once. Before the handlers went first, the signal killed the ranks.
TEST(MpiJobReliability, ASignalBeforeMpiInitDrainsTheJob) {
  TempDir dir("mpi-early-signal");
  const auto manifest = write_manifest(dir.path(), 6);
  const auto config = write_config(dir.path(), manifest);
  const auto first = mpirun(2, config, {"faults.signal_at_start=true"});
  ASSERT_EQ(first.exit_code, 75) << first.output;
  EXPECT_TRUE(all_rows(dir.path() / "out").empty());
  const auto second = mpirun(2, config, {});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto counts = count_ids(all_rows(dir.path() / "out"));
  ASSERT_EQ(counts.size(), 6U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
}

// A 4x4 RGB PNG (signature, IHDR, one IDAT, IEND).
void write_tiny_png(const fs::path& file) {
  static const char kPng[] =
      "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x04\x00\x00\x00"
      "\x04\x08\x02"
      "\x00\x00\x00\x26\x93\x09\x29\x00\x00\x00\x10\x49\x44\x41\x54\x78\x9c\x63\xa8\xb0\x91\x83\x23"
      "\x06\xe2\x38"
      "\x00\x5b\x23\x0d\x21\xef\x7f\x89\x3d\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
  std::ofstream(file, std::ios::binary).write(kPng, sizeof kPng - 1);
}

// input.tasks: two jobs share one mixed manifest and one output folder. Each runs only its
// task's lines and counts the others as skipped by the filter (not failed, not left to do);
// a third run with both tasks finds everything done.
TEST(MpiJobTasks, TwoJobsShareAMixedManifest) {
  TempDir dir("mpi-tasks");
  write_tiny_png(dir.path() / "img.png");
  const auto manifest = write_manifest(
      dir.path(), 4,
      {R"({"id": "i000", "prompt": "cat", "image": "img.png", "num_frames": 5, "height": 32, "width": 48, "num_inference_steps": 2})",
       R"({"id": "i001", "prompt": "dog", "image": "img.png", "num_frames": 9, "height": 32, "width": 48, "num_inference_steps": 2})"});
  const auto config = write_config(dir.path(), manifest);
  const fs::path out = dir.path() / "out";

  const auto i2v = mpirun(2, config, {"input.tasks=[i2v]"});
  ASSERT_EQ(i2v.exit_code, 0) << i2v.output;
  EXPECT_EQ(count_ids(all_rows(out)), (std::map<std::string, int>{{"i000", 1}, {"i001", 1}}));
  RunSummary s = results::read_summary_json(out / "summary.json");
  EXPECT_EQ(s.total, 2U);
  EXPECT_EQ(s.completed, 2U);
  EXPECT_EQ(s.failed, 0U);
  EXPECT_EQ(s.skipped_tasks, 4U);
  EXPECT_EQ(s.skipped_resume, 0U);
  EXPECT_NE(i2v.output.find("summary: 2 completed, 0 failed, 4 skipped (input.tasks)\n"),
            std::string::npos)
      << i2v.output;
  // The effective configuration, as printed and stored, says where the defaults came from.
  const std::string defaults =
      "# generation defaults: guidance_scale 5 (model default), flow_shift 5 (model default)\n";
  EXPECT_NE(i2v.output.find("  tasks: [i2v]\n"), std::string::npos) << i2v.output;
  EXPECT_NE(i2v.output.find(defaults), std::string::npos) << i2v.output;
  const std::string stored = results::read_file_info(results::list_rank_files(out).at(0)).config_yaml;
  EXPECT_EQ(stored.substr(stored.size() - defaults.size()), defaults);

  // The other task's job, resuming in the same folder: the i2v rows done are neither run again
  // nor missing; they are the other job's lines.
  const auto t2v = mpirun(2, config, {"input.tasks=[t2v]"});
  ASSERT_EQ(t2v.exit_code, 0) << t2v.output;
  const auto counts = count_ids(all_rows(out));
  ASSERT_EQ(counts.size(), 6U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
  s = results::read_summary_json(out / "summary.json");
  EXPECT_EQ(s.total, 4U);
  EXPECT_EQ(s.completed, 4U);
  EXPECT_EQ(s.skipped_tasks, 2U);
  EXPECT_EQ(s.skipped_resume, 0U);

  // Both tasks: all six are done.
  const auto both = mpirun(1, config, {});
  ASSERT_EQ(both.exit_code, 0) << both.output;
  s = results::read_summary_json(out / "summary.json");
  EXPECT_EQ(s.completed, 0U);
  EXPECT_EQ(s.skipped_resume, 6U);
  EXPECT_EQ(s.skipped_tasks, 0U);
  EXPECT_EQ(count_ids(all_rows(out)).size(), 6U);
}

// No signal at all: the deadline alone drains the job. 4 equal requests of 8 s on 2 ranks,
// deadline 20 s after launch, margin 5 s: each replica gets its first request at once (no
// time scale yet) and it ends 8 s + the start-up later; a second one would end 16 s + the
// start-up later, past the 15 s left: never fits, whatever the start-up takes (< 15 s).
TEST(MpiJobReliability, DeadlineWithoutSignalsDrainsThenRerunFinishes) {
  TempDir dir("mpi-deadline");
  const std::vector<std::string> lines = sized_lines(4, 50, 4);
  const auto manifest = write_manifest(dir.path(), 0, lines);
  const auto config = write_config(dir.path(), manifest);
  // The synthetic model takes seconds_per_gcost x cost / 1e9 s: calibrate it to 8 s.
  const Request probe = test::sized_request(9, 32, 48, 4, 6.0, 0.0);
  Config c;
  c.model.name = "synthetic";
  const double cost = prior_cost(describe_model(c.model), probe);
  ASSERT_GT(cost, 0.0);
  const std::string spg = "synthetic.seconds_per_gcost=" + std::to_string(8.0 * 1e9 / cost);
  const auto first = mpirun(2, config, {spg, "scheduler.deadline_margin_s=5", "--deadline=+20s"});
  ASSERT_EQ(first.exit_code, 75) << first.output;
  EXPECT_NE(first.output.find("(from --deadline +20s)"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("coordinator: deadline: no further request fits"), std::string::npos)
      << first.output;
  const auto partial = count_ids(all_rows(dir.path() / "out"));
  EXPECT_EQ(partial.size(), 2U) << first.output;  // one per replica
  for (const auto& [id, n] : partial) EXPECT_EQ(n, 1) << id;
  EXPECT_TRUE(results::read_summary_json(dir.path() / "out" / "summary.json").interrupted);
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "results.h5"));

  const auto second = mpirun(2, config, {"synthetic.seconds_per_gcost=0"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto rows = all_rows(dir.path() / "out");
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 4U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
  for (const auto& row : rows) {
    const int i = std::stoi(row.record.id.substr(1));
    EXPECT_EQ(row.record.video_sha256, video_sha256(models::synthetic_video(50 + i, 9, 32, 48)))
        << row.record.id;
  }
}

// A run started while another process holds a rank file's lock (an earlier run still writing
// this folder): a clear error naming the file, exit 2, no HDF5 error stack.
TEST(MpiJobReliability, ARankFileLockedByALiveProcessIsAClearError) {
  TempDir dir("mpi-locked");
  const auto manifest = write_manifest(dir.path(), 2);
  const auto config = write_config(dir.path(), manifest);
  ASSERT_EQ(mpirun(1, config, {}).exit_code, 0);
  const fs::path file = dir.path() / "out" / "rank-00000.h5";
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as HDF5 does for a file open for writing
  const auto run = mpirun(2, config, {});
  ::close(fd);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(file.string() + ": is locked by another process (HDF5 file lock: "
                                            "'unable to lock the file, errno = 11'): is an "
                                            "earlier run still running on this folder"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("H5Fopen"), std::string::npos) << run.output;
}

TEST(MpiJobReliability, SignalsOnMpirunDrainThenAbandon) {
  TempDir dir("mpi-signal");
  if (!mpirun_forwards_sigusr1(dir.path())) {
    GTEST_SKIP()
        << "this machine's mpirun does not forward SIGUSR1 to its processes (probed with one sh "
           "rank); a job there is drained by signalling its ranks (e.g. scancel --signal=USR1)";
  }
  const auto manifest = write_manifest(dir.path(), 8);
  const fs::path log = dir.path() / "run.log";
  // r000 hangs: the job cannot end until the second signal abandons it.
  const pid_t pid = spawn_mpirun(2, write_config(dir.path(), manifest),
                                 {"faults.hang_ids=[r000]", "scheduler.order=manifest"}, log);
  ASSERT_GT(pid, 0);
  // Work has started (r000 first, in manifest order): every rank has its handlers installed.
  ASSERT_TRUE(wait_for([&] { return read_text(log).find("work starts") != std::string::npos; }))
      << read_text(log);
  ::kill(pid, SIGUSR1);  // Open MPI forwards SIGUSR1 to every rank
  ASSERT_TRUE(wait_for([&] {
    return read_text(log).find("coordinator: draining") != std::string::npos;
  })) << read_text(log);
  ::kill(pid, SIGUSR1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string output = read_text(log);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 75) << output;
  EXPECT_NE(output.find("coordinator: abandoning running requests"), std::string::npos) << output;
  const auto counts = count_ids(all_rows(dir.path() / "out"));
  EXPECT_EQ(counts.count("r000"), 0U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "results.h5"));
  EXPECT_TRUE(results::read_summary_json(dir.path() / "out" / "summary.json").interrupted);
}

// The job of 12 requests on 2 ranks (round robin) in `dir` whose rank `kill_rank` SIGKILLs
// itself after its second flushed completion: its config, and the run in `first`.
fs::path run_killing_rank(const fs::path& dir, int kill_rank, RunResult& first) {
  const auto config = write_config(dir, write_manifest(dir, 12));
  first = mpirun(2, config,
                 {"faults.kill_rank=" + std::to_string(kill_rank), "faults.kill_after=2",
                  "scheduler.policy=round_robin"});
  return config;
}

// The rerun of that job (round robin) succeeds and <dir>/out then holds each of the 12
// requests once; its rows in `rows`.
void expect_resume_does_each_once(const fs::path& dir, const fs::path& config,
                                  std::vector<results::StoredRow>& rows) {
  const auto second = mpirun(2, config, {"scheduler.policy=round_robin"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  rows = all_rows(dir / "out");
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 12U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
}

TEST(MpiJobReliability, KilledRankThenResume) {
  TempDir dir("mpi-kill");
  RunResult first;
  const auto config = run_killing_rank(dir.path(), 1, first);
  EXPECT_NE(first.exit_code, 0) << first.output;
  const auto rows = all_rows(dir.path() / "out");
  std::size_t rank1_ok = 0;
  for (const auto& r : rows)
    rank1_ok += (r.record.rank == 1 && r.record.status == RequestStatus::ok) ? 1 : 0;
  EXPECT_EQ(rank1_ok, 2U);  // both flushed completions of the killed rank survive
  std::vector<results::StoredRow> resumed;
  expect_resume_does_each_once(dir.path(), config, resumed);
}

// Rank 0 is the coordinator and also works: it SIGKILLs itself after its second flushed
// completion. mpirun ends the job; what both ranks flushed stays readable; --resume finishes the
// rest with the hashes of an uninterrupted run and no duplicate rows.
TEST(MpiJobReliability, KilledRankZeroThenResume) {
  TempDir dir("mpi-kill0");
  RunResult first;
  const auto config = run_killing_rank(dir.path(), 0, first);
  EXPECT_NE(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("faults.kill_rank: rank 0 kills itself after 2 completions"),
            std::string::npos)
      << first.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "results.h5"));  // nobody merged
  const auto before = all_rows(dir.path() / "out");
  std::size_t rank0_ok = 0;
  for (const auto& row : before) {
    const auto& r = row.record;
    rank0_ok += (r.rank == 0 && r.status == RequestStatus::ok) ? 1 : 0;
    ASSERT_EQ(r.status, RequestStatus::ok) << r.id << ": " << r.error;
    ASSERT_TRUE(row.video_present) << r.id;
    const int i = std::stoi(r.id.substr(1));
    EXPECT_EQ(r.rank, i % 2) << r.id;  // round robin
    EXPECT_EQ(r.video_sha256, video_sha256(models::synthetic_video(1000 + i, r.frames, 32, 48)));
  }
  EXPECT_EQ(rank0_ok, 2U);  // both flushed completions of the killed coordinator survive
  for (const auto& [id, n] : count_ids(before)) EXPECT_EQ(n, 1) << id;

  std::vector<results::StoredRow> rows;
  expect_resume_does_each_once(dir.path(), config, rows);
  if (::testing::Test::HasFatalFailure()) return;
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.skipped_resume, before.size());

  // The merged results.h5 equals an uninterrupted run's, hash for hash.
  const auto clean = mpirun(2, config, {"output.dir=" + (dir.path() / "clean").string()});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const auto merged = results::read_stored_rows(dir.path() / "out" / "results.h5");
  const auto reference = results::read_stored_rows(dir.path() / "clean" / "results.h5");
  ASSERT_EQ(merged.size(), 12U);
  ASSERT_EQ(reference.size(), 12U);
  std::map<std::string, std::string> expected;
  for (const auto& row : reference) expected[row.record.id] = row.record.video_sha256;
  for (const auto& row : merged) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_EQ(row.record.video_sha256, expected[row.record.id]) << row.record.id;
  }
}

TEST(MpiJobReliability, KilledInsideAWriteThenResume) {
  TempDir dir("mpi-kill-write");
  const auto manifest = write_manifest(dir.path(), 10);
  const auto config = write_config(dir.path(), manifest);
  const auto first = mpirun(2, config,
                            {"faults.kill_rank=1", "faults.kill_after=2",
                             "faults.kill_in_write=true", "scheduler.policy=round_robin"});
  EXPECT_NE(first.exit_code, 0) << first.output;
  std::size_t rank1_ok = 0;
  for (const auto& r : all_rows(dir.path() / "out")) {
    rank1_ok +=
        (r.record.rank == 1 && r.record.status == RequestStatus::ok && r.video_present) ? 1 : 0;
  }
  EXPECT_LE(rank1_ok, 2U);  // the first write is durable; the torn second may or may not be
  EXPECT_GE(rank1_ok, 1U);
  const auto second = mpirun(2, config, {"scheduler.policy=round_robin"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto merged = results::select_rows(all_rows(dir.path() / "out"));
  ASSERT_EQ(merged.size(), 10U);
  for (const auto& row : merged) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    const int i = std::stoi(row.record.id.substr(1));
    EXPECT_EQ(row.record.video_sha256,
              video_sha256(models::synthetic_video(1000 + i, row.record.frames, 32, 48)));
  }
}

TEST(MpiJobGroups, LeadersRecordTheRequestsAndMembersReportTheirOwnBusyTime) {
  TempDir dir("mpi-groups");
  const auto run =
      mpirun_job(dir.path(), 8, 4, {"parallel.cfg_parallel_size=2", "scheduler.policy=round_robin"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto rows = all_rows(dir.path() / "out");
  ASSERT_EQ(rows.size(), 8U);
  for (const auto& row : rows) {
    const int i = std::stoi(row.record.id.substr(1));
    EXPECT_EQ(row.record.replica, i % 2) << row.record.id;
    EXPECT_EQ(row.record.rank, 2 * (i % 2)) << row.record.id;
  }
  const RunSummary s = results::read_summary_json(dir.path() / "out" / "summary.json");
  EXPECT_EQ(s.replicas, 2);
  EXPECT_EQ(s.cfg_parallel_size, 2);
  ASSERT_EQ(s.busy_s_per_rank.size(), 4U);
  // The members (ranks 1, 3) ran every request of their group themselves (the synthetic model
  // runs on every rank of a group): busy, and measured there, not copied from the leader.
  for (int member : {1, 3}) {
    EXPECT_GT(s.busy_s_per_rank[static_cast<std::size_t>(member)], 0.0) << member;
    EXPECT_NE(s.busy_s_per_rank[static_cast<std::size_t>(member)],
              s.busy_s_per_rank[static_cast<std::size_t>(member - 1)])
        << member;
  }
  EXPECT_EQ(results::list_rank_files(dir.path() / "out").size(), 2U);  // leaders only
}

// Device binding: the local rank comes from the shared-memory split, and each rank takes the
// device of its local rank (the synthetic model accepts a cuda binding without a GPU).
TEST(MpiJobDevices, EachRankTakesTheDeviceOfItsLocalRank) {
  TempDir dir("mpi-devices");
  const auto manifest = write_manifest(dir.path(), 4);
  const auto run = mpirun(2, write_config(dir.path(), manifest), {"model.device=cuda"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto files = results::list_rank_files(dir.path() / "out");
  ASSERT_EQ(files.size(), 2U);
  for (const auto& f : files) {
    const auto info = results::read_file_info(f);
    EXPECT_EQ(info.device, "cuda:" + std::to_string(info.rank))
        << f;  // one node: local = world rank
  }
  const auto listed = mpirun(2, write_config(dir.path(), manifest),
                             {"model.device=cuda", "parallel.devices=[3, 5]",
                              "output.dir=" + (dir.path() / "out2").string()});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  for (const auto& f : results::list_rank_files(dir.path() / "out2")) {
    const auto info = results::read_file_info(f);
    EXPECT_EQ(info.device, info.rank == 0 ? "cuda:3" : "cuda:5") << f;
  }
}

TEST(MpiJobGroups, AWorldTheGroupsDoNotDivideIsAConfigError) {
  TempDir dir("mpi-groups-bad");
  const auto run = mpirun_job(dir.path(), 2, 3, {"parallel.cfg_parallel_size=2"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("parallel: 3 working rank(s) (world size 3) cannot be split into "
                            "replica groups of tensor_parallel_size x sequence_parallel_size x "
                            "cfg_parallel_size = 1 x 1 x 2 = 2 ranks"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(MpiJobReliability, HungRequestAbortsWithAClearMessage) {
  TempDir dir("mpi-hang");
  const auto manifest = write_manifest(dir.path(), 4);
  const auto run = mpirun(2, write_config(dir.path(), manifest),
                          {"faults.hang_ids=[r002]", "scheduler.request_timeout_s=1"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("request 'r002' on rank "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("longer than scheduler.request_timeout_s = 1 s; aborting the job"),
            std::string::npos)
      << run.output;
  // Nothing is lost: the rerun (the hang gone, as after a Slurm requeue) resumes and finishes
  // every request exactly once.
  const auto second = mpirun(2, write_config(dir.path(), manifest), {});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto counts = count_ids(all_rows(dir.path() / "out"));
  ASSERT_EQ(counts.size(), 4U) << second.output;
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
}

// Issue 39, class 6 end to end: a request that hangs on every attempt aborted the job with
// exit 75 on every run, so a requeue loop never ended. Its interrupted attempts are counted
// across runs: once they pass scheduler.max_retries it is recorded failed without running, and
// the run ends with exit 1.
TEST(MpiJobReliability, ARequestThatAlwaysHangsIsRecordedFailedAfterMaxRetries) {
  TempDir dir("mpi-poison");
  const auto config = write_config(dir.path(), write_manifest(dir.path(), 4));
  const std::vector<std::string> poison = {
      "faults.hang_ids=[r002]", "scheduler.request_timeout_s=1", "scheduler.max_retries=1"};
  for (int run = 1; run <= 2; ++run) {
    const auto aborted = mpirun(2, config, poison);
    EXPECT_EQ(aborted.exit_code, 75) << "run " << run << "\n" << aborted.output;
    EXPECT_NE(
        aborted.output.find("longer than scheduler.request_timeout_s = 1 s; aborting the job"),
        std::string::npos)
        << aborted.output;
  }
  const auto last = mpirun(2, config, poison);
  EXPECT_EQ(last.exit_code, 1) << last.output;
  const auto rows = all_rows(dir.path() / "out");
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 4U) << last.output;
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " recorded twice";
  for (const auto& row : rows) {
    if (row.record.id != "r002") {
      EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
      continue;
    }
    EXPECT_EQ(row.record.status, RequestStatus::failed);
    EXPECT_NE(row.record.error.find("not run again: 2 attempt(s) of this request (counted across "
                                    "runs) were interrupted before they ended"),
              std::string::npos)
        << row.record.error;
  }
}

// The lines of `dir`/attempts-rank-NNNNN.log.
std::vector<std::string> attempt_lines(const fs::path& dir, int rank) {
  std::vector<std::string> lines;
  std::istringstream in(read_text(results::attempt_log_path(dir, rank)));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether rank `rank`'s attempt log has started attempt `attempt` of `id`, and the pid of its
// last run segment (0: none yet).
bool started_attempt(const fs::path& dir, int rank, const std::string& id, int attempt,
                     pid_t* pid = nullptr) {
  bool started = false;
  for (const auto& line : attempt_lines(dir, rank)) {
    if (line.starts_with("run\t")) {
      if (pid != nullptr) *pid = static_cast<pid_t>(std::stol(line.substr(4)));
      started = false;
    }
    if (line.starts_with("start\t" + std::to_string(attempt) + "\t") && line.ends_with("\t" + id)) {
      started = true;
    }
  }
  return started;
}

// Issue 52, class 1: a kill of one rank (twice) made every later run refuse the requests the
// other ranks were running when mpirun ended the job, so a resume never completed. Three ranks
// run a request each that hangs (round robin, manifest order: r00k on rank k); once all three
// have started, rank 2 is killed from outside (SIGKILL, as the OOM killer or `kill -9`). mpirun
// ends ranks 0 and 1 (SIGTERM): their attempts are excused. Twice; the third run records only
// r002 failed (its own rank died twice while running it) and completes the rest, r000 and r001
// included.
TEST(MpiJobReliability, AKilledRankCountsOnlyTheRequestItWasRunning) {
  adopt_orphans();  // the ranks mpirun tore down are waited for before the next run
  TempDir dir("mpi-blame");
  const fs::path out = dir.path() / "out";
  const auto config = write_config(dir.path(), write_manifest(dir.path(), 6));
  const std::vector<std::string> hang = {"faults.hang_ids=[r000, r001, r002]",
                                         "scheduler.policy=round_robin", "scheduler.order=manifest"};
  for (int run = 1; run <= 2; ++run) {
    const fs::path log = dir.path() / ("run" + std::to_string(run) + ".log");
    const pid_t mpirun_pid = spawn_mpirun(3, config, hang, log);
    ASSERT_GT(mpirun_pid, 0);
    pid_t victim = 0;
    ASSERT_TRUE(wait_for([&] {
      return started_attempt(out, 0, "r000", run) && started_attempt(out, 1, "r001", run) &&
             started_attempt(out, 2, "r002", run, &victim);
    })) << read_text(log);
    ASSERT_GT(victim, 0);
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(mpirun_pid, &status, 0), mpirun_pid);
    wait_for_descendants();
    EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(log);
  }
  const auto logs = results::read_attempt_logs(out);
  const auto rows0 = all_rows(out);
  std::map<std::string, std::string> keys;  // every request of the manifest ran or was started
  for (const auto& [key, history] : logs) keys[key.substr(0, key.find('\n'))] = key;
  ASSERT_EQ(logs.at(keys.at("r000")).interrupted, 0);
  ASSERT_EQ(logs.at(keys.at("r000")).excused, 2);
  ASSERT_EQ(logs.at(keys.at("r001")).interrupted, 0);
  ASSERT_EQ(logs.at(keys.at("r002")).interrupted, 2);

  const auto last = mpirun(3, config, {"scheduler.policy=round_robin", "scheduler.order=manifest"});
  EXPECT_EQ(last.exit_code, 1) << last.output;
  const auto rows = all_rows(out);
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 6U) << last.output;
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " recorded twice";
  for (const auto& row : rows) {
    const auto& r = row.record;
    if (r.id == "r002") {
      EXPECT_EQ(r.status, RequestStatus::failed);
      EXPECT_NE(r.error.find("not run again: 2 attempt(s) of this request (counted across runs) "
                             "were interrupted before they ended"),
                std::string::npos)
          << r.error;
      continue;
    }
    EXPECT_EQ(r.status, RequestStatus::ok) << r.id << ": " << r.error;
    if (r.id == "r000" || r.id == "r001") {
      EXPECT_EQ(r.attempt, 3) << r.id;
    }
  }
}

// The issue's own reproduction: faults.kill_rank=1 faults.kill_after=1 twice, then a clean
// rerun, which exited 1 with the request rank 0 was running ('big', here r000 hanging so that it
// still runs when rank 1 kills itself) refused as poison on every later run. Now the clean
// rerun completes: exit 0, every request once; the kill (a simulated kill from outside) is
// counted against nothing, and neither is mpirun's end of rank 0.
TEST(MpiJobReliability, AKilledWorkerTwiceThenACleanRerunCompletes) {
  TempDir dir("mpi-kill-twice");
  const fs::path out = dir.path() / "out";
  const auto config = write_config(dir.path(), write_manifest(dir.path(), 8));
  for (int run = 1; run <= 2; ++run) {
    const auto killed =
        mpirun(2, config,
               {"faults.kill_rank=1", "faults.kill_after=1", "faults.hang_ids=[r000]",
                "scheduler.policy=round_robin", "scheduler.order=manifest"});
    EXPECT_NE(killed.exit_code, 0) << killed.output;
    EXPECT_NE(killed.output.find("faults.kill_rank: rank 1 kills itself after 1 completions"),
              std::string::npos)
        << killed.output;
  }
  for (const auto& [key, history] : results::read_attempt_logs(out)) {
    EXPECT_EQ(history.interrupted, 0) << key;
  }
  const auto clean = mpirun(2, config, {"scheduler.policy=round_robin", "scheduler.order=manifest"});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const auto rows = all_rows(out);
  const auto counts = count_ids(rows);
  ASSERT_EQ(counts.size(), 8U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
  for (const auto& row : rows) EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
}

// Issue 52, class 9: two jobs started at once on one folder both generated every request, then
// one failed at the merge. The second job now fails at once, before any work: exit 2, one line
// naming the folder and the holder; the first is untouched and a rerun completes.
TEST(MpiJobReliability, ASecondJobOnABusyFolderFailsAtOnce) {
  adopt_orphans();
  TempDir dir("mpi-two-jobs");
  const fs::path out = dir.path() / "out";
  const auto config = write_config(dir.path(), write_manifest(dir.path(), 4));
  const fs::path log = dir.path() / "first.log";
  const pid_t first = spawn_mpirun(2, config, {"faults.hang_ids=[r000]"}, log);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_for([&] { return read_text(log).find("work starts") != std::string::npos; }))
      << read_text(log);
  for (int ranks : {1, 2}) {  // the same folder, the same or another world size
    const fs::path second_log = dir.path() / ("second-" + std::to_string(ranks) + ".log");
    const pid_t second = spawn_mpirun(ranks, config, {}, second_log);
    int second_status = 0;
    ASSERT_EQ(::waitpid(second, &second_status, 0), second);  // not the first job's end
    const std::string output = read_text(second_log);
    ASSERT_TRUE(WIFEXITED(second_status)) << output;
    EXPECT_EQ(WEXITSTATUS(second_status), 2) << output;
    EXPECT_NE(output.find(out.string() +
                          ": the output folder is in use by another omni-dp-batch job (pid "),
              std::string::npos)
        << output;
    EXPECT_EQ(output.find("work starts"), std::string::npos) << output;
  }
  ::kill(first, SIGTERM);  // mpirun ends its ranks
  int status = 0;
  ASSERT_EQ(::waitpid(first, &status, 0), first);
  wait_for_descendants();
  for (const auto& [id, n] : count_ids(all_rows(out))) EXPECT_EQ(n, 1) << id;
  const auto rerun = mpirun(2, config, {});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  const auto counts = count_ids(all_rows(out));
  ASSERT_EQ(counts.size(), 4U);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
}

// Issue 52, class 9: the output folder deleted or renamed during the run ended with exit 2
// "no rank-*.h5 files to merge" after every request was generated. Rank 0 notices within a
// second and stops the job: exit 1, the message says what happened.
TEST(MpiJobReliability, AnOutputFolderRemovedOrRenamedDuringTheRunIsAClearError) {
  adopt_orphans();
  for (const std::string how : {"renamed", "removed"}) {
    TempDir dir("mpi-lost-" + how);
    const fs::path out = dir.path() / "out";
    const auto config = write_config(dir.path(), write_manifest(dir.path(), 4));
    const fs::path log = dir.path() / "run.log";
    const pid_t pid = spawn_mpirun(2, config, {"faults.hang_ids=[r000]"}, log);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_for([&] { return read_text(log).find("work starts") != std::string::npos; }))
        << read_text(log);
    if (how == "renamed") {
      fs::rename(out, dir.path() / "moved");
    } else {
      fs::remove_all(out);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    wait_for_descendants();
    const std::string output = read_text(log);
    ASSERT_TRUE(WIFEXITED(status)) << how << "\n" << output;
    EXPECT_EQ(WEXITSTATUS(status), 1) << how << "\n" << output;
    EXPECT_NE(
        output.find("the output folder " + out.string() + " was removed or renamed during the run"),
        std::string::npos)
        << how << "\n"
        << output;
    EXPECT_EQ(output.find("no rank-*.h5 files to merge"), std::string::npos) << output;
  }
}

// Issue 52, class 8: TERM or INT (Ctrl-C) to a plain `mpirun` exited 1, not 75, and the ranks
// were killed mid-drain: no summary.json, live tables left. Open MPI 4.1's mpirun answers them
// with SIGCONT to the ranks, SIGTERM a second later (odls_base_sigkill_timeout) and SIGKILL a
// second after that, and exits 1 whatever the ranks return: a drain cannot finish there (here
// r000 hangs, so it never could). What holds now: summary.json is written when the drain starts
// (interrupted), every flushed row survives, and the rerun completes and removes the live
// tables the kill left. A requeue-safe drain sends USR1 (docs/reliability.md).
TEST(MpiJobReliability, TermOrIntToMpirunKeepsThePartialSummaryAndTheRerunCompletes) {
  adopt_orphans();
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir dir("mpi-term-" + std::to_string(sig));
    const fs::path out = dir.path() / "out";
    const auto config = write_config(dir.path(), write_manifest(dir.path(), 6));
    const fs::path log = dir.path() / "run.log";
    const pid_t pid = spawn_mpirun(2, config, {"faults.hang_ids=[r000]"}, log);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_for([&] { return read_text(log).find("work starts") != std::string::npos; }))
        << read_text(log);
    ASSERT_EQ(::kill(pid, sig), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    wait_for_descendants();
    const std::string output = read_text(log);
    ASSERT_TRUE(WIFEXITED(status)) << output;
    EXPECT_EQ(WEXITSTATUS(status), 1) << sig << "\n" << output;  // Open MPI's, not the ranks'
    EXPECT_NE(output.find("coordinator: draining: no new work"), std::string::npos) << output;
    ASSERT_TRUE(fs::exists(out / "summary.json")) << sig << "\n" << output;
    const RunSummary partial = results::read_summary_json(out / "summary.json");
    EXPECT_TRUE(partial.interrupted);
    EXPECT_EQ(partial.total, 6U);
    EXPECT_FALSE(fs::exists(out / "results.h5"));  // killed before the merge
    bool live_left = false;
    for (const auto& e : fs::directory_iterator(out)) {
      live_left = live_left || e.path().extension() == ".live";
    }
    EXPECT_TRUE(live_left) << "the kill left no live table: the case is not tried";

    const auto rerun = mpirun(2, config, {});
    ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
    const auto counts = count_ids(all_rows(out));
    ASSERT_EQ(counts.size(), 6U);
    for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id << " done twice";
    for (const auto& e : fs::directory_iterator(out)) {
      EXPECT_NE(e.path().extension(), ".live") << e.path();
    }
    const RunSummary done = results::read_summary_json(out / "summary.json");
    EXPECT_FALSE(done.interrupted);
    EXPECT_TRUE(fs::exists(out / "results.h5"));
  }
}

// A rank that stops (SIGSTOP after its second completion: the process stays but sends nothing)
// made the job wait forever. Rank 0 takes it for lost after scheduler.silent_timeout_s and
// aborts the job (exit 75 for a requeue); the rerun finishes every request exactly once.
TEST(MpiJobReliability, AStoppedRankAbortsTheJobThenResume) {
  TempDir dir("mpi-stop");
  const auto config = write_config(dir.path(), write_manifest(dir.path(), 12));
  const auto first =
      mpirun(2, config,
             {"faults.kill_rank=1", "faults.kill_after=2", "faults.stop_not_kill=true",
              "scheduler.policy=round_robin", "scheduler.silent_timeout_s=5"});
  EXPECT_NE(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("faults.kill_rank: rank 1 stops itself after 2 completions"),
            std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("coordinator: replica 1 (rank 1) sent nothing for "), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("(scheduler.silent_timeout_s = 5): the process is stopped"),
            std::string::npos)
      << first.output;
  std::vector<results::StoredRow> resumed;
  expect_resume_does_each_once(dir.path(), config, resumed);
}

}  // namespace
}  // namespace omnidp::runtime
