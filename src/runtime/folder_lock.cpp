#include "omnidp/runtime/folder_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <system_error>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace fs = std::filesystem;

fs::path OutputFolderLock::lock_path(const fs::path& dir) { return dir / ".omnidp-job.lock"; }

OutputFolderLock::OutputFolderLock(const fs::path& dir, const std::string& host, bool exclusive)
    : dir_(dir) {
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    created_ = fs::create_directories(dir_, ec);
    if (ec) throw IoError(dir_.string(), "cannot create the output folder: " + ec.message());
  }
  const fs::path path = lock_path(dir_);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) {
    throw IoError(path.string(),
                  std::string("cannot open the output folder's job lock: ") + std::strerror(errno));
  }
  if (exclusive && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[256] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : std::string();
    while (!who.empty() && (who.back() == '\n' || who.back() == '\r')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw InputError(dir_.string(),
                       "the output folder is in use by another omni-dp-batch job (" +
                           (who.empty() ? std::string("its lock holder is not named") : who) +
                           "): two jobs on one folder would both generate every request; let "
                           "it end, or give this job another output.dir");
    }
    throw IoError(path.string(), std::string("cannot lock the output folder: ") + std::strerror(err));
  }
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  if (dir_fd_ < 0 || ::fstat(dir_fd_, &st) != 0) {
    throw IoError(dir_.string(),
                  std::string("cannot stat the output folder: ") + std::strerror(errno));
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char since[32];
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string text = fmt::format("pid {} on {} since {}\n", ::getpid(), host, since);
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, text.data(), text.size(), 0);
}

OutputFolderLock::~OutputFolderLock() {
  if (fd_ < 0) return;
  if (created_ && folder_is_there()) {
    // A job that stopped before any output (a model that failed to load) leaves no folder.
    std::error_code ec;
    bool only_the_lock = true;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      if (entry.path().filename() != lock_path(dir_).filename()) only_the_lock = false;
    }
    if (!ec && only_the_lock) {
      ::unlink(lock_path(dir_).c_str());
      ::rmdir(dir_.c_str());
    }
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
  ::close(fd_);
}

bool OutputFolderLock::folder_is_there() const noexcept {
  struct stat st {};
  return ::stat(dir_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

void OutputFolderLock::check_folder() const {
  if (folder_is_there()) return;
  throw RuntimeError("the output folder " + dir_.string() +
                     " was removed or renamed during the run (it is no longer the folder the "
                     "job started in): the rank files written since went with it; nothing is "
                     "merged. Put the folder back (or rename it back) and run again to resume, "
                     "or run again to start afresh in a new one");
}

}  // namespace omnidp::runtime
