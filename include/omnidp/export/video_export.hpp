#pragma once
// Writing a stored video as files people can look at (docs/export.md): MP4 (H.264, yuv420p),
// PNG frames, or an animated GIF. FFmpeg-free header: MP4 and GIF need a build with FFmpeg
// (CMake OMNIDP_EXPORT); without it they throw UsageError(ffmpeg_missing_message()).
// Plain functions, no shared state: safe to call from several threads on different files.
// Output files are written under a temporary name and renamed into place.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/common/video.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp::video_export {

enum class ExportFormat { mp4, png, gif };
[[nodiscard]] const char* to_string(ExportFormat format) noexcept;
// "mp4" | "png" | "gif"; nullopt otherwise.
[[nodiscard]] std::optional<ExportFormat> parse_export_format(std::string_view text) noexcept;

// Whether this build has the FFmpeg encoders (MP4, GIF).
[[nodiscard]] bool ffmpeg_available() noexcept;
// What a build without FFmpeg says when asked for MP4 or GIF.
[[nodiscard]] std::string ffmpeg_missing_message(std::string_view program);
// Throws ConfigError("output.export[i]", ...) for a format this build cannot write
// (mp4/gif without FFmpeg) or an unknown one. Call at startup, on every rank alike.
void check_export_support(const OutputConfig& output);

struct Mp4Options {
  int crf = 18;                   // libx264 quality (0 lossless .. 51); other encoders: bitrate
  std::string preset = "medium";  // libx264 speed preset
  int threads = 0;                // encoder threads (0: the encoder decides)
  bool faststart = true;          // moov atom before the data (plays while downloading)
};

// H.264 (libx264 when available, else the best H.264 encoder of this FFmpeg), yuv420p, time
// base 1/fps, one frame per video frame. H.264 in yuv420p needs even dimensions: an odd width
// or height is padded by one column/row that repeats the last one. Throws InputError for a
// malformed video or fps < 1, IoError (libav's message and the file) when writing fails.
void write_mp4(const Video& video, int fps, const std::filesystem::path& path,
               const Mp4Options& options = {});
// Animated GIF (libav's gif encoder, rgb8 palette with dithering), looping forever; frame
// delays are fps rounded to GIF's 1/100 s.
void write_gif(const Video& video, int fps, const std::filesystem::path& path);
// One 8-bit RGB PNG per frame: <dir>/frame-00000.png, ... (dir created). Lossless: reading the
// files back gives the video's bytes. Returns the paths written.
std::vector<std::filesystem::path> write_png_frames(const Video& video,
                                                    const std::filesystem::path& dir);

// File name (without extension) for a request id: the id with '%', '/', '\', control bytes,
// DEL, leading/trailing spaces and a leading '.' percent-encoded (%XX); an id whose encoding is
// longer than 200 bytes is cut there and gets "~<first 16 hex of sha256(id)>". Reversible for
// ids that are not cut; never empty, never "." or "..".
[[nodiscard]] std::string export_file_stem(std::string_view id);

// Writes `video` as `format` into `out_dir` (created): <stem>.mp4, <stem>.gif, or the folder
// <stem>/ of PNG frames. Returns the path written.
std::filesystem::path export_video(const Video& video, int fps, ExportFormat format,
                                   const std::filesystem::path& out_dir, std::string_view id);

}  // namespace omnidp::video_export
