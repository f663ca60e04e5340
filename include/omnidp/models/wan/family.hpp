#pragma once
// The Wan family (docs/models.md, "The Wan family"): which checkpoint a Diffusers snapshot holds,
// read from its JSON files without loading weights, and the built-in configurations of the
// released checkpoints and of their tiny CPU variants.
//
//   name               transformer(s)                     in -> out  image        VAE
//   wan2.1-t2v-1.3b    30 x 1536, 12 heads, FFN 8960      16 -> 16   -            Wan2.1
//   wan2.1-t2v-14b     40 x 5120, 40 heads, FFN 13824     16 -> 16   -            Wan2.1
//   wan2.1-i2v-14b     as 14B, image_dim 1280             36 -> 16   CLIP         Wan2.1
//   wan2.2-t2v-a14b    two experts as 14B                 16 -> 16   -            Wan2.1
//   wan2.2-i2v-a14b    two experts as 14B                 36 -> 16   latents      Wan2.1
//   wan2.2-ti2v-5b     30 x 3072, 24 heads, FFN 14336     48 -> 48   latents      Wan2.2
//
// Thread-safe (pure functions over files and immutable tables).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/models/wan/transformer.hpp"
#include "omnidp/models/wan/vae.hpp"

namespace omnidp::models::wan {

// What a checkpoint is made of: the pipeline's settings and its components' configurations.
struct WanLayout {
  bool image_to_video = false;           // WanImageToVideoPipeline (TI2V-5B: both tasks)
  bool expand_timesteps = false;         // Wan2.2-TI2V-5B
  std::optional<double> boundary_ratio;  // with a second transformer (Wan2.2-A14B)
  WanTransformerOptions transformer;
  std::optional<WanTransformerOptions> transformer_2;
  AutoencoderKLWanOptions vae;
  bool image_encoder = false;  // image_encoder/ + image_processor/ (Wan2.1 I2V: CLIP)
  std::string origin;          // the snapshot folder, or "built-in <name>"
};

// The released name a layout matches ("wan2.2-t2v-a14b"), or "" for none. Decided by the
// structure (experts, input channels, timestep layout, image encoder, VAE layout; the width only
// tells wan2.1-t2v-1.3b (1536) from wan2.1-t2v-14b (5120)), not by the depth or the other
// widths, so that a snapshot with fewer or narrower layers still names its family member.
[[nodiscard]] std::string wan_variant_name(const WanLayout& layout);
// One line: "two experts, 40 blocks of 5120, 16 input channels, Wan2.1 VAE".
[[nodiscard]] std::string describe_wan_layout(const WanLayout& layout);

// Reads a Diffusers snapshot folder's model_index.json, transformer/config.json (and
// transformer_2/), vae/config.json and whether image_encoder/ + image_processor/ are there, and
// checks that they fit together. A missing file, a transformer_2 without boundary_ratio (or the
// reverse), an image_encoder/ without image_processor/ (or without a transformer with
// image_dim, or the reverse, or of another width), a 36-channel transformer under the
// text-to-video class (or the reverse), a VAE whose z_dim is not the transformer's latent width
// (the other layout), or two experts that disagree are WeightsErrors naming the file.
[[nodiscard]] WanLayout read_wan_snapshot(const std::filesystem::path& root);

// The built-in layout of a registered name with `weights: random` and no model.path: the
// released configurations (wan2.1-t2v-1.3b ... wan2.2-ti2v-5b) and the tiny ones (tiny-wan,
// tiny-wan2.1-t2v, tiny-wan2.2-t2v-a14b, tiny-wan2.2-i2v-a14b, tiny-wan2.1-i2v: the
// repository's fixtures' configurations). nullopt for another name.
[[nodiscard]] std::optional<WanLayout> builtin_wan_layout(std::string_view name);

// Every registered Wan name: "wan" (the variant read from the snapshot), the released names
// and the tiny ones.
[[nodiscard]] const std::vector<std::string>& wan_model_names();

// The layout that `model.name` with `model.path` / `model.weights` runs: the snapshot's (read
// and, for a released name, checked to be that checkpoint: a ConfigError on model.name saying
// what the snapshot holds), else the built-in one. `wan` without a snapshot, and a tiny name
// with pretrained weights, are ConfigErrors.
[[nodiscard]] WanLayout resolve_wan_layout(const std::string& name, const std::string& path,
                                           bool pretrained);

}  // namespace omnidp::models::wan
