#include "omnidp/results/result_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/live_table.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::results {
namespace {

// "rank-00003.h5" -> (3, 0); "rank-00003.2.h5" -> (3, 2); anything else -> nullopt.
std::optional<std::pair<int, int>> parse_rank_file_name(const std::string& name) {
  constexpr std::string_view prefix = "rank-";
  constexpr std::string_view suffix = ".h5";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  const std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const auto dot = middle.find('.');
  const std::string rank_part = middle.substr(0, dot);
  const std::string segment_part = dot == std::string::npos ? "0" : middle.substr(dot + 1);
  const auto all_digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(rank_part) || !all_digits(segment_part)) return std::nullopt;
  return std::pair{std::stoi(rank_part), std::stoi(segment_part)};
}

// The live table of `file` when a live writer holds `file` locked and the table exists.
std::optional<std::filesystem::path> live_view_of(const std::filesystem::path& file) {
  if (!is_locked_by_writer(file)) return std::nullopt;
  auto live = live_table_path(file);
  if (!is_regular_path(live)) return std::nullopt;
  return live;
}

int status_order(const StoredRow& row) { return row.record.status == RequestStatus::ok ? 0 : 1; }

// "" when `linked` (a file name an external link of `file` names: results.h5's links into its
// rank files) is a regular file beside `file`, else why its videos cannot be read there.
std::string linked_file_problem(const std::filesystem::path& file, const std::string& linked) {
  const auto target = file.parent_path() / linked;
  const std::string problem = regular_file_problem(target);
  if (problem.empty()) return {};
  return fmt::format(
      "{} {}: {} keeps its videos in the rank files beside it (copy them with it, or "
      "read the output folder)",
      target.string(), problem == "file not found" ? std::string("is missing") : problem,
      file.filename().string());
}

}  // namespace

std::string locked_file_message(const std::filesystem::path& file) {
  (void)file;
  return "is locked by another process (HDF5 file lock: 'unable to lock the file, errno = 11'): "
         "is an earlier run still running on this folder, or are its ranks still exiting? Let "
         "it end (or use another output folder), then run again";
}

std::string live_file_message(const std::filesystem::path& file) {
  return "is being written by a running job (HDF5 file lock) that keeps no live table of its "
         "rows beside it (" +
         live_table_path(file).filename().string() +
         ": an older omni-dp, or its live view failed; see the job's log): it can be read once "
         "that job has ended";
}

bool is_locked_by_writer(const std::filesystem::path& file) {
  std::string why;  // a FIFO named like a rank file must not block the open (issue 52, class 5)
  const int fd = open_regular_file(file, O_RDONLY, why);
  if (fd < 0) return false;
  const bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // also drops our shared lock
  return locked;
}

std::vector<std::filesystem::path> list_rank_files(const std::filesystem::path& dir) {
  if (!is_folder_path(dir)) return {};
  // Every entry named like a rank file, whatever it is (a folder, a FIFO, a link loop or a link
  // to a device is listed too, and its reader names it unreadable; issue 52, class 13). The
  // names alone are read: nothing here follows a link (class 3).
  std::vector<std::tuple<int, int, std::filesystem::path>> found;
  std::string error;
  for (auto& entry : folder_entries(dir, &error)) {
    const auto parsed = parse_rank_file_name(entry.filename().string());
    if (parsed) found.emplace_back(parsed->first, parsed->second, std::move(entry));
  }
  if (!error.empty()) throw IoError(dir.string(), "cannot list the folder: " + error);
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> paths;
  paths.reserve(found.size());
  for (auto& f : found) paths.push_back(std::move(std::get<2>(f)));
  return paths;
}

ResultPaths result_paths(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  ResultPaths out;
  if (is_regular_path(path)) {
    out.files.push_back(path);
    return out;
  }
  if (!is_folder_path(path)) {
    const std::string problem = regular_file_problem(path);
    throw IoError(path.string(), problem == "file not found" ? "no such file or folder"
                                                             : problem + " or a folder");
  }
  const auto of_folder = [](const fs::path& dir) {
    auto files = list_rank_files(dir);
    if (files.empty() && is_regular_path(dir / "results.h5")) files.push_back(dir / "results.h5");
    return files;
  };
  out.files = list_rank_files(path);
  out.folder = !out.files.empty();
  if (out.files.empty()) out.files = of_folder(path);
  if (!out.files.empty()) return out;
  std::vector<fs::path> subfolders;
  for (auto& entry : folder_entries(path)) {
    if (is_folder_path(entry)) subfolders.push_back(std::move(entry));
  }
  std::sort(subfolders.begin(), subfolders.end());
  for (const auto& dir : subfolders) {
    const auto files = of_folder(dir);
    if (files.empty()) continue;
    out.shards.push_back(dir);
    out.files.insert(out.files.end(), files.begin(), files.end());
  }
  if (out.files.empty()) {
    throw IoError(path.string(),
                  "holds neither rank-*.h5 files nor results.h5, nor folders that do (shards)");
  }
  return out;
}

ResultsFileInfo read_file_info(const std::filesystem::path& file) {
  // A live writer's file: its attributes from the live table, which carries them too.
  const auto live = live_view_of(file);
  const h5::File f = live ? open_live_table(*live) : h5::open_file(file.string());
  const hid_t root = f.id();
  ResultsFileInfo info;
  const auto text = [&](const char* name) {
    return h5::has_attribute(root, name) ? h5::read_string_attribute(root, name) : std::string();
  };
  const auto integer = [&](const char* name, std::int64_t fallback) {
    return h5::has_attribute(root, name) ? h5::read_int_attribute(root, name) : fallback;
  };
  info.format = text("format");
  if (info.format != kRankFormat && info.format != kResultsFormat) {
    throw IoError(file.string(),
                  "not an omni-dp results file (root attribute format = '" + info.format + "')");
  }
  info.software_version = text("software_version");
  info.git_revision = text("git_revision");
  info.config_yaml = text("config_yaml");
  if (info.format == kResultsFormat && h5::link_exists(root, "config")) {
    info.config_yaml = h5::read_string_dataset(root, "config");
  }
  info.model = text("model");
  info.world_size = static_cast<int>(integer("world_size", 0));
  info.rank = static_cast<int>(integer("rank", -1));
  info.segment = static_cast<int>(integer("segment", 0));
  info.host = text("host");
  info.device = text("device");
  info.store_video = integer("store_video", 1) != 0;
  info.compression = text("compression");
  info.state = text("state");
  info.created =
      h5::has_attribute(root, "created") ? h5::read_double_attribute(root, "created") : 0.0;
  return info;
}

namespace {

// Opens `file` and hands its rows to `fn`; `reserve` first gets the number of rows.
void stored_rows(const std::filesystem::path& file, std::size_t file_order, bool ignore_lock,
                 bool rehash, const std::function<void(std::size_t)>& reserve,
                 const std::function<void(StoredRow&&)>& fn) {
  const h5::File f = h5::open_file(file.string(), false, !ignore_lock);
  const hid_t root = f.id();
  const bool store_video =
      !h5::has_attribute(root, "store_video") || h5::read_int_attribute(root, "store_video") != 0;
  const bool has_videos = h5::link_exists(root, kVideosPath);
  const h5::Dataset table = h5::open_dataset(root, kRequestsPath);
  if (reserve) reserve(static_cast<std::size_t>(h5::dataset_dims(table).at(0)));
  // The files results.h5's videos link into -> why they cannot be opened ("" when they can):
  // HDF5 would follow a link into a FIFO and block (issue 52, class 5).
  std::map<std::string, std::string> linked_problems;
  for_each_request(table, [&](ResultRecord&& record) {
    StoredRow row;
    row.file = file;
    row.file_order = file_order;
    row.video_expected = store_video && record.status == RequestStatus::ok;
    row.video_present = has_videos && h5::link_exists(root, video_path(record.id));
    if (row.video_present && record.status == RequestStatus::ok) {
      // A video whose data never reached the disk (a full disk at its close) is not there.
      try {
        if (const auto linked = h5::external_link_file(root, video_path(record.id))) {
          auto at = linked_problems.find(*linked);
          if (at == linked_problems.end()) {
            at = linked_problems.emplace(*linked, linked_file_problem(file, *linked)).first;
          }
          if (!at->second.empty()) throw Error(ErrorKind::io, at->second);
        }
        check_stored_video(root, record);
        if (rehash) {
          const std::string actual = hash_stored_video(root, record.id);
          if (actual != record.video_sha256) {
            throw Error(ErrorKind::io, stored_hash_mismatch(record.video_sha256, actual));
          }
        }
      } catch (const Error& e) {
        row.video_present = false;
        row.video_error = video_read_error(file, e.what());
      }
    }
    row.record = std::move(record);
    fn(std::move(row));
  });
}

}  // namespace

std::string video_read_error(const std::filesystem::path& file, const std::string& what) {
  static constexpr std::string_view kMarker = "external link file name = '";
  const auto at = what.find(kMarker);
  if (at == std::string::npos) return what;
  const auto start = at + kMarker.size();
  const auto end = what.find('\'', start);
  if (end == std::string::npos) return what;
  const std::string problem = linked_file_problem(file, what.substr(start, end - start));
  return problem.empty() ? what : problem;
}

std::string stored_hash_mismatch(const std::string& recorded, const std::string& actual) {
  return "the stored video does not match its recorded video_sha256 " + recorded +
         " (its frames hash to " + actual + ")";
}

std::vector<StoredRow> read_stored_rows(const std::filesystem::path& file, std::size_t file_order,
                                        bool ignore_lock, bool rehash) {
  std::vector<StoredRow> rows;
  stored_rows(
      file, file_order, ignore_lock, rehash, [&rows](std::size_t n) { rows.reserve(n); },
      [&rows](StoredRow&& row) { rows.push_back(std::move(row)); });
  return rows;
}

void for_each_stored_row(const std::filesystem::path& file, std::size_t file_order,
                         bool ignore_lock, const std::function<void(StoredRow&&)>& fn, bool rehash) {
  stored_rows(file, file_order, ignore_lock, rehash, {}, fn);
}

FilesRows read_rows_skipping_unreadable(const std::vector<std::filesystem::path>& files,
                                        const std::string& who) {
  FilesRows out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    // A live job's file: its rows so far from the live table (SWMR), videos not yet.
    if (is_locked_by_writer(file)) {
      const auto live = live_table_path(file);
      if (!is_regular_path(live)) {
        throw InputError(file.string(), live_file_message(file));
      }
      std::vector<ResultRecord> records;
      try {
        records = read_live_table(live);
      } catch (const Hdf5Error& e) {
        throw InputError(file.string(),
                         live_file_message(file) + " (its live table: " + e.message() + ")");
      }
      for (auto& record : records) {
        StoredRow row;
        row.record = std::move(record);
        row.file = file;
        row.file_order = i;
        row.live = true;
        out.rows.push_back(std::move(row));
      }
      out.read.push_back(file);
      out.live.push_back(file);
      continue;
    }
    if (files.size() == 1) {
      out.rows = read_stored_rows(file, i);
      out.read.push_back(file);
      break;
    }
    try {
      auto part = read_stored_rows(file, i);
      out.rows.insert(out.rows.end(), std::make_move_iterator(part.begin()),
                      std::make_move_iterator(part.end()));
      out.read.push_back(file);
    } catch (const Error& e) {
      if (is_locked_by_writer(file)) throw InputError(file.string(), live_file_message(file));
      log_warn(who + ": skipping unreadable " + file.string() + ": " + e.what());
      out.unreadable.push_back(file);
    }
  }
  if (out.read.empty() && !files.empty()) {
    throw IoError(files.front().parent_path().string(),
                  fmt::format("no readable results file ({} unreadable)", out.unreadable.size()));
  }
  return out;
}

std::vector<StoredRow> select_rows(std::vector<StoredRow> rows, std::size_t* dropped,
                                   std::size_t* without_video) {
  const std::size_t read = rows.size();
  std::erase_if(rows, [](const StoredRow& r) { return r.video_expected && !r.video_present; });
  if (without_video != nullptr) *without_video = read - rows.size();
  const std::size_t before = rows.size();
  // Best row of an id first: a stable sort of indices (rows are large; their temporary copies
  // would double the memory of a 10^6-row merge), then the permutation applied in place.
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&rows](std::size_t i, std::size_t j) {
    const StoredRow& a = rows[i];
    const StoredRow& b = rows[j];
    if (a.record.id != b.record.id) return a.record.id < b.record.id;
    if (status_order(a) != status_order(b)) return status_order(a) < status_order(b);
    if (a.record.end_time != b.record.end_time) return a.record.end_time > b.record.end_time;
    if (a.record.attempt != b.record.attempt) return a.record.attempt > b.record.attempt;
    return a.file_order > b.file_order;
  });
  // Position k receives rows[order[k]]: follow each cycle once (order[k] = k marks it done).
  for (std::size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    StoredRow held = std::move(rows[start]);
    std::size_t k = start;
    for (;;) {
      const std::size_t from = order[k];
      order[k] = k;
      if (from == start) {
        rows[k] = std::move(held);
        break;
      }
      rows[k] = std::move(rows[from]);
      k = from;
    }
  }
  const auto last = std::unique(rows.begin(), rows.end(), [](const StoredRow& a, const StoredRow& b) {
    return a.record.id == b.record.id;
  });
  rows.erase(last, rows.end());
  if (dropped != nullptr) *dropped = before - rows.size();
  return rows;
}

}  // namespace omnidp::results
