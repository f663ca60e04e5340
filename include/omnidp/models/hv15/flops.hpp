#pragma once
// The model FLOPs of a HunyuanVideo-1.5 request (docs/performance.md, "MFU"): the
// transformer's forwards, the VAE's convolutions and attention, the image encoder of i2v; the
// text encoders' come from TextEncoder::encode_cost. 2 FLOPs per multiply-add; norms,
// activations, resampling copies and the scheduler are not counted. Plain functions.

#include <cstdint>

#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/hv15/vae.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models::hv15 {

// One transformer forward, joint attention over S = N video + T text tokens (the valid Qwen,
// byT5 and image tokens: padding is not model work), width D, FFN width F = mlp_ratio x D, L
// blocks: L x [2S(4D^2 + 2DF) + 4 S^2 D]. The token refiner, embedders and head are left out
// (< 1% at real sizes). omni-dp-bench-hv15 reports this figure.
[[nodiscard]] double hv15_forward_flops(const TransformerOptions& options,
                                        std::int64_t video_tokens, std::int64_t text_tokens);

// The VAE decoder on latent_frames x h x w latents: every causal conv is 3x3x3 and keeps the
// frame count and size; an upsampler's conv (C -> C' x 4, or x 8 in time) runs before the
// rearrange that doubles the size (and the frames but the first: F -> 1 + 2(F - 1)); the mid
// block's attention is one head, block-causal over frames (frame i's P queries see (i + 1) P
// keys: 2 C P^2 F (F + 1) / 2 MACs for scores and values), with 1x1x1 q, k, v, out projections.
[[nodiscard]] double hv15_vae_decode_flops(const VaeOptions& options, std::int64_t latent_frames,
                                           std::int64_t latent_height, std::int64_t latent_width);
// The encoder on one frame of height x width (the i2v image).
[[nodiscard]] double hv15_vae_encode_image_flops(const VaeOptions& options, std::int64_t height,
                                                 std::int64_t width);

// What a request's count needs beyond the model options.
struct Hv15FlopsInputs {
  int num_frames = 0;
  int height = 0;
  int width = 0;
  int num_inference_steps = 0;
  int cfg_steps = 0;                      // steps that run the negative branch too
  bool i2v = false;                       // the image is VAE-encoded once
  std::int64_t text_tokens = 0;           // valid Qwen + byT5 (+ image) tokens of the prompt
  std::int64_t negative_text_tokens = 0;  // ... of the negative prompt
  double text_flops = 0.0;                // the text encoders' (TextEncoder::encode_cost)
  double image_flops = 0.0;               // the image encoder's (SigLIP), precomputed
};

// transformer = steps x forward(N, text_tokens) + cfg_steps x forward(N, negative_text_tokens)
// with N the patchified latent tokens; vae = decode (+ the image encode for i2v).
[[nodiscard]] RequestFlops hv15_request_flops(const TransformerOptions& transformer,
                                              const VaeOptions& vae, const Hv15FlopsInputs& in);

}  // namespace omnidp::models::hv15
