#include "omnidp/export/html_report.hpp"
#include "omnidp/common/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "omnidp/common/base64.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/export/png.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;
using results::StoredRow;

constexpr const char* kOkColour = "#4c78a8";
constexpr const char* kFailedColour = "#e45756";
constexpr int kLeft = 70;  // left margin of every plot (lane labels, y axis)
constexpr int kRight = 20;
constexpr int kAxis = 28;  // height of the time axis under a plot

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// ", 20 of 60 transformer forwards computed" for a row that recorded its forwards, else "".
std::string forwards_note(const ResultRecord& r) {
  if (r.forwards <= 0) return "";
  return fmt::format(", {} of {} transformer forwards computed", r.forwards_computed, r.forwards);
}

// A human time span: "12.3 s", "4 min 05 s", "2 h 03 min".
std::string span(double s) {
  if (s < 120.0) return fixed(s, s < 10.0 ? 2 : 1) + " s";
  const auto total = static_cast<long long>(std::llround(s));
  if (total < 7200) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `range`.
double nice_step(double range, int target) {
  if (range <= 0.0) return 1.0;
  const double raw = range / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10.0 * power;
}

// Time axis from 0 to `range` seconds over `width` pixels at vertical offset `y`.
void time_axis(std::ostringstream& o, double range, int width, int y) {
  o << "<line x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << kLeft + width << "\" y2=\"" << y
    << "\" stroke=\"#333\"/>";
  const double step = nice_step(range, 8);
  for (double t = 0.0; t <= range * 1.0000001 && range > 0.0; t += step) {
    const double x = kLeft + t / range * width;
    o << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << y << "\" x2=\"" << fixed(x, 1) << "\" y2=\""
      << y + 4 << "\" stroke=\"#333\"/><text x=\"" << fixed(x, 1) << "\" y=\"" << y + 16
      << "\" class=\"tick\">" << (step >= 1.0 ? fixed(t, 0) : fixed(t, 2)) << "</text>";
  }
  o << "<text x=\"" << kLeft + width << "\" y=\"" << y + 27
    << "\" class=\"axis-label\" text-anchor=\"end\">seconds since the first start</text>";
}

// Run segment of a rank file name ("rank-00003.2.h5" -> 2, "rank-00003.h5" -> 0); -1 for
// another file (a merged results.h5 does not record where its rows came from).
int segment_of(const fs::path& file) {
  static const std::regex pattern(R"(rank-\d+(?:\.(\d+))?\.h5)");
  std::smatch m;
  const std::string name = file.filename().string();
  if (!std::regex_match(name, m, pattern)) return -1;
  return m[1].matched ? std::stoi(m[1].str()) : 0;
}

struct Extent {
  double t0 = 0.0;
  double t1 = 0.0;
  [[nodiscard]] double range() const { return std::max(t1 - t0, 1e-9); }
};

Extent extent_of(const std::vector<StoredRow>& rows) {
  Extent e;
  bool first = true;
  for (const auto& row : rows) {
    const auto& r = row.record;
    if (first) {
      e.t0 = r.start_time;
      e.t1 = r.end_time;
      first = false;
    }
    e.t0 = std::min(e.t0, r.start_time);
    e.t1 = std::max(e.t1, r.end_time);
  }
  return e;
}

int lane_count(const StoredRun& run) {
  int n = std::max(run.summary.world_size, 1);
  n = std::max(n, static_cast<int>(run.summary.busy_s_per_rank.size()));
  for (const auto& row : run.rows) n = std::max(n, row.record.rank + 1);
  return n;
}

// Per-pixel coverage of one lane by the bars too thin to draw one by one.
struct LaneBins {
  std::vector<double> ok;  // busy fraction of each pixel column
  std::vector<double> failed;
  std::vector<int> ok_count;  // requests starting in each column
  std::vector<int> failed_count;
  explicit LaneBins(int width)
      : ok(static_cast<std::size_t>(width), 0.0),
        failed(static_cast<std::size_t>(width), 0.0),
        ok_count(static_cast<std::size_t>(width), 0),
        failed_count(static_cast<std::size_t>(width), 0) {}
  void add(double x0, double x1, bool is_ok) {
    auto& cover = is_ok ? ok : failed;
    auto& count = is_ok ? ok_count : failed_count;
    const int width = static_cast<int>(cover.size());
    const int first = std::clamp(static_cast<int>(std::floor(x0)), 0, width - 1);
    const int last = std::clamp(static_cast<int>(std::floor(x1)), 0, width - 1);
    ++count[static_cast<std::size_t>(first)];
    for (int c = first; c <= last; ++c) {
      const double overlap = std::min(x1, c + 1.0) - std::max(x0, static_cast<double>(c));
      cover[static_cast<std::size_t>(c)] += std::max(overlap, 0.0);
    }
  }
};

// Runs of equal quantized coverage, drawn as one rect each with the number of requests.
void draw_bins(std::ostringstream& o, const std::vector<double>& cover,
               const std::vector<int>& count, bool is_ok, double y, double h, double seconds_per_px) {
  const int width = static_cast<int>(cover.size());
  auto level = [&](int c) {
    const double v = std::min(cover[static_cast<std::size_t>(c)], 1.0);
    if (v <= 0.0) return 0;
    return is_ok ? std::max(1, static_cast<int>(std::lround(v * 4.0))) : 4;
  };
  int c = 0;
  while (c < width) {
    const int l = level(c);
    int end = c + 1;
    int n = count[static_cast<std::size_t>(c)];
    while (end < width && level(end) == l) n += count[static_cast<std::size_t>(end++)];
    if (l > 0) {
      o << "<rect class=\"agg\" x=\"" << kLeft + c << "\" y=\"" << fixed(y, 1) << "\" width=\""
        << end - c << "\" height=\"" << fixed(h, 1) << "\" fill=\""
        << (is_ok ? kOkColour : kFailedColour) << "\" fill-opacity=\"" << fixed(l / 4.0, 2)
        << "\"><title>" << n << (is_ok ? " requests" : " failed requests") << " started in "
        << fixed(c * seconds_per_px, 1) << "-" << fixed(end * seconds_per_px, 1)
        << " s (aggregated: bars under a pixel)</title></rect>";
    }
    c = end;
  }
}

void timeline(std::ostringstream& o, const StoredRun& run, const Extent& e, const ReportOptions& opt) {
  const int lanes = lane_count(run);
  const int width = opt.plot_width;
  const double lane_h = std::clamp(480.0 / lanes, 3.0, 20.0);
  const double bar_h = lane_h > 6.0 ? lane_h - 2.0 : lane_h;
  const int height = static_cast<int>(std::ceil(lanes * lane_h)) + 6;
  const double px_per_s = width / e.range();
  std::vector<std::vector<const StoredRow*>> by_rank(static_cast<std::size_t>(lanes));
  for (const auto& row : run.rows) {
    if (row.record.rank >= 0) by_rank[static_cast<std::size_t>(row.record.rank)].push_back(&row);
  }
  o << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLeft + width + kRight
    << "\" height=\"" << height + kAxis + 4 << "\" role=\"img\" aria-label=\"per-rank timeline\">";
  std::size_t drawn = 0;
  std::size_t aggregated = 0;
  for (int rank = 0; rank < lanes; ++rank) {
    const double y = 3.0 + rank * lane_h;
    o << "<g class=\"lane\" data-rank=\"" << rank << "\">";
    if (rank % 2 == 1) {
      o << "<rect x=\"" << kLeft << "\" y=\"" << fixed(y, 1) << "\" width=\"" << width
        << "\" height=\"" << fixed(lane_h, 1) << "\" fill=\"#f3f3f3\"/>";
    }
    if (lane_h >= 7.0 || rank % std::max(1, static_cast<int>(std::ceil(10.0 / lane_h))) == 0) {
      o << "<text x=\"" << kLeft - 6 << "\" y=\"" << fixed(y + lane_h / 2 + 3.5, 1)
        << "\" class=\"lane-label\" text-anchor=\"end\">rank " << rank << "</text>";
    }
    LaneBins bins(width);
    double last_end = -1.0;
    for (const StoredRow* row : by_rank[static_cast<std::size_t>(rank)]) {
      const auto& r = row->record;
      const double x0 = (r.start_time - e.t0) * px_per_s;
      const double x1 = (r.end_time - e.t0) * px_per_s;
      last_end = std::max(last_end, x1);
      const bool ok = r.status == RequestStatus::ok;
      if (x1 - x0 < opt.min_bar_px) {
        bins.add(x0, x1, ok);
        ++aggregated;
        continue;
      }
      ++drawn;
      o << "<rect class=\"bar " << (ok ? "ok" : "failed") << "\" x=\"" << fixed(kLeft + x0, 1)
        << "\" y=\"" << fixed(y, 1) << "\" width=\"" << fixed(x1 - x0, 1) << "\" height=\""
        << fixed(bar_h, 1) << "\" fill=\"" << (ok ? kOkColour : kFailedColour)
        << "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>" << escape(r.id) << " (rank " << r.rank
        << ", " << to_string(r.status) << ", " << fixed(r.seconds, 2) << " s, " << r.frames << "x"
        << r.width << "x" << r.height << forwards_note(r) << (ok ? "" : ": " + escape(r.error))
        << ")</title></rect>";
    }
    const double seconds_per_px = 1.0 / px_per_s;
    draw_bins(o, bins.ok, bins.ok_count, true, y, bar_h, seconds_per_px);
    draw_bins(o, bins.failed, bins.failed_count, false, y, bar_h, seconds_per_px);
    if (last_end >= 0.0) {  // where this rank finished its last request
      o << "<line class=\"finish\" x1=\"" << fixed(kLeft + last_end, 1) << "\" y1=\"" << fixed(y, 1)
        << "\" x2=\"" << fixed(kLeft + last_end, 1) << "\" y2=\"" << fixed(y + bar_h, 1)
        << "\" stroke=\"#000\" stroke-width=\"1.5\"/>";
    }
    o << "</g>";
  }
  time_axis(o, e.range(), width, height);
  o << "</svg>\n<p class=\"note\">" << drawn << " bars drawn one by one (hover: id), "
    << aggregated << " aggregated per pixel column (shade = busy share). Black tick: the rank's last finish.</p>\n";
}

// Bars of `values` (one per bin over the time range) with a y axis labelled `unit`.
void time_bars(std::ostringstream& o, const std::string& id, const std::vector<double>& values,
               double bin_s, int width, const std::string& unit, const std::string& colour,
               double y_max_hint) {
  const int height = 140;
  double y_max = y_max_hint;
  for (const double v : values) y_max = std::max(y_max, v);
  if (y_max <= 0.0) y_max = 1.0;
  o << "<svg id=\"" << id << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
    << kLeft + width + kRight << "\" height=\"" << height + kAxis + 10 << "\">";
  const double step = nice_step(y_max, 4);
  for (double v = 0.0; v <= y_max * 1.0000001; v += step) {
    const double y = 6 + height - v / y_max * height;
    o << "<line x1=\"" << kLeft << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << kLeft + width
      << "\" y2=\"" << fixed(y, 1) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\""
      << fixed(y + 4, 1) << "\" class=\"tick\" text-anchor=\"end\">"
      << (step >= 1.0 ? fixed(v, 0) : fixed(v, 1)) << "</text>";
  }
  const double bw = static_cast<double>(width) / std::max<std::size_t>(values.size(), 1);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] <= 0.0) continue;
    const double h = values[i] / y_max * height;
    o << "<rect x=\"" << fixed(kLeft + i * bw, 1) << "\" y=\"" << fixed(6 + height - h, 1)
      << "\" width=\"" << fixed(std::max(bw - 0.5, 0.5), 1) << "\" height=\"" << fixed(h, 1)
      << "\" fill=\"" << colour << "\"><title>" << fixed(i * bin_s, 1) << "-"
      << fixed((i + 1) * bin_s, 1) << " s: " << fixed(values[i], 2) << " " << escape(unit)
      << "</title></rect>";
  }
  o << "<text x=\"4\" y=\"14\" class=\"axis-label\">" << escape(unit) << "</text>";
  time_axis(o, bin_s * static_cast<double>(values.size()), width, 6 + height);
  o << "</svg>\n";
}

void histogram(std::ostringstream& o, const std::vector<double>& latencies, int width) {
  if (latencies.empty()) {
    o << "<p>No completed request.</p>\n";
    return;
  }
  const double max = *std::max_element(latencies.begin(), latencies.end());
  const int bins = 40;
  const double bin = std::max(max, 1e-9) / bins;
  std::vector<double> counts(bins, 0.0);
  for (const double v : latencies) {
    ++counts[static_cast<std::size_t>(std::min(bins - 1, static_cast<int>(v / bin)))];
  }
  const int height = 140;
  const double y_max = *std::max_element(counts.begin(), counts.end());
  o << "<svg id=\"latency\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLeft + width + kRight
    << "\" height=\"" << height + kAxis + 10 << "\">";
  const double bw = static_cast<double>(width) / bins;
  for (int i = 0; i < bins; ++i) {
    const double c = counts[static_cast<std::size_t>(i)];
    if (c <= 0.0) continue;
    const double h = c / y_max * height;
    o << "<rect x=\"" << fixed(kLeft + i * bw, 1) << "\" y=\"" << fixed(6 + height - h, 1)
      << "\" width=\"" << fixed(bw - 1.0, 1) << "\" height=\"" << fixed(h, 1) << "\" fill=\""
      << kOkColour << "\"><title>" << fixed(i * bin, 2) << "-" << fixed((i + 1) * bin, 2)
      << " s: " << fixed(c, 0) << " requests</title></rect>";
  }
  o << "<text x=\"4\" y=\"14\" class=\"axis-label\">requests</text><text x=\"" << kLeft - 6
    << "\" y=\"" << 6 + 4 << "\" class=\"tick\" text-anchor=\"end\">" << fixed(y_max, 0)
    << "</text>";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << 6 + height << "\" x2=\"" << kLeft + width
    << "\" y2=\"" << 6 + height << "\" stroke=\"#333\"/>";
  const double step = nice_step(max, 8);
  for (double t = 0.0; t <= max * 1.0000001 && max > 0.0; t += step) {
    const double x = kLeft + t / (bin * bins) * width;
    o << "<text x=\"" << fixed(x, 1) << "\" y=\"" << 6 + height + 16 << "\" class=\"tick\">"
      << (step >= 1.0 ? fixed(t, 0) : fixed(t, 2)) << "</text>";
  }
  o << "<text x=\"" << kLeft + width << "\" y=\"" << 6 + height + 27
    << "\" class=\"axis-label\" text-anchor=\"end\">latency (s)</text></svg>\n";
}

void summary_table(std::ostringstream& o, const StoredRun& run, const Extent& e) {
  const RunSummary& s = run.summary;
  auto row = [&](const std::string& k, const std::string& v) {
    o << "<tr><th>" << escape(k) << "</th><td>" << escape(v) << "</td></tr>";
  };
  o << "<table class=\"figures\">";
  row("model", run.info.model.empty() ? "?" : run.info.model);
  row("software", "omni-dp " + run.info.software_version + " (git " + run.info.git_revision + ")");
  row("requests", fmt::format("{} total, {} completed, {} failed, {} skipped (done before)",
                              s.total, s.completed, s.failed, s.skipped_resume));
  row("makespan", span(s.makespan_s) + " (" + fixed(s.makespan_s, 3) + " s)");
  row("throughput", fixed(s.videos_per_min, 2) + " videos/min");
  row("latency", "p50 " + fixed(s.latency_p50_s, 3) + " s, p90 " + fixed(s.latency_p90_s, 3) +
                     " s, max " + fixed(s.latency_max_s, 3) + " s");
  row("scheduling efficiency", fixed(s.scheduling_efficiency, 3));
  row("model flops", results::describe_flops(s));    // docs/performance.md, "MFU"
  row("step cache", results::describe_forwards(s));  // the rows' transformer forwards
  if (const auto adapters = describe_adapters(run); !adapters.empty()) {  // LoRA sets
    std::string text;
    for (const auto& line : adapters) text += (text.empty() ? "" : "; ") + line;
    row("adapters", text);
  }
  row("layout",
      fmt::format("world size {}, replicas {}, tp {}, sp {}, cfg {}", s.world_size, s.replicas,
                  s.tensor_parallel_size, s.sequence_parallel_size, s.cfg_parallel_size));
  row("policy", (s.policy.empty() ? "-" : s.policy) + ", order " + (s.order.empty() ? "-" : s.order));
  row("interrupted", s.interrupted ? "yes" : "no");
  row("time span of the rows", span(e.t1 - e.t0));
  row("figures from", run.summary_source);
  if (!run.live_files.empty()) {  // a running job: its rows so far, no thumbnails of them yet
    row("live", fmt::format("{} file(s) a running job writes: their rows so far, from their live "
                            "tables; their videos once the job has ended",
                            run.live_files.size()));
  }
  o << "</table>\n";
}

void busy_table(std::ostringstream& o, const StoredRun& run, int width) {
  const int lanes = lane_count(run);
  std::vector<std::size_t> ok(static_cast<std::size_t>(lanes), 0);
  std::vector<std::size_t> failed(static_cast<std::size_t>(lanes), 0);
  for (const auto& row : run.rows) {
    if (row.record.rank < 0) continue;
    ++(row.record.status == RequestStatus::ok ? ok
                                              : failed)[static_cast<std::size_t>(row.record.rank)];
  }
  const auto& fractions = run.summary.busy_fraction_per_rank;
  const double bar_h = std::clamp(360.0 / lanes, 3.0, 16.0);
  const int height = static_cast<int>(std::ceil(lanes * bar_h)) + 4;
  const int w = width / 2;
  o << "<svg id=\"busy\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLeft + w + 180
    << "\" height=\"" << height << "\">";
  for (int r = 0; r < lanes; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const double f = i < fractions.size() ? fractions[i] : 0.0;
    const double y = 2 + r * bar_h;
    o << "<rect x=\"" << kLeft << "\" y=\"" << fixed(y, 1) << "\" width=\""
      << fixed(std::clamp(f, 0.0, 1.0) * w, 1) << "\" height=\""
      << fixed(std::max(bar_h - 1.0, 1.0), 1) << "\" fill=\"" << kOkColour << "\"><title>rank " << r
      << ": busy " << fixed(100.0 * f, 1) << "%, "
      << (i < run.summary.busy_s_per_rank.size() ? fixed(run.summary.busy_s_per_rank[i], 1) : "0")
      << " s, " << ok[i] << " ok, " << failed[i] << " failed</title></rect>";
    if (bar_h >= 7.0) {
      o << "<text x=\"" << kLeft - 6 << "\" y=\"" << fixed(y + bar_h / 2 + 3, 1)
        << "\" class=\"lane-label\" text-anchor=\"end\">rank " << r << "</text><text x=\""
        << kLeft + w + 6 << "\" y=\"" << fixed(y + bar_h / 2 + 3, 1) << "\" class=\"tick\">"
        << fixed(100.0 * f, 1) << "% (" << ok[i] << " ok, " << failed[i] << " failed)</text>";
    }
  }
  o << "<line x1=\"" << kLeft + w << "\" y1=\"0\" x2=\"" << kLeft + w << "\" y2=\"" << height
    << "\" stroke=\"#999\" stroke-dasharray=\"3,3\"/></svg>\n";
}

void per_size(std::ostringstream& o, const StoredRun& run) {
  std::map<std::tuple<int, int, int>, std::vector<double>> groups;  // frames, width, height
  std::map<std::tuple<int, int, int>, std::size_t> failed;
  for (const auto& row : run.rows) {
    const auto& r = row.record;
    const auto key = std::make_tuple(r.frames, r.width, r.height);
    if (r.status == RequestStatus::ok) {
      groups[key].push_back(r.seconds);
    } else {
      ++failed[key];
      groups.try_emplace(key);
    }
  }
  double max_p50 = 0.0;
  for (const auto& [k, v] : groups) max_p50 = std::max(max_p50, results::percentile(v, 0.5));
  o << "<table class=\"sizes\"><tr><th>frames</th><th>size</th><th>ok</th><th>failed</th>"
       "<th>p50 s</th><th>p90 s</th><th>max s</th><th>p50</th></tr>";
  for (const auto& [k, v] : groups) {
    const auto [frames, w, h] = k;
    const double p50 = results::percentile(v, 0.5);
    const double mx = v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    const auto f = failed.find(k);
    o << "<tr><td>" << frames << "</td><td>" << w << "x" << h << "</td><td>" << v.size()
      << "</td><td>" << (f == failed.end() ? 0 : f->second) << "</td><td>" << fixed(p50, 3)
      << "</td><td>" << fixed(results::percentile(v, 0.9), 3) << "</td><td>" << fixed(mx, 3)
      << "</td><td><svg width=\"200\" height=\"10\"><rect width=\""
      << fixed(max_p50 > 0.0 ? p50 / max_p50 * 200.0 : 0.0, 1) << "\" height=\"10\" fill=\""
      << kOkColour << "\"/></svg></td></tr>";
  }
  o << "</table>\n";
}

void failures(std::ostringstream& o, const StoredRun& run, std::size_t max_list, double t0) {
  std::vector<const StoredRow*> failed;
  for (const auto& row : run.rows) {
    if (row.record.status == RequestStatus::failed) failed.push_back(&row);
  }
  o << "<h2 id=\"failures\">Failures (" << failed.size() << ")</h2>\n";
  if (failed.empty()) {
    o << "<p>None.</p>\n";
    return;
  }
  o << "<table class=\"failures\"><tr><th>id</th><th>rank</th><th>attempt</th><th>at s</th>"
       "<th>error</th></tr>";
  for (std::size_t i = 0; i < failed.size() && i < max_list; ++i) {
    const auto& r = failed[i]->record;
    o << "<tr><td>" << escape(r.id) << "</td><td>" << r.rank << "</td><td>" << r.attempt
      << "</td><td>" << fixed(r.start_time - t0, 1) << "</td><td>" << escape(r.error)
      << "</td></tr>";
  }
  o << "</table>\n";
  if (failed.size() > max_list) {
    o << "<p class=\"note\">" << failed.size() - max_list
      << " more; omni-dp-inspect --max-list N lists them.</p>\n";
  }
}

void segments(std::ostringstream& o, const StoredRun& run, double t0) {
  struct Seg {
    std::set<std::string> files;
    std::size_t rows = 0;
    std::size_t failed = 0;
    double start = 0.0;
    double end = 0.0;
  };
  std::map<int, Seg> segs;
  for (const auto& row : run.rows) {
    Seg& s = segs[segment_of(row.file)];
    const auto& r = row.record;
    if (s.rows == 0) {
      s.start = r.start_time;
      s.end = r.end_time;
    }
    s.start = std::min(s.start, r.start_time);
    s.end = std::max(s.end, r.end_time);
    ++s.rows;
    if (r.status == RequestStatus::failed) ++s.failed;
    s.files.insert(row.file.filename().string());
  }
  o << "<h2 id=\"segments\">Segments</h2>\n";
  if (segs.size() == 1 && segs.begin()->first == -1) {
    o << "<p class=\"note\">A merged results.h5 does not record the run segment of its rows; "
         "open the output folder (its rank files) to see the segments of a resumed run.</p>\n";
    return;
  }
  o << "<p class=\"note\">" << segs.size()
    << (segs.size() == 1 ? " segment (not resumed)." : " segments: the run was resumed.")
    << " The rows kept are one per id (the newest ok attempt).</p>\n";
  o << "<table class=\"segments\"><tr><th>segment</th><th>rank files</th><th>rows kept</th>"
       "<th>failed</th><th>from s</th><th>to s</th><th>duration</th></tr>";
  for (const auto& [k, s] : segs) {
    o << "<tr><td>" << k << "</td><td>" << s.files.size() << "</td><td>" << s.rows << "</td><td>"
      << s.failed << "</td><td>" << fixed(s.start - t0, 1) << "</td><td>" << fixed(s.end - t0, 1)
      << "</td><td>" << span(s.end - s.start) << "</td></tr>";
  }
  o << "</table>\n";
}

// Nearest-neighbour downscale of frame [h, w, 3] to at most `max_w` wide.
std::vector<std::uint8_t> shrink(const std::vector<std::uint8_t>& frame, int w, int h, int max_w,
                                 int& out_w, int& out_h) {
  if (w <= max_w) {
    out_w = w;
    out_h = h;
    return frame;
  }
  out_w = max_w;
  out_h = std::max(1, static_cast<int>(std::lround(static_cast<double>(h) * max_w / w)));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(out_w) * out_h * 3);
  for (int y = 0; y < out_h; ++y) {
    const int sy = std::min(h - 1, static_cast<int>((y + 0.5) * h / out_h));
    for (int x = 0; x < out_w; ++x) {
      const int sx = std::min(w - 1, static_cast<int>((x + 0.5) * w / out_w));
      for (int c = 0; c < 3; ++c) {
        out[(static_cast<std::size_t>(y) * out_w + x) * 3 + c] =
            frame[(static_cast<std::size_t>(sy) * w + sx) * 3 + c];
      }
    }
  }
  return out;
}

void thumbnails(std::ostringstream& o, const StoredRun& run, const ReportOptions& opt) {
  std::vector<const StoredRow*> candidates;
  for (const auto& row : run.rows) {
    if (row.record.status == RequestStatus::ok && row.video_present) candidates.push_back(&row);
  }
  o << "<h2 id=\"thumbnails\">Thumbnails</h2>\n";
  if (candidates.empty()) {
    o << "<p>No stored video.</p>\n";
    return;
  }
  const std::size_t n = std::min(opt.thumbnails, candidates.size());
  o << "<p class=\"note\">" << n << " of " << candidates.size()
    << " videos, spread over the ids: first, middle and last frame.</p>\n<div class=\"thumbs\">";
  std::map<fs::path, results::h5::File> files;
  std::vector<std::uint8_t> frame;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t index = n == 1 ? 0 : i * (candidates.size() - 1) / (n - 1);
    const StoredRow& row = *candidates[index];
    auto it = files.find(row.file);
    if (it == files.end())
      it = files.emplace(row.file, results::h5::open_file(row.file.string())).first;
    const results::StoredFrames frames(it->second.id(), row.record.id);
    o << "<figure class=\"thumb\" data-id=\"" << escape(row.record.id) << "\">";
    for (const int f : {0, frames.frames() / 2, frames.frames() - 1}) {
      frames.read(f, frame);
      int w = 0;
      int h = 0;
      const auto small = shrink(frame, frames.width(), frames.height(), opt.thumbnail_width, w, h);
      const auto png = encode_png(small, w, h, row.record.id);
      o << "<img alt=\"" << escape(row.record.id) << " frame " << f << "\" width=\"" << w
        << "\" height=\"" << h << "\" src=\"data:image/png;base64,"
        << base64_encode(std::string_view(reinterpret_cast<const char*>(png.data()), png.size()))
        << "\">";
    }
    o << "<figcaption>" << escape(row.record.id) << " (" << fixed(row.record.seconds, 1) << " s, "
      << row.record.frames << "x" << row.record.width << "x" << row.record.height
      << ")</figcaption></figure>";
  }
  o << "</div>\n";
}

constexpr const char* kStyle = R"(<style>
body{font-family:sans-serif;font-size:14px;margin:16px 24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
table.figures th{font-weight:normal;color:#555}
.tick{font-size:10px;fill:#444;text-anchor:middle}.lane-label{font-size:10px;fill:#444}
.axis-label{font-size:11px;fill:#555}.note{color:#666;font-size:12px}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
.thumbs{display:flex;flex-wrap:wrap;gap:12px}.thumb{margin:0}.thumb img{margin-right:2px;image-rendering:pixelated}
figcaption{font-size:11px;color:#444}
</style>
)";

// Records script errors in the DOM (a headless browser's --dump-dom shows them) and, once the
// page is parsed, the number of timeline lanes it sees.
constexpr const char* kScript = R"(<script>
window.addEventListener('error', function (e) {
  var root = document.documentElement;
  root.setAttribute('data-report-errors', (root.getAttribute('data-report-errors') || '') + e.message + ';');
});
document.addEventListener('DOMContentLoaded', function () {
  var lanes = document.querySelectorAll('#timeline g.lane').length;
  document.body.setAttribute('data-lanes', String(lanes));
  document.body.setAttribute('data-report-status', 'ok');
});
</script>
)";

}  // namespace

std::string render_html_report(const StoredRun& run, const ReportOptions& options) {
  if (options.plot_width < 100) throw InputError("plot_width", "must be at least 100 pixels");
  const Extent e = extent_of(run.rows);
  const std::string title = options.title.empty() ? "omni-dp run " + run.source : options.title;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << escape(title) << "</title>\n"
    << kStyle << kScript << "</head>\n<body>\n<h1>" << escape(title) << "</h1>\n"
    << "<p class=\"note\">" << run.rows.size() << " requests on " << lane_count(run)
    << " ranks, read from " << run.files.size() << " file(s). Written by " << escape(version_line())
    << ". Self-contained: no network access.</p>\n";

  o << "<h2 id=\"summary\">Summary</h2>\n";
  summary_table(o, run, e);

  o << "<h2 id=\"timeline-title\">Timeline</h2>\n<p class=\"legend\"><span style=\"background:"
    << kOkColour << "\"></span>ok<span style=\"background:" << kFailedColour
    << "\"></span>failed</p>\n";
  if (run.rows.empty()) {
    o << "<p>No rows.</p>\n";
  }
  timeline(o, run, e, options);

  // Completions per minute and busy ranks over time, in bins of about 1/100 of the span.
  const int bins = std::min(100, std::max(1, static_cast<int>(run.rows.size())));
  const double bin_s = e.range() / bins;
  std::vector<double> per_minute(static_cast<std::size_t>(bins), 0.0);
  std::vector<double> busy(static_cast<std::size_t>(bins), 0.0);
  std::map<int, double> last_end;
  std::vector<double> latencies;
  for (const auto& row : run.rows) {
    const auto& r = row.record;
    if (r.status == RequestStatus::ok) {
      const int b = std::clamp(static_cast<int>((r.end_time - e.t0) / bin_s), 0, bins - 1);
      per_minute[static_cast<std::size_t>(b)] += 60.0 / bin_s;
      latencies.push_back(r.seconds);
    }
    const double s0 = (r.start_time - e.t0) / bin_s;
    const double s1 = (r.end_time - e.t0) / bin_s;
    for (int b = std::max(0, static_cast<int>(s0)); b < bins && b <= static_cast<int>(s1); ++b) {
      busy[static_cast<std::size_t>(b)] +=
          std::max(0.0, std::min(s1, b + 1.0) - std::max(s0, 1.0 * b));
    }
    auto [it, inserted] = last_end.try_emplace(r.rank, r.end_time);
    if (!inserted) it->second = std::max(it->second, r.end_time);
  }
  o << "<h2 id=\"throughput\">Throughput over time</h2>\n";
  time_bars(o, "throughput-plot", per_minute, bin_s, options.plot_width, "completions/min",
            kOkColour, 0.0);
  o << "<h2 id=\"tail\">Busy ranks over time (the tail)</h2>\n";
  time_bars(o, "busy-ranks", busy, bin_s, options.plot_width, "busy ranks", "#72b7b2",
            static_cast<double>(lane_count(run)));
  if (!last_end.empty()) {
    std::vector<double> ends;
    for (const auto& [rank, t] : last_end) ends.push_back(t - e.t0);
    std::sort(ends.begin(), ends.end());
    o << "<p>The first rank finished its last request at " << fixed(ends.front(), 1)
      << " s, the median rank at " << fixed(ends[ends.size() / 2], 1) << " s, the last at "
      << fixed(ends.back(), 1) << " s: a tail of " << span(ends.back() - ends.front()) << " ("
      << fixed(100.0 * (ends.back() - ends.front()) / e.range(), 1) << "% of the span).</p>\n";
  }

  o << "<h2 id=\"busy-title\">Busy per rank</h2>\n";
  busy_table(o, run, options.plot_width);
  o << "<h2 id=\"latency-title\">Latency</h2>\n";
  histogram(o, latencies, options.plot_width);
  o << "<h3>Per frame count and size</h3>\n";
  per_size(o, run);
  failures(o, run, options.max_failures, e.t0);
  segments(o, run, e.t0);
  if (options.thumbnails > 0) thumbnails(o, run, options);
  o << "</body>\n</html>\n";
  return o.str();
}

std::size_t write_html_report(const StoredRun& run, const ReportOptions& options,
                              const fs::path& path) {
  const std::string html = render_html_report(run, options);
  write_file_atomically(path, html, "the report");
  return html.size();
}

}  // namespace omnidp::video_export
