#pragma once
// The live view of a running job (docs/results.md, "Live view"). Beside each rank file it
// writes, a rank keeps <rank file>.live: a copy of its /requests rows in an HDF5 file in
// single-writer/multiple-reader mode (SWMR), appended after each row is durable in the rank file
// and deleted when the rank file closes cleanly. The rank file itself cannot be in SWMR mode:
// HDF5 1.10 creates no objects once SWMR writing has started, and a rank file creates a dataset
// per video. The companion tools read the rows of a rank file that a live writer holds locked
// from here; its videos wait for the job's end. Internal to the results area.
//
// Ownership: a LiveTable belongs to its RankWriter (one thread). The readers may run in any
// process, any number at once, while the writer appends.

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::results {

// "<dir>/rank-00003.h5" -> "<dir>/rank-00003.h5.live" (never a rank file name itself).
[[nodiscard]] std::filesystem::path live_table_path(const std::filesystem::path& rank_file);

class LiveTable {
 public:
  // Creates live_table_path(rank_file), replacing a stale one, with `write_attributes(root)`
  // (the rank file's root attributes) and an empty /requests table, and starts SWMR writing.
  // Throws Hdf5Error/IoError.
  LiveTable(const std::filesystem::path& rank_file,
            const std::function<void(hid_t root)>& write_attributes);
  // Closes the file and leaves it (a writer that did not finish: see remove()).
  ~LiveTable();
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;

  // Appends the row and flushes, so that readers see it. Throws Hdf5Error.
  void append(const ResultRecord& record);
  // Closes and deletes the file (its rank file closed cleanly: the rows are read from there).
  void remove();
  [[nodiscard]] const std::filesystem::path& path() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A live table opened for SWMR reading: its root attributes and its rows as the writer last
// flushed them (no lock is needed). Throws Hdf5Error when the file is not one.
[[nodiscard]] h5::File open_live_table(const std::filesystem::path& live_file);
[[nodiscard]] std::vector<ResultRecord> read_live_table(const std::filesystem::path& live_file);

}  // namespace omnidp::results
