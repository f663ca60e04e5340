// The FFmpeg encoders (MP4 / H.264 and GIF), built when OMNIDP_EXPORT finds libav*.
#include <fmt/format.h>
#include <unistd.h>

extern "C" {
#include <libavutil/opt.h>
}

#include <atomic>
#include <cstring>

#include "omnidp/common/atomic_file.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/export/av.hpp"
#include "omnidp/export/video_export.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;

struct EncodeSpec {
  const char* container = "mp4";
  const AVCodec* codec = nullptr;
  AVPixelFormat pixel_format = AV_PIX_FMT_YUV420P;
  bool even = true;  // pad to even width and height
  const Mp4Options* mp4 = nullptr;
};

void check_input(const Video& video, int fps, const fs::path& path) {
  try {
    video.check();
  } catch (const Error& e) {
    throw InputError(path.string(), std::string("cannot export a malformed video: ") + e.what());
  }
  if (fps < 1) throw InputError(path.string(), fmt::format("cannot export at fps {}", fps));
}

// Copies frame `f` into the RGB24 frame `rgb` (which may be one row/column larger: the last
// row/column is repeated there).
void fill_rgb(const Video& video, int f, AVFrame* rgb) {
  const auto w = static_cast<std::size_t>(video.width);
  const std::uint8_t* src = video.data.data() + static_cast<std::size_t>(f) *
                                                    static_cast<std::size_t>(video.height) * w * 3U;
  for (int y = 0; y < rgb->height; ++y) {
    const std::uint8_t* row = src + static_cast<std::size_t>(std::min(y, video.height - 1)) * w * 3U;
    std::uint8_t* dst = rgb->data[0] + static_cast<std::ptrdiff_t>(y) * rgb->linesize[0];
    std::memcpy(dst, row, w * 3U);
    for (int x = video.width; x < rgb->width; ++x) {
      std::memcpy(dst + static_cast<std::size_t>(x) * 3U, row + (w - 1U) * 3U, 3U);
    }
  }
}

// Sends `frame` (nullptr: flush) and writes every packet the encoder has ready.
void drain(AVCodecContext* codec, AVFrame* frame, AVFormatContext* out, AVStream* stream,
           AVPacket* packet, const fs::path& path) {
  av::check(avcodec_send_frame(codec, frame), "avcodec_send_frame", path);
  for (;;) {
    const int rc = avcodec_receive_packet(codec, packet);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
    av::check(rc, "avcodec_receive_packet", path);
    av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
    packet->stream_index = stream->index;
    av::check(av_interleaved_write_frame(out, packet), "av_interleaved_write_frame", path);
  }
}

void encode(const Video& video, int fps, const fs::path& path, const fs::path& tmp,
            const EncodeSpec& spec) {
  const int width = spec.even ? video.width + (video.width % 2) : video.width;
  const int height = spec.even ? video.height + (video.height % 2) : video.height;

  av::quiet_libav_log();
  av::OutputContext out = av::alloc_output(tmp, spec.container, path);
  AVStream* stream = avformat_new_stream(out.get(), nullptr);
  if (stream == nullptr) av::fail(AVERROR(ENOMEM), "avformat_new_stream", path);
  av::CodecContext codec = av::alloc_codec(spec.codec, path);
  codec->width = width;
  codec->height = height;
  codec->pix_fmt = spec.pixel_format;
  codec->time_base = AVRational{1, fps};
  codec->framerate = AVRational{fps, 1};
  codec->sample_aspect_ratio = AVRational{1, 1};
  if (spec.pixel_format == AV_PIX_FMT_YUV420P) {
    // What swscale's RGB -> YUV conversion produces: BT.601 matrix, limited range.
    codec->colorspace = AVCOL_SPC_SMPTE170M;
    codec->color_range = AVCOL_RANGE_MPEG;
  }
  if ((out->oformat->flags & AVFMT_GLOBALHEADER) != 0) {
    codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  }
  if (spec.mp4 != nullptr) {
    codec->thread_count = spec.mp4->threads;
    if (std::strcmp(spec.codec->name, "libx264") == 0) {
      av::check(av_opt_set(codec->priv_data, "preset", spec.mp4->preset.c_str(), 0),
                "av_opt_set(preset=" + spec.mp4->preset + ")", path);
      av::check(av_opt_set_int(codec->priv_data, "crf", spec.mp4->crf, 0), "av_opt_set(crf)", path);
    } else {
      // Other H.264 encoders: a generous bitrate for the frame size.
      codec->bit_rate = std::max<std::int64_t>(std::int64_t{width} * height * fps / 4, 500'000);
    }
  }
  av::check(avcodec_open2(codec.get(), spec.codec, nullptr),
            std::string("avcodec_open2(") + spec.codec->name + ")", path);
  av::check(avcodec_parameters_from_context(stream->codecpar, codec.get()),
            "avcodec_parameters_from_context", path);
  stream->time_base = codec->time_base;
  stream->avg_frame_rate = AVRational{fps, 1};

  av::open_output_file(out, path);
  AVDictionary* options = nullptr;
  if (spec.mp4 != nullptr && spec.mp4->faststart)
    av_dict_set(&options, "movflags", "+faststart", 0);
  const int header = avformat_write_header(out.get(), &options);
  av_dict_free(&options);
  av::check(header, "avformat_write_header", path);

  av::Frame rgb = av::alloc_frame(width, height, AV_PIX_FMT_RGB24, path);
  av::Frame frame = av::alloc_frame(width, height, spec.pixel_format, path);
  av::Scaler scaler = av::alloc_scaler(width, height, AV_PIX_FMT_RGB24, spec.pixel_format, path);
  av::Packet packet = av::alloc_packet(path);
  for (int f = 0; f < video.frames; ++f) {
    fill_rgb(video, f, rgb.get());
    av::check(av_frame_make_writable(frame.get()), "av_frame_make_writable", path);
    av::check(
        sws_scale(scaler.get(), rgb->data, rgb->linesize, 0, height, frame->data, frame->linesize),
        "sws_scale", path);
    frame->pts = f;
    drain(codec.get(), frame.get(), out.get(), stream, packet.get(), path);
  }
  drain(codec.get(), nullptr, out.get(), stream, packet.get(), path);
  av::check(av_write_trailer(out.get()), "av_write_trailer", path);
  if ((out->oformat->flags & AVFMT_NOFILE) == 0)
    av::check(avio_closep(&out->pb), "avio_closep", path);
}

// Encodes into a temporary beside the file `path` names (replacement_target: a regular file or
// a new path) and renames it over that file; removes the temporary on error.
void encode_atomically(const Video& video, int fps, const fs::path& path, const EncodeSpec& spec) {
  check_input(video, fps, path);
  const fs::path target = replacement_target(path, "the video");
  const fs::path tmp = temporary_beside(target);
  create_temporary(tmp, path, "the video");  // an unwritable folder: errno's reason, `path`
  try {
    encode(video, fps, path, tmp, spec);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  rename_into_place(tmp, target, "the video");
}

}  // namespace

bool ffmpeg_available() noexcept { return true; }

void write_mp4(const Video& video, int fps, const fs::path& path, const Mp4Options& options) {
  EncodeSpec spec;
  spec.container = "mp4";
  spec.codec = av::find_h264_encoder();
  if (spec.codec == nullptr) {
    throw IoError(path.string(), "this FFmpeg has no H.264 encoder (install libx264 support)");
  }
  spec.pixel_format = AV_PIX_FMT_YUV420P;
  spec.even = true;
  spec.mp4 = &options;
  encode_atomically(video, fps, path, spec);
}

void write_gif(const Video& video, int fps, const fs::path& path) {
  EncodeSpec spec;
  spec.container = "gif";
  spec.codec = avcodec_find_encoder(AV_CODEC_ID_GIF);
  if (spec.codec == nullptr) throw IoError(path.string(), "this FFmpeg has no GIF encoder");
  spec.pixel_format = AV_PIX_FMT_RGB8;
  spec.even = false;
  encode_atomically(video, fps, path, spec);
}

}  // namespace omnidp::video_export
