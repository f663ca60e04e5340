#pragma once
// The tests' scratch folder: a fresh empty folder under the system temp dir, named after a tag
// (by default the running test's suite and name), the process and a counter, so that parallel
// ctest processes and several folders of one test never meet; removed with what it holds by
// the destructor.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace omnidp::test {

// "<suite>-<test>" of the running GoogleTest test, "test" outside one.
[[nodiscard]] inline std::string current_test_tag() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "test";
  return std::string(info->test_suite_name()) + "-" + info->name();
}

class TempDir {
 public:
  TempDir() : TempDir(current_test_tag()) {}
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    std::string name =
        "omnidp-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised test names
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // Writes `text` to the file `name` in the folder; its path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace omnidp::test
