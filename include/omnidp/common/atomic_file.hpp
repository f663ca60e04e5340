#pragma once
// Replacing a file so that a reader sees the old one or the whole new one, never a part: the new
// content goes to a temporary file beside the target (the same folder, so the same file system),
// which rename(2) then moves over it. The one place the tree does this (summaries, metrics,
// reports, caches, merged results, exported videos). Only a regular file or a new path is
// replaced: a symbolic link is followed (it stays a link, its file is replaced), a character
// device (/dev/null, /dev/stdout) is written in place by write_file_atomically, and anything
// else (a folder, FIFO, socket, block device) is refused. Thread-safe: temporary names are
// unique per process and call.

#include <filesystem>
#include <string_view>

namespace omnidp {

// The file that replacing `path` replaces: `path`, or the file its symbolic links lead to.
// IoError(path, "<what> goes to a regular file or a new path, not <a folder|a FIFO|...>")
// where that exists and is not a regular file (renaming over it would destroy it).
[[nodiscard]] std::filesystem::path replacement_target(const std::filesystem::path& path,
                                                       std::string_view what = "the file");

// Creates the empty file `tmp` (O_EXCL) that will replace `path`, or throws IoError naming
// `path`, the user's name: "cannot create <what>: <strerror> (creating a file in '<folder>')"
// (a read-only folder: "Permission denied" / "Read-only file system").
void create_temporary(const std::filesystem::path& tmp, const std::filesystem::path& path,
                      std::string_view what);

// A fresh temporary path beside `path`: "<folder>/.<name>.tmp-<pid>-<n>".
[[nodiscard]] std::filesystem::path temporary_beside(const std::filesystem::path& path);

// Renames `tmp` over `path`. On failure removes `tmp` and throws IoError(path, "cannot rename
// <what> into place: <reason>").
void rename_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path,
                       std::string_view what = "the file");

// fsync(2) of a file or a folder; IoError naming it when it cannot be opened or synced.
void fsync_path(const std::filesystem::path& path);

enum class Durability { cached, synced };

// Writes `bytes` to a temporary beside replacement_target(path) and renames it into place;
// `synced` also fsyncs the file before the rename and the folder after (the new content
// survives a crash). A character device is written in place instead. Throws IoError naming
// `path` as given (never the temporary): replacement_target's refusal, create_temporary's
// "cannot create <what>: <reason> ...", "cannot write <what>: <reason>", or the rename's error
// naming the target; the temporary never stays behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::string_view what = "the file",
                           Durability durability = Durability::cached);

}  // namespace omnidp
