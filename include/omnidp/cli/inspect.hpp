#pragma once
// omni-dp-inspect <results.h5|dir> [--json] [--slowest N] [--max-list N]: the figures of a run
// as a table (or one JSON object): counts, failures with their errors, throughput, latency,
// per-rank requests and busy time, and the slowest requests (docs/export.md).
// Exit 0, or 2 on usage and read errors.

#include <cstddef>
#include <string>

#include "omnidp/export/stored_results.hpp"

namespace omnidp::cli {

struct InspectOptions {
  std::size_t slowest = 5;    // requests listed by duration
  std::size_t max_list = 20;  // failures listed
};

[[nodiscard]] std::string format_inspect(const video_export::StoredRun& run,
                                         const InspectOptions& options);
[[nodiscard]] std::string inspect_to_json(const video_export::StoredRun& run,
                                          const InspectOptions& options);
[[nodiscard]] int inspect_main(int argc, char** argv);

}  // namespace omnidp::cli
