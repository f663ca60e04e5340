#pragma once
// The Wan family's original checkpoint names for LoRA files in the original-name formats
// (Kohya / ComfyUI / LightX2V `diffusion_model.blocks.N.self_attn.q`, musubi-tuner's flattened
// `lora_unet_blocks_N_self_attn_q`), read as tables from diffusers'
// _convert_non_diffusers_wan_lora_to_diffusers and _convert_musubi_wan_lora_to_diffusers
// (docs/models.md, "LoRA"). Thread-safe (pure functions).

#include <string>
#include <vector>

#include "omnidp/models/weights/lora.hpp"

namespace omnidp::models::wan {

[[nodiscard]] LoraNameMap wan_lora_names();
// Every original module name the map knows, a block index written as <N>.
[[nodiscard]] std::vector<std::string> wan_lora_original_names();

}  // namespace omnidp::models::wan
