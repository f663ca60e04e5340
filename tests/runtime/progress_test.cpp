#include "omnidp/runtime/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace omnidp::runtime {
namespace {

// What a ProgressReporter wrote, through an in-memory FILE*.
class Captured {
 public:
  Captured() : file_(open_memstream(&buffer_, &size_)) {}
  ~Captured() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(buffer_);
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  [[nodiscard]] std::FILE* file() const { return file_; }
  [[nodiscard]] std::string text() {
    std::fflush(file_);
    return std::string(buffer_, size_);
  }

 private:
  char* buffer_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* file_;
};

ProgressSnapshot snapshot(std::size_t done, std::size_t total, double elapsed, double eta) {
  ProgressSnapshot s;
  s.done = done;
  s.failed = done > 0 ? 1 : 0;
  s.total = total;
  s.elapsed_s = elapsed;
  s.eta_s = eta;
  return s;
}

TEST(Progress, LineAndDurations) {
  EXPECT_EQ(format_progress(snapshot(37, 120, 177.6, 400)),
            "37/120 done (30.8%), 1 failed, 12.5 videos/min, ETA 6m40s");
  EXPECT_EQ(format_progress(snapshot(0, 0, 0, -1)),
            "0/0 done (100.0%), 0 failed, 0.0 videos/min, ETA --");
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-1), "--");
}

TEST(Progress, BarFillsInProportion) {
  EXPECT_EQ(progress_bar(snapshot(0, 10, 0, -1), 10), "[..........]");
  EXPECT_EQ(progress_bar(snapshot(3, 10, 0, -1), 10), "[###.......]");
  EXPECT_EQ(progress_bar(snapshot(10, 10, 0, -1), 10), "[##########]");
  EXPECT_EQ(progress_bar(snapshot(0, 0, 0, -1), 4), "[####]");
}

TEST(Progress, PlainLinesAtTheInterval) {
  Captured out;
  ProgressReporter reporter(out.file(), false, 10.0);
  reporter.update(snapshot(1, 4, 10, 30), 10.0);  // due: first line
  reporter.update(snapshot(2, 4, 15, 15), 15.0);  // not due (5 s later)
  reporter.update(snapshot(3, 4, 20, 7), 20.0);   // due
  reporter.finish(snapshot(4, 4, 22, 0));
  EXPECT_EQ(out.text(),
            "progress: 1/4 done (25.0%), 1 failed, 6.0 videos/min, ETA 30s\n"
            "progress: 3/4 done (75.0%), 1 failed, 9.0 videos/min, ETA 7s\n"
            "progress: 4/4 done (100.0%), 1 failed, 10.9 videos/min, ETA 0s\n");
}

TEST(Progress, InPlaceBarOnATerminal) {
  Captured out;
  ProgressReporter reporter(out.file(), true, 10.0);
  reporter.update(snapshot(1, 2, 6, 6), 1.0);
  reporter.update(snapshot(1, 2, 6, 6), 1.2);  // nothing new and under 0.5 s: no rewrite
  reporter.finish(snapshot(2, 2, 12, 0));
  const std::string bar1 = "[" + std::string(15, '#') + std::string(15, '.') + "]";
  const std::string bar2 = "[" + std::string(30, '#') + "]";
  EXPECT_EQ(out.text(), "\r\033[K" + bar1 + " 1/2 done (50.0%), 1 failed, 10.0 videos/min, ETA 6s" +
                            "\r\033[K" + bar2 +
                            " 2/2 done (100.0%), 1 failed, 10.0 videos/min, ETA 0s\n");
}

// The end-of-run summary's step cache line: only when a forward was skipped; a run without a
// cache (every forward computed) or without counts prints none.
TEST(Progress, SummaryShowsTheStepCacheOnlyWhenAForwardWasSkipped) {
  SummaryInputs in;
  in.completed = 3;
  in.makespan_s = 10.0;
  in.latencies_s = {1.0, 2.0, 3.0};
  in.busy_s_per_rank = {6.0};
  in.forwards.add(60, 20);
  in.forwards.add(60, 60);
  in.forwards.add(0, 0);
  const RunSummary cached = make_summary(in);
  EXPECT_EQ(cached.forwards, 120U);
  EXPECT_EQ(cached.forwards_computed, 80U);
  EXPECT_EQ(cached.cache_skip_rate, 1.0 - 80.0 / 120.0);
  const std::string text = format_summary(cached);
  EXPECT_NE(text.find("  model flops not counted (no ok request with a model FLOP count)\n"
                      "  step cache skip rate 33.33% (40 of 120 transformer forwards skipped, 80 "
                      "computed)\n"),
            std::string::npos)
      << text;

  in.forwards = {};
  in.forwards.add(60, 60);
  const RunSummary whole = make_summary(in);
  EXPECT_EQ(whole.cache_skip_rate, 0.0);
  EXPECT_EQ(format_summary(whole).find("step cache"), std::string::npos) << format_summary(whole);
  in.forwards = {};
  EXPECT_EQ(format_summary(make_summary(in)).find("step cache"), std::string::npos);
}

}  // namespace
}  // namespace omnidp::runtime
