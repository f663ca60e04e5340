#include "omnidp/results/table.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

TEST(LinkName, EscapesWhatHdf5CannotHoldAndNothingElse) {
  EXPECT_EQ(escape_link_name("cat-001"), "cat-001");
  EXPECT_EQ(escape_link_name("a/b"), "a%2Fb");
  EXPECT_EQ(escape_link_name("100%"), "100%25");
  EXPECT_EQ(escape_link_name("."), "%2E");
  EXPECT_EQ(escape_link_name(".."), "%2E%2E");
  EXPECT_EQ(escape_link_name("a.b"), "a.b");
  EXPECT_EQ(escape_link_name(" x y "), "%20x y%20");
  EXPECT_EQ(escape_link_name("   "), "%20%20%20");
  EXPECT_EQ(escape_link_name("tab\there\n"), "tab%09here%0A");
  EXPECT_EQ(escape_link_name("été/猫"), "été%2F猫");
  EXPECT_EQ(video_path("a/b"), "/videos/a%2Fb");
}

TEST(LinkName, RoundTripsAndRejectsMalformedEscapes) {
  for (const std::string id : {"cat-001", "a/b", "100%", ".", "..", "...", " x ", "%2F", "/",
                               "a//b/", "\x7f", "été/猫", "a%b%"}) {
    EXPECT_EQ(unescape_link_name(escape_link_name(id)), id) << id;
  }
  EXPECT_EQ(unescape_link_name("%2f"), "/");
  EXPECT_THROW((void)unescape_link_name("%"), RuntimeError);
  EXPECT_THROW((void)unescape_link_name("%2"), RuntimeError);
  EXPECT_THROW((void)unescape_link_name("%zz"), RuntimeError);
}

TEST(RequestsTable, RoundTripsEveryColumnAcrossChunks) {
  ScratchDir dir("table");
  const auto path = (dir.path() / "t.h5").string();
  std::vector<ResultRecord> rows;
  for (int i = 0; i < 2500; ++i) {
    const std::string id = "req/" + std::to_string(i) + (i % 7 == 0 ? " é" : "");
    if (i % 3 == 0) {
      rows.push_back(testing::failed_record(id, "error #" + std::to_string(i) + ": boom", i % 5));
    } else {
      rows.push_back(testing::ok_record(id, testing::video_for(id), i % 5));
    }
    rows.back().attempt = 1 + i % 4;
    rows.back().steps = i;
    rows.back().start_time = 1e9 + i * 0.125;
    if (i % 11 == 0) rows.back().numerics = "dtype=bf16;software=v" + std::to_string(i);
    if (i % 13 == 0) rows.back().numerics.clear();
    if (i % 3 != 0) {  // the ok rows: 2 x steps forwards, some of them skipped
      rows.back().forwards = 2 * i;
      rows.back().forwards_computed = 2 * i - i % 7;
    }
  }
  {
    h5::File file = h5::create_file(path);
    h5::Dataset table = create_requests_table(file.id(), kRequestsPath);
    append_requests(table, std::span(rows).first(1));
    append_requests(table, std::span(rows).subspan(1, 1500));
    append_requests(table, std::span(rows).subspan(1501));
  }
  const h5::File file = h5::open_file(path);
  const h5::Dataset table = h5::open_dataset(file.id(), kRequestsPath);
  const auto back = read_requests(table);
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& a = rows[i];
    const auto& b = back[i];
    SCOPED_TRACE(a.id);
    testing::expect_same_row_columns(b, a);
    EXPECT_EQ(b.numerics, a.numerics);
  }
  EXPECT_TRUE(has_numerics_column(table));
  EXPECT_TRUE(has_model_tflop_column(table));
  EXPECT_TRUE(has_forwards_columns(table));
  EXPECT_EQ(back[2].forwards, 4);
  EXPECT_EQ(back[2].forwards_computed, 2);
  EXPECT_EQ(back[3].forwards, 0);  // a failed row: not recorded
}

// A table of the layout before the numerics column (omni-dp files written before it) reads
// back with every other column and numerics "" (the unknown profile).
TEST(RequestsTable, TableWithoutTheNumericsColumnReadsAsUnknownProfile) {
  ScratchDir dir("legacy-table");
  const auto path = (dir.path() / "t.h5").string();
  const std::vector<ResultRecord> rows = {testing::ok_record("a", testing::video_for("a")),
                                          testing::failed_record("b", "boom")};
  {
    h5::File file = h5::create_file(path);
    h5::Dataset table = create_requests_table(file.id(), kRequestsPath, false);
    append_requests(table, rows);
  }
  const h5::File file = h5::open_file(path);
  const h5::Dataset table = h5::open_dataset(file.id(), kRequestsPath);
  EXPECT_FALSE(has_numerics_column(table));
  const auto back = read_requests(table);
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[0].id, "a");
  EXPECT_EQ(back[0].input_key, rows[0].input_key);
  EXPECT_EQ(back[0].video_sha256, rows[0].video_sha256);
  EXPECT_EQ(back[0].attempt, 1);
  EXPECT_EQ(back[0].numerics, "");
  EXPECT_EQ(back[1].error, "boom");
  EXPECT_EQ(back[1].numerics, "");
}

// A table of the layout before the model_tflop column reads back with model_tflop 0 (not
// counted), and appending to it drops the value instead of failing.
TEST(RequestsTable, TableWithoutTheModelTflopColumnReadsAsNotCounted) {
  ScratchDir dir("legacy-flops-table");
  const auto path = (dir.path() / "t.h5").string();
  const std::vector<ResultRecord> rows = {testing::ok_record("a", testing::video_for("a"))};
  ASSERT_GT(rows[0].model_tflop, 0.0);
  {
    h5::File file = h5::create_file(path);
    h5::Dataset table = create_requests_table(file.id(), kRequestsPath, true, false, false);
    append_requests(table, rows);
  }
  const h5::File file = h5::open_file(path);
  const h5::Dataset table = h5::open_dataset(file.id(), kRequestsPath);
  EXPECT_TRUE(has_numerics_column(table));
  EXPECT_FALSE(has_model_tflop_column(table));
  const auto back = read_requests(table);
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].numerics, rows[0].numerics);
  EXPECT_EQ(back[0].seconds, rows[0].seconds);
  EXPECT_EQ(back[0].model_tflop, 0.0);
}

// A table of the layout before the forwards and forwards_computed columns reads back with both
// 0 (not recorded) and every other column, and appending to it drops the values.
TEST(RequestsTable, TableWithoutTheForwardsColumnsReadsAsNotRecorded) {
  ScratchDir dir("legacy-forwards-table");
  const auto path = (dir.path() / "t.h5").string();
  std::vector<ResultRecord> rows = {testing::ok_record("a", testing::video_for("a")),
                                    testing::failed_record("b", "boom")};
  rows[0].forwards = 60;
  rows[0].forwards_computed = 20;
  {
    h5::File file = h5::create_file(path);
    h5::Dataset table = create_requests_table(file.id(), kRequestsPath, true, true, false);
    append_requests(table, rows);
  }
  const h5::File file = h5::open_file(path);
  const h5::Dataset table = h5::open_dataset(file.id(), kRequestsPath);
  EXPECT_TRUE(has_numerics_column(table));
  EXPECT_TRUE(has_model_tflop_column(table));
  EXPECT_FALSE(has_forwards_columns(table));
  const auto back = read_requests(table);
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[0].numerics, rows[0].numerics);
  EXPECT_EQ(back[0].model_tflop, rows[0].model_tflop);
  EXPECT_EQ(back[0].forwards, 0);
  EXPECT_EQ(back[0].forwards_computed, 0);
  EXPECT_EQ(back[1].error, "boom");
  EXPECT_EQ(back[1].forwards, 0);
}

TEST(Videos, HashOfStoredBytesEqualsVideoSha256) {
  ScratchDir dir("videos");
  const auto path = (dir.path() / "v.h5").string();
  const Video video = testing::make_video(5, 3, 7, 99);
  const ResultRecord record = testing::ok_record("../odd/id", video);
  {
    h5::File file = h5::create_file(path);
    write_video(file.id(), record, video, VideoStorage{6, false});
  }
  const h5::File file = h5::open_file(path);
  EXPECT_EQ(hash_stored_video(file.id(), record.id), video_sha256(video));
  const Video back = read_video(file.id(), record.id);
  EXPECT_EQ(back.frames, 5);
  EXPECT_EQ(back.height, 3);
  EXPECT_EQ(back.width, 7);
  EXPECT_EQ(back.data, video.data);
  EXPECT_TRUE(h5::link_exists(file.id(), "/videos/..%2Fodd%2Fid"));
}

}  // namespace
}  // namespace omnidp::results
