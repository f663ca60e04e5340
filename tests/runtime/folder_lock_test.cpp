#include "omnidp/runtime/folder_lock.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "job_test_support.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

// Issue 52, class 9: a second job on a folder fails at once, naming the holder; the first
// job's lock outlives nothing (flock ends with its descriptor).
TEST(OutputFolderLock, ASecondJobOnTheFolderFailsAtOnceNamingTheHolder) {
  TempDir dir("folder-lock");
  const fs::path out = dir.path() / "out";
  std::optional<OutputFolderLock> first;
  first.emplace(out, "nodeA", true);
  EXPECT_TRUE(fs::is_directory(out));
  try {
    OutputFolderLock second(out, "nodeB", true);
    FAIL() << "a second lock was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    const std::string what = e.what();
    EXPECT_NE(what.find(out.string()), std::string::npos) << what;
    EXPECT_NE(what.find("the output folder is in use by another omni-dp-batch job (pid " +
                        std::to_string(::getpid()) + " on nodeA since "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("let it end, or give this job another output.dir"), std::string::npos)
        << what;
  }
  std::ofstream(out / "rank-00000.h5") << "x";  // output: the folder stays
  first.reset();
  EXPECT_TRUE(fs::is_directory(out));
  OutputFolderLock again(out, "nodeB", true);  // released with the first
}

// A folder the lock created and nothing else used is removed with it (a job that stopped
// before any output leaves none); one that existed before stays.
TEST(OutputFolderLock, AFolderItCreatedAndNothingUsedIsRemoved) {
  TempDir dir("folder-lock-new");
  { OutputFolderLock lock(dir.path() / "new", "n", true); }
  EXPECT_FALSE(fs::exists(dir.path() / "new"));
  fs::create_directories(dir.path() / "old");
  { OutputFolderLock lock(dir.path() / "old", "n", true); }
  EXPECT_TRUE(fs::exists(dir.path() / "old"));
}

// Removed, renamed, or replaced by another folder of the same name: each is a clear error.
TEST(OutputFolderLock, AFolderRemovedRenamedOrReplacedIsAClearError) {
  TempDir dir("folder-lock-lost");
  const fs::path out = dir.path() / "out";
  for (const char* how : {"renamed", "removed", "replaced"}) {
    fs::create_directories(out);
    OutputFolderLock lock(out, "n", true);
    EXPECT_TRUE(lock.folder_is_there()) << how;
    EXPECT_NO_THROW(lock.check_folder()) << how;
    const std::string h = how;
    if (h == "renamed") {
      fs::rename(out, dir.path() / "moved");
      fs::remove_all(dir.path() / "moved");
    } else {
      fs::remove_all(out);
      if (h == "replaced") fs::create_directories(out);
    }
    EXPECT_FALSE(lock.folder_is_there()) << how;
    try {
      lock.check_folder();
      FAIL() << how;
    } catch (const RuntimeError& e) {
      EXPECT_EQ(e.exit_code(), ExitCode::some_failed);
      EXPECT_NE(std::string(e.what()).find("the output folder " + out.string() +
                                           " was removed or renamed during the run"),
                std::string::npos)
          << e.what();
    }
    fs::remove_all(out);
  }
}

}  // namespace
}  // namespace omnidp::runtime
