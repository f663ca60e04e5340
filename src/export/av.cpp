#include "omnidp/export/av.hpp"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <array>
#include <mutex>

#include "omnidp/common/error.hpp"

namespace omnidp::video_export::av {

std::string error_text(int code) {
  std::array<char, AV_ERROR_MAX_STRING_SIZE> buf{};
  if (av_strerror(code, buf.data(), buf.size()) < 0) return fmt::format("libav error {}", code);
  return buf.data();
}

void fail(int code, std::string_view call, const std::filesystem::path& file) {
  throw IoError(file.string(), std::string(call) + " failed: " + error_text(code));
}

int check(int result, std::string_view call, const std::filesystem::path& file) {
  if (result < 0) fail(result, call, file);
  return result;
}

namespace {
template <class T>
T* require(T* ptr, std::string_view call, const std::filesystem::path& file) {
  if (ptr == nullptr) fail(AVERROR(ENOMEM), call, file);
  return ptr;
}
}  // namespace

void free_output(AVFormatContext* ctx) noexcept {
  if (ctx == nullptr) return;
  if (ctx->oformat != nullptr && (ctx->oformat->flags & AVFMT_NOFILE) == 0) avio_closep(&ctx->pb);
  avformat_free_context(ctx);
}
void free_input(AVFormatContext* ctx) noexcept { avformat_close_input(&ctx); }
void free_codec(AVCodecContext* ctx) noexcept { avcodec_free_context(&ctx); }
void free_frame(AVFrame* frame) noexcept { av_frame_free(&frame); }
void free_packet(AVPacket* packet) noexcept { av_packet_free(&packet); }
void free_scaler(SwsContext* ctx) noexcept { sws_freeContext(ctx); }

OutputContext alloc_output(const std::filesystem::path& url, const char* format,
                           const std::filesystem::path& file) {
  AVFormatContext* raw = nullptr;
  check(avformat_alloc_output_context2(&raw, nullptr, format, url.c_str()),
        std::string("avformat_alloc_output_context2(") + format + ")", file);
  return OutputContext(require(raw, "avformat_alloc_output_context2", file));
}

void open_output_file(const OutputContext& ctx, const std::filesystem::path& file) {
  if ((ctx->oformat->flags & AVFMT_NOFILE) != 0) return;
  check(avio_open(&ctx->pb, ctx->url, AVIO_FLAG_WRITE), "avio_open", file);
}

void quiet_libav_log() noexcept {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_ERROR); });
}

InputContext open_input(const std::filesystem::path& path) {
  AVFormatContext* raw = nullptr;
  // On failure avformat_open_input frees the context and sets raw to nullptr.
  check(avformat_open_input(&raw, path.c_str(), nullptr, nullptr), "avformat_open_input", path);
  InputContext ctx(raw);
  check(avformat_find_stream_info(ctx.get(), nullptr), "avformat_find_stream_info", path);
  return ctx;
}

CodecContext alloc_codec(const AVCodec* codec, const std::filesystem::path& file) {
  return CodecContext(require(avcodec_alloc_context3(codec), "avcodec_alloc_context3", file));
}

Frame alloc_frame(int width, int height, AVPixelFormat format, const std::filesystem::path& file) {
  Frame frame = alloc_frame(file);
  frame->width = width;
  frame->height = height;
  frame->format = format;
  check(av_frame_get_buffer(frame.get(), 0), "av_frame_get_buffer", file);
  return frame;
}

Frame alloc_frame(const std::filesystem::path& file) {
  return Frame(require(av_frame_alloc(), "av_frame_alloc", file));
}

Packet alloc_packet(const std::filesystem::path& file) {
  return Packet(require(av_packet_alloc(), "av_packet_alloc", file));
}

Scaler alloc_scaler(int width, int height, AVPixelFormat from, AVPixelFormat to,
                    const std::filesystem::path& file) {
  SwsContext* raw = sws_getContext(width, height, from, width, height, to,
                                   SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr, nullptr);
  if (raw == nullptr) {
    fail(AVERROR(EINVAL),
         std::string("sws_getContext(") + av_get_pix_fmt_name(from) + " -> " +
             av_get_pix_fmt_name(to) + ")",
         file);
  }
  return Scaler(raw);
}

const AVCodec* find_h264_encoder() noexcept {
  if (const AVCodec* x264 = avcodec_find_encoder_by_name("libx264")) return x264;
  return avcodec_find_encoder(AV_CODEC_ID_H264);
}

}  // namespace omnidp::video_export::av
