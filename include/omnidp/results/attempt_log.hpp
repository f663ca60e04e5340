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
//
// Only an attempt cut short by its own rank's end counts (issue 52, class 1: a kill of rank 1
// made every rerun refuse the request rank 0 was running). Each opening of a log starts a run
// segment ("run\t<pid>"); a rank that is told to stop from outside (a drain signal, or the
// SIGCONT/SIGTERM/SIGKILL by which mpirun ends the other ranks of a job when one dies or calls
// MPI_Abort) appends "signal\t<n>" from its handler, and the attempts it leaves unended in that
// segment are excused: they were interrupted because the job was ended, which is no evidence
// against them. A rank that aborts the job for a request past scheduler.request_timeout_s
// appends "timeout\t<attempt>\t<key>\t<id>" first: that attempt counts whatever follows. A rank
// that dies unannounced (SIGKILL, a crash, the OOM killer, its node lost) leaves its running
// attempt unexcused: it counts, since nothing tells such a death from one the request caused.
// AttemptLog: one writer thread (the rank's worker). read_attempt_logs: plain function. The
// note_* functions write to the process's current log (make_current) from any thread;
// note_signal is async-signal-safe.

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

  // "signal\t<sig>" in this log: the rank had been told to stop before the log was opened.
  void signalled(int sig) noexcept;

  // Makes this log the one the note_* functions below append to (a duplicate of its descriptor
  // that stays open until the process exits, so a handler never writes to a reused one).
  void make_current() noexcept;

  // "signal\t<sig>": the rank was told to stop from outside (from a signal handler: only
  // write(2)). Nothing without a current log.
  static void note_signal(int sig) noexcept;
  // "timeout\t<attempt>\t<key>\t<id>": this rank aborts the job for this attempt (it counts).
  static void note_timeout(const std::string& id, const std::string& input_key, int attempt) noexcept;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void append(const char* what, const std::string& id, const std::string& input_key, int attempt);
  std::filesystem::path path_;
  int fd_ = -1;
};

struct AttemptHistory {
  int last_attempt = 0;  // the highest attempt number started
  int interrupted = 0;   // attempts started and never ended, cut short by their own rank's end
  int excused = 0;       // attempts started and never ended because the job was stopped
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
