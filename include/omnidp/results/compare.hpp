#pragma once
// omni-dp-compare as a library (docs/results.md, "omni-dp-compare A B"): read two result sets, join
// them by input key, report. HDF5-free header. Plain functions; no shared state.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/results/record.hpp"

namespace omnidp::results {

// One request of a result set (after de-duplication by id, as in the merge).
struct ResultEntry {
  std::string id;
  std::string input_key;
  std::string video_sha256;  // as stored in the row
  RequestStatus status = RequestStatus::ok;
  std::string error;
  bool video_present = false;
  std::string actual_sha256;  // SHA-256 of the stored video bytes; empty when not checked
  std::string numerics;       // the row's numerics profile; "" = unknown (an older file)
  std::string file;           // the HDF5 file the row (and its video link) was read from
  std::string video_error;    // an ok row's stored video could not be read back ("" otherwise)
};

struct ResultSet {
  std::string source;                // the path given
  std::vector<std::string> files;    // the HDF5 files read
  std::vector<ResultEntry> entries;  // sorted by id
  // Rank files skipped with a warning (not HDF5, truncated): their rows are not in `entries`.
  std::vector<std::string> unreadable_files;
  // Rank files a running job writes: their rows so far, from their live tables (hashes only).
  std::vector<std::string> live_files;
  // "<id> (<file>): <why>" for each ok row whose video cannot be read back and whose id has no
  // other ok row: its id is not in `entries` (as in the merge), and the comparison fails.
  std::vector<std::string> unreadable_videos;
};

struct ReadOptions {
  bool verify_videos = true;  // re-hash every stored video and compare with its row
};

// `path` is a results.h5, a rank file, or a folder: its rank-*.h5 files when it has any,
// else its results.h5. An unreadable rank file of a folder is skipped with one warning (as the
// merge does); a video that cannot be read back (or hashed) is recorded, never thrown. Throws
// IoError (nothing there, nothing readable) or Hdf5Error (a single file that cannot be read).
[[nodiscard]] ResultSet read_results(const std::filesystem::path& path,
                                     const ReadOptions& options = {});

// Bounds under which two videos whose hashes differ still count as equal (a parallel layout,
// another device or dtype changes float rounding). Unset bounds are not checked; with neither
// set, hashes must be equal.
struct Tolerance {
  std::optional<int> max_level_diff;  // largest |a - b| over all uint8 values, 0..255
  std::optional<double> min_psnr_db;  // PSNR over all values (peak 255), > 0
  [[nodiscard]] bool enabled() const noexcept {
    return max_level_diff.has_value() || min_psnr_db.has_value();
  }
};

// The two stored videos of a request whose hashes differ, compared value by value.
struct LevelDifference {
  std::string id_a;
  std::string id_b;
  std::string error;       // non-empty: not comparable (shapes differ, a video is absent)
  int max_level_diff = 0;  // largest |a - b|
  double psnr_db = 0.0;    // 10 log10(255^2 / MSE); +infinity for equal bytes
  bool within = false;     // comparable and inside every bound set
};

// Compares `a` and `b` frame by frame. Throws Hdf5Error on unreadable files.
[[nodiscard]] LevelDifference compare_stored_videos(const ResultEntry& a, const ResultEntry& b,
                                                    const Tolerance& tolerance);
// "max level diff 1, PSNR 51.14 dB" or the error.
[[nodiscard]] std::string describe(const LevelDifference& d);

struct Mismatch {
  std::string id_a;
  std::string id_b;
  std::string input_key;
  std::string sha_a;  // the hash that counts for A: actual when checked, else stored
  std::string sha_b;
  std::string reason;
  // The two rows' numerics profiles differ (both known, beyond the software version): the
  // bytes may differ for that reason. Counted in mismatched_numerics, not mismatched.
  bool numerics_differ = false;
};

struct CompareReport {
  std::string source_a;
  std::string source_b;
  std::size_t requests_a = 0;
  std::size_t requests_b = 0;
  std::size_t matched = 0;  // requests of A with an ok, equal-hash request in B
  // Hashes differ but the videos are inside the tolerance (only with a tolerance): passes.
  std::size_t within_tolerance = 0;
  std::size_t mismatched = 0;  // both ok, hashes differ (or a video does not match its row)
  std::size_t mismatched_numerics = 0;  // both ok, hashes differ, different numerics profiles
  // The join is one to one by input key (an id of B with the same id first, then the others):
  // a request without a partner on the other side is missing, also where the other side holds
  // another request with its input key that has a partner of its own.
  std::size_t only_in_a = 0;               // requests of A without a partner in B
  std::size_t only_in_b = 0;               // requests of B without a partner in A
  std::size_t failed_a = 0;                // requests of A recorded failed
  std::size_t failed_b = 0;                // requests of B (joined with A) recorded failed
  std::vector<Mismatch> mismatches;        // every mismatch, sorted by id of A
  std::vector<std::string> only_in_a_ids;  // sorted
  std::vector<std::string> only_in_b_ids;
  std::vector<std::string> failed_ids;  // "A:<id>" / "B:<id>", sorted
  // Ok requests whose stored video cannot be read back: "A:<id> (<file>): <why>", sorted. Each
  // fails the comparison.
  std::vector<std::string> unreadable_videos;
  std::vector<std::string> unreadable_files_a;  // rank files skipped (ResultSet)
  std::vector<std::string> unreadable_files_b;
  std::vector<std::string> live_files_a;  // read from their live tables (ResultSet)
  std::vector<std::string> live_files_b;
  Tolerance tolerance;
  // With a tolerance: every request whose hashes differ (neither video corrupt), sorted by id
  // of A. Those outside the bounds are also in `mismatches`.
  std::vector<LevelDifference> level_differences;
  // Distinct numerics profiles of each side's entries -> how many entries ("" = unknown).
  std::map<std::string, std::size_t> profiles_a;
  std::map<std::string, std::size_t> profiles_b;
  // Whether the two sides' sets of profiles differ (beyond the software version).
  [[nodiscard]] bool profiles_differ() const;

  // Every request of A is matched with an equal hash in B, or within the tolerance, and B holds
  // no request without a partner in A (allow_missing: requests missing on either side are
  // excused). Without a tolerance, a hash difference under different numerics profiles fails
  // too.
  [[nodiscard]] bool passed(bool allow_missing) const noexcept;
};

// With a tolerance, the videos of requests whose hashes differ are read and compared.
[[nodiscard]] CompareReport compare_results(const ResultSet& a, const ResultSet& b,
                                            const Tolerance& tolerance = {});

// Human-readable report listing up to max_list items per list.
[[nodiscard]] std::string format_report(const CompareReport& report, std::size_t max_list,
                                        bool allow_missing);
// The same as one JSON object (lists cut to max_list, with their full counts).
[[nodiscard]] std::string report_to_json(const CompareReport& report, std::size_t max_list,
                                         bool allow_missing);

}  // namespace omnidp::results
