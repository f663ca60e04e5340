#include "omnidp/models/layers/collective_ops.hpp"

#include <fmt/format.h>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

ElementType element_type(const torch::Tensor& x) {
  switch (x.scalar_type()) {
    case torch::kFloat: return ElementType::f32;
    case torch::kDouble: return ElementType::f64;
    case torch::kHalf: return ElementType::f16;
    case torch::kBFloat16: return ElementType::bf16;
    case torch::kInt: return ElementType::i32;
    case torch::kLong: return ElementType::i64;
    case torch::kByte:
    case torch::kBool: return ElementType::u8;
    default: break;
  }
  throw ModelError(std::string("collectives: unsupported tensor dtype ") +
                   std::string(c10::toString(x.scalar_type())));
}

// The tensor the backend reads: contiguous, on the host unless the backend takes device memory.
torch::Tensor staged(Collective& group, const torch::Tensor& x) {
  auto t = x.is_cuda() && !group.takes_device_memory() ? x.to(torch::kCPU) : x;
  return t.contiguous();
}

std::size_t count(const torch::Tensor& x) { return static_cast<std::size_t>(x.numel()); }

}  // namespace

torch::Tensor all_gather(Collective& group, const torch::Tensor& x) {
  const auto in = staged(group, x);
  std::vector<std::int64_t> shape{group.size()};
  for (const auto d : in.sizes()) shape.push_back(d);
  auto out = torch::empty(shape, in.options());
  group.all_gather(in.data_ptr(), out.data_ptr(), count(in), element_type(in));
  return out.to(x.device());
}

torch::Tensor all_to_all(Collective& group, const torch::Tensor& x) {
  if (x.dim() < 1 || x.size(0) % group.size() != 0) {
    throw ModelError(
        fmt::format("all_to_all: dim 0 of a [{}, ...] tensor does not split into {} blocks",
                    x.dim() > 0 ? x.size(0) : 0, group.size()));
  }
  const auto in = staged(group, x);
  auto out = torch::empty_like(in);
  group.all_to_all(in.data_ptr(), out.data_ptr(),
                   count(in) / static_cast<std::size_t>(group.size()), element_type(in));
  return out.to(x.device());
}

torch::Tensor all_reduce_sum(Collective& group, const torch::Tensor& x) {
  const bool half = x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16;
  auto t = staged(group, x);
  if (half && !group.takes_device_memory()) t = t.to(torch::kFloat);
  t = t.clone();  // in place on a copy: x is left as it was
  group.all_reduce_sum(t.data_ptr(), count(t), element_type(t));
  return t.to(x.device(), x.scalar_type());
}

torch::Tensor broadcast(Collective& group, const torch::Tensor& x, int root) {
  auto t = staged(group, x).clone();
  group.broadcast(t.data_ptr(), count(t), element_type(t), root);
  return t.to(x.device());
}

bool any_rank(Collective& group, bool flag, const torch::Device& device) {
  std::int32_t v = flag ? 1 : 0;
  if (group.takes_device_memory()) {  // NCCL: through a device scalar
    auto t = torch::full({1}, v, torch::TensorOptions().dtype(torch::kInt).device(device));
    return all_reduce_sum(group, t).item<std::int32_t>() > 0;
  }
  group.all_reduce_sum(&v, 1, ElementType::i32);
  return v > 0;
}

bool group_step(Collective& group, bool stop, int step, int steps, const torch::Device& device) {
  const auto mine = torch::tensor({static_cast<std::int64_t>(step), static_cast<std::int64_t>(steps),
                                   static_cast<std::int64_t>(stop ? 1 : 0)},
                                  torch::TensorOptions().dtype(torch::kLong))
                        .to(group.takes_device_memory() ? device : torch::Device(torch::kCPU));
  const auto all = all_gather(group, mine).to(torch::kCPU);
  const auto* v = all.data_ptr<std::int64_t>();
  bool any = false;
  std::string where;
  bool same = true;
  for (int r = 0; r < group.size(); ++r) {
    const auto* x = v + 3 * r;
    if (x[0] != step || x[1] != steps) same = false;
    where += fmt::format("{}rank {} at step {}/{}", (r > 0 ? ", " : ""), r, x[0], x[1]);
    any = any || x[2] != 0;
  }
  if (!same) {
    throw ModelError(group.group_name() + " is out of step (" + where +
                     "): a rank of the group failed during an earlier request");
  }
  return any;
}

bool group_step(std::initializer_list<Collective*> axes, bool stop, int step, int steps,
                const torch::Device& device) {
  for (auto* axis : axes) {
    if (axis != nullptr) stop = group_step(*axis, stop, step, steps, device);
  }
  return stop;
}

}  // namespace omnidp::models
