#include "omnidp/common/file_kind.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "omnidp/common/error.hpp"

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
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return {};
    std::error_code ec;
    return std::string("is ") + file_kind(fs::status(path, ec).type()) + ", not a regular file";
  }
  const int error = errno;
  if (error == ELOOP) {
    return "is a symbolic link loop (too many levels of symbolic links)";
  }
  if (error == ENOENT) {
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      std::error_code ec;
      const fs::path target = fs::read_symlink(path, ec);
      return "is a dangling symbolic link (to '" + target.string() + "')";
    }
    return "file not found";
  }
  if (error == ENOTDIR) return "file not found";
  return std::string("cannot be examined: ") + std::strerror(error);
}

bool is_regular_path(const fs::path& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_folder_path(const fs::path& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool path_taken(const fs::path& path) noexcept {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<fs::path> folder_entries(const fs::path& dir, std::string* error) {
  std::vector<fs::path> out;
  if (error != nullptr) error->clear();
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  const fs::directory_iterator end;
  while (!ec && it != end) {
    out.push_back(it->path());
    it.increment(ec);
  }
  if (ec && error != nullptr) *error = ec.message();
  return out;
}

int open_regular_file(const fs::path& path, int flags, std::string& why, mode_t mode) {
  why.clear();
  const int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    const int error = errno;
    why = regular_file_problem(path);
    if (why.empty() || why == "file not found") why = std::strerror(error);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int error = errno;
    ::close(fd);
    why = regular_file_problem(path);
    if (why.empty()) why = std::strerror(error != 0 ? error : EINVAL);
    return -1;
  }
  const int status = ::fcntl(fd, F_GETFL);
  if (status >= 0) (void)::fcntl(fd, F_SETFL, status & ~O_NONBLOCK);
  return fd;
}

std::string remove_special_file(const fs::path& path) noexcept {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return {};
  if (::unlink(path.c_str()) != 0) return {};
  return S_ISFIFO(st.st_mode) ? "a FIFO" : "a socket";
}

std::string read_regular_file(const fs::path& path, std::string_view what) {
  std::string why;
  const int fd = open_regular_file(path, O_RDONLY, why);
  if (fd < 0) throw IoError(path.string(), "cannot read " + std::string(what) + ": " + why);
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(path.string(), "cannot read " + std::string(what) + ": " + std::strerror(error));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace omnidp
