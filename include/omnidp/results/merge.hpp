#pragma once
// The merged view <dir>/results.h5 (docs/results.md, "results.h5"), rebuildable from the rank files
// at any time (omni-dp-batch --merge-only). HDF5-free header. Called by rank 0 after every writer
// has closed its file.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "omnidp/results/record.hpp"

namespace omnidp::results {

struct MergeResult {
  std::filesystem::path path;                 // <dir>/results.h5
  std::size_t rows = 0;                       // rows in /requests (one per id)
  std::size_t duplicates_dropped = 0;         // older or failed attempts of an id
  std::size_t rows_without_video = 0;         // ok rows whose stored video is missing, dropped
  std::vector<std::string> rank_files;        // file names merged
  std::vector<std::string> unreadable_files;  // skipped with a warning
  std::string summary_source;                 // "runtime" | "summary.json" | "recomputed"
};

// Writes <dir>/results.h5 atomically (temporary file, then rename): every rank file's rows,
// one per id (rule in docs/results.md: ok beats failed, then the newest end_time), sorted by
// id; /videos/<escaped id> external links (relative file names) into the rank files;
// /summary from `summary`, else <dir>/summary.json, else recomputed from the rows; /config
// from `config_yaml`, else the newest rank file's configuration. Throws IoError when <dir>
// holds no rank file.
MergeResult merge_directory(const std::filesystem::path& dir, const RunSummary* summary = nullptr,
                            const std::string& config_yaml = {});

}  // namespace omnidp::results
