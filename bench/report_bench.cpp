// The HTML report at scale (docs/export.md, "HTML report"). Not a test: it prints figures, one
// "bench: <key> <value>" line each.
//   omni-dp-bench-report DIR [ROWS] [RANKS]
// fabricates a run of ROWS requests (default 100000) over RANKS ranks (default 64) in DIR: rank
// files written through RankWriter without videos (as with output.store_video: false), mixed
// sizes (three frame counts x two sizes, durations from 20 to 160 s), one failure in 500, each
// rank working back to back from a shared start; then reads it as omni-dp-inspect does and
// writes DIR/report.html. Prints the time to write the files, to read them, to render, and the
// report's size.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/export/html_report.hpp"
#include "omnidp/export/stored_results.hpp"
#include "omnidp/results/rank_writer.hpp"

namespace fs = std::filesystem;
using namespace omnidp;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void figure(const char* key, double value) {
  std::printf("bench: %s %.3f\n", key, value);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: omni-dp-bench-report DIR [ROWS] [RANKS]\n");
    return 2;
  }
  const fs::path dir = argv[1];
  const long rows = argc > 2 ? std::atol(argv[2]) : 100000;
  const int ranks = argc > 3 ? std::atoi(argv[3]) : 64;
  if (rows <= 0 || ranks <= 0) {
    std::fprintf(stderr, "ROWS and RANKS must be positive\n");
    return 2;
  }
  fs::remove_all(dir);
  OutputConfig output;
  output.dir = dir.string();
  output.store_video = false;

  const auto t_write = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<results::RankWriter>> writers;
  std::vector<double> clock(static_cast<std::size_t>(ranks), 1.7e9);
  for (int r = 0; r < ranks; ++r) {
    results::RankFileInfo info;
    info.rank = r;
    info.world_size = ranks;
    info.host = "node-" + std::to_string(r / 8);
    info.device = "cuda:" + std::to_string(r % 8);
    info.model = "synthetic";
    writers.push_back(std::make_unique<results::RankWriter>(dir, info, output));
  }
  const int frames[] = {33, 61, 121};
  const int sizes[][2] = {{848, 480}, {1280, 720}};
  for (long k = 0; k < rows; ++k) {
    const int r = static_cast<int>(k % ranks);
    ResultRecord rec;
    char id[32];
    std::snprintf(id, sizeof id, "req-%07ld", k);
    rec.id = id;
    rec.input_key = std::string(64, 'a');
    const int f = frames[k % 3];
    const auto& s = sizes[(k / 3) % 2];
    rec.frames = f;
    rec.width = s[0];
    rec.height = s[1];
    rec.steps = 50;
    rec.rank = r;
    rec.replica = r;
    rec.host = "node-" + std::to_string(r / 8);
    rec.device = "cuda:" + std::to_string(r % 8);
    // 20 s for 33x848x480 up to ~160 s for 121x1280x720, with a deterministic jitter.
    const double cost = 20.0 * (f / 33.0) * (s[0] * s[1] / (848.0 * 480.0)) * 0.6;
    const double seconds = cost * (0.9 + 0.2 * static_cast<double>((k * 7919) % 101) / 100.0);
    auto& now = clock[static_cast<std::size_t>(r)];
    rec.start_time = now;
    rec.end_time = now + seconds;
    rec.seconds = seconds;
    now = rec.end_time + 0.05;
    if (k % 500 == 499) {
      rec.status = RequestStatus::failed;
      rec.error = "CUDA out of memory (fabricated)";
    } else {
      rec.video_sha256 = std::string(64, 'b');
    }
    writers[static_cast<std::size_t>(r)]->write(rec, nullptr);
  }
  for (auto& w : writers) w->close();
  figure("write_s", seconds_since(t_write));

  const auto t_read = std::chrono::steady_clock::now();
  const video_export::StoredRun run = video_export::read_stored_run(dir);
  figure("read_s", seconds_since(t_read));
  const auto t_render = std::chrono::steady_clock::now();
  const std::size_t bytes =
      video_export::write_html_report(run, video_export::ReportOptions{}, dir / "report.html");
  figure("render_s", seconds_since(t_render));
  figure("rows", static_cast<double>(run.rows.size()));
  figure("ranks", ranks);
  figure("report_bytes", static_cast<double>(bytes));
  figure("report_kib", static_cast<double>(bytes) / 1024.0);
  return 0;
}
