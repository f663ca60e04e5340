#pragma once
// The transformer inputs of a diffusers-ref case's io.safetensors (hv15_transformer,
// hv15_transformer_i2v), by the reference's argument names, and seeded random ones.
#include <torch/torch.h>

#include <cstdint>

#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models::hv15::testing {

inline TransformerInputs fixture_inputs(const SafetensorsFile& io) {
  TransformerInputs in;
  in.hidden_states = io.tensor("hidden_states");
  in.timestep = io.tensor("timestep");
  in.encoder_hidden_states = io.tensor("encoder_hidden_states");
  in.encoder_attention_mask = io.tensor("encoder_attention_mask");
  in.encoder_hidden_states_2 = io.tensor("encoder_hidden_states_2");
  in.encoder_attention_mask_2 = io.tensor("encoder_attention_mask_2");
  in.image_embeds = io.tensor("image_embeds");
  return in;
}

// The hv15_transformer fixture's widths (Qwen 48, byT5 40, image 24; heads of 32 with rope axes
// 8 + 12 + 12, one refiner layer) with `heads` heads and `layers` double-stream blocks.
inline TransformerOptions fixture_width_options(std::int64_t heads, std::int64_t layers) {
  return TransformerOptions{.num_attention_heads = heads,
                            .attention_head_dim = 32,
                            .num_layers = layers,
                            .num_refiner_layers = 1,
                            .text_embed_dim = 48,
                            .text_embed_2_dim = 40,
                            .image_embed_dim = 24,
                            .rope_axes_dim = {8, 12, 12}};
}

// Random inputs with padding in the text (and the byT5 padding in the middle).
inline TransformerInputs random_inputs(const TransformerOptions& o, std::int64_t batch,
                                       bool with_image, std::uint64_t seed) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  TransformerInputs in;
  in.hidden_states = torch::randn({batch, o.in_channels, 2, 4, 6});
  in.timestep = torch::full({batch}, 731.25F);
  in.encoder_hidden_states = torch::randn({batch, 10, o.text_embed_dim});
  in.encoder_attention_mask = torch::ones({batch, 10});
  in.encoder_attention_mask.slice(1, 7).zero_();
  in.encoder_hidden_states_2 = torch::randn({batch, 6, o.text_embed_2_dim});
  in.encoder_attention_mask_2 = torch::ones({batch, 6});
  in.encoder_attention_mask_2.slice(1, 2, 4).zero_();
  in.image_embeds = with_image ? torch::randn({batch, 5, o.image_embed_dim})
                               : torch::zeros({batch, 5, o.image_embed_dim});
  return in;
}

}  // namespace omnidp::models::hv15::testing
