#include "omnidp/export/stored_results.hpp"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/results/summary_group.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;
namespace h5 = results::h5;

std::vector<ResultRecord> records_of(const std::vector<results::StoredRow>& rows) {
  std::vector<ResultRecord> records;
  records.reserve(rows.size());
  for (const auto& row : rows) records.push_back(row.record);
  return records;
}

}  // namespace

StoredRun read_stored_run(const fs::path& path) {
  StoredRun run;
  run.source = path.string();
  results::ResultPaths paths = results::result_paths(path);
  const bool folder_of_rank_files = paths.folder;
  run.files = std::move(paths.files);
  run.shards = std::move(paths.shards);

  results::FilesRows read = results::read_rows_skipping_unreadable(run.files, "read");
  run.files = std::move(read.read);
  run.unreadable_files = std::move(read.unreadable);
  run.live_files = std::move(read.live);
  for (const auto& file : run.live_files) {
    log_warn("read: " + file.string() +
             " is being written by a running job: its rows so far come from its live table, "
             "its videos can be read once the job has ended");
  }
  run.info = results::read_file_info(run.files.front());
  // One warning per file and reason (a results.h5 copied alone: every video, one reason).
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> unreadable;
  for (const auto& row : read.rows) {
    if (row.video_error.empty()) continue;
    unreadable[{row.file.string(), row.video_error}].push_back(row.record.id);
  }
  for (const auto& [where, ids] : unreadable) {
    const std::string named = ids.size() == 1
                                  ? "request '" + ids.front() + "'"
                                  : fmt::format("{} requests ('{}', ...)", ids.size(), ids.front());
    log_warn(fmt::format("read: {}: not using the row{} of {}: {} cannot be read back ({})",
                         where.first, ids.size() == 1 ? "" : "s", named,
                         ids.size() == 1 ? "its video" : "their videos", where.second));
  }
  run.rows =
      results::select_rows(std::move(read.rows), &run.duplicates_dropped, &run.rows_without_video);

  // One merged results.h5 carries its figures; several shards' are recomputed from their rows.
  const bool merged = run.info.format == results::kResultsFormat && run.files.size() == 1;
  if (merged) {
    const h5::File f = h5::open_file(run.files.front().string());
    if (h5::link_exists(f.id(), "summary")) {
      run.summary = results::read_summary_group(f.id(), run.summary_source);
      return run;
    }
  }
  // Figures that describe these rows, else recomputed from them (docs/results.md, "Figures").
  std::size_t ok_rows = 0;
  for (const auto& row : run.rows) ok_rows += row.record.status == RequestStatus::ok ? 1 : 0;
  const std::size_t failed_rows = run.rows.size() - ok_rows;
  const auto stored = folder_of_rank_files
                          ? results::usable_summary_json(path / "summary.json", run.files, ok_rows,
                                                         failed_rows, "read")
                          : std::nullopt;
  if (stored) {
    run.summary = *stored;
    run.summary_source = "summary.json";
  } else {
    const auto records = records_of(run.rows);
    run.summary = results::recompute_summary(
        records, results::rank_layout(run.info.config_yaml, std::max(run.info.world_size, 1)));
    run.summary_source = "recomputed";
  }
  return run;
}

StoredVideo read_stored_video(const fs::path& file, std::string_view id) {
  const h5::File f = h5::open_file(file.string());
  StoredVideo out;
  const results::VideoAttributes attributes = results::read_video_attributes(f.id(), id);
  out.fps = attributes.fps;
  out.prompt = attributes.prompt;
  out.seed = attributes.seed;
  out.video = results::read_video(f.id(), id);
  return out;
}

std::vector<std::string> describe_adapters(const StoredRun& run) {
  std::map<std::string, std::size_t> job_sets;
  std::map<std::string, std::size_t> line_sets;
  for (const auto& row : run.rows) {
    const auto items = parse_numerics(row.record.numerics);
    if (const auto it = items.find("lora"); it != items.end()) ++job_sets[it->second];
    if (const auto it = items.find("lora_line"); it != items.end()) ++line_sets[it->second];
  }
  std::vector<std::string> out;
  if (job_sets.empty() && line_sets.empty()) return out;
  std::string first =
      job_sets.empty() ? std::string("none for the job") : "job " + job_sets.begin()->first;
  if (job_sets.size() > 1) first += fmt::format(" (and {} other job set(s))", job_sets.size() - 1);
  out.push_back(first + fmt::format("; {} manifest set(s)", line_sets.size()));
  for (const auto& [set, rows] : line_sets) {
    out.push_back(fmt::format("{} ({} row{})", set, rows, rows == 1 ? "" : "s"));
  }
  return out;
}

}  // namespace omnidp::video_export
