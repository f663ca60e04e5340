#include "omnidp/common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace omnidp {
namespace {
std::atomic<int> g_rank{-1};
LogLevel initial_level() {
  const char* env = std::getenv("OMNIDP_LOG");
  if (env == nullptr) return LogLevel::info;
  const std::string v(env);
  if (v == "error") return LogLevel::error;
  if (v == "warn") return LogLevel::warn;
  if (v == "debug") return LogLevel::debug;
  return LogLevel::info;
}
std::atomic<int> g_level{static_cast<int>(initial_level())};
std::mutex g_mutex;
}  // namespace

void set_log_rank(int rank) noexcept { g_rank.store(rank); }
void set_log_level(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load()); }

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > g_level.load()) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms));
  static constexpr const char* kNames[] = {"ERROR ", "WARN ", "", ""};
  const int rank = g_rank.load();
  std::lock_guard lock(g_mutex);
  if (rank >= 0) {
    std::fprintf(stderr, "[omni-dp r%d %s] %s%.*s\n", rank, stamp, kNames[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
  } else {
    std::fprintf(stderr, "[omni-dp %s] %s%.*s\n", stamp, kNames[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
  }
}

}  // namespace omnidp
