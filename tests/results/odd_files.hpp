#pragma once
// The members of the class "not a regular file" (issue 52, classes 3, 5 and 13): what a results
// folder may hold under a file's name instead of the file, and the words every reader names
// each by (common/file_kind.hpp's regular_file_problem).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

namespace omnidp::results::testing {

enum class Odd { link_loop, dangling_link, link_to_folder, link_to_dev_zero, fifo, folder };

inline std::vector<Odd> odd_kinds() {
  return {Odd::link_loop,        Odd::dangling_link, Odd::link_to_folder,
          Odd::link_to_dev_zero, Odd::fifo,          Odd::folder};
}

inline const char* odd_name(Odd kind) {
  switch (kind) {
    case Odd::link_loop: return "a link loop";
    case Odd::dangling_link: return "a dangling link";
    case Odd::link_to_folder: return "a link to a folder";
    case Odd::link_to_dev_zero: return "a link to /dev/zero";
    case Odd::fifo: return "a FIFO";
    case Odd::folder: return "a folder";
  }
  return "?";
}

// What a reader says of it (after the path).
inline std::string odd_problem(Odd kind) {
  switch (kind) {
    case Odd::link_loop: return "is a symbolic link loop (too many levels of symbolic links)";
    case Odd::dangling_link: return "is a dangling symbolic link (to 'nowhere')";
    case Odd::link_to_folder:
    case Odd::folder: return "is a folder, not a regular file";
    case Odd::link_to_dev_zero: return "is a character device, not a regular file";
    case Odd::fifo: return "is a FIFO, not a regular file";
  }
  return "?";
}

// Creates `kind` at `path` (a gtest failure where it cannot).
inline void make_odd(const std::filesystem::path& path, Odd kind) {
  namespace fs = std::filesystem;
  switch (kind) {
    case Odd::link_loop: fs::create_symlink(path.filename(), path); break;
    case Odd::dangling_link: fs::create_symlink("nowhere", path); break;
    case Odd::link_to_folder: fs::create_symlink(fs::temp_directory_path(), path); break;
    case Odd::link_to_dev_zero: fs::create_symlink("/dev/zero", path); break;
    case Odd::fifo: ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path; break;
    case Odd::folder: fs::create_directories(path); break;
  }
}

// Occurrences of `what` in `text`.
inline std::size_t occurrences_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace omnidp::results::testing
