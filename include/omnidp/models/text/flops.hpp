#pragma once
// FLOPs of the text encoders' forwards (docs/performance.md, "MFU"): 2 per multiply-add of
// every matrix multiplication (projections, feed-forward, attention scores and values over
// all n x n pairs); embeddings, norms, activations and position biases are not counted.
// Plain functions of the options, thread-safe.

#include <cstdint>

#include "omnidp/models/text/qwen25vl.hpp"
#include "omnidp/models/text/t5.hpp"

namespace omnidp::models::text {

// A T5 / UMT5 / byT5 encoder over `tokens` tokens: num_layers x [2n(4 d i + k d f) + 4 n^2 i]
// with d = d_model, i = num_heads x d_kv, f = d_ff, k = 3 gated (wi_0, wi_1, wo) else 2.
[[nodiscard]] double t5_encoder_flops(const T5Options& options, std::int64_t tokens);
// The Qwen2.5-VL text model over `tokens` tokens through `layers` decoder layers (HunyuanVideo
// 1.5 takes hidden_states[-3]: num_hidden_layers - 2 of them): layers x [2n(d (2 h + 2 kv) hd +
// 3 d I) + 4 n^2 h hd] with d = hidden_size, h / kv = attention / key-value heads, hd =
// head_dim, I = intermediate_size.
[[nodiscard]] double qwen25vl_text_flops(const Qwen25VLTextOptions& options, std::int64_t tokens,
                                         std::int64_t layers);

}  // namespace omnidp::models::text
