// The MPI backend of the replica-group collectives, under `mpirun -np 2` and `-np 4` (ctest
// runtime_collective_mpi_2, _4): groups of 2 consecutive world ranks (as replica groups are
// formed) and the whole world; exact results of every collective, called from a thread that
// is not the one that initialised MPI (MPI_THREAD_MULTIPLE, as the worker threads call them);
// errors name the collective, the group and the rank. Every rank runs every test; a failure on
// any rank fails mpirun.
#include <gtest/gtest.h>

#include <thread>

#include "omnidp/common/error.hpp"
#include "omnidp/runtime/collective_mpi.hpp"

namespace omnidp::runtime {
namespace {

int world_rank() { return Communicator::world().rank(); }
int world_size() { return Communicator::world().size(); }

// This rank's group of 2 (world ranks 2k, 2k+1) as an MpiCollective.
MpiCollective pair_group() {
  const int r = world_rank();
  const int k = r / 2;
  return MpiCollective(Communicator::world().split(k, r), replica_group_name(k, {2 * k, 2 * k + 1}));
}

TEST(MpiCollective, PairGroupsFromAWorkerThread) {
  ASSERT_EQ(world_size() % 2, 0) << "run with an even number of ranks";
  MpiCollective group = pair_group();
  const int r = world_rank();
  const int k = r / 2;
  ASSERT_EQ(group.size(), 2);
  ASSERT_EQ(group.rank(), r % 2);
  std::vector<float> gathered(6);
  std::vector<std::int64_t> a2a(2);
  std::vector<double> sum{1.0 * r, 0.25};
  std::vector<std::uint8_t> bytes{static_cast<std::uint8_t>(r), 7, 9};
  std::thread worker([&] {
    const std::vector<float> mine{1.5F * static_cast<float>(r), -1.0F, static_cast<float>(k)};
    group.all_gather(mine.data(), gathered.data(), 3, ElementType::f32);
    const std::vector<std::int64_t> send{100 * r + 0, 100 * r + 1};  // block j -> group rank j
    group.all_to_all(send.data(), a2a.data(), 1, ElementType::i64);
    group.all_reduce_sum(sum.data(), sum.size(), ElementType::f64);
    group.broadcast(bytes.data(), bytes.size(), ElementType::u8, 1);
  });
  worker.join();
  const float lo = static_cast<float>(2 * k);
  EXPECT_EQ(gathered, (std::vector<float>{1.5F * lo, -1.0F, static_cast<float>(k), 1.5F * (lo + 1),
                                          -1.0F, static_cast<float>(k)}));
  const int me = r % 2;
  EXPECT_EQ(a2a, (std::vector<std::int64_t>{100 * (2 * k) + me, 100 * (2 * k + 1) + me}));
  EXPECT_EQ(sum, (std::vector<double>{4.0 * k + 1.0, 0.5}));
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{static_cast<std::uint8_t>(2 * k + 1), 7, 9}));
}

TEST(MpiCollective, WholeWorld) {
  const int n = world_size();
  const int r = world_rank();
  std::vector<int> ranks;
  for (int i = 0; i < n; ++i) ranks.push_back(i);
  MpiCollective all(Communicator::world().split(0, r), replica_group_name(0, ranks));
  std::vector<std::int32_t> gathered(static_cast<std::size_t>(n));
  const std::int32_t mine = 3 * r;
  all.all_gather(&mine, gathered.data(), 1, ElementType::i32);
  std::vector<std::int32_t> send(static_cast<std::size_t>(2 * n));
  for (int j = 0; j < n; ++j) {  // two elements per destination
    send[static_cast<std::size_t>(2 * j)] = 1000 * r + j;
    send[static_cast<std::size_t>(2 * j + 1)] = -(1000 * r + j);
  }
  std::vector<std::int32_t> recv(send.size());
  all.all_to_all(send.data(), recv.data(), 2, ElementType::i32);
  std::int64_t total = r + 1;
  all.all_reduce_sum(&total, 1, ElementType::i64);
  for (int j = 0; j < n; ++j) {
    EXPECT_EQ(gathered[static_cast<std::size_t>(j)], 3 * j);
    EXPECT_EQ(recv[static_cast<std::size_t>(2 * j)], 1000 * j + r);
    EXPECT_EQ(recv[static_cast<std::size_t>(2 * j + 1)], -(1000 * j + r));
  }
  EXPECT_EQ(total, static_cast<std::int64_t>(n) * (n + 1) / 2);
}

TEST(MpiCollective, ErrorsNameTheCollectiveTheGroupAndTheRank) {
  MpiCollective group = pair_group();
  const int r = world_rank();
  const int k = r / 2;
  const std::string where = "on replica group " + std::to_string(k) + " (world ranks " +
                            std::to_string(2 * k) + "," + std::to_string(2 * k + 1) +
                            "), group rank " + std::to_string(r % 2) + " of 2 (mpi)";
  double x = 0.0;
  try {
    group.broadcast(&x, 1, ElementType::f64, 5);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.message(), "broadcast " + where + ": root 5 is not a rank of the group");
  }
  std::uint16_t h = 0;
  try {
    group.all_reduce_sum(&h, 1, ElementType::f16);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.message(), "all_reduce_sum " + where +
                               ": the mpi backend does not sum f16 elements (sum them as f32)");
  }
  // More than one MPI call takes (checked before any rank enters MPI).
  try {
    group.all_gather(nullptr, nullptr, static_cast<std::size_t>(1) << 40, ElementType::u8);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.message(), "all_gather " + where +
                               ": 1099511627776 bytes per rank is more than "
                               "one MPI call takes");
  }
}

}  // namespace
}  // namespace omnidp::runtime

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  omnidp::runtime::MpiEnvironment env(MPI_THREAD_MULTIPLE);
  return RUN_ALL_TESTS();
}
