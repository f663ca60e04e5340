#include "omnidp/runtime/deadline.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"

namespace omnidp::runtime {
namespace {

[[noreturn]] void bad_deadline(std::string_view text, const std::string& why) {
  throw UsageError("--deadline: '" + std::string(text) + "' " + why +
                   " (expected 2026-12-01T12:00:00 local, ...Z or ...+01:00, @EPOCH, or "
                   "+N[s|m|h])");
}

// Reads exactly `n` digits at `pos`; -1 when they are not there.
long digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  long v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i])) == 0) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// A run of digits (1..15 of them) filling `s` from `pos` to `end`; -1 otherwise.
long long all_digits(std::string_view s, std::size_t pos, std::size_t end) {
  if (end <= pos || end - pos > 15) return -1;
  long long v = 0;
  for (std::size_t i = pos; i < end; ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i])) == 0) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

double parse_iso(std::string_view text) {
  // YYYY-MM-DD[T ]HH:MM[:SS][Z|+HH:MM|-HH:MM|+HHMM|-HHMM]
  if (text.size() < 16) bad_deadline(text, "is not a time");
  const long year = digits(text, 0, 4);
  const long month = digits(text, 5, 2);
  const long day = digits(text, 8, 2);
  if (year < 0 || month < 0 || day < 0 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != ' ') || text[13] != ':') {
    bad_deadline(text, "is not a time");
  }
  const long hour = digits(text, 11, 2);
  const long minute = digits(text, 14, 2);
  long second = 0;
  std::size_t pos = 16;
  if (pos < text.size() && text[pos] == ':') {
    second = digits(text, pos + 1, 2);
    pos += 3;
  }
  if (hour < 0 || minute < 0 || second < 0) bad_deadline(text, "is not a time");
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    bad_deadline(text, "is not a valid date and time");
  }
  std::tm tm{};
  tm.tm_year = static_cast<int>(year - 1900);
  tm.tm_mon = static_cast<int>(month - 1);
  tm.tm_mday = static_cast<int>(day);
  tm.tm_hour = static_cast<int>(hour);
  tm.tm_min = static_cast<int>(minute);
  tm.tm_sec = static_cast<int>(second);
  const std::string_view zone = text.substr(pos);
  std::time_t t = 0;
  if (zone.empty()) {
    tm.tm_isdst = -1;
    std::tm copy = tm;
    t = std::mktime(&copy);
    if (t == static_cast<std::time_t>(-1) || copy.tm_mday != tm.tm_mday) {
      bad_deadline(text, "is not a valid local date and time");
    }
    return static_cast<double>(t);
  }
  std::tm copy = tm;
  t = ::timegm(&copy);
  if (copy.tm_mday != tm.tm_mday) bad_deadline(text, "is not a valid date");
  if (zone == "Z") return static_cast<double>(t);
  if (zone[0] != '+' && zone[0] != '-') bad_deadline(text, "has an unknown time zone");
  long oh = digits(zone, 1, 2);
  long om = -1;
  if (zone.size() == 6 && zone[3] == ':') om = digits(zone, 4, 2);
  if (zone.size() == 5) om = digits(zone, 3, 2);
  if (oh < 0 || om < 0 || oh > 23 || om > 59) bad_deadline(text, "has an unknown time zone");
  const long offset = (oh * 3600 + om * 60) * (zone[0] == '+' ? 1 : -1);
  return static_cast<double>(t) - static_cast<double>(offset);
}

std::optional<std::string> default_getenv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<std::string> default_run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  const int status = ::pclose(pipe);
  if (status != 0) return std::nullopt;
  return out;
}

bool default_has_squeue() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const auto file = std::filesystem::path(dir) / "squeue";
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) {
      return true;
    }
  }
  return false;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
  return s.substr(i);
}

}  // namespace

double parse_deadline(std::string_view text, double now_unix) {
  if (text.empty()) bad_deadline(text, "is empty");
  if (text[0] == '@') {
    const long long epoch = all_digits(text, 1, text.size());
    if (epoch < 0) bad_deadline(text, "is not a Unix time");
    return static_cast<double>(epoch);
  }
  if (text[0] == '+') {
    std::size_t end = text.size();
    double unit = 1.0;
    switch (text.back()) {
      case 's': end -= 1; break;
      case 'm':
        end -= 1;
        unit = 60.0;
        break;
      case 'h':
        end -= 1;
        unit = 3600.0;
        break;
      default: break;
    }
    const long long n = all_digits(text, 1, end);
    if (n < 0) bad_deadline(text, "is not a duration");
    return now_unix + static_cast<double>(n) * unit;
  }
  return parse_iso(text);
}

std::optional<Deadline> slurm_deadline(const SlurmProbe& probe) {
  const auto getenv = probe.getenv ? probe.getenv : default_getenv;
  if (const auto end = getenv("SLURM_JOB_END_TIME")) {
    const std::string value = trim(*end);
    const long long epoch = all_digits(value, 0, value.size());
    if (epoch > 0) return Deadline{static_cast<double>(epoch), "SLURM_JOB_END_TIME"};
    log_warn("deadline: SLURM_JOB_END_TIME='" + value + "' is not a Unix time; ignored");
  }
  const auto job = getenv("SLURM_JOB_ID");
  if (!job) return std::nullopt;
  const std::string id = trim(*job);
  const bool id_ok =
      !id.empty() && id.size() <= 32 &&
      std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || c == '_'; });
  if (!id_ok) {
    log_warn("deadline: SLURM_JOB_ID='" + id + "' is not a job id; no deadline");
    return std::nullopt;
  }
  const bool has_squeue = probe.has_squeue ? probe.has_squeue() : default_has_squeue();
  if (!has_squeue) return std::nullopt;
  const std::string command = "squeue -h -j " + id + " -o %e 2>/dev/null";
  const auto out = probe.run ? probe.run(command) : default_run(command);
  if (!out) {
    log_warn("deadline: '" + command +
             "' failed; no deadline (the job is killed at its time "
             "limit unless it is signalled)");
    return std::nullopt;
  }
  const std::string value = trim(*out);
  if (value.empty() || value == "N/A" || value == "NONE" || value == "Unknown" ||
      value == "UNLIMITED") {
    return std::nullopt;  // no time limit
  }
  try {
    return Deadline{parse_deadline(value, 0.0), "squeue -j " + id + " (%e)"};
  } catch (const Error&) {
    log_warn("deadline: squeue printed the end time '" + value +
             "', which does not parse; "
             "no deadline");
    return std::nullopt;
  }
}

std::string format_utc(double unix_s) {
  const auto t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace omnidp::runtime
