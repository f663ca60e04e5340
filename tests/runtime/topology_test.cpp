#include "omnidp/runtime/topology.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace {

ParallelConfig parallel(int tp, int cfg, bool coordinator_works = true, int dp = 0) {
  ParallelConfig p;
  p.tensor_parallel_size = tp;
  p.cfg_parallel_size = cfg;
  p.coordinator_runs_work = coordinator_works;
  p.data_parallel_size = dp;
  return p;
}

TEST(Topology, OneRankPerReplica) {
  const Topology t = make_topology(parallel(1, 1), 4);
  EXPECT_EQ(t.replicas, 4);
  EXPECT_EQ(t.group_size, 1);
  EXPECT_EQ(t.replica_of_rank, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.leader_of_replica, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(t.is_leader(3));
}

TEST(Topology, GroupsOfTensorTimesCfgRanks) {
  const Topology t = make_topology(parallel(2, 2), 8);
  EXPECT_EQ(t.replicas, 2);
  EXPECT_EQ(t.group_size, 4);
  EXPECT_EQ(t.replica_of_rank, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(t.leader_of_replica, (std::vector<int>{0, 4}));
  EXPECT_EQ(t.group_ranks(1), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_TRUE(t.is_leader(4));
  EXPECT_FALSE(t.is_leader(5));
}

TEST(Topology, GroupIsTheProductOfTheAxesAndEveryRankHasARole) {
  ParallelConfig p = parallel(2, 2, false);
  p.sequence_parallel_size = 2;
  const Topology t = make_topology(p, 17);
  EXPECT_EQ(t.group_size, 8);
  EXPECT_EQ(t.replicas, 2);
  EXPECT_EQ(t.group_ranks(1), (std::vector<int>{9, 10, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(t.role(0), "coordinator only");
  EXPECT_EQ(t.role(9), "cfg branch cond, sequence shard 0, tensor shard 0, leader");
  EXPECT_EQ(t.role(10), "cfg branch cond, sequence shard 0, tensor shard 1");
  EXPECT_EQ(t.role(11), "cfg branch cond, sequence shard 1, tensor shard 0");
  EXPECT_EQ(t.role(14), "cfg branch uncond, sequence shard 0, tensor shard 1");
  EXPECT_EQ(t.group_rank(14), 5);
  const Topology cfg = make_topology(parallel(1, 2), 4);
  EXPECT_EQ(cfg.role(2), "cfg branch cond, leader");
  EXPECT_EQ(cfg.role(3), "cfg branch uncond");
  EXPECT_EQ(make_topology(parallel(1, 1), 2).role(1), "leader");
}

TEST(Topology, EachAxisSubGroupHoldsTheRanksThatDifferOnlyThere) {
  ParallelConfig p = parallel(2, 2, false);
  p.sequence_parallel_size = 2;
  const Topology t = make_topology(p, 17);  // replica 1: ranks 9..16, g = rank - 9
  EXPECT_EQ(t.axis_size(GroupAxis::cfg), 2);
  EXPECT_EQ(t.axis_size(GroupAxis::sequence), 2);
  EXPECT_EQ(t.axis_size(GroupAxis::tensor), 2);
  // g 5 = cfg 1, sequence 0, tensor 1.
  EXPECT_EQ(t.axis_index(5, GroupAxis::cfg), 1);
  EXPECT_EQ(t.axis_index(5, GroupAxis::sequence), 0);
  EXPECT_EQ(t.axis_index(5, GroupAxis::tensor), 1);
  EXPECT_EQ(t.axis_ranks(14, GroupAxis::cfg), (std::vector<int>{10, 14}));
  EXPECT_EQ(t.axis_ranks(14, GroupAxis::sequence), (std::vector<int>{14, 16}));
  EXPECT_EQ(t.axis_ranks(14, GroupAxis::tensor), (std::vector<int>{13, 14}));
  // Every axis's colors cover 0..G/size-1, each exactly `size` times.
  for (const GroupAxis axis : {GroupAxis::cfg, GroupAxis::sequence, GroupAxis::tensor}) {
    std::vector<int> count(4, 0);
    for (int g = 0; g < 8; ++g) ++count.at(static_cast<std::size_t>(t.axis_color(g, axis)));
    EXPECT_EQ(count, (std::vector<int>{2, 2, 2, 2})) << to_string(axis);
  }
  ParallelConfig sp;
  sp.sequence_parallel_size = 4;
  const Topology s = make_topology(sp, 8);
  EXPECT_EQ(s.axis_ranks(6, GroupAxis::sequence), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(s.axis_ranks(6, GroupAxis::cfg), (std::vector<int>{6}));
  EXPECT_EQ(s.role(4), "sequence shard 0, leader");
  EXPECT_EQ(s.role(7), "sequence shard 3");
}

TEST(Topology, CoordinatorThatDoesNotWork) {
  const Topology t = make_topology(parallel(2, 1, false), 5);
  EXPECT_EQ(t.replicas, 2);
  EXPECT_EQ(t.replica_of_rank, (std::vector<int>{-1, 0, 0, 1, 1}));
  EXPECT_EQ(t.leader_of_replica, (std::vector<int>{1, 3}));
  EXPECT_FALSE(t.works(0));
  EXPECT_FALSE(t.is_leader(0));
}

TEST(Topology, ErrorsAreConfigErrors) {
  try {
    (void)make_topology(parallel(2, 2), 6);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "parallel: 6 working rank(s) (world size 6) cannot be split into replica groups "
                 "of tensor_parallel_size x sequence_parallel_size x cfg_parallel_size = 2 x 1 x "
                 "2 = 4 ranks");
  }
  try {
    (void)make_topology(parallel(1, 1, false), 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "parallel.coordinator_runs_work: false needs at least 2 ranks (the "
                 "world has 1): rank 0 only coordinates");
  }
  try {
    (void)make_topology(parallel(2, 1, true, 3), 4);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "parallel.data_parallel_size: 3 replicas requested, but 4 ranks in "
                 "groups of 2 give 2 (use auto, or launch 6 ranks)");
  }
  EXPECT_EQ(make_topology(parallel(2, 1, true, 2), 4).replicas, 2);
}

// The GPU's name joins a worker's "cuda:N" label only (docs/performance.md, "MFU"): CPU labels
// and labels that already carry a name stay as they are; no such device gives no name.
TEST(DeviceBinding, LabelWithTheGpuModel) {
  EXPECT_EQ(device_label_with_model(DeviceBinding{DeviceKind::cpu, 0, "cpu"}, "cpu"), "cpu");
  EXPECT_EQ(
      device_label_with_model(DeviceBinding{DeviceKind::cuda, 0, "cuda:0"}, "cuda:0 (NVIDIA H200)"),
      "cuda:0 (NVIDIA H200)");
  EXPECT_EQ(
      device_label_with_model(DeviceBinding{DeviceKind::cuda, 4096, "cuda:4096"}, "cuda:4096"),
      "cuda:4096");
  EXPECT_EQ(cuda_device_model(4096), "");
  EXPECT_EQ(cuda_device_model(-1), "");
}

TEST(DeviceBinding, CpuAutoAndList) {
  ModelConfig model;
  ParallelConfig p;
  model.device = DeviceKind::cpu;
  EXPECT_EQ(bind_device(model, p, 3).name, "cpu");
  model.device = DeviceKind::cuda;
  const DeviceBinding d = bind_device(model, p, 3);
  EXPECT_EQ(d.kind, DeviceKind::cuda);
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.name, "cuda:3");
  p.devices = {"cuda:4", "7", "cpu"};
  EXPECT_EQ(bind_device(model, p, 0).index, 4);
  EXPECT_EQ(bind_device(model, p, 1).index, 7);
  EXPECT_EQ(bind_device(model, p, 2).kind, DeviceKind::cpu);
  try {
    (void)bind_device(model, p, 3);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "parallel.devices: no entry for local rank 3 (3 listed; list one "
                 "device per rank of a node)");
  }
  p.devices = {"gpu0"};
  EXPECT_THROW((void)bind_device(model, p, 0), ConfigError);
}

}  // namespace
}  // namespace omnidp::runtime
