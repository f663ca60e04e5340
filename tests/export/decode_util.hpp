#pragma once
// Decoding an exported MP4/GIF back with libavformat/libavcodec (tests of the export area).
// Only compiled in builds with FFmpeg (OMNIDP_TEST_HAVE_FFMPEG).

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "omnidp/common/video.hpp"
#include "omnidp/export/av.hpp"

namespace omnidp::video_export::testing {

struct Decoded {
  std::string container;  // demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;      // e.g. "h264"
  std::string pixel_format;
  int width = 0;
  int height = 0;
  AVRational frame_rate{0, 1};    // the stream's average frame rate
  std::vector<std::int64_t> pts;  // of each decoded frame, in stream time base
  AVRational time_base{0, 1};
  Video rgb;  // every decoded frame converted to RGB24
};

inline Decoded decode_file(const std::filesystem::path& path) {
  Decoded d;
  av::InputContext in = av::open_input(path);
  const int index = av::check(av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0),
                              "av_find_best_stream", path);
  AVStream* stream = in->streams[index];
  d.container = in->iformat->name;
  d.frame_rate = stream->avg_frame_rate;
  d.time_base = stream->time_base;
  const AVCodec* codec = avcodec_find_decoder(stream->codecpar->codec_id);
  if (codec == nullptr) av::fail(AVERROR_DECODER_NOT_FOUND, "avcodec_find_decoder", path);
  d.codec = codec->name;
  av::CodecContext ctx = av::alloc_codec(codec, path);
  av::check(avcodec_parameters_to_context(ctx.get(), stream->codecpar),
            "avcodec_parameters_to_context", path);
  ctx->thread_count = 1;
  av::check(avcodec_open2(ctx.get(), codec, nullptr), "avcodec_open2", path);
  d.width = ctx->width;
  d.height = ctx->height;
  d.rgb.width = d.width;
  d.rgb.height = d.height;
  av::Packet packet = av::alloc_packet(path);
  av::Frame frame = av::alloc_frame(path);
  av::Frame rgb = av::alloc_frame(d.width, d.height, AV_PIX_FMT_RGB24, path);
  av::Scaler scaler;
  const auto receive_all = [&] {
    for (;;) {
      const int rc = avcodec_receive_frame(ctx.get(), frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      av::check(rc, "avcodec_receive_frame", path);
      const auto format = static_cast<AVPixelFormat>(frame->format);
      d.pixel_format = av_get_pix_fmt_name(format);
      if (!scaler) scaler = av::alloc_scaler(d.width, d.height, format, AV_PIX_FMT_RGB24, path);
      av::check(sws_scale(scaler.get(), frame->data, frame->linesize, 0, d.height, rgb->data,
                          rgb->linesize),
                "sws_scale", path);
      for (int y = 0; y < d.height; ++y) {
        const std::uint8_t* row = rgb->data[0] + static_cast<std::ptrdiff_t>(y) * rgb->linesize[0];
        d.rgb.data.insert(d.rgb.data.end(), row, row + static_cast<std::ptrdiff_t>(d.width) * 3);
      }
      d.pts.push_back(frame->best_effort_timestamp);
      ++d.rgb.frames;
      av_frame_unref(frame.get());
    }
  };
  while (av_read_frame(in.get(), packet.get()) >= 0) {
    if (packet->stream_index == index) {
      av::check(avcodec_send_packet(ctx.get(), packet.get()), "avcodec_send_packet", path);
      receive_all();
    }
    av_packet_unref(packet.get());
  }
  av::check(avcodec_send_packet(ctx.get(), nullptr), "avcodec_send_packet(flush)", path);
  receive_all();
  return d;
}

// A smooth video (compresses well, so decoded pixels stay close): frame f is a gradient
// shifted by f.
inline Video smooth_video(int frames, int height, int width) {
  Video v{frames, height, width, {}};
  v.data.reserve(v.byte_size());
  for (int f = 0; f < frames; ++f) {
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        v.data.push_back(static_cast<std::uint8_t>(40 + 4 * x + 20 * f));
        v.data.push_back(static_cast<std::uint8_t>(60 + 3 * y));
        v.data.push_back(static_cast<std::uint8_t>(200 - 10 * f));
      }
    }
  }
  return v;
}

// Mean absolute difference of frame `f` of `a` and `b` over a's width x height (b may be larger).
inline double mean_abs_diff(const Video& a, const Video& b, int f) {
  double sum = 0.0;
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const auto ia = ((static_cast<std::size_t>(f) * a.height + y) * a.width + x) * 3 + c;
        const auto ib = ((static_cast<std::size_t>(f) * b.height + y) * b.width + x) * 3 + c;
        sum += std::abs(static_cast<int>(a.data[ia]) - static_cast<int>(b.data[ib]));
      }
    }
  }
  return sum / (static_cast<double>(a.height) * a.width * 3.0);
}

}  // namespace omnidp::video_export::testing
