#pragma once
// HunyuanVideo-1.5's original checkpoint names for LoRA files in the original-name formats
// (Kohya / ComfyUI `diffusion_model.double_blocks.N.img_attn_q`, musubi-tuner's flattened
// `lora_unet_double_blocks_N_img_attn_q`), as diffusers' scripts/convert_hunyuan_video1_5_to_
// diffusers.py renames the checkpoint (docs/models.md, "LoRA"). Not mapped, so such keys are
// refused with their names: the token refiner's fused `self_attn_qkv` (one matrix for three
// Diffusers layers) and `final_layer.adaLN_modulation.1` (the converter swaps its halves).
// Thread-safe (pure functions).

#include <string>
#include <vector>

#include "omnidp/models/weights/lora.hpp"

namespace omnidp::models::hv15 {

[[nodiscard]] LoraNameMap hv15_lora_names();
// Every original module name the map knows, a block index written as <N>.
[[nodiscard]] std::vector<std::string> hv15_lora_original_names();

}  // namespace omnidp::models::hv15
