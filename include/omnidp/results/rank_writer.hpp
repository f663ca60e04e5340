#pragma once
// The writer of one rank's results file, <dir>/rank-NNNNN.h5 (docs/results.md).
//
// Ownership: one RankWriter per rank, created and used by that rank's writer actor only
// (write() and close() from one thread at a time). HDF5-free header (pimpl).
//
// Files are never reopened for writing: a rank's first run writes rank-NNNNN.h5, a resumed run
// of the same rank writes the next free rank-NNNNN.K.h5 (K = 1, 2, ...), created exclusively.
// So a file left unclosed by a killed process is only ever read again (see docs/results.md).

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::results {

// A rank file's write failed for want of space: ENOSPC, EFBIG (a file-size limit) or EDQUOT in
// the HDF5 error stack or from fsync. One line: "<rank file>: no space left on device (<the
// errno's text>): <what was written>: <the library's error>". An IoError (exit 1).
class DiskFullError : public IoError {
 public:
  DiskFullError(const std::string& file, const std::string& detail)
      : IoError(file, "no space left on device " + detail) {}
};

// Provenance stored as root attributes of the rank file.
struct RankFileInfo {
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::string device;       // device name, e.g. "cuda:3 (NVIDIA H200)"
  std::string model;        // model.name
  std::string config_yaml;  // the effective configuration (to_yaml(config))
};

// Throws ConfigError("output.compression", ...) when the configured filter (gzip, lzf) is not
// available in this HDF5 build, and ConfigError("output.dir", ...) when output.dir cannot be
// created (its nearest existing ancestor is not a folder, or not writable); creates nothing.
// Call it at startup, before any work is handed out; the RankWriter constructor checks the
// filter again.
void check_output_support(const OutputConfig& output);

// File name of a rank file: segment 0 -> "rank-00003.h5", segment K -> "rank-00003.K.h5".
[[nodiscard]] std::string rank_file_name(int rank, int segment);

class RankWriter final : public ResultSink {
 public:
  // Creates <dir> if needed and the rank's next free file (never overwrites). Throws
  // ConfigError for an unavailable filter, IoError/Hdf5Error when the file cannot be created.
  RankWriter(const std::filesystem::path& dir, const RankFileInfo& info, const OutputConfig& output);
  ~RankWriter() override;
  // Not copyable or movable (a ResultSink); hold it by std::unique_ptr to pass it around.

  // Appends the row to /requests and, when the record is ok and output.store_video is on, the
  // video to /videos/<escaped id>; then H5Fflush + fsync. Returns only when durable: every
  // write and close on the way (the video's dataset and attributes, the row, the flush) is
  // checked, and any failure throws before the row counts (DiskFullError for a full disk).
  // Checks: video given iff ok and store_video; its dimensions equal the record's; its
  // video_sha256() equals record.video_sha256 (RuntimeError otherwise, nothing written).
  // After a failure the file is left as of its last flush (see close()).
  void write(const ResultRecord& record, const Video* video) override;
  // After a failed write (full disk, I/O error) the writer refuses further writes.
  // Marks the file closed (root attribute state = "closed") and closes it. Idempotent. After a
  // failed write it leaves the file as of its last flush instead (state "open"; the id is
  // released unclosed), so the rows flushed before stay readable.
  void close() override;

  // On (default): write() first reserves the disk space the request will take (its video's
  // bytes + 1/16 + 512 KiB, posix_fallocate), so a full disk fails there, before HDF5 writes
  // anything, and the file stays as of its last flush. Off: tests of what the checked writes
  // and closes alone guarantee (a file system that cannot reserve).
  void set_space_reservation(bool on);

  // Fault injection (tests, drills): called inside write() after the data is written and
  // before the flush. Pass an empty function to remove it.
  void set_fault_hook(std::function<void()> between_write_and_flush);

  [[nodiscard]] const std::filesystem::path& path() const noexcept;
  [[nodiscard]] std::size_t rows_written() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omnidp::results
