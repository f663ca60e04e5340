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

// How a run's ranks worked (docs/runtime.md, "Replica groups and devices"): the working ranks are
// 0..world_size-1, or 1..world_size-1 when the coordinator does no work, in consecutive groups
// of tensor x sequence x cfg ranks whose first rank (the leader) writes the group's rows.
struct RankLayout {
  int world_size = 1;
  int tensor_parallel = 1;
  int sequence_parallel = 1;
  int cfg_parallel = 1;
  bool coordinator_works = true;

  [[nodiscard]] int group_size() const noexcept {
    return tensor_parallel * sequence_parallel * cfg_parallel;
  }
  [[nodiscard]] int working_ranks() const noexcept {
    return coordinator_works ? world_size : world_size - 1;
  }
};
// The layout of a run from its effective configuration (a results file's config_yaml) and
// world size; a configuration that does not parse gives the plain layout of world_size ranks.
[[nodiscard]] RankLayout rank_layout(const std::string& config_yaml, int world_size);

// From rows only: total/completed/failed, makespan (first start to last end), videos per
// minute, latency p50/p90/max of ok rows (linear interpolation between order statistics),
// busy seconds per rank, busy fraction, scheduling efficiency over the working ranks. A row's
// seconds count for its rank (the group's leader) and for every member of its group, since a
// group computes each request together; replicas = working ranks / group size. The world size
// grows to cover every rank named in a row. Scheduler settings are left empty.
[[nodiscard]] RunSummary recompute_summary(std::span<const ResultRecord> rows,
                                           const RankLayout& layout);

// Linear-interpolation percentile (q in [0,1]) of unsorted values; 0 for an empty input.
[[nodiscard]] double percentile(std::span<const double> values, double q);

}  // namespace omnidp::results
