#include "omnidp/results/attempt_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

// "start\t<attempt>\t<input key>\t<id>\n": ids hold no control characters (manifest rule), so
// a tab never occurs inside one.
bool parse_line(std::string_view line, bool& start, int& attempt, std::string_view& key,
                std::string_view& id) {
  const auto tab1 = line.find('\t');
  if (tab1 == std::string_view::npos) return false;
  const std::string_view what = line.substr(0, tab1);
  if (what != "start" && what != "end") return false;
  start = what == "start";
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
  fd_ = open_regular_file(path_, O_WRONLY | O_APPEND | O_CREAT, why, 0644);
  if (fd_ < 0) throw IoError(path_.string(), "cannot open the attempt log: " + why);
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
  const std::string line =
      std::string(what) + '\t' + std::to_string(attempt) + '\t' + input_key + '\t' + id + '\n';
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
  // (key, attempt) -> started, ended
  std::map<std::pair<std::string, int>, std::pair<bool, bool>> attempts;
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
    std::string_view rest(text);
    for (auto nl = rest.find('\n'); nl != std::string_view::npos; nl = rest.find('\n')) {
      const std::string_view line = rest.substr(0, nl);  // a line without '\n' is cut: ignored
      rest.remove_prefix(nl + 1);
      bool start = false;
      int attempt = 0;
      std::string_view key;
      std::string_view id;
      if (!parse_line(line, start, attempt, key, id)) continue;
      auto& seen = attempts[{attempt_key(std::string(id), std::string(key)), attempt}];
      (start ? seen.first : seen.second) = true;
    }
  }
  for (const auto& [which, seen] : attempts) {
    AttemptHistory& h = out[which.first];
    if (seen.first) h.last_attempt = std::max(h.last_attempt, which.second);
    if (seen.first && !seen.second) ++h.interrupted;
  }
  return out;
}

}  // namespace omnidp::results
