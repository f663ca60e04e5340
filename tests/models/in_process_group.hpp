#pragma once
// Helpers of the tensor- and sequence-parallel model tests: a group of ranks on threads with
// in-process collectives, and how far a sharded result is from the whole one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/common/video.hpp"

namespace omnidp::models::testing {

// body(rank, collective) on `size` threads, one in-process collective (of group `name`) each,
// without autograd, as the worker runs a model (grad mode is per thread); returns when every
// thread has.
inline void on_group(int size, const std::function<void(int, Collective&)>& body,
                     const std::string& name = "tensor group") {
  auto group = make_in_process_collectives(size, name);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      const torch::NoGradGuard no_grad;
      body(r, *group[static_cast<std::size_t>(r)]);
    });
  for (auto& t : threads) t.join();
}

// on_group with each rank's exception caught: the what() of each rank's ("" where none).
inline std::vector<std::string> on_group_errors(int size,
                                                const std::function<void(int, Collective&)>& body,
                                                const std::string& name = "tensor group") {
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  on_group(
      size,
      [&](int r, Collective& c) {
        try {
          body(r, c);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      },
      name);
  return errors;
}

// The largest absolute difference of two tensors.
inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// The videos of a tensor group of 2 against the single-rank `want`: the leader's (got[0])
// within one uint8 level of it (the largest difference printed), the member's empty.
inline void expect_leader_has_the_single_rank_video(const Video& want, const std::vector<Video>& got) {
  ASSERT_EQ(got.size(), 2U);
  ASSERT_EQ(got[0].data.size(), want.data.size());
  int worst = 0;
  for (std::size_t i = 0; i < want.data.size(); ++i)
    worst = std::max(worst, std::abs(got[0].data[i] - want.data[i]));
  EXPECT_LE(worst, 1);
  std::cout << "largest uint8 difference to the single-rank video: " << worst << "\n";
  EXPECT_TRUE(got[1].data.empty());  // a member: the leader has the video
}

}  // namespace omnidp::models::testing
