#pragma once
// The resume scan (SPEC section 7): what an output folder already holds. HDF5-free header.
// Called by the coordinator (rank 0) at start, before work is handed out.

#include <filesystem>
#include <string>
#include <unordered_map>

namespace omnidp::results {

// id -> input_key of every request recorded ok in any <dir>/rank-*.h5 (of any earlier world
// size or run segment) whose video is present when the file stores videos. Files left unclosed
// by a killed process are read as of their last flush. A file that cannot be opened at all is
// skipped with a warning (its requests are generated again). A file that a live process holds
// locked (HDF5's flock) is waited for up to `lock_wait_s` (a rank of the previous job still
// exiting after mpirun returned lets go within seconds); still locked, it is an InputError
// (exit 2) naming the file and the likely cause: an earlier run still running on this folder.
// The same id recorded ok with two input keys is a RuntimeError naming both keys and files. A
// missing folder gives an empty map.
[[nodiscard]] std::unordered_map<std::string, std::string> scan_done(
    const std::filesystem::path& dir, double lock_wait_s = 10.0);

// The error for a rank file another process holds locked (exit 2).
[[nodiscard]] std::string locked_file_message(const std::filesystem::path& file);

}  // namespace omnidp::results
