#include "omnidp/results/attempt_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"

namespace omnidp::results {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "attempts-rank-";
constexpr std::string_view kSuffix = ".log";

// The current log's duplicate descriptor (-1: none), for the note_* functions.
std::atomic<int> g_note_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free, "read from a signal handler");

enum class LineKind { start, end, timeout };

// "start\t<attempt>\t<input key>\t<id>\n" (also "end", "timeout"): ids hold no control
// characters (manifest rule), so a tab never occurs inside one.
bool parse_line(std::string_view line, LineKind& kind, int& attempt, std::string_view& key,
                std::string_view& id) {
  const auto tab1 = line.find('\t');
  if (tab1 == std::string_view::npos) return false;
  const std::string_view what = line.substr(0, tab1);
  if (what == "start") {
    kind = LineKind::start;
  } else if (what == "end") {
    kind = LineKind::end;
  } else if (what == "timeout") {
    kind = LineKind::timeout;
  } else {
    return false;
  }
  const auto tab2 = line.find('\t', tab1 + 1);
  if (tab2 == std::string_view::npos) return false;
  const std::string_view number = line.substr(tab1 + 1, tab2 - tab1 - 1);
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), attempt);
  if (ec != std::errc() || end != number.data() + number.size() || attempt < 1) return false;
  const auto tab3 = line.find('\t', tab2 + 1);
  if (tab3 == std::string_view::npos) return false;
  key = line.substr(tab2 + 1, tab3 - tab2 - 1);
  id = line.substr(tab3 + 1);
  return !id.empty();
}

std::string attempt_line(const char* what, const std::string& id, const std::string& input_key,
                         int attempt) {
  return std::string(what) + '\t' + std::to_string(attempt) + '\t' + input_key + '\t' + id + '\n';
}

// With write(2) only: called from signal handlers.
void write_signal_line(int fd, int sig) noexcept {
  if (fd < 0) return;
  char line[32] = "signal\t";
  std::size_t n = 7;
  char digits[12];
  std::size_t d = 0;
  unsigned value = sig < 0 ? 0U : static_cast<unsigned>(sig);
  do {
    digits[d++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && d < sizeof digits);
  while (d > 0) line[n++] = digits[--d];
  line[n++] = '\n';
  (void)!::write(fd, line, n);
}

}  // namespace

fs::path attempt_log_path(const fs::path& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "attempts-rank-%05d.log", rank);
  return dir / name;
}

std::string attempt_key(const std::string& id, const std::string& input_key) {
  return id + '\n' + input_key;
}

AttemptLog::AttemptLog(const fs::path& dir, int rank) : path_(attempt_log_path(dir, rank)) {
  // A FIFO (or a device) under the log's name is refused, never opened blocking: the worker
  // would wait for a reader forever (issue 52, class 5).
  std::string why;
  fd_ = open_regular_file(path_, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, why, 0644);
  if (fd_ < 0) throw IoError(path_.string(), "cannot open the attempt log: " + why);
  // A new run segment: a signal note excuses the unended attempts of its own segment only.
  const std::string line = "run\t" + std::to_string(::getpid()) + '\n';
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw IoError(path_.string(), std::string("cannot write the attempt log: ") + std::strerror(err));
  }
}

void AttemptLog::make_current() noexcept {
  const int current = g_note_fd.load();
  if (current >= 0) {
    (void)::dup3(fd_, current, O_CLOEXEC);  // atomically points the note descriptor here
    return;
  }
  const int dup = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  int expected = -1;
  if (dup >= 0 && !g_note_fd.compare_exchange_strong(expected, dup)) {
    (void)::dup3(fd_, expected, O_CLOEXEC);  // another thread made one first
    ::close(dup);
  }
}

void AttemptLog::signalled(int sig) noexcept { write_signal_line(fd_, sig); }

void AttemptLog::note_signal(int sig) noexcept { write_signal_line(g_note_fd.load(), sig); }

void AttemptLog::note_timeout(const std::string& id, const std::string& input_key,
                              int attempt) noexcept {
  const int fd = g_note_fd.load();
  if (fd < 0) return;
  try {
    const std::string line = attempt_line("timeout", id, input_key, attempt);
    if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
      (void)::fdatasync(fd);
    }
  } catch (...) {  // no memory for the line: the attempt stays unended, which counts it too
  }
}

AttemptLog::~AttemptLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AttemptLog::started(const std::string& id, const std::string& input_key, int attempt) {
  append("start", id, input_key, attempt);
}

void AttemptLog::ended(const std::string& id, const std::string& input_key, int attempt) {
  append("end", id, input_key, attempt);
}

void AttemptLog::append(const char* what, const std::string& id, const std::string& input_key,
                        int attempt) {
  const std::string line = attempt_line(what, id, input_key, attempt);
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    throw IoError(path_.string(), std::string("cannot write the attempt log: ") +
                                      (n < 0 ? std::strerror(errno) : "short write"));
  }
  if (::fdatasync(fd_) != 0) {
    throw IoError(path_.string(),
                  std::string("cannot sync the attempt log: ") + std::strerror(errno));
  }
}

std::unordered_map<std::string, AttemptHistory> read_attempt_logs(const fs::path& dir) {
  std::unordered_map<std::string, AttemptHistory> out;
  if (!is_folder_path(dir)) return out;
  struct Seen {
    bool started = false;
    bool ended = false;
    bool counted = false;  // unended in a segment of its own rank's end (not excused)
  };
  // (key, attempt) -> what the logs say of it
  std::map<std::pair<std::string, int>, Seen> attempts;
  for (const auto& entry : folder_entries(dir)) {
    const std::string name = entry.filename().string();
    if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) continue;
    // A log that is not a regular file (a FIFO, a folder, a link loop) or cannot be read counts
    // nothing, with one warning: the count is a safety net (issue 52, classes 3 and 5).
    std::string text;
    try {
      text = read_regular_file(entry, "the attempt log");
    } catch (const Error& e) {
      log_warn(std::string("resume: ") + e.what() + "; its attempts are not counted");
      continue;
    }
    // One run segment of this file: its attempts, whether a signal ended the rank, and the
    // attempts it aborted the job for.
    std::map<std::pair<std::string, int>, bool> segment;  // -> ended in this segment
    std::map<std::pair<std::string, int>, bool> timed_out;
    bool signalled = false;
    const auto close_segment = [&] {
      for (const auto& [which, ended] : segment) {
        Seen& seen = attempts[which];
        seen.started = true;
        if (ended) {
          seen.ended = true;
        } else if (!signalled || timed_out.contains(which)) {
          seen.counted = true;
        }
      }
      segment.clear();
      timed_out.clear();
      signalled = false;
    };
    std::string_view rest(text);
    for (auto nl = rest.find('\n'); nl != std::string_view::npos; nl = rest.find('\n')) {
      const std::string_view line = rest.substr(0, nl);  // a line without '\n' is cut: ignored
      rest.remove_prefix(nl + 1);
      if (line.starts_with("run\t")) {
        close_segment();
        continue;
      }
      if (line.starts_with("signal\t")) {
        signalled = true;
        continue;
      }
      LineKind kind = LineKind::start;
      int attempt = 0;
      std::string_view key;
      std::string_view id;
      if (!parse_line(line, kind, attempt, key, id)) continue;
      const std::pair<std::string, int> which{attempt_key(std::string(id), std::string(key)),
                                              attempt};
      if (kind == LineKind::start) {
        segment.try_emplace(which, false);
      } else if (kind == LineKind::end) {
        segment[which] = true;
      } else {
        timed_out[which] = true;
      }
    }
    close_segment();
  }
  for (const auto& [which, seen] : attempts) {
    AttemptHistory& h = out[which.first];
    if (seen.started) h.last_attempt = std::max(h.last_attempt, which.second);
    if (seen.started && !seen.ended) ++(seen.counted ? h.interrupted : h.excused);
  }
  return out;
}

}  // namespace omnidp::results
