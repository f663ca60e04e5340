#include "omnidp/common/atomic_file.hpp"

#include <gtest/gtest.h>

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
  EXPECT_NE(message.find("cannot create the metrics textfile"), std::string::npos) << message;
  // A folder where the file should be: the rename fails, the temporary is removed.
  fs::create_directories(dir.path() / "taken" / "inner");
  EXPECT_EQ(test::error_of<IoError>([&] {
              write_file_atomically(dir.path() / "taken", "x", "the report");
            }).rfind((dir.path() / "taken").string() + ": cannot rename the report into place: ", 0),
            0U);
  EXPECT_EQ(names(dir.path()), (std::vector<std::string>{"taken"}));
  EXPECT_THROW(fsync_path(missing), IoError);
}

}  // namespace
}  // namespace omnidp
