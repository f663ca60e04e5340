#pragma once
// Minimal thread-safe logging to stderr: "[omni-dp r3 12:00:01.234] message". The rank is set
// once per process (set_log_rank). Level from OMNIDP_LOG (error|warn|info|debug), default info.

#include <string_view>

namespace omnidp {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_rank(int rank) noexcept;
void set_log_level(LogLevel level) noexcept;
[[nodiscard]] LogLevel log_level() noexcept;
void log(LogLevel level, std::string_view message);

inline void log_error(std::string_view m) { log(LogLevel::error, m); }
inline void log_warn(std::string_view m) { log(LogLevel::warn, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
inline void log_debug(std::string_view m) { log(LogLevel::debug, m); }

}  // namespace omnidp
