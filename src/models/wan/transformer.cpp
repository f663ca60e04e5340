#include "omnidp/models/wan/transformer.hpp"

#include <cmath>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/quantization.hpp"
#include "omnidp/models/layers/timestep_embedding.hpp"
#include "omnidp/models/pipelines/step_cache.hpp"

namespace omnidp::models::wan {

namespace {
// A model built on the meta device has its shapes and no memory (the LoRA check on rank 0:
// models/weights/lora.hpp). libtorch cannot move a built module's parameters there, so the few
// modules libtorch builds on the CPU (a convolution, float32 norms) stay where they are: their
// shapes are the same.
bool on_meta(const ParamSpec& spec) { return spec.device.type() == torch::kMeta; }

constexpr const char* kModelName = "WanTransformer3DModel";
}  // namespace

Rope3dOptions wan_rope_options(const WanTransformerOptions& o) {
  const std::int64_t d = o.attention_head_dim;
  Rope3dOptions rope;
  rope.axes_dim = {d - 4 * (d / 6), 2 * (d / 6), 2 * (d / 6)};
  rope.split_dim = {d - 2 * (d / 3), d / 3, d / 3};
  rope.theta = o.rope_theta;
  rope.tables = RopeTables::cpu_float64;
  rope.max_positions = o.rope_max_seq_len;
  return rope;
}

// ---------------------------------------------------------------------------------------------
// Layers

WanTransformerBlockImpl::WanTransformerBlockImpl(const WanTransformerOptions& o, TensorShard shard,
                                                 const ParamSpec& spec)
    : dim_(o.inner_dim()), eps_(o.eps) {
  const auto heads = o.num_attention_heads;
  attn1 = register_module("attn1", SelfAttention(dim_, heads, o.eps, shard, spec, kModelName));
  attn2 = register_module(
      "attn2", CrossAttention(dim_, heads, o.eps, shard, spec, kModelName, o.added_kv_proj_dim));
  if (o.cross_attn_norm) {
    norm2 = register_module(
        "norm2", torch::nn::LayerNorm(
                     torch::nn::LayerNormOptions({dim_}).eps(o.eps).elementwise_affine(true)));
    if (!on_meta(spec)) norm2->to(spec.device);
  }
  (void)shard_part(o.ffn_dim, shard, "WanTransformer3DModel", "FFN columns (ffn_dim)");
  ffn = register_module("ffn", FeedForward(dim_, o.ffn_dim, FeedForwardActivation::gelu_tanh, shard,
                                           spec, "WanTransformer3DModel"));
  scale_shift_table = register_parameter(
      "scale_shift_table",
      (torch::randn({1, 6, dim_}) / std::sqrt(static_cast<double>(dim_))).to(spec.device));
}

torch::Tensor WanTransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& context,
                                               const torch::Tensor& temb_proj,
                                               const torch::Tensor& rope_freqs,
                                               const SequenceShard& sequence) {
  return forward(x, prepare(context), temb_proj, rope_freqs, sequence);
}

WanPreparedBlock WanTransformerBlockImpl::prepare(const torch::Tensor& context,
                                                  const torch::Tensor& image) {
  WanPreparedBlock prepared;
  prepared.context_kv = attn2->context_kv(context);
  if (image.defined()) prepared.image_kv = attn2->image_kv(image);
  if (attn1->defers_biases()) prepared.self_out_bias = attn1->folded_out_bias();
  return prepared;
}

torch::Tensor WanTransformerBlockImpl::forward(const torch::Tensor& x,
                                               const WanPreparedBlock& prepared,
                                               const torch::Tensor& temb_proj,
                                               const torch::Tensor& rope_freqs,
                                               const SequenceShard& sequence) {
  // Modulation [1, 1, 6, D] + [B, G, 6, D] -> six [B, G, 1, D], broadcast over the N/G tokens
  // of each group: x is viewed as [B, G, N/G, D] (tokens are in frame-major order).
  const std::int64_t batch = x.size(0);
  const std::int64_t groups = temb_proj.size(1);
  const auto mod = (scale_shift_table.unsqueeze(0) + temb_proj.to(torch::kFloat32)).unsqueeze(3);
  const auto shift_msa = mod.select(2, 0);
  const auto scale_msa = mod.select(2, 1) + 1.0;
  const auto gate_msa = mod.select(2, 2);
  const auto c_shift = mod.select(2, 3);
  const auto c_scale = mod.select(2, 4) + 1.0;
  const auto c_gate = mod.select(2, 5);
  const auto dtype = x.scalar_type();
  const auto grouped = [&](const torch::Tensor& t) { return t.view({batch, groups, -1, dim_}); };
  const auto flat = [&](const torch::Tensor& t) { return t.view({batch, -1, dim_}); };
  // Where the projections' biases are deferred (SelfAttention::defers_biases), each residual
  // below adds the bias of the output projection it receives.

  // 1. Self-attention: norm -> (1 + scale), shift -> attn1 -> residual with gate (float32).
  const auto xg = grouped(x);
  auto norm_x = modulated_layer_norm(xg, shift_msa, scale_msa, eps_, dtype);
  const auto [attn, attn_bias] =
      attn1->forward(flat(norm_x), rope_freqs, prepared.self_out_bias, sequence);
  auto h = gated_residual(xg, grouped(attn), gate_msa, dtype, attn_bias);

  // 2. Cross-attention (norm2 keeps float32 weights), plain residual.
  const auto hf = flat(h);
  norm_x = norm2 ? fp32_affine_layer_norm(hf, norm2->weight, norm2->bias, eps_) : hf;
  const auto [cross, cross_bias] = attn2->attend(norm_x, prepared.context_kv, prepared.image_kv);
  h = gated_residual(h, grouped(cross), {}, dtype, cross_bias);

  // 3. Feed-forward with c_shift/c_scale, residual with c_gate.
  norm_x = modulated_layer_norm(h, c_shift, c_scale, eps_, dtype);
  const auto [ff, ff_bias] = fused_elementwise()
                                 ? ffn->forward_skip_bias(flat(norm_x))
                                 : std::pair{ffn->forward(flat(norm_x)), torch::Tensor()};
  return flat(gated_residual(h, grouped(ff), c_gate, dtype, ff_bias));
}

WanConditionEmbedderImpl::WanConditionEmbedderImpl(const WanTransformerOptions& o,
                                                   const ParamSpec& spec)
    : freq_dim_(o.freq_dim) {
  time_embedder = register_module("time_embedder",
                                  EmbeddingMlp(o.freq_dim, o.inner_dim(), EmbeddingActivation::silu,
                                               ParamSpec{torch::kFloat32, spec.device}));
  time_proj = register_module("time_proj", Linear(o.inner_dim(), 6 * o.inner_dim(), true, spec));
  text_embedder = register_module(
      "text_embedder", EmbeddingMlp(o.text_dim, o.inner_dim(), EmbeddingActivation::gelu_tanh, spec));
  if (o.image_tokens()) {
    image_embedder = register_module("image_embedder", WanImageEmbedding(o, spec));
  }
}

WanImageEmbeddingImpl::WanImageEmbeddingImpl(const WanTransformerOptions& o, const ParamSpec& spec) {
  const auto fp32_norm = [&](std::int64_t width) {
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({width}).eps(1e-5).elementwise_affine(true));
    if (!on_meta(spec)) norm->to(spec.device);  // float32, as the reference keeps norm1 / norm2
    return norm;
  };
  norm1 = register_module("norm1", fp32_norm(o.image_dim));
  ff = register_module(
      "ff", FeedForward(o.image_dim, o.image_dim, FeedForwardActivation::gelu, TensorShard{}, spec,
                        "WanTransformer3DModel", o.inner_dim()));
  norm2 = register_module("norm2", fp32_norm(o.inner_dim()));
  if (o.pos_embed_seq_len > 0) {
    pos_embed = register_parameter(
        "pos_embed", torch::zeros({1, o.pos_embed_seq_len, o.image_dim},
                                  torch::TensorOptions().dtype(spec.dtype).device(spec.device)));
  }
}

torch::Tensor WanImageEmbeddingImpl::forward(const torch::Tensor& image) const {
  const auto width = norm1->weight.size(0);
  if (image.dim() != 3 || image.size(2) != width ||
      (pos_embed.defined() && image.size(1) != pos_embed.size(1))) {
    throw ModelError("image tokens must be [B, " +
                     (pos_embed.defined() ? std::to_string(pos_embed.size(1)) : std::string("L")) +
                     ", " + std::to_string(width) + "], got " + c10::str(image.sizes()));
  }
  const auto x = pos_embed.defined() ? image + pos_embed : image;
  const auto h = ff->forward(fp32_affine_layer_norm(x, norm1->weight, norm1->bias, 1e-5));
  return fp32_affine_layer_norm(h, norm2->weight, norm2->bias, 1e-5);
}

// ---------------------------------------------------------------------------------------------
// Model

WanTransformer3DModelImpl::WanTransformer3DModelImpl(WanTransformerOptions options,
                                                     TensorShard shard, const ParamSpec& spec)
    : options_(std::move(options)), shard_(shard), rope_(wan_rope_options(options_)) {
  const auto& o = options_;
  check_head_split(o.num_attention_heads, shard_.size, 1, "WanTransformer3DModel");  // first
  const std::int64_t dim = o.inner_dim();
  patch_embedding = register_module(
      "patch_embedding",
      torch::nn::Conv3d(torch::nn::Conv3dOptions(
                            o.in_channels, dim, {o.patch_size[0], o.patch_size[1], o.patch_size[2]})
                            .stride({o.patch_size[0], o.patch_size[1], o.patch_size[2]})));
  if (!on_meta(spec)) patch_embedding->to(spec.device, spec.dtype);
  condition_embedder = register_module("condition_embedder", WanConditionEmbedder(o, spec));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < o.num_layers; ++i)
    blocks->push_back(WanTransformerBlock(o, shard_, spec));
  proj_out = register_module(
      "proj_out",
      Linear(dim, o.out_channels * o.patch_size[0] * o.patch_size[1] * o.patch_size[2], true, spec));
  scale_shift_table = register_parameter(
      "scale_shift_table",
      (torch::randn({1, 2, dim}) / std::sqrt(static_cast<double>(dim))).to(spec.device));
}

void WanTransformer3DModelImpl::bind_parallel(const ParallelState& state) {
  parallel_ =
      bind_parallel_state(*this, shard_, options_.num_attention_heads, state, "the Wan transformer");
}

ShardPlan WanTransformer3DModelImpl::shard_plan() { return layer_shard_plan(*this); }

std::pair<torch::Tensor, std::int64_t> wan_timestep_groups(const torch::Tensor& timestep,
                                                           std::int64_t frames) {
  const std::int64_t batch = timestep.size(0);
  if (timestep.dim() == 1) return {timestep.view({batch, 1}), 1};
  if (!fused_elementwise()) return {timestep, timestep.size(1)};  // the reference: per token
  const auto first = timestep.narrow(1, 0, 1);
  if (torch::equal(timestep, first.expand_as(timestep))) return {first, 1};
  const auto per_frame = timestep.view({batch, frames, -1});
  const auto frame_first = per_frame.narrow(2, 0, 1);
  if (torch::equal(per_frame, frame_first.expand_as(per_frame))) {
    return {frame_first.squeeze(2), frames};
  }
  return {timestep, timestep.size(1)};
}

WanPreparedContext WanTransformer3DModelImpl::prepare_context(const torch::Tensor& context,
                                                              const torch::Tensor& image) {
  torch::NoGradGuard no_grad;
  if (context.dim() != 3 || context.size(2) != options_.text_dim) {
    throw ModelError("text context must be [B, L, " + std::to_string(options_.text_dim) + "]");
  }
  if (options_.image_tokens() != image.defined()) {
    throw ModelError(options_.image_tokens()
                         ? "this transformer (image_dim " + std::to_string(options_.image_dim) +
                               ") needs the CLIP image tokens of the request's image"
                         : std::string("image tokens given to a transformer without image_dim"));
  }
  WanPreparedContext prepared;
  prepared.batch = context.size(0);
  prepared.dtype = context.scalar_type();
  const auto ctx = condition_embedder->text_embedder->forward(context);
  torch::Tensor image_ctx;
  if (image.defined()) {
    if (image.dim() != 3 || (image.size(0) != 1 && image.size(0) != context.size(0))) {
      throw ModelError("image tokens must be [1 or B, L, " + std::to_string(options_.image_dim) +
                       "], got " + c10::str(image.sizes()));
    }
    image_ctx = condition_embedder->image_embedder->forward(image.to(context.scalar_type()));
    image_ctx = image_ctx.expand({context.size(0), -1, -1});
  }
  for (const auto& block : *blocks)
    prepared.blocks.push_back(block->as<WanTransformerBlock>()->prepare(ctx, image_ctx));
  return prepared;
}

torch::Tensor WanTransformer3DModelImpl::forward(const torch::Tensor& hidden,
                                                 const torch::Tensor& timestep,
                                                 const torch::Tensor& context,
                                                 const torch::Tensor& image) {
  if (context.dim() != 3 || (hidden.dim() > 0 && context.size(0) != hidden.size(0))) {
    throw ModelError("text context must be [B, L, " + std::to_string(options_.text_dim) + "]");
  }
  return forward(hidden, timestep, prepare_context(context, image));
}

torch::Tensor WanTransformer3DModelImpl::forward(const torch::Tensor& hidden,
                                                 const torch::Tensor& timestep,
                                                 const WanPreparedContext& context, StepCache* cache) {
  torch::NoGradGuard no_grad;
  const auto& o = options_;
  if (hidden.dim() != 5 || hidden.size(1) != o.in_channels) {
    throw ModelError("transformer input must be [B, " + std::to_string(o.in_channels) +
                     ", F, H, W], got " + std::to_string(hidden.dim()) + " dims");
  }
  const std::int64_t batch = hidden.size(0);
  const auto [pt, ph, pw] = o.patch_size;
  if (hidden.size(2) % pt != 0 || hidden.size(3) % ph != 0 || hidden.size(4) % pw != 0) {
    throw ModelError("latent frames/height/width must be multiples of the patch size");
  }
  const std::int64_t f = hidden.size(2) / pt;
  const std::int64_t h = hidden.size(3) / ph;
  const std::int64_t w = hidden.size(4) / pw;
  const std::int64_t tokens = f * h * w;
  if (context.batch != batch || context.blocks.size() != blocks->size()) {
    throw ModelError("the prepared text context is for batch " + std::to_string(context.batch) +
                     " and " + std::to_string(context.blocks.size()) + " blocks, not " +
                     std::to_string(batch) + " and " + std::to_string(blocks->size()));
  }
  const bool per_token = timestep.dim() == 2;
  if (per_token ? (timestep.size(0) != batch || timestep.size(1) != tokens)
                : (timestep.dim() != 1 || timestep.size(0) != batch)) {
    throw ModelError("timestep must be [B] or [B, " + std::to_string(tokens) + "]");
  }

  // Ulysses (layers/ulysses.hpp): this rank's tokens, their RoPE rows and modulation below.
  const SequenceShard seq = make_sequence_shard(parallel_.sequence, tokens);
  auto rope_freqs = rope_.freqs(f, h, w, hidden.device());

  auto x = patch_embedding->forward(hidden).flatten(2).transpose(1, 2).contiguous();  // [B, N, D]

  // Condition embedding, once per timestep group [B, G] (see wan_timestep_groups).
  auto& ce = *condition_embedder;
  const auto [t_groups, timestep_groups] = wan_timestep_groups(timestep, f);
  std::int64_t groups = timestep_groups;
  const auto t_freq = timestep_sinusoid(t_groups.flatten(), o.freq_dim)
                          .unflatten(0, {batch, groups})
                          .to(ce.time_embedder->linear_1->weight.scalar_type());
  auto temb = ce.time_embedder->forward(t_freq).to(context.dtype);  // [B, G, D]
  auto temb_proj = ce.time_proj->forward(torch::silu(temb)).unflatten(2, {6, -1});

  if (seq.active()) {
    x = shard_tokens(seq, x, 1);
    rope_freqs = shard_tokens(seq, rope_freqs, 0);
    if (groups > 1) {  // a shard need not start at a group: one modulation row per local token
      const auto group_of = torch::div(shard_positions(seq, x.device()), tokens / groups, "floor");
      temb = temb.index_select(1, group_of);
      temb_proj = temb_proj.index_select(1, group_of);
      groups = seq.local;
    }
  }
  x = run_blocks(cache, {x, {}}, blocks->size(), [&](std::size_t i, BlockStreams s) {
        s.hidden = blocks[i]->as<WanTransformerBlock>()->forward(s.hidden, context.blocks[i],
                                                                 temb_proj, rope_freqs, seq);
        return s;
      }).hidden;

  // Output head: shift/scale = table + temb (no SiLU, no projection), per group.
  const auto ss =
      (scale_shift_table.unsqueeze(0) + temb.unsqueeze(2)).unsqueeze(3);  // [B, G, 2, 1, D]
  x = modulated_layer_norm(x.view({batch, groups, -1, o.inner_dim()}), ss.select(2, 0),
                           ss.select(2, 1) + 1.0, o.eps, x.scalar_type());
  x = proj_out->forward(x.view({batch, seq.local, o.inner_dim()}));
  if (seq.active()) x = gather_tokens(seq, x);  // every rank: the whole prediction

  // Unpatchify: [B, f, h, w, pt, ph, pw, C] -> [B, C, f*pt, h*ph, w*pw].
  x = x.reshape({batch, f, h, w, pt, ph, pw, -1}).permute({0, 7, 1, 4, 2, 5, 3, 6});
  return x.reshape({batch, -1, f * pt, h * ph, w * pw});
}

void WanTransformer3DModelImpl::to_dtype(torch::Device device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  for (const auto& block : *blocks) {  // the fused projections first: they keep their views
    auto b = block->as<WanTransformerBlock>();
    b->attn1->to_dtype(device, dtype);
    b->attn2->to_dtype(device, dtype);
  }
  to_dtype_keeping_float32(*this, device, dtype, kKeepInFloat32);
  rope_.clear();
}

torch::ScalarType WanTransformer3DModelImpl::dtype() const {
  return proj_out->weight.scalar_type();
}

void WanTransformer3DModelImpl::quantize_fp8() {
  require_fp8(proj_out->weight.device(), Fp8Needs::deferred_biases);
  apply_fp8_plan(*this, fp8_plan());
}

Fp8Plan WanTransformer3DModelImpl::fp8_plan() {
  // Every GEMM of the blocks but the text (and image) keys and values, computed once per request.
  return {Fp8Accumulation::fast,
          "blocks",
          0,
          {"attn2.to_k", "attn2.to_v", "attn2.add_k_proj", "attn2.add_v_proj"}};
}

}  // namespace omnidp::models::wan
