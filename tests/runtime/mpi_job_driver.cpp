// A minimal batch front end for the MPI tests of the runtime: every rank runs
//   mpi_job_driver <config.yaml> [section.key=value ...] [--deadline=TIME]
// with the synthetic model (torch-free, so this test needs no model libraries) and the real
// HDF5 results, and exits with run_job's code.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/runtime/job.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml [section.key=value ...]\n", argv[0]);
    return 2;
  }
  try {
    omnidp::Config config = omnidp::load_config_file(argv[1]);
    std::vector<std::string> overrides;
    std::optional<omnidp::runtime::Deadline> deadline;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.starts_with("--deadline=")) {  // as omni-dp-batch --deadline
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        deadline = omnidp::runtime::Deadline{omnidp::runtime::parse_deadline(arg.substr(11), now),
                                             "--deadline " + arg.substr(11)};
      } else {
        overrides.push_back(arg);
      }
    }
    omnidp::apply_overrides(config, overrides);
    omnidp::models::validate_config(config);
    omnidp::runtime::JobOptions options;
    options.config = config;
    options.deadline = deadline;
    options.progress_interval_s = 2.0;
    options.make_pipeline = [config](const omnidp::DeviceBinding& device) {
      return std::make_unique<omnidp::models::SyntheticPipeline>(config, device);
    };
    return static_cast<int>(omnidp::runtime::run_job(options));
  } catch (const omnidp::Error& e) {
    std::fprintf(stderr, "mpi_job_driver: error: %s\n", e.what());
    return static_cast<int>(e.exit_code());
  }
}
