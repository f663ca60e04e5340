#pragma once
// The transformer inputs of a diffusers-ref case's io.safetensors (hv15_transformer,
// hv15_transformer_i2v), by the reference's argument names.
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

}  // namespace omnidp::models::hv15::testing
