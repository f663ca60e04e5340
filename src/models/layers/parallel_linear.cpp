#include "omnidp/models/layers/parallel_linear.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"

namespace omnidp::models {
namespace {

TensorSlice slice_of(const TensorShard& shard, std::int64_t dim) {
  return TensorSlice{dim, shard.rank, shard.size};
}

torch::Tensor zero_parameter(torch::nn::Module& module, const std::string& name,
                             at::IntArrayRef sizes, const ParamSpec& spec) {
  return module.register_parameter(name, torch::zeros(sizes, spec.options()), false);
}

}  // namespace

LinearMethod LinearMethod::fp8_rowwise(const torch::Tensor& weight, Fp8Accumulation accumulation) {
  LinearMethod m;
  m.fp8_ = quantize_fp8_weight(weight, accumulation);
  return m;
}

torch::Tensor LinearMethod::apply(const torch::Tensor& x, const torch::Tensor& weight,
                                  const torch::Tensor& bias) const {
  auto y = fp8_.defined() ? fp8_linear(x, fp8_, bias) : linear_bias(x, weight, bias);
  if (low_rank_.empty()) return y;
  if (!y.is_contiguous()) y = y.contiguous();
  const auto h = x.reshape({-1, x.size(-1)}).mm(downs_.t());  // [tokens, sum r]
  auto flat = y.view({-1, y.size(-1)});
  std::int64_t rank = 0;
  for (const auto& u : low_rank_) {
    const auto r = u.down.size(0);
    flat.narrow(1, u.offset, u.up.size(0)).addmm_(h.narrow(1, rank, r), u.up.t());
    rank += r;
  }
  return y;
}

void LinearMethod::set_low_rank(std::vector<LowRankUpdate> updates, std::int64_t out,
                                const std::string& owner) {
  std::vector<torch::Tensor> downs;
  for (const auto& u : updates) {
    if (u.down.dim() != 2 || u.up.dim() != 2 || u.down.size(0) != u.up.size(1) || u.offset < 0 ||
        u.offset + u.up.size(0) > out) {
      throw ModelError(fmt::format(
          "{}: a low-rank update of down {}, up {} at column {} does "
          "not fit {} output features",
          owner, shape_string(u.down.sizes()), shape_string(u.up.sizes()), u.offset, out));
    }
    downs.push_back(u.down);
  }
  downs_ = downs.empty() ? torch::Tensor() : torch::cat(downs, 0);
  low_rank_ = std::move(updates);
}

torch::Tensor LinearMethod::matvec_f32(const torch::Tensor& weight, const torch::Tensor& v) const {
  const auto f32 = torch::kFloat32;
  auto y = torch::mv(weight.to(f32), v.to(f32));
  for (const auto& u : low_rank_) {
    const auto h = torch::mv(u.down.to(f32), v.to(f32));
    y.narrow(0, u.offset, u.up.size(0)).add_(torch::mv(u.up.to(f32), h));
  }
  return y;
}

void ParallelLinearBase::set_fp8(std::optional<Fp8Accumulation> accumulation) {
  auto updates = method_.low_rank();
  method_ = accumulation ? LinearMethod::fp8_rowwise(weight_tensor(), *accumulation) : LinearMethod{};
  method_.set_low_rank(std::move(updates), weight_tensor().size(0), owner_);
}

void ParallelLinearBase::set_low_rank(std::vector<LowRankUpdate> updates) {
  method_.set_low_rank(std::move(updates), weight_tensor().size(0), owner_);
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(std::int64_t in_features,
                                                   std::int64_t out_features, bool with_bias,
                                                   TensorShard shard, const ParamSpec& spec,
                                                   const std::string& owner)
    : ParallelLinearBase(shard, owner) {
  const auto out = shard_part(out_features, shard, owner, "output features");
  weight = zero_parameter(*this, "weight", {out, in_features}, spec);
  if (with_bias) bias = zero_parameter(*this, "bias", {out}, spec);
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) const {
  return method().apply(x, weight, bias);
}

std::pair<torch::Tensor, torch::Tensor> ColumnParallelLinearImpl::forward_skip_bias(
    const torch::Tensor& x) const {
  return {method().apply(x, weight, {}), bias};
}

std::vector<std::pair<std::string, TensorSlice>> ColumnParallelLinearImpl::parameter_slices() const {
  if (!shard().sharded()) return {};
  std::vector<std::pair<std::string, TensorSlice>> slices{{"weight", slice_of(shard(), 0)}};
  if (bias.defined()) slices.emplace_back("bias", slice_of(shard(), 0));
  return slices;
}

RowParallelLinearImpl::RowParallelLinearImpl(std::int64_t in_features, std::int64_t out_features,
                                             bool with_bias, TensorShard shard,
                                             const ParamSpec& spec, const std::string& owner)
    : ParallelLinearBase(shard, owner) {
  const auto in = shard_part(in_features, shard, owner, "input features");
  weight = zero_parameter(*this, "weight", {out_features, in}, spec);
  if (with_bias) bias = zero_parameter(*this, "bias", {out_features}, spec);
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) const {
  if (group_ == nullptr) return method().apply(x, weight, bias);
  const auto y = reduce_partial(group_, partial_product(x));
  return bias.defined() ? y + bias : y;
}

std::pair<torch::Tensor, torch::Tensor> RowParallelLinearImpl::forward_skip_bias(
    const torch::Tensor& x) const {
  return {reduce_partial(group_, partial_product(x)), bias};
}

torch::Tensor RowParallelLinearImpl::partial_product(const torch::Tensor& x) const {
  return method().apply(x, weight, {});
}

torch::Tensor RowParallelLinearImpl::partial_matvec_f32(const torch::Tensor& v) const {
  return method().matvec_f32(weight, v);
}

std::vector<std::pair<std::string, TensorSlice>> RowParallelLinearImpl::parameter_slices() const {
  if (!shard().sharded()) return {};
  return {{"weight", slice_of(shard(), 1)}};
}

void RowParallelLinearImpl::bind_tensor_group(Collective* group) {
  if (!shard().sharded()) return;  // a replicated layer: its products are whole
  check_tensor_group(shard(), group, owner());
  group_ = group;
}

std::pair<torch::Tensor, torch::Tensor> JointRowParallelLinear::forward(const torch::Tensor& x,
                                                                        const torch::Tensor& y) const {
  if (group_ == nullptr) return {first_->forward(x), second_->forward(y)};
  const auto n = x.size(1);
  const auto partial = torch::cat({first_->partial_product(x), second_->partial_product(y)}, 1);
  const auto summed = reduce_partial(group_, partial);
  return {summed.slice(1, 0, n) + first_->bias, summed.slice(1, n) + second_->bias};
}

QKVParallelLinear::QKVParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                     std::size_t parts, bool with_bias, TensorShard shard,
                                     const ParamSpec& spec, const std::string& owner)
    : owner_(owner) {
  const auto rows = shard_part(out_features, shard, owner, "output features");
  const auto n = static_cast<std::int64_t>(parts);
  weight_ = torch::zeros({n * rows, in_features}, spec.options());
  if (with_bias) bias_ = torch::zeros({n * rows}, spec.options());
  for (std::size_t i = 0; i < parts; ++i) {
    parts_.emplace_back(in_features, out_features, with_bias, shard, spec, owner);
  }
  part_low_rank_.resize(parts);
  bind_views();
}

void QKVParallelLinear::bind_views() {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (auto& p : parts_) {
    const auto rows = p->weight.size(0);
    p->weight.set_data(weight_.narrow(0, offset, rows));
    if (bias_.defined()) p->bias.set_data(bias_.narrow(0, offset, rows));
    offset += rows;
  }
}

bool QKVParallelLinear::views_bound() const {
  for (const auto& p : parts_) {
    if (!p->weight.is_alias_of(weight_) || (bias_.defined() && !p->bias.is_alias_of(bias_)))
      return false;
  }
  return true;
}

void QKVParallelLinear::check_views() const {
  if (!views_bound()) {
    throw ModelError(owner_ +
                     ": a fused projection's part no longer shares its storage (converted "
                     "with set_data or Module::to; convert with QKVParallelLinear::to)");
  }
}

std::vector<torch::Tensor> QKVParallelLinear::forward(const torch::Tensor& x) const {
  check_views();
  return method_.apply(x, weight_, bias_).chunk(static_cast<std::int64_t>(parts_.size()), -1);
}

std::vector<torch::Tensor> QKVParallelLinear::forward_skip_bias(const torch::Tensor& x) const {
  check_views();
  return method_.apply(x, weight_, {}).chunk(static_cast<std::int64_t>(parts_.size()), -1);
}

void QKVParallelLinear::set_fp8(std::optional<Fp8Accumulation> accumulation) {
  check_views();
  auto updates = method_.low_rank();
  method_ = accumulation ? LinearMethod::fp8_rowwise(weight_, *accumulation) : LinearMethod{};
  method_.set_low_rank(std::move(updates), weight_.size(0), owner_);
}

void QKVParallelLinear::set_low_rank(std::size_t part, std::vector<LowRankUpdate> updates) {
  const auto rows = parts_.at(part)->weight.size(0);
  for (const auto& u : updates) {
    if (u.offset < 0 || u.up.dim() != 2 || u.offset + u.up.size(0) > rows) {
      throw ModelError(owner_ + ": a low-rank update does not fit part " + std::to_string(part) +
                       " (" + std::to_string(rows) + " rows)");
    }
  }
  part_low_rank_.at(part) = std::move(updates);
  std::vector<LowRankUpdate> all;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    for (auto u : part_low_rank_[i]) {
      u.offset += offset;
      all.push_back(std::move(u));
    }
    offset += parts_[i]->weight.size(0);
  }
  method_.set_low_rank(std::move(all), weight_.size(0), owner_);
}

void QKVParallelLinear::to(torch::Device device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  if (weight_.device() == device && weight_.scalar_type() == dtype && views_bound()) return;
  // From the parts: their values are the checkpoint's even where a conversion broke the views.
  std::vector<torch::Tensor> weights, biases;
  for (const auto& p : parts_) {
    weights.push_back(p->weight.to(device, dtype));
    if (bias_.defined()) biases.push_back(p->bias.to(device, dtype));
  }
  weight_ = torch::cat(weights, 0);
  if (bias_.defined()) bias_ = torch::cat(biases, 0);
  method_ = LinearMethod{};
  part_low_rank_.assign(parts_.size(), {});
  bind_views();
}

ShardPlan layer_shard_plan(torch::nn::Module& root) {
  std::map<std::string, TensorSlice, std::less<>> slices;
  for (const auto& item : root.named_modules("", /*include_self=*/false)) {
    const auto* layer = dynamic_cast<const TensorParallelLayer*>(item.value().get());
    if (layer == nullptr) continue;
    for (const auto& [name, slice] : layer->parameter_slices()) {
      slices.emplace(item.key() + "." + name, slice);
    }
  }
  if (slices.empty()) return {};
  return [slices = std::move(slices)](const std::string& name) -> std::optional<TensorSlice> {
    const auto it = slices.find(name);
    if (it == slices.end()) return std::nullopt;
    return it->second;
  };
}

void bind_tensor_groups(torch::nn::Module& root, Collective* group) {
  for (const auto& module : root.modules(/*include_self=*/false)) {
    if (auto* layer = dynamic_cast<TensorParallelLayer*>(module.get())) {
      layer->bind_tensor_group(group);
    }
  }
}

}  // namespace omnidp::models
