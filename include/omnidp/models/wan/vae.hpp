#pragma once
// AutoencoderKLWan: the Wan video VAEs (Diffusers' autoencoder_kl_wan.py) in both layouts: the
// Wan2.1 one (z_dim 16, 4 x 8 x 8, no patchify; Wan2.1 and Wan2.2-A14B) and the `is_residual`
// one of Wan2.2-TI2V-5B (patch_size 2, z_dim 48, 4 x 16 x 16).
//
// Parameter names equal the Diffusers checkpoint names (`encoder.…`, `quant_conv.…`,
// `post_quant_conv.…`, `decoder.…`), so a snapshot's `vae/` folder loads strictly into it.
//
// decode() and encode() process the video in chunks of frames with a causal temporal cache
// (see vae_blocks.hpp): memory stays bounded by the chunk, and any frame count works
// (121 frames <-> 31 latent frames). The default chunking is the reference's (decode: one
// latent frame at a time; encode: the first frame, then 4 at a time); larger chunks give the
// same result up to float rounding and run faster on a GPU.
//
// dtype: the module computes in its parameters' dtype (float32, bfloat16 or float16: load
// the weights in that dtype); inputs are converted to it.
//
// Threading: decode()/encode() keep their streaming state on the stack, so concurrent calls
// on one module are safe as long as nobody modifies its parameters. Inference only (they
// disable autograd themselves).

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "omnidp/models/wan/vae_blocks.hpp"

namespace omnidp::models::wan {

// The fields of a Diffusers `vae/config.json` for AutoencoderKLWan.
struct AutoencoderKLWanOptions {
  std::int64_t base_dim = 160;
  std::int64_t decoder_base_dim = 256;  // config null -> base_dim
  std::int64_t z_dim = 48;
  std::vector<std::int64_t> dim_mult{1, 2, 4, 4};
  std::int64_t num_res_blocks = 2;
  std::vector<bool> temperal_downsample{false, true, true};  // the reference's spelling
  bool is_residual = true;
  std::int64_t in_channels = 12;   // after patchify: 3 * patch_size^2
  std::int64_t out_channels = 12;  // before unpatchify
  std::int64_t patch_size = 2;     // config null -> 1
  std::int64_t scale_factor_temporal = 4;
  std::int64_t scale_factor_spatial = 16;
  std::vector<double> latents_mean;  // z_dim values (config without them: the Wan2.1 values)
  std::vector<double> latents_std;

  // Parses config.json text. Attention scales and
  // inconsistent fields (dim_mult vs temperal_downsample lengths, latents_mean/std sizes) are
  // WeightsErrors naming `origin` (models/config_json.hpp: every config fault is one).
  [[nodiscard]] static AutoencoderKLWanOptions from_json_text(const std::string& text,
                                                              const std::string& origin);
  // Reads <dir>/config.json or the given config.json file. Throws WeightsError.
  [[nodiscard]] static AutoencoderKLWanOptions from_file(const std::filesystem::path& path);
  // Wan-AI/Wan2.2-TI2V-5B-Diffusers vae/config.json (with its latents_mean/std), for
  // `weights: random` builds of the real architecture.
  [[nodiscard]] static AutoencoderKLWanOptions wan22_ti2v_5b();
  // The Wan2.1 VAE (Wan-AI/Wan2.1-T2V-14B-Diffusers vae/config.json, also Wan2.2-A14B's).
  [[nodiscard]] static AutoencoderKLWanOptions wan21();
  // Throws WeightsError (naming `origin`) when the fields are inconsistent.
  void validate(const std::string& origin) const;
};

// encode() result: the DiagonalGaussianDistribution parameters, logvar clamped to [-30, 20]
// as the reference does. Each [B, z_dim, T, h, w]; mean is also the distribution's mode.
struct WanLatentDist {
  torch::Tensor mean;
  torch::Tensor logvar;
};

class AutoencoderKLWanImpl : public torch::nn::Module {
 public:
  explicit AutoencoderKLWanImpl(AutoencoderKLWanOptions options);

  // z [B, z_dim, T, h, w] (raw latents: no mean/std handling) -> video [B, 3, 1 + 4(T-1),
  // h*s, w*s] (s = scale_factor_spatial) in the module's dtype, clamped to [-1, 1] as the
  // reference's decode does. `chunk_frames` latent frames are decoded per step (1 = the reference).
  // Throws ModelError on a shape mismatch or chunk_frames < 1.
  [[nodiscard]] torch::Tensor decode(const torch::Tensor& z, std::int64_t chunk_frames = 1);

  // x [B, 3, F, H, W] in [-1, 1] (H, W multiples of scale_factor_spatial) -> latent distribution with
  // 1 + (F-1)/4 frames (trailing frames beyond 1 + 4k are dropped, as the reference does).
  // The first frame is encoded alone, then `chunk_frames` frames per step (a multiple of 4;
  // 4 = the reference). Throws ModelError on a shape mismatch or a bad chunk_frames.
  [[nodiscard]] WanLatentDist encode(const torch::Tensor& x, std::int64_t chunk_frames = 4);

  // The pipelines' latent normalisation with the config's latents_mean/std, in the
  // reference's arithmetic and dtype (the statistics are float32 values cast to z's dtype):
  // normalize = (z - mean) * (1/std) (I2V condition latents), denormalize = z / (1/std) + mean
  // (before decode). Throw ModelError when the config has no latents_mean/std.
  [[nodiscard]] torch::Tensor normalize_latents(const torch::Tensor& z) const;
  [[nodiscard]] torch::Tensor denormalize_latents(const torch::Tensor& z) const;

  // on: stores the convolution weights channels-last (NDHWC, NHWC); cuDNN then runs the
  // convolutions, and the activations follow, in that layout. off: back to contiguous (the
  // default). Same results up to the convolution algorithms' rounding. Call after moving the
  // module; a later .to() keeps the layout only where libtorch preserves it.
  void set_channels_last(bool on);

  [[nodiscard]] const AutoencoderKLWanOptions& options() const noexcept { return options_; }
  // Frames of video for T latent frames, and the reverse (latent frames for F video frames).
  [[nodiscard]] std::int64_t video_frames(std::int64_t latent_frames) const noexcept;
  [[nodiscard]] std::int64_t latent_frames(std::int64_t video_frames) const noexcept;
  // The parameters' dtype and device.
  [[nodiscard]] torch::ScalarType dtype() const;
  [[nodiscard]] torch::Device device() const;

  WanEncoder3d encoder{nullptr};
  WanCausalConv3d quant_conv{nullptr}, post_quant_conv{nullptr};
  WanDecoder3d decoder{nullptr};

 private:
  // Runs the decoder over x (post_quant_conv already applied) chunk by chunk with one cache.
  // The unit a spatial tiling would call once per tile.
  [[nodiscard]] torch::Tensor decode_frames(const torch::Tensor& x, std::int64_t chunk_frames);
  [[nodiscard]] torch::Tensor latent_stat(const std::vector<double>& values, const char* name) const;

  AutoencoderKLWanOptions options_;
};
TORCH_MODULE(AutoencoderKLWan);

// Builds the VAE from a Diffusers `vae/` folder (config.json + safetensors, sharded or not)
// and loads its weights strictly in `dtype` on `device`. Throws WeightsError / ModelError.
[[nodiscard]] AutoencoderKLWan load_autoencoder_kl_wan(const std::filesystem::path& dir,
                                                       torch::ScalarType dtype, torch::Device device);

// Seeded random weights for `weights: random` and tiny-wan: init_random_weights(vae, seed)
// (weights/state_dict.hpp), then every RMS gain (`*.gamma`, shaped [C,1,1(,1)], which the
// generic rule would draw as a matrix) set to 1. bf16-exact; call before moving to a dtype
// or after, the values are the same.
void init_random_vae_weights(AutoencoderKLWanImpl& vae, std::uint64_t seed);

}  // namespace omnidp::models::wan
