#include "omnidp/results/live_table.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>

#include "omnidp/results/result_files.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

namespace fs = std::filesystem;
using testing::LiveRank;
using testing::ScratchDir;

std::vector<std::string> ids_of(const std::vector<ResultRecord>& rows) {
  std::vector<std::string> ids;
  for (const auto& r : rows) ids.push_back(r.id);
  return ids;
}

TEST(LiveTable, ItsNameIsNeverARankFilesName) {
  EXPECT_EQ(live_table_path("/out/rank-00003.h5"), fs::path("/out/rank-00003.h5.live"));
  EXPECT_EQ(live_table_path("/out/rank-00003.2.h5"), fs::path("/out/rank-00003.2.h5.live"));
  ScratchDir dir("live-name");
  testing::write_rank(dir.path(), 0, 1, {"a"});
  std::ofstream(live_table_path(dir.path() / "rank-00000.h5")) << "stale";
  EXPECT_EQ(list_rank_files(dir.path()), std::vector<fs::path>{dir.path() / "rank-00000.h5"});
}

// While another process writes a rank file (and holds its lock), every durable row is in its
// live table, read in SWMR mode; the clean close deletes the table.
TEST(LiveTable, ARankFilesRowsAppearInItsLiveTableWhileItIsWritten) {
  ScratchDir dir("live-rows");
  const fs::path rank_file = dir.path() / "rank-00000.h5";
  const fs::path live_file = live_table_path(rank_file);
  LiveRank live(dir.path(), 0, 1, {"a"});
  EXPECT_TRUE(is_locked_by_writer(rank_file));
  ASSERT_TRUE(fs::is_regular_file(live_file));
  EXPECT_EQ(ids_of(read_live_table(live_file)), std::vector<std::string>{"a"});
  live.write("b");
  const auto rows = read_live_table(live_file);
  ASSERT_EQ(ids_of(rows), (std::vector<std::string>{"a", "b"}));
  const ResultRecord expected = testing::ok_record("b", testing::video_for("b"));
  EXPECT_EQ(rows[1].video_sha256, expected.video_sha256);
  EXPECT_EQ(rows[1].input_key, expected.input_key);
  EXPECT_EQ(rows[1].status, RequestStatus::ok);
  // The rank file's root attributes, from the table while the file is locked.
  const ResultsFileInfo info = read_file_info(rank_file);
  EXPECT_EQ(info.format, kRankFormat);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  const int status = live.finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(live_file));
  EXPECT_EQ(read_stored_rows(rank_file).size(), 2U);
}

// A writer that did not close (killed) leaves its table; the rank's next segment removes it.
TEST(LiveTable, AnEarlierSegmentsLeftOverTableIsRemovedByTheNext) {
  ScratchDir dir("live-stale");
  testing::write_rank(dir.path(), 0, 1, {"a"});
  const fs::path stale = live_table_path(dir.path() / "rank-00000.h5");
  std::ofstream(stale) << "left by a killed writer";
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
    EXPECT_EQ(writer.path(), dir.path() / "rank-00000.1.h5");
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(live_table_path(writer.path())));
    writer.close();
    EXPECT_FALSE(fs::exists(live_table_path(writer.path())));
  }
}

}  // namespace
}  // namespace omnidp::results
