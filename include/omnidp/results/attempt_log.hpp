#pragma once
// The attempts of each request, counted across runs of one output folder (docs/results.md,
// "Attempts"; issue 39, class 6): a request that hangs past scheduler.request_timeout_s or
// kills its rank ends its run before any row is written, so without a count a Slurm job that
// requeues on exit 75 would run it forever. Each working rank appends one line to
// <dir>/attempts-rank-NNNNN.log when it starts an attempt and one when the attempt ends
// (a row queued for writing, a transient retry, an abandoned request), each line written with
// one write() and fdatasync'ed; an attempt started and never ended was interrupted. Rank 0
// reads every log before handing out work: a request's attempts continue its last number, and
// one whose attempts with the same input key were interrupted more than scheduler.max_retries
// times is recorded failed without running.
// AttemptLog: one writer thread (the rank's worker). read_attempt_logs: plain function.

#include <filesystem>
#include <string>
#include <unordered_map>

namespace omnidp::results {

class AttemptLog {
 public:
  // Opens (creates) <dir>/attempts-rank-NNNNN.log for appending. Throws IoError.
  AttemptLog(const std::filesystem::path& dir, int rank);
  ~AttemptLog();
  AttemptLog(const AttemptLog&) = delete;
  AttemptLog& operator=(const AttemptLog&) = delete;

  // One line each, durable when they return. Throws IoError (the caller decides: the worker
  // warns once and goes on, the count is a safety net).
  void started(const std::string& id, const std::string& input_key, int attempt);
  void ended(const std::string& id, const std::string& input_key, int attempt);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void append(const char* what, const std::string& id, const std::string& input_key, int attempt);
  std::filesystem::path path_;
  int fd_ = -1;
};

struct AttemptHistory {
  int last_attempt = 0;  // the highest attempt number started
  int interrupted = 0;   // attempts started and never ended
};

// The key of a request's history: its id and input key (an attempt with another input key, a
// changed request, does not count).
[[nodiscard]] std::string attempt_key(const std::string& id, const std::string& input_key);

// Every <dir>/attempts-rank-*.log, read together (an attempt may start on one rank and, after
// a retry, another; ends match starts by id, key and number). A line cut short by a kill, or
// not of this format, is ignored. A missing folder or no log gives an empty map.
[[nodiscard]] std::unordered_map<std::string, AttemptHistory> read_attempt_logs(
    const std::filesystem::path& dir);

// "<dir>/attempts-rank-00003.log".
[[nodiscard]] std::filesystem::path attempt_log_path(const std::filesystem::path& dir, int rank);

}  // namespace omnidp::results
