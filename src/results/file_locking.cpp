#include "omnidp/results/file_locking.hpp"

#include <fmt/format.h>
#include <sys/vfs.h>

#include <atomic>
#include <cstdio>

#include "omnidp/common/log.hpp"

namespace omnidp::results {
namespace {
std::atomic<bool> g_enabled{true};
std::atomic<bool> g_warned{false};
}  // namespace

std::optional<std::string_view> locking_unsafe_file_system(std::uint64_t f_type) {
  const auto magic = static_cast<std::uint32_t>(f_type & 0xFFFFFFFFU);
  for (const auto& fs : kLockingUnsafeFileSystems) {
    if (fs.magic == magic) return fs.name;
  }
  return std::nullopt;
}

bool decide_file_locking(FileLocking mode, std::uint64_t f_type, std::string* why) {
  if (mode == FileLocking::on) return true;
  if (mode == FileLocking::off) return false;
  const auto name = locking_unsafe_file_system(f_type);
  if (!name) return true;
  if (why != nullptr) {
    *why = fmt::format("{} (statfs f_type 0x{:08X})", *name, static_cast<unsigned long long>(f_type));
  }
  return false;
}

bool configure_file_locking(FileLocking mode, const std::filesystem::path& dir) {
  std::filesystem::path probe = dir.empty() ? std::filesystem::path(".") : dir;
  std::error_code ec;
  while (!std::filesystem::exists(probe, ec) && probe.has_parent_path() &&
         probe.parent_path() != probe) {
    probe = probe.parent_path();
  }
  std::uint64_t f_type = 0;
  struct statfs st {};
  if (::statfs(probe.c_str(), &st) == 0) f_type = static_cast<std::uint64_t>(st.f_type);
  std::string why;
  const bool enabled = decide_file_locking(mode, f_type, &why);
  g_enabled.store(enabled);
  if (!enabled && mode == FileLocking::automatic && !g_warned.exchange(true)) {
    log_warn("output.file_locking: auto: " + dir.string() + " is on " + why +
             ", where HDF5 file locking fails or hangs; locking is off (one writer per rank "
             "file by construction; set output.file_locking: on to force it)");
  }
  return enabled;
}

bool file_locking_enabled() noexcept { return g_enabled.load(); }

}  // namespace omnidp::results
