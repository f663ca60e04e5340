#include "omnidp/results/table.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp::results {
namespace {

constexpr hsize_t kTableChunkRows = 1024;
constexpr hsize_t kReadBlockRows = 65536;

// One /requests row in memory. Variable-length strings are char* (HDF5 allocates them on read).
struct RowBuffer {
  char* id;
  char input_key[kHashChars];
  char video_sha256[kHashChars];
  std::int8_t status;
  char* error;
  std::int32_t rank;
  std::int32_t replica;
  char* host;
  char* device;
  double start_time;
  double end_time;
  double seconds;
  std::int32_t frames;
  std::int32_t height;
  std::int32_t width;
  std::int32_t steps;
  std::int32_t attempt;
  char* numerics;      // files written before it lack it (read as "")
  double model_tflop;  // files written before it lack it (read as 0)
  // The last two columns: files written before them lack them (read as 0, not recorded).
  std::int32_t forwards;
  std::int32_t forwards_computed;
};

h5::Datatype status_type() {
  h5::Datatype type(
      h5::call("H5Tenum_create", "status type", [] { return H5Tenum_create(H5T_NATIVE_INT8); }));
  const std::int8_t ok = 0;
  const std::int8_t failed = 1;
  h5::call("H5Tenum_insert", "status type", [&] { return H5Tenum_insert(type.id(), "ok", &ok); });
  h5::call("H5Tenum_insert", "status type",
           [&] { return H5Tenum_insert(type.id(), "failed", &failed); });
  return type;
}

void copy_hash(char (&dest)[kHashChars], const std::string& value, const char* field,
               const std::string& id) {
  if (value.size() > kHashChars) {
    throw RuntimeError(std::string(field) + " longer than 64 characters", {"request " + id});
  }
  std::memset(dest, 0, kHashChars);
  std::memcpy(dest, value.data(), value.size());
}

std::string hash_string(const char (&src)[kHashChars]) {
  const auto* end = std::find(src, src + kHashChars, '\0');
  return std::string(src, end);
}

std::string text(const char* p) { return p != nullptr ? std::string(p) : std::string(); }

// One column of /requests: its name, its RowBuffer member and the ResultRecord member it holds.
template <class B, class R>
struct Column {
  const char* name;
  B RowBuffer::*buffer;
  R ResultRecord::*record;
};

// The columns of /requests, in file order: the one list that drives the HDF5 compound type and
// both copies between a ResultRecord and a row (numerics, model_tflop, forwards and
// forwards_computed, the last four, are missing in files written before them).
constexpr auto kColumns = std::make_tuple(
    Column<char*, std::string>{"id", &RowBuffer::id, &ResultRecord::id},
    Column<char[kHashChars], std::string>{"input_key", &RowBuffer::input_key,
                                          &ResultRecord::input_key},
    Column<char[kHashChars], std::string>{"video_sha256", &RowBuffer::video_sha256,
                                          &ResultRecord::video_sha256},
    Column<std::int8_t, RequestStatus>{"status", &RowBuffer::status, &ResultRecord::status},
    Column<char*, std::string>{"error", &RowBuffer::error, &ResultRecord::error},
    Column<std::int32_t, int>{"rank", &RowBuffer::rank, &ResultRecord::rank},
    Column<std::int32_t, int>{"replica", &RowBuffer::replica, &ResultRecord::replica},
    Column<char*, std::string>{"host", &RowBuffer::host, &ResultRecord::host},
    Column<char*, std::string>{"device", &RowBuffer::device, &ResultRecord::device},
    Column<double, double>{"start_time", &RowBuffer::start_time, &ResultRecord::start_time},
    Column<double, double>{"end_time", &RowBuffer::end_time, &ResultRecord::end_time},
    Column<double, double>{"seconds", &RowBuffer::seconds, &ResultRecord::seconds},
    Column<std::int32_t, int>{"frames", &RowBuffer::frames, &ResultRecord::frames},
    Column<std::int32_t, int>{"height", &RowBuffer::height, &ResultRecord::height},
    Column<std::int32_t, int>{"width", &RowBuffer::width, &ResultRecord::width},
    Column<std::int32_t, int>{"steps", &RowBuffer::steps, &ResultRecord::steps},
    Column<std::int32_t, int>{"attempt", &RowBuffer::attempt, &ResultRecord::attempt},
    Column<char*, std::string>{"numerics", &RowBuffer::numerics, &ResultRecord::numerics},
    Column<double, double>{"model_tflop", &RowBuffer::model_tflop, &ResultRecord::model_tflop},
    Column<std::int32_t, int>{"forwards", &RowBuffer::forwards, &ResultRecord::forwards},
    Column<std::int32_t, int>{"forwards_computed", &RowBuffer::forwards_computed,
                              &ResultRecord::forwards_computed});

// The columns files written by earlier versions may lack (docs/results.md).
struct OptionalColumns {
  bool numerics = true;
  bool model_tflop = true;
  bool forwards = true;
  bool forwards_computed = true;
  [[nodiscard]] bool has(const char* name) const {
    if (std::strcmp(name, "numerics") == 0) return numerics;
    if (std::strcmp(name, "model_tflop") == 0) return model_tflop;
    if (std::strcmp(name, "forwards") == 0) return forwards;
    if (std::strcmp(name, "forwards_computed") == 0) return forwards_computed;
    return true;
  }
};

bool has_member(const h5::Dataset& table, const char* name) {
  const h5::Datatype stored(
      h5::call("H5Dget_type", kRequestsPath, [&] { return H5Dget_type(table.id()); }));
  h5::silence_errors();
  const bool found = H5Tget_member_index(stored.id(), name) >= 0;
  if (!found) H5Eclear2(H5E_DEFAULT);  // "member not found" is the answer, not an error
  return found;
}

OptionalColumns columns_of(const h5::Dataset& table) {
  return {has_member(table, "numerics"), has_member(table, "model_tflop"),
          has_member(table, "forwards"), has_member(table, "forwards_computed")};
}

template <class F>
void for_each_column(F&& f) {
  std::apply([&f](const auto&... column) { (f(column), ...); }, kColumns);
}

// The HDF5 memory type of each kind of column.
struct ColumnTypes {
  h5::Datatype vstr = h5::vlen_string_type();
  h5::Datatype hash = h5::fixed_string_type(kHashChars);
  h5::Datatype status = status_type();
  hid_t of(char* RowBuffer::*) const { return vstr.id(); }
  hid_t of(char (RowBuffer::*)[kHashChars]) const { return hash.id(); }
  hid_t of(std::int8_t RowBuffer::*) const { return status.id(); }
  hid_t of(std::int32_t RowBuffer::*) const { return H5T_NATIVE_INT32; }
  hid_t of(double RowBuffer::*) const { return H5T_NATIVE_DOUBLE; }
};

template <class B>
std::size_t offset_of(B RowBuffer::*member) {
  static const RowBuffer probe{};
  return static_cast<std::size_t>(reinterpret_cast<const char*>(&(probe.*member)) -
                                  reinterpret_cast<const char*>(&probe));
}

// The columns of `columns` (the optional ones only where present).
h5::Datatype row_memory_type(const OptionalColumns& columns = {}) {
  h5::Datatype type(h5::call("H5Tcreate", "requests type",
                             [] { return H5Tcreate(H5T_COMPOUND, sizeof(RowBuffer)); }));
  const ColumnTypes types;
  for_each_column([&](const auto& column) {
    if (!columns.has(column.name)) return;
    const std::size_t offset = offset_of(column.buffer);
    const hid_t member = types.of(column.buffer);
    h5::call("H5Tinsert", column.name,
             [&] { return H5Tinsert(type.id(), column.name, offset, member); });
  });
  return type;
}

// The stored (packed) version of the memory type.
h5::Datatype row_file_type(const OptionalColumns& columns) {
  const h5::Datatype memory = row_memory_type(columns);
  h5::Datatype type(h5::call("H5Tcopy", "requests type", [&] { return H5Tcopy(memory.id()); }));
  h5::call("H5Tpack", "requests type", [&] { return H5Tpack(type.id()); });
  return type;
}

// A record's value into its row (HDF5 only reads through the string pointers when writing)...
void put(char*& dest, const std::string& value, const char*, const std::string&) {
  dest = const_cast<char*>(value.c_str());
}
void put(char (&dest)[kHashChars], const std::string& value, const char* name, const std::string& id) {
  copy_hash(dest, value, name, id);
}
void put(std::int8_t& dest, RequestStatus value, const char*, const std::string&) {
  dest = value == RequestStatus::ok ? 0 : 1;
}
template <class T>
void put(T& dest, T value, const char*, const std::string&) {
  dest = value;
}
// ... and back.
void get(std::string& dest, char* const& value) { dest = text(value); }
void get(std::string& dest, const char (&value)[kHashChars]) { dest = hash_string(value); }
void get(RequestStatus& dest, std::int8_t value) {
  dest = value == 0 ? RequestStatus::ok : RequestStatus::failed;
}
template <class T>
void get(T& dest, const T& value) {
  dest = value;
}

RowBuffer to_buffer(const ResultRecord& r) {
  RowBuffer b{};
  for_each_column(
      [&](const auto& column) { put(b.*column.buffer, r.*column.record, column.name, r.id); });
  return b;
}

ResultRecord from_buffer(const RowBuffer& b) {
  ResultRecord r;
  for_each_column([&](const auto& column) { get(r.*column.record, b.*column.buffer); });
  return r;
}

bool must_escape(unsigned char c) { return c == '%' || c == '/' || c < 0x20 || c == 0x7F; }

void append_escape(std::string& out, unsigned char c) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
  out += '%';
  out += kHex[c >> 4U];
  out += kHex[c & 0x0FU];
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

h5::Dataspace video_space(const Video& video) {
  const std::array<hsize_t, 4> dims = {static_cast<hsize_t>(video.frames),
                                       static_cast<hsize_t>(video.height),
                                       static_cast<hsize_t>(video.width), 3};
  return h5::Dataspace(h5::call("H5Screate_simple", "video",
                                [&] { return H5Screate_simple(4, dims.data(), nullptr); }));
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------

std::string escape_link_name(std::string_view id) {
  const bool all_dots = !id.empty() && id.find_first_not_of('.') == std::string_view::npos;
  const std::size_t first_kept = id.find_first_not_of(' ');
  const std::size_t last_kept = id.find_last_not_of(' ');
  std::string out;
  out.reserve(id.size());
  for (std::size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    const bool edge_space =
        c == ' ' && (first_kept == std::string_view::npos || i < first_kept || i > last_kept);
    if (must_escape(c) || edge_space || (all_dots && c == '.')) {
      append_escape(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string unescape_link_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      out += name[i];
      continue;
    }
    const bool complete = i + 2 < name.size();
    const int hi = complete ? hex_value(name[i + 1]) : -1;
    const int lo = complete ? hex_value(name[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      throw RuntimeError("malformed escape in link name '" + std::string(name) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string video_path(std::string_view id) {
  return std::string(kVideosPath) + "/" + escape_link_name(id);
}

// ---- /requests --------------------------------------------------------------------------------

h5::Dataset create_requests_table(hid_t loc, const std::string& name, bool with_numerics,
                                  bool with_model_tflop, bool with_forwards) {
  const h5::Datatype type =
      row_file_type({with_numerics, with_model_tflop, with_forwards, with_forwards});
  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  const h5::Dataspace space(
      h5::call("H5Screate_simple", name, [&] { return H5Screate_simple(1, &zero, &unlimited); }));
  const h5::PropList dcpl(h5::call("H5Pcreate", name, [] { return H5Pcreate(H5P_DATASET_CREATE); }));
  h5::call("H5Pset_chunk", name, [&] { return H5Pset_chunk(dcpl.id(), 1, &kTableChunkRows); });
  const h5::PropList lcpl = h5::link_create_utf8(false);
  return h5::Dataset(h5::call("H5Dcreate2", name, [&] {
    return H5Dcreate2(loc, name.c_str(), type.id(), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT);
  }));
}

bool has_numerics_column(const h5::Dataset& table) { return has_member(table, "numerics"); }

bool has_model_tflop_column(const h5::Dataset& table) { return has_member(table, "model_tflop"); }

bool has_forwards_columns(const h5::Dataset& table) {
  return has_member(table, "forwards") && has_member(table, "forwards_computed");
}

void append_requests(const h5::Dataset& table, std::span<const ResultRecord> rows) {
  if (rows.size() > kReadBlockRows) {  // in blocks: the packed rows stay one block in memory
    for (std::size_t at = 0; at < rows.size(); at += kReadBlockRows) {
      append_requests(table,
                      rows.subspan(at, std::min<std::size_t>(kReadBlockRows, rows.size() - at)));
    }
    return;
  }
  if (rows.empty()) return;
  std::vector<RowBuffer> buffers;
  buffers.reserve(rows.size());
  for (const auto& r : rows) buffers.push_back(to_buffer(r));

  const hsize_t old_size = h5::dataset_dims(table).at(0);
  const hsize_t count = rows.size();
  const hsize_t new_size = old_size + count;
  h5::call("H5Dset_extent", kRequestsPath, [&] { return H5Dset_extent(table.id(), &new_size); });
  const h5::Dataspace file_space = h5::dataset_space(table);
  h5::call("H5Sselect_hyperslab", kRequestsPath, [&] {
    return H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, &old_size, nullptr, &count, nullptr);
  });
  const h5::Dataspace memory_space(h5::call("H5Screate_simple", kRequestsPath,
                                            [&] { return H5Screate_simple(1, &count, nullptr); }));
  const h5::Datatype type = row_memory_type(columns_of(table));
  h5::call("H5Dwrite", kRequestsPath, [&] {
    return H5Dwrite(table.id(), type.id(), memory_space.id(), file_space.id(), H5P_DEFAULT,
                    buffers.data());
  });
}

std::vector<ResultRecord> read_requests(const h5::Dataset& table) {
  std::vector<ResultRecord> rows;
  rows.reserve(static_cast<std::size_t>(h5::dataset_dims(table).at(0)));
  for_each_request(table, [&rows](ResultRecord&& r) { rows.push_back(std::move(r)); });
  return rows;
}

void for_each_request(const h5::Dataset& table, const std::function<void(ResultRecord&&)>& fn) {
  const hsize_t total = h5::dataset_dims(table).at(0);
  const h5::Datatype type = row_memory_type(columns_of(table));
  std::vector<RowBuffer> buffers;
  for (hsize_t start = 0; start < total; start += kReadBlockRows) {
    const hsize_t count = std::min(kReadBlockRows, total - start);
    buffers.assign(static_cast<std::size_t>(count), RowBuffer{});
    const h5::Dataspace file_space = h5::dataset_space(table);
    h5::call("H5Sselect_hyperslab", kRequestsPath, [&] {
      return H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    });
    const h5::Dataspace memory_space(h5::call(
        "H5Screate_simple", kRequestsPath, [&] { return H5Screate_simple(1, &count, nullptr); }));
    h5::call("H5Dread", kRequestsPath, [&] {
      return H5Dread(table.id(), type.id(), memory_space.id(), file_space.id(), H5P_DEFAULT,
                     buffers.data());
    });
    try {
      for (const auto& b : buffers) fn(from_buffer(b));
    } catch (...) {
      h5::reclaim_vlen(type.id(), memory_space.id(), buffers.data());
      throw;
    }
    h5::reclaim_vlen(type.id(), memory_space.id(), buffers.data());
  }
}

// ---- /videos ----------------------------------------------------------------------------------

void write_video(hid_t file, const ResultRecord& record, const Video& video,
                 const VideoStorage& storage) {
  video.check();
  const std::string path = video_path(record.id);
  const std::string context = "video " + path;
  const h5::Dataspace space = video_space(video);
  const h5::PropList dcpl(
      h5::call("H5Pcreate", context, [] { return H5Pcreate(H5P_DATASET_CREATE); }));
  const std::array<hsize_t, 4> chunk = {1, static_cast<hsize_t>(video.height),
                                        static_cast<hsize_t>(video.width), 3};
  h5::call("H5Pset_chunk", context, [&] { return H5Pset_chunk(dcpl.id(), 4, chunk.data()); });
  h5::call("H5Pset_fill_time", context,
           [&] { return H5Pset_fill_time(dcpl.id(), H5D_FILL_TIME_NEVER); });
  if (storage.gzip_level > 0) {
    h5::call("H5Pset_deflate", context,
             [&] { return H5Pset_deflate(dcpl.id(), static_cast<unsigned>(storage.gzip_level)); });
  } else if (storage.lzf) {
    h5::call("H5Pset_filter", context,
             [&] { return H5Pset_filter(dcpl.id(), kLzfFilter, H5Z_FLAG_MANDATORY, 0, nullptr); });
  }
  const h5::PropList lcpl = h5::link_create_utf8(true);
  h5::Dataset dataset(h5::call("H5Dcreate2", context, [&] {
    return H5Dcreate2(file, path.c_str(), H5T_STD_U8LE, space.id(), lcpl.id(), dcpl.id(),
                      H5P_DEFAULT);
  }));
  h5::call("H5Dwrite", context, [&] {
    return H5Dwrite(dataset.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, video.data.data());
  });
  h5::write_attribute(dataset.id(), "id", record.id);
  h5::write_attribute(dataset.id(), "prompt", record.prompt);
  h5::write_attribute(dataset.id(), "seed", static_cast<std::uint64_t>(record.seed));
  h5::write_attribute(dataset.id(), "fps", static_cast<std::int64_t>(record.fps));
  h5::write_attribute(dataset.id(), "input_key", record.input_key);
  h5::write_attribute(dataset.id(), "video_sha256", record.video_sha256);
  // The chunks usually sit in HDF5's chunk cache until here: a full disk shows at this close.
  dataset.close(context);
}

void check_stored_video(hid_t file, const ResultRecord& record) {
  const std::string path = video_path(record.id);
  const h5::Dataset dataset = h5::open_dataset(file, path);
  const auto dims = h5::dataset_dims(dataset);
  const std::vector<hsize_t> expected = {static_cast<hsize_t>(record.frames),
                                         static_cast<hsize_t>(record.height),
                                         static_cast<hsize_t>(record.width), 3};
  const auto shape = [](const std::vector<hsize_t>& d) {
    std::string out;
    for (const hsize_t n : d) out += fmt::format("{}{}", (out.empty() ? "" : "x"), n);
    return out;
  };
  if (dims != expected) {
    throw RuntimeError("the stored video is " + shape(dims) + ", its row says " + shape(expected),
                       {path});
  }
  const h5::Datatype type(h5::call("H5Dget_type", path, [&] { return H5Dget_type(dataset.id()); }));
  if (H5Tget_class(type.id()) != H5T_INTEGER || H5Tget_size(type.id()) != 1 ||
      H5Tget_sign(type.id()) != H5T_SGN_NONE) {
    throw RuntimeError("the stored video is not uint8", {path});
  }
  if (std::find(dims.begin(), dims.end(), hsize_t{0}) != dims.end()) return;
  const h5::PropList dcpl(
      h5::call("H5Dget_create_plist", path, [&] { return H5Dget_create_plist(dataset.id()); }));
  const h5::Dataspace space = h5::dataset_space(dataset);
  if (h5::call("H5Pget_layout", path, [&] { return H5Pget_layout(dcpl.id()); }) == H5D_CHUNKED) {
    std::array<hsize_t, 4> chunk = {};
    h5::call("H5Pget_chunk", path, [&] { return H5Pget_chunk(dcpl.id(), 4, chunk.data()); });
    hsize_t chunks = 1;
    for (std::size_t i = 0; i < 4; ++i) {
      chunk[i] = std::max<hsize_t>(chunk[i], 1);
      chunks *= (dims[i] + chunk[i] - 1) / chunk[i];
    }
    hsize_t stored = 0;
    h5::call("H5Dget_num_chunks", path,
             [&] { return H5Dget_num_chunks(dataset.id(), space.id(), &stored); });
    if (stored != chunks) {
      throw RuntimeError(
          fmt::format("only {} of its {} chunks are stored (its data never reached the file)",
                      stored, chunks),
          {path});
    }
    std::array<hsize_t, 4> last = {};  // the first element of the last chunk
    for (std::size_t i = 0; i < 4; ++i) last[i] = (dims[i] - 1) / chunk[i] * chunk[i];
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    h5::call("H5Dget_chunk_info_by_coord", path, [&] {
      return H5Dget_chunk_info_by_coord(dataset.id(), last.data(), &mask, &address, &size);
    });
    // The file the dataset lives in (results.h5 links to the rank files' videos).
    const h5::File own(h5::call("H5Iget_file_id", path, [&] { return H5Iget_file_id(dataset.id()); }));
    hsize_t file_size = 0;
    h5::call("H5Fget_filesize", path, [&] { return H5Fget_filesize(own.id(), &file_size); });
    if (address == HADDR_UNDEF || size == 0 || address + size > file_size) {
      throw RuntimeError("its last chunk lies past the end of the file", {path});
    }
  }
  // The last row of pixels of the last frame.
  const std::array<hsize_t, 4> start = {dims[0] - 1, dims[1] - 1, 0, 0};
  const std::array<hsize_t, 4> count = {1, 1, dims[2], 3};
  h5::call("H5Sselect_hyperslab", path, [&] {
    return H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                               nullptr);
  });
  const h5::Dataspace memory_space(h5::call(
      "H5Screate_simple", path, [&] { return H5Screate_simple(4, count.data(), nullptr); }));
  std::vector<std::uint8_t> row(static_cast<std::size_t>(dims[2]) * 3U);
  h5::call("H5Dread", path, [&] {
    return H5Dread(dataset.id(), H5T_NATIVE_UINT8, memory_space.id(), space.id(), H5P_DEFAULT,
                   row.data());
  });
}

Video read_video(hid_t file, std::string_view id) {
  const std::string path = video_path(id);
  const h5::Dataset dataset = h5::open_dataset(file, path);
  const auto dims = h5::dataset_dims(dataset);
  if (dims.size() != 4 || dims[3] != 3) {
    throw RuntimeError("not a [F,H,W,3] video dataset", {path});
  }
  Video video;
  video.frames = static_cast<int>(dims[0]);
  video.height = static_cast<int>(dims[1]);
  video.width = static_cast<int>(dims[2]);
  video.data.assign(video.byte_size(), 0);
  h5::call("H5Dread", path, [&] {
    return H5Dread(dataset.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, video.data.data());
  });
  return video;
}

StoredFrames::StoredFrames(hid_t file, std::string_view id)
    : path_(video_path(id)), dataset_(h5::open_dataset(file, path_)) {
  const auto dims = h5::dataset_dims(dataset_);
  if (dims.size() != 4 || dims[3] != 3) {
    throw RuntimeError("not a [F,H,W,3] video dataset", {path_});
  }
  frames_ = static_cast<int>(dims[0]);
  height_ = static_cast<int>(dims[1]);
  width_ = static_cast<int>(dims[2]);
}

void StoredFrames::read(int f, std::vector<std::uint8_t>& out) const {
  out.resize(frame_bytes());
  const std::array<hsize_t, 4> count = {1, static_cast<hsize_t>(height_),
                                        static_cast<hsize_t>(width_), 3};
  const h5::Dataspace memory_space(h5::call(
      "H5Screate_simple", path_, [&] { return H5Screate_simple(4, count.data(), nullptr); }));
  const h5::Dataspace file_space = h5::dataset_space(dataset_);
  const std::array<hsize_t, 4> start = {static_cast<hsize_t>(f), 0, 0, 0};
  h5::call("H5Sselect_hyperslab", path_, [&] {
    return H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                               nullptr);
  });
  h5::call("H5Dread", path_, [&] {
    return H5Dread(dataset_.id(), H5T_NATIVE_UINT8, memory_space.id(), file_space.id(), H5P_DEFAULT,
                   out.data());
  });
}

std::string hash_stored_video(hid_t file, std::string_view id) {
  const StoredFrames frames(file, id);
  std::vector<std::uint8_t> frame;
  Sha256 hasher;
  for (int f = 0; f < frames.frames(); ++f) {
    frames.read(f, frame);
    hasher.update(std::span<const std::uint8_t>(frame));
  }
  const Digest digest = hasher.finish();
  return to_hex(digest);
}

VideoAttributes read_video_attributes(hid_t file, std::string_view id) {
  const h5::Dataset dataset = h5::open_dataset(file, video_path(id));
  VideoAttributes a;
  a.id = h5::read_string_attribute(dataset.id(), "id");
  a.prompt = h5::read_string_attribute(dataset.id(), "prompt");
  a.seed = h5::read_uint_attribute(dataset.id(), "seed");
  a.fps = static_cast<int>(h5::read_int_attribute(dataset.id(), "fps"));
  a.input_key = h5::read_string_attribute(dataset.id(), "input_key");
  a.video_sha256 = h5::read_string_attribute(dataset.id(), "video_sha256");
  return a;
}

}  // namespace omnidp::results
