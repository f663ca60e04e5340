#include "omnidp/models/hv15/lora_names.hpp"

namespace omnidp::models::hv15 {
namespace {

const LoraNameTables& tables() {
  static const LoraNameTables t{
      {// double_blocks.N.<original> -> transformer_blocks.N.<Diffusers>
       {"double_blocks.",
        "transformer_blocks.",
        {{"img_mod.linear", "norm1.linear"},
         {"txt_mod.linear", "norm1_context.linear"},
         {"img_attn_q", "attn.to_q"},
         {"img_attn_k", "attn.to_k"},
         {"img_attn_v", "attn.to_v"},
         {"img_attn_q_norm", "attn.norm_q"},
         {"img_attn_k_norm", "attn.norm_k"},
         {"img_attn_proj", "attn.to_out.0"},
         {"txt_attn_q", "attn.add_q_proj"},
         {"txt_attn_k", "attn.add_k_proj"},
         {"txt_attn_v", "attn.add_v_proj"},
         {"txt_attn_q_norm", "attn.norm_added_q"},
         {"txt_attn_k_norm", "attn.norm_added_k"},
         {"txt_attn_proj", "attn.to_add_out"},
         {"img_mlp.fc1", "ff.net.0.proj"},
         {"img_mlp.fc2", "ff.net.2"},
         {"txt_mlp.fc1", "ff_context.net.0.proj"},
         {"txt_mlp.fc2", "ff_context.net.2"}}},
       {"txt_in.individual_token_refiner.blocks.",
        "context_embedder.token_refiner.refiner_blocks.",
        {{"norm1", "norm1"},
         {"self_attn_proj", "attn.to_out.0"},
         {"norm2", "norm2"},
         {"mlp.fc1", "ff.net.0.proj"},
         {"mlp.fc2", "ff.net.2"},
         {"adaLN_modulation.1", "norm_out.linear"}}}},
      {{"time_in.mlp.0", "time_embed.timestep_embedder.linear_1"},
       {"time_in.mlp.2", "time_embed.timestep_embedder.linear_2"},
       {"time_r_in.mlp.0", "time_embed.timestep_embedder_r.linear_1"},
       {"time_r_in.mlp.2", "time_embed.timestep_embedder_r.linear_2"},
       {"txt_in.t_embedder.mlp.0", "context_embedder.time_text_embed.timestep_embedder.linear_1"},
       {"txt_in.t_embedder.mlp.2", "context_embedder.time_text_embed.timestep_embedder.linear_2"},
       {"txt_in.c_embedder.linear_1", "context_embedder.time_text_embed.text_embedder.linear_1"},
       {"txt_in.c_embedder.linear_2", "context_embedder.time_text_embed.text_embedder.linear_2"},
       {"txt_in.input_embedder", "context_embedder.proj_in"},
       {"byt5_in.layernorm", "context_embedder_2.norm"},
       {"byt5_in.fc1", "context_embedder_2.linear_1"},
       {"byt5_in.fc2", "context_embedder_2.linear_2"},
       {"byt5_in.fc3", "context_embedder_2.linear_3"},
       {"vision_in.proj.0", "image_embedder.norm_in"},
       {"vision_in.proj.1", "image_embedder.linear_1"},
       {"vision_in.proj.3", "image_embedder.linear_2"},
       {"vision_in.proj.4", "image_embedder.norm_out"},
       {"img_in.proj", "x_embedder.proj"},
       {"cond_type_embedding", "cond_type_embed"},
       {"final_layer.linear", "proj_out"}}};
  return t;
}

}  // namespace

std::vector<std::string> hv15_lora_original_names() { return tables().originals(); }

LoraNameMap hv15_lora_names() {
  LoraNameMap map;
  map.module = [](const std::string& original) { return tables().module(original); };
  map.musubi = [](const std::string& flat) {
    static const std::vector<std::string> originals = hv15_lora_original_names();
    return unflatten_lora_name(flat, originals);
  };
  return map;
}

}  // namespace omnidp::models::hv15
