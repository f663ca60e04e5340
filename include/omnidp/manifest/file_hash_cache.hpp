#pragma once
// The SHA-256 (and, for images, the probed size) of the manifest's input files, remembered
// across runs so that a restart does not read them again (docs/manifest.md "File hash cache").
//
// An entry is keyed by the file's path and its stat stamp (size, mtime in ns, inode): a file
// whose stamp changed is hashed again. The cache is persisted as a text file (rank 0 keeps it in
// <output.dir>/.omnidp-file-hashes), written atomically (temporary file, then rename); a file
// that does not parse is ignored as a whole. Only the entries looked up since load() are saved,
// so files no longer in the manifest drop out. Not thread-safe (rank 0's scanning thread only).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

namespace omnidp {

// What stat says of a regular file; a file whose stamp changed is hashed again.
struct FileStamp {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

// The stamp of `path` (symlinks followed), or nullopt when it cannot be stat'ed or is not a
// regular file.
[[nodiscard]] std::optional<FileStamp> file_stamp(const std::filesystem::path& path);

class FileHashCache {
 public:
  // Hex SHA-256 of a file's bytes; throws IoError when it cannot be read (sha256_file_hex).
  using Hasher = std::function<std::string(const std::filesystem::path&)>;

  struct Entry {
    std::string sha256;
    int width = 0;  // an image's probed size; 0 when the file was not probed as an image
    int height = 0;
  };

  // `hasher` empty: sha256_file_hex. Tests inject a counting one.
  explicit FileHashCache(Hasher hasher = {});

  // Replaces the entries by those of `file`. A missing file leaves the cache empty and returns
  // false; so does a file that does not parse (a warning is logged naming it).
  bool load(const std::filesystem::path& file);
  // Writes the entries looked up since load() to `file`: `file`.tmp-<pid>, then rename.
  // IoError when it cannot be written.
  void save(const std::filesystem::path& file) const;

  // The entry of `path` if it was recorded with the same stamp (marks it used), else nullptr.
  [[nodiscard]] const Entry* find(const std::string& path, const FileStamp& stamp);
  // SHA-256 of `path`: the cached one when the stamp matches, else hashed now and recorded
  // (keeping a probed size recorded with the same stamp). Throws what the hasher throws.
  [[nodiscard]] std::string hash(const std::string& path, const FileStamp& stamp);
  // Records `entry` for `path` with `stamp` (marks it used).
  void put(const std::string& path, const FileStamp& stamp, Entry entry);

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  // Files hashed (hasher calls) since construction.
  [[nodiscard]] std::size_t files_hashed() const noexcept { return hashed_; }
  // Whether save() would write something that load() did not read (new, changed or dropped
  // entries).
  [[nodiscard]] bool changed() const noexcept;

 private:
  struct Slot {
    FileStamp stamp;
    Entry entry;
    bool used = false;
  };
  Hasher hasher_;
  std::unordered_map<std::string, Slot> entries_;
  std::size_t hashed_ = 0;
  std::size_t loaded_ = 0;  // entries read by load()
  std::size_t added_ = 0;   // put() of a new path or a new stamp since load()
  std::size_t used_ = 0;    // entries marked used since load()
};

// Where rank 0 keeps the cache of a job: <output_dir>/.omnidp-file-hashes.
[[nodiscard]] std::filesystem::path file_hash_cache_path(const std::filesystem::path& output_dir);

}  // namespace omnidp
