#pragma once
// Replacing a file so that a reader sees the old one or the whole new one, never a part: the new
// content goes to a temporary file beside the target (the same folder, so the same file system),
// which rename(2) then moves over it. The one place the tree does this (summaries, metrics,
// reports, caches, merged results, exported videos). Thread-safe: temporary names are unique per
// process and call.

#include <filesystem>
#include <string_view>

namespace omnidp {

// A fresh temporary path beside `path`: "<folder>/.<name>.tmp-<pid>-<n>".
[[nodiscard]] std::filesystem::path temporary_beside(const std::filesystem::path& path);

// Renames `tmp` over `path`. On failure removes `tmp` and throws IoError(path, "cannot rename
// <what> into place: <reason>").
void rename_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path,
                       std::string_view what = "the file");

// fsync(2) of a file or a folder; IoError naming it when it cannot be opened or synced.
void fsync_path(const std::filesystem::path& path);

enum class Durability { cached, synced };

// Writes `bytes` to a temporary beside `path` and renames it into place; `synced` also fsyncs
// the file before the rename and the folder after (the new content survives a crash). Throws
// IoError: "cannot create <what>" / "cannot write <what>" naming the temporary, or the rename's
// error naming `path`; the temporary never stays behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::string_view what = "the file",
                           Durability durability = Durability::cached);

}  // namespace omnidp
