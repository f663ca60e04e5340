#pragma once
// The model FLOPs of a Wan2.2 request (docs/performance.md, "MFU"): the transformer's
// forwards (wan_forward_flops, the one definition the benchmarks use too), the VAE's
// convolutions and attention, the text encoder. 2 FLOPs per multiply-add; norms, activations,
// resampling copies and the scheduler are not counted. Plain functions, thread-safe.

#include <cstdint>

#include "omnidp/models/pipeline.hpp"
#include "omnidp/models/wan/transformer.hpp"
#include "omnidp/models/wan/vae.hpp"

namespace omnidp::models::wan {

// FLOPs of one forward as docs/performance.md counts them, generalised to the options:
// L x [2N(4D^2 + 2 D^2 + 2DF) + 4N^2 D + 4N*Lc*D + 4*Lc*D^2] with N video tokens, Lc text
// tokens, D = inner_dim, F = ffn_dim, L = num_layers (the self-attention q,k,v,o projections
// 4D^2, the cross-attention q,o 2D^2, the FFN 2DF; the cross k,v over the text: 4 Lc D^2);
// with Li image tokens, + L x (4N*Li*D + 4*Li*D^2) for the added K/V attention.
[[nodiscard]] double wan_forward_flops(const WanTransformerOptions& options, std::int64_t tokens,
                                       std::int64_t text_tokens, std::int64_t image_tokens = 0);

// The decoder (post_quant_conv included) on `latent_frames` x h x w latents, stage by stage as
// vae_blocks.cpp runs them: every causal conv keeps the frame count and (padding 1) the size;
// an up block's time_conv (3x1x1, C -> 2C) runs on every frame but the video's first, which it
// doubles (F -> 1 + 2(F - 1)); the spatial upsample's 3x3 conv runs at twice the size; the mid
// block's attention is one head over each frame's pixels (4 P C^2 + 2 P^2 C MACs per frame).
// Conv MACs = output elements x input channels x kernel volume.
[[nodiscard]] double wan_vae_decode_flops(const AutoencoderKLWanOptions& options,
                                          std::int64_t latent_frames, std::int64_t latent_height,
                                          std::int64_t latent_width);
// The encoder (quant_conv included) on a video of `frames` frames (1 + 4k are encoded, as the
// reference) of height x width: the temporal convs do not run on the first frame.
[[nodiscard]] double wan_vae_encode_flops(const AutoencoderKLWanOptions& options, std::int64_t frames,
                                          std::int64_t height, std::int64_t width);
// wan_vae_encode_flops of one frame (an expand_timesteps i2v image).
[[nodiscard]] double wan_vae_encode_image_flops(const AutoencoderKLWanOptions& options,
                                                std::int64_t height, std::int64_t width);

// What a request's count needs beyond the model options.
struct WanFlopsInputs {
  int num_frames = 0;  // after the pipeline's rounding (4k + 1)
  int height = 0;      // after rounding to the size multiple
  int width = 0;
  int num_inference_steps = 0;
  bool cfg = false;                         // guidance_scale > 1: a second forward per step
  bool i2v = false;                         // the image is VAE-encoded once
  std::int64_t text_tokens = 512;           // the transformer's context length (prompt)
  std::int64_t negative_text_tokens = 512;  // ... and the negative prompt's (with CFG)
  double text_flops = 0.0;                  // the text encoder's (text/flops.hpp), precomputed
  std::int64_t image_tokens = 0;  // CLIP tokens in every cross-attention (Wan2.1 I2V), or 0
  double image_flops = 0.0;       // the image encoder's (vision/flops.hpp), precomputed
};

// transformer = steps x (wan_forward_flops(N, text_tokens, image_tokens) + cfg x
// wan_forward_flops(N, negative_text_tokens, image_tokens)) with N the patchified latent
// tokens; vae = decode (+ the image encode for i2v); text = text_flops; image = image_flops.
[[nodiscard]] RequestFlops wan_request_flops(const WanTransformerOptions& transformer,
                                             const AutoencoderKLWanOptions& vae,
                                             const WanFlopsInputs& in);

}  // namespace omnidp::models::wan
