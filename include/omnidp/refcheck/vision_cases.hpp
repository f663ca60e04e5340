#pragma once
// Refcheck runners of the image encoders (see refcheck.hpp for the runner contract, checks.hpp for what runners share).

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// SiglipVisionModel + SiglipImageProcessor. The case folder holds the transformers model
// (config.json + safetensors), its preprocessor_config.json and io.safetensors with
// `image_rgb_uint8` [H, W, 3], `pixel_values` and `last_hidden_state`. Checks `pixel_values`
// (our processor on the image; exact) and `last_hidden_state` (the model on the reference
// pixel_values, so that each check sees only its own error; forward tolerance). Every size
// comes from the case files.
[[nodiscard]] CaseRunner run_siglip_vision;

}  // namespace omnidp::refcheck
