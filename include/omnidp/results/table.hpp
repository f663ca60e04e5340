#pragma once
// The on-disk layout shared by rank files and results.h5 (docs/results.md):
// the /requests compound table, /videos/<escaped id> datasets and their attributes, and the
// reversible escaping of ids into HDF5 link names. Internal to the results area.

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/common/video.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::results {

inline constexpr const char* kRankFormat = "omni-dp-rank/1";  // root attribute "format"
inline constexpr const char* kResultsFormat = "omni-dp-results/1";
inline constexpr const char* kRequestsPath = "/requests";
inline constexpr const char* kVideosPath = "/videos";
inline constexpr std::size_t kHashChars = 64;      // hex SHA-256
inline constexpr H5Z_filter_t kLzfFilter = 32000;  // h5py's LZF filter (output.compression lzf)

// Reversible link name for an id: '%' , '/', control bytes, DEL, leading and trailing spaces
// and every '.' of an all-dots id become %XX (uppercase hex); everything else (UTF-8 too) is
// kept. unescape_link_name(escape_link_name(id)) == id for every non-empty id.
[[nodiscard]] std::string escape_link_name(std::string_view id);
// Throws RuntimeError on a malformed escape.
[[nodiscard]] std::string unescape_link_name(std::string_view name);
// "/videos/<escaped id>"
[[nodiscard]] std::string video_path(std::string_view id);

// ---- /requests --------------------------------------------------------------------------------
// Creates an empty extendible (chunked, unlimited) table at `loc`/`name`. `with_numerics` /
// `with_model_tflop` / `with_forwards` (forwards and forwards_computed) false: the layout of
// files written before those columns (tests of reading them).
[[nodiscard]] h5::Dataset create_requests_table(hid_t loc, const std::string& name,
                                                bool with_numerics = true,
                                                bool with_model_tflop = true,
                                                bool with_forwards = true);
// Appends rows (extends the dataset, writes the new rows; the numerics / model_tflop /
// forwards values are dropped when the table has no such column).
void append_requests(const h5::Dataset& table, std::span<const ResultRecord> rows);
// Every row, in stored order. Video attributes (prompt, seed, fps) are not in the table. A
// table written before the numerics column existed reads with numerics "" (unknown), one
// without model_tflop with model_tflop 0 (not counted), one without forwards and
// forwards_computed with both 0 (not recorded).
[[nodiscard]] std::vector<ResultRecord> read_requests(const h5::Dataset& table);
// The same rows handed to `fn` one by one, read in blocks of 65536: memory stays one block.
void for_each_request(const h5::Dataset& table, const std::function<void(ResultRecord&&)>& fn);
// Whether the table has the numerics column (files of omni-dp 0.1.0 and later).
[[nodiscard]] bool has_numerics_column(const h5::Dataset& table);
// Whether the table has the model_tflop column (docs/results.md).
[[nodiscard]] bool has_model_tflop_column(const h5::Dataset& table);
// Whether the table has the forwards and forwards_computed columns (docs/results.md).
[[nodiscard]] bool has_forwards_columns(const h5::Dataset& table);

// ---- /videos/<id> -----------------------------------------------------------------------------
struct VideoStorage {
  int gzip_level = 0;  // 1..9: deflate
  bool lzf = false;    // LZF filter (id 32000)
};
// Creates /videos/<escaped id> (uint8 [F,H,W,3], chunked by frame) under the file `file`, writes
// the bytes and the attributes id, prompt, seed, fps, input_key, video_sha256, and closes the
// dataset checked (its chunks reach the file there): returns only when every call succeeded.
void write_video(hid_t file, const ResultRecord& record, const Video& video,
                 const VideoStorage& storage);
// Throws (Hdf5Error, RuntimeError naming the dataset) unless the video of `record` can be read
// back: the dataset opens, is uint8 [frames, height, width, 3] as the row says, every chunk is
// allocated, the last chunk lies inside the file, and the last row of pixels of the last frame
// reads. Cost: one open and one small read (not the whole video: docs/results.md, "Resume").
void check_stored_video(hid_t file, const ResultRecord& record);
[[nodiscard]] Video read_video(hid_t file, std::string_view id);
// SHA-256 of the stored bytes, read frame by frame (the video is never whole in memory).
[[nodiscard]] std::string hash_stored_video(hid_t file, std::string_view id);

// A stored video read one frame at a time. Throws Hdf5Error (no such dataset) or RuntimeError
// (not [F,H,W,3]). Keeps the dataset open; must not outlive the file handle it was opened from.
class StoredFrames {
 public:
  StoredFrames(hid_t file, std::string_view id);
  [[nodiscard]] int frames() const noexcept { return frames_; }
  [[nodiscard]] int height() const noexcept { return height_; }
  [[nodiscard]] int width() const noexcept { return width_; }
  [[nodiscard]] std::size_t frame_bytes() const noexcept {
    return static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_) * 3U;
  }
  // Frame `f` (0 <= f < frames()) into `out` (resized to frame_bytes()).
  void read(int f, std::vector<std::uint8_t>& out) const;

 private:
  std::string path_;
  h5::Dataset dataset_;
  int frames_ = 0;
  int height_ = 0;
  int width_ = 0;
};

struct VideoAttributes {
  std::string id;
  std::string prompt;
  std::uint64_t seed = 0;
  int fps = 0;
  std::string input_key;
  std::string video_sha256;
};
[[nodiscard]] VideoAttributes read_video_attributes(hid_t file, std::string_view id);

}  // namespace omnidp::results
