#include "omnidp/results/resume.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <array>
#include <csignal>
#include <fstream>

#include "child_process.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/results/compare.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/table.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

std::vector<std::string> ids(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("req/" + std::to_string(i));
  return out;
}

// Runs `body` in a forked child and returns its wait status. The child never returns into
// GoogleTest: it either kills itself or _exit()s.
template <class Fn>
int in_child(Fn&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// A child that writes `done` requests, then starts one more and SIGKILLs itself inside
// write(), between the data write and the flush.
int killed_writer(const std::filesystem::path& dir, int rank, const std::vector<std::string>& done,
                  const std::string& dies_on) {
  return in_child([&] {
    RankWriter writer(dir, testing::rank_info(rank, 2), OutputConfig{});
    for (const auto& id : done) {
      const Video v = testing::video_for(id);
      writer.write(testing::ok_record(id, v, rank), &v);
    }
    writer.set_fault_hook([] { ::raise(SIGKILL); });
    const Video v = testing::video_for(dies_on);
    writer.write(testing::ok_record(dies_on, v, rank), &v);
  });
}

std::unordered_map<std::string, std::string> expected_done(const std::vector<std::string>& list) {
  std::unordered_map<std::string, std::string> out;
  for (const auto& id : list) out[id] = testing::key_of("key:" + id);
  return out;
}

TEST(Resume, ScanOfAKilledWritersFileSeesEveryFlushedRequest) {
  OMNIDP_REQUIRE_H5DUMP();
  ScratchDir dir("killed");
  const auto done = ids(0, 5);
  const int status = killed_writer(dir.path(), 0, done, "req/5");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  EXPECT_EQ(scan_done(dir.path()), expected_done(done));
  const auto info = read_file_info(dir.path() / "rank-00000.h5");
  EXPECT_EQ(info.state, "open");  // never closed
  EXPECT_FALSE(is_locked_by_writer(dir.path() / "rank-00000.h5"));
  // Every flushed video is intact: re-hashing the stored bytes matches the rows.
  const ResultSet set = read_results(dir.path());
  ASSERT_EQ(set.entries.size(), done.size());
  for (const auto& e : set.entries) EXPECT_EQ(e.actual_sha256, e.video_sha256) << e.id;
  // Outside tools read it as it is (no h5clear needed).
  const std::string dump =
      "h5dump -H '" + (dir.path() / "rank-00000.h5").string() + "' > /dev/null 2>&1";
  EXPECT_EQ(std::system(dump.c_str()), 0);
}

TEST(Resume, ResumedRunWritesANewSegmentAndMergesToTheUninterruptedResult) {
  ScratchDir interrupted("resume-a");
  ScratchDir uninterrupted("resume-b");
  const auto all = ids(0, 12);
  // Uninterrupted: two ranks, six each.
  testing::write_rank(uninterrupted.path(), 0, 2, ids(0, 6));
  testing::write_rank(uninterrupted.path(), 1, 2, ids(6, 12));
  merge_directory(uninterrupted.path());

  // Interrupted: rank 0 killed inside its 4th write, rank 1 killed after 2 flushed writes.
  ASSERT_TRUE(WIFSIGNALED(killed_writer(interrupted.path(), 0, ids(0, 3), "req/3")));
  ASSERT_TRUE(WIFSIGNALED(in_child([&] {
    RankWriter writer(interrupted.path(), testing::rank_info(1, 2), OutputConfig{});
    for (const auto& id : ids(6, 8)) {
      const Video v = testing::video_for(id);
      writer.write(testing::ok_record(id, v, 1), &v);
    }
    ::raise(SIGKILL);
  })));
  auto done = scan_done(interrupted.path());
  std::vector<std::string> flushed = ids(0, 3);
  for (const auto& id : ids(6, 8)) flushed.push_back(id);
  EXPECT_EQ(done, expected_done(flushed));

  // Resume with another world size (one rank) doing the rest.
  {
    RankWriter writer(interrupted.path(), testing::rank_info(0, 1), OutputConfig{});
    EXPECT_EQ(writer.path().filename(), "rank-00000.1.h5");
    for (const auto& id : all) {
      if (done.contains(id)) continue;
      const Video v = testing::video_for(id);
      writer.write(testing::ok_record(id, v, 0), &v);
    }
    writer.close();
  }
  EXPECT_EQ(scan_done(interrupted.path()), expected_done(all));
  const MergeResult merged = merge_directory(interrupted.path());
  EXPECT_EQ(merged.rows, all.size());
  EXPECT_EQ(merged.duplicates_dropped, 0U);
  EXPECT_TRUE(merged.unreadable_files.empty());

  const ResultSet a = read_results(uninterrupted.path() / "results.h5");
  const ResultSet b = read_results(interrupted.path() / "results.h5");
  ASSERT_EQ(b.entries.size(), all.size());  // no duplicate rows
  const CompareReport report = compare_results(a, b);
  EXPECT_EQ(report.matched, all.size());
  EXPECT_TRUE(report.passed(false)) << format_report(report, 10, false);
}

TEST(Resume, KillBeforeTheFirstFlushLeavesNothingDone) {
  ScratchDir dir("first");
  ASSERT_TRUE(WIFSIGNALED(killed_writer(dir.path(), 0, {}, "req/0")));
  EXPECT_TRUE(scan_done(dir.path()).empty());
  EXPECT_TRUE(read_stored_rows(dir.path() / "rank-00000.h5").empty());
}

TEST(Resume, UnreadableFileIsSkippedAndAMissingFolderIsEmpty) {
  ScratchDir dir("garbage");
  testing::write_rank(dir.path(), 0, 2, {"a", "b"});
  {
    std::ofstream junk(dir.path() / "rank-00001.h5", std::ios::binary);
    junk << "this is not an HDF5 file";
  }
  EXPECT_EQ(scan_done(dir.path()), expected_done({"a", "b"}));
  EXPECT_TRUE(scan_done(dir.path() / "missing").empty());
  const MergeResult merged = merge_directory(dir.path());
  EXPECT_EQ(merged.rows, 2U);
  EXPECT_EQ(merged.unreadable_files, std::vector<std::string>{"rank-00001.h5"});
}

TEST(Resume, FailedRowsAreNotDone) {
  ScratchDir dir("failed");
  RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
  writer.write(testing::failed_record("bad", "boom"), nullptr);
  const Video v = testing::video_for("good");
  writer.write(testing::ok_record("good", v), &v);
  writer.close();
  EXPECT_EQ(scan_done(dir.path()), expected_done({"good"}));
}

// Issue 39, class 7: an id recorded ok under two input keys (a changed manifest run again
// with --no-resume) counts the row the merge chooses, in whichever order the files are read:
// the scan used to stop every later run with "the folder mixes two manifests".
TEST(Resume, OneIdDoneWithTwoInputKeysCountsTheRowTheMergeChooses) {
  for (const bool newer_in_later_file : {true, false}) {
    SCOPED_TRACE(newer_in_later_file ? "newer row in the later file" : "newer row first");
    ScratchDir dir("conflict");
    const Video v = testing::video_for("same");
    ResultRecord old_row = testing::ok_record("same", v, 0);
    ResultRecord new_row = testing::ok_record("same", v, 1);
    new_row.input_key = testing::key_of("the edited manifest");
    new_row.end_time += 100.0;
    {
      RankWriter writer(dir.path(), testing::rank_info(0, 2), OutputConfig{});
      writer.write(newer_in_later_file ? old_row : new_row, &v);
      const Video w = testing::video_for("other");
      writer.write(testing::ok_record("other", w, 0), &w);
    }
    {
      RankWriter writer(dir.path(), testing::rank_info(1, 2), OutputConfig{});
      writer.write(newer_in_later_file ? new_row : old_row, &v);
    }
    const ResumeScan scan = scan_folder(dir.path());
    EXPECT_EQ(scan.done.size(), 2U);
    EXPECT_EQ(scan.done.at("same"), new_row.input_key);
    ASSERT_EQ(scan.profiles.size(), 1U);
    EXPECT_EQ(scan.profiles[0].requests, 2U);
    (void)merge_directory(dir.path());
    for (const auto& row : read_stored_rows(dir.path() / "results.h5")) {
      EXPECT_EQ(row.record.input_key, scan.done.at(row.record.id)) << row.record.id;
    }
  }
  // Equal end times and attempts: the later file, as in the merge.
  ScratchDir dir("conflict-tie");
  testing::write_rank(dir.path(), 0, 2, {"same"});
  {
    RankWriter writer(dir.path(), testing::rank_info(1, 2), OutputConfig{});
    const Video v = testing::video_for("same");
    ResultRecord r = testing::ok_record("same", v, 1);
    r.input_key = testing::key_of("another manifest");
    writer.write(r, &v);
  }
  EXPECT_EQ(scan_done(dir.path()).at("same"), testing::key_of("another manifest"));
  (void)merge_directory(dir.path());
  const auto merged = read_stored_rows(dir.path() / "results.h5");
  ASSERT_EQ(merged.size(), 1U);
  EXPECT_EQ(merged[0].record.input_key, testing::key_of("another manifest"));
}

TEST(Resume, AFileLockedByALiveRunIsAClearErrorInTheScanAndTheMerge) {
  ScratchDir dir("locked");
  testing::write_rank(dir.path(), 1, 2, {"done"});
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(to_parent[0]);
    ::close(to_child[1]);
    RankWriter writer(dir.path(), testing::rank_info(0, 2), OutputConfig{});
    const Video v = testing::video_for("live");
    writer.write(testing::ok_record("live", v), &v);
    char c = 'r';
    (void)!::write(to_parent[1], &c, 1);  // ready
    (void)!::read(to_child[0], &c, 1);    // wait for the parent's checks
    ::_exit(0);
  }
  ::close(to_parent[1]);
  ::close(to_child[0]);
  char c = 0;
  ASSERT_EQ(::read(to_parent[0], &c, 1), 1);
  const std::filesystem::path locked = dir.path() / "rank-00000.h5";
  EXPECT_TRUE(is_locked_by_writer(locked));
  EXPECT_FALSE(is_locked_by_writer(dir.path() / "rank-00001.h5"));
  const std::string expected =
      locked.string() +
      ": is locked by another process (HDF5 file lock: 'unable to lock the file, errno = 11'): "
      "is an earlier run still running on this folder, or are its ranks still exiting? Let it "
      "end (or use another output folder), then run again";
  try {
    (void)scan_done(dir.path(), /*lock_wait_s=*/0.0);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(), expected);
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
  }
  try {
    (void)merge_directory(dir.path());
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(), expected);
  }
  // The companion tools' reader (compare, inspect, export), alone or with other files: the
  // live file's rows so far from its live table (SWMR), flagged live, its video not yet.
  ASSERT_TRUE(std::filesystem::is_regular_file(dir.path() / "rank-00000.h5.live"));
  const FilesRows alone = read_rows_skipping_unreadable({locked}, "compare");
  ASSERT_EQ(alone.rows.size(), 1U);
  EXPECT_EQ(alone.rows[0].record.id, "live");
  EXPECT_EQ(alone.rows[0].record.video_sha256,
            testing::ok_record("live", testing::video_for("live")).video_sha256);
  EXPECT_TRUE(alone.rows[0].live);
  EXPECT_FALSE(alone.rows[0].video_present);
  EXPECT_EQ(alone.live, std::vector<std::filesystem::path>{locked});
  EXPECT_EQ(read_file_info(locked).rank, 0);  // the rank file's attributes, from the table
  const FilesRows both =
      read_rows_skipping_unreadable({dir.path() / "rank-00001.h5", locked}, "compare");
  ASSERT_EQ(both.rows.size(), 2U);
  EXPECT_FALSE(both.rows[0].live);
  EXPECT_TRUE(both.rows[1].live);
  // Without its live table (an older writer): one line that says a job is writing it.
  std::filesystem::remove(dir.path() / "rank-00000.h5.live");
  try {
    (void)read_rows_skipping_unreadable({locked}, "compare");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.what(), locked.string() +
                            ": is being written by a running job (HDF5 file lock) that keeps no "
                            "live table of its rows beside it (rank-00000.h5.live: an older "
                            "omni-dp, or its live view failed; see the job's log): it can be read "
                            "once that job has ended");
  }
  (void)!::write(to_child[1], &c, 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  ::close(to_parent[0]);
  ::close(to_child[1]);
  // Its writer gone (never closed), the file is read as of its last flush.
  EXPECT_EQ(scan_done(dir.path()), expected_done({"done", "live"}));
}

// ---- numerics profiles ------------------------------------------------------------------------

const std::string kBf16 =
    "dtype=bf16;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;"
    "software=test";

// One rank file of ok rows made with `numerics`.
void write_profiled_rank(const std::filesystem::path& dir, int rank,
                         const std::vector<std::string>& list, const std::string& numerics) {
  RankWriter writer(dir, testing::rank_info(rank, 2), OutputConfig{});
  for (const auto& id : list) {
    const Video v = testing::video_for(id);
    ResultRecord r = testing::ok_record(id, v, rank);
    r.numerics = numerics;
    writer.write(r, &v);
  }
}

// The message of the Error check_resume_profiles throws; "" when it does not throw.
std::string refusal(const ResumeScan& scan, const std::filesystem::path& dir,
                    const std::string& current) {
  try {
    (void)check_resume_profiles(scan, dir, current, false);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    return e.what();
  }
  return "";
}

// How a stored video can be broken while its ok row stands (issue 39, class 1: the row of a
// video whose close failed on a full disk was flushed as ok).
enum class BrokenVideo { header_overwritten, chunks_never_written, shape_differs_from_row };

// Adds to the closed rank file `file` an ok row for `id` whose /videos dataset is broken `how`
// (header_overwritten: the row and video are written whole, then the dataset's object header
// is overwritten on disk, so H5Dopen2 fails).
void add_broken_video(const std::filesystem::path& file, const std::string& id, BrokenVideo how) {
  const Video v = testing::video_for(id);
  ResultRecord record = testing::ok_record(id, v);
  {
    const h5::File f = h5::open_file(file.string(), true);
    h5::Dataset table = h5::open_dataset(f.id(), kRequestsPath);
    if (how == BrokenVideo::chunks_never_written) {
      const std::array<hsize_t, 4> dims = {static_cast<hsize_t>(v.frames),
                                           static_cast<hsize_t>(v.height),
                                           static_cast<hsize_t>(v.width), 3};
      const std::array<hsize_t, 4> chunk = {1, dims[1], dims[2], 3};
      const h5::Dataspace space(H5Screate_simple(4, dims.data(), nullptr));
      const h5::PropList dcpl(H5Pcreate(H5P_DATASET_CREATE));
      ASSERT_GE(H5Pset_chunk(dcpl.id(), 4, chunk.data()), 0);
      ASSERT_GE(H5Pset_fill_time(dcpl.id(), H5D_FILL_TIME_NEVER), 0);
      const h5::PropList lcpl = h5::link_create_utf8(true);
      h5::Dataset d(H5Dcreate2(f.id(), video_path(id).c_str(), H5T_STD_U8LE, space.id(), lcpl.id(),
                               dcpl.id(), H5P_DEFAULT));
      ASSERT_TRUE(d.valid());
      d.close();
    } else if (how == BrokenVideo::shape_differs_from_row) {
      const Video one_frame = testing::make_video(1, v.height, v.width, 5);
      write_video(f.id(), record, one_frame, VideoStorage{});
    } else {
      write_video(f.id(), record, v, VideoStorage{});
    }
    append_requests(table, std::span<const ResultRecord>(&record, 1));
    table.close();
    ASSERT_GE(H5Fflush(f.id(), H5F_SCOPE_LOCAL), 0);
  }
  if (how == BrokenVideo::header_overwritten) testing::overwrite_video_header(file, id);
}

// An ok row is done only when its video can be opened and read back (docs/results.md,
// "Resume"): otherwise the request is generated again, and the merge does not link it.
TEST(Resume, AnOkRowWhoseVideoCannotBeReadBackIsNotDone) {
  for (const BrokenVideo how : {BrokenVideo::header_overwritten, BrokenVideo::chunks_never_written,
                                BrokenVideo::shape_differs_from_row}) {
    SCOPED_TRACE("case " + std::to_string(static_cast<int>(how)));
    ScratchDir dir("broken-video");
    testing::write_rank(dir.path(), 0, 1, ids(0, 3));
    add_broken_video(dir.path() / "rank-00000.h5", "req/9", how);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(scan_done(dir.path()), expected_done(ids(0, 3)));
    const auto merged = merge_directory(dir.path());
    EXPECT_EQ(merged.rows, 3U);
    const auto rows = read_stored_rows(dir.path() / "results.h5");  // videos: external links
    ASSERT_EQ(rows.size(), 3U);
    for (const auto& row : rows) {
      EXPECT_NE(row.record.id, "req/9");
      EXPECT_TRUE(row.video_present) << row.record.id << ": " << row.video_error;
    }
  }
}

// Issue 39, class 9: a flipped byte in a stored video (it still reads back) was skipped as
// done. A plain scan still skips it (it reads only the last row of pixels); the scan of
// omni-dp-batch --verify re-hashes every video and leaves that request to be generated again,
// and the rows of the others stay done.
TEST(Resume, VerifyLeavesAStoredVideoWhoseHashDiffersToBeGeneratedAgain) {
  ScratchDir dir("verify");
  testing::write_rank(dir.path(), 0, 2, ids(0, 3));
  testing::write_rank(dir.path(), 1, 2, ids(3, 5));
  testing::flip_stored_byte(dir.path() / "rank-00001.h5", "req/4");
  EXPECT_EQ(scan_done(dir.path()), expected_done(ids(0, 5)));
  const ResumeScan plain = scan_folder(dir.path());
  EXPECT_EQ(plain.verified, 0U);
  const ResumeScan verified = scan_folder(dir.path(), 10.0, true);
  EXPECT_EQ(verified.done, expected_done(ids(0, 4)));
  EXPECT_EQ(verified.verified, 5U);
  EXPECT_EQ(verified.verify_mismatches, 1U);
  const auto rows = read_stored_rows(dir.path() / "rank-00001.h5", 0, false, true);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_TRUE(rows[0].video_present);
  EXPECT_FALSE(rows[1].video_present);
  Video damaged = testing::video_for("req/4");
  damaged.data[0] ^= 0xFFU;
  EXPECT_EQ(rows[1].video_error, "the stored video does not match its recorded video_sha256 " +
                                     video_sha256(testing::video_for("req/4")) +
                                     " (its frames hash to " + video_sha256(damaged) + ")");
}

TEST(ResumeProfiles, ScanCountsTheDoneRequestsOfEachProfile) {
  ScratchDir dir("profiles");
  write_profiled_rank(dir.path(), 0, {"a", "b", "c"}, testing::kTestNumerics);
  write_profiled_rank(dir.path(), 1, {"d"}, kBf16);
  const ResumeScan scan = scan_folder(dir.path());
  EXPECT_EQ(scan.done, expected_done({"a", "b", "c", "d"}));
  ASSERT_EQ(scan.profiles.size(), 2U);
  EXPECT_EQ(scan.profiles[0].profile, testing::kTestNumerics);
  EXPECT_EQ(scan.profiles[0].requests, 3U);
  EXPECT_EQ(scan.profiles[0].example_file.filename(), "rank-00000.h5");
  EXPECT_EQ(scan.profiles[1].profile, kBf16);
  EXPECT_EQ(scan.profiles[1].requests, 1U);
}

TEST(ResumeProfiles, SameProfileResumesSilently) {
  ScratchDir dir("same-profile");
  write_profiled_rank(dir.path(), 0, {"a", "b"}, testing::kTestNumerics);
  EXPECT_TRUE(
      check_resume_profiles(scan_folder(dir.path()), dir.path(), testing::kTestNumerics, false).empty());
}

TEST(ResumeProfiles, AnotherProfileIsRefusedNamingBothAndTheKeysUnlessMixedIsAllowed) {
  ScratchDir dir("other-profile");
  write_profiled_rank(dir.path(), 0, {"a", "b"}, testing::kTestNumerics);
  const ResumeScan scan = scan_folder(dir.path());
  const std::string what = refusal(scan, dir.path(), kBf16);
  EXPECT_EQ(what, dir.path().string() +
                      ": 2 request(s) already done here (e.g. in rank-00000.h5) were made with "
                      "numerics profile '" +
                      testing::kTestNumerics + "', but this run's profile is '" + kBf16 +
                      "' (differing: dtype (fp32 -> bf16)); resuming would mix videos of two "
                      "numerics profiles: use a new output.dir, --no-resume to generate them "
                      "again, or --resume-mixed to keep them (each row records its profile)");
  const auto warnings = check_resume_profiles(scan, dir.path(), kBf16, true);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("resume (--resume-mixed): 2 request(s) done in " +
                             dir.path().string() + " were made with numerics profile '" +
                             testing::kTestNumerics + "' (differing: dtype (fp32 -> bf16))"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("new rows record '" + kBf16 + "'"), std::string::npos) << warnings[0];
}

TEST(ResumeProfiles, ASoftwareVersionChangeAloneIsAWarning) {
  ScratchDir dir("software");
  write_profiled_rank(dir.path(), 0, {"a"}, testing::kTestNumerics);
  std::string newer = testing::kTestNumerics;
  newer.replace(newer.find("software=test"), std::string::npos, "software=0.2.0 (git def)");
  const auto warnings = check_resume_profiles(scan_folder(dir.path()), dir.path(), newer, false);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0], "resume: 1 request(s) done in " + dir.path().string() +
                             " were made by another software version (software (test -> 0.2.0 "
                             "(git def))), with the same numerics otherwise; they are kept and "
                             "skipped");
}

// A rank file of the layout before the numerics column: its done requests have the unknown
// profile, which is refused like any other unless --resume-mixed.
TEST(ResumeProfiles, FilesWithoutTheColumnAreAnUnknownProfile) {
  ScratchDir dir("legacy");
  {
    h5::File file = h5::create_file((dir.path() / "rank-00000.h5").string());
    h5::write_attribute(file.id(), "store_video", static_cast<std::int64_t>(0));
    h5::Dataset table = create_requests_table(file.id(), kRequestsPath, false);
    const std::vector<ResultRecord> rows = {testing::ok_record("a", testing::video_for("a"))};
    append_requests(table, rows);
  }
  const ResumeScan scan = scan_folder(dir.path());
  EXPECT_EQ(scan.done, expected_done({"a"}));
  ASSERT_EQ(scan.profiles.size(), 1U);
  EXPECT_EQ(scan.profiles[0].profile, "");
  const std::string what = refusal(scan, dir.path(), testing::kTestNumerics);
  EXPECT_NE(what.find("1 request(s) already done here (e.g. in rank-00000.h5) were made with an "
                      "unknown numerics profile (written before profiles were recorded), but "
                      "this run's profile is '" +
                      std::string(testing::kTestNumerics) + "';"),
            std::string::npos)
      << what;
  const auto warnings = check_resume_profiles(scan, dir.path(), testing::kTestNumerics, true);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("an unknown numerics profile"), std::string::npos) << warnings[0];
}

// Issue 52, classes 3, 5 and 13: the resume scan threw on a link loop anywhere in the folder
// (every rerun exited 1, "internal error"), blocked on a FIFO named like a rank file, and passed
// over a folder or a link to /dev/zero named like one without a word. Each member, under a name
// of no interest and a rank file's name: the scan ends (a child under an alarm), counts the
// readable files' requests done, and names the rank file it skipped; the merge lists it.
TEST(Resume, NonFilesInTheFolderAreSkippedByNameNeverCrashOrHang) {
  for (const testing::Odd kind : testing::odd_kinds()) {
    for (const std::string name : {"junk", "rank-00001.h5"}) {
      SCOPED_TRACE(std::string(testing::odd_name(kind)) + " named " + name);
      ScratchDir dir("resume-odd");
      testing::write_rank(dir.path(), 0, 2, {"a", "b"});
      testing::make_odd(dir.path() / name, kind);
      const auto o = test::run_in_child([&] {
        const bool scanned = scan_done(dir.path()) == expected_done({"a", "b"});
        const MergeResult merged = merge_directory(dir.path());
        const bool listed =
            merged.unreadable_files ==
            (name == "junk" ? std::vector<std::string>{} : std::vector<std::string>{name});
        return scanned && merged.rows == 2U && listed ? 0 : 1;
      });
      ASSERT_EQ(o.code, 0) << test::describe(o);
      const std::string file = (dir.path() / name).string();
      const std::size_t warned = name == "junk" ? 0U : 1U;
      EXPECT_EQ(testing::occurrences_of(o.err, "resume: skipping unreadable " + file +
                                                   " (its requests are generated again): " + file +
                                                   ": " + testing::odd_problem(kind)),
                warned)
          << o.err;
      EXPECT_EQ(testing::occurrences_of(o.err, "merge: skipping unreadable " + file + ": " + file +
                                                   ": " + testing::odd_problem(kind)),
                warned)
          << o.err;
    }
  }
}

}  // namespace
}  // namespace omnidp::results
