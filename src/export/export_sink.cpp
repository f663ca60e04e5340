#include "omnidp/export/export_sink.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"

namespace omnidp::video_export {

ExportingSink::ExportingSink(std::unique_ptr<ResultSink> inner, std::filesystem::path out_dir,
                             std::vector<ExportFormat> formats)
    : inner_(std::move(inner)), out_dir_(std::move(out_dir)), formats_(std::move(formats)) {
  if (!inner_) throw RuntimeError("ExportingSink: no inner sink");
}

void ExportingSink::write(const ResultRecord& record, const Video* video) {
  inner_->write(record, video);  // durable first; an exception here is the writer's failure
  if (record.status != RequestStatus::ok || video == nullptr) return;
  for (const auto format : formats_) {
    try {
      (void)export_video(*video, record.fps, format, out_dir_, record.id);
      ++exported_;
    } catch (const std::exception& e) {
      ++failures_;
      log_warn("export: '" + record.id + "' as " + to_string(format) + " failed: " + e.what());
    }
  }
}

void ExportingSink::close() { inner_->close(); }

std::filesystem::path run_export_dir(const std::filesystem::path& output_dir) {
  return output_dir / "export";
}

std::vector<ExportFormat> export_formats_of(const OutputConfig& output) {
  check_export_support(output);
  std::vector<ExportFormat> formats;
  for (const auto& name : output.export_formats) formats.push_back(*parse_export_format(name));
  return formats;
}

std::unique_ptr<ResultSink> with_export(std::unique_ptr<ResultSink> inner,
                                        const OutputConfig& output) {
  if (output.export_formats.empty()) return inner;
  return std::make_unique<ExportingSink>(std::move(inner), run_export_dir(output.dir),
                                         export_formats_of(output));
}

}  // namespace omnidp::video_export
