#include "omnidp/results/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "omnidp/common/error.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/table.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

const std::vector<std::string> kIds = {"a", "b/1", "c", "d"};

// Flips one byte of the stored video of `id` (the row keeps its old hash).
void corrupt_video(const std::filesystem::path& file, const std::string& id) {
  h5::File f = h5::open_file(file.string(), true);
  Video v = read_video(f.id(), id);
  v.data[0] ^= 0xFFU;
  const h5::Dataset d = h5::open_dataset(f.id(), video_path(id));
  ASSERT_GE(H5Dwrite(d.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data.data()), 0);
}

TEST(Compare, EqualSetsPassFromFoldersAndMergedFiles) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  testing::write_rank(b.path(), 0, 2, {"d", "a"});
  testing::write_rank(b.path(), 1, 2, {"c", "b/1"});
  merge_directory(b.path());
  const ResultSet sa = read_results(a.path());
  ASSERT_EQ(sa.entries.size(), 4U);
  EXPECT_EQ(sa.entries[1].id, "b/1");
  EXPECT_EQ(sa.entries[1].actual_sha256, sa.entries[1].video_sha256);
  for (const auto& source : {b.path(), b.path() / "results.h5", b.path() / "rank-00001.h5"}) {
    const CompareReport r = compare_results(sa, read_results(source));
    const std::size_t expected_b = source.filename() == "rank-00001.h5" ? 2 : 4;
    EXPECT_EQ(r.requests_b, expected_b) << source;
    EXPECT_EQ(r.matched, expected_b) << source;
    EXPECT_EQ(r.mismatched, 0U);
    EXPECT_EQ(r.only_in_b, 0U);
    EXPECT_EQ(r.passed(false), expected_b == 4) << source;
  }
  const CompareReport r = compare_results(sa, read_results(b.path()));
  EXPECT_EQ(format_report(r, 10, false),
            "A: " + a.path().string() + " (4 requests)\n" + "B: " + b.path().string() +
                " (4 requests)\n" +
                "matched:     4\n"
                "mismatched:  0\n"
                "only in A:   0\n"
                "only in B:   0\n"
                "failed:      0 (A: 0, B: 0)\n"
                "PASS: every request of A is matched with an equal hash in B\n");
}

TEST(Compare, OneMismatchIsNamed) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  {
    RankWriter writer(b.path(), testing::rank_info(0, 1), OutputConfig{});
    for (const auto& id : kIds) {
      const Video v = id == "c" ? testing::make_video(2, 4, 6, 12345) : testing::video_for(id);
      writer.write(testing::ok_record(id, v), &v);
    }
  }
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  EXPECT_EQ(r.matched, 3U);
  EXPECT_EQ(r.mismatched, 1U);
  ASSERT_EQ(r.mismatches.size(), 1U);
  EXPECT_EQ(r.mismatches[0].id_a, "c");
  EXPECT_EQ(r.mismatches[0].sha_a, video_sha256(testing::video_for("c")));
  EXPECT_EQ(r.mismatches[0].sha_b, video_sha256(testing::make_video(2, 4, 6, 12345)));
  EXPECT_EQ(r.mismatches[0].reason, "video_sha256 differs");
  EXPECT_FALSE(r.passed(false));
  EXPECT_FALSE(r.passed(true));
  const std::string text = format_report(r, 10, false);
  EXPECT_NE(text.find("mismatches (1 of 1):\n  c: A " + r.mismatches[0].sha_a + " B " +
                      r.mismatches[0].sha_b + " (video_sha256 differs)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FAIL: 1 mismatched, 0 only in A, 0 failed\n"), std::string::npos) << text;
}

// Writes `ids` to one rank file of `dir`, each row with profile `numerics`; the video of the
// ids in `other_bytes` differs from video_for(id).
void write_profiled(const std::filesystem::path& dir, const std::vector<std::string>& ids,
                    const std::string& numerics, const std::vector<std::string>& other_bytes) {
  RankWriter writer(dir, testing::rank_info(0, 1), OutputConfig{});
  for (const auto& id : ids) {
    const bool other = std::find(other_bytes.begin(), other_bytes.end(), id) != other_bytes.end();
    const Video v = other ? testing::make_video(2, 4, 6, 999) : testing::video_for(id);
    ResultRecord r = testing::ok_record(id, v);
    r.numerics = numerics;
    writer.write(r, &v);
  }
}

// B made with bf16: its differing hashes are counted apart, and the report says why.
TEST(Compare, HashDifferencesUnderAnotherNumericsProfileAreCountedApart) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  const std::string fp32 = testing::kTestNumerics;
  const std::string bf16 =
      "dtype=bf16;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;"
      "software=test";
  write_profiled(a.path(), kIds, fp32, {});
  write_profiled(b.path(), kIds, bf16, {"a", "c"});
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  EXPECT_EQ(r.matched, 2U);
  EXPECT_EQ(r.mismatched, 0U);
  EXPECT_EQ(r.mismatched_numerics, 2U);
  EXPECT_TRUE(r.profiles_differ());
  ASSERT_EQ(r.mismatches.size(), 2U);
  EXPECT_TRUE(r.mismatches[0].numerics_differ);
  EXPECT_EQ(r.mismatches[0].reason,
            "video_sha256 differs; numerics profile differs: dtype (fp32 -> bf16)");
  EXPECT_FALSE(r.passed(false));
  const std::string text = format_report(r, 10, false);
  EXPECT_NE(text.find("mismatched:  0\nmismatched (different numerics profile): 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("numerics profiles differ:\n  A: " + fp32 + " (4 requests)\n  B: " + bf16 +
                      " (4 requests)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("FAIL: 0 mismatched (+2 under a different numerics profile), 0 only in A, "
                      "0 failed\n"),
            std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(report_to_json(r, 10, false));
  EXPECT_EQ(j["mismatched_numerics"], 2);
  EXPECT_EQ(j["profiles"]["differ"], true);
  EXPECT_EQ(j["profiles"]["b"][bf16], 4);
  EXPECT_EQ(j["mismatches"][0]["numerics_differ"], true);
}

// Only the software version differs: hash differences are plain mismatches, and the profiles
// are not reported as different. An unknown profile (an older file) cannot excuse one either.
TEST(Compare, SoftwareVersionOrUnknownProfileDoNotExcuseAHashDifference) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  ScratchDir old("cmp-old");
  const std::string v1 = testing::kTestNumerics;
  std::string v2 = v1;
  v2.replace(v2.find("software=test"), std::string::npos, "software=test2");
  write_profiled(a.path(), kIds, v1, {});
  write_profiled(b.path(), kIds, v2, {"d"});
  write_profiled(old.path(), kIds, "", {"d"});
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  EXPECT_EQ(r.mismatched, 1U);
  EXPECT_EQ(r.mismatched_numerics, 0U);
  EXPECT_FALSE(r.profiles_differ());
  EXPECT_EQ(format_report(r, 0, false).find("numerics"), std::string::npos);

  const CompareReport u = compare_results(read_results(a.path()), read_results(old.path()));
  EXPECT_EQ(u.mismatched, 1U);
  EXPECT_EQ(u.mismatched_numerics, 0U);
  EXPECT_TRUE(u.profiles_differ());
  EXPECT_NE(format_report(u, 0, false)
                .find("  B: unknown (written before profiles were recorded) (4 requests)\n"),
            std::string::npos);
}

TEST(Compare, CorruptedVideoBytesAreAMismatchEvenWithEqualRows) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  testing::write_rank(b.path(), 0, 1, kIds);
  merge_directory(b.path());
  corrupt_video(b.path() / "rank-00000.h5", "b/1");
  for (const auto& source : {b.path(), b.path() / "results.h5"}) {
    const CompareReport r = compare_results(read_results(a.path()), read_results(source));
    EXPECT_EQ(r.mismatched, 1U) << source;
    ASSERT_EQ(r.mismatches.size(), 1U);
    EXPECT_EQ(r.mismatches[0].id_a, "b/1");
    EXPECT_NE(r.mismatches[0].reason.find("B's stored video does not match"), std::string::npos);
  }
  // Trusting the stored hashes does not see it.
  const CompareReport trusting =
      compare_results(read_results(a.path()), read_results(b.path(), ReadOptions{false}));
  EXPECT_EQ(trusting.matched, 4U);
}

TEST(Compare, MissingRequestsFailUnlessAllowed) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  testing::write_rank(b.path(), 0, 1, {"a", "c", "extra"});
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  EXPECT_EQ(r.matched, 2U);
  EXPECT_EQ(r.only_in_a, 2U);
  EXPECT_EQ(r.only_in_a_ids, (std::vector<std::string>{"b/1", "d"}));
  EXPECT_EQ(r.only_in_b, 1U);
  EXPECT_EQ(r.only_in_b_ids, (std::vector<std::string>{"extra"}));
  EXPECT_FALSE(r.passed(false));
  EXPECT_TRUE(r.passed(true));
  const std::string text = format_report(r, 1, true);
  EXPECT_NE(text.find("only in A:   2 (allowed)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("only in A (1 of 2):\n  b/1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("only in B (1 of 1):\n  extra\n"), std::string::npos) << text;
  EXPECT_NE(text.find("PASS"), std::string::npos) << text;
}

TEST(Compare, FailedRequestsOnEitherSideFail) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 2, {"a", "b/1", "c"});
  testing::write_failed_rank(a.path(), 1, 2, {"d"});
  testing::write_rank(b.path(), 0, 2, {"a", "b/1", "d"});
  testing::write_failed_rank(b.path(), 1, 2, {"c"});
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  EXPECT_EQ(r.matched, 2U);
  EXPECT_EQ(r.failed_a, 1U);
  EXPECT_EQ(r.failed_b, 1U);
  EXPECT_EQ(r.failed_ids, (std::vector<std::string>{"A:d", "B:c"}));
  EXPECT_FALSE(r.passed(true));
  const std::string text = format_report(r, 10, false);
  EXPECT_NE(text.find("failed:      2 (A: 1, B: 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("failed (2 of 2):\n  A:d\n  B:c\n"), std::string::npos) << text;
}

TEST(Compare, RetriedRequestCountsByItsOkAttempt) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, {"a"});
  testing::write_failed_rank(b.path(), 0, 2, {"a"});  // first attempt failed ...
  testing::write_rank(b.path(), 1, 2, {"a"});         // ... the retry succeeded
  const ResultSet sb = read_results(b.path());
  ASSERT_EQ(sb.entries.size(), 1U);
  EXPECT_EQ(sb.entries[0].status, RequestStatus::ok);
  EXPECT_TRUE(compare_results(read_results(a.path()), sb).passed(false));
}

TEST(Compare, JsonReport) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  testing::write_rank(b.path(), 0, 1, {"a"});
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()));
  const auto j = nlohmann::json::parse(report_to_json(r, 2, false));
  EXPECT_EQ(j["matched"], 1);
  EXPECT_EQ(j["mismatched"], 0);
  EXPECT_EQ(j["only_in_a"], 3);
  EXPECT_EQ(j["only_in_b"], 0);
  EXPECT_EQ(j["failed"]["a"], 0);
  EXPECT_EQ(j["failed"]["b"], 0);
  EXPECT_EQ(j["only_in_a_ids"], nlohmann::json::array({"b/1", "c"}));
  EXPECT_EQ(j["a"]["requests"], 4);
  EXPECT_EQ(j["b"]["source"], b.path().string());
  EXPECT_EQ(j["passed"], false);
}

// B's videos: "a" equal, "b/1" every value off by one level (MSE 1: PSNR 48.13 dB), "c" one
// value of 144 off by 100 (MSE 10000/144: PSNR 29.71 dB), "d" with one frame more.
void write_tolerance_pair(const std::filesystem::path& a, const std::filesystem::path& b) {
  testing::write_rank(a, 0, 1, kIds);
  testing::write_rank_videos(b, {{"a", testing::video_for("a")},
                                 {"b/1", testing::off_by_one(testing::video_for("b/1"))},
                                 {"c", testing::off_by_100(testing::video_for("c"))},
                                 {"d", testing::make_video(3, 4, 6, 5)}});
}

TEST(CompareTolerance, LevelBoundNamesEveryDifferenceAndFailsOutsideIt) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  write_tolerance_pair(a.path(), b.path());
  Tolerance t;
  t.max_level_diff = 1;
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()), t);
  EXPECT_EQ(r.matched, 1U);
  EXPECT_EQ(r.within_tolerance, 1U);
  EXPECT_EQ(r.mismatched, 2U);
  ASSERT_EQ(r.level_differences.size(), 3U);
  EXPECT_EQ(r.level_differences[0].max_level_diff, 1);
  EXPECT_NEAR(r.level_differences[0].psnr_db, 10.0 * std::log10(255.0 * 255.0), 1e-9);
  EXPECT_EQ(r.level_differences[1].max_level_diff, 100);
  EXPECT_NEAR(r.level_differences[1].psnr_db, 10.0 * std::log10(255.0 * 255.0 * 144 / 1e4), 1e-9);
  EXPECT_FALSE(r.passed(false));
  const std::string sha_c_a = video_sha256(testing::video_for("c"));
  const std::string sha_c_b = video_sha256(testing::off_by_100(testing::video_for("c")));
  const std::string sha_d_a = video_sha256(testing::video_for("d"));
  const std::string sha_d_b = video_sha256(testing::make_video(3, 4, 6, 5));
  EXPECT_EQ(format_report(r, 10, false),
            "A: " + a.path().string() + " (4 requests)\n" + "B: " + b.path().string() +
                " (4 requests)\n" +
                "matched:     1\n"
                "within tolerance (max level diff <= 1): 1\n"
                "mismatched:  2\n"
                "only in A:   0\n"
                "only in B:   0\n"
                "failed:      0 (A: 0, B: 0)\n"
                "level differences (3 of 3):\n"
                "  b/1: max level diff 1, PSNR 48.13 dB: within\n"
                "  c: max level diff 100, PSNR 29.71 dB: outside\n"
                "  d: shapes differ (frames x height x width): A 2x4x6, B 3x4x6: outside\n"
                "mismatches (2 of 2):\n"
                "  c: A " +
                sha_c_a + " B " + sha_c_b +
                " (video_sha256 differs; outside the tolerance: max level diff 100, PSNR 29.71 "
                "dB)\n"
                "  d: A " +
                sha_d_a + " B " + sha_d_b +
                " (video_sha256 differs; outside the tolerance: shapes differ (frames x height x "
                "width): A 2x4x6, B 3x4x6)\n"
                "FAIL: 2 mismatched, 0 only in A, 0 failed\n");
  const auto j = nlohmann::json::parse(report_to_json(r, 10, false));
  EXPECT_EQ(j["tolerance"], nlohmann::json({{"max_level_diff", 1}}));
  EXPECT_EQ(j["within_tolerance"], 1);
  EXPECT_EQ(j["level_differences"][0]["max_level_diff"], 1);
  EXPECT_EQ(j["level_differences"][0]["within"], true);
  EXPECT_EQ(j["level_differences"][2]["error"],
            "shapes differ (frames x height x width): A 2x4x6, B 3x4x6");
}

TEST(CompareTolerance, PsnrBoundAndBothBounds) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  write_tolerance_pair(a.path(), b.path());
  const ResultSet sa = read_results(a.path());
  const ResultSet sb = read_results(b.path());
  Tolerance psnr;
  psnr.min_psnr_db = 29.0;  // c (29.71 dB) is inside, d's shape never is
  const CompareReport r = compare_results(sa, sb, psnr);
  EXPECT_EQ(r.within_tolerance, 2U);
  EXPECT_EQ(r.mismatched, 1U);
  ASSERT_EQ(r.mismatches.size(), 1U);
  EXPECT_EQ(r.mismatches[0].id_a, "d");
  const std::string text = format_report(r, 10, false);
  EXPECT_NE(text.find("within tolerance (PSNR >= 29.00 dB): 2\n"), std::string::npos) << text;
  Tolerance both;
  both.max_level_diff = 99;
  both.min_psnr_db = 29.0;  // c is outside the level bound
  EXPECT_EQ(compare_results(sa, sb, both).within_tolerance, 1U);
  EXPECT_NE(format_report(compare_results(sa, sb, both), 0, false)
                .find("within tolerance (max level diff <= 99, PSNR >= 29.00 dB): 1\n"),
            std::string::npos);
}

TEST(CompareTolerance, PassesWhenEveryDifferenceIsWithin) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, {"a", "b/1"});
  testing::write_rank_videos(b.path(), {{"a", testing::video_for("a")},
                                        {"b/1", testing::off_by_one(testing::video_for("b/1"))}});
  const ResultSet sa = read_results(a.path());
  const ResultSet sb = read_results(b.path());
  EXPECT_FALSE(compare_results(sa, sb).passed(false));  // no tolerance: hashes must be equal
  Tolerance t;
  t.max_level_diff = 1;
  const CompareReport r = compare_results(sa, sb, t);
  EXPECT_TRUE(r.passed(false));
  const std::string text = format_report(r, 10, false);
  EXPECT_NE(text.find("level differences (1 of 1):\n  b/1: max level diff 1, PSNR 48.13 dB: "
                      "within\nPASS: every request of A is matched in B: 1 with an equal hash, 1 "
                      "within the tolerance\n"),
            std::string::npos)
      << text;
  // The same through a merged results.h5 (its videos are external links to the rank files).
  merge_directory(b.path());
  const CompareReport merged = compare_results(sa, read_results(b.path() / "results.h5"), t);
  EXPECT_TRUE(merged.passed(false));
  ASSERT_EQ(merged.level_differences.size(), 1U);
  EXPECT_EQ(merged.level_differences[0].max_level_diff, 1);
  // Equal bytes compare as infinite PSNR; a level bound of 0 refuses the off-by-one video.
  const LevelDifference same = compare_stored_videos(sa.entries[0], sb.entries[0], t);
  EXPECT_EQ(describe(same), "max level diff 0, PSNR inf dB");
  t.max_level_diff = 0;
  EXPECT_FALSE(compare_results(sa, sb, t).passed(false));
}

// A corrupt video is never excused by a tolerance.
TEST(CompareTolerance, CorruptVideoStaysAMismatch) {
  ScratchDir a("cmp-a");
  ScratchDir b("cmp-b");
  testing::write_rank(a.path(), 0, 1, kIds);
  testing::write_rank(b.path(), 0, 1, kIds);
  corrupt_video(b.path() / "rank-00000.h5", "b/1");
  Tolerance t;
  t.max_level_diff = 255;
  const CompareReport r = compare_results(read_results(a.path()), read_results(b.path()), t);
  EXPECT_EQ(r.mismatched, 1U);
  EXPECT_TRUE(r.level_differences.empty());
}

TEST(Compare, UnreadableInputsAreErrors) {
  ScratchDir a("cmp-a");
  EXPECT_THROW((void)read_results(a.path()), IoError);                 // empty folder
  EXPECT_THROW((void)read_results(a.path() / "nothing.h5"), IoError);  // missing
  {
    std::ofstream junk(a.path() / "junk.h5");
    junk << "junk";
  }
  EXPECT_THROW((void)read_results(a.path() / "junk.h5"), Hdf5Error);
}

}  // namespace
}  // namespace omnidp::results
