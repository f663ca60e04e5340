// omni-dp-batch's command line, run in-process through batch_main (no MPI: only the paths that
// stop before run_job). The mpirun behaviour (one error line for N ranks) is
// batch_mpirun_check.cmake.

#include "omnidp/cli/batch.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "omnidp/common/version.hpp"

namespace omnidp::cli {
namespace {

namespace fs = std::filesystem;

const fs::path kConfigs = fs::path(OMNIDP_SOURCE_DIR) / "configs";

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome run_batch(std::vector<std::string> args) {
  args.insert(args.begin(), "omni-dp-batch");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  Outcome outcome;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  outcome.code = batch_main(static_cast<int>(args.size()), argv.data());
  outcome.err = ::testing::internal::GetCapturedStderr();
  outcome.out = ::testing::internal::GetCapturedStdout();
  return outcome;
}

std::size_t count_lines_starting_with(const std::string& text, const std::string& prefix) {
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.rfind(prefix, 0) == 0) ++count;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return count;
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            (std::string("omnidp-batch-test-") + info->test_suite_name() + "-" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] fs::path write(const std::string& name, const std::string& text) const {
    const fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  fs::path path_;
};

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

TEST(BatchCli, Version) {
  const Outcome r = run_batch({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, version_line() + "\n");
  EXPECT_EQ(r.err, "");
}

TEST(BatchCli, HelpListsOptionsAndExamples) {
  const Outcome r = run_batch({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* expected :
       {"--config", "--manifest", "--output", "--set", "--resume", "--no-resume",
        "--validate-only", "--all-errors", "--dry-run", "--world-size", "--merge-only", "--num-replicas",
        "--version", "Examples:", "mpirun -np 8 omni-dp-batch --config hv15.yaml", "sbatch ",
        "--signal=B:USR1@120", "Exit codes: 0 all done, 1 some requests failed"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing: " << expected;
  }
}

TEST(BatchCli, UsageErrorsExit2WithOneLine) {
  const Outcome unknown = run_batch({"--bogus"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(count_lines_starting_with(unknown.err, "omni-dp-batch: error: "), 1U) << unknown.err;
  EXPECT_NE(unknown.err.find("--bogus"), std::string::npos) << unknown.err;

  const Outcome both = run_batch({"--resume", "--no-resume", "--validate-only"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--resume excludes --no-resume"), std::string::npos) << both.err;

  const Outcome all_errors = run_batch({"--all-errors"});
  EXPECT_EQ(all_errors.code, 2);
  EXPECT_NE(all_errors.err.find("--all-errors requires --validate-only"), std::string::npos)
      << all_errors.err;

  const Outcome world = run_batch({"--dry-run", "--world-size", "0"});
  EXPECT_EQ(world.code, 2);
  EXPECT_NE(world.err.find("--world-size"), std::string::npos) << world.err;

  const Outcome exclusive = run_batch({"--dry-run", "--validate-only"});
  EXPECT_EQ(exclusive.code, 2);
  EXPECT_EQ(count_lines_starting_with(exclusive.err, "omni-dp-batch: error: "), 1U);
}

TEST(BatchCli, SetErrorsExit2WithTheConfigMessage) {
  const Outcome key = run_batch({"--validate-only", "--set", "scheduler.polcy=dynamic"});
  EXPECT_EQ(key.code, 2);
  EXPECT_EQ(key.out, "");
  EXPECT_EQ(key.err, "omni-dp-batch: error: scheduler.polcy: unknown key (did you mean 'policy'?)\n");

  const Outcome range = run_batch({"--validate-only", "--set", "generation.num_frames=10"});
  EXPECT_EQ(range.code, 2);
  EXPECT_EQ(range.err,
            "omni-dp-batch: error: generation.num_frames: 10 is not of the form 4k+1 (e.g. 9 or 13)\n");

  const Outcome type = run_batch({"--validate-only", "--set=generation.height=tall"});
  EXPECT_EQ(type.code, 2);
  EXPECT_EQ(type.err, "omni-dp-batch: error: generation.height: expected an integer, got 'tall'\n");

  const Outcome form = run_batch({"--validate-only", "--set", "nonsense"});
  EXPECT_EQ(form.code, 2);
  EXPECT_EQ(form.err,
            "omni-dp-batch: error: --set: 'nonsense' is not of the form section.key=value\n");
}

TEST(BatchCli, ConfigFileErrorsExit2) {
  TempDir dir;
  const Outcome missing = run_batch({"--validate-only", "--config", (dir.path() / "nope.yaml").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "omni-dp-batch: error: " + (dir.path() / "nope.yaml").string() +
                             ": cannot read the config file: no such file or not readable\n");

  const fs::path bad = dir.write("bad.yaml", "model:\n  dtype: bf32\n");
  const Outcome enum_error = run_batch({"--validate-only", "--config", bad.string()});
  EXPECT_EQ(enum_error.code, 2);
  EXPECT_EQ(enum_error.err,
            "omni-dp-batch: error: model.dtype: invalid value 'bf32' (expected fp32 | bf16 | fp16; "
            "did you mean 'bf16'?)\n");
}

TEST(BatchCli, ValidateOnlyAcceptsTheDemo) {
  const Outcome r = run_batch({"--validate-only", "--config", (kConfigs / "tiny.yaml").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string manifest = (kConfigs / "prompts" / "demo.jsonl").string();
  EXPECT_EQ(r.out, manifest + ": OK, 18 requests; configuration OK (" +
                       (kConfigs / "tiny.yaml").string() + ")\n");
  // The same manifest through --manifest (relative to the current directory) and the synthetic
  // configuration.
  const Outcome synthetic = run_batch({"--validate-only", "--config",
                                       (kConfigs / "synthetic.yaml").string(), "--manifest", manifest});
  EXPECT_EQ(synthetic.code, 0) << synthetic.err;
}

TEST(BatchCli, ValidateOnlyReportsTheFirstErrorOrAll) {
  TempDir dir;
  const fs::path manifest = dir.write(
      "m.jsonl",
      "{\"id\": \"a\", \"prompt\": \"ok\"}\n"
      "{\"id\": \"b\"}\n"
      "# a comment\n"
      "{\"id\": \"c\", \"prompt\": \"x\", \"num_frames\": 10}\n"
      "{\"id\": \"a\", \"prompt\": \"again\"}\n");
  const std::vector<std::string> base{"--validate-only", "--config",
                                      (kConfigs / "tiny.yaml").string(), "--manifest",
                                      manifest.string()};
  const Outcome first = run_batch(base);
  EXPECT_EQ(first.code, 2);
  EXPECT_EQ(first.out, "");
  EXPECT_EQ(count_lines_starting_with(first.err, "omni-dp-batch: error: "), 1U) << first.err;
  EXPECT_EQ(first.err.rfind("omni-dp-batch: error: " + manifest.string() + ":2:prompt: ", 0), 0U)
      << first.err;

  std::vector<std::string> all = base;
  all.emplace_back("--all-errors");
  const Outcome every = run_batch(all);
  EXPECT_EQ(every.code, 2);
  EXPECT_EQ(count_lines_starting_with(every.err, "omni-dp-batch: error: "), 3U) << every.err;
  EXPECT_NE(every.err.find("omni-dp-batch: error: " + manifest.string() + ":2:prompt: "),
            std::string::npos);
  EXPECT_NE(every.err.find("omni-dp-batch: error: " + manifest.string() + ":4:num_frames: "),
            std::string::npos);
  EXPECT_NE(every.err.find("omni-dp-batch: error: " + manifest.string() + ":5:id: "),
            std::string::npos);
  EXPECT_NE(every.err.find(manifest.string() + ": 3 errors, 1 valid request\n"), std::string::npos)
      << every.err;
}

TEST(BatchCli, UnreadableManifestExits2) {
  TempDir dir;
  const fs::path absent = dir.path() / "none.jsonl";
  const Outcome r = run_batch({"--validate-only", "--manifest", absent.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "omni-dp-batch: error: input.manifest: cannot read '" + absent.string() +
                       "': no such file\n");
  const Outcome folder = run_batch({"--dry-run", "--manifest", dir.path().string()});
  EXPECT_EQ(folder.code, 2);
  EXPECT_EQ(folder.err, "omni-dp-batch: error: input.manifest: cannot read '" +
                            dir.path().string() + "': it is a folder\n");
}

TEST(BatchCli, OnlyRankZeroPrints) {
  const ScopedEnv rank("OMPI_COMM_WORLD_RANK", "1");
  const Outcome error = run_batch({"--validate-only", "--set", "scheduler.polcy=dynamic"});
  EXPECT_EQ(error.code, 2);
  EXPECT_EQ(error.err, "");
  EXPECT_EQ(error.out, "");
  const Outcome ok = run_batch({"--validate-only", "--config", (kConfigs / "tiny.yaml").string()});
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(ok.out, "");
  const Outcome version = run_batch({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out, "");
}

// --num-replicas N is parallel.data_parallel_size=N (vLLM-Omni's name for the replica count).
TEST(BatchCli, NumReplicasIsTheDataParallelSize) {
  const std::string config = (kConfigs / "synthetic.yaml").string();
  const Outcome fits = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--num-replicas", "4"});
  EXPECT_EQ(fits.code, 0) << fits.err;
  const Outcome same = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--set",
                                  "parallel.data_parallel_size=4"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(fits.out, same.out);

  const std::string mismatch =
      "omni-dp-batch: error: parallel.data_parallel_size: 3 replicas requested, but 4 ranks in "
      "groups of 1 give 4 (use auto, or launch 3 ranks)\n";
  const Outcome wrong = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--num-replicas", "3"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_EQ(wrong.err, mismatch);
  const Outcome wrong_set = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--set",
                                       "parallel.data_parallel_size=3"});
  EXPECT_EQ(wrong_set.err, mismatch);

  // It is applied after --set, like --manifest and --output.
  const Outcome later = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--set",
                                   "parallel.data_parallel_size=3", "--num-replicas", "4"});
  EXPECT_EQ(later.code, 0) << later.err;

  const Outcome zero = run_batch({"--dry-run", "--num-replicas", "0"});
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("--num-replicas"), std::string::npos) << zero.err;
}

TEST(BatchCli, MergeOnlyNeedsAFolder) {
  TempDir dir;
  const Outcome r = run_batch({"--merge-only", (dir.path() / "absent").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "omni-dp-batch: error: --merge-only: '" + (dir.path() / "absent").string() +
                       "' is not a folder\n");
}

}  // namespace
}  // namespace omnidp::cli
