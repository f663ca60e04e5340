// print_plan (omni-dp-batch --dry-run); run_job itself is exercised under mpirun
// (mpi_job_test.cpp).
#include "omnidp/runtime/job.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "job_test_support.hpp"
#include "omnidp/models/model_table.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(PrintPlan, ShowsRequestsReplicasDevicesAndServiceOrder) {
  TempDir dir("plan");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 6), dir.path() / "out", results);
  o.config.parallel.cfg_parallel_size = 2;
  o.config.scheduler.policy = SchedulerPolicy::round_robin;
  o.config.synthetic.seconds_per_gcost = 1000.0;
  std::ostringstream out;
  print_plan(o, 4, out);
  const auto l = lines(out.str());
  ASSERT_GE(l.size(), 19U) << out.str();
  EXPECT_EQ(l[0], "omni-dp dry run: 4 rank(s), model synthetic (fp32, cpu)");
  EXPECT_EQ(l[1],
            "manifest: " + (dir.path() / "manifest.jsonl").string() + ": 6 request(s), 6 to run");
  EXPECT_EQ(l[2], "output: " + (dir.path() / "out").string());
  EXPECT_EQ(l[3],
            "replicas: 2 of 2 rank(s) (tensor_parallel 1 x sequence_parallel 1 x cfg_parallel 2); "
            "coordinator on rank 0 also works");
  EXPECT_EQ(l[4],
            "  replica 0: ranks 0,1 (rank 0 cfg branch cond, leader; rank 1 cfg branch uncond)");
  EXPECT_EQ(l[5],
            "  replica 1: ranks 2,3 (rank 2 cfg branch cond, leader; rank 3 cfg branch uncond)");
  EXPECT_EQ(l[6], "devices by local rank: 0=cpu 1=cpu 2=cpu 3=cpu");
  EXPECT_EQ(l[7], "MFU peak: none on the CPU (MFU not reported; runtime.peak_tflops sets one)");
  EXPECT_EQ(l[8],
            "scheduler: round_robin, order cost_desc, prefetch 1, lookahead 4096, max_retries 1, "
            "request_timeout_s 0");
  EXPECT_EQ(l[9],
            "generation defaults: guidance_scale 5 (model default), flow_shift 5 (model default)");
  // Frames 5, 9, 17, 33 at 32x48, 2 steps, CFG: 2, 3, 5, 9 latent frames x 6 tokens.
  EXPECT_EQ(
      l[12],
      "  #    id                        frames  height x width  steps  cfg  Gcost    replica");
  EXPECT_EQ(l[13].substr(0, 39), "  0    r000                           5");
  EXPECT_EQ(l[13].substr(l[13].size() - 1), "0");
  EXPECT_EQ(l[14].substr(0, 39), "  1    r001                           9");
  EXPECT_EQ(l[14].substr(l[14].size() - 1), "1");
  EXPECT_EQ(l[18].substr(0, 12), "  5    r005 ");
  // runtime.peak_tflops: the configured peak.
  o.config.runtime.peak_tflops = 989.4;
  std::ostringstream with_peak;
  print_plan(o, 4, with_peak);
  EXPECT_EQ(lines(with_peak.str())[7], "MFU peak: 989.4 TFLOP/s per GPU (runtime.peak_tflops)");
}

TEST(PrintPlan, DynamicCostDescServesTheBiggestFirst) {
  TempDir dir("plan-dyn");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 5), dir.path() / "out", results);
  std::ostringstream out;
  print_plan(o, 2, out);
  const auto l = lines(out.str());
  ASSERT_EQ(l.size(), 24U) << out.str();
  EXPECT_EQ(l[11], "first requests in service order (replica chosen at run time):");
  // r003 (33 frames) first, then r002 (17), r001 (9), then r000 and r004 (5 frames, ties in order).
  EXPECT_EQ(l[13].substr(0, 12), "  0    r003 ");
  EXPECT_EQ(l[14].substr(0, 12), "  1    r002 ");
  EXPECT_EQ(l[15].substr(0, 12), "  2    r001 ");
  EXPECT_EQ(l[16].substr(0, 12), "  3    r000 ");
  EXPECT_EQ(l[17].substr(0, 12), "  4    r004 ");
  // Then every request to run in manifest order, with where its values came from.
  EXPECT_EQ(l[18],
            "requests in manifest order: size, guidance_scale, flow_shift (where each came from):");
  EXPECT_EQ(l[19],
            "  line 1 r000: t2v 32 x 48 (manifest line 1), guidance_scale 5 (model default), "
            "flow_shift 5 "
            "(model default)");
  EXPECT_EQ(l[23],
            "  line 5 r004: t2v 32 x 48 (manifest line 5), guidance_scale 5 (model default), "
            "flow_shift 5 "
            "(model default)");
}

TEST(PrintPlan, AModelThatSizesI2vFromTheImageSaysSo) {
  // A model with HunyuanVideo-1.5's facts: it picks an i2v request's size from its image.
  if (models::model_table().find("bucketed-i2v") == nullptr) {
    models::ModelRegistration r;
    r.name = "bucketed-i2v";
    r.has_weights = false;
    r.facts.hidden_size = 8;
    r.facts.num_layers = 1;
    r.facts.image_size_target = 640;
    models::model_table().add(std::move(r));
  }
  TempDir dir("plan-hv15");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 2), dir.path() / "out", results);
  o.config.model.name = "bucketed-i2v";
  std::ostringstream out;
  print_plan(o, 1, out);
  const auto l = lines(out.str());
  // One replica line at world size 1: the scheduler line is l[7] (after the devices and the MFU
  // peak), the size note right after it.
  ASSERT_GE(l.size(), 9U) << out.str();
  EXPECT_EQ(l[7].substr(0, 10), "scheduler:");
  EXPECT_EQ(l[8],
            "i2v size: each image's aspect-ratio bucket at target_size 640 (the model's choice) "
            "unless its "
            "line sets height/width; the sizes below are resolved");
}

TEST(PrintPlan, BadWorldSizeIsAConfigError) {
  TempDir dir("plan-bad");
  auto results = std::make_shared<MemoryResults>();
  JobOptions o = synthetic_job(write_manifest(dir.path(), 2), dir.path() / "out", results);
  o.config.parallel.cfg_parallel_size = 2;
  std::ostringstream out;
  EXPECT_THROW(print_plan(o, 3, out), ConfigError);
}

}  // namespace
}  // namespace omnidp::runtime
