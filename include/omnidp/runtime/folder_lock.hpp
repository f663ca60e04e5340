#pragma once
// The output folder's job lock (issue 52, class 9: two jobs started at once on one folder both
// generated every request, then one failed at the merge; a folder deleted or renamed during the
// run ended with "no rank-*.h5 files to merge" after every request was generated). Rank 0 takes
// an exclusive flock on <dir>/.omnidp-job.lock before it reads the folder or hands out any work
// and holds it for the job's life; a second job fails at once (exit 2) naming the holder. The
// folder's identity (device, inode) is recorded then, and a folder that no longer is the one the
// job started in (removed, renamed, replaced) is a clear error (exit 1).
// One owner thread (the coordinator's).

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace omnidp::runtime {

class OutputFolderLock {
 public:
  // Creates `dir` when missing (then removed again at destruction if nothing else was put in
  // it), takes the lock (unless !exclusive: output.file_locking off, a file system where flock
  // fails or hangs; the folder's identity is still checked) and writes "pid <pid> on <host> since
  // <UTC time>" into the lock file. Throws InputError (exit 2) when another process holds it,
  // IoError when the folder or the lock file cannot be made.
  OutputFolderLock(const std::filesystem::path& dir, const std::string& host, bool exclusive);
  ~OutputFolderLock();
  OutputFolderLock(const OutputFolderLock&) = delete;
  OutputFolderLock& operator=(const OutputFolderLock&) = delete;

  // Throws RuntimeError (exit 1) when `dir` is no longer the folder the lock was taken in.
  void check_folder() const;
  // Whether it still is (no throw).
  [[nodiscard]] bool folder_is_there() const noexcept;

  [[nodiscard]] static std::filesystem::path lock_path(const std::filesystem::path& dir);

 private:
  std::filesystem::path dir_;
  int fd_ = -1;
  int dir_fd_ = -1;  // held open: a removed folder's inode is not reused by a new one meanwhile
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool created_ = false;
};

}  // namespace omnidp::runtime
