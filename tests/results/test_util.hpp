#pragma once
// Helpers shared by the results tests and the compare CLI test: scratch folders, records and
// videos with known bytes, whole result folders written through RankWriter.

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "omnidp/common/sha256.hpp"
#include "omnidp/common/video.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/rank_writer.hpp"
#include "omnidp/results/record.hpp"
#include "omnidp/results/table.hpp"
#include "temp_dir.hpp"

namespace omnidp::results::testing {

// True when HDF5's command-line tools are installed (Debian's hdf5-tools; the GPU machine has
// none): the tests that read files "from outside" with h5dump skip without them.
inline bool have_h5dump() { return std::system("command -v h5dump >/dev/null 2>&1") == 0; }
#define OMNIDP_REQUIRE_H5DUMP()                   \
  if (!::omnidp::results::testing::have_h5dump()) \
  GTEST_SKIP() << "h5dump (hdf5-tools) is not installed"

// A RunSummary with every field set to a distinct non-default value, and the check that two
// summaries agree field by field (the summary.json and /summary round trips).
inline RunSummary filled_summary() {
  RunSummary s;
  s.total = 12;
  s.completed = 9;
  s.failed = 3;
  s.skipped_resume = 2;
  s.skipped_tasks = 5;
  s.makespan_s = 33.25;
  s.videos_per_min = 16.5;
  s.latency_p50_s = 3.5;
  s.latency_p90_s = 4.75;
  s.latency_max_s = 6.0;
  s.busy_s_per_rank = {30.0, 30.0, 12.5, 12.5};
  s.busy_fraction_per_rank = {0.9, 0.9, 0.375, 0.375};
  s.scheduling_efficiency = 0.6375;
  s.world_size = 4;
  s.replicas = 2;
  s.tensor_parallel_size = 2;
  s.sequence_parallel_size = 3;
  s.cfg_parallel_size = 2;
  s.policy = "round_robin";
  s.order = "manifest";
  s.interrupted = true;
  s.flops_counted = 9;
  s.model_tflop_per_video = 2.5;
  s.achieved_tflops_per_gpu = 125.75;
  s.peak_tflops = 989.4;
  s.peak_source = "device table (NVIDIA H200)";
  s.mfu = 0.125;
  s.makespan_mfu = 0.0625;
  s.forwards = 120;
  s.forwards_computed = 80;
  s.cache_skip_rate = 1.0 - 80.0 / 120.0;
  return s;
}
inline void expect_same_summary(const RunSummary& b, const RunSummary& s) {
  EXPECT_EQ(b.total, s.total);
  EXPECT_EQ(b.completed, s.completed);
  EXPECT_EQ(b.failed, s.failed);
  EXPECT_EQ(b.skipped_resume, s.skipped_resume);
  EXPECT_EQ(b.skipped_tasks, s.skipped_tasks);
  EXPECT_EQ(b.makespan_s, s.makespan_s);
  EXPECT_EQ(b.videos_per_min, s.videos_per_min);
  EXPECT_EQ(b.latency_p50_s, s.latency_p50_s);
  EXPECT_EQ(b.latency_p90_s, s.latency_p90_s);
  EXPECT_EQ(b.latency_max_s, s.latency_max_s);
  EXPECT_EQ(b.busy_s_per_rank, s.busy_s_per_rank);
  EXPECT_EQ(b.busy_fraction_per_rank, s.busy_fraction_per_rank);
  EXPECT_EQ(b.scheduling_efficiency, s.scheduling_efficiency);
  EXPECT_EQ(b.world_size, s.world_size);
  EXPECT_EQ(b.replicas, s.replicas);
  EXPECT_EQ(b.tensor_parallel_size, s.tensor_parallel_size);
  EXPECT_EQ(b.sequence_parallel_size, s.sequence_parallel_size);
  EXPECT_EQ(b.cfg_parallel_size, s.cfg_parallel_size);
  EXPECT_EQ(b.policy, s.policy);
  EXPECT_EQ(b.order, s.order);
  EXPECT_EQ(b.interrupted, s.interrupted);
  EXPECT_EQ(b.flops_counted, s.flops_counted);
  EXPECT_EQ(b.model_tflop_per_video, s.model_tflop_per_video);
  EXPECT_EQ(b.achieved_tflops_per_gpu, s.achieved_tflops_per_gpu);
  EXPECT_EQ(b.peak_tflops, s.peak_tflops);
  EXPECT_EQ(b.peak_source, s.peak_source);
  EXPECT_EQ(b.mfu, s.mfu);
  EXPECT_EQ(b.makespan_mfu, s.makespan_mfu);
  EXPECT_EQ(b.forwards, s.forwards);
  EXPECT_EQ(b.forwards_computed, s.forwards_computed);
  EXPECT_EQ(b.cache_skip_rate, s.cache_skip_rate);
}

// The results tests' name for the shared scratch folder (tests/temp_dir.hpp).
using ScratchDir = omnidp::test::TempDir;

// Deterministic bytes that depend on `salt`.
inline Video make_video(int frames, int height, int width, std::uint32_t salt) {
  Video v{frames, height, width, {}};
  v.data.assign(v.byte_size(), 0);
  std::uint32_t x = salt * 2654435761U + 12345U;
  for (auto& b : v.data) {
    x = x * 1664525U + 1013904223U;
    b = static_cast<std::uint8_t>(x >> 24U);
  }
  return v;
}

// The numerics profile the test records carry (config/numerics.hpp's canonical form).
inline constexpr const char* kTestNumerics =
    "dtype=fp32;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;"
    "software=test";

inline std::string key_of(const std::string& text) { return sha256_hex(std::string_view(text)); }

// An ok record for `video` with every column set to something specific to `id`.
inline ResultRecord ok_record(const std::string& id, const Video& video, int rank = 0) {
  ResultRecord r;
  r.id = id;
  r.input_key = key_of("key:" + id);
  r.video_sha256 = video_sha256(video);
  r.status = RequestStatus::ok;
  r.rank = rank;
  r.replica = rank;
  r.host = "node-" + std::to_string(rank);
  r.device = "cpu:" + std::to_string(rank);
  r.start_time = 1700000000.25 + static_cast<double>(id.size());
  r.end_time = r.start_time + 1.5;
  r.seconds = 1.5;
  r.frames = video.frames;
  r.height = video.height;
  r.width = video.width;
  r.steps = 4;
  r.attempt = 1;
  r.numerics = kTestNumerics;
  r.model_tflop = 0.5 + 0.125 * static_cast<double>(id.size());
  r.prompt = "a prompt for " + id;
  r.seed = 1000 + id.size();
  r.fps = 24;
  return r;
}

inline ResultRecord failed_record(const std::string& id, const std::string& error, int rank = 0) {
  ResultRecord r;
  r.id = id;
  r.input_key = key_of("key:" + id);
  r.status = RequestStatus::failed;
  r.error = error;
  r.rank = rank;
  r.replica = rank;
  r.host = "node-" + std::to_string(rank);
  r.device = "cpu:" + std::to_string(rank);
  r.start_time = 1700000100.0;
  r.end_time = 1700000100.5;
  r.seconds = 0.5;
  r.frames = 2;
  r.height = 4;
  r.width = 6;
  r.steps = 4;
  r.attempt = 1;
  r.numerics = kTestNumerics;
  return r;
}

// Every column of a /requests row but numerics: `got` as read back equals `want` as written.
inline void expect_same_row_columns(const ResultRecord& got, const ResultRecord& want) {
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.input_key, want.input_key);
  EXPECT_EQ(got.video_sha256, want.video_sha256);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.error, want.error);
  EXPECT_EQ(got.rank, want.rank);
  EXPECT_EQ(got.replica, want.replica);
  EXPECT_EQ(got.host, want.host);
  EXPECT_EQ(got.device, want.device);
  EXPECT_EQ(got.start_time, want.start_time);
  EXPECT_EQ(got.end_time, want.end_time);
  EXPECT_EQ(got.seconds, want.seconds);
  EXPECT_EQ(got.frames, want.frames);
  EXPECT_EQ(got.height, want.height);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.attempt, want.attempt);
  EXPECT_EQ(got.model_tflop, want.model_tflop);
  EXPECT_EQ(got.forwards, want.forwards);
  EXPECT_EQ(got.forwards_computed, want.forwards_computed);
}

inline RankFileInfo rank_info(int rank, int world_size) {
  RankFileInfo info;
  info.rank = rank;
  info.world_size = world_size;
  info.host = "node-" + std::to_string(rank);
  info.device = "cpu:" + std::to_string(rank);
  info.model = "synthetic";
  info.config_yaml = "model:\n  name: synthetic\n";
  return info;
}

// The video of request `id` in the test's synthetic world (depends on the id only).
inline Video video_for(const std::string& id) {
  std::uint32_t salt = 7;
  for (const char c : id) salt = salt * 31U + static_cast<unsigned char>(c);
  return make_video(2, 4, 6, salt);
}

// Writes one rank file in `dir` holding ok records of `ids` (videos from video_for).
inline void write_rank(const std::filesystem::path& dir, int rank, int world_size,
                       const std::vector<std::string>& ids) {
  RankWriter writer(dir, rank_info(rank, world_size), OutputConfig{});
  for (const auto& id : ids) {
    const Video v = video_for(id);
    writer.write(ok_record(id, v, rank), &v);
  }
  writer.close();
}

// Writes one rank file in `dir` holding an ok record per (id, video) pair, videos as given.
inline void write_rank_videos(const std::filesystem::path& dir,
                              const std::vector<std::pair<std::string, Video>>& videos) {
  RankWriter writer(dir, rank_info(0, 1), OutputConfig{});
  for (const auto& [id, v] : videos) writer.write(ok_record(id, v), &v);
  writer.close();
}

// A rank that a running job writes, in a child process (the live view's tests): it writes
// ok records of its ids in steps, holding its rank file open (and locked) in between, without
// sleeps: each step is one round trip over a pipe. The child never returns to the test.
class LiveRank {
 public:
  // Forks; the child creates rank `rank`'s file in `dir` and writes `first`.
  LiveRank(const std::filesystem::path& dir, int rank, int world_size,
           const std::vector<std::string>& first) {
    if (::pipe(to_child_) != 0 || ::pipe(to_parent_) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) run_child(dir, rank, world_size, first);
    ::close(to_child_[0]);
    ::close(to_parent_[1]);
    wait_for_child();
  }
  ~LiveRank() {
    if (pid_ > 0) finish();
  }
  LiveRank(const LiveRank&) = delete;
  LiveRank& operator=(const LiveRank&) = delete;

  // The child writes one more ok record; returns once it is durable.
  void write(const std::string& id) {
    send('w' + id);
    wait_for_child();
  }
  // The child closes its file and exits 0; returns its exit status.
  int finish() {
    send("c");
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    ::close(to_child_[1]);
    ::close(to_parent_[0]);
    return status;
  }

 private:
  [[noreturn]] void run_child(const std::filesystem::path& dir, int rank, int world_size,
                              const std::vector<std::string>& first) {
    ::close(to_child_[1]);
    ::close(to_parent_[0]);
    int code = 0;
    try {
      RankWriter writer(dir, rank_info(rank, world_size), OutputConfig{});
      const auto put = [&](const std::string& id) {
        const Video v = video_for(id);
        writer.write(ok_record(id, v, rank), &v);
      };
      for (const auto& id : first) put(id);
      for (;;) {
        (void)!::write(to_parent_[1], "r", 1);  // ready
        std::string command = read_command();
        if (command == "c" || command.empty()) break;
        put(command.substr(1));
      }
      writer.close();
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  std::string read_command() {
    std::uint32_t size = 0;
    if (::read(to_child_[0], &size, sizeof size) != sizeof size) return {};
    std::string text(size, '\0');
    if (size > 0 && ::read(to_child_[0], text.data(), size) != static_cast<ssize_t>(size))
      return {};
    return text;
  }
  void send(const std::string& command) {
    const auto size = static_cast<std::uint32_t>(command.size());
    (void)!::write(to_child_[1], &size, sizeof size);
    (void)!::write(to_child_[1], command.data(), command.size());
  }
  void wait_for_child() {
    char c = 0;
    if (::read(to_parent_[0], &c, 1) != 1) throw std::runtime_error("the live rank died");
  }

  pid_t pid_ = -1;
  int to_child_[2] = {-1, -1};
  int to_parent_[2] = {-1, -1};
};

// `v` with every value moved by one level (up, or down where it is 255).
inline Video off_by_one(Video v) {
  for (auto& b : v.data) b = b == 255 ? 254 : static_cast<std::uint8_t>(b + 1);
  return v;
}

// `v` with its first value moved by 100 levels.
inline Video off_by_100(Video v) {
  v.data[0] = v.data[0] >= 128 ? static_cast<std::uint8_t>(v.data[0] - 100)
                               : static_cast<std::uint8_t>(v.data[0] + 100);
  return v;
}

// Writes one rank file holding a failed record for each of `ids`.
inline void write_failed_rank(const std::filesystem::path& dir, int rank, int world_size,
                              const std::vector<std::string>& ids) {
  RankWriter writer(dir, rank_info(rank, world_size), OutputConfig{});
  for (const auto& id : ids) writer.write(failed_record(id, "boom: " + id, rank), nullptr);
  writer.close();
}

// Flips the first byte of request `id`'s stored video in `file` in place; its row and its
// recorded video_sha256 stay as they are (a bit flip on disk: the video still reads back).
inline void flip_stored_byte(const std::filesystem::path& file, const std::string& id) {
  const h5::File f = h5::open_file(file.string(), true);
  Video video = read_video(f.id(), id);
  video.data[0] ^= 0xFFU;
  const h5::Dataset dataset = h5::open_dataset(f.id(), video_path(id));
  h5::call("H5Dwrite", id, [&] {
    return H5Dwrite(dataset.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, video.data.data());
  });
}

// Overwrites the first bytes of the object header of /videos/<id> in `file`: its row stays ok,
// its video no longer opens (a damaged disk block). A gtest failure where that cannot be done.
inline void overwrite_video_header(const std::filesystem::path& file, const std::string& id) {
  haddr_t address = HADDR_UNDEF;
  {
    const h5::File f = h5::open_file(file.string());
    H5O_info_t info{};
    ASSERT_GE(
        H5Oget_info_by_name2(f.id(), video_path(id).c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), 0);
    address = info.addr;
  }
  const int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char garbage[8] = {'X', 'X', 'X', 'X', 'X', 'X', 'X', 'X'};
  ASSERT_EQ(::pwrite(fd, garbage, sizeof(garbage), static_cast<off_t>(address)),
            static_cast<ssize_t>(sizeof(garbage)));
  ::close(fd);
}

}  // namespace omnidp::results::testing
