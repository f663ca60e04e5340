#include "omnidp/cli/inspect.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <vector>

#include "omnidp/cli/number_options.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/error_text.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/export/html_report.hpp"
#include "omnidp/results/summary.hpp"

namespace omnidp::cli {
namespace {

constexpr const char* kProgram = "omni-dp-inspect";
using Row = results::StoredRow;

struct RankFigures {
  std::size_t requests = 0;
  std::size_t ok = 0;
  std::size_t failed = 0;
  double busy_s = 0.0;
  double busy_fraction = 0.0;
};

// Per rank: the rows' counts and the summary's busy figures (every rank of either).
std::map<int, RankFigures> per_rank(const video_export::StoredRun& run) {
  std::map<int, RankFigures> ranks;
  const auto& s = run.summary;
  for (std::size_t r = 0; r < s.busy_s_per_rank.size(); ++r) {
    auto& f = ranks[static_cast<int>(r)];
    f.busy_s = s.busy_s_per_rank[r];
    if (r < s.busy_fraction_per_rank.size()) f.busy_fraction = s.busy_fraction_per_rank[r];
  }
  for (const auto& row : run.rows) {
    auto& f = ranks[row.record.rank];
    ++f.requests;
    ++(row.record.status == RequestStatus::ok ? f.ok : f.failed);
  }
  return ranks;
}

std::vector<const Row*> failures(const video_export::StoredRun& run) {
  std::vector<const Row*> out;
  for (const auto& row : run.rows) {
    if (row.record.status == RequestStatus::failed) out.push_back(&row);
  }
  return out;
}

// Longest first; ties by id.
std::vector<const Row*> slowest(const video_export::StoredRun& run, std::size_t n) {
  std::vector<const Row*> out;
  for (const auto& row : run.rows) out.push_back(&row);
  std::stable_sort(out.begin(), out.end(),
                   [](const Row* a, const Row* b) { return a->record.seconds > b->record.seconds; });
  if (out.size() > n) out.resize(n);
  return out;
}

// A profile without its `key=...` item ("" when it had only that).
std::string without_item(const std::string& profile, std::string_view key) {
  std::string out;
  std::size_t start = 0;
  while (start <= profile.size()) {
    const auto end = std::min(profile.find(';', start), profile.size());
    const std::string_view item(profile.data() + start, end - start);
    if (!item.starts_with(std::string(key) + "=") && !item.empty()) {
      out += (out.empty() ? "" : ";") + std::string(item);
    }
    start = end + 1;
  }
  return out;
}

// Rows per numerics profile ("" = unknown), most rows first, ties by profile. A request's own
// adapters (lora_line) are the request's, not the run's numerics: listed under "adapters".
std::vector<std::pair<std::string, std::size_t>> profiles(const video_export::StoredRun& run) {
  std::map<std::string, std::size_t> counts;
  for (const auto& row : run.rows) ++counts[without_item(row.record.numerics, "lora_line")];
  std::vector<std::pair<std::string, std::size_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::string profile_line(const std::string& profile, std::size_t rows) {
  return fmt::format(
      "{} ({}{}",
      profile.empty() ? std::string("unknown (written before profiles were recorded)") : profile,
      rows, rows == 1 ? " row)" : " rows)");
}

std::string file_names(const video_export::StoredRun& run) {
  std::string s;
  for (const auto& f : run.files) s += (s.empty() ? "" : ", ") + f.filename().string();
  return s;
}

}  // namespace

std::string format_inspect(const video_export::StoredRun& run, const InspectOptions& options) {
  const RunSummary& s = run.summary;
  std::ostringstream o;
  o << "run:          " << run.source << "\n"
    << "files:        " << run.files.size() << " (" << file_names(run) << ")\n";
  if (!run.shards.empty()) {
    o << "shards:       " << run.shards.size() << " (";
    for (std::size_t i = 0; i < run.shards.size(); ++i)
      o << (i > 0 ? ", " : "") << run.shards[i].filename().string();
    o << ")\n";
  }
  for (const auto& f : run.unreadable_files) {
    o << "unreadable:   " << f.filename().string() << " (skipped: its rows are not shown)\n";
  }
  for (const auto& f : run.live_files) {
    o << "live:         " << f.filename().string()
      << " (a running job writes it: its rows so far, from its live table)\n";
  }
  o << "model:        " << (run.info.model.empty() ? "?" : run.info.model) << " (omni-dp "
    << run.info.software_version << ", git " << run.info.git_revision << ")\n"
    << "requests:     " << s.total << " total, " << s.completed << " completed, " << s.failed
    << " failed, " << s.skipped_resume << " skipped (done before)\n"
    << "rows:         " << run.rows.size() << " (" << run.duplicates_dropped
    << " duplicate(s) dropped"
    << (run.rows_without_video == 0
            ? std::string()
            : fmt::format(", {} ok row(s) without their video dropped", run.rows_without_video))
    << ")\n";
  const auto by_profile = profiles(run);
  if (by_profile.size() == 1) {
    o << "numerics:     " << profile_line(by_profile[0].first, by_profile[0].second) << "\n";
  } else if (by_profile.size() > 1) {
    o << "numerics:     " << by_profile.size() << " profiles (mixed by --resume-mixed)\n";
    for (const auto& [profile, rows] : by_profile) o << "  " << profile_line(profile, rows) << "\n";
  }
  // The adapters of the run: the job's (model.lora) and each manifest line set with its rows.
  const auto adapters = video_export::describe_adapters(run);
  for (std::size_t i = 0; i < adapters.size(); ++i) {
    o << (i == 0 ? "adapters:     " : "  ") << adapters[i] << "\n";
  }
  o << "interrupted:  " << (s.interrupted ? "yes" : "no") << "\n"
    << "makespan:     " << fixed(s.makespan_s, 3) << " s\n"
    << "throughput:   " << fixed(s.videos_per_min, 2) << " videos/min\n"
    << "latency:      p50 " << fixed(s.latency_p50_s, 3) << " s, p90 " << fixed(s.latency_p90_s, 3)
    << " s, max " << fixed(s.latency_max_s, 3) << " s\n"
    << "scheduling:   efficiency " << fixed(s.scheduling_efficiency, 3) << ", world size "
    << s.world_size << ", replicas " << s.replicas << ", tp " << s.tensor_parallel_size << ", sp "
    << s.sequence_parallel_size << ", cfg " << s.cfg_parallel_size << ", policy "
    << (s.policy.empty() ? "-" : s.policy) << ", order " << (s.order.empty() ? "-" : s.order) << "\n"
    << "model flops:  " << results::describe_flops(s) << "\n"
    << "step cache:   " << results::describe_forwards(s) << "\n"
    << "figures from: " << run.summary_source << "\n";

  o << "\nper rank:\n  rank  requests     ok  failed     busy_s   busy\n";
  for (const auto& [rank, f] : per_rank(run)) {
    o << fmt::format("  {:>4}{:>10}{:>7}{:>8}{:>11.3f}{:>7}\n", rank, f.requests, f.ok, f.failed,
                     f.busy_s, fmt::format("{:.1f}%", 100.0 * f.busy_fraction));
  }

  const auto failed = failures(run);
  o << "\nfailures (" << std::min(failed.size(), options.max_list) << " of " << failed.size()
    << "):\n";
  for (std::size_t i = 0; i < failed.size() && i < options.max_list; ++i) {
    const auto& r = failed[i]->record;
    o << "  " << one_line(r.id) << " (rank " << r.rank << ", attempt " << r.attempt
      << "): " << one_line(r.error) << "\n";
  }

  const auto slow = slowest(run, options.slowest);
  o << "\nslowest " << slow.size() << " of " << run.rows.size() << " request(s):\n"
    << "   seconds  rank  status  frames  size        id\n";
  for (const auto* row : slow) {
    const auto& r = row->record;
    const std::string size = fmt::format("{}x{}", r.width, r.height);
    o << fmt::format("{:>10.3f}{:>6}  {:<8}{:>6}  ", r.seconds, r.rank, to_string(r.status), r.frames)
      << size << std::string(size.size() < 12 ? 12 - size.size() : 1, ' ') << one_line(r.id) << "\n";
  }
  return o.str();
}

std::string inspect_to_json(const video_export::StoredRun& run, const InspectOptions& options) {
  using Json = nlohmann::ordered_json;
  const RunSummary& s = run.summary;
  Json j;
  j["source"] = run.source;
  j["files"] = Json::array();
  for (const auto& f : run.files) j["files"].push_back(f.string());
  j["unreadable_files"] = Json::array();
  for (const auto& f : run.unreadable_files) j["unreadable_files"].push_back(f.string());
  j["live_files"] = Json::array();
  for (const auto& f : run.live_files) j["live_files"].push_back(f.string());
  j["shards"] = Json::array();
  for (const auto& f : run.shards) j["shards"].push_back(f.string());
  j["model"] = run.info.model;
  j["software_version"] = run.info.software_version;
  j["git_revision"] = run.info.git_revision;
  j["rows"] = run.rows.size();
  j["duplicates_dropped"] = run.duplicates_dropped;
  j["rows_without_video"] = run.rows_without_video;
  j["numerics_profiles"] = Json::array();
  for (const auto& [profile, rows] : profiles(run)) {
    j["numerics_profiles"].push_back({{"profile", profile}, {"rows", rows}});
  }
  j["summary_source"] = run.summary_source;
  j["summary"] = Json::object();
  for_each_summary_field(s, [&](const char* key, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::optional<double>>) {
      j["summary"][key] = value ? Json(*value) : Json(nullptr);  // unknown: null
    } else {
      j["summary"][key] = value;
    }
  });
  j["per_rank"] = Json::array();
  for (const auto& [rank, f] : per_rank(run)) {
    j["per_rank"].push_back({{"rank", rank},
                             {"requests", f.requests},
                             {"ok", f.ok},
                             {"failed", f.failed},
                             {"busy_s", f.busy_s},
                             {"busy_fraction", f.busy_fraction}});
  }
  const auto failed = failures(run);
  j["failures_total"] = failed.size();
  j["failures"] = Json::array();
  for (std::size_t i = 0; i < failed.size() && i < options.max_list; ++i) {
    const auto& r = failed[i]->record;
    j["failures"].push_back(
        {{"id", r.id}, {"rank", r.rank}, {"attempt", r.attempt}, {"error", r.error}});
  }
  j["slowest"] = Json::array();
  for (const auto* row : slowest(run, options.slowest)) {
    const auto& r = row->record;
    j["slowest"].push_back({{"id", r.id},
                            {"seconds", r.seconds},
                            {"rank", r.rank},
                            {"status", to_string(r.status)},
                            {"frames", r.frames},
                            {"height", r.height},
                            {"width", r.width},
                            {"forwards", r.forwards},
                            {"forwards_computed", r.forwards_computed}});
  }
  return j.dump(2) + "\n";
}

int inspect_main(int argc, char** argv) {
  CLI::App app{
      "Shows the figures of a run: counts, failures with their errors, throughput, "
      "latency, per-rank busy time and the slowest requests; --html FILE writes them "
      "as a report with plots.",
      kProgram};
  std::string input;
  bool json = false;
  InspectOptions options;
  app.add_option("RESULTS", input, "a results.h5, a rank file, or an output folder")->required();
  app.add_flag("--json", json, "print one JSON object");
  add_integer_option(app, "--slowest", options.slowest, "list the N slowest requests", 0, kMaxCount)
      ->capture_default_str();
  add_integer_option(app, "--max-list", options.max_list, "list at most N failures", 0, kMaxCount)
      ->capture_default_str();
  std::string html;
  video_export::ReportOptions report;
  auto* html_option = app.add_option(
      "--html", html, "write a self-contained HTML report (timeline, plots, failures) to FILE");
  html_option->type_name("FILE");
  add_integer_option(app, "--thumbnails", report.thumbnails,
                     "with --html: a strip of N videos (first, middle and last frame)", 0, kMaxCount)
      ->needs(html_option);
  app.set_version_flag("--version", version_line());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  try {
    const auto run = video_export::read_stored_run(input);
    if (!html.empty()) {
      const std::size_t bytes = video_export::write_html_report(run, report, html);
      std::cout << "report: " << html << " (" << bytes << " bytes, " << run.rows.size()
                << " requests)\n"
                << std::flush;
      return 0;
    }
    std::cout << (json ? inspect_to_json(run, options) : format_inspect(run, options)) << std::flush;
    return 0;
  } catch (const Error& e) {
    std::cerr << kProgram << ": " << one_line(e.what()) << "\n";
    return static_cast<int>(ExitCode::usage);
  }
}

}  // namespace omnidp::cli
