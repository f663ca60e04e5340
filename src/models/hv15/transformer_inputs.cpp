#include "omnidp/models/hv15/transformer_inputs.hpp"

#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp::models::hv15 {

void check_transformer_inputs(const TransformerOptions& o, const TransformerInputs& in) {
  auto fail = [](const std::string& what) {
    throw ModelError(what, {"HunyuanVideo15Transformer3DModel"});
  };
  if (!in.hidden_states.defined() || in.hidden_states.dim() != 5)
    fail("hidden_states must be [B, C, F, H, W]");
  const auto b = in.hidden_states.size(0);
  if (in.hidden_states.size(1) != o.in_channels) {
    fail("hidden_states has " + std::to_string(in.hidden_states.size(1)) + " channels, the model " +
         std::to_string(o.in_channels));
  }
  if (in.hidden_states.size(2) % o.patch_size_t != 0 ||
      in.hidden_states.size(3) % o.patch_size != 0 || in.hidden_states.size(4) % o.patch_size != 0) {
    fail("hidden_states frames/height/width are not multiples of the patch size");
  }
  if (!in.timestep.defined() || in.timestep.numel() != b)
    fail("timestep must have one value per batch entry");
  auto check_text = [&](const torch::Tensor& x, const torch::Tensor& mask, std::int64_t dim,
                        const char* name) {
    if (!x.defined() || x.dim() != 3 || x.size(0) != b || x.size(2) != dim) {
      fail(std::string(name) + " must be [B, L, " + std::to_string(dim) + "]");
    }
    if (!mask.defined() || mask.dim() != 2 || mask.size(0) != b || mask.size(1) != x.size(1)) {
      fail(std::string(name) + " mask must be [B, L]");
    }
  };
  check_text(in.encoder_hidden_states, in.encoder_attention_mask, o.text_embed_dim,
             "encoder_hidden_states");
  check_text(in.encoder_hidden_states_2, in.encoder_attention_mask_2, o.text_embed_2_dim,
             "encoder_hidden_states_2");
  if (in.image_embeds.defined() && (in.image_embeds.dim() != 3 || in.image_embeds.size(0) != b ||
                                    in.image_embeds.size(2) != o.image_embed_dim)) {
    fail("image_embeds must be [B, L, " + std::to_string(o.image_embed_dim) + "]");
  }
  if (o.use_meanflow && in.timestep_r.defined() && in.timestep_r.numel() != b) {
    fail("timestep_r must have one value per batch entry");
  }
}

}  // namespace omnidp::models::hv15
