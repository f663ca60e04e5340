#pragma once
// The inputs of one HunyuanVideo-1.5 transformer forward pass and their check against the
// model's options. Pure functions; thread-safe.

#include <torch/torch.h>

#include "omnidp/models/hv15/configs.hpp"

namespace omnidp::models::hv15 {

// The inputs of one forward pass. Masks are 1/0 (any dtype) with the text's [B, L] shape.
struct TransformerInputs {
  torch::Tensor hidden_states;             // [B, in_channels, F, H, W]
  torch::Tensor timestep;                  // [B] (0..1000)
  torch::Tensor encoder_hidden_states;     // [B, L, text_embed_dim] (Qwen2.5-VL)
  torch::Tensor encoder_attention_mask;    // [B, L]
  torch::Tensor encoder_hidden_states_2;   // [B, L2, text_embed_2_dim] (byT5)
  torch::Tensor encoder_attention_mask_2;  // [B, L2]
  torch::Tensor image_embeds;              // [B, Li, image_embed_dim]; undefined or all 0 = t2v
  torch::Tensor timestep_r;                // [B], only with use_meanflow; may be undefined
};

// ModelError (context HunyuanVideo15Transformer3DModel) naming the first input whose shape does
// not fit `options`: hidden_states [B, in_channels, F, H, W] in whole patches, one timestep per
// entry, each text [B, L, its width] with a [B, L] mask, image_embeds [B, Li, image_embed_dim]
// when given, timestep_r one per entry when given to a meanflow model.
void check_transformer_inputs(const TransformerOptions& options, const TransformerInputs& in);

}  // namespace omnidp::models::hv15
