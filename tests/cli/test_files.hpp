#pragma once
// Whole-file text helpers of the CLI end-to-end tests (configs, manifests, snapshot JSON).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace omnidp::cli::testing {

// The file's bytes; "" when it cannot be read.
inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to `file`, creating its folders.
inline void write_text(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace omnidp::cli::testing
