// The tensor layer over the replica-group collectives, on the in-process backend (threads):
// shapes, dtypes and exact values.
#include "omnidp/models/layers/collective_ops.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

void on_group(int size, const std::function<void(int, Collective&)>& body) {
  auto group = make_in_process_collectives(size, "replica group 0 (world ranks 0,1)");
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] { body(r, *group[static_cast<std::size_t>(r)]); });
  for (auto& t : threads) t.join();
}

TEST(CollectiveOps, GatherAllToAllSumBroadcastAndAny) {
  std::vector<torch::Tensor> gathered(2), a2a(2), sums(2), bcast(2);
  std::vector<bool> any(2), none(2);
  on_group(2, [&](int r, Collective& c) {
    const auto i = static_cast<std::size_t>(r);
    const auto x = torch::arange(6, torch::kFloat).reshape({2, 3}) + 10.0 * r;
    gathered[i] = all_gather(c, x.t());  // a non-contiguous input
    a2a[i] = all_to_all(c, x);           // row j to rank j
    sums[i] = all_reduce_sum(c, torch::full({3}, 0.5 + r, torch::kBFloat16));
    bcast[i] = broadcast(c, torch::full({2}, static_cast<std::int64_t>(r), torch::kLong), 1);
    any[i] = any_rank(c, r == 1, torch::kCPU);
    none[i] = any_rank(c, false, torch::kCPU);
    EXPECT_EQ(group_step(c, r == 0, 3, 5, torch::kCPU), true);
    try {  // rank 1 one step ahead: both ranks throw
      (void)group_step(c, false, 4 + r, 5, torch::kCPU);
      ADD_FAILURE() << "no error";
    } catch (const ModelError& e) {
      EXPECT_EQ(e.message(),
                "replica group 0 (world ranks 0,1) is out of step "
                "(rank 0 at step 4/5, rank 1 at step 5/5): a rank of the group "
                "failed during an earlier request");
    }
  });
  const auto x0 = torch::arange(6, torch::kFloat).reshape({2, 3});
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    ASSERT_EQ(gathered[i].sizes(), (std::vector<std::int64_t>{2, 3, 2}));
    EXPECT_TRUE(torch::equal(gathered[i][0], x0.t()));
    EXPECT_TRUE(torch::equal(gathered[i][1], x0.t() + 10.0));
    EXPECT_TRUE(torch::equal(a2a[i], torch::stack({x0[r], x0[r] + 10.0})));
    EXPECT_EQ(sums[i].scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(sums[i], torch::full({3}, 2.0, torch::kBFloat16)));
    EXPECT_TRUE(torch::equal(bcast[i], torch::full({2}, 1, torch::kLong)));
    EXPECT_TRUE(any[i]);
    EXPECT_FALSE(none[i]);
  }
}

}  // namespace
}  // namespace omnidp::models
