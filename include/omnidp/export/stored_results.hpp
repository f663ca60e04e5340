#pragma once
// Reading a finished (or interrupted) run for export and inspection: its rows (one per id),
// its figures, and its stored videos with their fps. HDF5-free header. Files are opened
// read-only; plain functions, no shared state.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/common/video.hpp"
#include "omnidp/results/record.hpp"
#include "omnidp/results/result_files.hpp"

namespace omnidp::video_export {

struct StoredRun {
  std::string source;                        // the path given
  std::vector<std::filesystem::path> files;  // the HDF5 files read
  // A folder of shard folders (a job array's results/<name>): the shards read, in name order.
  std::vector<std::filesystem::path> shards;
  // Rank files of a folder that could not be read: skipped with one warning each (as the merge
  // does); their rows are not in `rows`.
  std::vector<std::filesystem::path> unreadable_files;
  // Rank files a running job writes: their rows so far come from their live tables (docs/
  // results.md, "Live view"), their videos are not read (one warning each).
  std::vector<std::filesystem::path> live_files;
  results::ResultsFileInfo info;         // root attributes of the first file read
  std::vector<results::StoredRow> rows;  // one per id, sorted by id (results::select_rows)
  std::size_t duplicates_dropped = 0;    // older or failed attempts of an id
  // ok rows whose stored video is missing or unreadable (dropped: their id shows an older row
  // if there is one, else nothing); not duplicates.
  std::size_t rows_without_video = 0;
  RunSummary summary;
  // "runtime" / "summary.json" / "recomputed": results.h5's /summary source attribute;
  // for rank files: "summary.json" when the folder has one, else "recomputed" (from the rows).
  std::string summary_source;
};

// `path`: a results.h5 (its rows and /summary), a rank file (its rows; figures recomputed), or
// a folder: its rank-*.h5 files when it has any (figures from <dir>/summary.json, else
// recomputed), else its results.h5; or a folder of such folders (a job array's shards: the
// rows of all of them, one per id; figures recomputed; results::result_paths). An unreadable
// rank file of a folder is skipped with one
// warning. Throws IoError (nothing there, nothing readable, not an omni-dp file) or Hdf5Error
// (a single file that cannot be read).
[[nodiscard]] StoredRun read_stored_run(const std::filesystem::path& path);

// The LoRA adapters of a run's rows, from their numerics profiles (docs/models.md, "LoRA"):
// first line "job <set>" (model.lora) or "none for the job", then "; N manifest set(s)", then one
// line per manifest set ("<set> (R rows)"). Empty when no row has adapters. Shown by
// omni-dp-inspect and the HTML report.
[[nodiscard]] std::vector<std::string> describe_adapters(const StoredRun& run);

struct StoredVideo {
  Video video;
  int fps = 0;  // the request's fps (video attribute)
  std::string prompt;
  std::uint64_t seed = 0;
};
// /videos/<escaped id> of `file` (a rank file, or results.h5 through its external link).
// Throws Hdf5Error when it is missing or unreadable.
[[nodiscard]] StoredVideo read_stored_video(const std::filesystem::path& file, std::string_view id);

}  // namespace omnidp::video_export
