#include "omnidp/common/sha256.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace omnidp {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(std::string_view("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(std::string_view("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  Sha256 h;
  h.update(std::string_view("a"));
  h.update(std::string_view("bc"));
  const Digest d = h.finish();
  EXPECT_EQ(to_hex(d), sha256_hex(std::string_view("abc")));
}

TEST(Sha256, FileHash) {
  const auto path = std::filesystem::temp_directory_path() / "omnidp_sha256_test.bin";
  { std::ofstream(path, std::ios::binary) << "abc"; }
  EXPECT_EQ(sha256_file_hex(path), sha256_hex(std::string_view("abc")));
  std::filesystem::remove(path);
  EXPECT_THROW((void)sha256_file_hex(path), std::runtime_error);
}

}  // namespace
}  // namespace omnidp
