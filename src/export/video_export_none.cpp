// The encoders of a build without FFmpeg (OMNIDP_EXPORT off or libav*-dev not found).
#include "omnidp/common/error.hpp"
#include "omnidp/export/video_export.hpp"

namespace omnidp::video_export {

bool ffmpeg_available() noexcept { return false; }

void write_mp4(const Video& /*video*/, int /*fps*/, const std::filesystem::path& /*path*/,
               const Mp4Options& /*options*/) {
  throw UsageError(ffmpeg_missing_message("omni-dp"));
}

void write_gif(const Video& /*video*/, int /*fps*/, const std::filesystem::path& /*path*/) {
  throw UsageError(ffmpeg_missing_message("omni-dp"));
}

}  // namespace omnidp::video_export
