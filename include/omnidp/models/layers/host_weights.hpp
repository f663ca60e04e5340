#pragma once
// A module's weights with one copy in page-locked host memory, made once, so that the module
// leaves the device without a copy (its tensors then point into the host copy) and comes back
// with a single host-to-device copy into one device buffer. What model.expert_residency: swap
// moves at a two-expert Wan boundary. Tensors that view one storage (QKVParallelLinear's parts
// and its fused weight) stay views of one storage on either side.
// Contract: the weights are not written after the copy is made (inference weights, final dtype,
// no later quantization); the module's tensors are not replaced behind the copy's back. Holds
// handles to the module's parameters, buffers and fused-layer tensors, not the module. Not
// thread-safe; call from the thread that runs the module.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace omnidp::models {

class HostWeightCopy {
 public:
  // Copies every parameter, buffer and fused-layer tensor under `root` (the bytes their
  // storages' used ranges hold, one range per storage) into one host buffer, page-locked where
  // CUDA is available. The module's tensors stay where they are until to_host().
  explicit HostWeightCopy(torch::nn::Module& root);

  // Points every tensor into the host copy: the device memory they held is released to the
  // allocator (no copy).
  void to_host();
  // One copy of the whole host buffer into the front of `buffer` (uint8, contiguous, at least
  // bytes() long, on the target device; the caller owns it: experts that take turns share one,
  // so a move allocates nothing), every tensor pointing into it. Asynchronous from page-locked
  // memory on the current stream, so ordered after the work queued on it (which may still read
  // the tensors that left the buffer) and before later work.
  void to_device(const torch::Tensor& buffer);
  // to_device into a new buffer of bytes() on `device`.
  void to_device(torch::Device device);

  // The host buffer's bytes (the tensors' used ranges, each aligned to 256 bytes).
  [[nodiscard]] std::int64_t bytes() const noexcept { return host_.numel(); }
  [[nodiscard]] bool pinned() const { return host_.is_pinned(); }

 private:
  struct Slot {
    torch::Tensor tensor;      // a handle sharing the module tensor's implementation
    std::int64_t byte_offset;  // of the tensor's storage offset, in the buffer
  };
  void point_into(const torch::Tensor& buffer);
  torch::Tensor host_;  // uint8 [bytes]
  std::vector<Slot> slots_;
};

}  // namespace omnidp::models
