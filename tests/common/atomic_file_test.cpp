#include "omnidp/common/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AtomicFile, ReplacesTheFileAndLeavesNoTemporary) {
  test::TempDir dir;
  const auto file = dir.path() / "summary.json";
  write_file_atomically(file, std::string("first\0x", 7));
  EXPECT_EQ(read(file), std::string("first\0x", 7));
  write_file_atomically(file, "second", "the summary", Durability::synced);
  EXPECT_EQ(read(file), "second");
  EXPECT_EQ(names(dir.path()), (std::vector<std::string>{"summary.json"}));
}

TEST(AtomicFile, TemporariesAreUniqueAndBesideTheTarget) {
  const fs::path target = "/out/results.h5";
  const auto a = temporary_beside(target);
  const auto b = temporary_beside(target);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.parent_path(), target.parent_path());
  EXPECT_EQ(a.filename().string().rfind(".results.h5.tmp-", 0), 0U) << a;
}

TEST(AtomicFile, FailuresNameTheFileAndCleanUp) {
  test::TempDir dir;
  const auto missing = dir.path() / "no" / "m.prom";
  const auto message =
      test::error_of<IoError>([&] { write_file_atomically(missing, "x", "the metrics textfile"); });
  // The path as given and errno's reason, never the temporary's name (issue 52, class 15).
  EXPECT_EQ(message, missing.string() +
                         ": cannot create the metrics textfile: No such file or directory "
                         "(creating a file in '" +
                         missing.parent_path().string() + "')");
  // A folder where the file should be: refused before anything is written.
  fs::create_directories(dir.path() / "taken" / "inner");
  EXPECT_EQ(test::error_of<IoError>(
                [&] { write_file_atomically(dir.path() / "taken", "x", "the report"); }),
            (dir.path() / "taken").string() +
                ": the report goes to a regular file or a new path, not a folder");
  EXPECT_EQ(names(dir.path()), (std::vector<std::string>{"taken"}));
  EXPECT_THROW(fsync_path(missing), IoError);
}

// Renaming over anything but a regular file destroys it (a device node, a FIFO, the link
// itself): links are followed, character devices written in place, the rest refused.
TEST(AtomicFile, OnlyRegularFilesAreReplaced) {
  test::TempDir dir;
  const auto file = dir.path() / "report.html";
  write_file_atomically(file, "old");
  const auto link = dir.path() / "latest.html";
  fs::create_symlink(file.filename(), link);
  write_file_atomically(link, "new", "the report");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read(file), "new");
  EXPECT_EQ(replacement_target(link), file);
  const auto dangling = dir.path() / "next.html";  // a link to a file not written yet
  fs::create_symlink("new.html", dangling);
  write_file_atomically(dangling, "first");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_EQ(read(dir.path() / "new.html"), "first");
  fs::remove(dangling);
  fs::remove(dir.path() / "new.html");
  EXPECT_EQ(replacement_target(dir.path() / "new.html"), dir.path() / "new.html");

  const auto fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(test::error_of<IoError>([&] { write_file_atomically(fifo, "x", "the report"); }),
            fifo.string() + ": the report goes to a regular file or a new path, not a FIFO");
  EXPECT_EQ(
      test::error_of<IoError>([&] { (void)replacement_target(fifo, "the merged results"); }),
      fifo.string() + ": the merged results goes to a regular file or a new path, not a FIFO");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(names(dir.path()), (std::vector<std::string>{"latest.html", "pipe", "report.html"}));

  // Character devices: /dev/null takes the bytes; /dev/full's ENOSPC is the error; both stay.
  write_file_atomically("/dev/null", "x", "the report");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (fs::is_character_file("/dev/full")) {
    EXPECT_EQ(test::error_of<IoError>([&] { write_file_atomically("/dev/full", "x", "the report"); }),
              "/dev/full: cannot write the report: No space left on device");
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  EXPECT_EQ(test::error_of<IoError>([&] { (void)replacement_target("/dev/null", "the video"); }),
            "/dev/null: the video goes to a regular file or a new path, not a character device");
}

// Issue 52, class 15: a file that cannot be created was "cannot create the report" with no
// reason, naming ".report.html.tmp-<pid>-<n>"; /proc/self/fd/N of a pipe was named
// ".pipe:[123].tmp-...". Each member: the user's path, and why.
TEST(AtomicFile, EveryFailureNamesTheGivenPathAndWhy) {
  test::TempDir dir;
  // A regular file where a folder should be: ENOTDIR.
  const auto file = dir.path() / "plain";
  write_file_atomically(file, "x");
  const auto under_file = file / "report.html";
  EXPECT_EQ(test::error_of<IoError>([&] { write_file_atomically(under_file, "x", "the report"); }),
            under_file.string() +
                ": cannot create the report: Not a directory (creating a file "
                "in '" +
                file.string() + "')");
  // A folder without write permission (root passes it: only checked for another user).
  const auto locked = dir.path() / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) {
    EXPECT_EQ(test::error_of<IoError>(
                  [&] { write_file_atomically(locked / "summary.json", "x", "the summary"); }),
              (locked / "summary.json").string() +
                  ": cannot create the summary: Permission denied (creating a file in '" +
                  locked.string() + "')");
  }
  fs::permissions(locked, fs::perms::owner_all);
  // /proc/self/fd/N of a pipe: its link reads "pipe:[123]", no path; named as given.
  int fds[2] = {-1, -1};
  ASSERT_EQ(::pipe(fds), 0);
  const fs::path pipe_end = "/proc/self/fd/" + std::to_string(fds[1]);
  EXPECT_EQ(test::error_of<IoError>([&] { write_file_atomically(pipe_end, "x", "the report"); }),
            pipe_end.string() + ": the report goes to a regular file or a new path, not a FIFO");
  EXPECT_EQ(test::error_of<IoError>([&] { (void)replacement_target(pipe_end, "the video"); }),
            pipe_end.string() + ": the video goes to a regular file or a new path, not a FIFO");
  ::close(fds[0]);
  ::close(fds[1]);
  // create_temporary itself: O_EXCL, so an existing temporary is an error, not overwritten.
  const auto tmp = dir.path() / ".x.tmp";
  create_temporary(tmp, dir.path() / "x", "the file");
  EXPECT_TRUE(fs::exists(tmp));
  EXPECT_EQ(test::error_of<IoError>([&] { create_temporary(tmp, dir.path() / "x", "the file"); }),
            (dir.path() / "x").string() +
                ": cannot create the file: File exists (creating a file "
                "in '" +
                dir.path().string() + "')");
}

}  // namespace
}  // namespace omnidp
