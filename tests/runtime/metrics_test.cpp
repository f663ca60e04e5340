#include "omnidp/runtime/metrics.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "omnidp/common/error.hpp"
#include "omnidp/runtime/coordinator.hpp"
#include "omnidp/runtime/transport.hpp"

namespace omnidp::runtime {
namespace {

namespace fs = std::filesystem;

// A strict parser of the Prometheus text exposition format (0.0.4) for the subset a textfile
// holds: HELP and TYPE once per family, before its samples; metric and label names per the
// data model; label values quoted with \\, \" and \n escapes; values as Go's ParseFloat reads
// them (NaN, +Inf, -Inf); counters end in _total; no series twice. Throws std::runtime_error
// naming the line.
struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0.0;
};
struct Family {
  std::string type;
  std::string help;
  std::vector<Sample> samples;
};

std::map<std::string, Family> parse_text_format(const std::string& text) {
  static const std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex label_name_re("[a-zA-Z_][a-zA-Z0-9_]*");
  static const std::regex number_re(R"([+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?))");
  std::map<std::string, Family> families;
  std::set<std::string> series;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("line " + std::to_string(n) + ": " + why + ": '" + line + "'");
  };
  if (text.empty() || text.back() != '\n') throw std::runtime_error("does not end in a newline");
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name;
      words >> hash >> kind >> name;
      if (hash != "#" || (kind != "HELP" && kind != "TYPE")) continue;  // a plain comment
      if (!std::regex_match(name, name_re)) fail("bad metric name");
      std::string rest;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      Family& f = families[name];
      if (!f.samples.empty()) fail(kind + " after the family's samples");
      if (kind == "TYPE") {
        if (!f.type.empty()) fail("second TYPE");
        if (rest != "counter" && rest != "gauge" && rest != "untyped" && rest != "histogram" &&
            rest != "summary") {
          fail("unknown type");
        }
        f.type = rest;
      } else {
        if (!f.help.empty()) fail("second HELP");
        f.help = rest;
      }
      continue;
    }
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    const std::string name = line.substr(0, i);
    if (!std::regex_match(name, name_re)) fail("bad metric name");
    Sample s;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const std::size_t eq = line.find('=', i);
        if (eq == std::string::npos) fail("label without '='");
        const std::string label = line.substr(i, eq - i);
        if (!std::regex_match(label, label_name_re) || label.rfind("__", 0) == 0)
          fail("bad label name");
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') fail("unquoted label value");
        ++i;
        std::string value;
        while (true) {
          if (i >= line.size()) fail("unterminated label value");
          const char c = line[i++];
          if (c == '"') break;
          if (c == '\\') {
            if (i >= line.size()) fail("dangling escape");
            const char e = line[i++];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              fail("bad escape");
            }
          } else {
            value += c;
          }
        }
        if (!s.labels.emplace(label, value).second) fail("label twice");
        if (i < line.size() && line[i] == ',') ++i;
      }
    }
    if (i >= line.size() || line[i] != ' ') fail("no value");
    const std::string value = line.substr(i + 1);
    if (value == "NaN") {
      s.value = std::nan("");
    } else if (value == "+Inf" || value == "Inf") {
      s.value = INFINITY;
    } else if (value == "-Inf") {
      s.value = -INFINITY;
    } else if (std::regex_match(value, number_re)) {
      s.value = std::stod(value);
    } else {
      fail("bad value (or a timestamp, which a textfile must not have)");
    }
    auto it = families.find(name);
    if (it == families.end() || it->second.type.empty()) fail("sample before its TYPE");
    if (it->second.help.empty()) fail("sample without HELP");
    if (it->second.type == "counter" && !name.ends_with("_total"))
      fail("counter not named *_total");
    std::string key = name;
    for (const auto& [k, v] : s.labels) key += "|" + k + "=" + v;
    if (!series.insert(key).second) fail("series twice");
    it->second.samples.push_back(std::move(s));
  }
  return families;
}

MetricsSnapshot sample_snapshot() {
  MetricsSnapshot s;
  s.completed = 37;
  s.failed = 1;
  s.queued = 80;
  s.running = 2;
  s.videos_per_minute = 12.5;
  s.elapsed_s = 177.6;
  s.eta_s = 400.0;
  s.ranks = {{0, 0.95, "cat/003"}, {1, 0.5, ""}, {2, 1.0, "say \"hi\"\\now"}};
  return s;
}

TEST(Metrics, ExactTextFormat) {
  EXPECT_EQ(format_prometheus(sample_snapshot()),
            "# HELP omnidp_requests_completed_total Requests completed ok in this run.\n"
            "# TYPE omnidp_requests_completed_total counter\n"
            "omnidp_requests_completed_total 37\n"
            "# HELP omnidp_requests_failed_total Requests recorded failed in this run.\n"
            "# TYPE omnidp_requests_failed_total counter\n"
            "omnidp_requests_failed_total 1\n"
            "# HELP omnidp_requests_queued Requests not yet handed to a replica.\n"
            "# TYPE omnidp_requests_queued gauge\n"
            "omnidp_requests_queued 80\n"
            "# HELP omnidp_requests_running Requests handed out and not yet durable.\n"
            "# TYPE omnidp_requests_running gauge\n"
            "omnidp_requests_running 2\n"
            "# HELP omnidp_videos_per_minute Videos completed per minute since the start.\n"
            "# TYPE omnidp_videos_per_minute gauge\n"
            "omnidp_videos_per_minute 12.5\n"
            "# HELP omnidp_elapsed_seconds Seconds since the first request was handed out.\n"
            "# TYPE omnidp_elapsed_seconds gauge\n"
            "omnidp_elapsed_seconds 177.6\n"
            "# HELP omnidp_eta_seconds Estimated seconds until every request is done (NaN until "
            "the cost model is calibrated).\n"
            "# TYPE omnidp_eta_seconds gauge\n"
            "omnidp_eta_seconds 400\n"
            "# HELP omnidp_rank_busy_fraction Busy seconds of the rank's replica divided by the "
            "elapsed seconds.\n"
            "# TYPE omnidp_rank_busy_fraction gauge\n"
            "omnidp_rank_busy_fraction{rank=\"0\"} 0.95\n"
            "omnidp_rank_busy_fraction{rank=\"1\"} 0.5\n"
            "omnidp_rank_busy_fraction{rank=\"2\"} 1\n"
            "# HELP omnidp_rank_current_request 1 for the request the rank's replica is "
            "generating (no sample while idle).\n"
            "# TYPE omnidp_rank_current_request gauge\n"
            "omnidp_rank_current_request{rank=\"0\",request_id=\"cat/003\"} 1\n"
            "omnidp_rank_current_request{rank=\"2\",request_id=\"say \\\"hi\\\"\\\\now\"} 1\n");
}

TEST(Metrics, StrictParserReadsBackEveryValue) {
  const auto f = parse_text_format(format_prometheus(sample_snapshot()));
  EXPECT_EQ(f.size(), 9U);
  EXPECT_EQ(f.at("omnidp_requests_completed_total").type, "counter");
  EXPECT_EQ(f.at("omnidp_requests_completed_total").samples.at(0).value, 37.0);
  EXPECT_EQ(f.at("omnidp_requests_queued").samples.at(0).value, 80.0);
  EXPECT_EQ(f.at("omnidp_eta_seconds").samples.at(0).value, 400.0);
  const auto& busy = f.at("omnidp_rank_busy_fraction").samples;
  ASSERT_EQ(busy.size(), 3U);
  EXPECT_EQ(busy[0].labels.at("rank"), "0");
  EXPECT_EQ(busy[0].value, 0.95);
  const auto& current = f.at("omnidp_rank_current_request").samples;
  ASSERT_EQ(current.size(), 2U);
  EXPECT_EQ(current[1].labels.at("request_id"), "say \"hi\"\\now");  // escapes round-trip
  // Unknown ETA is NaN, which the format allows.
  MetricsSnapshot unknown = sample_snapshot();
  unknown.eta_s = -1.0;
  EXPECT_TRUE(std::isnan(
      parse_text_format(format_prometheus(unknown)).at("omnidp_eta_seconds").samples.at(0).value));
}

TEST(Metrics, StrictParserRejectsMalformedText) {
  EXPECT_THROW(parse_text_format("x 1\n"), std::runtime_error);  // no TYPE
  EXPECT_THROW(parse_text_format("# HELP x h\n# TYPE x counter\nx 1\n"), std::runtime_error);
  EXPECT_THROW(parse_text_format("# HELP x h\n# TYPE x gauge\nx{a=b} 1\n"), std::runtime_error);
  EXPECT_THROW(parse_text_format("# HELP x h\n# TYPE x gauge\nx 1\nx 2\n"), std::runtime_error);
  EXPECT_THROW(parse_text_format("# HELP x h\n# TYPE x gauge\nx one\n"), std::runtime_error);
  EXPECT_THROW(parse_text_format("# HELP x h\n# TYPE x gauge\nx 1"), std::runtime_error);
  EXPECT_NO_THROW(parse_text_format("# HELP x_total h\n# TYPE x_total counter\nx_total 1\n"));
}

TEST(Metrics, TextfileIsReplacedAtomicallyAtTheInterval) {
  const fs::path dir = fs::temp_directory_path() / ("omnidp-metrics-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "omnidp.prom";
  MetricsTextfile metrics(file, 5.0);
  MetricsSnapshot s = sample_snapshot();
  EXPECT_TRUE(metrics.update(s, 100.0));  // the first update writes
  s.completed = 38;
  EXPECT_FALSE(metrics.update(s, 104.9));  // not due
  auto read = [&] {
    std::ifstream in(file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(parse_text_format(read()).at("omnidp_requests_completed_total").samples[0].value, 37.0);
  EXPECT_TRUE(metrics.update(s, 105.0));
  EXPECT_EQ(parse_text_format(read()).at("omnidp_requests_completed_total").samples[0].value, 38.0);
  s.completed = 39;
  metrics.finish(s);  // always writes
  EXPECT_EQ(read(), format_prometheus(s));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1U);  // no temporary file left beside it
  // An unwritable place is a warning for the textfile.
  MetricsTextfile broken(dir / "missing" / "m.prom", 1.0);
  EXPECT_FALSE(broken.update(s, 0.0));
  fs::remove_all(dir);
}

// The coordinator's view: two replicas, one request running on each, then one done.
TEST(Metrics, CoordinatorReportsCountsAndCurrentRequests) {
  const fs::path dir = fs::temp_directory_path() / ("omnidp-metrics-c-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  InProcessNetwork net(2, Delivery::manual);
  std::vector<Request> requests;
  for (int i = 0; i < 5; ++i) {
    Request r;
    r.id = "r" + std::to_string(i);
    r.index = static_cast<std::size_t>(i);
    r.num_frames = 5;
    r.height = 16;
    r.width = 16;
    r.num_inference_steps = 1;
    r.guidance_scale = 1.0;
    r.input_key = "key" + r.id;
    requests.push_back(r);
  }
  VectorSource source(requests);
  double clock = 100.0;
  CoordinatorOptions o;
  o.config.model.name = "synthetic";
  o.config.scheduler.policy = SchedulerPolicy::round_robin;
  o.config.scheduler.prefetch = 0;
  o.config.output.metrics_textfile = (dir / "omnidp.prom").string();
  o.config.output.metrics_interval_s = 5.0;
  o.topology = make_topology(o.config.parallel, 2);
  o.plan.to_run = requests.size();
  o.now = [&clock] { return clock; };
  Coordinator c(o, source,
                [&](int dest, const Message& m) { send_message(net.endpoint(0), dest, m); });
  auto pump = [&] {
    while (net.deliver_all() > 0) {
      for (int r = 0; r < net.size(); ++r) {
        while (auto env = poll_message(net.endpoint(r))) {
          if (r == 0 && for_coordinator(env->message)) c.handle(*env);
        }
      }
    }
  };
  auto reply = [&](int rank, const Message& m) {
    send_message(net.endpoint(rank), 0, m);
    pump();
  };
  c.start();
  pump();
  reply(0, ReadyMsg{0, 1, "cpu", true, {}});
  reply(1, ReadyMsg{1, 1, "cpu", true, {}});
  clock = 110.0;
  c.tick();
  auto read = [&] {
    std::ifstream in(dir / "omnidp.prom");
    return parse_text_format(
        std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  };
  auto f = read();
  EXPECT_EQ(f.at("omnidp_requests_queued").samples[0].value, 3.0);
  EXPECT_EQ(f.at("omnidp_requests_running").samples[0].value, 2.0);
  EXPECT_EQ(f.at("omnidp_requests_completed_total").samples[0].value, 0.0);
  EXPECT_TRUE(std::isnan(f.at("omnidp_eta_seconds").samples[0].value));
  ASSERT_EQ(f.at("omnidp_rank_current_request").samples.size(), 2U);
  EXPECT_EQ(f.at("omnidp_rank_current_request").samples[0].labels.at("request_id"), "r0");
  EXPECT_EQ(f.at("omnidp_rank_current_request").samples[1].labels.at("request_id"), "r1");
  // r0 done after 4 s on rank 0, at 20 s elapsed (the interval passed): rank 0 gets r2.
  clock = 120.0;
  reply(0, DoneMsg{"r0", RequestStatus::ok, "", 0, 0, 1, 0, 0, 4.0});
  f = read();
  EXPECT_EQ(f.at("omnidp_requests_completed_total").samples[0].value, 1.0);
  EXPECT_EQ(f.at("omnidp_requests_queued").samples[0].value, 2.0);
  EXPECT_EQ(f.at("omnidp_videos_per_minute").samples[0].value, 3.0);   // 1 in 20 s
  EXPECT_EQ(f.at("omnidp_rank_busy_fraction").samples[0].value, 0.2);  // 4 s of 20 s
  EXPECT_EQ(f.at("omnidp_rank_busy_fraction").samples[1].value, 0.0);
  EXPECT_EQ(f.at("omnidp_rank_current_request").samples[0].labels.at("request_id"), "r2");
  EXPECT_FALSE(std::isnan(f.at("omnidp_eta_seconds").samples[0].value));  // calibrated now
  const MetricsSnapshot m = c.metrics();
  EXPECT_EQ(m.completed, 1U);
  EXPECT_EQ(m.running, 2U);
  // Optional: an exact copy for external parsers (the prometheus_client check).
  if (const char* out = std::getenv("OMNIDP_METRICS_SAMPLE")) {
    fs::copy_file(dir / "omnidp.prom", out, fs::copy_options::overwrite_existing);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::runtime
