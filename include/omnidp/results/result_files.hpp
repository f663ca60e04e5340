#pragma once
// Reading what an output folder holds: the rank files, their provenance, their rows, and the
// rule that picks one row per id. HDF5-free header; used by the resume scan, the merge, compare
// and the batch CLI. Plain functions; files are opened read-only.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "omnidp/results/record.hpp"

namespace omnidp::results {

// <dir>/rank-*.h5, sorted by (rank, segment). Empty when the folder is missing.
[[nodiscard]] std::vector<std::filesystem::path> list_rank_files(const std::filesystem::path& dir);

// The files a reader of results (compare, inspect, export) takes for `path`: a results.h5 or
// rank file itself; an output folder's rank-*.h5, else its results.h5; or, for a folder that
// holds neither, its subfolders that do (a job array's results/<name>/shard-NN, in name order),
// each one's rank files, else its results.h5. IoError naming the path when there are none.
struct ResultPaths {
  std::vector<std::filesystem::path> files;
  bool folder = false;  // `path` is a folder of rank files (its summary.json describes them)
  std::vector<std::filesystem::path> shards;  // the shard folders read (empty: not shards)
};
[[nodiscard]] ResultPaths result_paths(const std::filesystem::path& path);

// True when another process holds the HDF5 write lock (flock) of `file`: a live writer.
[[nodiscard]] bool is_locked_by_writer(const std::filesystem::path& file);

// The error for a rank file another process holds locked (exit 2): omni-dp-batch's (resume
// scan, merge), and the companion tools' (compare, inspect, export, the report) for a running
// job's file without a live table (results/live_table.hpp).
[[nodiscard]] std::string locked_file_message(const std::filesystem::path& file);
[[nodiscard]] std::string live_file_message(const std::filesystem::path& file);

// Root attributes of a rank file or results.h5.
struct ResultsFileInfo {
  std::string format;  // "omni-dp-rank/1" | "omni-dp-results/1"
  std::string software_version;
  std::string git_revision;
  std::string config_yaml;
  std::string model;
  int world_size = 0;
  int rank = -1;    // -1 for results.h5
  int segment = 0;  // run segment of a rank file (0 = first run)
  std::string host;
  std::string device;
  bool store_video = true;
  std::string compression;  // none | gzip:N | lzf
  std::string state;        // "open" (written to, or its writer died) | "closed"
  double created = 0.0;     // seconds since the epoch
};
// A rank file a running job writes (its writer holds the lock): read from its live table.
[[nodiscard]] ResultsFileInfo read_file_info(const std::filesystem::path& file);

struct StoredRow {
  ResultRecord record;          // the table's columns (prompt/seed/fps left default)
  std::filesystem::path file;   // where the row lives
  std::size_t file_order = 0;   // position of the file in the list read
  bool video_expected = false;  // ok and the file stores videos
  // An ok row: /videos/<id> exists in `file` and reads back (check_stored_video). A failed row:
  // the link exists.
  bool video_present = false;
  std::string video_error;  // why an ok row's existing video does not read back ("" otherwise)
  // Read from the live table of a rank file a running job writes (live_table.hpp): the row is
  // durable, its video not readable until the job has ended (video_present false).
  bool live = false;
};
// Rows of one file with their video presence. `ignore_lock`: read without taking HDF5's file
// lock (for a file whose writer is exiting; see scan_done). `rehash`: every ok row's video is
// also read whole and hashed; one whose SHA-256 differs from the row's video_sha256 is not
// present, with video_error = stored_hash_mismatch(...) (omni-dp-batch --verify). Throws
// Hdf5Error/IoError.
[[nodiscard]] std::vector<StoredRow> read_stored_rows(const std::filesystem::path& file,
                                                      std::size_t file_order = 0,
                                                      bool ignore_lock = false, bool rehash = false);
// The same rows handed to `fn` one by one (the file is read in blocks; memory stays one block).
void for_each_stored_row(const std::filesystem::path& file, std::size_t file_order, bool ignore_lock,
                         const std::function<void(StoredRow&&)>& fn, bool rehash = false);

// "the stored video does not match its recorded video_sha256 <recorded> (its frames hash to
// <actual>)": a damaged stored video, as every reader that re-hashes one reports it.
// Why a stored video of `file` cannot be read, from the library's error `what`: a results.h5
// copied without the rank files its videos link into gets one line naming the missing file
// ("<dir>/rank-00000.h5 is missing: results.h5 keeps its videos in the rank files beside it
// ...") instead of HDF5's link traversal stack (issue 39, class 13); other errors unchanged.
[[nodiscard]] std::string video_read_error(const std::filesystem::path& file,
                                           const std::string& what);

[[nodiscard]] std::string stored_hash_mismatch(const std::string& recorded,
                                               const std::string& actual);

// The rows of every file of `files` (file_order = its position), read as the resume scan and
// the merge read a folder: a file that cannot be read (not HDF5, truncated, not an omni-dp
// file) is skipped with one warning "<who>: skipping unreadable <file>: <why>" and listed in
// `unreadable`. A file a running job writes (locked by its writer) gives the rows of its live
// table (StoredRow::live; listed in `live`), or, without a readable one, an InputError
// (live_file_message). A single file is not skipped: its error is thrown. Throws IoError when no
// file of several is readable.
struct FilesRows {
  std::vector<StoredRow> rows;
  std::vector<std::filesystem::path> read;        // the files whose rows were read
  std::vector<std::filesystem::path> unreadable;  // skipped with a warning
  std::vector<std::filesystem::path> live;        // of `read`: read from their live tables
};
[[nodiscard]] FilesRows read_rows_skipping_unreadable(const std::vector<std::filesystem::path>& files,
                                                      const std::string& who);

// One row per id, sorted by id (bytewise). Rule (docs/results.md): an ok row whose expected
// video is missing is dropped (a writer died between the two); then ok beats failed; then the
// newest end_time, then the higher attempt, then the later file. `without_video` counts the
// rows of the first rule, `dropped` the rest (the duplicates of an id; issue 52, class 15: the
// two were one count, so inspect called rows without their video "duplicates").
// Sorts in place through an index (extra memory: 8 bytes a row).
[[nodiscard]] std::vector<StoredRow> select_rows(std::vector<StoredRow> rows,
                                                 std::size_t* dropped = nullptr,
                                                 std::size_t* without_video = nullptr);

}  // namespace omnidp::results
