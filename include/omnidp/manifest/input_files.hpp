#pragma once
// A request's input files (docs/manifest.md, "Inputs"): the image probed from its header (its
// size, input.max_image_pixels, the model's output size for it) and hashed, the embeddings
// file checked and hashed, through the job's file hash cache where there is one; then the
// request's input key. A defect becomes the request's input_error ("file:line:field: reason"):
// it fails that request only, never the job. Rank 0; not thread-safe (the hash cache).

#include <string>

#include "omnidp/manifest/request.hpp"

namespace omnidp {

struct ManifestOptions;

// Fills r.image_height/width, image_sha256, last_image_sha256, prompt_embeds_sha256 and
// input_key, or r.input_error. `file` names the manifest in errors; `size_given`: the line sets its
// height or width (then options.size_from_image is not applied).
void read_input_files(Request& r, bool size_given, const ManifestOptions& options,
                      const std::string& file);

}  // namespace omnidp
