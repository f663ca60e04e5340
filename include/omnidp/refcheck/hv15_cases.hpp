#pragma once
// Refcheck runners of the HunyuanVideo-1.5 cases (see refcheck.hpp for the runner contract,
// checks.hpp for what runners share). Everything is read from the case folder: config.json +
// diffusion_pytorch_model.safetensors (the model) and io.safetensors (inputs and expected outputs),
// so other sizes and seeds of the same layout work.

#include <functional>
#include <memory>

#include "omnidp/models/layers/image_encoder.hpp"
#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// hv15_transformer: forward(hidden_states, timestep, encoder_hidden_states,
// encoder_attention_mask, encoder_hidden_states_2, encoder_attention_mask_2, image_embeds)
// against `out`, with padded text tokens masked ("out") and, for batch 1, dropped
// ("out_drop_padding"). Tolerance: forward.
[[nodiscard]] CaseRunner run_hv15_transformer;

// hv15_vae: decode(latents) against `decoded`; when the folder also holds `image` (or `video`)
// [B, 3, F, H, W] and `encoded_mean` (optionally `encoded_logvar`), the posterior of
// encode(image) against them (the wan22_vae case's names). Tolerance: forward.
[[nodiscard]] CaseRunner run_hv15_vae;

// hv15_pipeline_t2v: HunyuanVideo15Pipeline from given embeddings. case.json: num_frames,
// height, width, steps, latents_seed, `transformer` / `vae` folders (relative to the case),
// guidance_scale and flow_shift (which must agree with the configs); guider/ and scheduler/
// hold the ClassifierFreeGuidance and FlowMatchEulerDiscreteScheduler configs (config.json or
// guider_config.json / scheduler_config.json). io.safetensors: `latents` (the initial noise),
// prompt_embeds(_mask)(_2) and the negative_ ones, expected `final_latents` and `video`.
// Checks: noise_from_seed (randn_cpu(shape, latents_seed) == latents, exact; the run uses the
// seeded noise), final_latents and video (pipeline tolerance), video_uint8 (+-1 level).
[[nodiscard]] CaseRunner run_hv15_pipeline_t2v;

// Loads the image encoder + processor of an I2V case (folders `image_encoder` and
// `feature_extractor` of case.json, relative to the case).
using Hv15ImageEncoderLoader = std::function<std::unique_ptr<models::ImageEncoder>(
    const std::filesystem::path& encoder_dir, const std::filesystem::path& processor_dir,
    const RefcheckOptions& options)>;

// hv15_pipeline_i2v: HunyuanVideo15ImageToVideoPipeline from `image_rgb_uint8` [H, W, 3]:
// size_from_image (our bucket choice from the image and the transformer's target_size against
// case.json's height x width, exact), noise_from_seed, then, with the image tokens (io's
// `image_embeds` if present, else the loader's encoder on the resized and cropped image),
// final_latents, video, video_uint8 as t2v. Without tokens those two are SKIP ("needs the
// SigLIP image encoder"). The three-argument form has no loader.
[[nodiscard]] std::vector<CaseResult> run_hv15_pipeline_i2v(
    const std::filesystem::path& case_dir, const nlohmann::json& case_json,
    const RefcheckOptions& options, const Hv15ImageEncoderLoader& load_image_encoder);
[[nodiscard]] CaseRunner run_hv15_pipeline_i2v;

}  // namespace omnidp::refcheck
