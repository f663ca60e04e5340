#include "omnidp/models/snapshot_digest.hpp"
#include "omnidp/common/atomic_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCacheFormat = "omnidp-weights-sha256/1";
constexpr std::int64_t kRacyWindowNs = 2'000'000'000;  // 2 s
constexpr std::array<std::string_view, 5> kExtensions = {".safetensors", ".json", ".model", ".txt",
                                                         ".tiktoken"};

struct FileStat {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  friend bool operator==(const FileStat&, const FileStat&) = default;
};

struct CacheEntry {
  FileStat stat;
  std::string sha256;
};

FileStat stat_of(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw IoError(file.string(), "cannot stat");
  FileStat s;
  s.size = static_cast<std::uint64_t>(st.st_size);
  s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  s.inode = static_cast<std::uint64_t>(st.st_ino);
  return s;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool hidden(const fs::path& relative) {
  return std::any_of(relative.begin(), relative.end(),
                     [](const fs::path& part) { return part.string().starts_with('.'); });
}

bool is_hex_hash(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The entries of a sidecar; empty when it is missing, unreadable or malformed (ignored).
std::map<std::string, CacheEntry> read_cache(const fs::path& file) {
  std::map<std::string, CacheEntry> out;
  std::ifstream in(file, std::ios::binary);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    if (!j.is_object() || j.value("format", "") != kCacheFormat || !j.contains("files") ||
        !j["files"].is_object()) {
      log_info("weights identity: ignoring " + file.string() + " (not a weights hash cache)");
      return out;
    }
    for (const auto& [name, e] : j["files"].items()) {
      CacheEntry entry;
      entry.stat.size = e.at("size").get<std::uint64_t>();
      entry.stat.mtime_ns = e.at("mtime_ns").get<std::int64_t>();
      entry.stat.inode = e.at("inode").get<std::uint64_t>();
      entry.sha256 = e.at("sha256").get<std::string>();
      if (is_hex_hash(entry.sha256)) out.emplace(name, std::move(entry));
    }
  } catch (const std::exception& e) {
    log_info("weights identity: ignoring unreadable " + file.string() + ": " + e.what());
    out.clear();
  }
  return out;
}

// Writes the sidecar by temp file + rename; false when `file`'s folder is not writable.
bool write_cache(const fs::path& file, const fs::path& root,
                 const std::map<std::string, CacheEntry>& entries) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [name, e] : entries) {
    files[name] = {{"size", e.stat.size},
                   {"mtime_ns", e.stat.mtime_ns},
                   {"inode", e.stat.inode},
                   {"sha256", e.sha256}};
  }
  const nlohmann::json j = {{"format", kCacheFormat}, {"root", root.string()}, {"files", files}};
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  try {
    write_file_atomically(file, j.dump(1) + "\n", "the weights digest cache");
  } catch (const IoError&) {
    return false;
  }
  return true;
}

}  // namespace

std::vector<fs::path> snapshot_digest_files(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw WeightsError(root.string(), "model.path is not a folder");
  std::vector<fs::path> files;
  fs::recursive_directory_iterator it(root, ec);
  if (ec) throw WeightsError(root.string(), "cannot list the snapshot: " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path relative = it->path().lexically_relative(root);  // symlinks stay names
    if (hidden(relative)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const std::string ext = it->path().extension().string();
    if (std::find(kExtensions.begin(), kExtensions.end(), ext) != kExtensions.end()) {
      files.push_back(it->path());
    }
  }
  if (ec) throw WeightsError(root.string(), "cannot list the snapshot: " + ec.message());
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return a.lexically_relative(root).generic_string() < b.lexically_relative(root).generic_string();
  });
  return files;
}

std::vector<fs::path> digest_cache_candidates(const fs::path& root) {
  std::vector<fs::path> out;
  out.push_back(root / kWeightsDigestSidecar);
  fs::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    base = fs::path(home) / ".cache";
  }
  if (!base.empty()) {
    const std::string key = sha256_hex(fs::absolute(root).lexically_normal().string()).substr(0, 16);
    out.push_back(base / "omnidp" / ("weights-sha256-" + key + ".json"));
  }
  return out;
}

SnapshotDigest digest_snapshot(const fs::path& root, const SnapshotDigestOptions& options) {
  const std::vector<fs::path> files = snapshot_digest_files(root);
  if (files.empty()) {
    throw WeightsError(root.string(),
                       "no weight or config files (*.safetensors, *.json) in the "
                       "snapshot");
  }
  const std::vector<fs::path> candidates =
      options.cache_files.empty() ? digest_cache_candidates(root) : options.cache_files;
  std::map<std::string, CacheEntry> cache;
  fs::path cache_source;
  for (const auto& candidate : candidates) {
    cache = read_cache(candidate);
    if (!cache.empty()) {
      cache_source = candidate;
      break;
    }
  }

  const std::int64_t started_ns = now_ns();
  std::vector<std::pair<std::string, FileStat>> stats;
  stats.reserve(files.size());
  std::uint64_t to_hash_bytes = 0;
  std::size_t to_hash = 0;
  for (const auto& f : files) {
    const std::string name = f.lexically_relative(root).generic_string();
    const FileStat s = stat_of(f);
    const auto it = cache.find(name);
    if (it == cache.end() || it->second.stat != s) {
      ++to_hash;
      to_hash_bytes += s.size;
    }
    stats.emplace_back(name, s);
  }
  if (to_hash > 0) {
    log_info(
        fmt::format("weights identity: hashing {} of {} file(s) of {} ({:.3g} GiB; cached for "
                    "later runs)",
                    to_hash, files.size(), root.string(),
                    static_cast<double>(to_hash_bytes) / (1024.0 * 1024.0 * 1024.0)));
  }

  SnapshotDigest out;
  out.files = files.size();
  std::map<std::string, CacheEntry> next;
  Sha256 total;
  total.update(std::string_view("omnidp-weights-v2\0", 18));
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [name, s] = stats[i];
    std::string sha;
    const auto it = cache.find(name);
    if (it != cache.end() && it->second.stat == s) {
      sha = it->second.sha256;
    } else {
      sha = options.hash_file ? options.hash_file(files[i]) : sha256_file_hex(files[i]);
      ++out.hashed;
      out.hashed_bytes += s.size;
    }
    if (s.mtime_ns < started_ns - kRacyWindowNs) next[name] = CacheEntry{s, sha};
    total.update(name);
    total.update(std::string_view("\0", 1));
    total.update(sha);
    total.update(std::string_view("\0", 1));
  }
  out.sha256 = to_hex(total.finish());

  const bool changed = out.hashed > 0 || next.size() != cache.size();
  if (changed) {
    for (const auto& candidate : candidates) {
      if (write_cache(candidate, root, next)) {
        out.cache_file = candidate;
        break;
      }
    }
    if (out.cache_file.empty()) {
      log_warn("weights identity: no writable place for the hash cache of " + root.string() +
               "; the next run hashes the snapshot again");
    }
  } else {
    out.cache_file = cache_source;
  }
  return out;
}

}  // namespace omnidp
