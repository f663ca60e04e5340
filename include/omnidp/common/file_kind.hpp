#pragma once
// What a path is, in words, for the messages that refuse anything but a regular file (an input
// opened for reading would block on a FIFO; an output renamed over a device would destroy it),
// and the safe ways to look at and open the files of the product's own folders: no call here
// throws on a symbolic link loop or a dangling link, and none blocks on a FIFO or a device.
// Plain functions; thread-safe.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp {

// "a folder", "a FIFO", "a character device", "a block device", "a socket", "a regular file",
// "a symbolic link", "nothing" (not found), "a file of another kind".
[[nodiscard]] const char* file_kind(std::filesystem::file_type type) noexcept;

// "" where `path` (its links followed) is a regular file, else why it cannot be read as one:
// "file not found", "is a FIFO, not a regular file" (and so on), "is a dangling symbolic link
// (to '<target>')", "is a symbolic link loop (too many levels of symbolic links)", or the
// system's reason where it cannot be examined ("cannot be examined: Permission denied").
[[nodiscard]] std::string regular_file_problem(const std::filesystem::path& path);

// Whether `path`, its links followed, is a regular file / a folder: false for anything else
// and on any error (a link loop, a dangling link, no permission). Never throws.
[[nodiscard]] bool is_regular_path(const std::filesystem::path& path) noexcept;
[[nodiscard]] bool is_folder_path(const std::filesystem::path& path) noexcept;
// Whether anything at all is at `path` itself (not following a link: a dangling link or a
// link loop takes the name too). Never throws.
[[nodiscard]] bool path_taken(const std::filesystem::path& path) noexcept;

// The entries of folder `dir` (their paths, unsorted), read without looking at what they are:
// an entry that is a link loop or a dangling link is listed like any other. Empty when `dir`
// is not a folder; `error` (when given) gets why a folder could not be listed, else "".
// Never throws a filesystem_error.
[[nodiscard]] std::vector<std::filesystem::path> folder_entries(const std::filesystem::path& dir,
                                                                std::string* error = nullptr);

// open(2) of `path` with `flags` (O_NONBLOCK and O_CLOEXEC added), refusing anything but a
// regular file without ever blocking (a FIFO, a device, a folder, a link loop): the descriptor
// of a regular file (O_NONBLOCK cleared again; the caller closes it), else -1 with `why` set
// (regular_file_problem's words, or the system's reason).
[[nodiscard]] int open_regular_file(const std::filesystem::path& path, int flags, std::string& why,
                                    mode_t mode = 0644);

// Removes a FIFO or a socket at `path` itself (not following a link; nothing else is touched)
// and returns what it was ("a FIFO"), else "" with nothing removed: for the files the product
// replaces in its own folders (summary.json, results.h5), where such a file is no data of
// anyone's but would refuse the replacement. Never throws.
[[nodiscard]] std::string remove_special_file(const std::filesystem::path& path) noexcept;

// The whole contents of the regular file `path` (open_regular_file). Throws IoError naming
// `path`: "cannot read <what>: <why>".
[[nodiscard]] std::string read_regular_file(const std::filesystem::path& path, std::string_view what);

}  // namespace omnidp
