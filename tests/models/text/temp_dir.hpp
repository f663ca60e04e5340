#pragma once
// A temporary folder for the text tests, removed on destruction.

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace omnidp::models::text::testing {

struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("omnidp-text-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
  std::filesystem::path path;
};

}  // namespace omnidp::models::text::testing
