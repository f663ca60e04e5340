#include "omnidp/common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace fs = std::filesystem;

fs::path temporary_beside(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  std::string name(1, '.');
  name.append(path.filename().string())
      .append(".tmp-")
      .append(std::to_string(::getpid()))
      .append("-")
      .append(std::to_string(counter++));
  return path.parent_path() / name;
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
  const fs::path tmp = temporary_beside(path);
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw IoError(tmp.string(), "cannot create " + std::string(what));
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out) throw IoError(tmp.string(), "cannot write " + std::string(what));
    }
    if (durability == Durability::synced) fsync_path(tmp);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  rename_into_place(tmp, path, what);
  if (durability == Durability::synced) {
    fsync_path(path.parent_path().empty() ? fs::path(".") : path.parent_path());
  }
}

}  // namespace omnidp
