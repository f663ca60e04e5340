// The in-process backend of the replica-group collectives (threads of one process): exact
// results of every collective, and the errors' context (collective, group, rank).
#include "omnidp/collective/collective.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

// Runs body(rank, collective) on one thread per rank of an in-process group of `size`.
void on_group(int size, const std::function<void(int, Collective&)>& body) {
  auto group = make_in_process_collectives(size, "replica group 3 (world ranks 5,6,7,8)");
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] { body(r, *group[static_cast<std::size_t>(r)]); });
  }
  for (auto& t : threads) t.join();
}

TEST(InProcessCollective, AllGatherOrdersByRank) {
  std::vector<std::vector<std::int64_t>> got(3);
  on_group(3, [&](int r, Collective& c) {
    EXPECT_EQ(c.rank(), r);
    EXPECT_EQ(c.size(), 3);
    const std::vector<std::int64_t> mine{10 * r, 10 * r + 1};
    got[static_cast<std::size_t>(r)].resize(6);
    for (int round = 0; round < 3; ++round) {  // reused barrier: several rounds in a row
      c.all_gather(mine.data(), got[static_cast<std::size_t>(r)].data(), 2, ElementType::i64);
    }
  });
  for (const auto& g : got) EXPECT_EQ(g, (std::vector<std::int64_t>{0, 1, 10, 11, 20, 21}));
}

TEST(InProcessCollective, AllToAllTransposesBlocks) {
  std::vector<std::vector<std::int32_t>> got(3, std::vector<std::int32_t>(3));
  on_group(3, [&](int r, Collective& c) {
    const std::vector<std::int32_t> send{10 * r + 0, 10 * r + 1, 10 * r + 2};  // block j -> rank j
    c.all_to_all(send.data(), got[static_cast<std::size_t>(r)].data(), 1, ElementType::i32);
  });
  EXPECT_EQ(got[0], (std::vector<std::int32_t>{0, 10, 20}));
  EXPECT_EQ(got[1], (std::vector<std::int32_t>{1, 11, 21}));
  EXPECT_EQ(got[2], (std::vector<std::int32_t>{2, 12, 22}));
}

TEST(InProcessCollective, AllReduceSumsAndBroadcastCopiesTheRoot) {
  std::vector<std::vector<float>> sums(4);
  std::vector<std::vector<double>> bcast(4);
  on_group(4, [&](int r, Collective& c) {
    auto& s = sums[static_cast<std::size_t>(r)];
    s = {static_cast<float>(r), 0.5F * static_cast<float>(r + 1)};
    c.all_reduce_sum(s.data(), s.size(), ElementType::f32);
    auto& b = bcast[static_cast<std::size_t>(r)];
    b = {static_cast<double>(r), -1.0};
    c.broadcast(b.data(), b.size(), ElementType::f64, 2);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(sums[static_cast<std::size_t>(r)], (std::vector<float>{6.0F, 5.0F}));
    EXPECT_EQ(bcast[static_cast<std::size_t>(r)], (std::vector<double>{2.0, -1.0}));
  }
}

TEST(InProcessCollective, ErrorsNameTheCollectiveTheGroupAndTheRank) {
  auto group = make_in_process_collectives(2, "replica group 1 (world ranks 3,4)");
  double x = 0.0;
  try {
    group[1]->broadcast(&x, 1, ElementType::f64, 2);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(
        e.message(),
        "broadcast on replica group 1 (world ranks 3,4), group rank 1 of 2 (in-process): root 2 "
        "is not a rank of the group");
  }
  std::uint16_t h = 0;
  try {
    group[0]->all_reduce_sum(&h, 1, ElementType::bf16);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(
        e.message(),
        "all_reduce_sum on replica group 1 (world ranks 3,4), group rank 0 of 2 (in-process): "
        "the in-process backend does not sum bf16 elements (sum them as f32)");
  }
}

TEST(Collective, ElementSizes) {
  EXPECT_EQ(element_size(ElementType::u8), 1U);
  EXPECT_EQ(element_size(ElementType::bf16), 2U);
  EXPECT_EQ(element_size(ElementType::f32), 4U);
  EXPECT_EQ(element_size(ElementType::i64), 8U);
  EXPECT_STREQ(to_string(ElementType::f16), "f16");
}

}  // namespace
}  // namespace omnidp
