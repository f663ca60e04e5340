#pragma once
// What a path is, in words, for the messages that refuse anything but a regular file (an input
// opened for reading would block on a FIFO; an output renamed over a device would destroy it).
// Pure functions; thread-safe.

#include <filesystem>
#include <string>

namespace omnidp {

// "a folder", "a FIFO", "a character device", "a block device", "a socket", "a regular file",
// "a symbolic link", "nothing" (not found), "a file of another kind".
[[nodiscard]] const char* file_kind(std::filesystem::file_type type) noexcept;

// "" where `path` (its links followed) is a regular file, else why it cannot be read as one:
// "file not found", or "is a FIFO, not a regular file" (and so on).
[[nodiscard]] std::string regular_file_problem(const std::filesystem::path& path);

}  // namespace omnidp
