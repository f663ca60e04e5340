// omni-dp-bench-manifest: how fast and in how much memory the streaming manifest reader goes.
// Writes an N-line manifest to a temporary folder (or reads --manifest FILE), reads it with
// ManifestReader and prints lines per second, the reader's buffer high-water mark, the
// duplicate-id set's size and the process's resident memory (VmRSS / VmHWM).
//
//   omni-dp-bench-manifest --lines 1000000

#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "omnidp/manifest/manifest.hpp"

namespace {

namespace fs = std::filesystem;

// A /proc/self/status figure in KiB ("VmRSS", "VmHWM"), or -1.
long status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measure the streaming manifest reader"};
  std::size_t lines = 1000000;
  std::string manifest;
  app.add_option("--lines", lines, "lines to generate (ignored with --manifest)");
  app.add_option("--manifest", manifest, "read this manifest instead of a generated one");
  CLI11_PARSE(app, argc, argv);

  fs::path dir;
  fs::path path = manifest;
  if (manifest.empty()) {
    dir = fs::temp_directory_path() / ("omnidp_bench_manifest_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = dir / "bench.jsonl";
    std::ofstream out(path, std::ios::binary);
    for (std::size_t i = 0; i < lines; ++i) {
      out << R"({"id":"request-)" << i << R"(","prompt":"a short film of scene )" << i
          << R"(, slow camera, soft light","seed":)" << i << R"(,"num_frames":33})"
          << "\n";
    }
  }
  const long rss_before = status_kib("VmRSS");

  omnidp::ManifestOptions options;
  options.path = path;
  options.model_name = "tiny-wan";
  options.weights_identity = "random:0";
  const auto start = std::chrono::steady_clock::now();
  omnidp::ManifestReader reader(options);
  std::size_t requests = 0;
  std::size_t errors = 0;
  for (;;) {
    try {
      if (!reader.next()) break;
      ++requests;
    } catch (const omnidp::ManifestError& e) {
      if (errors++ < 5) std::cerr << e.what() << "\n";
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const auto size = fs::file_size(path);
  std::printf("manifest            %s (%.1f MiB, %zu lines)\n", path.c_str(), mib(double(size)),
              reader.line());
  std::printf("requests            %zu valid, %zu errors\n", requests, errors);
  std::printf("read time           %.2f s  (%.0f lines/s, %.1f MiB/s)\n", seconds,
              double(reader.line()) / seconds, mib(double(size)) / seconds);
  std::printf("peak line buffers   %zu bytes\n", reader.peak_buffer_bytes());
  std::printf("id set              %zu bytes (%.1f MiB) for %zu ids\n", reader.id_set_bytes(),
              mib(double(reader.id_set_bytes())), requests);
  std::printf("resident memory     %.1f MiB before reading, %.1f MiB after, peak %.1f MiB\n",
              double(rss_before) / 1024.0, double(status_kib("VmRSS")) / 1024.0,
              double(status_kib("VmHWM")) / 1024.0);
  if (!dir.empty()) fs::remove_all(dir);
  return 0;
}
