#pragma once
// The weights identity of a pretrained snapshot (docs/models.md, "Weights identity"): one
// SHA-256 over the bytes of every file that determines the model's output (the safetensors
// shards, the JSON configs and indexes, tokenizer files), so that a fine-tune with the same
// layout gets other input keys. Each file's SHA-256 is cached in a JSON sidecar keyed by
// relative path, size, mtime (ns) and inode, so that a restart does not reread 20+ GB.
// Torch-free. Concurrent callers (ranks, jobs) are safe: the sidecar is replaced by rename.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace omnidp {

// Name of the sidecar inside a snapshot folder.
inline constexpr const char* kWeightsDigestSidecar = ".omnidp-weights-sha256.json";

// Lower-case hex SHA-256 of one file's bytes (the default reads it with sha256_file_hex).
using FileHasher = std::function<std::string(const std::filesystem::path&)>;

struct SnapshotDigestOptions {
  FileHasher hash_file;  // empty: sha256_file_hex; tests inject a counting one
  // Where the cache is read and written, first usable wins; empty: digest_cache_candidates().
  std::vector<std::filesystem::path> cache_files;
};

struct SnapshotDigest {
  std::string sha256;      // lower-case hex: the identity's digest
  std::size_t files = 0;   // files covered
  std::size_t hashed = 0;  // of which read this time (not found in the cache)
  std::uint64_t hashed_bytes = 0;
  std::filesystem::path cache_file;  // the sidecar written; empty when none was writable
};

// The files of `root` (recursively; symlinks followed) that the digest covers, sorted by
// relative path: *.safetensors, *.json, *.model, *.txt, *.tiktoken, outside hidden folders and
// not hidden themselves. Throws WeightsError when `root` is not a folder or cannot be listed.
[[nodiscard]] std::vector<std::filesystem::path> snapshot_digest_files(const std::filesystem::path& root);

// The sidecar locations, in order: <root>/.omnidp-weights-sha256.json, then
// $XDG_CACHE_HOME/omnidp/ (else $HOME/.cache/omnidp/) weights-sha256-<16 hex of the SHA-256 of
// the absolute root path>.json.
[[nodiscard]] std::vector<std::filesystem::path> digest_cache_candidates(
    const std::filesystem::path& root);

// SHA-256 over ("omnidp-weights-v2", then for each file: relative path, NUL, the file's hex
// SHA-256, NUL). A file's cached hash is used when its size, mtime (ns) and inode equal the
// cached ones; a file modified less than 2 s before the hashing started is hashed but not
// cached (a later write within the file system's timestamp granularity could keep its mtime).
// A corrupt or unreadable sidecar is ignored and rewritten; a sidecar that cannot be written
// anywhere only costs the rehash next time. Throws WeightsError (no folder, no files) or
// IoError (a file cannot be read).
[[nodiscard]] SnapshotDigest digest_snapshot(const std::filesystem::path& root,
                                             const SnapshotDigestOptions& options = {});

}  // namespace omnidp
