#pragma once
// Test helpers: a fresh temporary folder per test, raw file writing, the text of a WeightsError.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models::testing {

inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir =
      std::filesystem::temp_directory_path() /
      ("omnidp-weights-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The what() of the WeightsError fn throws, "" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  return omnidp::test::error_of<WeightsError>(fn);
}

}  // namespace omnidp::models::testing
