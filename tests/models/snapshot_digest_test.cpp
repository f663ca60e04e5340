// The weights identity of a snapshot: it covers the tensor bytes, and its per-file hashes are
// cached in a sidecar keyed by size, mtime and inode.
#include "omnidp/models/snapshot_digest.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A safetensors file: one F32 tensor "w" of 4 values; `data` is its 16 bytes.
std::string safetensors(const std::string& data) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFFU);
  return out + header + data;
}

const std::string kTensor =
    std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16);

// A small Diffusers-like snapshot; every file's mtime an hour in the past (so cacheable).
class Snapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("omnidp-snapshot-digest-" + std::string(info->name()) +
                                         "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    write_bytes(root_ / "model_index.json", R"({"_class_name": "WanPipeline"})");
    write_bytes(root_ / "transformer" / "config.json", R"({"num_layers": 1})");
    write_bytes(tensor_file(), safetensors(kTensor));
    write_bytes(root_ / "tokenizer" / "spiece.model", "sentencepiece bytes");
    write_bytes(root_ / "README.md", "a model card");
    write_bytes(root_ / ".cache" / "huggingface" / "x.json", "{}");
    age_all(std::chrono::hours(1));
  }
  void TearDown() override { fs::remove_all(root_); }

  void age_all(std::chrono::seconds age) const {
    const auto when = fs::file_time_type::clock::now() - age;
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.is_regular_file()) fs::last_write_time(e.path(), when);
    }
  }
  [[nodiscard]] fs::path tensor_file() const {
    return root_ / "transformer" / "diffusion_pytorch_model.safetensors";
  }
  [[nodiscard]] fs::path sidecar() const { return root_ / kWeightsDigestSidecar; }
  // Options whose hasher counts its calls; the cache only in the snapshot.
  [[nodiscard]] SnapshotDigestOptions counting(std::atomic<int>& calls) const {
    SnapshotDigestOptions o;
    o.hash_file = [&calls](const fs::path& f) {
      ++calls;
      return sha256_file_hex(f);
    };
    o.cache_files = {sidecar()};
    return o;
  }

  fs::path root_;
};

TEST_F(Snapshot, CoversWeightsConfigsAndTokenizersButNotHiddenFilesOrDocs) {
  std::vector<std::string> names;
  for (const auto& f : snapshot_digest_files(root_)) {
    names.push_back(f.lexically_relative(root_).generic_string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"model_index.json", "tokenizer/spiece.model",
                                             "transformer/config.json",
                                             "transformer/diffusion_pytorch_model.safetensors"}));
  EXPECT_THROW((void)snapshot_digest_files(root_ / "missing"), WeightsError);
}

// A Hugging Face cache snapshot links its files to blobs: the names count, not the targets.
TEST_F(Snapshot, SymlinkedFilesAreNamedByTheirLinkAndHashedByTheirTarget) {
  const fs::path blob = root_.string() + "-blobs" + "/0123abcd";
  write_bytes(blob, safetensors(kTensor));
  fs::create_directories(root_ / "vae");
  fs::create_symlink(blob, root_ / "vae" / "diffusion_pytorch_model.safetensors");
  const auto files = snapshot_digest_files(root_);
  ASSERT_EQ(files.size(), 5U);
  EXPECT_EQ(files[4].lexically_relative(root_).generic_string(),
            "vae/diffusion_pytorch_model.safetensors");
  const std::string with_link = digest_snapshot(root_).sha256;
  write_bytes(blob, safetensors(std::string(16, '\0')));
  EXPECT_NE(digest_snapshot(root_).sha256, with_link);
  fs::remove_all(blob.parent_path());
}

TEST_F(Snapshot, OneChangedTensorByteUnderTheSameHeaderGivesANewIdentity) {
  ModelConfig model;
  model.name = "wan2.2-ti2v-5b";
  model.weights = WeightsSource::pretrained;
  model.path = root_.string();
  const std::string before = weights_identity(model);
  const SnapshotDigest digest = digest_snapshot(root_);
  EXPECT_EQ(before, "snapshot-sha256:" + digest.sha256);
  EXPECT_EQ(digest.files, 4U);

  // The reference value: the documented encoding over the files' SHA-256s.
  Sha256 expected;
  expected.update(std::string_view("omnidp-weights-v2\0", 18));
  for (const auto& f : snapshot_digest_files(root_)) {
    expected.update(f.lexically_relative(root_).generic_string());
    expected.update(std::string_view("\0", 1));
    expected.update(sha256_file_hex(f));
    expected.update(std::string_view("\0", 1));
  }
  EXPECT_EQ(digest.sha256, to_hex(expected.finish()));

  std::string fine_tuned = kTensor;
  fine_tuned[5] = static_cast<char>(fine_tuned[5] ^ 0x01);  // one bit of the second value
  write_bytes(tensor_file(), safetensors(fine_tuned));
  const std::string after = weights_identity(model);
  EXPECT_NE(after, before);
  EXPECT_EQ(after.rfind("snapshot-sha256:", 0), 0U);

  // A model card or a hidden file does not change it.
  write_bytes(root_ / "README.md", "another model card");
  write_bytes(root_ / ".cache" / "huggingface" / "x.json", "{\"y\": 1}");
  EXPECT_EQ(weights_identity(model), after);
}

TEST_F(Snapshot, RandomAndSyntheticWeightsKeepTheirIdentity) {
  ModelConfig model;
  model.name = "wan2.2-ti2v-5b";
  model.weights = WeightsSource::random;
  model.weights_seed = 9;
  model.path = root_.string();
  EXPECT_EQ(weights_identity(model), "random:9");
  EXPECT_FALSE(fs::exists(sidecar()));
  model.name = "synthetic";
  EXPECT_EQ(weights_identity(model), "synthetic");
}

TEST_F(Snapshot, SecondCallReadsTheCacheAndATouchedFileIsHashedAgain) {
  std::atomic<int> calls{0};
  const SnapshotDigest first = digest_snapshot(root_, counting(calls));
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(first.hashed, 4U);
  EXPECT_EQ(first.cache_file, sidecar());

  // The sidecar holds each file's stat and hash.
  const auto j = nlohmann::json::parse(read_bytes(sidecar()));
  EXPECT_EQ(j["format"], "omnidp-weights-sha256/1");
  ASSERT_EQ(j["files"].size(), 4U);
  const auto& t = j["files"]["transformer/diffusion_pytorch_model.safetensors"];
  EXPECT_EQ(t["sha256"], sha256_file_hex(tensor_file()));
  EXPECT_EQ(t["size"], fs::file_size(tensor_file()));

  const SnapshotDigest second = digest_snapshot(root_, counting(calls));
  EXPECT_EQ(calls, 4) << "the second call reread a file";
  EXPECT_EQ(second.hashed, 0U);
  EXPECT_EQ(second.sha256, first.sha256);
  EXPECT_EQ(second.cache_file, sidecar());

  // A new mtime (same bytes) is hashed again, and only that file.
  fs::last_write_time(tensor_file(), fs::file_time_type::clock::now() - std::chrono::minutes(30));
  const SnapshotDigest third = digest_snapshot(root_, counting(calls));
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(third.hashed, 1U);
  EXPECT_EQ(third.hashed_bytes, fs::file_size(tensor_file()));
  EXPECT_EQ(third.sha256, first.sha256);
  EXPECT_EQ(digest_snapshot(root_, counting(calls)).hashed, 0U);
  EXPECT_EQ(calls, 5);
}

TEST_F(Snapshot, AFileModifiedWithinTheTimestampWindowIsNeverTrustedFromTheCache) {
  std::atomic<int> calls{0};
  // mtime in the future: not at least 2 s older than the hashing, so not cached.
  fs::last_write_time(tensor_file(), fs::file_time_type::clock::now() + std::chrono::hours(1));
  (void)digest_snapshot(root_, counting(calls));
  EXPECT_EQ(calls, 4);
  const auto j = nlohmann::json::parse(read_bytes(sidecar()));
  EXPECT_EQ(j["files"].size(), 3U);
  EXPECT_FALSE(j["files"].contains("transformer/diffusion_pytorch_model.safetensors"));
  (void)digest_snapshot(root_, counting(calls));
  EXPECT_EQ(calls, 5);
}

TEST_F(Snapshot, ACorruptSidecarIsIgnoredAndRewritten) {
  std::atomic<int> calls{0};
  const std::string reference = digest_snapshot(root_, counting(calls)).sha256;
  for (const std::string& junk :
       {std::string("{not json"), std::string(R"({"format": "other"})"),
        std::string(
            R"({"format": "omnidp-weights-sha256/1", "files": {"model_index.json": {"size": "x"}}})")}) {
    write_bytes(sidecar(), junk);
    calls = 0;
    const SnapshotDigest d = digest_snapshot(root_, counting(calls));
    EXPECT_EQ(calls, 4) << junk;
    EXPECT_EQ(d.sha256, reference) << junk;
    EXPECT_EQ(nlohmann::json::parse(read_bytes(sidecar()))["files"].size(), 4U) << junk;
  }
}

// A forged cache entry with matching stats is believed: the cache is keyed by the stats, so
// this proves the second call takes the hash from the sidecar and does not reread the file.
TEST_F(Snapshot, TheCachedHashIsWhatTheIdentityUses) {
  std::atomic<int> calls{0};
  const std::string real = digest_snapshot(root_, counting(calls)).sha256;
  auto j = nlohmann::json::parse(read_bytes(sidecar()));
  j["files"]["model_index.json"]["sha256"] = std::string(64, 'a');
  write_bytes(sidecar(), j.dump());
  EXPECT_NE(digest_snapshot(root_, counting(calls)).sha256, real);
  EXPECT_EQ(calls, 4);
}

TEST_F(Snapshot, AnUnwritableFirstPlaceFallsBackToTheNext) {
  const fs::path elsewhere = root_.string() + "-cache";
  write_bytes(elsewhere / "plain-file", "x");
  SnapshotDigestOptions o;
  o.cache_files = {elsewhere / "plain-file" / "sidecar.json", elsewhere / "c" / "sidecar.json"};
  const SnapshotDigest d = digest_snapshot(root_, o);
  EXPECT_EQ(d.cache_file, elsewhere / "c" / "sidecar.json");
  EXPECT_TRUE(fs::exists(elsewhere / "c" / "sidecar.json"));
  EXPECT_EQ(digest_snapshot(root_, o).hashed, 0U);
  fs::remove_all(elsewhere);
}

TEST_F(Snapshot, CacheCandidatesAreTheSnapshotThenTheUserCache) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_CACHE_HOME", "/var/cache-test", 1);
  const auto c = digest_cache_candidates(root_);
  if (old != nullptr) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  ASSERT_EQ(c.size(), 2U);
  EXPECT_EQ(c[0], root_ / ".omnidp-weights-sha256.json");
  const std::string key = sha256_hex(root_.lexically_normal().string()).substr(0, 16);
  EXPECT_EQ(c[1], fs::path("/var/cache-test/omnidp") / ("weights-sha256-" + key + ".json"));
}

// Several ranks at once: every one gets the same identity and the sidecar stays valid JSON,
// with no temporary file left behind.
TEST_F(Snapshot, ConcurrentCallersLeaveOneValidSidecar) {
  std::vector<std::string> digests(6);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < digests.size(); ++i) {
    threads.emplace_back([&, i] { digests[i] = digest_snapshot(root_).sha256; });
  }
  for (auto& t : threads) t.join();
  for (const auto& d : digests) EXPECT_EQ(d, digests[0]);
  EXPECT_EQ(nlohmann::json::parse(read_bytes(sidecar()))["files"].size(), 4U);
  for (const auto& e : fs::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace omnidp
