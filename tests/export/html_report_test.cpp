#include "omnidp/export/html_report.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include "omnidp/common/base64.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/image.hpp"
#include "results/test_util.hpp"

namespace omnidp::video_export {
namespace {

using results::testing::ScratchDir;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Three ranks of a world of three, one failure whose id and error need escaping.
TEST(HtmlReport, OneLanePerRankAndOneBarPerRequestWithItsId) {
  ScratchDir dir("report");
  results::testing::write_rank(dir.path(), 0, 3, {"a", "bb"});
  results::testing::write_rank(dir.path(), 1, 3, {"ccc"});
  results::testing::write_failed_rank(dir.path(), 2, 3, {"q&a<1>"});
  const StoredRun run = read_stored_run(dir.path());
  const std::string html = render_html_report(run, ReportOptions{});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0U);
  EXPECT_EQ(count(html, "<g class=\"lane\""), 3U);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(html.find("<g class=\"lane\" data-rank=\"" + std::to_string(r) + "\">"),
              std::string::npos);
  }
  EXPECT_EQ(count(html, "<rect class=\"bar ok\""), 3U);
  EXPECT_EQ(count(html, "<rect class=\"bar failed\""), 1U);
  EXPECT_EQ(count(html, "class=\"agg\""), 0U);
  EXPECT_NE(html.find("<title>bb (rank 0, ok, 1.50 s, 2x6x4)</title>"), std::string::npos) << html;
  EXPECT_NE(html.find("<title>q&amp;a&lt;1&gt; (rank 2, failed, 0.50 s, 2x6x4: boom: "
                      "q&amp;a&lt;1&gt;)</title>"),
            std::string::npos);
  EXPECT_EQ(html.find("q&a<1>"), std::string::npos);  // never unescaped
  EXPECT_NE(html.find("<h2 id=\"failures\">Failures (1)</h2>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>q&amp;a&lt;1&gt;</td><td>2</td><td>1</td>"), std::string::npos);
  // No network: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src=\"http"), std::string::npos);
  // One segment, from the rank files.
  EXPECT_NE(html.find("1 segment (not resumed)."), std::string::npos);
  // Per size: one group, 3 ok, 1 failed.
  EXPECT_NE(html.find("<tr><td>2</td><td>6x4</td><td>3</td><td>1</td>"), std::string::npos);
}

TEST(HtmlReport, ResumedRunShowsItsSegments) {
  ScratchDir dir("report");
  results::testing::write_rank(dir.path(), 0, 1, {"a", "b"});
  results::testing::write_rank(dir.path(), 0, 1, {"cc"});  // the next run: rank-00000.1.h5
  const std::string html = render_html_report(read_stored_run(dir.path()), ReportOptions{});
  EXPECT_NE(html.find("2 segments: the run was resumed."), std::string::npos) << html;
  EXPECT_NE(html.find("<tr><td>0</td><td>1</td><td>2</td><td>0</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>1</td><td>1</td><td>1</td><td>0</td>"), std::string::npos);
}

// 10^4 back-to-back one-second requests on 4 ranks: 0.4 px each, so no bar is drawn alone;
// each fully busy lane is one aggregated rect, a failure in lane 2 one red rect besides.
TEST(HtmlReport, BarsUnderAPixelAreAggregated) {
  StoredRun run;
  run.source = "fabricated";
  run.summary.world_size = 4;
  for (int i = 0; i < 10000; ++i) {
    results::StoredRow row;
    auto& r = row.record;
    r.id = std::to_string(i);
    r.id.insert(0, 1, 'r');  // (not "r" + ...: GCC 12's -Wrestrict false positive)
    r.rank = i % 4;
    r.start_time = 1000.0 + static_cast<double>(i / 4);
    r.end_time = r.start_time + 1.0;
    r.seconds = 1.0;
    r.frames = 2;
    r.width = 6;
    r.height = 4;
    r.status = i == 5002 ? RequestStatus::failed : RequestStatus::ok;
    if (i == 5002) r.error = "boom";
    row.file = "rank-0000" + std::to_string(i % 4) + ".h5";
    run.rows.push_back(std::move(row));
  }
  const std::string html = render_html_report(run, ReportOptions{});
  EXPECT_EQ(count(html, "<g class=\"lane\""), 4U);
  EXPECT_EQ(count(html, "class=\"bar "), 0U);
  // Lanes 0, 1, 3 one rect each; lane 2: ok before and after the failure's pixel (whose
  // coverage drops to 0.6, a lighter shade), the failure itself.
  EXPECT_EQ(count(html, "<rect class=\"agg\""), 3U + 3U + 1U) << html.size();
  EXPECT_NE(html.find("<title>2500 requests started in 0.0-2500.0 s (aggregated: bars under a "
                      "pixel)</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>1 failed requests started in 1250.0-1252.5 s"), std::string::npos);
  EXPECT_NE(html.find("0 bars drawn one by one (hover: id), 10000 aggregated"), std::string::npos);
}

TEST(HtmlReport, AnEmptyRunStillHasItsLanes) {
  StoredRun run;
  run.source = "empty";
  run.summary.world_size = 2;
  ReportOptions options;
  options.thumbnails = 3;
  const std::string html = render_html_report(run, options);
  EXPECT_EQ(count(html, "<g class=\"lane\""), 2U);
  EXPECT_NE(html.find("<p>No rows.</p>"), std::string::npos);
  EXPECT_NE(html.find("<p>No completed request.</p>"), std::string::npos);
  EXPECT_NE(html.find("<p>No stored video.</p>"), std::string::npos);
  EXPECT_NE(html.find("<h2 id=\"failures\">Failures (0)</h2>\n<p>None.</p>"), std::string::npos);
  options.plot_width = 10;
  EXPECT_THROW((void)render_html_report(run, options), InputError);
}

// The summary table's MFU row (docs/performance.md, "MFU"): the same line omni-dp-inspect
// prints, n/a without a peak.
TEST(HtmlReport, SummaryShowsTheModelFlopsAndMfu) {
  StoredRun run;
  run.source = "mfu";
  run.summary.flops_counted = 2;
  run.summary.model_tflop_per_video = 2175.5;
  run.summary.achieved_tflops_per_gpu = 400.0;
  run.summary.peak_tflops = 989.4;
  run.summary.peak_source = "device table (NVIDIA H200)";
  run.summary.mfu = 400.0 / 989.4;
  run.summary.makespan_mfu = 0.375;
  std::string html = render_html_report(run, ReportOptions{});
  EXPECT_NE(html.find("<tr><th>model flops</th><td>2175.500 TFLOP/video (2 counted), 400.000 "
                      "TFLOP/s per GPU, MFU 40.43% of 989.4 TFLOP/s (device table (NVIDIA "
                      "H200)), makespan MFU 37.50%</td></tr>"),
            std::string::npos)
      << html;
  run.summary.peak_tflops.reset();
  run.summary.mfu.reset();
  html = render_html_report(run, ReportOptions{});
  EXPECT_NE(html.find("400.000 TFLOP/s per GPU, MFU n/a (no known peak"), std::string::npos);
}

// The step cache's skip rate in the summary table (the line omni-dp-inspect prints), from the
// rows: 60/20 and 60/60 -> 1 - 80/120; each bar's hover gives its row's forwards.
TEST(HtmlReport, SummaryAndBarsShowTheStepCache) {
  ScratchDir dir("report-cache");
  {
    results::RankWriter w(dir.path(), results::testing::rank_info(0, 1), OutputConfig{});
    const auto write = [&](const std::string& id, int forwards, int computed) {
      const Video v = results::testing::video_for(id);
      ResultRecord r = results::testing::ok_record(id, v, 0);
      r.forwards = forwards;
      r.forwards_computed = computed;
      w.write(r, &v);
    };
    write("a", 60, 20);
    write("bb", 60, 60);
    write("ccc", 0, 0);  // not recorded
    w.close();
  }
  const StoredRun run = read_stored_run(dir.path());
  const std::string html = render_html_report(run, ReportOptions{});
  EXPECT_NE(html.find("<tr><th>step cache</th><td>skip rate 33.33% (40 of 120 transformer "
                      "forwards skipped, 80 computed)</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>a (rank 0, ok, 1.50 s, 2x6x4, 20 of 60 transformer forwards "
                      "computed)</title>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>ccc (rank 0, ok, 1.50 s, 2x6x4)</title>"), std::string::npos);

  StoredRun plain;  // no row recorded its forwards
  plain.source = "plain";
  EXPECT_NE(render_html_report(plain, ReportOptions{})
                .find("<tr><th>step cache</th><td>not recorded (no ok request with a forward "
                      "count)</td></tr>"),
            std::string::npos);
}

TEST(HtmlReport, ThumbnailsAreTheStoredFramesAsPngDataUris) {
  ScratchDir dir("report");
  results::testing::write_rank(dir.path(), 0, 1, {"a", "b", "c"});
  ReportOptions options;
  options.thumbnails = 2;
  const std::string html = render_html_report(read_stored_run(dir.path()), options);
  EXPECT_EQ(count(html, "<figure class=\"thumb\""), 2U);
  EXPECT_NE(html.find("<figure class=\"thumb\" data-id=\"a\">"), std::string::npos);
  EXPECT_NE(html.find("<figure class=\"thumb\" data-id=\"c\">"), std::string::npos);  // spread
  const std::regex uri("src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\"");
  std::vector<std::string> images;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), uri); it != std::sregex_iterator();
       ++it) {
    images.push_back((*it)[1].str());
  }
  ASSERT_EQ(images.size(), 6U);  // first, middle, last of each
  const Video a = results::testing::video_for("a");
  const std::size_t frame_bytes = a.byte_size() / static_cast<std::size_t>(a.frames);
  for (const auto& [index, frame] : {std::pair{0, 0}, std::pair{1, 1}, std::pair{2, 1}}) {
    const auto png = base64_decode(images[static_cast<std::size_t>(index)]).value();
    const auto file = dir.path() / ("thumb" + std::to_string(index) + ".png");
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    const RgbImage image = decode_image_rgb(file, 1000);
    EXPECT_EQ(image.width, 6);
    EXPECT_EQ(image.height, 4);
    const std::vector<std::uint8_t> expected(
        a.data.begin() + static_cast<std::ptrdiff_t>(frame * frame_bytes),
        a.data.begin() + static_cast<std::ptrdiff_t>((frame + 1) * frame_bytes));
    EXPECT_EQ(image.data, expected) << index;
  }
}

TEST(HtmlReport, WrittenAtomicallyAndSizeReturned) {
  ScratchDir dir("report");
  results::testing::write_rank(dir.path(), 0, 1, {"a"});
  const StoredRun run = read_stored_run(dir.path());
  const auto path = dir.path() / "report.html";
  const std::size_t bytes = write_html_report(run, ReportOptions{}, path);
  EXPECT_EQ(std::filesystem::file_size(path), bytes);
  EXPECT_EQ(bytes, render_html_report(run, ReportOptions{}).size());
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    files += e.path().extension() == ".html" || e.path().string().find(".tmp-") != std::string::npos;
  }
  EXPECT_EQ(files, 1U);  // no temporary left
  EXPECT_THROW((void)write_html_report(run, ReportOptions{}, dir.path() / "no" / "r.html"), IoError);
}

}  // namespace
}  // namespace omnidp::video_export
