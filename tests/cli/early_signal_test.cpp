// Issue 52, class 7: a drain signal in a job's first seconds killed a rank (`exited on signal
// 10`, exit 138): it came while the shared libraries initialized (libtorch: seconds before main),
// under the default disposition. omni-dp-batch installs its counting handlers from its
// .preinit_array, before any library's initializer: the signal is counted and the job drains
// once it starts (exit 75, nothing run); a command that starts no job still ends on it. The
// signal is sent from inside the process at fixed points (a preloaded library's initializer,
// the preinit function itself), not after a delay.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "omnidp/results/result_files.hpp"
#include "test_files.hpp"

namespace omnidp::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::write_text;

struct ExeRun {
  int exit_code = -1;  // 128 + the signal that ended it
  std::string output;
};

ExeRun run(const std::string& cmd) {
  ExeRun r;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.output += buf;
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class EarlySignal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("omnidp-early-signal-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    std::string manifest;
    for (int i = 0; i < 4; ++i) {
      manifest += R"({"id": "r00)" + std::to_string(i) + R"(", "prompt": "p", "seed": )" +
                  std::to_string(i) + "}\n";
    }
    write_text(dir_ / "m.jsonl", manifest);
    write_text(dir_ / "c.yaml",
               "model: {name: synthetic, device: cpu}\n"
               "generation: {num_frames: 5, height: 32, width: 48, num_inference_steps: 2}\n"
               "synthetic: {seconds_per_gcost: 0}\n"
               "input: {manifest: " +
                   (dir_ / "m.jsonl").string() + "}\noutput: {dir: " + (dir_ / "out").string() +
                   "}\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  [[nodiscard]] std::string batch(const std::string& env, const std::string& args = "") const {
    return "OMP_NUM_THREADS=1 " + env + " " + OMNIDP_BATCH_EXE + " --config " +
           (dir_ / "c.yaml").string() + " " + args;
  }
  [[nodiscard]] std::size_t rows() const {
    std::size_t n = 0;
    std::size_t order = 0;
    for (const auto& f : results::list_rank_files(dir_ / "out")) {
      n += results::read_stored_rows(f, order++).size();
    }
    return n;
  }
  fs::path dir_;
};

const std::string kPreload = std::string("LD_PRELOAD=") + OMNIDP_RAISE_USR1_SO;

TEST_F(EarlySignal, ASignalWhileTheLibrariesInitializeDrainsTheJob) {
  const ExeRun first = run(batch(kPreload));
  ASSERT_EQ(first.exit_code, 75) << first.output;
  EXPECT_NE(first.output.find("received drain signal 10 (1): draining the job"), std::string::npos)
      << first.output;
  EXPECT_EQ(rows(), 0U);
  const ExeRun second = run(batch(""));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(rows(), 4U);
}

TEST_F(EarlySignal, ASignalAtTheEarliestPointDrainsTheJob) {
  const ExeRun first = run(batch("OMNIDP_TEST_RAISE_AT_PREINIT=1"));
  ASSERT_EQ(first.exit_code, 75) << first.output;
  EXPECT_EQ(rows(), 0U);
}

TEST_F(EarlySignal, UnderMpirunEveryRankDrains) {
  const ExeRun first = run(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to "
      "none -np 2 -x OMP_NUM_THREADS=1 -x " +
      kPreload + " " + OMNIDP_BATCH_EXE + " --config " + (dir_ / "c.yaml").string());
  ASSERT_EQ(first.exit_code, 75) << first.output;
  EXPECT_EQ(first.output.find("exited on signal"), std::string::npos) << first.output;
  EXPECT_EQ(rows(), 0U);
}

// The signal that mpirun forwards while the dynamic loader maps and relocates libtorch (before
// any code of omni-dp-batch.bin can run: hundreds of milliseconds on a loaded node; a USR1 to
// mpirun at 0.2-0.7 s still killed a rank with the handlers in .preinit_array alone): the
// launcher `omni-dp-batch` blocks the drain signals before it execs the program, so the signal
// stays pending until the handlers exist. Sent here by the launcher itself, once blocked.
TEST_F(EarlySignal, ASignalPendingThroughTheLibrariesLoadingDrainsTheJob) {
  const std::string job =
      std::string(OMNIDP_BATCH_LAUNCHER) + " --config " + (dir_ / "c.yaml").string();
  const ExeRun alone = run("OMP_NUM_THREADS=1 OMNIDP_TEST_RAISE_IN_LAUNCHER=1 " + job);
  ASSERT_EQ(alone.exit_code, 75) << alone.output;
  EXPECT_NE(alone.output.find("received drain signal 10 (1): draining the job"), std::string::npos)
      << alone.output;
  EXPECT_EQ(rows(), 0U);
  const ExeRun ranks = run(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to "
      "none -np 2 -x OMP_NUM_THREADS=1 -x OMNIDP_TEST_RAISE_IN_LAUNCHER=1 " +
      job);
  ASSERT_EQ(ranks.exit_code, 75) << ranks.output;
  EXPECT_EQ(ranks.output.find("exited on signal"), std::string::npos) << ranks.output;
  EXPECT_EQ(rows(), 0U);
  const ExeRun rerun = run("OMP_NUM_THREADS=1 " + job);  // the launcher runs the job
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  EXPECT_EQ(rows(), 4U);
}

// --version, --validate-only, --dry-run, --merge-only start no job: the signal ends them as
// it would without the early handlers (a Ctrl-C stops a long validation).
TEST_F(EarlySignal, ACommandThatStartsNoJobEndsOnTheSignal) {
  for (const std::string args : {"--version", "--validate-only", "--dry-run"}) {
    const ExeRun r = run(batch(kPreload, args));
    EXPECT_EQ(r.exit_code, 128 + SIGUSR1) << args << "\n" << r.output;
  }
  fs::create_directories(dir_ / "out");
  const ExeRun merge = run(batch(kPreload, "--merge-only " + (dir_ / "out").string()));
  EXPECT_EQ(merge.exit_code, 128 + SIGUSR1) << merge.output;
}

}  // namespace
}  // namespace omnidp::cli
