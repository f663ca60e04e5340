#pragma once
// Export during a run (output.export, docs/export.md): a ResultSink that hands every
// record to the real sink (the rank's HDF5 writer) and, once that write has returned (the
// video is durable), writes the ok video as each configured format into <output.dir>/export/.
// Runs on the rank's writer thread, like the sink it wraps: the workers never wait for it.
// An export failure does not fail the request or the rank: it is logged as a warning and
// counted (the video is in the HDF5 file; omni-dp-export can write it again later).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <vector>

#include "omnidp/export/video_export.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::video_export {

class ExportingSink final : public ResultSink {
 public:
  // `formats` from check_export_support-validated output.export.
  ExportingSink(std::unique_ptr<ResultSink> inner, std::filesystem::path out_dir,
                std::vector<ExportFormat> formats);

  void write(const ResultRecord& record, const Video* video) override;
  void close() override;

  [[nodiscard]] std::size_t exported() const noexcept { return exported_; }
  [[nodiscard]] std::size_t export_failures() const noexcept { return failures_; }

 private:
  std::unique_ptr<ResultSink> inner_;
  std::filesystem::path out_dir_;
  std::vector<ExportFormat> formats_;
  std::size_t exported_ = 0;
  std::size_t failures_ = 0;
};

// The folder a run exports into: <output dir>/export.
[[nodiscard]] std::filesystem::path run_export_dir(const std::filesystem::path& output_dir);
// output.export as formats (unknown names throw ConfigError like check_export_support).
[[nodiscard]] std::vector<ExportFormat> export_formats_of(const OutputConfig& output);
// `inner` itself when output.export is empty, else an ExportingSink around it.
[[nodiscard]] std::unique_ptr<ResultSink> with_export(std::unique_ptr<ResultSink> inner,
                                                      const OutputConfig& output);

}  // namespace omnidp::video_export
