#include "omnidp/cli/compare.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "cli/run_main.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/table.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"

namespace omnidp::cli {
namespace {

using results::testing::ScratchDir;

using testing::Outcome;

Outcome run_compare(std::vector<std::string> args) {
  return testing::run_main(compare_main, "omni-dp-compare", std::move(args));
}

class CompareCli : public ::testing::Test {
 protected:
  ScratchDir a_{"cli-a"};
  ScratchDir b_{"cli-b"};
  std::string a() const { return a_.path().string(); }
  std::string b() const { return b_.path().string(); }
};

TEST_F(CompareCli, EqualExitsZero) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y/1"});
  results::testing::write_rank(b_.path(), 0, 2, {"y/1"});
  results::testing::write_rank(b_.path(), 1, 2, {"x"});
  results::merge_directory(b_.path());
  const Outcome o = run_compare({a(), (b_.path() / "results.h5").string()});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("matched:     2\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("PASS"), std::string::npos) << o.out;
}

TEST_F(CompareCli, MismatchExitsOneAndNamesTheId) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y/1", "z"});
  {
    results::RankWriter writer(b_.path(), results::testing::rank_info(0, 1), OutputConfig{});
    for (const std::string id : {"x", "y/1", "z"}) {
      const Video v =
          id == "y/1" ? results::testing::make_video(2, 4, 6, 1) : results::testing::video_for(id);
      writer.write(results::testing::ok_record(id, v), &v);
    }
  }
  const Outcome o = run_compare({a(), b()});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("mismatched:  1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("mismatches (1 of 1):\n  y/1: A "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("FAIL: 1 mismatched"), std::string::npos) << o.out;
  const Outcome quiet = run_compare({"--max-list", "0", a(), b()});
  EXPECT_EQ(quiet.code, 1);
  EXPECT_EQ(quiet.out.find("y/1"), std::string::npos) << quiet.out;
}

TEST_F(CompareCli, MissingExitsOneUnlessAllowed) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y", "z"});
  results::testing::write_rank(b_.path(), 0, 1, {"x"});
  const Outcome strict = run_compare({a(), b()});
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.out.find("only in A:   2\n"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("only in A (2 of 2):\n  y\n  z\n"), std::string::npos) << strict.out;
  const Outcome relaxed = run_compare({"--allow-missing", a(), b()});
  EXPECT_EQ(relaxed.code, 0) << relaxed.out;
  // Missing from A fails too (issue 52, class 2): B's requests need their partners as well.
  const Outcome reversed = run_compare({b(), a()});
  EXPECT_EQ(reversed.code, 1) << reversed.out;
  EXPECT_NE(reversed.out.find("only in B (2 of 2):\n  y\n  z\n"), std::string::npos) << reversed.out;
  EXPECT_EQ(run_compare({"--allow-missing", b(), a()}).code, 0);
}

TEST_F(CompareCli, FailedExitsOne) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y"});
  results::testing::write_rank(b_.path(), 0, 2, {"x"});
  results::testing::write_failed_rank(b_.path(), 1, 2, {"y"});
  const Outcome o = run_compare({"--allow-missing", a(), b()});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("failed:      1 (A: 0, B: 1)\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  B:y\n"), std::string::npos) << o.out;
}

TEST_F(CompareCli, JsonOutput) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y"});
  results::testing::write_rank(b_.path(), 0, 1, {"x"});
  const Outcome o = run_compare({"--json", "--max-list", "5", a(), b()});
  EXPECT_EQ(o.code, 1);
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["matched"], 1);
  EXPECT_EQ(j["only_in_a"], 1);
  EXPECT_EQ(j["only_in_a_ids"], nlohmann::json::array({"y"}));
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["max_list"], 5);
}

TEST_F(CompareCli, ToleranceOptions) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y", "z"});
  results::testing::write_rank_videos(
      b_.path(), {{"x", results::testing::video_for("x")},
                  {"y", results::testing::off_by_one(results::testing::video_for("y"))},
                  {"z", results::testing::off_by_100(results::testing::video_for("z"))}});
  const Outcome strict = run_compare({a(), b()});
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_EQ(strict.out.find("level differences"), std::string::npos) << strict.out;

  const Outcome one = run_compare({"--max-level-diff", "1", a(), b()});
  EXPECT_EQ(one.code, 1) << one.out << one.err;
  EXPECT_NE(one.out.find("matched:     1\nwithin tolerance (max level diff <= 1): 1\n"
                         "mismatched:  1\n"),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("level differences (2 of 2):\n"
                         "  y: max level diff 1, PSNR 48.13 dB: within\n"
                         "  z: max level diff 100, PSNR 29.71 dB: outside\n"),
            std::string::npos)
      << one.out;

  const Outcome many = run_compare({"--max-level-diff", "100", a(), b()});
  EXPECT_EQ(many.code, 0) << many.out << many.err;
  EXPECT_NE(many.out.find("PASS: every request of A is matched in B: 1 with an equal hash, 2 "
                          "within the tolerance\n"),
            std::string::npos)
      << many.out;
  EXPECT_EQ(run_compare({"--min-psnr", "29.5", a(), b()}).code, 0);
  EXPECT_EQ(run_compare({"--min-psnr", "30", a(), b()}).code, 1);
  EXPECT_EQ(run_compare({"--min-psnr", "30", "--max-level-diff", "255", a(), b()}).code, 1);

  const Outcome json = run_compare({"--json", "--min-psnr", "40", a(), b()});
  EXPECT_EQ(json.code, 1);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["tolerance"], nlohmann::json({{"min_psnr_db", 40.0}}));
  EXPECT_EQ(j["level_differences"].size(), 2U);
  EXPECT_EQ(j["level_differences"][1]["id_a"], "z");
  EXPECT_EQ(j["level_differences"][1]["within"], false);
}

TEST_F(CompareCli, DifferentShapesFailWithTheirShapes) {
  results::testing::write_rank(a_.path(), 0, 1, {"x"});
  results::testing::write_rank_videos(b_.path(), {{"x", results::testing::make_video(2, 4, 8, 1)}});
  const Outcome o = run_compare({"--max-level-diff", "255", a(), b()});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("  x: shapes differ (frames x height x width): A 2x4x6, B 2x4x8: "
                       "outside\n"),
            std::string::npos)
      << o.out;
}

TEST_F(CompareCli, BadToleranceValuesExitTwo) {
  results::testing::write_rank(a_.path(), 0, 1, {"x"});
  results::testing::write_rank(b_.path(), 0, 1, {"x"});
  EXPECT_EQ(run_compare({"--max-level-diff", "256", a(), b()}).code, 2);
  EXPECT_EQ(run_compare({"--max-level-diff", "-1", a(), b()}).code, 2);
  EXPECT_EQ(run_compare({"--max-level-diff", "one", a(), b()}).code, 2);
  EXPECT_EQ(run_compare({"--min-psnr", "0", a(), b()}).code, 2);
  const Outcome bad = run_compare({"--min-psnr", "loud", a(), b()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--min-psnr"), std::string::npos) << bad.err;
}

TEST_F(CompareCli, UsageAndReadErrorsExitTwo) {
  EXPECT_EQ(run_compare({}).code, 2);
  EXPECT_EQ(run_compare({a()}).code, 2);
  EXPECT_EQ(run_compare({"--bogus", a(), b()}).code, 2);
  EXPECT_EQ(run_compare({"--max-list", "many", a(), b()}).code, 2);
  const Outcome missing = run_compare({a() + "/nope", b()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no such file or folder"), std::string::npos) << missing.err;
  const Outcome empty = run_compare({a(), b()});  // empty folders
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("holds neither rank-*.h5 files nor results.h5"), std::string::npos)
      << empty.err;
  EXPECT_EQ(run_compare({"--help"}).code, 0);
}

// How many times `part` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A rank file that is not HDF5 (what a crash mid-create or a damaged disk leaves).
void write_unreadable_rank_file(const std::filesystem::path& file) {
  std::ofstream(file, std::ios::binary) << "this is not an HDF5 file";
}

// Issue 39, class 8: a folder the job recovered from (one rank file unreadable, which the
// resume scan skipped; its requests generated again in a later segment) compares as the merge
// reads it: the file skipped with one warning, named in the report, the rest compared.
TEST_F(CompareCli, AnUnreadableRankFileIsSkippedWithOneWarning) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y", "z"});
  results::testing::write_rank(b_.path(), 0, 2, {"x"});
  write_unreadable_rank_file(b_.path() / "rank-00001.h5");
  results::testing::write_rank(b_.path(), 1, 2, {"y", "z"});  // rank-00001.1.h5
  const std::string skipped = (b_.path() / "rank-00001.h5").string();
  for (const bool verify : {true, false}) {
    std::vector<std::string> args = {a(), b()};
    if (!verify) args.insert(args.begin(), "--no-verify");
    const Outcome o = run_compare(args);
    EXPECT_EQ(o.code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find("matched:     3\n"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("skipped unreadable file of B: " + skipped), std::string::npos) << o.out;
    EXPECT_EQ(occurrences(o.err, "compare: skipping unreadable " + skipped + ": "), 1U) << o.err;
    EXPECT_EQ(occurrences(o.err, "skipping unreadable"), 1U) << o.err;
  }
  // The same folder as A: its skipped file's requests are matched from the later segment.
  EXPECT_EQ(run_compare({b(), a()}).code, 0);
}

// Issue 39: a folder a running job writes is compared by the hashes of its rows so far (its live
// table); a request it has not written yet is missing.
TEST_F(CompareCli, AFolderARunningJobWritesIsComparedByItsRowsSoFar) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y", "z"});
  results::testing::LiveRank live(b_.path(), 0, 1, {"x", "y"});
  const std::string live_file = (b_.path() / "rank-00000.h5").string();
  const Outcome partial = run_compare({"--allow-missing", a(), b()});
  EXPECT_EQ(partial.code, 0) << partial.out << partial.err;
  EXPECT_NE(partial.out.find("matched:     2\n"), std::string::npos) << partial.out;
  EXPECT_NE(partial.out.find("live file of B: " + live_file +
                             " (a running job writes it: its rows so far are compared by hash)"),
            std::string::npos)
      << partial.out;
  live.write("z");
  const Outcome whole = run_compare({a(), b()});
  EXPECT_EQ(whole.code, 0) << whole.out << whole.err;
  EXPECT_NE(whole.out.find("matched:     3\n"), std::string::npos) << whole.out;
  EXPECT_EQ(live.finish(), 0);
}

// Issue 39: a job array leaves one folder per shard (results/<name>/shard-NN). Their parent is a
// result set of its own: every shard's rows, one per id, against a run of the whole manifest.
TEST_F(CompareCli, AFolderOfShardFoldersIsTheUnionOfItsShards) {
  results::testing::write_rank(a_.path(), 0, 1, {"w", "x", "y", "z"});
  for (const char* shard : {"shard-00", "shard-01", "logs"})
    std::filesystem::create_directories(b_.path() / shard);
  results::testing::write_rank(b_.path() / "shard-00", 0, 1, {"w", "y"});
  results::testing::write_rank(b_.path() / "shard-01", 0, 1,
                               {"x", "z"});  // a folder without results is no shard
  Outcome o = run_compare({a(), b()});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("matched:     4\n"), std::string::npos) << o.out;
  o = run_compare({b(), a()});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  // A shard alone misses the other shard's requests.
  o = run_compare({a(), (b_.path() / "shard-01").string()});
  EXPECT_EQ(o.code, 1) << o.out;
  std::filesystem::remove_all(b_.path() / "shard-00");
  std::filesystem::remove_all(b_.path() / "shard-01");
  o = run_compare({a(), b()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(
      o.err.find("holds neither rank-*.h5 files nor results.h5, nor folders that do (shards)"),
      std::string::npos)
      << o.err;
}

// Issue 39, class 8: every ok row whose stored video cannot be read back is reported by id,
// file and reason, fails the comparison, and the other requests are still compared.
TEST_F(CompareCli, EveryUnreadableVideoIsReportedAndTheOthersCompared) {
  results::testing::write_rank(a_.path(), 0, 1, {"w", "x", "y", "z"});
  results::testing::write_rank(b_.path(), 0, 1, {"w", "x", "y", "z"});
  for (const char* id : {"x", "z"})
    results::testing::overwrite_video_header(b_.path() / "rank-00000.h5", id);
  if (HasFatalFailure()) return;
  const Outcome o = run_compare({a(), b()});
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("matched:     2\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("unreadable:  2\n"), std::string::npos) << o.out;
  const std::string file = (b_.path() / "rank-00000.h5").string();
  EXPECT_NE(o.out.find("unreadable videos (2 of 2):\n  B:x (" + file + "): "), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("\n  B:z (" + file + "): "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("2 unreadable\n"), std::string::npos) << o.out;
  const Outcome json = run_compare({"--json", a(), b()});
  EXPECT_EQ(json.code, 1);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["unreadable"], 2);
  EXPECT_EQ(j["unreadable_videos"].size(), 2U);
  EXPECT_FALSE(j["passed"].get<bool>());
}

// Issue 52, class 15: --min-psnr -1 printed its bound as the largest double written out, 309
// digits. Each refused value is named with the bound in words.
TEST_F(CompareCli, BoundsAreWrittenReadably) {
  const std::string help = "Run with --help for more information.\n";
  const auto error_of = [&](const std::string& value) {
    const Outcome o = run_compare({"--min-psnr", value, a(), b()});
    EXPECT_EQ(o.code, 2) << value;
    return o.err;
  };
  EXPECT_EQ(error_of("-1"), "--min-psnr: -1 is out of range (expected a finite number > 0)\n" + help);
  EXPECT_EQ(error_of("0"), "--min-psnr: 0 is out of range (expected a finite number > 0)\n" + help);
  EXPECT_EQ(error_of("inf"),
            "--min-psnr: inf is out of range (expected a finite number > 0)\n" + help);
  EXPECT_EQ(error_of("nan"),
            "--min-psnr: nan is out of range (expected a finite number > 0)\n" + help);
  EXPECT_EQ(error_of("1e999"),
            "--min-psnr: 1e999 is out of range (expected a finite number > 0)\n" + help);
  EXPECT_EQ(error_of("loud"),
            "--min-psnr: 'loud' is not a number (expected a finite number > 0)\n" + help);
  const Outcome level = run_compare({"--max-level-diff", "300", a(), b()});
  EXPECT_EQ(level.code, 2);
  EXPECT_EQ(level.err, "--max-level-diff: 300 is out of range [0, 255]\n" + help);
  for (const char* value : {"-1", "0", "inf", "1e999", "loud"}) {
    const std::string err = error_of(value);
    EXPECT_LT(err.size(), 120U) << err;
  }
}

// Writes one rank file holding ok rows of `ids` that all have the same content: one input key
// and one video (what a manifest holding one request under several ids gives).
void write_same_content(const std::filesystem::path& dir, const std::vector<std::string>& ids) {
  results::RankWriter writer(dir, results::testing::rank_info(0, 1), OutputConfig{});
  const Video v = results::testing::video_for("same");
  for (const auto& id : ids) {
    ResultRecord r = results::testing::ok_record(id, v);
    r.input_key = results::testing::key_of("same content");
    writer.write(r, &v);
  }
  writer.close();
}

// Issue 52, class 2: the join was by input key alone, so A's 8 ids of one content all matched
// B's single one ("matched: 8 ... PASS", exit 0). Each id needs a partner of its own, by id
// first: an id on one side only is missing, on either side, in the text and the JSON.
TEST_F(CompareCli, MissingIdsOnEitherSideFailAndAreListed) {
  const std::vector<std::string> eight = {"i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8"};
  write_same_content(a_.path(), eight);
  write_same_content(b_.path(), {"i4"});
  const Outcome o = run_compare({a(), b()});
  EXPECT_EQ(o.code, 1) << o.out;
  EXPECT_NE(o.out.find("matched:     1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("only in A:   7\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("only in A (7 of 7):\n  i1\n  i2\n  i3\n  i5\n  i6\n  i7\n  i8\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("FAIL: 0 mismatched, 7 only in A, 0 failed\n"), std::string::npos) << o.out;
  // The other way round: B's extra ids fail as well.
  const Outcome reversed = run_compare({"--json", b(), a()});
  EXPECT_EQ(reversed.code, 1) << reversed.out;
  const auto j = nlohmann::json::parse(reversed.out);
  EXPECT_EQ(j["matched"], 1);
  EXPECT_EQ(j["only_in_a"], 0);
  EXPECT_EQ(j["only_in_b"], 7);
  EXPECT_EQ(j["only_in_b_ids"], nlohmann::json::array({"i1", "i2", "i3", "i5", "i6", "i7", "i8"}));
  EXPECT_EQ(j["passed"], false);
  const Outcome text = run_compare({b(), a()});
  EXPECT_NE(text.out.find("FAIL: 0 mismatched, 0 only in A, 7 only in B, 0 failed\n"), std::string::npos)
      << text.out;
  // --allow-missing excuses either side; the one pair still has to match.
  for (const auto& [first, second] : {std::pair{a(), b()}, std::pair{b(), a()}}) {
    const Outcome allowed = run_compare({"--allow-missing", first, second});
    EXPECT_EQ(allowed.code, 0) << allowed.out;
    EXPECT_NE(allowed.out.find("matched:     1\n"), std::string::npos) << allowed.out;
  }
}

// The other members of the class: two ids of one content on each side pair up by id where the
// ids agree and by order where they do not (a renamed id still compares); one side's extra id
// of that content is missing; a failed row of A still takes its partner in B.
TEST_F(CompareCli, EveryIdOfOneContentNeedsItsOwnPartner) {
  write_same_content(a_.path(), {"p", "q"});
  ScratchDir renamed("cli-renamed");
  write_same_content(renamed.path(), {"q", "r"});
  const Outcome pairs = run_compare({a(), renamed.path().string()});
  EXPECT_EQ(pairs.code, 0) << pairs.out;
  EXPECT_NE(pairs.out.find("matched:     2\n"), std::string::npos) << pairs.out;
  ScratchDir three("cli-three");
  write_same_content(three.path(), {"p", "q", "r"});
  const Outcome extra = run_compare({a(), three.path().string()});
  EXPECT_EQ(extra.code, 1) << extra.out;
  EXPECT_NE(extra.out.find("only in B (1 of 1):\n  r\n"), std::string::npos) << extra.out;
  const Outcome fewer = run_compare({three.path().string(), a()});
  EXPECT_EQ(fewer.code, 1) << fewer.out;
  EXPECT_NE(fewer.out.find("only in A (1 of 1):\n  r\n"), std::string::npos) << fewer.out;
  // Different contents never pair, whatever their ids.
  ScratchDir other("cli-other");
  results::testing::write_rank(other.path(), 0, 1, {"p", "q"});
  const Outcome apart = run_compare({a(), other.path().string()});
  EXPECT_EQ(apart.code, 1) << apart.out;
  EXPECT_NE(apart.out.find("only in A:   2\n"), std::string::npos) << apart.out;
  EXPECT_NE(apart.out.find("only in B:   2\n"), std::string::npos) << apart.out;
}

// Issue 52, classes 3, 5 and 13: a link loop anywhere in a folder aborted compare (exit 134); a
// FIFO named like a rank file blocked it; a folder or a link to /dev/zero named like one was
// skipped silently. Each member, on either side: compare ends (a child under an alarm), compares
// the rest, and names the rank file it skipped.
TEST_F(CompareCli, NonFilesInAFolderAreNamedNeverCrashOrHang) {
  results::testing::write_rank(a_.path(), 0, 1, {"x", "y"});
  namespace rt = results::testing;
  for (const rt::Odd kind : rt::odd_kinds()) {
    for (const std::string name : {"junk", "rank-00002.h5"}) {
      SCOPED_TRACE(std::string(rt::odd_name(kind)) + " named " + name);
      ScratchDir odd("cli-odd");
      rt::write_rank(odd.path(), 0, 2, {"x"});
      rt::write_rank(odd.path(), 1, 2, {"y"});
      rt::make_odd(odd.path() / name, kind);
      const std::string file = (odd.path() / name).string();
      const bool rank_named = name.starts_with("rank-");
      for (const bool odd_is_b : {true, false}) {
        const auto o =
            test::run_main_in_child(compare_main, "omni-dp-compare",
                                    odd_is_b ? std::vector<std::string>{a(), odd.path().string()}
                                             : std::vector<std::string>{odd.path().string(), a()});
        ASSERT_EQ(o.code, 0) << test::describe(o);
        EXPECT_NE(o.out.find("matched:     2\n"), std::string::npos) << o.out;
        EXPECT_EQ(o.out.find("skipped unreadable file of " + std::string(odd_is_b ? "B" : "A") +
                             ": " + file + " (its rows are not compared)") != std::string::npos,
                  rank_named)
            << o.out;
        EXPECT_EQ(rt::occurrences_of(o.err, "compare: skipping unreadable " + file + ": " + file +
                                                ": " + rt::odd_problem(kind)),
                  rank_named ? 1U : 0U)
            << o.err;
      }
    }
  }
}

}  // namespace
}  // namespace omnidp::cli
