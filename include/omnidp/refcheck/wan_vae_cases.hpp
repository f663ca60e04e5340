#pragma once
// Refcheck runner for the Wan2.2 VAE case (AutoencoderKLWan; see refcheck.hpp for the runner
// contract).

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// A folder with the VAE (config.json + safetensors, the Diffusers `vae/` layout) and
// io.safetensors. Checks, each where its tensors are present:
//   `decoded` = decode(`latents`) (raw latents);
//   `encoded_mean` / `encoded_logvar` = encode(`image`) latent distribution.
// Forward tolerance (1e-4 in float32). Shapes, sizes and frame counts come from the files.
[[nodiscard]] CaseRunner run_wan_vae;

}  // namespace omnidp::refcheck
