#pragma once
// Move-only RAII owners of FFmpeg objects (one type per kind: output and input format
// contexts, codec context, frame, packet, swscale context) and the one place where libav
// results are checked: av::check() turns a negative AVERROR into an IoError that names the
// file and carries the libav call and av_strerror's text.
//
// Internal to the export area (its sources and tests); only built with FFmpeg (OMNIDP_EXPORT).
// Threading: an object is used by one thread at a time; the libav calls used are reentrant.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace omnidp::video_export::av {

// av_strerror's text for `code` ("Invalid argument", "Operation not permitted", ...).
[[nodiscard]] std::string error_text(int code);
// Throws IoError(file, "<call> failed: <error_text(code)>").
[[noreturn]] void fail(int code, std::string_view call, const std::filesystem::path& file);
// Returns `result` when >= 0, else fail(result, call, file).
int check(int result, std::string_view call, const std::filesystem::path& file);

// Owns one T*, released with Free; move-only. Free must accept nullptr.
template <class T, void (*Free)(T*) noexcept>
class Owner {
 public:
  Owner() noexcept = default;
  explicit Owner(T* ptr) noexcept : ptr_(ptr) {}
  ~Owner() { reset(); }
  Owner(Owner&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;

  [[nodiscard]] T* get() const noexcept { return ptr_; }
  T* operator->() const noexcept { return ptr_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  void reset() noexcept {
    if (ptr_ != nullptr) Free(std::exchange(ptr_, nullptr));
  }

 private:
  T* ptr_ = nullptr;
};

void free_output(AVFormatContext* ctx) noexcept;  // avio_closep (if opened), avformat_free_context
void free_input(AVFormatContext* ctx) noexcept;   // avformat_close_input
void free_codec(AVCodecContext* ctx) noexcept;    // avcodec_free_context
void free_frame(AVFrame* frame) noexcept;         // av_frame_free
void free_packet(AVPacket* packet) noexcept;      // av_packet_free
void free_scaler(SwsContext* ctx) noexcept;       // sws_freeContext

using OutputContext = Owner<AVFormatContext, &free_output>;
using InputContext = Owner<AVFormatContext, &free_input>;
using CodecContext = Owner<AVCodecContext, &free_codec>;
using Frame = Owner<AVFrame, &free_frame>;
using Packet = Owner<AVPacket, &free_packet>;
using Scaler = Owner<SwsContext, &free_scaler>;

// A muxer context writing to `url` in container `format` ("mp4", "gif"); errors name `file`.
// The file itself is opened by open_output_file (after the streams are set up).
[[nodiscard]] OutputContext alloc_output(const std::filesystem::path& url, const char* format,
                                         const std::filesystem::path& file);
// avio_open of the context's url (given to alloc_output) unless the muxer needs none; errors
// name `file`.
void open_output_file(const OutputContext& ctx, const std::filesystem::path& file);
// Quiets libav's own logging to errors (once per process; failures reach us as exceptions).
void quiet_libav_log() noexcept;
// avformat_open_input + avformat_find_stream_info.
[[nodiscard]] InputContext open_input(const std::filesystem::path& path);
[[nodiscard]] CodecContext alloc_codec(const AVCodec* codec, const std::filesystem::path& file);
// A frame with its own buffers of the given size and pixel format.
[[nodiscard]] Frame alloc_frame(int width, int height, AVPixelFormat format,
                                const std::filesystem::path& file);
[[nodiscard]] Frame alloc_frame(const std::filesystem::path& file);  // empty (for decoders)
[[nodiscard]] Packet alloc_packet(const std::filesystem::path& file);
// Converts width x height frames from `from` to `to` (same size, bicubic, accurate rounding).
[[nodiscard]] Scaler alloc_scaler(int width, int height, AVPixelFormat from, AVPixelFormat to,
                                  const std::filesystem::path& file);

// The H.264 encoder to use: libx264 when this FFmpeg has it, else the default H.264 encoder
// (e.g. libopenh264); nullptr when there is none.
[[nodiscard]] const AVCodec* find_h264_encoder() noexcept;

}  // namespace omnidp::video_export::av
