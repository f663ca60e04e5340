#pragma once
// The HTML report of a run (docs/export.md, "HTML report"): one self-contained file (inline
// SVG and CSS, one small inline script, no network access) with the per-rank timeline,
// throughput and busy ranks over time, the latency histogram, latency per size, the summary
// figures, the failures, the segments of a resumed run and an optional thumbnail strip.
// Plain functions, no shared state.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "omnidp/export/stored_results.hpp"

namespace omnidp::video_export {

struct ReportOptions {
  std::size_t thumbnails = 0;      // videos in the thumbnail strip (first, middle, last frame)
  int thumbnail_width = 160;       // pixels; frames are scaled down (never up) to it
  int plot_width = 1000;           // pixels of every time axis
  double min_bar_px = 2.0;         // timeline bars narrower than this are aggregated per pixel
  std::size_t max_failures = 200;  // failures listed (the count is always given)
  std::string title;               // "" = "omni-dp run <source>"
};

// The report as one HTML document. Thumbnails read the stored videos (Hdf5Error when one is
// unreadable); everything else comes from `run`.
[[nodiscard]] std::string render_html_report(const StoredRun& run, const ReportOptions& options);

// render_html_report written atomically (temporary file beside `path`, then rename). Returns
// the bytes written. Throws IoError.
std::size_t write_html_report(const StoredRun& run, const ReportOptions& options,
                              const std::filesystem::path& path);

}  // namespace omnidp::video_export
