#pragma once
// The input key of a request (docs/manifest.md): the SHA-256 of a canonical encoding of
// everything that determines its output. The byte format is fixed and documented in
// docs/manifest.md ("Input key"); changing it changes every key, so it is versioned ("v1").
// Pure functions; thread-safe.

#include <string>

#include "omnidp/manifest/request.hpp"

namespace omnidp {

// A one-line JSON array, no spaces, in this order:
//   ["omnidp-input-key-v1", model_name, weights_identity, task, prompt, negative_prompt, seed,
//    num_frames, height, width, num_inference_steps, guidance_scale, flow_shift,
//    image_sha256, prompt_embeds_sha256]
// then, only when set, "guidance_scale_2", value, "last_image", last_image_sha256 and "cache",
// describe_cache(line's cache) before the closing bracket (so that the keys of the requests
// without them are unchanged).
// Strings escaped as JSON (\" \\ \b \f \n \r \t, other bytes < 0x20 as \u00xx, the rest as
// UTF-8 bytes), integers in decimal, doubles as the shortest round-trip std::to_chars form
// (-0 written as 0). The id, fps, paths, line and index are not part of it.
[[nodiscard]] std::string canonical_encoding(const Request& request, const std::string& model_name,
                                             const std::string& weights_identity);

// Lower-case hex SHA-256 of canonical_encoding().
[[nodiscard]] std::string compute_input_key(const Request& request, const std::string& model_name,
                                            const std::string& weights_identity);

}  // namespace omnidp
