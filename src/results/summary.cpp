#include "omnidp/results/summary.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "omnidp/common/error.hpp"

namespace omnidp::results {
namespace {

using nlohmann::json;

template <class T>
void get_if_present(const json& j, const char* key, T& out) {
  if (j.contains(key)) out = j.at(key).get<T>();
}

}  // namespace

std::string summary_to_json(const RunSummary& s) {
  const json j = {
      {"total", s.total},
      {"completed", s.completed},
      {"failed", s.failed},
      {"skipped_resume", s.skipped_resume},
      {"skipped_tasks", s.skipped_tasks},
      {"makespan_s", s.makespan_s},
      {"videos_per_min", s.videos_per_min},
      {"latency_p50_s", s.latency_p50_s},
      {"latency_p90_s", s.latency_p90_s},
      {"latency_max_s", s.latency_max_s},
      {"busy_s_per_rank", s.busy_s_per_rank},
      {"busy_fraction_per_rank", s.busy_fraction_per_rank},
      {"scheduling_efficiency", s.scheduling_efficiency},
      {"world_size", s.world_size},
      {"replicas", s.replicas},
      {"tensor_parallel_size", s.tensor_parallel_size},
      {"cfg_parallel_size", s.cfg_parallel_size},
      {"policy", s.policy},
      {"order", s.order},
      {"interrupted", s.interrupted},
  };
  return j.dump(2) + "\n";
}

RunSummary summary_from_json(const std::string& text, const std::string& origin) {
  RunSummary s;
  try {
    const json j = json::parse(text);
    if (!j.is_object()) throw IoError(origin, "summary JSON is not an object");
    get_if_present(j, "total", s.total);
    get_if_present(j, "completed", s.completed);
    get_if_present(j, "failed", s.failed);
    get_if_present(j, "skipped_resume", s.skipped_resume);
    get_if_present(j, "skipped_tasks", s.skipped_tasks);
    get_if_present(j, "makespan_s", s.makespan_s);
    get_if_present(j, "videos_per_min", s.videos_per_min);
    get_if_present(j, "latency_p50_s", s.latency_p50_s);
    get_if_present(j, "latency_p90_s", s.latency_p90_s);
    get_if_present(j, "latency_max_s", s.latency_max_s);
    get_if_present(j, "busy_s_per_rank", s.busy_s_per_rank);
    get_if_present(j, "busy_fraction_per_rank", s.busy_fraction_per_rank);
    get_if_present(j, "scheduling_efficiency", s.scheduling_efficiency);
    get_if_present(j, "world_size", s.world_size);
    get_if_present(j, "replicas", s.replicas);
    get_if_present(j, "tensor_parallel_size", s.tensor_parallel_size);
    get_if_present(j, "cfg_parallel_size", s.cfg_parallel_size);
    get_if_present(j, "policy", s.policy);
    get_if_present(j, "order", s.order);
    get_if_present(j, "interrupted", s.interrupted);
  } catch (const json::exception& e) {
    throw IoError(origin, std::string("malformed summary JSON: ") + e.what());
  }
  return s;
}

void write_summary_json(const std::filesystem::path& path, const RunSummary& summary) {
  std::string tmp_name = ".";
  tmp_name += path.filename().string();
  tmp_name += ".tmp-";
  tmp_name += std::to_string(::getpid());
  const auto tmp = path.parent_path() / tmp_name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << summary_to_json(summary);
    out.close();
    if (!out) throw IoError(tmp.string(), "cannot write the summary");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string(), "cannot rename the summary into place");
  }
}

RunSummary read_summary_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot read the summary");
  std::ostringstream text;
  text << in.rdbuf();
  return summary_from_json(text.str(), path.string());
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

RunSummary recompute_summary(std::span<const ResultRecord> rows, int world_size) {
  RunSummary s;
  s.world_size = std::max(world_size, 1);
  s.replicas = s.world_size;
  s.total = rows.size();
  std::vector<double> latencies;
  double first_start = 0.0;
  double last_end = 0.0;
  std::map<int, double> busy;
  for (const auto& r : rows) {
    if (r.status == RequestStatus::ok) {
      ++s.completed;
      latencies.push_back(r.seconds);
    } else {
      ++s.failed;
    }
    if (s.completed + s.failed == 1 || r.start_time < first_start) first_start = r.start_time;
    last_end = std::max(last_end, r.end_time);
    busy[r.rank] += r.seconds;
    s.world_size = std::max(s.world_size, r.rank + 1);
  }
  s.replicas = s.world_size;
  s.makespan_s = rows.empty() ? 0.0 : std::max(last_end - first_start, 0.0);
  s.videos_per_min =
      s.makespan_s > 0.0 ? static_cast<double>(s.completed) * 60.0 / s.makespan_s : 0.0;
  s.latency_p50_s = percentile(latencies, 0.5);
  s.latency_p90_s = percentile(latencies, 0.9);
  s.latency_max_s = latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end());
  s.busy_s_per_rank.assign(static_cast<std::size_t>(s.world_size), 0.0);
  double busy_total = 0.0;
  for (const auto& [rank, seconds] : busy) {
    if (rank >= 0) s.busy_s_per_rank[static_cast<std::size_t>(rank)] = seconds;
    busy_total += seconds;
  }
  s.busy_fraction_per_rank.reserve(s.busy_s_per_rank.size());
  for (const double b : s.busy_s_per_rank) {
    s.busy_fraction_per_rank.push_back(s.makespan_s > 0.0 ? b / s.makespan_s : 0.0);
  }
  s.scheduling_efficiency =
      s.makespan_s > 0.0 ? busy_total / (static_cast<double>(s.replicas) * s.makespan_s) : 0.0;
  return s;
}

}  // namespace omnidp::results
