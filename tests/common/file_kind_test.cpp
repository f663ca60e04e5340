#include "omnidp/common/file_kind.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "temp_dir.hpp"

namespace omnidp {
namespace {
namespace fs = std::filesystem;

TEST(FileKind, NamesEachKind) {
  EXPECT_STREQ(file_kind(fs::file_type::fifo), "a FIFO");
  EXPECT_STREQ(file_kind(fs::file_type::directory), "a folder");
  EXPECT_STREQ(file_kind(fs::file_type::not_found), "nothing");
}

// An input opened for reading must be a regular file: a FIFO would block the open forever.
TEST(FileKind, OnlyARegularFileHasNoProblem) {
  test::TempDir dir;
  const auto file = dir.path() / "a.png";
  std::ofstream(file) << "x";
  const auto link = dir.path() / "b.png";
  fs::create_symlink(file.filename(), link);
  const auto fifo = dir.path() / "pipe.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(regular_file_problem(file), "");
  EXPECT_EQ(regular_file_problem(link), "");  // links are followed
  EXPECT_EQ(regular_file_problem(fifo), "is a FIFO, not a regular file");
  EXPECT_EQ(regular_file_problem(dir.path()), "is a folder, not a regular file");
  EXPECT_EQ(regular_file_problem(dir.path() / "none.png"), "file not found");
  EXPECT_EQ(regular_file_problem("/dev/null"), "is a character device, not a regular file");
}

}  // namespace
}  // namespace omnidp
