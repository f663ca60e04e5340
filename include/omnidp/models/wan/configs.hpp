#pragma once
// Embedded config.json texts of the registry's Wan models, parsed with the same code as a
// snapshot's files. Thread-safe (immutable strings).

#include <string>

namespace omnidp::models::wan {

// `tiny-wan`: the tiny configurations of the reference fixtures
// (fixtures/diffusers-ref/wan_transformer/config.json and wan22_vae/config.json).
[[nodiscard]] const std::string& tiny_wan_transformer_config();
[[nodiscard]] const std::string& tiny_wan_vae_config();
// `wan2.2-ti2v-5b`: Wan-AI/Wan2.2-TI2V-5B-Diffusers transformer/config.json (the VAE's is
// AutoencoderKLWanOptions::wan22_ti2v_5b()).
[[nodiscard]] const std::string& wan22_ti2v_5b_transformer_config();

}  // namespace omnidp::models::wan
