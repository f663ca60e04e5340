// The scheduling benchmark (docs/scheduling.md; driven by scripts/bench_scheduling.sh). Not a
// test: it prints figures.
//   omni-dp-bench-scheduling manifest OUT.jsonl COUNT SEED [SCALE]   the heterogeneous mix
//   omni-dp-bench-scheduling run CONFIG.yaml [a.b=c ...]     one job (every rank, under mpirun;
//                                                           results go to summary.json only)
//   omni-dp-bench-scheduling table ROOT MIX.jsonl SPG        the table of ROOT/<policy>-n<N>/
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/runtime/job.hpp"

namespace fs = std::filesystem;
using namespace omnidp;

namespace {

// 33, 65 and 121 frames at 480p (480x848) and 720p (720x1280), 50 steps, CFG 6: the costs
// span a factor of 61. `scale` > 1 divides height and width (rounded to a multiple of 16):
// the frame mix and nearly the same cost ratios with 1/scale^2 of the video bytes, for
// machines without the memory for full-size synthetic videos on every rank.
int write_mix(const fs::path& out, int count, unsigned seed, int scale) {
  struct Shape {
    int frames, height, width;
  };
  auto px = [scale](int v) { return std::max(16, (v / scale + 8) / 16 * 16); };
  const Shape shapes[] = {{33, px(480), px(848)},  {65, px(480), px(848)},
                          {121, px(480), px(848)}, {33, px(720), px(1280)},
                          {65, px(720), px(1280)}, {121, px(720), px(1280)}};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 5);
  std::ofstream file(out);
  for (int i = 0; i < count; ++i) {
    const Shape& s = shapes[pick(rng)];
    char line[256];
    std::snprintf(line, sizeof line,
                  R"({"id": "mix-%04d", "prompt": "benchmark request %d", "seed": %d, )"
                  R"("num_frames": %d, "height": %d, "width": %d, "num_inference_steps": 50, )"
                  R"("guidance_scale": 6.0})",
                  i, i, i, s.frames, s.height, s.width);
    file << line << "\n";
  }
  return file ? 0 : 1;
}

// Results I/O is left out of this benchmark (it measures scheduling; the HDF5 writer has its
// own figures): rows go nowhere. The runtime still hashes every video on the writer thread.
class NullSink final : public ResultSink {
 public:
  void write(const ResultRecord& /*record*/, const Video* /*video*/) override {}
  void close() override {}
};

int run(int argc, char** argv) {
  Config config = load_config_file(argv[0]);
  apply_overrides(config, std::vector<std::string>(argv + 1, argv + argc));
  omnidp::models::validate_config(config);
  runtime::JobOptions options;
  options.config = config;
  options.resume = false;
  options.make_pipeline = [config](const DeviceBinding& device) {
    return std::make_unique<models::SyntheticPipeline>(config, device);
  };
  // OMNIDP_BENCH_RESULTS=1: the real HDF5 results (rank files and results.h5, for the HTML
  // report); else nothing is written but summary.json.
  const char* keep = std::getenv("OMNIDP_BENCH_RESULTS");
  if (keep == nullptr || std::string(keep) != "1") {
    options.make_sink = [](const runtime::SinkInfo&) -> std::unique_ptr<ResultSink> {
      return std::make_unique<NullSink>();
    };
    options.scan_done = [](const fs::path&) {
      return std::unordered_map<std::string, std::string>{};
    };
    options.merge = [](const fs::path&, const RunSummary&, const std::string&) {};
  }
  return static_cast<int>(runtime::run_job(options));
}

int table(const fs::path& root, const fs::path& mix, double spg) {
  // The ideal durations: what the synthetic model is asked to take.
  Config config;
  config.model.name = "synthetic";
  config.input.manifest = mix.string();
  const ModelInfo info = describe_model(config.model);
  ManifestReader reader(job_manifest_options(config));  // the generation defaults resolved
  double total = 0.0;
  double largest = 0.0;
  std::size_t n = 0;
  while (auto r = reader.next()) {
    const double s = spg * prior_cost(info, *r) / 1e9;
    total += s;
    largest = std::max(largest, s);
    ++n;
  }
  std::printf(
      "workload: %zu requests, ideal total %.1f s, largest %.2f s (seconds_per_gcost %g)\n\n", n,
      total, largest, spg);
  std::printf("%-12s %3s  %10s  %8s  %7s  %10s  %12s  %8s  %12s  %8s\n", "policy", "N", "makespan_s",
              "vid/min", "scaling", "efficiency", "LB_ideal_s", "gap", "LB_meas_s", "gap_meas");
  for (const char* policy : {"dynamic", "round_robin"}) {
    double base = 0.0;
    for (int ranks : {1, 2, 4, 8}) {
      const fs::path file =
          root / (std::string(policy) + "-n" + std::to_string(ranks)) / "summary.json";
      if (!fs::exists(file)) continue;
      const RunSummary s = results::read_summary_json(file);
      if (ranks == 1) base = s.makespan_s;
      double busy = 0.0;
      for (double b : s.busy_s_per_rank) busy += b;
      const double lb_ideal = std::max(total / s.replicas, largest);
      const double lb_meas = std::max(busy / s.replicas, s.latency_max_s);
      char scaling[32] = "      -";
      if (base > 0.0) std::snprintf(scaling, sizeof scaling, "%7.2f", base / s.makespan_s);
      std::printf("%-12s %3d  %10.2f  %8.2f  %s  %9.2f%%  %12.2f  %7.2f%%  %12.2f  %7.2f%%\n",
                  policy, ranks, s.makespan_s, s.videos_per_min, scaling,
                  100.0 * s.scheduling_efficiency, lb_ideal, 100.0 * (s.makespan_s / lb_ideal - 1.0),
                  lb_meas, 100.0 * (s.makespan_s / lb_meas - 1.0));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: omni-dp-bench-scheduling manifest OUT COUNT SEED [SCALE] | run CONFIG [a.b=c ...] | "
      "table ROOT MIX SECONDS_PER_GCOST\n";
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "manifest" && (argc == 5 || argc == 6)) {
      return write_mix(argv[2], std::stoi(argv[3]), static_cast<unsigned>(std::stoul(argv[4])),
                       argc == 6 ? std::stoi(argv[5]) : 1);
    }
    if (mode == "run" && argc >= 3) return run(argc - 2, argv + 2);
    if (mode == "table" && argc == 5) return table(argv[2], argv[3], std::stod(argv[4]));
    std::fputs(usage.c_str(), stderr);
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "omni-dp-bench-scheduling: error: %s\n", e.what());
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "omni-dp-bench-scheduling: error: %s\n", e.what());
    return 2;
  }
}
