#include "omnidp/cli/compare.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <iostream>
#include <string>

#include "omnidp/cli/number_options.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/error_text.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/compare.hpp"

namespace omnidp::cli {

int compare_main(int argc, char** argv) {
  CLI::App app{
      "Joins two result sets by input key, one request to one, and compares their video "
      "hashes (with --max-level-diff/--min-psnr: the videos of requests whose hashes differ). "
      "Exit 0 when every request of A is matched in B and B holds no other, 1 when not, 2 on "
      "usage or read errors.",
      "omni-dp-compare"};
  std::string a;
  std::string b;
  std::size_t max_list = 20;
  bool json = false;
  bool allow_missing = false;
  bool no_verify = false;
  results::Tolerance tolerance;
  int max_level_diff = -1;
  double min_psnr = -1.0;
  app.add_option("A", a, "baseline: a results.h5, a rank file, or an output folder")->required();
  app.add_option("B", b, "the run to check, same forms as A")->required();
  add_integer_option(app, "--max-list", max_list, "list at most N ids per category", 0, kMaxCount)
      ->capture_default_str();
  app.add_flag("--json", json, "print the report as JSON");
  app.add_flag("--allow-missing", allow_missing,
               "requests missing on either side (A's absent from B, B's absent from A) do not "
               "fail the comparison");
  app.add_flag("--no-verify", no_verify,
               "trust the stored video_sha256 columns instead of re-hashing the stored videos");
  auto* level_option =
      add_integer_option(app, "--max-level-diff", max_level_diff,
                         "requests whose hashes differ pass when no uint8 value differs by more "
                         "than K",
                         0, 255)
          ->type_name("K");
  auto* psnr_option =
      add_number_option(app, "--min-psnr", min_psnr,
                        "requests whose hashes differ pass when their PSNR is at least DB", 0.0,
                        /*lo_open=*/true)
          ->type_name("DB");
  app.set_version_flag("--version", version_line());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  if (level_option->count() > 0) tolerance.max_level_diff = max_level_diff;
  if (psnr_option->count() > 0) tolerance.min_psnr_db = min_psnr;

  try {
    const results::ReadOptions options{!no_verify};
    const results::ResultSet set_a = results::read_results(a, options);
    const results::ResultSet set_b = results::read_results(b, options);
    const results::CompareReport report = results::compare_results(set_a, set_b, tolerance);
    std::cout << (json ? results::report_to_json(report, max_list, allow_missing)
                       : results::format_report(report, max_list, allow_missing))
              << std::flush;
    return report.passed(allow_missing) ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "omni-dp-compare: " << one_line(e.what()) << "\n";
    return static_cast<int>(ExitCode::usage);
  }
}

}  // namespace omnidp::cli
