#include "omnidp/models/hv15/lora_names.hpp"

#include <map>
#include <regex>

namespace omnidp::models::hv15 {
namespace {

using Table = std::map<std::string, std::string, std::less<>>;

// double_blocks.N.<original> -> transformer_blocks.N.<Diffusers>
const Table& double_block() {
  static const Table t{{"img_mod.linear", "norm1.linear"},
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
                       {"txt_mlp.fc2", "ff_context.net.2"}};
  return t;
}

// txt_in.individual_token_refiner.blocks.N.<original> ->
// context_embedder.token_refiner.refiner_blocks.N.<Diffusers>
const Table& refiner_block() {
  static const Table t{{"norm1", "norm1"},      {"self_attn_proj", "attn.to_out.0"},
                       {"norm2", "norm2"},      {"mlp.fc1", "ff.net.0.proj"},
                       {"mlp.fc2", "ff.net.2"}, {"adaLN_modulation.1", "norm_out.linear"}};
  return t;
}

const Table& top_level() {
  static const Table t{
      {"time_in.mlp.0", "time_embed.timestep_embedder.linear_1"},
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
      {"final_layer.linear", "proj_out"}};
  return t;
}

const std::string kDouble = "double_blocks.";
const std::string kRefiner = "txt_in.individual_token_refiner.blocks.";

std::optional<std::string> module_name(const std::string& original) {
  static const std::regex block(
      R"((double_blocks|txt_in\.individual_token_refiner\.blocks)\.(\d+)\.(.+))");
  std::smatch m;
  if (std::regex_match(original, m, block)) {
    const bool is_double = m[1].str() == "double_blocks";
    const auto& table = is_double ? double_block() : refiner_block();
    const auto it = table.find(m[3].str());
    if (it == table.end()) return std::nullopt;
    return (is_double ? "transformer_blocks." : "context_embedder.token_refiner.refiner_blocks.") +
           m[2].str() + "." + it->second;
  }
  const auto it = top_level().find(original);
  if (it == top_level().end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<std::string> hv15_lora_original_names() {
  std::vector<std::string> out;
  for (const auto& [original, _] : double_block()) out.push_back(kDouble + "<N>." + original);
  for (const auto& [original, _] : refiner_block()) out.push_back(kRefiner + "<N>." + original);
  for (const auto& [original, _] : top_level()) out.push_back(original);
  return out;
}

LoraNameMap hv15_lora_names() {
  LoraNameMap map;
  map.module = module_name;
  map.musubi = [](const std::string& flat) {
    static const std::vector<std::string> originals = hv15_lora_original_names();
    return unflatten_lora_name(flat, originals);
  };
  return map;
}

}  // namespace omnidp::models::hv15
