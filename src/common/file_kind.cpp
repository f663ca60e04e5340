#include "omnidp/common/file_kind.hpp"

namespace omnidp {
namespace fs = std::filesystem;

const char* file_kind(fs::file_type type) noexcept {
  switch (type) {
    case fs::file_type::regular: return "a regular file";
    case fs::file_type::directory: return "a folder";
    case fs::file_type::symlink: return "a symbolic link";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::not_found: return "nothing";
    default: return "a file of another kind";
  }
}

std::string regular_file_problem(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_regular_file(status)) return {};
  if (!fs::exists(status)) return "file not found";
  return std::string("is ") + file_kind(status.type()) + ", not a regular file";
}

}  // namespace omnidp
