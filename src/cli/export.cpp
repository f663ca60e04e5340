#include "omnidp/cli/export.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/error_text.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/common/video.hpp"
#include "omnidp/export/stored_results.hpp"
#include "omnidp/export/video_export.hpp"

namespace omnidp::cli {
namespace {

constexpr const char* kProgram = "omni-dp-export";
namespace vx = omnidp::video_export;

// The rows to export, and what was not exported and why.
struct Selection {
  std::vector<const results::StoredRow*> chosen;
  std::size_t missing = 0;   // --ids entries that cannot be exported (each named on stderr)
  std::size_t live = 0;      // ok rows of a rank file a running job writes (not readable yet)
  std::size_t failed = 0;    // without --ids: failed requests (nothing to export)
  std::size_t no_video = 0;  // without --ids: ok rows stored without a video
};

// Every ok row with a stored video, or exactly the ids asked for (one line on stderr for each
// that cannot be exported). Without --ids an ok row whose video cannot be read yet (a running
// job's) is not exported either: counted in `live` and in the total, so the summary says so.
Selection select(const vx::StoredRun& run, const std::vector<std::string>& ids) {
  Selection s;
  if (ids.empty()) {
    for (const auto& row : run.rows) {
      if (row.record.status != RequestStatus::ok) {
        ++s.failed;
      } else if (row.live) {
        ++s.live;
      } else if (!row.video_present) {
        ++s.no_video;
      } else {
        s.chosen.push_back(&row);
      }
    }
    return s;
  }
  std::map<std::string, const results::StoredRow*> by_id;
  for (const auto& row : run.rows) by_id.emplace(row.record.id, &row);
  for (const auto& id : ids) {
    const auto it = by_id.find(id);
    std::string why;
    if (it == by_id.end()) {
      why = "no such request in " + run.source;
    } else if (it->second->record.status != RequestStatus::ok) {
      why = "the request failed: " + it->second->record.error;
    } else if (it->second->live) {
      why =
          "its rank file is being written by a running job: the video can be read once that "
          "job has ended";
    } else if (!it->second->video_present) {
      why = "no stored video (output.store_video was off)";
    } else {
      s.chosen.push_back(it->second);
      continue;
    }
    std::cerr << kProgram << ": skipped '" << one_line(id) << "': " << one_line(why) << "\n";
    ++s.missing;
  }
  return s;
}

// The ids of --ids (comma-separated), --id (one id each, as given: commas included) and
// --ids-file (one id a line), in that order, each once. IoError when the file cannot be read.
std::vector<std::string> wanted_ids(const std::vector<std::string>& listed,
                                    const std::vector<std::string>& single, const std::string& file) {
  std::vector<std::string> ids = listed;
  ids.insert(ids.end(), single.begin(), single.end());
  if (!file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
      throw UsageError(
          "--ids-file: '" + file + "' " +
          (std::filesystem::exists(file, ec) ? "is not a regular file" : "does not exist"));
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UsageError("--ids-file: cannot read '" + file + "': " + std::strerror(errno));
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();  // a file written on Windows
      if (!line.empty()) ids.push_back(line);
    }
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (auto& id : ids) {
    if (seen.insert(id).second) unique.push_back(std::move(id));
  }
  return unique;
}

// "; 2 not exported: ..." for each reason a row was not exported, "" when none.
std::string not_exported(const Selection& s, std::size_t damaged) {
  std::string out;
  if (s.live > 0) {
    out += fmt::format(
        "; {} ok row(s) not exported: a running job is writing their rank file (their videos can "
        "be read once that job has ended)",
        s.live);
  }
  if (damaged > 0) {
    out += fmt::format("; {} damaged (the stored video does not match its video_sha256)", damaged);
  }
  if (s.missing > 0)
    out += fmt::format("; {} --ids entr{} skipped (named above)", s.missing,
                       s.missing == 1 ? "y" : "ies");
  if (s.failed > 0) out += fmt::format("; {} failed request(s) have no video", s.failed);
  if (s.no_video > 0) {
    out += fmt::format("; {} ok row(s) were stored without a video (output.store_video off)",
                       s.no_video);
  }
  return out;
}

}  // namespace

int export_main(int argc, char** argv) {
  CLI::App app{
      "Writes the stored videos of a run as MP4 (H.264), PNG frames or animated GIF, at "
      "each request's fps. Every stored video is re-hashed: one that does not match its "
      "row's video_sha256 is not exported. Exit 0 when every selected video was written, 1 "
      "when some could not be (missing, failed or damaged), 2 on usage or read errors.",
      kProgram};
  std::string input;
  std::string format_name;
  std::string out_dir;
  std::vector<std::string> ids;
  std::vector<std::string> single_ids;
  std::string ids_file;
  app.add_option("RESULTS", input, "a results.h5, a rank file, or an output folder")->required();
  app.add_option("--format", format_name, "mp4 | png | gif")
      ->required()
      ->check(CLI::IsMember({"mp4", "png", "gif"}));
  app.add_option("--out", out_dir, "folder to write into (created)")->required();
  app.add_option("--ids", ids, "only these request ids (comma-separated; repeatable)")
      ->delimiter(',')
      ->type_name("ID,...");
  app.add_option("--id", single_ids,
                 "only this request id, exactly as given (commas included); "
                 "repeatable")
      ->type_name("ID")
      ->allow_extra_args(false);
  app.add_option("--ids-file", ids_file, "only the request ids of FILE, one a line, exactly")
      ->type_name("FILE");
  app.set_version_flag("--version", version_line());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  const vx::ExportFormat format = *vx::parse_export_format(format_name);
  if (format != vx::ExportFormat::png && !vx::ffmpeg_available()) {
    std::cerr << vx::ffmpeg_missing_message(kProgram) << "\n";
    return static_cast<int>(ExitCode::usage);
  }
  try {
    const std::vector<std::string> wanted = wanted_ids(ids, single_ids, ids_file);
    const vx::StoredRun run = vx::read_stored_run(input);
    const Selection selection = select(run, wanted);
    std::size_t damaged = 0;
    std::size_t exported = 0;
    for (const auto* row : selection.chosen) {
      const vx::StoredVideo stored = vx::read_stored_video(row->file, row->record.id);
      // Every frame was read: re-hashed, a damaged video is refused, not passed on (issue 39,
      // class 9).
      if (const std::string actual = video_sha256(stored.video); actual != row->record.video_sha256) {
        std::cerr << kProgram << ": skipped '" << one_line(row->record.id)
                  << "': " << row->file.string() << ": "
                  << results::stored_hash_mismatch(row->record.video_sha256, actual)
                  << "; not exported (omni-dp-batch --verify generates it again)\n";
        ++damaged;
        continue;
      }
      ++exported;
      const auto path = vx::export_video(stored.video, stored.fps, format, out_dir, row->record.id);
      std::cout << one_line(row->record.id) << " -> " << path.string() << " ("
                << stored.video.frames << " frames, " << stored.video.width << "x"
                << stored.video.height << ", " << stored.fps << " fps)\n";
    }
    // The total counts every video asked for (all ok rows, or the --ids), and says why each
    // one not exported was not (issue 52, class 15: a live folder said "exported 0 of 0").
    const std::size_t missing = selection.missing + selection.live + damaged;
    std::cout << "exported " << exported << " of " << exported + missing << " video(s) as "
              << format_name << " to " << out_dir << not_exported(selection, damaged) << "\n"
              << std::flush;
    return missing == 0 ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << kProgram << ": " << one_line(e.what()) << "\n";
    return static_cast<int>(ExitCode::usage);
  }
}

}  // namespace omnidp::cli
