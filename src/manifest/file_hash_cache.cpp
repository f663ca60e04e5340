#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/common/atomic_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "omnidp-file-hashes v1";
constexpr std::string_view kFooter = "end ";
constexpr std::size_t kHashChars = 64;

bool is_hex_hash(std::string_view text) {
  if (text.size() != kHashChars) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The next space-separated field of `rest` as a number; false when it is not one.
template <typename Int>
bool take_number(std::string_view& rest, Int& value) {
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  const auto field = rest.substr(0, space);
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || ptr != field.data() + field.size() || field.empty()) return false;
  rest.remove_prefix(space + 1);
  return true;
}

}  // namespace

std::optional<FileStamp> file_stamp(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  FileStamp s;
  s.size = static_cast<std::uint64_t>(st.st_size);
  s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  s.inode = static_cast<std::uint64_t>(st.st_ino);
  return s;
}

fs::path file_hash_cache_path(const fs::path& output_dir) {
  return output_dir / ".omnidp-file-hashes";
}

FileHashCache::FileHashCache(Hasher hasher) : hasher_(std::move(hasher)) {
  if (!hasher_) hasher_ = [](const fs::path& p) { return sha256_file_hex(p); };
}

bool FileHashCache::load(const fs::path& file) {
  entries_.clear();
  loaded_ = added_ = used_ = 0;
  // The sidecar is read only when it is a regular file: a FIFO under its name would block the
  // job, --validate-only and --dry-run forever (issue 52, class 5).
  if (!path_taken(file)) return false;
  std::string text;
  try {
    text = read_regular_file(file, "the file hash cache");
  } catch (const Error& e) {
    log_warn(std::string(e.what()) +
             "; the file hash cache is ignored (every input file is hashed again)");
    return false;
  }
  std::istringstream in(text);
  std::unordered_map<std::string, Slot> read;
  std::string line;
  std::size_t number = 0;
  bool ended = false;
  const auto reject = [&](const std::string& why) {
    log_warn(
        fmt::format("{}:{}: {}; the file hash cache is ignored (every input file is hashed again)",
                    file.string(), number, why));
    return false;
  };
  while (std::getline(in, line)) {
    ++number;
    if (ended) return reject("text after the end line");
    if (number == 1) {
      if (line != kHeader)
        return reject("not a file hash cache (no \"" + std::string(kHeader) + "\")");
      continue;
    }
    std::string_view rest(line);
    if (rest.starts_with(kFooter)) {
      std::size_t count = 0;
      const auto digits = rest.substr(kFooter.size());
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
      if (ec != std::errc() || ptr != digits.data() + digits.size() || count != read.size()) {
        return reject("the end line does not give the number of entries");
      }
      ended = true;
      continue;
    }
    Slot slot;
    if (rest.size() < kHashChars + 1 || !is_hex_hash(rest.substr(0, kHashChars)) ||
        rest[kHashChars] != ' ') {
      return reject("malformed entry");
    }
    slot.entry.sha256 = std::string(rest.substr(0, kHashChars));
    rest.remove_prefix(kHashChars + 1);
    if (!take_number(rest, slot.stamp.size) || !take_number(rest, slot.stamp.mtime_ns) ||
        !take_number(rest, slot.stamp.inode) || !take_number(rest, slot.entry.width) ||
        !take_number(rest, slot.entry.height) || rest.empty() || slot.entry.width < 0 ||
        slot.entry.height < 0) {
      return reject("malformed entry");
    }
    if (!read.emplace(std::string(rest), std::move(slot)).second) {
      return reject("path given twice");
    }
  }
  if (in.bad()) return reject("read failed");
  if (number == 0 || !ended) return reject("truncated (no end line)");
  entries_ = std::move(read);
  loaded_ = entries_.size();
  return true;
}

void FileHashCache::save(const fs::path& file) const {
  std::ostringstream out;
  std::size_t count = 0;
  out << kHeader << '\n';
  for (const auto& [path, slot] : entries_) {
    if (!slot.used || path.find_first_of("\n\r") != std::string::npos) continue;
    out << slot.entry.sha256 << ' ' << slot.stamp.size << ' ' << slot.stamp.mtime_ns << ' '
        << slot.stamp.inode << ' ' << slot.entry.width << ' ' << slot.entry.height << ' ' << path
        << '\n';
    ++count;
  }
  out << kFooter << count << '\n';
  write_file_atomically(file, out.str(), "the file hash cache");
}

const FileHashCache::Entry* FileHashCache::find(const std::string& path, const FileStamp& stamp) {
  const auto it = entries_.find(path);
  if (it == entries_.end() || it->second.stamp != stamp) return nullptr;
  if (!it->second.used) {
    it->second.used = true;
    ++used_;
  }
  return &it->second.entry;
}

std::string FileHashCache::hash(const std::string& path, const FileStamp& stamp) {
  if (const Entry* e = find(path, stamp)) return e->sha256;
  Entry entry;
  entry.sha256 = hasher_(path);
  ++hashed_;
  put(path, stamp, entry);
  return entry.sha256;
}

void FileHashCache::put(const std::string& path, const FileStamp& stamp, Entry entry) {
  auto [it, inserted] = entries_.try_emplace(path);
  Slot& slot = it->second;
  if (!inserted && slot.stamp == stamp && slot.entry.sha256 == entry.sha256 &&
      slot.entry.width == entry.width && slot.entry.height == entry.height) {
    if (!slot.used) {
      slot.used = true;
      ++used_;
    }
    return;
  }
  if (!inserted && slot.used) --used_;  // counted again below
  slot.stamp = stamp;
  slot.entry = std::move(entry);
  slot.used = true;
  ++used_;
  ++added_;
}

bool FileHashCache::changed() const noexcept { return added_ > 0 || used_ != loaded_; }

}  // namespace omnidp
