// omni-dp-batch's command line, run in-process through batch_main (no MPI: only the paths that
// stop before run_job). The mpirun behaviour (one error line for N ranks) is
// batch_mpirun_check.cmake.

#include "omnidp/cli/batch.hpp"

#include <gtest/gtest.h>
#include <png.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/result_files.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"
#include "temp_dir.hpp"

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
    const std::string line =
        text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.rfind(prefix, 0) == 0) ++count;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return count;
}

using omnidp::test::TempDir;

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
       {"--config", "--manifest", "--output", "--set", "--resume", "--no-resume", "--validate-only",
        "--all-errors", "--dry-run", "--world-size", "--merge-only", "--num-replicas", "--version",
        "Examples:", "mpirun -np 8 omni-dp-batch --config hv15.yaml", "sbatch ",
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

// Issue 52, class 12: omni-dp-batch's number options go through cli/number_options.hpp (its
// own test holds the other tools'): one bad value of each kind, exit 2 naming the option.
TEST(BatchCli, NumberOptionsRefuseBadValuesNamingTheOption) {
  for (const auto& [option, before] : std::vector<std::pair<std::string, std::string>>{
           {"--num-replicas", "--validate-only"}, {"--world-size", "--dry-run"}}) {
    for (const std::string value :
         {"-1", "0", "1048577", "99999999999999999999", "nan", "inf", "-inf", "1.5", "0x10"}) {
      SCOPED_TRACE(option + "=" + value);
      const Outcome r = run_batch({before, option + "=" + value});
      EXPECT_EQ(r.code, 2);
      EXPECT_EQ(r.out, "");
      const bool named =
          r.err.find(option + ": " + value + " is out of range [1, 1048576]") != std::string::npos ||
          r.err.find(option + ": '" + value + "' is not an integer") != std::string::npos;
      EXPECT_TRUE(named) << r.err;
      EXPECT_EQ(count_lines_starting_with(r.err, "omni-dp-batch: error: "), 1U) << r.err;
    }
  }
}

// Issue 52, classes 4, 10 and 11 through the executable's front end: a nested duplicate key, a
// contradicting or unknown tag and deep nesting in --set values and in a config file exit 2 with
// one line naming the place and the key.
TEST(BatchCli, NestedDuplicatesTagsAndDeepNestingExit2NamingTheKey) {
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const fs::path dup = dir.write("dup.yaml",
                                 "generation:\n  cache:\n    policy: first_block\n"
                                 "    policy: off\n");
  const fs::path tag = dir.write("tag.yaml", "generation:\n  fps: 8\n  num_frames: !!float 9\n");
  const fs::path nested = dir.write("deep.yaml", "generation:\n  cache: " + deep + "\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--set", "generation.cache={policy: first_block, policy: off}"},
       "omni-dp-batch: error: --set: generation.cache.policy: duplicate key\n"},
      {{"--set", "generation.num_frames=!!float 9"},
       "omni-dp-batch: error: --set: generation.num_frames: the tag !!float contradicts the "
       "key's type (expected an integer)\n"},
      {{"--set", "generation.num_frames=!foo 9"},
       "omni-dp-batch: error: --set: generation.num_frames: unknown tag !foo (the standard tags "
       "!!str, !!int, !!float, !!bool, !!null, !!seq and !!map are read where they agree with "
       "the key's type)\n"},
      {{"--config", dup.string()},
       "omni-dp-batch: error: " + dup.string() + ":4: generation.cache.policy: duplicate key\n"},
      {{"--config", tag.string()},
       "omni-dp-batch: error: " + tag.string() +
           ":3: generation.num_frames: the tag !!float contradicts the key's type (expected an "
           "integer)\n"}};
  for (const auto& [args, message] : cases) {
    std::vector<std::string> all{"--validate-only"};
    all.insert(all.end(), args.begin(), args.end());
    const Outcome r = run_batch(all);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, message);
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--set", "generation.cache=" + deep},
        std::vector<std::string>{"--config", nested.string()}}) {
    std::vector<std::string> all{"--validate-only"};
    all.insert(all.end(), args.begin(), args.end());
    const Outcome r = run_batch(all);
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(r.err.ends_with(": nested deeper than 64 levels of lists and maps\n")) << r.err;
    EXPECT_EQ(count_lines_starting_with(r.err, "omni-dp-batch: error: "), 1U);
  }
}

TEST(BatchCli, SetErrorsExit2WithTheConfigMessage) {
  const Outcome key = run_batch({"--validate-only", "--set", "scheduler.polcy=dynamic"});
  EXPECT_EQ(key.code, 2);
  EXPECT_EQ(key.out, "");
  EXPECT_EQ(key.err,
            "omni-dp-batch: error: scheduler.polcy: unknown key (did you mean 'policy'?)\n");

  const Outcome range = run_batch({"--validate-only", "--set", "generation.num_frames=10"});
  EXPECT_EQ(range.code, 2);
  EXPECT_EQ(
      range.err,
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
  const Outcome missing =
      run_batch({"--validate-only", "--config", (dir.path() / "nope.yaml").string()});
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
  const Outcome synthetic =
      run_batch({"--validate-only", "--config", (kConfigs / "synthetic.yaml").string(),
                 "--manifest", manifest});
  EXPECT_EQ(synthetic.code, 0) << synthetic.err;
}

TEST(BatchCli, ValidateOnlyReportsTheFirstErrorOrAll) {
  TempDir dir;
  const fs::path manifest = dir.write("m.jsonl",
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

// Issue 52, class 15: the modes that run no job are rank 0's alone; another rank exits 0 at once,
// printing nothing, so it can never exit with an error before rank 0 has printed its own (the
// launcher then stops rank 0: a bad --set under mpirun exited 2 with no line at all). A job's
// error on another rank without a launcher's world size is logged (debug) there, exit 2.
TEST(BatchCli, OnlyRankZeroPrints) {
  const ScopedEnv rank("OMPI_COMM_WORLD_RANK", "1");
  const Outcome error = run_batch({"--validate-only", "--set", "scheduler.polcy=dynamic"});
  EXPECT_EQ(error.code, 0);
  EXPECT_EQ(error.err, "");
  EXPECT_EQ(error.out, "");
  for (const std::vector<std::string>& mode :
       {std::vector<std::string>{"--dry-run", "--set", "scheduler.polcy=dynamic"},
        std::vector<std::string>{"--merge-only", "/nonexistent/omnidp"}}) {
    const Outcome other = run_batch(mode);
    EXPECT_EQ(other.code, 0) << mode[0];
    EXPECT_EQ(other.err, "") << mode[0];
    EXPECT_EQ(other.out, "") << mode[0];
  }
  const Outcome job = run_batch({"--set", "scheduler.polcy=dynamic"});
  EXPECT_EQ(job.code, 2);
  EXPECT_EQ(job.err, "");
  EXPECT_EQ(job.out, "");
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
  const Outcome fits =
      run_batch({"--dry-run", "--config", config, "--world-size", "4", "--num-replicas", "4"});
  EXPECT_EQ(fits.code, 0) << fits.err;
  const Outcome same = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--set",
                                  "parallel.data_parallel_size=4"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(fits.out, same.out);

  const std::string mismatch =
      "omni-dp-batch: error: parallel.data_parallel_size: 3 replicas requested, but 4 ranks in "
      "groups of 1 give 4 (use auto, or launch 3 ranks)\n";
  const Outcome wrong =
      run_batch({"--dry-run", "--config", config, "--world-size", "4", "--num-replicas", "3"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_EQ(wrong.err, mismatch);
  const Outcome wrong_set = run_batch({"--dry-run", "--config", config, "--world-size", "4",
                                       "--set", "parallel.data_parallel_size=3"});
  EXPECT_EQ(wrong_set.err, mismatch);

  // It is applied after --set, like --manifest and --output.
  const Outcome later = run_batch({"--dry-run", "--config", config, "--world-size", "4", "--set",
                                   "parallel.data_parallel_size=3", "--num-replicas", "4"});
  EXPECT_EQ(later.code, 0) << later.err;

  const Outcome zero = run_batch({"--dry-run", "--num-replicas", "0"});
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("--num-replicas"), std::string::npos) << zero.err;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of the tool's own messages (not the log lines).
std::string tool_lines(const std::string& text) {
  std::string out;
  for (const auto& l : lines_of(text)) {
    if (l.rfind("omni-dp-batch: ", 0) == 0) out += l + "\n";
  }
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text)) {
    if (l == line) return true;
  }
  return false;
}

// An RGB PNG of width x height.
void write_png(const fs::path& path, int width, int height) {
  const std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width * height * 3), 90);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  ASSERT_NE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr), 0);
}

// A HunyuanVideo-1.5 I2V snapshot folder with what the dry run reads and nothing else: no
// weights (the dry run never loads them), the transformer's config (target_size 64, task_type
// i2v), model_index.json, and the guider's and the scheduler's configs as diffusers writes them.
// Beside it: a config and two images, 100x40 and 40x100.
class SnapshotDryRun : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = dir_.path() / "snap";
    fs::create_directories(snap_ / "transformer");
    fs::create_directories(snap_ / "guider");
    fs::create_directories(snap_ / "scheduler");
    (void)dir_.write("snap/model_index.json",
                     R"({"_class_name": "HunyuanVideo15ImageToVideoPipeline"})");
    (void)dir_.write("snap/transformer/config.json", R"({"target_size": 64, "task_type": "i2v"})");
    (void)dir_.write(
        "snap/guider/guider_config.json",
        R"({"_class_name": "ClassifierFreeGuidance", "guidance_scale": 4.5, "enabled": true})");
    (void)dir_.write("snap/scheduler/scheduler_config.json",
                     R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 7.0})");
    write_png(dir_.path() / "wide.png", 100, 40);
    write_png(dir_.path() / "tall.png", 40, 100);
    config_ =
        dir_.write("hv15.yaml",
                   "model: {name: hunyuanvideo-1.5, path: snap, weights: pretrained, dtype: fp32, "
                   "device: cpu}\n"
                   "generation: {num_frames: 5, height: 64, width: 96, num_inference_steps: 2}\n"
                   "input: {manifest: m.jsonl}\n"
                   "output: {dir: " +
                       (dir_.path() / "out").string() + "}\n");
  }
  Outcome dry_run(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"--dry-run", "--config", config_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_batch(args);
  }
  [[nodiscard]] std::string manifest() const { return (dir_.path() / "m.jsonl").string(); }

  TempDir dir_;
  fs::path snap_;
  fs::path config_;
};

// Each i2v request's size: its image's bucket at the transformer's target_size, or the line's
// own height/width; guidance_scale and flow_shift: the line's, else the snapshot's.
TEST_F(SnapshotDryRun, PrintsEachRequestsSizeAndWhereItsValuesCameFrom) {
  (void)dir_.write(
      "m.jsonl",
      "{\"id\": \"wide\", \"prompt\": \"a\", \"image\": \"wide.png\"}\n"
      "{\"id\": \"tall\", \"prompt\": \"b\", \"image\": \"tall.png\", \"guidance_scale\": 1.5}\n"
      "{\"id\": \"fixed\", \"prompt\": \"c\", \"image\": \"wide.png\", \"height\": 48, \"width\": "
      "48, "
      "\"flow_shift\": 3}\n"
      "{\"id\": \"wide2\", \"prompt\": \"d\", \"image\": \"wide.png\", \"seed\": 3}\n");
  const Outcome r = dry_run();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(tool_lines(r.err), "");
  const std::string snapshot_guider = "snapshot guider/guider_config.json";
  const std::string snapshot_shift = "snapshot scheduler/scheduler_config.json";
  EXPECT_TRUE(has_line(r.out, "generation defaults: guidance_scale 4.5 (" + snapshot_guider +
                                  "), flow_shift 7 (" + snapshot_shift + ")"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "manifest: " + manifest() + ": 4 request(s), 4 to run")) << r.out;
  const auto l = lines_of(r.out);
  const auto at = std::find(
      l.begin(), l.end(),
      "requests in manifest order: size, guidance_scale, flow_shift (where each came from):");
  ASSERT_NE(at, l.end()) << r.out;
  ASSERT_EQ(l.end() - at, 6) << r.out;
  EXPECT_EQ(at[1],
            "  line 1 wide: i2v 32 x 80 (bucket of the 100x40 image at target_size 64), "
            "guidance_scale 4.5 (" +
                snapshot_guider + "), flow_shift 7 (" + snapshot_shift + ")");
  EXPECT_EQ(at[2],
            "  line 2 tall: i2v 80 x 32 (bucket of the 40x100 image at target_size 64), "
            "guidance_scale 1.5 "
            "(manifest line 2), flow_shift 7 (" +
                snapshot_shift + ")");
  EXPECT_EQ(at[3], "  line 3 fixed: i2v 48 x 48 (manifest line 3), guidance_scale 4.5 (" +
                       snapshot_guider + "), flow_shift 3 (manifest line 3)");
  EXPECT_EQ(at[4],
            "  line 4 wide2: i2v 32 x 80 (bucket of the 100x40 image at target_size 64), "
            "guidance_scale 4.5 (" +
                snapshot_guider + "), flow_shift 7 (" + snapshot_shift + ")");
  EXPECT_EQ(at[5], "i2v sizes: 32 x 80 (2), 48 x 48 (1), 80 x 32 (1)");
  // The dry run read no weights: there are none.
  EXPECT_FALSE(fs::exists(snap_ / "transformer" / "diffusion_pytorch_model.safetensors"));
}

// Precedence: manifest line > YAML (or --set) > snapshot > model default.
TEST_F(SnapshotDryRun, PrecedenceOfEachSource) {
  (void)dir_.write("m.jsonl",
                   "{\"id\": \"a\", \"prompt\": \"a\", \"image\": \"wide.png\"}\n"
                   "{\"id\": \"b\", \"prompt\": \"b\", \"image\": \"wide.png\", "
                   "\"guidance_scale\": 8, \"flow_shift\": 2}\n");
  const auto request_line = [](const Outcome& r, std::size_t n) {
    for (const auto& l : lines_of(r.out)) {
      if (l.rfind("  line " + std::to_string(n) + " ", 0) == 0) return l;
    }
    return std::string("(none)");
  };
  const Outcome yaml =
      dry_run({"--set", "generation.guidance_scale=2.5", "--set", "generation.flow_shift=4"});
  ASSERT_EQ(yaml.code, 0) << yaml.err;
  EXPECT_TRUE(has_line(yaml.out,
                       "generation defaults: guidance_scale 2.5 (yaml generation.guidance_scale), "
                       "flow_shift 4 (yaml generation.flow_shift)"))
      << yaml.out;
  EXPECT_EQ(request_line(yaml, 1),
            "  line 1 a: i2v 32 x 80 (bucket of the 100x40 image at target_size 64), "
            "guidance_scale 2.5 (yaml generation.guidance_scale), flow_shift 4 (yaml "
            "generation.flow_shift)");
  EXPECT_EQ(request_line(yaml, 2),
            "  line 2 b: i2v 32 x 80 (bucket of the 100x40 image at target_size 64), "
            "guidance_scale 8 (manifest line 2), flow_shift 2 (manifest line 2)");

  // Without the guider's and the scheduler's configs: the model's documented defaults.
  fs::remove_all(snap_ / "guider");
  fs::remove_all(snap_ / "scheduler");
  const Outcome model = dry_run();
  ASSERT_EQ(model.code, 0) << model.err;
  EXPECT_TRUE(has_line(
      model.out,
      "generation defaults: guidance_scale 6 (model default), flow_shift 5 (model default)"))
      << model.out;
  EXPECT_EQ(request_line(model, 1),
            "  line 1 a: i2v 32 x 80 (bucket of the 100x40 image at target_size 64), "
            "guidance_scale 6 (model default), flow_shift 5 (model default)");

  // A guider config with a bad value stops the dry run, naming the file.
  (void)dir_.write("snap/guider/config.json", R"({"guidance_scale": -1})");
  fs::create_directories(snap_ / "guider");
  (void)dir_.write("snap/guider/config.json", R"({"guidance_scale": -1})");
  const Outcome bad = dry_run();
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(tool_lines(bad.err),
            "omni-dp-batch: error: " + (snap_ / "guider" / "config.json").string() +
                ": guidance_scale: -1.0 is out of range (expected a number in [0, 100])\n");
}

// model_index.json and the transformer's task_type disagree: an error naming both files.
TEST_F(SnapshotDryRun, APipelineClassAndTaskTypeThatDisagreeAreAnError) {
  (void)dir_.write("m.jsonl", "{\"id\": \"i\", \"prompt\": \"a\", \"image\": \"wide.png\"}\n");
  (void)dir_.write("snap/transformer/config.json", R"({"target_size": 64, "task_type": "t2v"})");
  const Outcome out = dry_run();
  EXPECT_EQ(out.code, 2);
  EXPECT_EQ(
      tool_lines(out.err),
      "omni-dp-batch: error: " + (snap_ / "model_index.json").string() +
          ": HunyuanVideo15ImageToVideoPipeline serves i2v, but the transformer's task_type in " +
          (snap_ / "transformer" / "config.json").string() + " says t2v\n");
}

// One snapshot, one task: a t2v line for this i2v snapshot is an error naming the line, its
// task and the snapshot's, unless input.tasks leaves such lines to another job.
TEST_F(SnapshotDryRun, TheSnapshotsTaskAndTheTaskFilter) {
  (void)dir_.write("m.jsonl",
                   "{\"id\": \"i\", \"prompt\": \"a\", \"image\": \"wide.png\"}\n"
                   "{\"id\": \"t\", \"prompt\": \"b\"}\n"
                   "{\"id\": \"j\", \"prompt\": \"c\", \"image\": \"tall.png\"}\n");
  const std::string refused = "omni-dp-batch: error: " + manifest() +
                              ":2:task: task t2v, but the snapshot serves i2v only "
                              "(HunyuanVideo15ImageToVideoPipeline in " +
                              (snap_ / "model_index.json").string() +
                              "; input.tasks selects the lines a job runs)\n";
  const Outcome mixed = dry_run();
  EXPECT_EQ(mixed.code, 2);
  EXPECT_EQ(tool_lines(mixed.err), refused);
  const Outcome validate = run_batch({"--validate-only", "--config", config_.string()});
  EXPECT_EQ(validate.code, 2);
  EXPECT_EQ(tool_lines(validate.err), refused);

  const Outcome filtered = dry_run({"--set", "input.tasks=[i2v]"});
  ASSERT_EQ(filtered.code, 0) << filtered.err;
  EXPECT_TRUE(has_line(
      filtered.out,
      "manifest: " + manifest() +
          ": 2 request(s), 1 line(s) of other tasks skipped (input.tasks [i2v]), 2 to run"))
      << filtered.out;
  EXPECT_TRUE(has_line(filtered.out, "i2v sizes: 32 x 80 (1), 80 x 32 (1)")) << filtered.out;
  const Outcome checked =
      run_batch({"--validate-only", "--config", config_.string(), "--set", "input.tasks=[i2v]"});
  EXPECT_EQ(checked.code, 0) << checked.err;
  EXPECT_EQ(checked.out,
            manifest() +
                ": OK, 2 requests, 1 line(s) of other tasks skipped (input.tasks [i2v]); "
                "configuration OK (" +
                config_.string() + ")\n");

  // The filter does not lift the snapshot's check: its t2v lines are still refused.
  const Outcome other = dry_run({"--set", "input.tasks=[t2v]"});
  EXPECT_EQ(other.code, 2);
  EXPECT_EQ(tool_lines(other.err), refused);

  // A filter that leaves nothing to run.
  const fs::path t2v_only = dir_.write(
      "t2v.jsonl", "{\"id\": \"a\", \"prompt\": \"a\"}\n{\"id\": \"b\", \"prompt\": \"b\"}\n");
  const Outcome none = dry_run({"--manifest", t2v_only.string(), "--set", "input.tasks=[i2v]"});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(tool_lines(none.err),
            "omni-dp-batch: error: " + t2v_only.string() +
                ": no requests of input.tasks [i2v]: all 2 request lines are of other tasks\n");
  const Outcome none_checked =
      run_batch({"--validate-only", "--config", config_.string(), "--manifest", t2v_only.string(),
                 "--set", "input.tasks=[i2v]"});
  EXPECT_EQ(none_checked.code, 2);
  EXPECT_EQ(tool_lines(none_checked.err),
            "omni-dp-batch: error: " + t2v_only.string() +
                ":2: no requests of input.tasks [i2v]: all 2 request lines are of other tasks\n");

  // Bad values of input.tasks are configuration errors naming the key and the valid values.
  const Outcome bad = dry_run({"--set", "input.tasks=[i2v, video]"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(tool_lines(bad.err),
            "omni-dp-batch: error: input.tasks[1]: unknown task 'video' (expected t2v or i2v)\n");
}

TEST(BatchCli, MergeOnlyNeedsAFolder) {
  TempDir dir;
  const Outcome r = run_batch({"--merge-only", (dir.path() / "absent").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "omni-dp-batch: error: --merge-only: '" + (dir.path() / "absent").string() +
                       "' is not a folder\n");
}

// Issue 39 (job-array shards): a folder of shard folders merges each shard that holds rank
// files into its own results.h5; a subfolder without rank files is left alone.
TEST(BatchCli, MergeOnlyMergesEveryShardOfAJobArrayFolder) {
  TempDir dir;
  for (const char* sub : {"shard-00", "shard-01", "logs"}) {
    std::filesystem::create_directories(dir.path() / sub);
  }
  results::testing::write_rank(dir.path() / "shard-00", 0, 1, {"w", "y"});
  results::testing::write_rank(dir.path() / "shard-01", 0, 1, {"x"});
  const Outcome r = run_batch({"--merge-only", dir.path().string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string a = (dir.path() / "shard-00" / "results.h5").string();
  const std::string b = (dir.path() / "shard-01" / "results.h5").string();
  EXPECT_EQ(r.out, a + ": 2 requests from 1 rank file (summary: recomputed)\n" + b +
                       ": 1 requests from 1 rank file (summary: recomputed)\n" +
                       dir.path().string() + ": 2 shard folders merged\n");
  EXPECT_EQ(results::read_stored_rows(a).size(), 2U);
  EXPECT_EQ(results::read_stored_rows(b).size(), 1U);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "logs" / "results.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "results.h5"));
  // A folder with neither rank files nor shards that have them: the merge's own error, exit 2.
  const Outcome empty = run_batch({"--merge-only", (dir.path() / "logs").string()});
  EXPECT_EQ(empty.code, 2) << empty.err;
  EXPECT_NE(empty.err.find("omni-dp-batch: error: "), std::string::npos) << empty.err;
}

// Issue 52, class 15: a value echoed in an error is one line: a key path or a value holding a
// newline or an escape sequence is written with escapes (a raw newline split the error).
TEST(BatchCli, ValuesInErrorsAreEscapedToOneLine) {
  const Outcome key = run_batch({"--validate-only", "--set", "scheduler.polcy\nx=1"});
  EXPECT_EQ(key.code, 2);
  EXPECT_EQ(key.err,
            "omni-dp-batch: error: scheduler.polcy\\nx: unknown key (valid: policy, order, "
            "prefetch, max_retries, request_timeout_s, lookahead, heartbeat_s, silent_timeout_s, "
            "deadline_margin_s)\n");
  const Outcome value = run_batch({"--validate-only", "--set", "model.name=\"tiny\\e[31m\""});
  EXPECT_EQ(value.code, 2);
  EXPECT_EQ(value.err.find('\x1b'), std::string::npos) << value.err;
  EXPECT_EQ(value.err.rfind("omni-dp-batch: error: model.name: unknown model 'tiny\\x1b[31m' ", 0), 0U)
      << value.err;
  const Outcome tab = run_batch({"--validate-only", "--set", "model.dtype=\"bf\\t16\""});
  EXPECT_EQ(tab.code, 2);
  EXPECT_EQ(tab.err.rfind("omni-dp-batch: error: model.dtype: invalid value 'bf\\t16' ", 0), 0U)
      << tab.err;
  for (const Outcome& o : {key, value, tab}) {
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

// Issue 52, class 15: a key path with an empty name is an error naming the assignment.
TEST(BatchCli, AnEmptyNameInASetKeyPathIsAnError) {
  for (const std::string set : {".x=5", "x.=5", "a..b=5", "scheduler.=dynamic"}) {
    const Outcome o = run_batch({"--validate-only", "--set", set});
    EXPECT_EQ(o.code, 2) << set;
    EXPECT_EQ(o.err, "omni-dp-batch: error: --set: '" + set + "': the key path '" +
                         set.substr(0, set.find('=')) +
                         "' has an empty name (expected section.key=value)\n");
  }
  const Outcome empty = run_batch({"--validate-only", "--set", "=5"});
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(empty.err,
            "omni-dp-batch: error: --set: '=5': the key path is empty (expected "
            "section.key=value)\n");
}

// Issue 52, class 15: --merge-only on a folder that cannot take results.h5 printed HDF5's whole
// error stack naming ".results.h5.tmp-<pid>-<n>". One line: results.h5 and errno's reason. As
// root the folder is a read-only bind mount in a private mount namespace (EROFS), else a folder
// without write permission (EACCES); skipped where neither can be made.
TEST(BatchCli, MergeOnlyIntoAReadOnlyFolderIsOneLine) {
  TempDir dir;
  const std::filesystem::path run = dir.path() / "run";
  std::filesystem::create_directories(run);
  results::testing::write_rank(run, 0, 1, {"a", "b"});
  const std::filesystem::path err_file = dir.path() / "stderr.txt";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string reason = "Permission denied";
    if (::geteuid() == 0) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount(run.c_str(), run.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
          ::mount(nullptr, run.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
        ::_exit(77);
      }
      reason = "Read-only file system";
    } else {
      std::filesystem::permissions(
          run, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    }
    const int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    std::string arg0 = "omni-dp-batch";
    std::string arg1 = "--merge-only";
    std::string arg2 = run.string();
    std::vector<char*> argv{arg0.data(), arg1.data(), arg2.data(), nullptr};
    const int code = batch_main(3, argv.data());
    std::fflush(stderr);
    std::ofstream(dir.path() / "reason.txt") << reason;
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::filesystem::permissions(run, std::filesystem::perms::owner_all);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no read-only folder can be made here";
  std::ifstream reason_in(dir.path() / "reason.txt");
  std::string reason;
  std::getline(reason_in, reason);
  std::ifstream in(err_file);
  std::ostringstream err;
  err << in.rdbuf();
  EXPECT_EQ(WEXITSTATUS(status), 1);  // an I/O error (docs/cli.md)
  EXPECT_EQ(err.str(), "omni-dp-batch: error: " + (run / "results.h5").string() +
                           ": cannot create the merged results: " + reason +
                           " (creating a file in '" + run.string() + "')\n");
  EXPECT_FALSE(std::filesystem::exists(run / "results.h5"));
}

// Issue 52, classes 3, 5, 13 and 14: --merge-only on a folder with a link loop anywhere exited 1
// ("internal error"), with a FIFO named summary.json it blocked, and a folder, FIFO or link to
// /dev/zero named like a rank file was passed over silently. Each member, under a name of no
// interest, a rank file's name and summary.json: the merge ends (a child under an alarm),
// merges every readable rank file, and names what it could not use.
TEST(BatchCli, MergeOnlyNamesNonFilesInTheFolderNeverCrashOrHang) {
  namespace rt = results::testing;
  for (const rt::Odd kind : rt::odd_kinds()) {
    for (const std::string name : {"junk", "rank-00002.h5", "summary.json"}) {
      SCOPED_TRACE(std::string(rt::odd_name(kind)) + " named " + name);
      TempDir dir;
      rt::write_rank(dir.path(), 0, 2, {"a", "b"});
      rt::write_rank(dir.path(), 1, 2, {"c"});
      rt::make_odd(dir.path() / name, kind);
      const auto o = test::run_main_in_child(batch_main, "omni-dp-batch",
                                             {"--merge-only", dir.path().string()});
      ASSERT_EQ(o.code, 0) << test::describe(o);
      EXPECT_EQ(o.out, (dir.path() / "results.h5").string() +
                           ": 3 requests from 2 rank files (summary: recomputed)\n");
      const std::string file = (dir.path() / name).string();
      const bool rank_named = name.starts_with("rank-");
      EXPECT_EQ(rt::occurrences_of(o.err, "merge: skipping unreadable " + file + ": " + file +
                                              ": " + rt::odd_problem(kind)),
                rank_named ? 1U : 0U)
          << o.err;
      EXPECT_EQ(rt::occurrences_of(o.err, name + ": unreadable rank file, skipped"), rank_named ? 1U : 0U)
          << o.err;
      EXPECT_EQ(rt::occurrences_of(o.err, "merge: " + file + ": " + rt::odd_problem(kind) +
                                              "; the figures are recomputed from the rows"),
                name == "summary.json" ? 1U : 0U)
          << o.err;
      EXPECT_EQ(results::read_stored_rows(dir.path() / "results.h5").size(), 3U);
    }
  }
}

}  // namespace
}  // namespace omnidp::cli
