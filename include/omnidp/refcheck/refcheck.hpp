#pragma once
// The reference-check framework behind `omni-dp-refcheck DIR`: every folder under DIR with a
// `case.json` is a case; its kind comes from case.json (`model`, `pipeline`, `what`, or the
// presence of `euler`/`unipc`), with the folder name as a fallback; the kind's runner compares
// our outputs with the expected tensors in the folder's `io.safetensors` and returns one
// CaseResult per check. Unknown kinds, and kinds whose runner is not built, are SKIP.
//
// Runners: `std::vector<CaseResult> run_X(const std::filesystem::path& case_dir,
// const nlohmann::json& case_json, const RefcheckOptions&)`, declared in
// include/omnidp/refcheck/<family>_cases.hpp and registered with one line in the runner table
// of src/refcheck/refcheck.cpp. A runner reads every shape, seed, step count and parameter
// from the case files (never the fixture's values) and may throw: the dispatcher reports an
// exception as one FAIL line of the case. Runners may leave CaseResult::case_name empty: the
// dispatcher sets it to the folder's path relative to DIR.
// Thread-safety: run from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

using Runner = std::function<CaseRunner>;

// The kind of a case folder ("rng", "schedulers", "wan_transformer", ...) or "" if unknown.
[[nodiscard]] std::string identify_case(const std::filesystem::path& case_dir,
                                        const nlohmann::json& case_json);
// The runner of a kind; empty when the kind is unknown or its family is not built.
[[nodiscard]] Runner find_runner(std::string_view kind);

// Every case folder under `root` (a folder with case.json; `root` itself may be one), sorted.
[[nodiscard]] std::vector<std::filesystem::path> find_cases(const std::filesystem::path& root);

// Runs one case folder: identifies it, runs its runner, catches its exceptions.
[[nodiscard]] std::vector<CaseResult> run_case(const std::filesystem::path& case_dir,
                                               const std::string& case_name,
                                               const RefcheckOptions& options);

// "name  max_rel_err  tol  STATUS[  # note]" (name = case_name/check).
[[nodiscard]] std::string format_result(const CaseResult& result);

struct RefcheckSummary {
  int cases = 0;
  int pass = 0;
  int fail = 0;
  int skip = 0;
  std::vector<CaseResult> results;
};

// Runs every case under `root`, printing one line per check to `out` as it goes.
// Throws IoError when `root` is not a folder.
[[nodiscard]] RefcheckSummary run_refcheck(const std::filesystem::path& root,
                                           const RefcheckOptions& options, std::ostream& out);

}  // namespace omnidp::refcheck
