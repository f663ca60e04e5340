#include "omnidp/results/rank_writer.hpp"

#include "omnidp/results/file_locking.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/live_table.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::results {
namespace {

constexpr int kMaxSegments = 100000;
// Room for what a write adds besides the video's bytes: its object header and attributes, a
// new /requests chunk (1024 rows), global heap collections, B-tree nodes.
constexpr std::uint64_t kMetadataReserve = 512 * 1024;

// The bytes reserved before a write: the video (plus 1/16 for a compressor's worst case) and
// the metadata.
std::uint64_t reserve_bytes(const Video* video) {
  const std::uint64_t data = video != nullptr ? video->byte_size() : 0;
  return data + data / 16 + kMetadataReserve;
}

bool is_hex_hash(const std::string& s) {
  if (s.size() != kHashChars) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool filter_can_encode(H5Z_filter_t filter) {
  if (h5::call("H5Zfilter_avail", "output.compression", [&] { return H5Zfilter_avail(filter); }) <=
      0) {
    return false;
  }
  unsigned flags = 0;
  h5::call("H5Zget_filter_info", "output.compression",
           [&] { return H5Zget_filter_info(filter, &flags); });
  return (flags & H5Z_FILTER_CONFIG_ENCODE_ENABLED) != 0;
}

std::string compression_label(const OutputConfig& output) {
  switch (output.compression) {
    case CompressionKind::none: return "none";
    case CompressionKind::gzip: return fmt::format("gzip:{}", output.gzip_level);
    case CompressionKind::lzf: return "lzf";
  }
  return "none";
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// output.dir exists as a folder, or can be created: its nearest existing ancestor is a folder
// this process may write in. Creates nothing.
void check_output_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  for (;;) {
    std::error_code ec;
    const auto status = std::filesystem::status(p, ec);
    if (ec == std::errc::too_many_symbolic_link_levels) {  // a link loop (issue 52, class 3)
      throw ConfigError("output.dir", "cannot create the output folder '" + dir + "': '" +
                                          p.string() + "' " + regular_file_problem(p));
    }
    if (std::filesystem::exists(status)) {
      if (!std::filesystem::is_directory(status)) {
        throw ConfigError("output.dir", "cannot create the output folder '" + dir + "': '" +
                                            p.string() + "' is not a folder");
      }
      if (::access(p.c_str(), W_OK | X_OK) != 0) {
        throw ConfigError("output.dir", "cannot create the output folder '" + dir + "': '" +
                                            p.string() + "': " + std::strerror(errno));
      }
      return;
    }
    if (!p.has_relative_path()) return;  // the root: let the creation report it
    p = p.parent_path();
  }
}

void check_filter(const OutputConfig& output) {
  switch (output.compression) {
    case CompressionKind::none: return;
    case CompressionKind::gzip:
      if (output.gzip_level < 1 || output.gzip_level > 9) {
        throw ConfigError("output.compression",
                          fmt::format("gzip level must be 1..9, got {}", output.gzip_level));
      }
      if (!filter_can_encode(H5Z_FILTER_DEFLATE)) {
        throw ConfigError("output.compression",
                          "gzip is not available: this HDF5 library has no deflate encoder");
      }
      return;
    case CompressionKind::lzf:
      if (!filter_can_encode(kLzfFilter)) {
        throw ConfigError("output.compression",
                          "lzf is not available: this HDF5 library has no LZF filter "
                          "(filter id 32000; it ships with h5py, not with HDF5). Install an "
                          "LZF plugin into HDF5_PLUGIN_PATH, or use gzip:1-9 or none");
      }
      return;
  }
}

// Rethrows `e` (being handled: a failed HDF5 call or fsync of `file`, while doing `what`) as a
// DiskFullError when it reports a full disk, else unchanged.
[[noreturn]] void rethrow_write_error(const Error& e, const std::filesystem::path& file,
                                      const std::string& what) {
  const int code = h5::disk_full_errno(e.what());
  if (code == 0) throw;
  std::string cause = e.what();
  const std::string prefix = file.string() + ": ";  // named once, first
  if (cause.rfind(prefix, 0) == 0) cause.erase(0, prefix.size());
  // HDF5's stack runs to tens of entries: the message keeps the one naming the errno, the
  // rank's log all of them.
  if (std::string summary = h5::disk_full_summary(cause); summary != cause) {
    log_error("results: " + file.string() + ": " + what + ": " + cause);
    cause = std::move(summary);
  }
  throw DiskFullError(
      file.string(), fmt::format("({}, errno {}): {}: {}", std::strerror(code), code, what, cause));
}

}  // namespace

void check_output_support(const OutputConfig& output) {
  check_filter(output);
  check_output_dir(output.dir);
  (void)configure_file_locking(output.file_locking, output.dir);
}

std::string rank_file_name(int rank, int segment) {
  if (segment == 0) return fmt::format("rank-{:05}.h5", rank);
  return fmt::format("rank-{:05}.{}.h5", rank, segment);
}

struct RankWriter::Impl {
  std::filesystem::path path;
  RankFileInfo info;
  OutputConfig output;
  VideoStorage storage;
  std::function<void()> fault_hook;
  bool reserve = true;  // reserve each write's space first (set_space_reservation)
  std::size_t rows = 0;
  bool closed = false;
  bool failed = false;  // an HDF5 write or flush failed: the file is left as last flushed
  // The file is declared before its objects, so it is destroyed after them.
  h5::File file;
  h5::Dataset table;
  // The live view's copy of the rows (live_table.hpp); null without one.
  std::unique_ptr<LiveTable> live;

  void check_record(const ResultRecord& r, const Video* video) const;
  void write_attributes(hid_t root, int segment) const;
  void write_header(int segment);  // root attributes, /requests, /videos; flushed
  void open_live_view(int segment);
  void end_live_view();  // deletes the live table: its rows are read from the rank file now
};

void RankWriter::Impl::check_record(const ResultRecord& r, const Video* video) const {
  const std::vector<std::string> where = {path.string(), "request " + r.id};
  if (r.id.empty()) throw RuntimeError("request id is empty", {path.string()});
  // A request whose image could not be read has no input key (manifest/request.hpp): its
  // failed row is recorded with an empty one.
  const bool keyless_failure = r.status == RequestStatus::failed && r.input_key.empty();
  if (!keyless_failure && !is_hex_hash(r.input_key)) {
    throw RuntimeError("input_key is not 64 lowercase hex digits: '" + r.input_key + "'", where);
  }
  if (r.status == RequestStatus::failed) {
    if (video != nullptr) throw RuntimeError("a failed request comes with a video", where);
    if (!r.video_sha256.empty()) throw RuntimeError("a failed request has a video_sha256", where);
    return;
  }
  if (!is_hex_hash(r.video_sha256)) {
    throw RuntimeError("video_sha256 is not 64 lowercase hex digits: '" + r.video_sha256 + "'",
                       where);
  }
  if (video == nullptr) {
    if (output.store_video) throw RuntimeError("ok request without its video", where);
    return;
  }
  video->check();
  if (video->frames != r.frames || video->height != r.height || video->width != r.width) {
    throw RuntimeError(fmt::format("video is {}x{}x{} but the record says {}x{}x{}", video->frames,
                                   video->height, video->width, r.frames, r.height, r.width),
                       where);
  }
  const std::string actual = video_sha256(*video);
  if (actual != r.video_sha256) {
    throw RuntimeError(
        "video_sha256 mismatch: record " + r.video_sha256 + ", video bytes " + actual, where);
  }
}

RankWriter::RankWriter(const std::filesystem::path& dir, const RankFileInfo& info,
                       const OutputConfig& output)
    : impl_(std::make_unique<Impl>()) {
  check_filter(output);
  impl_->info = info;
  impl_->output = output;
  if (output.compression == CompressionKind::gzip) impl_->storage.gzip_level = output.gzip_level;
  impl_->storage.lzf = output.compression == CompressionKind::lzf;

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(dir.string(), "cannot create the output folder: " + ec.message());

  int segment = 0;
  for (; segment < kMaxSegments; ++segment) {
    const auto candidate = dir / rank_file_name(info.rank, segment);
    // Anything under the name takes it, a dangling link or a link loop too (exists() would
    // follow the link, and throw on a loop: issue 52, class 3).
    if (path_taken(candidate)) continue;
    impl_->path = candidate;
    break;
  }
  if (impl_->path.empty()) throw IoError(dir.string(), "no free rank file name");

  try {
    impl_->file = h5::create_file(impl_->path.string());  // exclusive: never overwrites
    impl_->write_header(segment);
  } catch (const Error& e) {
    // Not closed (as after a failed write): closing would flush what the disk refused.
    (void)impl_->table.release();
    (void)impl_->file.release();
    impl_->closed = true;
    rethrow_write_error(e, impl_->path, "creating the rank file");
  }
  log_debug("results: writing " + impl_->path.string());
  impl_->open_live_view(segment);
}

void RankWriter::Impl::open_live_view(int segment) {
  // Where no lock marks a live writer (output.file_locking off: Lustre, NFS, ...) the readers
  // read the rank file itself, and SWMR's write ordering is not assured there either.
  if (!file_locking_enabled()) return;
  // The live tables of this rank's earlier segments outlived a writer that did not close.
  for (int s = 0; s < segment; ++s) {
    std::error_code ignored;
    std::filesystem::remove(live_table_path(path.parent_path() / rank_file_name(info.rank, s)),
                            ignored);
  }
  try {
    live = std::make_unique<LiveTable>(path, [&](hid_t root) { write_attributes(root, segment); });
  } catch (const Error& e) {
    log_warn("results: no live view of " + path.string() + " (" + e.what() +
             "): the companion tools read it once the job has ended");
  }
}

void RankWriter::Impl::end_live_view() {
  if (!live) return;
  try {
    live->remove();
  } catch (const Error& e) {
    log_warn(std::string("results: ") + e.what());
  }
  live.reset();
}

void RankWriter::Impl::write_header(int segment) {
  h5::reserve_space(file, kMetadataReserve, path.string());
  write_attributes(file.id(), segment);
  table = create_requests_table(file.id(), kRequestsPath);
  if (output.store_video) h5::create_group(file.id(), kVideosPath).close(kVideosPath);
  h5::flush_durable(file, path.string());
}

void RankWriter::Impl::write_attributes(hid_t root, int segment) const {
  h5::write_attribute(root, "format", std::string_view(kRankFormat));
  h5::write_attribute(root, "software_version", std::string_view(version()));
  h5::write_attribute(root, "git_revision", std::string_view(git_revision()));
  h5::write_attribute(root, "hdf5_version", std::string_view(H5_VERS_INFO));
  h5::write_attribute(root, "config_yaml", info.config_yaml);
  h5::write_attribute(root, "model", info.model);
  h5::write_attribute(root, "world_size", static_cast<std::int64_t>(info.world_size));
  h5::write_attribute(root, "rank", static_cast<std::int64_t>(info.rank));
  h5::write_attribute(root, "segment", static_cast<std::int64_t>(segment));
  h5::write_attribute(root, "host", info.host);
  h5::write_attribute(root, "device", info.device);
  h5::write_attribute(root, "store_video", static_cast<std::int64_t>(output.store_video ? 1 : 0));
  h5::write_attribute(root, "compression", compression_label(output));
  h5::write_attribute(root, "created", now_seconds());
  h5::write_attribute(root, "state", std::string_view("open"));
}

RankWriter::~RankWriter() {
  if (!impl_ || impl_->closed) return;
  try {
    close();
  } catch (const std::exception& e) {
    try {
      log_error(std::string("results: closing ") + impl_->path.string() + " failed: " + e.what());
    } catch (...) {
    }
  }
}

void RankWriter::write(const ResultRecord& record, const Video* video) {
  if (impl_->closed) throw RuntimeError("write after close", {impl_->path.string()});
  if (impl_->failed) throw RuntimeError("write after a failed write", {impl_->path.string()});
  impl_->check_record(record, video);
  const hid_t root = impl_->file.id();
  const bool with_video =
      record.status == RequestStatus::ok && impl_->output.store_video && video != nullptr;
  if (with_video) {
    if (h5::link_exists(root, video_path(record.id))) {
      throw RuntimeError("this rank file already holds a video for the id",
                         {impl_->path.string(), "request " + record.id});
    }
  }
  try {
    // The space first (a full disk fails here, before HDF5 writes anything: a flush failing
    // halfway could write a superblock claiming space the disk never got); then the video,
    // then its row: a row on disk implies its video was written before it. Every write and
    // close is checked, so nothing counts unless all of it reached the file.
    if (impl_->reserve) {
      h5::reserve_space(impl_->file, reserve_bytes(with_video ? video : nullptr),
                        impl_->path.string());
    }
    if (with_video) write_video(root, record, *video, impl_->storage);
    append_requests(impl_->table, std::span<const ResultRecord>(&record, 1));
    if (impl_->fault_hook) impl_->fault_hook();
    h5::flush_durable(impl_->file, impl_->path.string());
    h5::trim_reserved_space(impl_->file, impl_->path.string());
  } catch (const Hdf5Error& e) {  // the library or the disk failed (not a fault hook's throw)
    impl_->failed = true;
    rethrow_write_error(e, impl_->path, "writing request '" + record.id + "'");
  } catch (const IoError& e) {
    impl_->failed = true;
    rethrow_write_error(e, impl_->path, "writing request '" + record.id + "'");
  }
  ++impl_->rows;
  if (impl_->live) {  // durable above: now the live view shows it
    try {
      impl_->live->append(record);
    } catch (const Error& e) {
      log_warn("results: the live view of " + impl_->path.string() + " stops here: " + e.what());
      impl_->live.reset();
    }
  }
}

void RankWriter::close() {
  if (impl_->closed) return;
  impl_->closed = true;
  if (impl_->failed) {
    impl_->end_live_view();
    // A write failed (a full disk, an I/O error). Closing flushes HDF5's metadata, whose
    // superblock would then claim space the disk never got: HDF5 refuses such a "truncated"
    // file whole, the rows flushed before included. Leave the file as of its last successful
    // flush instead (state "open", like a killed writer's); its earlier rows stay readable.
    (void)impl_->table.release();
    (void)impl_->file.release();
    log_warn("results: " + impl_->path.string() +
             " left as of its last flush, not closed: a write to it failed");
    return;
  }
  try {
    if (impl_->reserve) h5::reserve_space(impl_->file, kMetadataReserve, impl_->path.string());
    h5::write_attribute(impl_->file.id(), "state", std::string_view("closed"));
    impl_->table.close(kRequestsPath);
    h5::flush_durable(impl_->file, impl_->path.string());
    impl_->file.close(impl_->path.string());
    impl_->end_live_view();
  } catch (const Hdf5Error& e) {
    rethrow_write_error(e, impl_->path, "closing the rank file");
  } catch (const IoError& e) {
    rethrow_write_error(e, impl_->path, "closing the rank file");
  }
}

void RankWriter::set_space_reservation(bool on) { impl_->reserve = on; }

void RankWriter::set_fault_hook(std::function<void()> between_write_and_flush) {
  impl_->fault_hook = std::move(between_write_and_flush);
}

const std::filesystem::path& RankWriter::path() const noexcept { return impl_->path; }

std::size_t RankWriter::rows_written() const noexcept { return impl_->rows; }

}  // namespace omnidp::results
