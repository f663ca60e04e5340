// The HunyuanVideo-1.5 transformer's input check: each wrong shape named.
#include "omnidp/models/hv15/transformer_inputs.hpp"

#include <gtest/gtest.h>

#include <string>

#include "omnidp/common/error.hpp"

namespace hv = omnidp::models::hv15;

namespace {

hv::TransformerOptions options() {
  return hv::TransformerOptions{.in_channels = 5,
                                .num_attention_heads = 2,
                                .attention_head_dim = 8,
                                .text_embed_dim = 24,
                                .text_embed_2_dim = 20,
                                .image_embed_dim = 12};
}

hv::TransformerInputs inputs() {
  hv::TransformerInputs in;
  in.hidden_states = torch::zeros({1, 5, 2, 4, 6});
  in.timestep = torch::zeros({1});
  in.encoder_hidden_states = torch::zeros({1, 3, 24});
  in.encoder_attention_mask = torch::ones({1, 3});
  in.encoder_hidden_states_2 = torch::zeros({1, 2, 20});
  in.encoder_attention_mask_2 = torch::ones({1, 2});
  return in;
}

std::string error(const hv::TransformerInputs& in) {
  try {
    hv::check_transformer_inputs(options(), in);
  } catch (const omnidp::ModelError& e) {
    return e.what();
  }
  return "";
}

TEST(Hv15TransformerInputs, NamesTheFirstInputThatDoesNotFit) {
  EXPECT_EQ(error(inputs()), "");
  auto in = inputs();
  in.hidden_states = torch::zeros({1, 4, 2, 4, 6});
  EXPECT_NE(error(in).find("hidden_states has 4 channels, the model 5"), std::string::npos);
  in = inputs();
  in.timestep = torch::zeros({2});
  EXPECT_NE(error(in).find("timestep must have one value per batch entry"), std::string::npos);
  in = inputs();
  in.encoder_attention_mask = torch::ones({1, 9});
  EXPECT_NE(error(in).find("encoder_hidden_states mask must be [B, L]"), std::string::npos);
  in = inputs();
  in.image_embeds = torch::zeros({1, 4, 11});
  EXPECT_NE(error(in).find("image_embeds must be [B, L, 12]"), std::string::npos);
}

}  // namespace
