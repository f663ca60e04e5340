#include "omnidp/results/summary.hpp"
#include "omnidp/common/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp::results {
namespace {

using nlohmann::json;

template <class T>
void put_json(json& j, const char* key, const T& value) {
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    j[key] = value ? json(*value) : json(nullptr);
  } else {
    j[key] = value;
  }
}

// A value of the JSON type of its field, else std::invalid_argument naming the key: nlohmann's
// get<>() would take -1 for a std::size_t (18446744073709551615), 2.5 or true for a count.
template <class T>
void get_json(const json& j, const char* key, T& value) {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  const auto wrong = [key](const char* want) {
    return std::invalid_argument(std::string("'") + key + "' must be " + want);
  };
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (v.is_null()) {
      value.reset();
      return;
    }
    if (!v.is_number()) throw wrong("a number or null");
    value = v.get<double>();
  } else if constexpr (std::is_same_v<T, std::size_t>) {
    if (!v.is_number_unsigned()) throw wrong("a whole number >= 0");
    value = v.get<std::size_t>();
  } else if constexpr (std::is_same_v<T, int>) {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
    const bool in_range = v.is_number_unsigned() ? v.get<std::uint64_t>() <= kMax
                          : v.is_number_integer()
                              ? v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                    v.get<std::int64_t>() <= std::numeric_limits<int>::max()
                              : false;
    if (!in_range) throw wrong("a whole number within int's range");
    value = v.get<int>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) throw wrong("a number");
    value = v.get<double>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw wrong("true or false");
    value = v.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw wrong("a string");
    value = v.get<std::string>();
  } else {
    static_assert(std::is_same_v<T, std::vector<double>>);
    if (!v.is_array() ||
        !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); })) {
      throw wrong("an array of numbers");
    }
    value = v.get<std::vector<double>>();
  }
}

}  // namespace

std::string summary_to_json(const RunSummary& s) {
  json j = json::object();
  for_each_summary_field(s, [&](const char* key, const auto& value) { put_json(j, key, value); });
  return j.dump(2) + "\n";
}

RunSummary summary_from_json(const std::string& text, const std::string& origin) {
  RunSummary s;
  try {
    const json j = json::parse(text);
    if (!j.is_object()) throw IoError(origin, "summary JSON is not an object");
    for_each_summary_field(s, [&](const char* key, auto& value) { get_json(j, key, value); });
  } catch (const json::exception& e) {
    throw IoError(origin, std::string("malformed summary JSON: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw IoError(origin, std::string("malformed summary JSON: ") + e.what());
  }
  if (const std::string problem = summary_problem(s); !problem.empty()) {
    throw IoError(origin, "inconsistent summary: " + problem);
  }
  return s;
}

std::string summary_problem(const RunSummary& s) {
  std::string problem;
  for_each_summary_field(s, [&problem](const char* key, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if (!problem.empty()) return;
    const auto bad = [](double x) { return !std::isfinite(x) || x < 0.0; };
    if constexpr (std::is_same_v<T, double>) {
      if (bad(value)) problem = fmt::format("{} is {}, not a finite number >= 0", key, value);
    } else if constexpr (std::is_same_v<T, std::optional<double>>) {
      if (value && bad(*value)) {
        problem = fmt::format("{} is {}, not a finite number >= 0", key, *value);
      }
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      for (const double x : value) {
        if (bad(x)) {
          problem = fmt::format("{} holds {}, not a finite number >= 0", key, x);
          return;
        }
      }
    } else if constexpr (std::is_same_v<T, int>) {
      if (value < 1) problem = fmt::format("{} is {}, not a whole number >= 1", key, value);
    }
  });
  if (!problem.empty()) return problem;
  if (s.completed > s.total || s.failed > s.total - s.completed) {
    return fmt::format("total {} is less than completed {} + failed {}", s.total, s.completed,
                       s.failed);
  }
  if (s.replicas > s.world_size) {
    return fmt::format("replicas {} exceeds world_size {}", s.replicas, s.world_size);
  }
  const auto ranks = static_cast<std::size_t>(s.world_size);
  if (s.busy_s_per_rank.size() > ranks || s.busy_fraction_per_rank.size() > ranks) {
    return fmt::format("busy figures for more ranks than world_size {}", s.world_size);
  }
  if (s.flops_counted > s.completed) {
    return fmt::format("flops_counted {} exceeds completed {}", s.flops_counted, s.completed);
  }
  if (s.forwards_computed > s.forwards) {
    return fmt::format("forwards_computed {} exceeds forwards {}", s.forwards_computed, s.forwards);
  }
  if (s.peak_tflops && *s.peak_tflops <= 0.0) return "peak_tflops is 0";
  if (s.cache_skip_rate && *s.cache_skip_rate > 1.0) {
    return fmt::format("cache_skip_rate is {}, more than 1", *s.cache_skip_rate);
  }
  return {};
}

void write_summary_json(const std::filesystem::path& path, const RunSummary& summary) {
  // A FIFO under the name would refuse the job's verdict after all the work (issue 52, class 5).
  if (const std::string was = remove_special_file(path); !was.empty()) {
    log_warn(path.string() + " was " + was + ", not a regular file: replaced by the summary");
  }
  write_file_atomically(path, summary_to_json(summary), "the summary");
}

RunSummary read_summary_json(const std::filesystem::path& path) {
  // Never blocks on a FIFO or reads a device (issue 52, class 5).
  return summary_from_json(read_regular_file(path, "the summary"), path.string());
}

std::optional<RunSummary> usable_summary_json(const std::filesystem::path& summary_json,
                                              const std::vector<std::filesystem::path>& rank_files,
                                              std::size_t ok, std::size_t failed,
                                              const std::string& who) {
  if (!path_taken(summary_json)) return std::nullopt;
  const auto recomputed = [&](const std::string& why) -> std::optional<RunSummary> {
    log_warn(who + ": " + summary_json.string() + ": " + why +
             "; the figures are recomputed from the rows");
    return std::nullopt;
  };
  if (const std::string problem = regular_file_problem(summary_json); !problem.empty()) {
    return recomputed(problem);
  }
  if (!summary_json_current(summary_json, rank_files)) return std::nullopt;  // an earlier run's
  RunSummary s;
  try {
    s = read_summary_json(summary_json);
  } catch (const Error& e) {
    return recomputed(e.message());
  }
  if (!figures_cover_rows(s, ok, failed)) return std::nullopt;  // a resumed segment's
  return s;
}

bool figures_cover_rows(const RunSummary& s, std::size_t ok, std::size_t failed) {
  return s.skipped_resume == 0 && s.completed == ok && s.failed == failed;
}

bool summary_json_current(const std::filesystem::path& summary_json,
                          const std::vector<std::filesystem::path>& rank_files) {
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(summary_json, ec);
  if (ec) return false;
  for (const auto& file : rank_files) {
    const auto changed = std::filesystem::last_write_time(file, ec);
    if (ec || changed > written) return false;
  }
  return true;
}

double percentile(std::span<const double> values, double q) {
  if (values.empty()) return 0.0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

RankLayout rank_layout(const std::string& config_yaml, int world_size) {
  RankLayout layout;
  layout.world_size = std::max(world_size, 1);
  if (config_yaml.empty()) return layout;
  try {
    const Config config = parse_config_yaml(config_yaml, "the run's configuration");
    layout.tensor_parallel = std::max(config.parallel.tensor_parallel_size, 1);
    layout.sequence_parallel = std::max(config.parallel.sequence_parallel_size, 1);
    layout.cfg_parallel = std::max(config.parallel.cfg_parallel_size, 1);
    layout.coordinator_works = config.parallel.coordinator_runs_work || layout.world_size == 1;
    layout.runtime = config.runtime;
  } catch (const std::exception&) {  // not a configuration this build reads
    RankLayout fallback;
    fallback.world_size = layout.world_size;
    return fallback;
  }
  return layout;
}

RunSummary recompute_summary(std::span<const ResultRecord> rows, const RankLayout& layout) {
  RunSummary s;
  const int group = std::max(layout.group_size(), 1);
  s.world_size = std::max(layout.world_size, 1);
  s.tensor_parallel_size = layout.tensor_parallel;
  s.sequence_parallel_size = layout.sequence_parallel;
  s.cfg_parallel_size = layout.cfg_parallel;
  s.total = rows.size();
  std::vector<double> latencies;
  double first_start = 0.0;
  double last_end = 0.0;
  std::map<int, double> busy;  // per rank: its group's rows
  std::vector<FlopsSample> flops;
  ForwardTotals forwards;
  for (const auto& r : rows) {
    if (r.status == RequestStatus::ok) {
      ++s.completed;
      latencies.push_back(r.seconds);
      forwards.add(r.forwards, r.forwards_computed);
      if (r.model_tflop > 0.0) {
        flops.push_back({r.model_tflop, r.seconds, group, resolve_peak(layout.runtime, r.device)});
      }
    } else {
      ++s.failed;
    }
    if (s.completed + s.failed == 1 || r.start_time < first_start) first_start = r.start_time;
    last_end = std::max(last_end, r.end_time);
    if (r.rank < 0) continue;
    for (int m = 0; m < group; ++m) busy[r.rank + m] += r.seconds;
    s.world_size = std::max(s.world_size, r.rank + group);
  }
  const int extra = s.world_size - layout.world_size;  // ranks the layout did not know of
  const int working = std::max(layout.working_ranks() + std::max(extra, 0), 1);
  s.replicas = std::max(working / group, 1);
  s.makespan_s = rows.empty() ? 0.0 : std::max(last_end - first_start, 0.0);
  s.videos_per_min =
      s.makespan_s > 0.0 ? static_cast<double>(s.completed) * 60.0 / s.makespan_s : 0.0;
  s.latency_p50_s = percentile(latencies, 0.5);
  s.latency_p90_s = percentile(latencies, 0.9);
  s.latency_max_s = latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end());
  s.busy_s_per_rank.assign(static_cast<std::size_t>(s.world_size), 0.0);
  double busy_total = 0.0;
  for (const auto& [rank, seconds] : busy) {
    s.busy_s_per_rank[static_cast<std::size_t>(rank)] = seconds;
    busy_total += seconds;
  }
  s.busy_fraction_per_rank.reserve(s.busy_s_per_rank.size());
  for (const double b : s.busy_s_per_rank) {
    s.busy_fraction_per_rank.push_back(s.makespan_s > 0.0 ? b / s.makespan_s : 0.0);
  }
  s.scheduling_efficiency =
      s.makespan_s > 0.0 ? busy_total / (static_cast<double>(working) * s.makespan_s) : 0.0;
  set_flops_figures(s, flops, working);
  set_forwards_figures(s, forwards);
  return s;
}

void set_flops_figures(RunSummary& s, std::span<const FlopsSample> samples, int working_gpus) {
  s.flops_counted = samples.size();
  s.model_tflop_per_video = 0.0;
  s.achieved_tflops_per_gpu = 0.0;
  s.peak_tflops.reset();
  s.peak_source.clear();
  s.mfu.reset();
  s.makespan_mfu.reset();
  if (samples.empty()) return;
  double tflop = 0.0;
  double gpu_seconds = 0.0;
  double peak_gpu_seconds = 0.0;  // sum(peak x seconds x gpus)
  bool all_peaks = true;
  std::vector<std::string> sources;
  for (const auto& sample : samples) {
    const double gs = sample.seconds * static_cast<double>(std::max(sample.gpus, 1));
    tflop += sample.tflop;
    gpu_seconds += gs;
    if (!sample.peak) {
      all_peaks = false;
      continue;
    }
    peak_gpu_seconds += sample.peak->tflops * gs;
    if (std::find(sources.begin(), sources.end(), sample.peak->source) == sources.end()) {
      sources.push_back(sample.peak->source);
    }
  }
  s.model_tflop_per_video = tflop / static_cast<double>(samples.size());
  s.achieved_tflops_per_gpu = gpu_seconds > 0.0 ? tflop / gpu_seconds : 0.0;
  if (!all_peaks || gpu_seconds <= 0.0) return;
  const double peak = samples.size() == 1 || sources.size() == 1 ? samples.front().peak->tflops
                                                                 : peak_gpu_seconds / gpu_seconds;
  s.peak_tflops = peak;
  for (const auto& source : sources) s.peak_source += (s.peak_source.empty() ? "" : ", ") + source;
  s.mfu = s.achieved_tflops_per_gpu / peak;
  if (s.makespan_s > 0.0 && working_gpus > 0) {
    s.makespan_mfu = tflop / (s.makespan_s * static_cast<double>(working_gpus) * peak);
  }
}

std::string describe_flops(const RunSummary& s) {
  if (s.flops_counted == 0) return "not counted (no ok request with a model FLOP count)";
  std::string out = fmt::format("{:.3f} TFLOP/video ({} counted), {:.3f} TFLOP/s per GPU, MFU ",
                                s.model_tflop_per_video, s.flops_counted, s.achieved_tflops_per_gpu);
  if (!s.peak_tflops || !s.mfu) {
    return out + "n/a (no known peak: CPU or a GPU not in the table; set runtime.peak_tflops)";
  }
  out += fmt::format("{:.2f}% of {:.10g} TFLOP/s ({}), makespan MFU ", 100.0 * *s.mfu,
                     *s.peak_tflops, s.peak_source);
  out += s.makespan_mfu ? fmt::format("{:.2f}%", 100.0 * *s.makespan_mfu) : std::string("n/a");
  return out;
}

void ForwardTotals::add(int request_forwards, int request_computed) noexcept {
  if (request_forwards <= 0) return;
  forwards += static_cast<std::size_t>(request_forwards);
  computed += static_cast<std::size_t>(std::clamp(request_computed, 0, request_forwards));
}

void set_forwards_figures(RunSummary& s, const ForwardTotals& totals) {
  s.forwards = totals.forwards;
  s.forwards_computed = totals.computed;
  s.cache_skip_rate.reset();
  if (totals.forwards > 0) {
    s.cache_skip_rate =
        1.0 - static_cast<double>(totals.computed) / static_cast<double>(totals.forwards);
  }
}

bool forwards_skipped(const RunSummary& s) noexcept {
  return s.forwards > 0 && s.forwards_computed < s.forwards;
}

std::string describe_forwards(const RunSummary& s) {
  if (s.forwards == 0 || !s.cache_skip_rate) {
    return "not recorded (no ok request with a forward count)";
  }
  const std::size_t skipped = s.forwards - std::min(s.forwards_computed, s.forwards);
  return fmt::format("skip rate {:.2f}% ({} of {} transformer forwards skipped, {} computed)",
                     100.0 * *s.cache_skip_rate, skipped, s.forwards, s.forwards_computed);
}

}  // namespace omnidp::results
