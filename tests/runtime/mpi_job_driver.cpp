// A minimal batch front end for the MPI tests of the runtime: every rank runs
//   mpi_job_driver <config.yaml> [section.key=value ...]
// with the synthetic model (torch-free, so this test needs no model libraries) and the real
// HDF5 results, and exits with run_job's code.
#include <cstdio>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/runtime/job.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml [section.key=value ...]\n", argv[0]);
    return 2;
  }
  try {
    omnidp::Config config = omnidp::load_config_file(argv[1]);
    omnidp::apply_overrides(config, std::vector<std::string>(argv + 2, argv + argc));
    omnidp::validate_and_resolve(config);
    omnidp::runtime::JobOptions options;
    options.config = config;
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
