#pragma once
// The sandbox of a manifest's input paths (docs/manifest.md, "Paths"): `image` and
// `prompt_embeds` resolve against the manifest's folder and must stay inside it, symlinks of
// the part that exists followed. Pure functions (they read the file system's links only).

#include <cstddef>
#include <filesystem>
#include <string>

namespace omnidp {

// Whether `path` (absolute, normal) is `root` or inside it, component by component.
[[nodiscard]] bool is_within(const std::filesystem::path& path, const std::filesystem::path& root);

// `text` resolved against `root` (the manifest's canonical folder). A path that leaves it is a
// ManifestError naming `file`, `line` and `field`. An unreadable parent is checked lexically
// (reading the file fails later).
[[nodiscard]] std::string resolve_input_path(const std::string& text,
                                             const std::filesystem::path& root,
                                             const std::string& file, std::size_t line,
                                             const std::string& field);

}  // namespace omnidp
