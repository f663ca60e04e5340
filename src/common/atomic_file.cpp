#include "omnidp/common/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"

namespace omnidp {
namespace fs = std::filesystem;

namespace {

// bytes to an open stream, closed and checked: "cannot write <what>: <reason>" naming `shown`.
void write_checked(std::ofstream& out, std::string_view bytes, const fs::path& shown,
                   std::string_view what) {
  errno = 0;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    throw IoError(shown.string(), "cannot write " + std::string(what) +
                                      (errno != 0 ? ": " + std::string(std::strerror(errno)) : ""));
  }
}

}  // namespace

fs::path replacement_target(const fs::path& path, std::string_view what) {
  std::error_code ec;  // a missing path is a new one
  fs::path target = path;
  // Each link in turn (its file may not exist yet: weakly_canonical would stop at the link).
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    const fs::path next = fs::read_symlink(target, ec);
    if (ec || hops == 40) {
      throw IoError(path.string(), "cannot resolve the link: " +
                                       (ec ? ec.message() : std::string("too many levels")));
    }
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  const auto status = fs::status(target, ec);
  // A link of /proc (/proc/self/fd/1, /dev/stdout) leads to "pipe:[123]", no path: what it
  // opens is what the user's path names.
  const auto opened = fs::status(path, ec);
  if (!fs::exists(status) && fs::exists(opened)) {
    throw IoError(path.string(),
                  std::string(what) + " goes to a regular file or a new path, not " +
                      (fs::is_regular_file(opened)
                           ? "a file without a path ('" + target.filename().string() + "')"
                           : std::string(file_kind(opened.type()))));
  }
  if (!fs::exists(status) || fs::is_regular_file(status)) return target;
  throw IoError(path.string(), std::string(what) + " goes to a regular file or a new path, not " +
                                   file_kind(status.type()));
}

void create_temporary(const fs::path& tmp, const fs::path& path, std::string_view what) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int saved = errno;
    const fs::path folder = tmp.parent_path().empty() ? fs::path(".") : tmp.parent_path();
    throw IoError(path.string(), fmt::format("cannot create {}: {} (creating a file in '{}')", what,
                                             std::strerror(saved), folder.string()));
  }
  ::close(fd);
}

fs::path temporary_beside(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.parent_path() /
         fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
}

void rename_into_place(const fs::path& tmp, const fs::path& path, std::string_view what) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (!ec) return;
  std::error_code ignored;
  fs::remove(tmp, ignored);
  throw IoError(path.string(), "cannot rename " + std::string(what) + " into place: " + ec.message());
}

void fsync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path.string(), std::string("cannot open: ") + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) throw IoError(path.string(), std::string("fsync failed: ") + std::strerror(saved));
}

void write_file_atomically(const fs::path& path, std::string_view bytes, std::string_view what,
                           Durability durability) {
  std::error_code ec;
  if (fs::is_character_file(fs::status(path, ec))) {  // /dev/null, /dev/stdout: in place
    errno = 0;
    std::ofstream out(path, std::ios::binary);
    if (!out) {
      throw IoError(path.string(), "cannot open " + std::string(what) +
                                       (errno != 0 ? ": " + std::string(std::strerror(errno)) : ""));
    }
    write_checked(out, bytes, path, what);
    return;
  }
  const fs::path target = replacement_target(path, what);
  const fs::path tmp = temporary_beside(target);
  try {
    create_temporary(tmp, path, what);
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw IoError(path.string(), "cannot create " + std::string(what));
      write_checked(out, bytes, path, what);
    }
    if (durability == Durability::synced) fsync_path(tmp);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  rename_into_place(tmp, target, what);
  if (durability == Durability::synced) {
    fsync_path(target.parent_path().empty() ? fs::path(".") : target.parent_path());
  }
}

}  // namespace omnidp
