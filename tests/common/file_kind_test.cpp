#include "omnidp/common/file_kind.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <vector>

#include "child_process.hpp"
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

// Issue 52, classes 3 and 5: the safe looks at the files of the product's own folders. Each
// member of "not a regular file" is named, never throws (a link loop) and never blocks (a
// FIFO: a child under an alarm); folder_entries lists a loop like any name.
TEST(FileKind, NonFilesAreNamedNeverThrowOrBlock) {
  test::TempDir dir;
  struct Member {
    std::string name;
    std::string problem;
  };
  const auto loop = dir.path() / "loop";
  fs::create_symlink("loop", loop);
  const auto dangling = dir.path() / "dangling";
  fs::create_symlink("nowhere", dangling);
  const auto fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto zero = dir.path() / "zero";
  fs::create_symlink("/dev/zero", zero);
  const auto file = dir.path() / "file";
  std::ofstream(file) << "text";
  const std::vector<Member> members = {
      {"loop", "is a symbolic link loop (too many levels of symbolic links)"},
      {"dangling", "is a dangling symbolic link (to 'nowhere')"},
      {"fifo", "is a FIFO, not a regular file"},
      {"zero", "is a character device, not a regular file"},
  };
  const auto o = test::run_in_child([&] {
    for (const auto& m : members) {
      const auto path = dir.path() / m.name;
      std::string why;
      if (regular_file_problem(path) != m.problem || is_regular_path(path) || is_folder_path(path) ||
          !path_taken(path) || open_regular_file(path, O_RDONLY, why) != -1 || why != m.problem) {
        std::cout << m.name << ": " << regular_file_problem(path) << " / " << why << "\n";
        return 1;
      }
      try {
        (void)read_regular_file(path, "the thing");
        return 2;
      } catch (const std::exception& e) {
        if (std::string(e.what()) != path.string() + ": cannot read the thing: " + m.problem) {
          std::cout << e.what() << "\n";
          return 3;
        }
      }
    }
    if (read_regular_file(file, "the file") != "text") return 4;
    std::string why;
    const int fd = open_regular_file(fifo, O_WRONLY, why);  // no reader: refused, not ENXIO's
    if (fd != -1 || why != "is a FIFO, not a regular file") return 5;
    return path_taken(dir.path() / "none") ? 6 : 0;
  });
  EXPECT_EQ(o.code, 0) << test::describe(o);
  std::string error;
  auto names = folder_entries(dir.path(), &error);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(error, "");
  EXPECT_EQ(names, (std::vector<fs::path>{dangling, fifo, file, loop, zero}));
  EXPECT_TRUE(folder_entries(loop, &error).empty());
  EXPECT_EQ(error, "Too many levels of symbolic links");
  EXPECT_EQ(remove_special_file(file), "");
  EXPECT_EQ(remove_special_file(loop), "");
  EXPECT_EQ(remove_special_file(fifo), "a FIFO");
  EXPECT_FALSE(path_taken(fifo));
  EXPECT_TRUE(is_folder_path(dir.path()));
}

}  // namespace
}  // namespace omnidp
