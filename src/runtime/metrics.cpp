#include "omnidp/runtime/metrics.hpp"
#include "omnidp/common/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"

namespace omnidp::runtime {
namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{:.6g}", v);
}

std::string label_value(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void family(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

}  // namespace

std::string format_prometheus(const MetricsSnapshot& s) {
  std::ostringstream o;
  family(o, "omnidp_requests_completed_total", "counter", "Requests completed ok in this run.");
  o << "omnidp_requests_completed_total " << s.completed << "\n";
  family(o, "omnidp_requests_failed_total", "counter", "Requests recorded failed in this run.");
  o << "omnidp_requests_failed_total " << s.failed << "\n";
  family(o, "omnidp_requests_queued", "gauge", "Requests not yet handed to a replica.");
  o << "omnidp_requests_queued " << s.queued << "\n";
  family(o, "omnidp_requests_running", "gauge", "Requests handed out and not yet durable.");
  o << "omnidp_requests_running " << s.running << "\n";
  family(o, "omnidp_videos_per_minute", "gauge", "Videos completed per minute since the start.");
  o << "omnidp_videos_per_minute " << number(s.videos_per_minute) << "\n";
  family(o, "omnidp_elapsed_seconds", "gauge", "Seconds since the first request was handed out.");
  o << "omnidp_elapsed_seconds " << number(s.elapsed_s) << "\n";
  family(o, "omnidp_eta_seconds", "gauge",
         "Estimated seconds until every request is done (NaN until the cost model is calibrated).");
  o << "omnidp_eta_seconds " << (s.eta_s < 0.0 ? std::string("NaN") : number(s.eta_s)) << "\n";
  family(o, "omnidp_rank_busy_fraction", "gauge",
         "Busy seconds of the rank's replica divided by the elapsed seconds.");
  for (const auto& r : s.ranks) {
    o << "omnidp_rank_busy_fraction{rank=\"" << r.rank << "\"} " << number(r.busy_fraction) << "\n";
  }
  family(o, "omnidp_rank_current_request", "gauge",
         "1 for the request the rank's replica is generating (no sample while idle).");
  for (const auto& r : s.ranks) {
    if (r.current_request.empty()) continue;
    o << "omnidp_rank_current_request{rank=\"" << r.rank << "\",request_id=\""
      << label_value(r.current_request) << "\"} 1\n";
  }
  return o.str();
}

MetricsTextfile::MetricsTextfile(std::filesystem::path path, double interval_s)
    : path_(std::move(path)), interval_s_(interval_s) {}

bool MetricsTextfile::update(const MetricsSnapshot& s, double now_s) {
  if (written_ && now_s - last_s_ < interval_s_) return false;
  last_s_ = now_s;
  written_ = true;
  return write(s);
}

void MetricsTextfile::finish(const MetricsSnapshot& s) { (void)write(s); }

bool MetricsTextfile::write(const MetricsSnapshot& s) {
  try {
    write_file_atomically(path_, format_prometheus(s), "the metrics textfile");
    return true;
  } catch (const Error& e) {
    if (!warned_) log_warn(std::string("output.metrics_textfile: ") + e.what() + " (retried)");
    warned_ = true;
    return false;
  }
}

}  // namespace omnidp::runtime
