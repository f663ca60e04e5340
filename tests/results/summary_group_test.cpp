#include "omnidp/results/summary_group.hpp"

#include <gtest/gtest.h>

#include "results/test_util.hpp"

namespace omnidp::results {
namespace {

TEST(SummaryGroup, RoundTripOfEveryField) {
  const RunSummary s = testing::filled_summary();
  testing::ScratchDir dir("summary-group");
  const auto path = (dir.path() / "s.h5").string();
  {
    const h5::File f = h5::create_file(path);
    write_summary_group(f.id(), s, "runtime");
  }
  const h5::File f = h5::open_file(path);
  std::string source;
  const RunSummary b = read_summary_group(f.id(), source);
  EXPECT_EQ(source, "runtime");
  testing::expect_same_summary(b, s);
  const h5::Group g = h5::open_group(f.id(), "summary");
  EXPECT_EQ(h5::read_int_attribute(g.id(), "sequence_parallel_size"), 3);
  EXPECT_EQ(h5::read_int_attribute(g.id(), "interrupted"), 1);
  EXPECT_EQ(h5::read_string_attribute(g.id(), "policy"), "round_robin");
  EXPECT_EQ(h5::read_double_dataset(g.id(), "busy_fraction_per_rank"), s.busy_fraction_per_rank);
}

// A results.h5 merged before a field existed: what it lacks keeps the default.
TEST(SummaryGroup, AFieldAnOlderFileLacksKeepsItsDefault) {
  testing::ScratchDir dir("summary-group-old");
  const auto path = (dir.path() / "old.h5").string();
  {
    const h5::File f = h5::create_file(path);
    const h5::Group g = h5::create_group(f.id(), "summary");
    h5::write_attribute(g.id(), "source", std::string_view("recomputed"));
    h5::write_attribute(g.id(), "total", std::int64_t{7});
    h5::write_attribute(g.id(), "tensor_parallel_size", std::int64_t{2});
  }
  const h5::File f = h5::open_file(path);
  std::string source;
  const RunSummary b = read_summary_group(f.id(), source);
  EXPECT_EQ(source, "recomputed");
  EXPECT_EQ(b.total, 7U);
  EXPECT_EQ(b.tensor_parallel_size, 2);
  EXPECT_EQ(b.sequence_parallel_size, 1);
  EXPECT_EQ(b.skipped_tasks, 0U);
  EXPECT_TRUE(b.busy_s_per_rank.empty());
  EXPECT_EQ(b.flops_counted, 0U);  // merged before the MFU fields: not reported
  EXPECT_FALSE(b.peak_tflops.has_value());
  EXPECT_FALSE(b.mfu.has_value());
  EXPECT_EQ(b.peak_source, "");
  EXPECT_EQ(b.forwards, 0U);  // merged before the step cache fields: not recorded
  EXPECT_EQ(b.forwards_computed, 0U);
  EXPECT_FALSE(b.cache_skip_rate.has_value());
}

// An unknown peak (CPU, an unknown GPU) is no attribute at all, and reads back unknown.
TEST(SummaryGroup, AnUnknownPeakIsNoAttribute) {
  testing::ScratchDir dir("summary-group-nopeak");
  const auto path = (dir.path() / "r.h5").string();
  RunSummary s = testing::filled_summary();
  s.peak_tflops.reset();
  s.peak_source.clear();
  s.mfu.reset();
  s.makespan_mfu.reset();
  {
    const h5::File f = h5::create_file(path);
    write_summary_group(f.id(), s, "runtime");
  }
  const h5::File f = h5::open_file(path);
  const h5::Group g = h5::open_group(f.id(), "summary");
  EXPECT_FALSE(h5::has_attribute(g.id(), "mfu"));
  EXPECT_FALSE(h5::has_attribute(g.id(), "peak_tflops"));
  EXPECT_EQ(h5::read_double_attribute(g.id(), "achieved_tflops_per_gpu"), 125.75);
  std::string source;
  testing::expect_same_summary(read_summary_group(f.id(), source), s);
}

}  // namespace
}  // namespace omnidp::results
