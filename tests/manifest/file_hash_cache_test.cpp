#include "omnidp/manifest/file_hash_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "child_process.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "results/odd_files.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class FileHashCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = (dir_ / "a.bin").string();
    b_ = (dir_ / "b.bin").string();
    write_file(a_, "first file");
    write_file(b_, "second file");
    cache_file_ = file_hash_cache_path(dir_);
  }

  // A cache whose hasher counts its calls (and hashes for real).
  FileHashCache counting_cache() {
    return FileHashCache([this](const fs::path& p) {
      ++calls_;
      return sha256_file_hex(p);
    });
  }
  static FileStamp stamp_of(const std::string& path) {
    const auto s = file_stamp(path);
    EXPECT_TRUE(s.has_value()) << path;
    return s.value_or(FileStamp{});
  }

  omnidp::test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
  std::string a_;
  std::string b_;
  fs::path cache_file_;
  int calls_ = 0;
};

TEST_F(FileHashCacheTest, StampOfRegularFilesOnly) {
  const auto s = file_stamp(a_);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->size, 10U);
  EXPECT_NE(s->inode, 0U);
  EXPECT_FALSE(file_stamp(dir_).has_value());
  EXPECT_FALSE(file_stamp(dir_ / "missing").has_value());
  EXPECT_EQ(cache_file_, dir_ / ".omnidp-file-hashes");
}

TEST_F(FileHashCacheTest, ASecondLookupAndASecondRunDoNotRehash) {
  {
    FileHashCache cache = counting_cache();
    EXPECT_FALSE(cache.load(cache_file_));  // none yet
    EXPECT_EQ(cache.hash(a_, stamp_of(a_)), sha256_file_hex(a_));
    EXPECT_EQ(cache.hash(b_, stamp_of(b_)), sha256_file_hex(b_));
    EXPECT_EQ(cache.hash(a_, stamp_of(a_)), sha256_file_hex(a_));
    EXPECT_EQ(calls_, 2);
    EXPECT_EQ(cache.files_hashed(), 2U);
    EXPECT_TRUE(cache.changed());
    cache.save(cache_file_);
  }
  for (const auto& e : fs::directory_iterator(cache_file_.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  calls_ = 0;
  FileHashCache restarted = counting_cache();
  ASSERT_TRUE(restarted.load(cache_file_));
  EXPECT_EQ(restarted.size(), 2U);
  EXPECT_EQ(restarted.hash(a_, stamp_of(a_)), sha256_file_hex(a_));
  EXPECT_EQ(restarted.hash(b_, stamp_of(b_)), sha256_file_hex(b_));
  EXPECT_EQ(calls_, 0);
  EXPECT_FALSE(restarted.changed());  // nothing to write back
}

TEST_F(FileHashCacheTest, ATouchedOrRewrittenFileIsHashedAgain) {
  {
    FileHashCache cache = counting_cache();
    (void)cache.hash(a_, stamp_of(a_));
    (void)cache.hash(b_, stamp_of(b_));
    cache.save(cache_file_);
  }
  calls_ = 0;
  // a: same bytes, newer mtime. b: new bytes of another size.
  fs::last_write_time(a_, fs::last_write_time(a_) + std::chrono::seconds(5));
  write_file(b_, "the second file, rewritten");
  FileHashCache cache = counting_cache();
  ASSERT_TRUE(cache.load(cache_file_));
  EXPECT_EQ(cache.hash(a_, stamp_of(a_)), sha256_file_hex(a_));
  EXPECT_EQ(cache.hash(b_, stamp_of(b_)),
            sha256_hex(std::string_view("the second file, rewritten")));
  EXPECT_EQ(calls_, 2);
  EXPECT_TRUE(cache.changed());
}

TEST_F(FileHashCacheTest, CorruptCachesAreIgnored) {
  {
    FileHashCache cache = counting_cache();
    (void)cache.hash(a_, stamp_of(a_));
    cache.save(cache_file_);
  }
  const std::string good = read_file(cache_file_);
  const std::string entry =
      good.substr(good.find('\n') + 1, good.rfind("end ") - good.find('\n') - 1);
  const std::string corrupt[] = {
      "",                                                             // empty
      "garbage\n",                                                    // no header
      good.substr(0, good.rfind("end ")),                             // truncated: no end line
      good.substr(0, good.size() - 2) + "7\n",                        // wrong count
      "omnidp-file-hashes v1\n" + entry + entry + "end 2\n",          // a path twice
      "omnidp-file-hashes v1\nXYZ" + entry.substr(3) + "end 1\n",     // not a hex hash
      "omnidp-file-hashes v1\n" + entry.substr(0, 70) + "\nend 1\n",  // cut entry
      good + "trailing\n",                                            // text after the end
  };
  for (const auto& text : corrupt) {
    write_file(cache_file_, text);
    calls_ = 0;
    FileHashCache cache = counting_cache();
    EXPECT_FALSE(cache.load(cache_file_)) << text;
    EXPECT_EQ(cache.size(), 0U) << text;
    EXPECT_EQ(cache.hash(a_, stamp_of(a_)), sha256_file_hex(a_)) << text;
    EXPECT_EQ(calls_, 1) << text;
  }
  write_file(cache_file_, good);  // and the good one still loads
  FileHashCache cache = counting_cache();
  EXPECT_TRUE(cache.load(cache_file_));
  EXPECT_EQ(cache.size(), 1U);
}

TEST_F(FileHashCacheTest, OnlyTheEntriesUsedSinceLoadAreSaved) {
  {
    FileHashCache cache = counting_cache();
    (void)cache.hash(a_, stamp_of(a_));
    (void)cache.hash(b_, stamp_of(b_));
    cache.save(cache_file_);
  }
  FileHashCache cache = counting_cache();
  ASSERT_TRUE(cache.load(cache_file_));
  (void)cache.hash(b_, stamp_of(b_));  // a is no longer in the manifest
  EXPECT_TRUE(cache.changed());
  cache.save(cache_file_);
  FileHashCache reloaded = counting_cache();
  ASSERT_TRUE(reloaded.load(cache_file_));
  EXPECT_EQ(reloaded.size(), 1U);
  EXPECT_EQ(reloaded.find(a_, stamp_of(a_)), nullptr);
  ASSERT_NE(reloaded.find(b_, stamp_of(b_)), nullptr);
}

TEST_F(FileHashCacheTest, ImageSizesTravelWithTheHash) {
  {
    FileHashCache cache = counting_cache();
    cache.put(a_, stamp_of(a_), FileHashCache::Entry{sha256_file_hex(a_), 640, 480});
    cache.save(cache_file_);
  }
  FileHashCache cache = counting_cache();
  ASSERT_TRUE(cache.load(cache_file_));
  const FileHashCache::Entry* e = cache.find(a_, stamp_of(a_));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->sha256, sha256_file_hex(a_));
  EXPECT_EQ(e->width, 640);
  EXPECT_EQ(e->height, 480);
  FileStamp other = stamp_of(a_);
  ++other.inode;  // e.g. the file was replaced by another with the same size and time
  EXPECT_EQ(cache.find(a_, other), nullptr);
}

TEST_F(FileHashCacheTest, HasherErrorsPropagateAndAreNotCached) {
  FileHashCache cache;
  const FileStamp s = stamp_of(a_);
  fs::remove(a_);
  EXPECT_THROW((void)cache.hash(a_, s), IoError);
  EXPECT_EQ(cache.size(), 0U);
}

// Issue 52, classes 3 and 5: a FIFO named .omnidp-file-hashes blocked the job, --validate-only
// and --dry-run (the sidecar is read first). A sidecar that is not a regular file is ignored
// with one warning, never opened blocking (a child under an alarm); a missing one is silent.
TEST_F(FileHashCacheTest, ASidecarThatIsNotARegularFileIsIgnoredNeverBlocks) {
  for (const auto kind : results::testing::odd_kinds()) {
    SCOPED_TRACE(results::testing::odd_name(kind));
    std::filesystem::remove_all(cache_file_);
    results::testing::make_odd(cache_file_, kind);
    const auto o = test::run_in_child([&] { return FileHashCache().load(cache_file_) ? 1 : 0; });
    ASSERT_EQ(o.code, 0) << test::describe(o);
    EXPECT_NE(o.err.find(cache_file_.string() +
                         ": cannot read the file hash cache: " + results::testing::odd_problem(kind) +
                         "; the file hash cache is ignored (every input file is hashed again)"),
              std::string::npos)
        << o.err;
    std::filesystem::remove_all(cache_file_);
  }
  const auto missing = test::run_in_child([&] { return FileHashCache().load(cache_file_) ? 1 : 0; });
  EXPECT_EQ(missing.code, 0);
  EXPECT_EQ(missing.err, "");
}

}  // namespace
}  // namespace omnidp
