#include "omnidp/models/hv15/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/attention_layer.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/quantization.hpp"
#include "omnidp/models/layers/timestep_embedding.hpp"
#include "omnidp/models/pipelines/step_cache.hpp"

namespace omnidp::models::hv15 {
namespace {

namespace nn = torch::nn;

nn::LayerNorm layer_norm(nn::Module& parent, const std::string& name, std::int64_t dim, double eps) {
  return nn::LayerNorm(
      parent.register_module(name, nn::LayerNorm(nn::LayerNormOptions({dim}).eps(eps))));
}

constexpr const char* kModelName = "HunyuanVideo15Transformer3DModel";

// LayerNorm without affine parameters (eps 1e-6), as diffusers' AdaLN norms.
torch::Tensor plain_layer_norm(const torch::Tensor& x) {
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, 1e-6);
}

}  // namespace

// --- building blocks ----------------------------------------------------------------------

Rope3dOptions hv15_rope_options(const TransformerOptions& o) {
  Rope3dOptions rope;
  rope.axes_dim = o.rope_axes_dim;
  rope.theta = o.rope_theta;
  rope.tables = RopeTables::device_float32;
  return rope;
}

JointAttentionImpl::JointAttentionImpl(std::int64_t heads, std::int64_t head_dim, TensorShard shard)
    : heads_(shard_part(heads, shard, "HunyuanVideo15Transformer3DModel", "attention heads")) {
  const auto dim = heads * head_dim;
  const auto column = [&](const char* name) {
    return register_module(name,
                           ColumnParallelLinear(dim, dim, true, shard, ParamSpec{}, kModelName));
  };
  const auto norm = [&](const char* name) {
    return register_module(name, RMSNorm(head_dim, 1e-6, RmsNormStyle::diffusers));
  };
  to_q_ = column("to_q");
  to_k_ = column("to_k");
  to_v_ = column("to_v");
  norm_q_ = norm("norm_q");
  norm_k_ = norm("norm_k");
  add_q_proj_ = column("add_q_proj");
  add_k_proj_ = column("add_k_proj");
  add_v_proj_ = column("add_v_proj");
  norm_added_q_ = norm("norm_added_q");
  norm_added_k_ = norm("norm_added_k");
  to_out_ =
      register_container(*this, "to_out")
          ->register_module("0", RowParallelLinear(dim, dim, true, shard, ParamSpec{}, kModelName));
  to_add_out_ = register_module("to_add_out",
                                RowParallelLinear(dim, dim, true, shard, ParamSpec{}, kModelName));
  out_ = JointRowParallelLinear(to_out_, to_add_out_);
}

std::tuple<torch::Tensor, torch::Tensor> JointAttentionImpl::forward(const torch::Tensor& x,
                                                                     const torch::Tensor& context,
                                                                     const TextKeys& text,
                                                                     const torch::Tensor& freqs,
                                                                     const SequenceShard& sequence) {
  // freqs [S, 1, D/2] over q, k [B, S, H, D].
  const auto rotations = freqs.view({1, freqs.size(0), 1, freqs.size(2)});
  auto q = apply_rope(norm_q_(to_q_(x).unflatten(2, {heads_, -1})), rotations);
  auto k = apply_rope(norm_k_(to_k_(x).unflatten(2, {heads_, -1})), rotations);
  auto v = to_v_(x).unflatten(2, {heads_, -1});
  const auto cq = norm_added_q_(add_q_proj_(context).unflatten(2, {heads_, -1}));
  const auto ck = norm_added_k_(add_k_proj_(context).unflatten(2, {heads_, -1}));
  const auto cv = add_v_proj_(context).unflatten(2, {heads_, -1});
  const auto [video, words] = attend(sequence, q, k, v, {cq, ck, cv, text.mask, text.lengths});
  return out_.forward(video, words);
}

DoubleStreamBlockImpl::DoubleStreamBlockImpl(std::int64_t heads, std::int64_t head_dim,
                                             double mlp_ratio, TensorShard shard)
    : dim_(heads * head_dim) {
  norm1_ = register_linear(*register_container(*this, "norm1"), "linear", dim_, 6 * dim_);
  norm1_context_ =
      register_linear(*register_container(*this, "norm1_context"), "linear", dim_, 6 * dim_);
  attn_ = register_module("attn", JointAttention(heads, head_dim, shard));
  const auto ffn = [&] {
    return FeedForward(dim_, ffn_width(dim_, mlp_ratio), FeedForwardActivation::gelu_tanh, shard,
                       ParamSpec{}, kModelName);
  };
  ff_ = register_module("ff", ffn());
  ff_context_ = register_module("ff_context", ffn());
}

std::tuple<torch::Tensor, torch::Tensor> DoubleStreamBlockImpl::forward(
    const torch::Tensor& x, const torch::Tensor& context, const torch::Tensor& temb,
    const TextKeys& text, const torch::Tensor& freqs, const SequenceShard& sequence) {
  const auto act = torch::silu(temb);
  // AdaLayerNormZero: shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp, each a
  // float32 [B, 1, 1, D] row; the streams are viewed as [B, 1, N, D] (one group).
  const auto batch = x.size(0);
  const auto rows = [&](const torch::Tensor& mod) {
    const auto f = mod.to(torch::kFloat32).view({batch, 6, 1, 1, dim_});
    std::vector<torch::Tensor> r;
    for (std::int64_t i = 0; i < 6; ++i) r.push_back(f.select(1, i));
    r[1] = r[1] + 1.0;
    r[4] = r[4] + 1.0;
    return r;
  };
  const auto m = rows(norm1_(act));
  const auto c = rows(norm1_context_(act));
  const auto dtype = x.scalar_type();
  const auto g = [&](const torch::Tensor& t) { return t.reshape({batch, 1, -1, dim_}); };
  const auto flat = [&](const torch::Tensor& t) { return t.reshape({batch, -1, dim_}); };
  const auto nx = modulated_layer_norm(g(x), m[0], m[1], 1e-6, dtype);
  const auto nc = modulated_layer_norm(g(context), c[0], c[1], 1e-6, dtype);
  auto [attn_out, ctx_out] = attn_(flat(nx), flat(nc), text, freqs, sequence);
  auto h = gated_residual(g(x), g(attn_out), m[2], dtype);
  auto e = gated_residual(g(context), g(ctx_out), c[2], dtype);
  h = gated_residual(h, g(ff_(flat(modulated_layer_norm(h, m[3], m[4], 1e-6, dtype)))), m[5], dtype);
  e = gated_residual(e, g(ff_context_(flat(modulated_layer_norm(e, c[3], c[4], 1e-6, dtype)))),
                     c[5], dtype);
  return {flat(h), flat(e)};
}

// --- the model ----------------------------------------------------------------------------

HunyuanVideo15Transformer3DModelImpl::HunyuanVideo15Transformer3DModelImpl(TransformerOptions options,
                                                                           TensorShard shard)
    : options_(std::move(options)), shard_(shard), rope_(hv15_rope_options(options_)) {
  const auto& o = options_;
  check_head_split(o.num_attention_heads, shard_.size, 1, "HunyuanVideo15Transformer3DModel");
  const auto dim = o.inner_dim();
  x_embedder_ = nn::Conv3d(
      register_container(*this, "x_embedder")
          ->register_module(
              "proj", nn::Conv3d(nn::Conv3dOptions(o.in_channels, dim,
                                                   {o.patch_size_t, o.patch_size, o.patch_size})
                                     .stride({o.patch_size_t, o.patch_size, o.patch_size}))));
  auto image = register_container(*this, "image_embedder");
  image_norm_in_ = layer_norm(*image, "norm_in", o.image_embed_dim, 1e-5);
  image_l1_ = register_linear(*image, "linear_1", o.image_embed_dim, o.image_embed_dim);
  image_l2_ = register_linear(*image, "linear_2", o.image_embed_dim, dim);
  image_norm_out_ = layer_norm(*image, "norm_out", dim, 1e-5);
  context_embedder_ = register_module(
      "context_embedder", TokenRefiner(o.text_embed_dim, o.num_attention_heads,
                                       o.attention_head_dim, o.num_refiner_layers, 4.0));
  auto byt5 = register_container(*this, "context_embedder_2");
  byt5_norm_ = layer_norm(*byt5, "norm", o.text_embed_2_dim, 1e-5);
  byt5_l1_ = register_linear(*byt5, "linear_1", o.text_embed_2_dim, 2048);
  byt5_l2_ = register_linear(*byt5, "linear_2", 2048, 2048);
  byt5_l3_ = register_linear(*byt5, "linear_3", 2048, dim);
  auto time = register_container(*this, "time_embed");
  time_embedder_ =
      time->register_module("timestep_embedder", EmbeddingMlp(256, dim, EmbeddingActivation::silu));
  if (o.use_meanflow) {
    time_r_embedder_ = time->register_module("timestep_embedder_r",
                                             EmbeddingMlp(256, dim, EmbeddingActivation::silu));
  }
  cond_type_embed_ = register_module("cond_type_embed", nn::Embedding(3, dim));
  blocks_ = register_module("transformer_blocks", nn::ModuleList());
  for (std::int64_t i = 0; i < o.num_layers; ++i) {
    blocks_->push_back(
        DoubleStreamBlock(o.num_attention_heads, o.attention_head_dim, o.mlp_ratio, shard_));
  }
  norm_out_ = register_linear(*register_container(*this, "norm_out"), "linear", dim, 2 * dim);
  proj_out_ = register_linear(*this, "proj_out", dim,
                              o.patch_size_t * o.patch_size * o.patch_size * o.out_channels);
}

void HunyuanVideo15Transformer3DModelImpl::bind_parallel(const ParallelState& state) {
  parallel_ = bind_parallel_state(*this, shard_, options_.num_attention_heads, state,
                                  "the HunyuanVideo-1.5 transformer");
}

ShardPlan HunyuanVideo15Transformer3DModelImpl::shard_plan() { return layer_shard_plan(*this); }

TextTokens HunyuanVideo15Transformer3DModelImpl::build_context(const TransformerInputs& in,
                                                               const torch::Tensor& timestep,
                                                               TextPadding layout) {
  if (layout == TextPadding::ragged) return ragged_context(in, timestep);
  const auto dtype = proj_out_->weight.scalar_type();
  const auto device = proj_out_->weight.device();
  const auto b = in.hidden_states.size(0);
  const auto qwen = in.encoder_hidden_states.to(device, dtype);
  const auto byt5 = in.encoder_hidden_states_2.to(device, dtype);
  const auto qmask = in.encoder_attention_mask.to(device).to(torch::kBool);
  const auto bmask = in.encoder_attention_mask_2.to(device).to(torch::kBool);
  const bool has_image = in.image_embeds.defined() && in.image_embeds.size(1) > 0;
  const bool is_t2v = !has_image || !in.image_embeds.ne(0).any().item<bool>();
  const auto long_opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto cond = [&](std::int64_t type) {
    return cond_type_embed_(torch::full({1, 1}, type, long_opts));
  };
  auto byt5_mlp = [&](const torch::Tensor& x) {
    auto h = torch::gelu(byt5_l1_(byt5_norm_(x)));
    h = torch::gelu(byt5_l2_(h));
    return byt5_l3_(h) + cond(1);
  };
  auto image_mlp = [&](const torch::Tensor& x) {
    return image_norm_out_(image_l2_(torch::gelu(image_l1_(image_norm_in_(x)))));
  };

  if (layout == TextPadding::drop) {
    // Batch 1: keep only the valid tokens, in the reference's order.
    std::vector<torch::Tensor> parts;
    if (!is_t2v) parts.push_back(image_mlp(in.image_embeds.to(device, dtype)) + cond(2));
    const auto bidx = bmask[0].nonzero().view({-1});
    if (bidx.numel() > 0) parts.push_back(byt5_mlp(byt5.index_select(1, bidx)));
    const auto qidx = qmask[0].nonzero().view({-1});
    if (qidx.numel() == 0) throw ModelError("encoder_attention_mask has no valid token");
    const auto qvalid = qwen.index_select(1, qidx);
    parts.push_back(context_embedder_(qvalid, timestep, torch::Tensor()) + cond(0));
    return {torch::cat(parts, 1), {}};
  }

  // Reference layout: [valid image, valid byT5, valid Qwen, invalid image, invalid byT5
  // (zeroed), invalid Qwen (zeroed)], padding masked.
  if (!qmask.any(1).all().item<bool>())
    throw ModelError("encoder_attention_mask has no valid token");
  const auto refined = context_embedder_(qwen, timestep, qmask) + cond(0);
  const auto glyph = byt5_mlp(byt5);
  std::vector<TextSource> sources;
  if (has_image) {
    auto img = image_mlp(in.image_embeds.to(device, dtype));
    if (is_t2v) img = img * 0.0;
    sources.push_back(
        {img + cond(2), torch::full({b, img.size(1)}, !is_t2v,
                                    torch::TensorOptions().dtype(torch::kBool).device(device))});
  }
  sources.push_back({glyph * bmask.unsqueeze(-1).to(dtype), bmask});
  sources.push_back({refined * qmask.unsqueeze(-1).to(dtype), qmask});
  return valid_tokens_first(sources);
}

TextTokens HunyuanVideo15Transformer3DModelImpl::ragged_context(const TransformerInputs& in,
                                                                const torch::Tensor& timestep) {
  const auto b = in.hidden_states.size(0);
  const auto entry = [b](const torch::Tensor& t, std::int64_t i) {
    return t.defined() && t.dim() > 0 && t.size(0) == b ? t.narrow(0, i, 1) : t;
  };
  std::vector<torch::Tensor> tokens;
  for (std::int64_t i = 0; i < b; ++i) {
    TransformerInputs one;
    one.hidden_states = entry(in.hidden_states, i);
    one.encoder_hidden_states = entry(in.encoder_hidden_states, i);
    one.encoder_attention_mask = entry(in.encoder_attention_mask, i);
    one.encoder_hidden_states_2 = entry(in.encoder_hidden_states_2, i);
    one.encoder_attention_mask_2 = entry(in.encoder_attention_mask_2, i);
    one.image_embeds = entry(in.image_embeds, i);
    tokens.push_back(build_context(one, timestep.narrow(0, i, 1), TextPadding::drop).tokens);
  }
  return pad_entries(std::move(tokens));
}

torch::Tensor HunyuanVideo15Transformer3DModelImpl::forward(const TransformerInputs& in,
                                                            StepCache* cache) {
  check_transformer_inputs(options_, in);
  const auto& o = options_;
  const auto dtype = proj_out_->weight.scalar_type();
  const auto device = proj_out_->weight.device();
  const auto x_in = in.hidden_states.to(device, dtype);
  const auto b = x_in.size(0);
  const auto pf = x_in.size(2) / o.patch_size_t;
  const auto ph = x_in.size(3) / o.patch_size;
  const auto pw = x_in.size(4) / o.patch_size;

  // 2. Conditioning.
  const auto timestep = in.timestep.to(device).reshape({b});
  auto temb = time_embedder_->forward(timestep_sinusoid(timestep, 256).to(dtype));
  if (o.use_meanflow && in.timestep_r.defined()) {
    const auto tr = in.timestep_r.to(device).reshape({b});
    temb = temb + time_r_embedder_->forward(timestep_sinusoid(tr, 256).to(dtype));
  }

  torch::Tensor x;
  if (o.patch_size == 1 && o.patch_size_t == 1) {
    // A 1x1x1 convolution is a matmul over channels.
    const auto w = x_embedder_->weight.view({x_embedder_->weight.size(0), -1});
    x = torch::linear(x_in.flatten(2).transpose(1, 2), w, x_embedder_->bias);
  } else {
    x = x_embedder_(x_in).flatten(2).transpose(1, 2);
  }

  auto [context, keys] = build_context(in, timestep, resolve_text_padding(padding_, b));

  // Ulysses (layers/ulysses.hpp): this rank's video tokens and their RoPE rows.
  const SequenceShard seq = make_sequence_shard(parallel_.sequence, x.size(1));
  auto freqs = rope_.freqs(pf, ph, pw, device);
  if (seq.active()) {
    x = shard_tokens(seq, x, 1);
    freqs = shard_tokens(seq, freqs, 0);
  }

  // 3. Double-stream blocks.
  x = run_blocks(cache, {x, context}, blocks_->size(), [&](std::size_t i, BlockStreams s) {
        std::tie(s.hidden, s.context) = blocks_[i]->as<DoubleStreamBlock>()->forward(
            s.hidden, s.context, temb, keys, freqs, seq);
        return s;
      }).hidden;

  // 4. Output head (AdaLayerNormContinuous: scale first, then shift).
  const auto mod = norm_out_(torch::silu(temb).to(dtype)).unsqueeze(1).chunk(2, 2);
  x = plain_layer_norm(x) * (1 + mod[0]) + mod[1];
  x = proj_out_(x);
  if (seq.active()) x = gather_tokens(seq, x);  // every rank: the whole prediction
  x = x.reshape({b, pf, ph, pw, -1, o.patch_size_t, o.patch_size, o.patch_size});
  x = x.permute({0, 4, 1, 5, 2, 6, 3, 7});
  return x.reshape({b, x.size(1), pf * o.patch_size_t, ph * o.patch_size, pw * o.patch_size});
}

void HunyuanVideo15Transformer3DModelImpl::quantize_fp8(Fp8Plan plan) {
  plan.blocks = "transformer_blocks";
  apply_fp8_plan(*this, plan);
}

}  // namespace omnidp::models::hv15
