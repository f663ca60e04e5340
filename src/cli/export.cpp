#include "omnidp/cli/export.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/common/video.hpp"
#include "omnidp/export/stored_results.hpp"
#include "omnidp/export/video_export.hpp"

namespace omnidp::cli {
namespace {

constexpr const char* kProgram = "omni-dp-export";
namespace vx = omnidp::video_export;

// The rows to export: every ok row with a stored video, or exactly the ids asked for.
// Returns the number of ids that cannot be exported (printed to stderr).
std::size_t select(const vx::StoredRun& run, const std::vector<std::string>& ids,
                   std::vector<const results::StoredRow*>& chosen) {
  std::size_t missing = 0;
  if (ids.empty()) {
    for (const auto& row : run.rows) {
      if (row.record.status == RequestStatus::ok && row.video_present) chosen.push_back(&row);
    }
    return 0;
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
      chosen.push_back(it->second);
      continue;
    }
    std::cerr << kProgram << ": skipped '" << id << "': " << why << "\n";
    ++missing;
  }
  return missing;
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
  app.add_option("RESULTS", input, "a results.h5, a rank file, or an output folder")->required();
  app.add_option("--format", format_name, "mp4 | png | gif")
      ->required()
      ->check(CLI::IsMember({"mp4", "png", "gif"}));
  app.add_option("--out", out_dir, "folder to write into (created)")->required();
  app.add_option("--ids", ids, "only these request ids (comma-separated)")->delimiter(',');
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
    const vx::StoredRun run = vx::read_stored_run(input);
    std::vector<const results::StoredRow*> chosen;
    std::size_t missing = select(run, ids, chosen);
    std::size_t exported = 0;
    for (const auto* row : chosen) {
      const vx::StoredVideo stored = vx::read_stored_video(row->file, row->record.id);
      // Every frame was read: re-hashed, a damaged video is refused, not passed on (issue 39,
      // class 9).
      if (const std::string actual = video_sha256(stored.video); actual != row->record.video_sha256) {
        std::cerr << kProgram << ": skipped '" << row->record.id << "': " << row->file.string()
                  << ": " << results::stored_hash_mismatch(row->record.video_sha256, actual)
                  << "; not exported (omni-dp-batch --verify generates it again)\n";
        ++missing;
        continue;
      }
      ++exported;
      const auto path = vx::export_video(stored.video, stored.fps, format, out_dir, row->record.id);
      std::cout << row->record.id << " -> " << path.string() << " (" << stored.video.frames
                << " frames, " << stored.video.width << "x" << stored.video.height << ", "
                << stored.fps << " fps)\n";
    }
    std::cout << "exported " << exported << " of " << exported + missing << " video(s) as "
              << format_name << " to " << out_dir << "\n"
              << std::flush;
    return missing == 0 ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    return static_cast<int>(ExitCode::usage);
  }
}

}  // namespace omnidp::cli
