#include "omnidp/cli/refcheck.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "omnidp/common/error.hpp"
#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::cli {

int refcheck_main(int argc, char** argv) {
  CLI::App app{
      "omni-dp-refcheck: run every reference case folder (a folder with case.json) "
      "under DIR and compare with its expected outputs. Prints one line per check: "
      "name, max relative error, tolerance, PASS|FAIL|SKIP. Exit 0 when nothing "
      "failed, 1 on any FAIL (and with --fail-on-skip on any SKIP), 2 on usage errors."};
  std::string dir;
  std::string device = "cpu";
  std::string dtype = "fp32";
  std::string filter;
  bool fail_on_skip = false;
  app.add_option("DIR", dir, "folder of case folders (e.g. ../shared/fixtures)")->required();
  app.add_option("--device", device, "cpu | cuda[:N]")->capture_default_str();
  app.add_option("--dtype", dtype, "fp32 | bf16 (tolerances: docs/models.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--filter", filter, "run only cases whose path contains this");
  app.add_flag("--fail-on-skip", fail_on_skip,
               "count SKIP (unknown kind, runner not built) as failure");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  try {
    refcheck::RefcheckOptions options;
    if (device != "cpu" && device.rfind("cuda", 0) != 0) {
      throw UsageError("--device must be cpu or cuda[:N], got '" + device + "'");
    }
    options.device = torch::Device(device);
    if (options.device.is_cuda() && !torch::cuda::is_available()) {
      throw UsageError("--device " + device + ": CUDA is not available in this build or machine");
    }
    options.dtype = dtype == "bf16" ? torch::kBFloat16 : torch::kFloat32;
    if (options.device.is_cuda() && options.dtype == torch::kFloat32) {
      // fp32 means fp32: cuDNN convolutions default to TF32 (10-bit mantissa) otherwise.
      at::globalContext().setAllowTF32CuDNN(false);
      at::globalContext().setAllowTF32CuBLAS(false);
    }
    options.filter = filter;
    const auto summary = refcheck::run_refcheck(dir, options, std::cout);
    std::cout << summary.cases << " cases: " << summary.pass << " PASS, " << summary.fail
              << " FAIL, " << summary.skip << " SKIP\n";
    if (summary.cases == 0) {
      std::cerr << "omni-dp-refcheck: no case folders (with case.json) under " << dir << "\n";
      return static_cast<int>(ExitCode::usage);
    }
    if (summary.fail > 0 || (fail_on_skip && summary.skip > 0)) {
      return static_cast<int>(ExitCode::some_failed);
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "omni-dp-refcheck: " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::cerr << "omni-dp-refcheck: " << e.what() << "\n";
    return static_cast<int>(ExitCode::usage);
  }
}

}  // namespace omnidp::cli
