#pragma once
// RunSummary <-> <dir>/summary.json (keys = the RunSummary field names), and the figures that
// can be recomputed from result rows alone. HDF5-free; plain functions, thread-safe.

#include <filesystem>
#include <span>
#include <string>

#include "omnidp/results/record.hpp"

namespace omnidp::results {

[[nodiscard]] std::string summary_to_json(const RunSummary& summary);  // pretty, one object
// Throws IoError naming `origin` on malformed JSON or a field of the wrong type; missing
// fields keep their defaults.
[[nodiscard]] RunSummary summary_from_json(const std::string& text, const std::string& origin);
// Writes atomically (temporary file + rename). Throws IoError.
void write_summary_json(const std::filesystem::path& path, const RunSummary& summary);
[[nodiscard]] RunSummary read_summary_json(const std::filesystem::path& path);

// From rows only: total/completed/failed, makespan (first start to last end), videos per
// minute, latency p50/p90/max of ok rows (linear interpolation between order statistics),
// busy seconds per rank (sum of `seconds`), busy fraction, scheduling efficiency with
// replicas = world_size. Scheduler settings are left empty.
[[nodiscard]] RunSummary recompute_summary(std::span<const ResultRecord> rows, int world_size);

// Linear-interpolation percentile (q in [0,1]) of unsorted values; 0 for an empty input.
[[nodiscard]] double percentile(std::span<const double> values, double q);

}  // namespace omnidp::results
