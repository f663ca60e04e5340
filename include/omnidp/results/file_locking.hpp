#pragma once
// output.file_locking (docs/results.md, "File locking"): HDF5's file lock (flock) fails or
// hangs on many parallel and network file systems. `auto` turns it off, with one warning, on
// the file systems in kLockingUnsafeFileSystems (detected by statfs f_type); `on` and `off`
// force it. HDF5-free header; the decision is process-wide (every later HDF5 file access of
// the results area follows it). Thread-safe.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "omnidp/config/config.hpp"

namespace omnidp::results {

struct FileSystemMagic {
  std::uint32_t magic;  // statfs f_type
  std::string_view name;
};
// The one table of file systems on which HDF5's locking is known to misbehave.
inline constexpr std::array<FileSystemMagic, 10> kLockingUnsafeFileSystems{{
    {0x0BD00BD0U, "Lustre"},
    {0x47504653U, "GPFS (IBM Spectrum Scale)"},
    {0x00006969U, "NFS"},
    {0xFF534D42U, "CIFS"},
    {0xFE534D42U, "SMB2/3"},
    {0x517B0000U, "SMB"},
    {0x19830326U, "BeeGFS"},
    {0x00C36400U, "CephFS"},
    {0x65735546U, "FUSE"},
    {0x013111A8U, "IBRIX"},
}};

// The table's name for `f_type`, or nullopt when locking works there as far as known.
[[nodiscard]] std::optional<std::string_view> locking_unsafe_file_system(std::uint64_t f_type);

// Whether HDF5 should lock files for `mode` on a file system of type `f_type`; `why` (optional)
// gets the reason when auto turns it off.
[[nodiscard]] bool decide_file_locking(FileLocking mode, std::uint64_t f_type,
                                       std::string* why = nullptr);

// statfs of `dir` (or its nearest existing parent), then decide_file_locking; applies the
// decision process-wide and warns once when auto turns locking off. Returns the decision.
bool configure_file_locking(FileLocking mode, const std::filesystem::path& dir);

// The process-wide decision (true until configure_file_locking says otherwise).
[[nodiscard]] bool file_locking_enabled() noexcept;

}  // namespace omnidp::results
