// Which backend a replica group's collectives get (the interface and the in-process backend:
// tests/collective/collective_test.cpp).
#include "omnidp/runtime/collective.hpp"

#include <gtest/gtest.h>

#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace {

TEST(Collective, BackendChoice) {
  using B = CollectiveBackend;
  const std::string g = "replica group 0 (world ranks 0,1)";
  EXPECT_EQ(choose_collective_backend(B::automatic, true, true, true, g), B::nccl);
  EXPECT_EQ(choose_collective_backend(B::automatic, true, false, true, g), B::mpi);  // one GPU
  EXPECT_EQ(choose_collective_backend(B::automatic, false, true, true, g), B::mpi);  // CPU
  EXPECT_EQ(choose_collective_backend(B::automatic, true, true, false, g), B::mpi);  // no NCCL
  EXPECT_EQ(choose_collective_backend(B::mpi, true, true, true, g), B::mpi);
  try {
    (void)choose_collective_backend(B::nccl, true, false, true, g);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(
        e.what(),
        "parallel.collective_backend: nccl cannot serve replica group 0 (world ranks 0,1): "
        "two of its ranks share a GPU (NCCL refuses that; use mpi)");
  }
  EXPECT_THROW((void)choose_collective_backend(B::nccl, false, true, true, g), ConfigError);
}

TEST(Collective, GroupNames) {
  EXPECT_EQ(replica_group_name(3, {5, 6, 7, 8}), "replica group 3 (world ranks 5,6,7,8)");
  EXPECT_EQ(axis_group_name(replica_group_name(1, {2, 3}), "sequence", {2, 3}),
            "replica group 1 (world ranks 2,3), sequence axis (world ranks 2,3)");
}

}  // namespace
}  // namespace omnidp::runtime
