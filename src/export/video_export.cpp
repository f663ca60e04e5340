#include "omnidp/export/video_export.hpp"

#include <fmt/format.h>
#include <cstdio>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/export/png.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxStemBytes = 200;

void append_escape(std::string& out, unsigned char c) {
  constexpr const char* kHex = "0123456789ABCDEF";
  out += '%';
  out += kHex[c >> 4U];
  out += kHex[c & 0x0FU];
}

}  // namespace

const char* to_string(ExportFormat format) noexcept {
  switch (format) {
    case ExportFormat::mp4: return "mp4";
    case ExportFormat::png: return "png";
    case ExportFormat::gif: return "gif";
  }
  return "?";
}

std::optional<ExportFormat> parse_export_format(std::string_view text) noexcept {
  for (const auto f : {ExportFormat::mp4, ExportFormat::png, ExportFormat::gif}) {
    if (text == to_string(f)) return f;
  }
  return std::nullopt;
}

std::string ffmpeg_missing_message(std::string_view program) {
  return std::string(program) +
         " was built without FFmpeg (libavcodec-dev libavformat-dev libavutil-dev "
         "libswscale-dev), so it cannot write MP4 or GIF: rebuild with those packages installed "
         "(cmake -DOMNIDP_EXPORT=ON makes their absence an error); PNG frames work without them";
}

void check_export_support(const OutputConfig& output) {
  for (std::size_t i = 0; i < output.export_formats.size(); ++i) {
    const std::string path = fmt::format("output.export[{}]", i);
    const auto format = parse_export_format(output.export_formats[i]);
    if (!format) {
      throw ConfigError(
          path, "unknown format '" + output.export_formats[i] + "' (expected mp4, png or gif)");
    }
    if (*format != ExportFormat::png && !ffmpeg_available()) {
      throw ConfigError(path, ffmpeg_missing_message("omni-dp"));
    }
  }
}

std::string export_file_stem(std::string_view id) {
  std::string out;
  out.reserve(id.size());
  std::size_t first = 0;
  while (first < id.size() && id[first] == ' ') ++first;
  std::size_t last = id.size();
  while (last > first && id[last - 1] == ' ') --last;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    const bool edge_space = c == ' ' && (i < first || i >= last);
    if (c == '%' || c == '/' || c == '\\' || c < 0x20 || c == 0x7F || edge_space ||
        (i == 0 && c == '.')) {
      append_escape(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (out.empty()) return "%00";  // an empty id (not a valid request id; kept distinct)
  if (out.size() <= kMaxStemBytes) return out;
  std::size_t cut = kMaxStemBytes;
  // Never cut inside a %XX escape or a UTF-8 sequence.
  while (cut > 0 && ((static_cast<unsigned char>(out[cut]) & 0xC0U) == 0x80U)) --cut;
  if (cut >= 1 && out[cut - 1] == '%')
    cut -= 1;
  else if (cut >= 2 && out[cut - 2] == '%')
    cut -= 2;
  return out.substr(0, cut) + "~" + sha256_hex(id).substr(0, 16);
}

std::vector<fs::path> write_png_frames(const Video& video, const fs::path& dir) {
  video.check();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError(dir.string(), "cannot create the folder: " + ec.message());
  const std::size_t frame_bytes =
      static_cast<std::size_t>(video.height) * static_cast<std::size_t>(video.width) * 3U;
  std::vector<fs::path> paths;
  paths.reserve(static_cast<std::size_t>(video.frames));
  for (int f = 0; f < video.frames; ++f) {
    paths.push_back(dir / fmt::format("frame-{:05}.png", f));
    const std::span<const std::uint8_t> bytes(
        video.data.data() + static_cast<std::size_t>(f) * frame_bytes, frame_bytes);
    write_png(bytes, video.width, video.height, paths.back());
  }
  return paths;
}

fs::path export_video(const Video& video, int fps, ExportFormat format, const fs::path& out_dir,
                      std::string_view id) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir.string(), "cannot create the folder: " + ec.message());
  const std::string stem = export_file_stem(id);
  switch (format) {
    case ExportFormat::mp4: {
      const fs::path path = out_dir / (stem + ".mp4");
      write_mp4(video, fps, path);
      return path;
    }
    case ExportFormat::gif: {
      const fs::path path = out_dir / (stem + ".gif");
      write_gif(video, fps, path);
      return path;
    }
    case ExportFormat::png: {
      const fs::path path = out_dir / stem;
      (void)write_png_frames(video, path);
      return path;
    }
  }
  throw RuntimeError("export_video: unknown format");
}

}  // namespace omnidp::video_export
