#include "omnidp/runtime/progress.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <iterator>

#include "omnidp/results/summary.hpp"

namespace omnidp::runtime {

std::string format_duration(double seconds) {
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) return "--";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_progress(const ProgressSnapshot& s) {
  const double pct =
      s.total == 0 ? 100.0 : 100.0 * static_cast<double>(s.done) / static_cast<double>(s.total);
  const double vpm = s.elapsed_s > 0.0 ? 60.0 * static_cast<double>(s.done) / s.elapsed_s : 0.0;
  if (!s.stalled.empty()) {
    return fmt::format("{}/{} done ({:.1f}%), {} failed, {:.1f} videos/min, ETA --, {}", s.done,
                       s.total, pct, s.failed, vpm, s.stalled);
  }
  return fmt::format("{}/{} done ({:.1f}%), {} failed, {:.1f} videos/min, ETA {}", s.done, s.total,
                     pct, s.failed, vpm, format_duration(s.eta_s));
}

std::string progress_bar(const ProgressSnapshot& s, int width) {
  const double f = s.total == 0 ? 1.0 : static_cast<double>(s.done) / static_cast<double>(s.total);
  const int filled = std::clamp(static_cast<int>(std::floor(f * width)), 0, width);
  std::string bar;
  bar.reserve(static_cast<std::size_t>(width) + 2);
  bar += '[';
  bar.append(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  bar += ']';
  return bar;
}

ProgressReporter::ProgressReporter(std::FILE* out, bool in_place, double interval_s)
    : out_(out), in_place_(in_place), interval_s_(in_place ? 0.5 : interval_s) {}

void ProgressReporter::update(const ProgressSnapshot& s, double now_s) {
  if (out_ == nullptr || now_s - last_s_ < interval_s_) return;
  if (in_place_ && s.done == last_done_ && now_s - last_s_ < 5.0) return;
  last_s_ = now_s;
  last_done_ = s.done;
  const std::string line = format_progress(s);
  if (in_place_) {
    std::fprintf(out_, "\r\033[K%s %s", progress_bar(s, kBarWidth).c_str(), line.c_str());
  } else {
    std::fprintf(out_, "progress: %s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressReporter::finish(const ProgressSnapshot& s) {
  if (out_ == nullptr) return;
  const std::string line = format_progress(s);
  if (in_place_) {
    std::fprintf(out_, "\r\033[K%s %s\n", progress_bar(s, kBarWidth).c_str(), line.c_str());
  } else {
    std::fprintf(out_, "progress: %s\n", line.c_str());
  }
  std::fflush(out_);
}

RunSummary make_summary(const SummaryInputs& in) {
  RunSummary s;
  s.total = in.total;
  s.completed = in.completed;
  s.failed = in.failed;
  s.skipped_resume = in.skipped_resume;
  s.skipped_tasks = in.skipped_tasks;
  s.makespan_s = in.makespan_s;
  s.videos_per_min =
      in.makespan_s > 0.0 ? 60.0 * static_cast<double>(in.completed) / in.makespan_s : 0.0;
  s.latency_p50_s = results::percentile(in.latencies_s, 0.5);
  s.latency_p90_s = results::percentile(in.latencies_s, 0.9);
  s.latency_max_s =
      in.latencies_s.empty() ? 0.0 : *std::max_element(in.latencies_s.begin(), in.latencies_s.end());
  static_cast<RunLayout&>(s) = in;
  s.busy_s_per_rank.assign(static_cast<std::size_t>(in.world_size), 0.0);
  double sum_busy = 0.0;
  for (std::size_t r = 0; r < in.busy_s_per_rank.size() && r < s.busy_s_per_rank.size(); ++r) {
    s.busy_s_per_rank[r] = in.busy_s_per_rank[r];
    sum_busy += in.busy_s_per_rank[r];
  }
  s.busy_fraction_per_rank.resize(s.busy_s_per_rank.size(), 0.0);
  for (std::size_t r = 0; r < s.busy_s_per_rank.size(); ++r) {
    s.busy_fraction_per_rank[r] = in.makespan_s > 0.0 ? s.busy_s_per_rank[r] / in.makespan_s : 0.0;
  }
  s.scheduling_efficiency = (in.makespan_s > 0.0 && in.working_ranks > 0)
                                ? sum_busy / (in.working_ranks * in.makespan_s)
                                : 0.0;
  results::set_flops_figures(s, in.flops, in.working_ranks);
  results::set_forwards_figures(s, in.forwards);
  return s;
}

std::string format_summary(const RunSummary& s) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "summary: {} completed, {} failed", s.completed, s.failed);
  if (s.skipped_resume > 0) fmt::format_to(out, ", {} skipped (already done)", s.skipped_resume);
  if (s.skipped_tasks > 0) fmt::format_to(out, ", {} skipped (input.tasks)", s.skipped_tasks);
  if (s.interrupted) {
    fmt::format_to(out, ", INTERRUPTED ({} left: resume)", s.total - s.completed - s.failed);
  }
  fmt::format_to(out,
                 "\n  makespan {:.2f} s, {:.2f} videos/min, {} replica(s) on {} rank(s), policy "
                 "{}/{}\n",
                 s.makespan_s, s.videos_per_min, s.replicas, s.world_size, s.policy, s.order);
  fmt::format_to(out, "  latency p50 {:.2f} s, p90 {:.2f} s, max {:.2f} s\n", s.latency_p50_s,
                 s.latency_p90_s, s.latency_max_s);
  o += "  busy fraction per rank:";
  for (std::size_t r = 0; r < s.busy_fraction_per_rank.size(); ++r) {
    fmt::format_to(out, "{} r{} {:.1f}%", r % 8 == 0 && r > 0 ? "\n   " : "", r,
                   100.0 * s.busy_fraction_per_rank[r]);
  }
  fmt::format_to(out, "\n  scheduling efficiency {:.2f}%\n", 100.0 * s.scheduling_efficiency);
  fmt::format_to(out, "  model flops {}\n", results::describe_flops(s));
  if (results::forwards_skipped(s)) {  // a run without a step cache: no line
    fmt::format_to(out, "  step cache {}\n", results::describe_forwards(s));
  }
  return o;
}

}  // namespace omnidp::runtime
