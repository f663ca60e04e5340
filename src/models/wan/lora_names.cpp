#include "omnidp/models/wan/lora_names.hpp"

#include <regex>

namespace omnidp::models::wan {
namespace {

const LoraNameTables& tables() {
  static const LoraNameTables t{
      {// blocks.N.<original> -> blocks.N.<Diffusers>
       {"blocks.",
        "blocks.",
        {{"self_attn.q", "attn1.to_q"},
         {"self_attn.k", "attn1.to_k"},
         {"self_attn.v", "attn1.to_v"},
         {"self_attn.o", "attn1.to_out.0"},
         {"self_attn.norm_q", "attn1.norm_q"},
         {"self_attn.norm_k", "attn1.norm_k"},
         {"cross_attn.q", "attn2.to_q"},
         {"cross_attn.k", "attn2.to_k"},
         {"cross_attn.v", "attn2.to_v"},
         {"cross_attn.o", "attn2.to_out.0"},
         {"cross_attn.norm_q", "attn2.norm_q"},
         {"cross_attn.norm_k", "attn2.norm_k"},
         {"cross_attn.k_img", "attn2.add_k_proj"},
         {"cross_attn.v_img", "attn2.add_v_proj"},
         {"cross_attn.norm_k_img", "attn2.norm_added_k"},
         {"ffn.0", "ffn.net.0.proj"},
         {"ffn.2", "ffn.net.2"},
         {"norm3", "norm2"}}}},
      {{"patch_embedding", "patch_embedding"},
       {"time_projection.1", "condition_embedder.time_proj"},
       {"head.head", "proj_out"},
       {"text_embedding.0", "condition_embedder.text_embedder.linear_1"},
       {"text_embedding.2", "condition_embedder.text_embedder.linear_2"},
       {"time_embedding.0", "condition_embedder.time_embedder.linear_1"},
       {"time_embedding.2", "condition_embedder.time_embedder.linear_2"},
       {"img_emb.proj.0", "condition_embedder.image_embedder.norm1"},
       {"img_emb.proj.1", "condition_embedder.image_embedder.ff.net.0.proj"},
       {"img_emb.proj.3", "condition_embedder.image_embedder.ff.net.2"},
       {"img_emb.proj.4", "condition_embedder.image_embedder.norm2"}}};
  return t;
}

// A parameter that is not a module's weight or bias, by its full name.
std::optional<std::string> parameter_name(const std::string& original) {
  static const std::regex modulation(R"(blocks\.(\d+)\.modulation)");
  std::smatch m;
  if (std::regex_match(original, m, modulation))
    return "blocks." + m[1].str() + ".scale_shift_table";
  if (original == "head.modulation") return std::string("scale_shift_table");
  if (original == "img_emb.emb_pos")
    return std::string("condition_embedder.image_embedder.pos_embed");
  return std::nullopt;
}

}  // namespace

std::vector<std::string> wan_lora_original_names() { return tables().originals(); }

LoraNameMap wan_lora_names() {
  LoraNameMap map;
  map.module = [](const std::string& original) { return tables().module(original); };
  map.parameter = parameter_name;
  // musubi-tuner trains the blocks' attention and FFN layers.
  map.musubi = [](const std::string& flat) {
    static const std::vector<std::string> originals{
        "blocks.<N>.self_attn.q",      "blocks.<N>.self_attn.k",  "blocks.<N>.self_attn.v",
        "blocks.<N>.self_attn.o",      "blocks.<N>.cross_attn.q", "blocks.<N>.cross_attn.k",
        "blocks.<N>.cross_attn.v",     "blocks.<N>.cross_attn.o", "blocks.<N>.cross_attn.k_img",
        "blocks.<N>.cross_attn.v_img", "blocks.<N>.ffn.0",        "blocks.<N>.ffn.2"};
    return unflatten_lora_name(flat, originals);
  };
  return map;
}

}  // namespace omnidp::models::wan
