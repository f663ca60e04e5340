#include "omnidp/export/export_sink.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "omnidp/common/image.hpp"
#include "results/test_util.hpp"

namespace omnidp::video_export {
namespace {

namespace fs = std::filesystem;
namespace rt = results::testing;

// Records the calls; checks that nothing was exported yet when write() is called.
class RecordingSink final : public ResultSink {
 public:
  explicit RecordingSink(fs::path export_dir) : export_dir_(std::move(export_dir)) {}
  void write(const ResultRecord& record, const Video* video) override {
    calls.push_back("write " + record.id + (video != nullptr ? " +video" : ""));
    exported_before.push_back(fs::exists(export_dir_ / record.id));
  }
  void close() override { calls.emplace_back("close"); }
  std::vector<std::string> calls;
  std::vector<bool> exported_before;

 private:
  fs::path export_dir_;
};

TEST(ExportingSink, WritesInnerFirstThenExportsOkVideos) {
  rt::ScratchDir dir("sink");
  OutputConfig output;
  output.dir = dir.path().string();
  output.export_formats = {"png"};
  auto inner = std::make_unique<RecordingSink>(run_export_dir(output.dir));
  RecordingSink* seen = inner.get();
  auto sink = with_export(std::move(inner), output);
  auto* exporting = dynamic_cast<ExportingSink*>(sink.get());
  ASSERT_NE(exporting, nullptr);

  const Video v = rt::video_for("a");
  sink->write(rt::ok_record("a", v), &v);
  sink->write(rt::failed_record("b", "boom"), nullptr);
  sink->close();
  EXPECT_EQ(seen->calls, (std::vector<std::string>{"write a +video", "write b", "close"}));
  EXPECT_EQ(seen->exported_before, (std::vector<bool>{false, false}));
  EXPECT_EQ(exporting->exported(), 1U);
  EXPECT_EQ(exporting->export_failures(), 0U);
  const fs::path frame = dir.path() / "export" / "a" / "frame-00001.png";
  const RgbImage image = decode_image_rgb(frame, 100);
  EXPECT_EQ(std::vector<std::uint8_t>(v.data.begin() + 72, v.data.end()), image.data);
  EXPECT_FALSE(fs::exists(dir.path() / "export" / "b"));
}

TEST(ExportingSink, AnExportFailureIsCountedNotThrown) {
  rt::ScratchDir dir("sink-fail");
  std::ofstream(dir.path() / "export") << "a file where the folder should be";
  ExportingSink sink(std::make_unique<RecordingSink>(dir.path() / "export"), dir.path() / "export",
                     {ExportFormat::png});
  const Video v = rt::video_for("a");
  EXPECT_NO_THROW(sink.write(rt::ok_record("a", v), &v));
  EXPECT_EQ(sink.exported(), 0U);
  EXPECT_EQ(sink.export_failures(), 1U);
}

TEST(ExportingSink, NoFormatsMeansTheInnerSinkItself) {
  OutputConfig output;
  auto inner = std::make_unique<RecordingSink>("x");
  ResultSink* raw = inner.get();
  EXPECT_EQ(with_export(std::move(inner), output).get(), raw);
}

}  // namespace
}  // namespace omnidp::video_export
