#pragma once
// Refcheck runners of the Wan2.2 transformer and pipelines (see refcheck.hpp for the runner
// contract). Every shape, seed, step count and guidance comes from the case files.

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// Folder with the transformer (config.json + safetensors) and io.safetensors holding
// `hidden_states`, `encoder_hidden_states` and, each where present, `timestep` ->
// `out_scalar_t` and `timestep_per_token` -> `out_per_token_t`. Forward tolerance.
[[nodiscard]] CaseRunner run_wan_transformer;

// WanPipeline(expand_timesteps=True) text-to-video: case.json gives height, width, num_frames,
// steps, guidance_scale, optional flow_shift (else the `flow_shift=` in its `scheduler` text,
// else 5), optional latents_seed, and the `transformer` / `vae` folders (relative to the case).
// io.safetensors: `latents` (initial noise), `prompt_embeds`, `negative_prompt_embeds`,
// expected `video` [1, F, H, W, 3] and optionally `final_latents`. Checks: `noise_from_seed`
// (randn_cpu(shape, latents_seed) == latents, exact) when latents_seed is given,
// `final_latents` and `video` (pipeline tolerance), `video_uint8` (round(255 x video) within
// +-1 level everywhere; the error column is the largest difference in levels).
[[nodiscard]] CaseRunner run_wan_pipeline_t2v;

// WanImageToVideoPipeline(expand_timesteps=True): as t2v plus `image_rgb_uint8` [H, W, 3]
// (0..255 as float32), preprocessed as the reference does.
[[nodiscard]] CaseRunner run_wan_pipeline_i2v;

}  // namespace omnidp::refcheck
