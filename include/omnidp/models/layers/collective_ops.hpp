#pragma once
// The replica group's collectives (runtime/collective.hpp) on tensors. A backend that takes
// host memory only (MPI, in-process) gets CUDA tensors copied to the host and the result
// copied back to the tensor's device; f16/bf16 sums run in f32 there. Every rank of the group
// calls the same operation with tensors of the same shape and dtype.

#include <torch/torch.h>

#include <initializer_list>

#include "omnidp/collective/collective.hpp"

namespace omnidp::models {

// [size, ...x.shape]: every rank's x in rank order, on x's device, in x's dtype.
[[nodiscard]] torch::Tensor all_gather(Collective& group, const torch::Tensor& x);
// x's dim 0 in size() equal blocks: block j goes to rank j; the result's block j came from j.
[[nodiscard]] torch::Tensor all_to_all(Collective& group, const torch::Tensor& x);
// The element-wise sum over the group.
[[nodiscard]] torch::Tensor all_reduce_sum(Collective& group, const torch::Tensor& x);
// The root's x on every rank (x gives the shape and dtype on the others).
[[nodiscard]] torch::Tensor broadcast(Collective& group, const torch::Tensor& x, int root);
// True on every rank when `flag` is true on any (a decision the whole group takes alike);
// `device`: where a device-memory backend (NCCL) sums it.
[[nodiscard]] bool any_rank(Collective& group, bool flag, const torch::Device& device);
// The group's check before denoising step `step` of `steps`: true when any rank stops
// (abandons) there. Throws ModelError when the ranks are not at the same step (a rank failed
// inside an earlier request while its peer waited), so both leave that request together.
[[nodiscard]] bool group_step(Collective& group, bool stop, int step, int steps,
                              const torch::Device& device);
// group_step over each non-null axis of a replica group in turn (GenerateContext's cfg,
// sequence, tensor): the ORs over the axes one after the other reach every rank of the group,
// so all stop together. `stop` alone when every axis is null.
[[nodiscard]] bool group_step(std::initializer_list<Collective*> axes, bool stop, int step,
                              int steps, const torch::Device& device);

}  // namespace omnidp::models
