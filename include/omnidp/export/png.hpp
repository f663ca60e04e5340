#pragma once
// Writing 8-bit RGB PNG files (libpng's simplified API; no longjmp reaches our code).
// Thread-safe: no shared state.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace omnidp::video_export {

// Writes pixels [height, width, 3] (C order, RGB) to `path` (replaced if it exists).
// Throws InputError when the sizes do not match, IoError with libpng's message otherwise.
void write_png(std::span<const std::uint8_t> rgb, int width, int height,
               const std::filesystem::path& path);

// The same PNG file's bytes, in memory (for data: URIs). `what` names the image in errors.
[[nodiscard]] std::vector<std::uint8_t> encode_png(std::span<const std::uint8_t> rgb, int width,
                                                   int height, const std::string& what);

}  // namespace omnidp::video_export
