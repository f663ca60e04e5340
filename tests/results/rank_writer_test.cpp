#include "omnidp/results/rank_writer.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "child_process.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/resume.hpp"
#include "omnidp/results/table.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

using testing::ScratchDir;

// The exit code of child `pid` once it ended, -1 where it did not exit normally.
int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  result.status = ::pclose(pipe);
  return result;
}

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RankFileName, FirstAndLaterSegments) {
  EXPECT_EQ(rank_file_name(3, 0), "rank-00003.h5");
  EXPECT_EQ(rank_file_name(3, 2), "rank-00003.2.h5");
  EXPECT_EQ(rank_file_name(123456, 0), "rank-123456.h5");
}

TEST(RankWriter, RoundTripOfEveryColumnAndAttribute) {
  ScratchDir dir("writer");
  const Video v1 = testing::make_video(3, 4, 5, 1);
  const Video v2 = testing::make_video(1, 2, 2, 2);
  ResultRecord r1 = testing::ok_record("cat/001", v1, 2);
  r1.prompt = "a cat, \"quoted\", 猫";
  r1.seed = (1ULL << 63U) - 1;
  r1.fps = 30;
  const ResultRecord r2 = testing::ok_record(".", v2, 2);
  const ResultRecord r3 = testing::failed_record("dog", "ModelError: NaN in latents", 2);
  RankFileInfo info = testing::rank_info(2, 4);
  info.config_yaml = "model:\n  name: synthetic\noutput:\n  dir: x\n";
  std::filesystem::path file;
  {
    RankWriter writer(dir.path() / "out", info, OutputConfig{});
    file = writer.path();
    EXPECT_EQ(file, dir.path() / "out" / "rank-00002.h5");
    writer.write(r1, &v1);
    writer.write(r2, &v2);
    writer.write(r3, nullptr);
    EXPECT_EQ(writer.rows_written(), 3U);
    writer.close();
    writer.close();  // idempotent
    EXPECT_THROW(writer.write(r3, nullptr), RuntimeError);
  }
  const ResultsFileInfo fi = read_file_info(file);
  EXPECT_EQ(fi.format, "omni-dp-rank/1");
  EXPECT_EQ(fi.software_version, version());
  EXPECT_EQ(fi.git_revision, git_revision());
  EXPECT_EQ(fi.config_yaml, info.config_yaml);
  EXPECT_EQ(fi.model, "synthetic");
  EXPECT_EQ(fi.world_size, 4);
  EXPECT_EQ(fi.rank, 2);
  EXPECT_EQ(fi.segment, 0);
  EXPECT_EQ(fi.host, "node-2");
  EXPECT_EQ(fi.device, "cpu:2");
  EXPECT_TRUE(fi.store_video);
  EXPECT_EQ(fi.compression, "none");
  EXPECT_EQ(fi.state, "closed");
  EXPECT_GT(fi.created, 1.6e9);

  const auto rows = read_stored_rows(file);
  ASSERT_EQ(rows.size(), 3U);
  const ResultRecord* expected[] = {&r1, &r2, &r3};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& a = *expected[i];
    const auto& b = rows[i].record;
    SCOPED_TRACE(a.id);
    testing::expect_same_row_columns(b, a);
    EXPECT_EQ(rows[i].video_present, a.status == RequestStatus::ok);
    EXPECT_EQ(rows[i].video_expected, a.status == RequestStatus::ok);
  }

  const h5::File f = h5::open_file(file.string());
  for (const ResultRecord* r : {static_cast<const ResultRecord*>(&r1), &r2}) {
    const VideoAttributes attrs = read_video_attributes(f.id(), r->id);
    EXPECT_EQ(attrs.id, r->id);
    EXPECT_EQ(attrs.prompt, r->prompt);
    EXPECT_EQ(attrs.seed, r->seed);
    EXPECT_EQ(attrs.fps, r->fps);
    EXPECT_EQ(attrs.input_key, r->input_key);
    EXPECT_EQ(attrs.video_sha256, r->video_sha256);
  }
  EXPECT_EQ(read_video(f.id(), "cat/001").data, v1.data);
  EXPECT_EQ(read_video(f.id(), ".").data, v2.data);
  const h5::Dataset d = h5::open_dataset(f.id(), "/videos/cat%2F001");
  EXPECT_EQ(h5::dataset_dims(d), (std::vector<hsize_t>{3, 4, 5, 3}));
  const h5::PropList dcpl(H5Dget_create_plist(d.id()));
  std::array<hsize_t, 4> chunk{};
  ASSERT_EQ(H5Pget_chunk(dcpl.id(), 4, chunk.data()), 4);
  EXPECT_EQ(chunk, (std::array<hsize_t, 4>{1, 4, 5, 3}));
  EXPECT_EQ(H5Pget_nfilters(dcpl.id()), 0);
}

TEST(RankWriter, VideosAndAttributesReadableWithH5dump) {
  OMNIDP_REQUIRE_H5DUMP();
  ScratchDir dir("h5dump");
  const Video v = testing::make_video(2, 3, 4, 17);
  ResultRecord r = testing::ok_record("clip/7", v);
  r.prompt = "a red fox";
  std::filesystem::path file;
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
    writer.write(r, &v);
    file = writer.path();
  }  // closed by the destructor
  const auto bin = dir.path() / "video.bin";
  const CommandResult dump =
      run("h5dump -d '/videos/clip%2F7' -b LE -o '" + bin.string() + "' '" + file.string() + "'");
  ASSERT_EQ(dump.status, 0) << dump.output;
  EXPECT_EQ(read_bytes(bin), v.data);

  const CommandResult attrs = run("h5dump -A -g /videos '" + file.string() + "'");
  ASSERT_EQ(attrs.status, 0) << attrs.output;
  EXPECT_NE(attrs.output.find("DATASET \"clip%2F7\""), std::string::npos) << attrs.output;
  EXPECT_NE(attrs.output.find("DATASPACE  SIMPLE { ( 2, 3, 4, 3 ) / ( 2, 3, 4, 3 ) }"), std::string::npos)
      << attrs.output;
  EXPECT_NE(attrs.output.find("\"a red fox\""), std::string::npos) << attrs.output;
  EXPECT_NE(attrs.output.find("\"" + r.video_sha256 + "\""), std::string::npos);
  EXPECT_NE(attrs.output.find("\"" + r.input_key + "\""), std::string::npos);

  const CommandResult table = run("h5dump -d /requests '" + file.string() + "'");
  ASSERT_EQ(table.status, 0) << table.output;
  EXPECT_NE(table.output.find("\"clip/7\""), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("H5T_ENUM"), std::string::npos);
  EXPECT_NE(table.output.find("\"numerics\""), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("\"" + std::string(testing::kTestNumerics) + "\""), std::string::npos)
      << table.output;

  const CommandResult state = run("h5dump -a /state '" + file.string() + "'");
  ASSERT_EQ(state.status, 0) << state.output;
  EXPECT_NE(state.output.find("(0): \"closed\""), std::string::npos) << state.output;
}

TEST(RankWriter, StoreVideoOffKeepsRowsOnly) {
  ScratchDir dir("novideo");
  OutputConfig output;
  output.store_video = false;
  const Video v = testing::make_video(1, 2, 2, 5);
  std::filesystem::path file;
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), output);
    writer.write(testing::ok_record("a", v), nullptr);
    writer.write(testing::ok_record("b", v), &v);  // checked, not stored
    writer.close();
    file = writer.path();
  }
  const h5::File f = h5::open_file(file.string());
  EXPECT_FALSE(h5::link_exists(f.id(), "/videos"));
  const auto rows = read_stored_rows(file);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_FALSE(rows[0].video_expected);
  EXPECT_FALSE(rows[0].video_present);
  EXPECT_FALSE(read_file_info(file).store_video);
}

TEST(RankWriter, RefusesInconsistentRecordsAndWritesNothing) {
  ScratchDir dir("refuse");
  RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
  const Video v = testing::make_video(2, 2, 2, 3);
  ResultRecord wrong_hash = testing::ok_record("a", v);
  wrong_hash.video_sha256 = std::string(64, 'a');
  try {
    writer.write(wrong_hash, &v);
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("video_sha256 mismatch: record aaaa"), std::string::npos)
        << e.what();
  }
  ResultRecord wrong_dims = testing::ok_record("b", v);
  wrong_dims.frames = 3;
  EXPECT_THROW(writer.write(wrong_dims, &v), RuntimeError);
  EXPECT_THROW(writer.write(testing::ok_record("c", v), nullptr), RuntimeError);  // no video
  ResultRecord bad_key = testing::ok_record("d", v);
  bad_key.input_key = "xyz";
  EXPECT_THROW(writer.write(bad_key, &v), RuntimeError);
  EXPECT_THROW(writer.write(testing::failed_record("e", "x"), &v), RuntimeError);
  EXPECT_THROW(writer.write(testing::ok_record("", v), &v), RuntimeError);
  writer.write(testing::ok_record("f", v), &v);
  EXPECT_THROW(writer.write(testing::ok_record("f", v), &v), RuntimeError);  // same id twice
  writer.close();
  const auto rows = read_stored_rows(writer.path());
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].record.id, "f");
}

TEST(RankWriter, NeverOverwritesAnEarlierFile) {
  ScratchDir dir("segments");
  testing::write_rank(dir.path(), 1, 2, {"x"});
  {
    RankWriter second(dir.path(), testing::rank_info(1, 2), OutputConfig{});
    EXPECT_EQ(second.path().filename(), "rank-00001.1.h5");
  }
  RankWriter third(dir.path(), testing::rank_info(1, 2), OutputConfig{});
  EXPECT_EQ(third.path().filename(), "rank-00001.2.h5");
  EXPECT_EQ(read_file_info(third.path()).segment, 2);
  EXPECT_EQ(read_stored_rows(dir.path() / "rank-00001.h5").size(), 1U);
  EXPECT_EQ(list_rank_files(dir.path()),
            (std::vector<std::filesystem::path>{dir.path() / "rank-00001.h5",
                                                dir.path() / "rank-00001.1.h5",
                                                dir.path() / "rank-00001.2.h5"}));
}

TEST(RankWriter, GzipCompressesAndRoundTrips) {
  ScratchDir dir("gzip");
  OutputConfig output;
  output.compression = CompressionKind::gzip;
  output.gzip_level = 4;
  Video v{4, 16, 16, std::vector<std::uint8_t>(4 * 16 * 16 * 3, 7)};
  std::filesystem::path file;
  {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), output);
    writer.write(testing::ok_record("z", v), &v);
    file = writer.path();
  }
  EXPECT_EQ(read_file_info(file).compression, "gzip:4");
  const h5::File f = h5::open_file(file.string());
  const h5::Dataset d = h5::open_dataset(f.id(), "/videos/z");
  const h5::PropList dcpl(H5Dget_create_plist(d.id()));
  ASSERT_EQ(H5Pget_nfilters(dcpl.id()), 1);
  unsigned flags = 0;
  std::size_t nelmts = 1;
  unsigned level = 0;
  EXPECT_EQ(H5Pget_filter2(dcpl.id(), 0, &flags, &nelmts, &level, 0, nullptr, nullptr),
            H5Z_FILTER_DEFLATE);
  EXPECT_EQ(level, 4U);
  EXPECT_LT(H5Dget_storage_size(d.id()), v.byte_size() / 4);
  EXPECT_EQ(read_video(f.id(), "z").data, v.data);
}

TEST(RankWriter, LzfIsAConfigErrorWhenTheFilterIsMissing) {
  if (H5Zfilter_avail(32000) > 0) GTEST_SKIP() << "an LZF plugin is installed here";
  ScratchDir dir("lzf");
  OutputConfig output;
  output.compression = CompressionKind::lzf;
  try {
    RankWriter writer(dir.path(), testing::rank_info(0, 1), output);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "output.compression");
    EXPECT_NE(std::string(e.what()).find("lzf is not available"), std::string::npos);
  }
  EXPECT_TRUE(list_rank_files(dir.path()).empty());
  output.compression = CompressionKind::gzip;
  output.gzip_level = 0;
  EXPECT_THROW(check_output_support(output), ConfigError);
}

TEST(RankWriter, FaultHookRunsBetweenWriteAndFlush) {
  ScratchDir dir("hook");
  RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
  int calls = 0;
  writer.set_fault_hook([&] {
    ++calls;
    throw RuntimeError("injected");
  });
  const Video v = testing::make_video(1, 2, 2, 1);
  EXPECT_THROW(writer.write(testing::ok_record("a", v), &v), RuntimeError);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(writer.rows_written(), 0U);  // not reported durable
  writer.set_fault_hook({});
  writer.write(testing::ok_record("b", v), &v);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(writer.rows_written(), 1U);
}

// In a forked child: any write that takes `file` more than `room` bytes past its size now fails
// with EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored), as on a full disk; exit 20 if the limit is refused.
void limit_growth(const std::filesystem::path& file, std::uintmax_t room) {
  const rlim_t limit = static_cast<rlim_t>(std::filesystem::file_size(file) + room);
  const rlimit fsize{limit, limit};
  std::signal(SIGXFSZ, SIG_IGN);
  if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) ::_exit(20);
}

// A full disk at any point of a write (issue 39, class 1). A forked child writes two
// requests, then lowers RLIMIT_FSIZE to the file's size + `room` bytes (SIGXFSZ ignored: a
// write past the limit fails with EFBIG, as on a full disk) and writes a third whose video (9
// frames of 64x96, 162 KiB) fits in HDF5's chunk cache, so its chunks reach the disk only when
// the dataset is closed (before the fix that close only warned, and the row was flushed ok).
// Each room: write() either returns (the row and its video are durable) or throws the
// disk-full error naming the file, and refuses more writes; no ok row without a readable
// video is left behind; the rows before stay readable, hash for hash (h5dump too); and the
// resume scan agrees. (The writer reserves the space first: see the next test for the rest.)
TEST(RankWriter, AFullDiskAtAnyStepFailsTheRecordAndKeepsTheRowsBefore) {
  OMNIDP_REQUIRE_H5DUMP();
  const std::vector<std::string> before = {"a", "b"};
  const auto video_of = [](const std::string& id) {
    return testing::make_video(9, 64, 96, static_cast<std::uint32_t>(id[0]));
  };
  enum : int { kFailedCleanly = 0, kWritten = 10, kNoThrowAfterFailure = 11, kWrongError = 12 };
  int failures_seen = 0;
  for (const std::uintmax_t room :
       {0U, 1U, 512U, 2048U, 4096U, 8192U, 18432U, 30000U, 65536U, 100000U, 150000U, 165888U,
        170000U, 180000U, 200000U, 262144U, 800000U, 4194304U}) {
    SCOPED_TRACE("room " + std::to_string(room));
    ScratchDir dir("fulldisk-" + std::to_string(room));
    const auto file = dir.path() / "rank-00000.h5";
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = kWrongError;
      try {
        RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
        for (const auto& id : before) {
          const Video v = video_of(id);
          writer.write(testing::ok_record(id, v), &v);
        }
        limit_growth(file, room);
        const Video v = video_of("c");
        try {
          writer.write(testing::ok_record("c", v), &v);
          code = kWritten;
        } catch (const Error& e) {
          const std::string what = e.what();
          const bool clear = what.find(file.string()) != std::string::npos &&
                             what.find("no space left on device") != std::string::npos;
          code = clear ? kFailedCleanly : kWrongError;
          if (!clear) std::fprintf(stderr, "unclear error: %s\n", e.what());
          if (clear) {  // the writer refuses more work after a failed write
            try {
              writer.write(testing::failed_record("d", "x"), nullptr);
              code = kNoThrowAfterFailure;
            } catch (const Error&) {
            }
          }
        }
        ::_exit(code);  // no destructor: the file stays as the write left it
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
      }
      ::_exit(code);
    }
    const int code = exit_code_of(pid);
    ASSERT_TRUE(code == kFailedCleanly || code == kWritten) << "child exit " << code;
    if (code == kFailedCleanly) ++failures_seen;

    std::vector<std::string> durable = before;
    if (code == kWritten) durable.push_back("c");
    std::vector<StoredRow> rows;
    ASSERT_NO_THROW(rows = read_stored_rows(file));
    ASSERT_EQ(rows.size(), durable.size());
    const h5::File f = h5::open_file(file.string());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].record.id, durable[i]);
      EXPECT_EQ(rows[i].record.status, RequestStatus::ok);
      EXPECT_TRUE(rows[i].video_present);
      EXPECT_EQ(hash_stored_video(f.id(), durable[i]), video_sha256(video_of(durable[i])))
          << durable[i];
    }
    std::unordered_map<std::string, std::string> done;
    for (const auto& id : durable) done[id] = testing::key_of("key:" + id);
    EXPECT_EQ(scan_done(dir.path()), done);
    const CommandResult dump = run("h5dump -H '" + file.string() + "'");
    EXPECT_EQ(dump.status, 0) << dump.output;
  }
  // The smallest rooms cannot hold the video, 4 MiB can: the sweep hit both outcomes.
  EXPECT_GE(failures_seen, 3);
  EXPECT_LT(failures_seen, 18);
}

// The same sweep where space cannot be reserved (set_space_reservation(false): a file system
// without posix_fallocate), so the disk fills inside HDF5's writes: at the video's close, at
// an attribute, at the row, at the flush. write() either returns with the row and its video
// durable, or throws the disk-full error naming the file; an ok row whose video does not read
// back is never counted done.
TEST(RankWriter, AFullDiskInsideHdf5WritesNeverLeavesAnOkRowWithoutItsVideo) {
  const auto video_of = [](const std::string& id) {
    return testing::make_video(9, 64, 96, static_cast<std::uint32_t>(id[0]));
  };
  enum : int { kFailedCleanly = 0, kWritten = 10, kWrongError = 12 };
  int failures_seen = 0;
  for (std::uintmax_t room = 0; room <= 200000; room += 5000) {
    SCOPED_TRACE("room " + std::to_string(room));
    ScratchDir dir("fulldisk-noreserve-" + std::to_string(room));
    const auto file = dir.path() / "rank-00000.h5";
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = kWrongError;
      try {
        RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
        writer.set_space_reservation(false);
        for (const std::string id : {"a", "b"}) {
          const Video v = video_of(id);
          writer.write(testing::ok_record(id, v), &v);
        }
        limit_growth(file, room);
        const Video v = video_of("c");
        try {
          writer.write(testing::ok_record("c", v), &v);
          code = kWritten;
        } catch (const DiskFullError& e) {
          code = std::string(e.what()).find(file.string() + ": no space left on device (") == 0
                     ? kFailedCleanly
                     : kWrongError;
        }
        ::_exit(code);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
      }
      ::_exit(code);
    }
    const int code = exit_code_of(pid);
    ASSERT_TRUE(code == kFailedCleanly || code == kWritten) << "child exit " << code;
    if (code == kFailedCleanly) ++failures_seen;
    // Whatever the file holds, every request the resume scan counts done reads back whole.
    const auto done = scan_done(dir.path());
    if (code == kWritten) {
      EXPECT_EQ(done.size(), 3U);
    }
    if (done.empty()) continue;
    const h5::File f = h5::open_file(file.string());
    for (const auto& [id, key] : done) {
      EXPECT_EQ(hash_stored_video(f.id(), id), video_sha256(video_of(id))) << id;
    }
  }
  EXPECT_GE(failures_seen, 10);
}

TEST(RankWriter, UnwritableFolderIsAnError) {
  EXPECT_THROW(RankWriter(std::filesystem::path("/proc/omnidp-cannot-exist"),
                          testing::rank_info(0, 1), OutputConfig{}),
               Error);
}

// Issue 52, class 3: a link loop named like this rank's file made the writer's exists() throw
// (every rerun exited 1). Anything under the name, a dangling link or a loop too, takes it:
// the writer opens the next segment. And a non-file under the live table's name is never
// written through (a link) or blocked on (a FIFO): the writer goes on without its live view.
TEST(RankWriter, ANonFileUnderItsNameTakesTheNameAndNoLiveTableIsWrittenOverOne) {
  for (const testing::Odd kind : testing::odd_kinds()) {
    SCOPED_TRACE(testing::odd_name(kind));
    ScratchDir dir("writer-odd");
    testing::make_odd(dir.path() / "rank-00000.h5", kind);
    testing::make_odd(dir.path() / "rank-00000.1.h5.live", kind);
    const auto o = test::run_in_child([&] {
      RankWriter writer(dir.path(), testing::rank_info(0, 1), OutputConfig{});
      const Video v = testing::video_for("a");
      writer.write(testing::ok_record("a", v), &v);
      writer.close();
      return writer.path() == dir.path() / "rank-00000.1.h5" ? 0 : 1;
    });
    ASSERT_EQ(o.code, 0) << test::describe(o);
    EXPECT_NE(o.err.find("results: no live view of " + (dir.path() / "rank-00000.1.h5").string()),
              std::string::npos)
        << o.err;
    EXPECT_EQ(read_stored_rows(dir.path() / "rank-00000.1.h5").size(), 1U);
    if (kind == testing::Odd::link_to_dev_zero) {
      EXPECT_TRUE(std::filesystem::is_character_file("/dev/zero"));
    }
  }
}

}  // namespace
}  // namespace omnidp::results
