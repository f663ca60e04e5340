#pragma once
// Refcheck runners of the HunyuanVideo-1.5 cases (see refcheck.hpp for the runner contract).
// Everything is read from the case folder: config.json + diffusion_pytorch_model.safetensors
// (the model) and io.safetensors (inputs and expected outputs), so other sizes and seeds of
// the same layout work.

#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {

// hv15_transformer: forward(hidden_states, timestep, encoder_hidden_states,
// encoder_attention_mask, encoder_hidden_states_2, encoder_attention_mask_2, image_embeds)
// against `out`, with padded text tokens masked ("out") and, for batch 1, dropped
// ("out_drop_padding"). Tolerance: forward.
[[nodiscard]] std::vector<CaseResult> run_hv15_transformer(const std::filesystem::path& case_dir,
                                                           const nlohmann::json& case_json,
                                                           const RefcheckOptions& options);

// hv15_vae: decode(latents) against `decoded`; when the folder also holds `image` (or `video`)
// [B, 3, F, H, W] and `encoded_mean` (optionally `encoded_logvar`), the posterior of
// encode(image) against them (the wan22_vae case's names). Tolerance: forward.
[[nodiscard]] std::vector<CaseResult> run_hv15_vae(const std::filesystem::path& case_dir,
                                                   const nlohmann::json& case_json,
                                                   const RefcheckOptions& options);

}  // namespace omnidp::refcheck
