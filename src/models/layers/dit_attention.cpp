#include "omnidp/models/layers/dit_attention.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/attention_layer.hpp"
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {

SelfAttentionImpl::SelfAttentionImpl(std::int64_t dim, std::int64_t heads, double eps,
                                     TensorShard shard, const ParamSpec& spec,
                                     const std::string& owner)
    : heads_(shard_part(heads, shard, owner, "attention heads")) {
  in_ = QKVParallelLinear(dim, dim, 3, true, shard, spec, owner);  // one GEMM for q, k and v
  to_q = register_module("to_q", in_.part(0));
  to_k = register_module("to_k", in_.part(1));
  to_v = register_module("to_v", in_.part(2));
  to_out = register_module("to_out", torch::nn::ModuleList());
  out_ = RowParallelLinear(dim, dim, true, shard, spec, owner);
  to_out->push_back(out_);
  norm_q = register_module("norm_q", HeadNorm(dim, eps, shard, spec, owner));
  norm_k = register_module("norm_k", HeadNorm(dim, eps, shard, spec, owner));
}

bool SelfAttentionImpl::defers_biases() const { return fused_elementwise(); }

void SelfAttentionImpl::to_dtype(torch::Device device, torch::ScalarType dtype) {
  in_.to(device, dtype);
}

std::pair<torch::Tensor, torch::Tensor> SelfAttentionImpl::forward(const torch::Tensor& x,
                                                                   const torch::Tensor& rope_freqs,
                                                                   const torch::Tensor& out_bias,
                                                                   const SequenceShard& sequence) {
  const bool deferred = defers_biases();
  if (deferred && !out_bias.defined()) throw ModelError("no folded self-attention output bias");
  // Deferred: plain GEMMs, the q and k biases go into their norms, the output's to the caller.
  const auto qkv = deferred ? in_.forward_skip_bias(x) : in_.forward(x);
  const std::int64_t head_dim = qkv[1].size(2) / heads_;
  const auto bias = [&](const ColumnParallelLinear& p) {
    return deferred ? p->bias : torch::Tensor();
  };
  // RMSNorm across heads, then the rotary embedding: one kernel on CUDA.
  const auto k = norm_k->forward(qkv[1], rope_freqs, head_dim, bias(to_k)).unflatten(2, {heads_, -1});
  const auto q = norm_q->forward(qkv[0], rope_freqs, head_dim, bias(to_q)).unflatten(2, {heads_, -1});
  const auto o = models::attend(sequence, q, k, qkv[2].unflatten(2, {heads_, -1})).first;
  if (!deferred) return {out_->forward(o), {}};
  return {out_->forward_skip_bias(o).first, out_bias};
}

torch::Tensor SelfAttentionImpl::folded_out_bias() {
  torch::NoGradGuard no_grad;
  const auto f32 = torch::kFloat32;
  // Row-split: each shard's to_out columns (and low-rank updates) times its to_v bias rows,
  // summed over the group.
  const auto folded = reduce_partial(tensor_group_, out_->partial_matvec_f32(to_v->bias));
  return (out_->bias.to(f32) + folded).to(out_->bias.scalar_type());
}

CrossAttentionImpl::CrossAttentionImpl(std::int64_t dim, std::int64_t heads, double eps,
                                       TensorShard shard, const ParamSpec& spec,
                                       const std::string& owner, std::int64_t added_kv)
    : heads_(shard_part(heads, shard, owner, "attention heads")) {
  in_ = QKVParallelLinear(dim, dim, 2, true, shard, spec, owner);  // one GEMM for k and v
  to_q = register_module("to_q", ColumnParallelLinear(dim, dim, true, shard, spec, owner));
  to_k = register_module("to_k", in_.part(0));
  to_v = register_module("to_v", in_.part(1));
  to_out = register_module("to_out", torch::nn::ModuleList());
  out_ = RowParallelLinear(dim, dim, true, shard, spec, owner);
  to_out->push_back(out_);
  norm_q = register_module("norm_q", HeadNorm(dim, eps, shard, spec, owner));
  norm_k = register_module("norm_k", HeadNorm(dim, eps, shard, spec, owner));
  if (added_kv > 0) {
    add_k_proj =
        register_module("add_k_proj", ColumnParallelLinear(added_kv, dim, true, shard, spec, owner));
    add_v_proj =
        register_module("add_v_proj", ColumnParallelLinear(added_kv, dim, true, shard, spec, owner));
    norm_added_k = register_module("norm_added_k", HeadNorm(dim, eps, shard, spec, owner));
  }
}

bool CrossAttentionImpl::defers_biases() const { return fused_elementwise(); }

void CrossAttentionImpl::to_dtype(torch::Device device, torch::ScalarType dtype) {
  in_.to(device, dtype);
}

KeyValues CrossAttentionImpl::context_kv(const torch::Tensor& context) {
  const auto kv = in_.forward(context);
  const std::int64_t head_dim = kv[0].size(2) / heads_;
  const auto k = norm_k->forward(kv[0], {}, head_dim).unflatten(2, {heads_, -1});
  return {k, kv[1].unflatten(2, {heads_, -1})};  // [B, Lc, H, Dh]
}

KeyValues CrossAttentionImpl::image_kv(const torch::Tensor& image) {
  if (!add_k_proj) throw ModelError("image_kv: this attention has no added K/V projections");
  const auto k = add_k_proj->forward(image);
  const std::int64_t head_dim = k.size(2) / heads_;
  return {norm_added_k->forward(k, {}, head_dim).unflatten(2, {heads_, -1}),
          add_v_proj->forward(image).unflatten(2, {heads_, -1})};
}

std::pair<torch::Tensor, torch::Tensor> CrossAttentionImpl::attend(const torch::Tensor& x,
                                                                   const KeyValues& kv,
                                                                   const KeyValues& image_kv) {
  if (image_kv.first.defined() && !add_k_proj) {
    throw ModelError("image keys given to an attention without added K/V");
  }
  const bool deferred = defers_biases();
  const auto [q, q_bias] =
      deferred ? to_q->forward_skip_bias(x) : std::pair{to_q->forward(x), torch::Tensor()};
  const std::int64_t head_dim = q.size(2) / heads_;
  const auto qn = norm_q->forward(q, {}, head_dim, q_bias).unflatten(2, {heads_, -1});
  // One normalised query for the text and the image: the image part first, as the reference
  // computes it; the sum is the same either way.
  torch::Tensor image;
  if (image_kv.first.defined())
    image = models::attend({}, qn, image_kv.first, image_kv.second).first;
  auto o = models::attend({}, qn, kv.first, kv.second).first;
  if (image.defined()) o = o + image;
  if (!deferred) return {out_->forward(o), {}};
  return out_->forward_skip_bias(o);
}

}  // namespace omnidp::models
