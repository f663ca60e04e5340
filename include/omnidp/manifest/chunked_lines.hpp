#pragma once
// A manifest file read line by line in fixed-size chunks (64 KiB): memory is the chunk and the
// current line whatever the file's size; a line over the limit is skipped to its end without
// being held. Line ends are LF or CRLF; a UTF-8 byte-order mark before the first line is
// dropped. Not thread-safe; move-only.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace omnidp {

class ChunkedLines {
 public:
  // Opens `file` at byte `offset`, which starts line `line` + 1 (0, 0: the file's start).
  // ManifestError (the manifest itself is unusable: exit 2) when it is a folder or cannot be
  // opened; IoError when it cannot seek.
  ChunkedLines(const std::filesystem::path& file, std::size_t max_line_bytes,
               std::uint64_t offset = 0, std::size_t line = 0);

  // The next line without its end into `text`; false at the end of the file. `too_long`: the
  // line was over max_line_bytes (then `text` is empty). IoError when reading fails.
  bool next(std::string& text, bool& too_long);

  [[nodiscard]] std::size_t line() const noexcept { return line_; }  // lines read (1-based last)
  [[nodiscard]] std::uint64_t line_offset() const noexcept { return line_offset_; }  // its start
  // High-water mark of the chunk and line buffers.
  [[nodiscard]] std::size_t peak_buffer_bytes() const noexcept { return peak_buffer_bytes_; }

 private:
  bool fill();

  std::string file_;
  std::size_t max_line_bytes_;
  std::ifstream in_;
  std::vector<char> chunk_;
  std::size_t chunk_pos_ = 0;
  std::size_t chunk_end_ = 0;
  std::uint64_t chunk_offset_ = 0;  // file offset of chunk_[0]
  std::uint64_t line_offset_ = 0;   // file offset of the current line's start
  std::size_t line_ = 0;
  std::size_t peak_buffer_bytes_ = 0;
};

}  // namespace omnidp
