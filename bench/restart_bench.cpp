// The restart benchmark (docs/results.md "Restarts at scale"; driven by scripts/bench_restart.sh).
// Not a test: it prints figures, one "bench: <key> <value>" line each.
//   omni-dp-bench-restart manifest OUT.jsonl COUNT [IMAGE_DIR]   COUNT tiny t2v requests, or
//                                       i2v requests whose images IMAGE_DIR/<k % 1000>/img-<k>.png
//                                       the script wrote
//   omni-dp-bench-restart run [--no-resume] CONFIG.yaml [a.b=c ...]
//                                       one job with the synthetic model and the real HDF5
//                                       results (run it under mpirun -np 1: rank 0 is this
//                                       process); prints the time from start to the resume scan's
//                                       end, to the first request generated, to the merge, the
//                                       merge's duration, the total and the peak resident memory
//   omni-dp-bench-restart merge DIR    results::merge_directory alone, timed
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/resume.hpp"
#include "omnidp/runtime/job.hpp"

namespace fs = std::filesystem;
using namespace omnidp;

namespace {

const auto g_start = std::chrono::steady_clock::now();

double since_start() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
}

void figure(const char* key, double value) {
  std::printf("bench: %s %.3f\n", key, value);
  std::fflush(stdout);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

int write_manifest(const fs::path& out, long count, const std::string& image_dir) {
  std::ofstream file(out);
  for (long k = 0; k < count; ++k) {
    char line[512];
    if (image_dir.empty()) {
      std::snprintf(line, sizeof line,
                    R"({"id": "r%07ld", "prompt": "restart benchmark request %ld", "seed": %ld, )"
                    R"("num_frames": 1, "height": 32, "width": 32, "num_inference_steps": 1})",
                    k, k, k);
    } else {
      std::snprintf(line, sizeof line,
                    R"({"id": "r%07ld", "prompt": "restart benchmark request %ld", "seed": %ld, )"
                    R"("image": "%s/%ld/img-%ld.png", "num_frames": 1, "height": 32, )"
                    R"("width": 32, "num_inference_steps": 1})",
                    k, k, k, image_dir.c_str(), k % 1000, k);
    }
    file << line << "\n";
  }
  return file ? 0 : 1;
}

// The synthetic model, noting when rank 0 generates its first request.
class TimedPipeline final : public Pipeline {
 public:
  explicit TimedPipeline(std::unique_ptr<Pipeline> inner) : inner_(std::move(inner)) {}
  Video generate(const Request& request, const GenerateContext& ctx) override {
    if (!seen_.exchange(true)) figure("first_request_s", since_start());
    return inner_->generate(request, ctx);
  }
  std::string model_name() const override { return inner_->model_name(); }
  std::string device_name() const override { return inner_->device_name(); }

 private:
  std::unique_ptr<Pipeline> inner_;
  std::atomic<bool> seen_{false};
};

int run(std::vector<std::string> args) {
  bool resume = true;
  if (!args.empty() && args.front() == "--no-resume") {
    resume = false;
    args.erase(args.begin());
  }
  if (args.empty()) return 2;
  Config config = load_config_file(args.front());
  apply_overrides(config, std::vector<std::string>(args.begin() + 1, args.end()));
  omnidp::models::validate_config(config);
  runtime::JobOptions options;
  options.config = config;
  options.resume = resume;
  options.progress_interval_s = 1e9;
  options.make_pipeline = [config](const DeviceBinding& device) {
    return std::make_unique<TimedPipeline>(
        std::make_unique<models::SyntheticPipeline>(config, device));
  };
  options.scan_done = [](const fs::path& dir) {
    const double t0 = since_start();
    auto done = results::scan_done(dir);
    figure("scan_done_s", since_start() - t0);
    figure("done_ids", static_cast<double>(done.size()));
    return done;
  };
  options.merge = [](const fs::path& dir, const RunSummary& summary, const std::string& yaml) {
    const double t0 = since_start();
    figure("merge_start_s", t0);
    (void)results::merge_directory(dir, &summary, yaml);
    figure("merge_s", since_start() - t0);
  };
  const auto code = runtime::run_job(options);
  figure("total_s", since_start());
  figure("peak_rss_mib", peak_rss_mib());
  return static_cast<int>(code);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "manifest" && (argc == 4 || argc == 5)) {
      return write_manifest(argv[2], std::stol(argv[3]), argc == 5 ? argv[4] : "");
    }
    if (mode == "run" && argc >= 3) return run(std::vector<std::string>(argv + 2, argv + argc));
    if (mode == "merge" && argc == 3) {
      const double t0 = since_start();
      const auto merged = results::merge_directory(argv[2]);
      figure("merge_s", since_start() - t0);
      figure("merged_rows", static_cast<double>(merged.rows));
      figure("peak_rss_mib", peak_rss_mib());
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "omni-dp-bench-restart: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr,
               "usage: omni-dp-bench-restart manifest OUT.jsonl COUNT [IMAGE_DIR]\n"
               "       omni-dp-bench-restart run [--no-resume] CONFIG.yaml [a.b=c ...]\n"
               "       omni-dp-bench-restart merge DIR\n");
  return 2;
}
