// A module's host weight copy (layers/host_weights.hpp), on the CPU: which bytes it copies, that
// leaving the "device" points every tensor into the one host buffer (the same addresses each
// time: no copy), that coming back makes one buffer, and that fused views and the forward
// survive round trips. Page-locking and the host-to-device copy run on the GPU machine
// (Wan2.2-A14B with model.expert_residency: swap, docs/performance.md).
#include "omnidp/models/layers/host_weights.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

// A fused q/k/v (views into one storage), an output projection, a buffer, and a parameter
// that reads a narrow slice of a larger storage (as a tensor-parallel load may leave one).
class BlockImpl : public torch::nn::Module, public FusedLinearOwner {
 public:
  explicit BlockImpl(torch::Device device = torch::kCPU)
      : qkv_(16, 8, 3, true, TensorShard{}, ParamSpec{torch::kFloat32, device}, "test") {
    register_module("to_q", qkv_.part(0));
    register_module("to_k", qkv_.part(1));
    register_module("to_v", qkv_.part(2));
    out = register_module("to_out", torch::nn::Linear(24, 16));
    out->to(device);  // a plain module: no views to keep
    const auto options = torch::TensorOptions().device(device);
    table = register_buffer("table", torch::arange(12, options.dtype(torch::kFloat64)).view({3, 4}));
    slice = register_parameter("slice", torch::randn({1000}, options).narrow(0, 10, 6), false);
    for (std::size_t i = 0; i < 3; ++i) {
      qkv_.part(i)->weight.normal_();
      qkv_.part(i)->bias.normal_();
    }
  }
  std::vector<QKVParallelLinear*> fused_linears() override { return {&qkv_}; }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto qkv = qkv_.forward(x);
    return out->forward(torch::cat(qkv, -1)) + slice.sum() + table.sum().to(torch::kFloat32);
  }
  QKVParallelLinear qkv_;
  torch::nn::Linear out{nullptr};
  torch::Tensor table, slice;
};
TORCH_MODULE(Block);

std::vector<torch::Tensor> tensors(BlockImpl& b) {
  std::vector<torch::Tensor> all = b.parameters(true);
  for (const auto& t : b.buffers(true)) all.push_back(t);
  for (const auto& t : b.qkv_.fused_tensors()) all.push_back(t);
  return all;
}

std::set<const void*> storages(BlockImpl& b) {
  std::set<const void*> out;
  for (const auto& t : tensors(b)) out.insert(t.storage().unsafeGetStorageImpl());
  return out;
}

TEST(HostWeightCopy, CopiesTheUsedBytesOfEachStorageOnce) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  Block block;
  const HostWeightCopy copy(*block);
  // Storages: fused q/k/v weight (3x8x16 floats) and bias (24), to_out weight (16x24) and bias
  // (16), table (12 doubles), the slice's 6 floats of its 1000: each rounded up to 256 bytes.
  const std::int64_t want = 1536 + 256 + 1536 + 256 + 256 + 256;
  EXPECT_EQ(copy.bytes(), want);
  EXPECT_EQ(copy.pinned(), torch::cuda::is_available());  // page-locked where CUDA is
}

TEST(HostWeightCopy, LeavesAndReturnsWithValuesViewsAndForwardUnchanged) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  Block block;
  const auto x = torch::randn({2, 3, 16});
  const auto want = block->forward(x);
  std::vector<torch::Tensor> values;
  for (const auto& t : tensors(*block)) values.push_back(t.clone());
  HostWeightCopy copy(*block);

  copy.to_host();
  const auto host = storages(*block);
  EXPECT_EQ(host.size(), 1u) << "every tensor points into the one host buffer";
  const auto host_q = block->qkv_.part(0)->weight.data_ptr();
  copy.to_device(torch::kCPU);
  const auto device = storages(*block);
  EXPECT_EQ(device.size(), 1u) << "one buffer on the device side too";
  EXPECT_NE(*device.begin(), *host.begin());
  copy.to_host();
  EXPECT_EQ(storages(*block), host) << "leaving again copies nothing";
  EXPECT_EQ(block->qkv_.part(0)->weight.data_ptr(), host_q);
  copy.to_device(torch::kCPU);

  const auto now = tensors(*block);
  ASSERT_EQ(now.size(), values.size());
  for (std::size_t i = 0; i < now.size(); ++i) {
    EXPECT_TRUE(torch::equal(now[i], values[i])) << i;
    EXPECT_EQ(now[i].scalar_type(), values[i].scalar_type()) << i;
  }
  EXPECT_TRUE(block->qkv_.part(2)->weight.is_alias_of(block->qkv_.fused_tensors()[0]));
  EXPECT_TRUE(torch::equal(block->forward(x), want));  // QKV's views stayed bound
}

// Two modules that take turns in one buffer (model.expert_residency: swap): each comes back
// with its own values, and the one that left keeps its values in its host copy.
TEST(HostWeightCopy, TwoModulesTakeTurnsInOneBuffer) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(7);
  Block a, b;
  const auto x = torch::randn({1, 2, 16});
  const auto want_a = a->forward(x), want_b = b->forward(x);
  HostWeightCopy copy_a(*a), copy_b(*b);
  copy_a.to_host();
  copy_b.to_host();
  const auto buffer = torch::empty({std::max(copy_a.bytes(), copy_b.bytes())}, torch::kUInt8);
  for (int round = 0; round < 2; ++round) {
    copy_a.to_device(buffer);
    EXPECT_TRUE(torch::equal(a->forward(x), want_a)) << round;
    EXPECT_EQ(a->qkv_.part(0)->weight.storage().data_ptr().get(), buffer.data_ptr()) << round;
    copy_a.to_host();
    copy_b.to_device(buffer);
    EXPECT_TRUE(torch::equal(b->forward(x), want_b)) << round;
    EXPECT_TRUE(torch::equal(a->forward(x), want_a)) << round;  // from its host copy
    copy_b.to_host();
  }
  EXPECT_THROW(copy_a.to_device(buffer.narrow(0, 0, 16)), ModelError);  // too short
}

// On a GPU (gpu label's machine; skipped here): the host copy is page-locked, leaving puts every
// tensor there, coming back puts every tensor on the device with the forward unchanged.
TEST(HostWeightCopy, OnTheGpuTheHostCopyIsPageLocked) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const torch::Device cuda(torch::kCUDA, 0);
  Block block(cuda);
  const auto x = torch::randn({2, 3, 16}, torch::TensorOptions().device(cuda));
  const auto want = block->forward(x).cpu();
  HostWeightCopy copy(*block);
  EXPECT_TRUE(copy.pinned());
  copy.to_host();
  for (const auto& t : tensors(*block)) {
    EXPECT_TRUE(t.is_cpu());
    EXPECT_TRUE(t.is_pinned());
  }
  copy.to_device(cuda);
  for (const auto& t : tensors(*block)) EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(storages(*block).size(), 1u);
  EXPECT_TRUE(torch::equal(block->forward(x).cpu(), want));
}

TEST(HostWeightCopy, AModuleWithoutTensorsHasAnEmptyCopy) {
  torch::nn::Sequential empty;
  HostWeightCopy copy(*empty);
  EXPECT_EQ(copy.bytes(), 0);
  copy.to_host();
  copy.to_device(torch::kCPU);
}

}  // namespace
}  // namespace omnidp::models
