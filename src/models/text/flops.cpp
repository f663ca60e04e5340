#include "omnidp/models/text/flops.hpp"

namespace omnidp::models::text {

double t5_encoder_flops(const T5Options& o, std::int64_t tokens) {
  const double n = static_cast<double>(tokens);
  const double d = static_cast<double>(o.d_model);
  const double inner = static_cast<double>(o.num_heads * o.d_kv);
  const double f = static_cast<double>(o.d_ff);
  const double ffn_matrices = o.is_gated_act ? 3.0 : 2.0;
  const double per_layer = 2.0 * n * (4.0 * d * inner + ffn_matrices * d * f) + 4.0 * n * n * inner;
  return static_cast<double>(o.num_layers) * per_layer;
}

double qwen25vl_text_flops(const Qwen25VLTextOptions& o, std::int64_t tokens, std::int64_t layers) {
  const double n = static_cast<double>(tokens);
  const double d = static_cast<double>(o.hidden_size);
  const double hd = static_cast<double>(o.head_dim);
  const double heads = static_cast<double>(o.num_attention_heads);
  const double kv = static_cast<double>(o.num_key_value_heads);
  const double mlp = static_cast<double>(o.intermediate_size);
  const double per_layer =
      2.0 * n * (d * (2.0 * heads + 2.0 * kv) * hd + 3.0 * d * mlp) + 4.0 * n * n * heads * hd;
  return static_cast<double>(layers) * per_layer;
}

}  // namespace omnidp::models::text
