#include "omnidp/results/merge.hpp"
#include "omnidp/common/atomic_file.hpp"
#include "omnidp/results/resume.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/results/summary_group.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::results {
namespace {}  // namespace

MergeResult merge_directory(const std::filesystem::path& dir, const RunSummary* summary,
                            const std::string& config_yaml) {
  const auto files = list_rank_files(dir);
  if (files.empty()) throw InputError(dir.string(), "no rank-*.h5 files to merge");

  MergeResult result;
  result.path = dir / "results.h5";
  std::vector<StoredRow> all;
  ResultsFileInfo newest;
  bool any_store_video = false;
  int world_size = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    try {
      const ResultsFileInfo info = read_file_info(file);
      auto rows = read_stored_rows(file, i);
      for (const auto& row : rows) {
        if (row.video_error.empty()) continue;
        log_warn("merge: " + file.string() + ": not using the row of request '" + row.record.id +
                 "': its video cannot be read back (" + row.video_error + ")");
      }
      if (newest.format.empty() || info.created >= newest.created) newest = info;
      any_store_video = any_store_video || info.store_video;
      world_size = std::max(world_size, info.world_size);
      if (all.empty()) {
        all = std::move(rows);  // no second copy of a single file's rows
      } else {
        all.insert(all.end(), std::make_move_iterator(rows.begin()),
                   std::make_move_iterator(rows.end()));
      }
      result.rank_files.push_back(file.filename().string());
    } catch (const Error& e) {
      if (is_locked_by_writer(file)) {
        throw InputError(file.string(), locked_file_message(file));
      }
      log_warn("merge: skipping unreadable " + file.string() + ": " + e.what());
      result.unreadable_files.push_back(file.filename().string());
    }
  }
  if (result.rank_files.empty()) throw IoError(dir.string(), "no readable rank file to merge");

  const auto selected =
      select_rows(std::move(all), &result.duplicates_dropped, &result.rows_without_video);
  result.rows = selected.size();

  // The figures describe the rows merged, or they are recomputed from them (docs/results.md,
  // "Figures"): a resumed segment's figures, or an earlier run's summary.json, do not.
  std::size_t ok_rows = 0;
  for (const auto& row : selected) ok_rows += row.record.status == RequestStatus::ok ? 1 : 0;
  const std::size_t failed_rows = selected.size() - ok_rows;
  std::vector<std::filesystem::path> read_files;
  for (const auto& name : result.rank_files) read_files.push_back(dir / name);
  RunSummary figures;
  const auto summary_json = dir / "summary.json";
  if (summary != nullptr && figures_cover_rows(*summary, ok_rows, failed_rows)) {
    figures = *summary;
    result.summary_source = "runtime";
  } else if (const auto stored =
                 summary == nullptr
                     ? usable_summary_json(summary_json, read_files, ok_rows, failed_rows, "merge")
                     : std::nullopt) {
    figures = *stored;
    result.summary_source = "summary.json";
  } else {
    std::vector<ResultRecord> records;  // only here: a copy of every row
    records.reserve(selected.size());
    for (const auto& row : selected) records.push_back(row.record);
    figures = recompute_summary(records, rank_layout(newest.config_yaml, world_size));
    if (summary != nullptr) {  // the last segment's settings, and whether it was interrupted
      figures.policy = summary->policy;
      figures.order = summary->order;
      figures.interrupted = summary->interrupted;
    }
    result.summary_source = "recomputed";
  }

  if (const std::string was = remove_special_file(result.path); !was.empty()) {
    log_warn("merge: " + result.path.string() + " was " + was +
             ", not a regular file: replaced by the merged results");
  }
  const auto target = replacement_target(result.path, "the merged results");
  const auto tmp = temporary_beside(target);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  // A folder that cannot take the file: one line naming results.h5 and errno's reason.
  create_temporary(tmp, result.path, "the merged results");
  try {
    h5::File file = h5::create_file(tmp.string(), true);
    const hid_t root = file.id();
    h5::write_attribute(root, "format", std::string_view(kResultsFormat));
    h5::write_attribute(root, "software_version", std::string_view(version()));
    h5::write_attribute(root, "git_revision", std::string_view(git_revision()));
    h5::write_attribute(root, "hdf5_version", std::string_view(H5_VERS_INFO));
    h5::write_attribute(root, "model", newest.model);
    h5::write_attribute(root, "world_size", static_cast<std::int64_t>(world_size));
    h5::write_attribute(root, "store_video", static_cast<std::int64_t>(any_store_video ? 1 : 0));
    h5::write_attribute(
        root, "created",
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    h5::write_attribute(root, "rank_files", result.rank_files);
    h5::write_attribute(root, "unreadable_files", result.unreadable_files);
    h5::write_attribute(root, "duplicates_dropped",
                        static_cast<std::int64_t>(result.duplicates_dropped));
    h5::write_attribute(root, "rows_without_video",
                        static_cast<std::int64_t>(result.rows_without_video));
    {
      // Copied a block at a time (the rows are already in memory once, as `selected`).
      h5::Dataset table = create_requests_table(root, kRequestsPath);
      constexpr std::size_t kBlock = 65536;
      std::vector<ResultRecord> block;
      block.reserve(std::min(kBlock, selected.size()));
      for (std::size_t at = 0; at < selected.size(); at += kBlock) {
        block.clear();
        const std::size_t end = std::min(selected.size(), at + kBlock);
        for (std::size_t i = at; i < end; ++i) block.push_back(selected[i].record);
        append_requests(table, block);
      }
      table.close();
    }
    if (any_store_video) {
      const h5::Group videos = h5::create_group(root, kVideosPath);
      const h5::PropList lcpl = h5::link_create_utf8(false);
      for (const auto& row : selected) {
        if (!row.video_present) continue;
        const std::string target_file = row.file.filename().string();
        const std::string video = video_path(row.record.id);
        const std::string name = escape_link_name(row.record.id);
        h5::call("H5Lcreate_external", video, [&] {
          return H5Lcreate_external(target_file.c_str(), video.c_str(), videos.id(), name.c_str(),
                                    lcpl.id(), H5P_DEFAULT);
        });
      }
    }
    write_summary_group(root, figures, result.summary_source);
    h5::write_string_dataset(root, "config", config_yaml.empty() ? newest.config_yaml : config_yaml);
    h5::call("H5Fflush", tmp.string(), [&] { return H5Fflush(root, H5F_SCOPE_LOCAL); });
    file.close();
    fsync_path(tmp);
    rename_into_place(tmp, target, "the merged results");
    fsync_path(target.parent_path());
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  log_info(fmt::format("merge: {}: {} requests from {} rank files", result.path.string(),
                       result.rows, result.rank_files.size()));
  return result;
}

}  // namespace omnidp::results
