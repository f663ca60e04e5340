#include "omnidp/models/layers/host_weights.hpp"

#include <algorithm>
#include <map>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

constexpr std::int64_t kAlign = 256;

// Every distinct tensor implementation under root: parameters, buffers, the fused layers' storage.
std::vector<torch::Tensor> weight_tensors(torch::nn::Module& root) {
  std::vector<torch::Tensor> all;
  for (const auto& p : root.parameters(true)) all.push_back(p);
  for (const auto& b : root.buffers(true)) all.push_back(b);
  for (const auto& module : root.modules(/*include_self=*/true)) {
    if (auto* owner = dynamic_cast<FusedLinearOwner*>(module.get())) {
      for (const auto* fused : owner->fused_linears()) {
        for (const auto& t : fused->fused_tensors()) {
          if (t.defined()) all.push_back(t);
        }
      }
    }
  }
  std::vector<torch::Tensor> unique;
  std::vector<const c10::TensorImpl*> seen;
  for (auto& t : all) {
    const auto* impl = t.unsafeGetTensorImpl();
    if (std::find(seen.begin(), seen.end(), impl) != seen.end()) continue;
    seen.push_back(impl);
    unique.push_back(std::move(t));
  }
  return unique;
}

// The byte range [first, last) of its storage that a tensor reads.
std::pair<std::int64_t, std::int64_t> used_bytes(const torch::Tensor& t) {
  const std::int64_t item = static_cast<std::int64_t>(t.element_size());
  std::int64_t last = t.storage_offset();
  for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return {t.storage_offset() * item, (last + 1) * item};
}

// The storage's bytes [first, last) as a uint8 tensor on its device.
torch::Tensor storage_bytes(const torch::Tensor& t, std::int64_t first, std::int64_t last) {
  auto bytes = torch::empty({0}, torch::TensorOptions().dtype(torch::kUInt8).device(t.device()));
  bytes.set_(t.storage());
  return bytes.slice(0, first, last);
}

}  // namespace

HostWeightCopy::HostWeightCopy(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  // Storages in first-seen order, each with the byte range its tensors use.
  struct Range {
    torch::Tensor any;  // a tensor of the storage
    std::int64_t first, last, offset = 0;
  };
  std::vector<Range> ranges;
  std::map<const void*, std::size_t> index;
  std::vector<std::pair<torch::Tensor, std::size_t>> members;
  for (auto& t : weight_tensors(root)) {
    if (t.numel() == 0) continue;  // nothing to move
    const auto [first, last] = used_bytes(t);
    const void* key = t.storage().unsafeGetStorageImpl();
    auto [it, added] = index.emplace(key, ranges.size());
    if (added) {
      ranges.push_back({t, first, last});
    } else {
      auto& r = ranges[it->second];
      r.first = std::min(r.first, first);
      r.last = std::max(r.last, last);
    }
    members.emplace_back(std::move(t), it->second);
  }
  std::int64_t total = 0;
  for (auto& r : ranges) {
    r.offset = total;
    total += (r.last - r.first + kAlign - 1) / kAlign * kAlign;
  }
  host_ = torch::empty(
      {total},
      torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(torch::cuda::is_available()));
  for (const auto& r : ranges) {
    host_.slice(0, r.offset, r.offset + (r.last - r.first)).copy_(storage_bytes(r.any, r.first, r.last));
  }
  for (auto& [t, i] : members) {
    const auto& r = ranges[i];
    const auto item = static_cast<std::int64_t>(t.element_size());
    const std::int64_t offset = r.offset + t.storage_offset() * item - r.first;
    if (offset % item != 0) {  // one storage viewed as dtypes of other sizes, unaligned
      throw ModelError("HostWeightCopy: a tensor of " + std::to_string(item) +
                       "-byte elements starts at byte " + std::to_string(offset));
    }
    slots_.push_back({std::move(t), offset});
  }
}

void HostWeightCopy::point_into(const torch::Tensor& buffer) {
  torch::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    auto& t = slot.tensor;
    const std::int64_t item = static_cast<std::int64_t>(t.element_size());
    // The buffer's whole length as t's dtype (its length is a multiple of 256 bytes), then t's
    // sizes and strides at its offset.
    t.set_data(
        buffer.view(t.scalar_type()).as_strided(t.sizes(), t.strides(), slot.byte_offset / item));
  }
}

void HostWeightCopy::to_host() { point_into(host_); }

void HostWeightCopy::to_device(const torch::Tensor& buffer) {
  if (buffer.scalar_type() != torch::kUInt8 || buffer.dim() != 1 || !buffer.is_contiguous() ||
      buffer.numel() < bytes()) {
    throw ModelError("HostWeightCopy: the device buffer must be contiguous uint8 of at least " +
                     std::to_string(bytes()) + " bytes");
  }
  torch::NoGradGuard no_grad;
  const auto front = buffer.narrow(0, 0, bytes());
  front.copy_(host_, /*non_blocking=*/true);
  point_into(front);
}

void HostWeightCopy::to_device(torch::Device device) {
  to_device(torch::empty({bytes()}, torch::TensorOptions().dtype(torch::kUInt8).device(device)));
}

}  // namespace omnidp::models
