#include "omnidp/manifest/chunked_lines.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"

namespace omnidp {
namespace fs = std::filesystem;

namespace {
constexpr std::size_t kChunkBytes = 64 * 1024;
}  // namespace

ChunkedLines::ChunkedLines(const fs::path& file, std::size_t max_line_bytes, std::uint64_t offset,
                           std::size_t line)
    : file_(file.string()),
      max_line_bytes_(max_line_bytes),
      chunk_(kChunkBytes),
      chunk_offset_(offset),
      line_(line) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw ManifestError(file_, 0, "", "is a folder, not a manifest file");
  // /dev/null read as an empty manifest, a FIFO would block (issue 39, class 13): a manifest
  // is a regular file (it is read twice when large, from remembered offsets).
  if (fs::exists(file, ec)) {
    if (const std::string problem = regular_file_problem(file); !problem.empty()) {
      throw ManifestError(file_, 0, "", "cannot read the manifest: it " + problem);
    }
  }
  in_.open(file, std::ios::binary);
  if (!in_) {  // a usage error (exit 2), like any other defect of the manifest itself
    throw ManifestError(file_, 0, "",
                        std::string("cannot open the manifest: ") + std::strerror(errno));
  }
  if (offset > 0) {
    in_.seekg(static_cast<std::streamoff>(offset));
    if (!in_) throw IoError(file_, fmt::format("cannot seek to byte {}", offset));
  }
  peak_buffer_bytes_ = chunk_.capacity();
}

bool ChunkedLines::fill() {
  chunk_offset_ += chunk_end_;
  in_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
  if (in_.bad()) throw IoError(file_, fmt::format("read failed after line {}", line_));
  chunk_pos_ = 0;
  chunk_end_ = static_cast<std::size_t>(in_.gcount());
  return chunk_end_ > 0;
}

bool ChunkedLines::next(std::string& text, bool& too_long) {
  text.clear();
  too_long = false;
  bool any = false;
  line_offset_ = chunk_offset_ + chunk_pos_;
  for (;;) {
    if (chunk_pos_ == chunk_end_ && !fill()) {
      if (!any) return false;
      break;  // a last line without a line end
    }
    if (!any) line_offset_ = chunk_offset_ + chunk_pos_;
    any = true;
    const char* begin = chunk_.data() + chunk_pos_;
    const std::size_t available = chunk_end_ - chunk_pos_;
    const void* newline = std::memchr(begin, '\n', available);
    const std::size_t n = newline != nullptr
                              ? static_cast<std::size_t>(static_cast<const char*>(newline) - begin)
                              : available;
    if (!too_long) {
      if (text.size() + n > max_line_bytes_ + 1) {  // + 1: room for a CR
        too_long = true;
        text.clear();
      } else {
        text.append(begin, n);
        peak_buffer_bytes_ = std::max(peak_buffer_bytes_, chunk_.capacity() + text.capacity());
      }
    }
    chunk_pos_ += n;
    if (newline != nullptr) {
      ++chunk_pos_;
      break;
    }
  }
  ++line_;
  if (!too_long && !text.empty() && text.back() == '\r') text.pop_back();
  if (text.size() > max_line_bytes_) too_long = true;
  if (line_ == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 BOM
  return true;
}

}  // namespace omnidp
