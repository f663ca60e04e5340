#pragma once
// HunyuanVideo-1.5 causal 3D VAE (Diffusers `AutoencoderKLHunyuanVideo15`): 32 latent
// channels, 4x temporal and 16x spatial compression, DC-AE style pixel-shuffle up/down
// sampling with channel-repeat / channel-mean shortcuts, block-causal attention in the mid
// blocks, RMS norms. Submodules carry the checkpoint's names (`decoder.up_blocks.0...`), so a
// Diffusers `vae/` folder loads unchanged.
//
// Not thread-safe (one replica per thread).

#include <torch/torch.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace omnidp::models::hv15 {

// config.json of the `vae/` folder; defaults are the released model.
struct VaeOptions {
  std::int64_t in_channels = 3;
  std::int64_t out_channels = 3;
  std::int64_t latent_channels = 32;
  std::vector<std::int64_t> block_out_channels{128, 256, 512, 1024, 1024};
  std::int64_t layers_per_block = 2;
  std::int64_t spatial_compression_ratio = 16;
  std::int64_t temporal_compression_ratio = 4;
  bool downsample_match_channel = true;
  bool upsample_match_channel = true;
  double scaling_factor = 1.03682;

  // Absent keys keep the defaults. Throws WeightsError naming `origin` on bad values.
  [[nodiscard]] static VaeOptions from_json(const nlohmann::json& config, const std::string& origin);
};

// Conv3d with causal temporal padding (2 frames before, replicate) and symmetric spatial
// replicate padding; the weights live in `conv`.
class CausalConv3dImpl : public torch::nn::Module {
 public:
  CausalConv3dImpl(std::int64_t in, std::int64_t out, std::int64_t kernel = 3);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv3d conv_{nullptr};
  std::int64_t kernel_;
};
TORCH_MODULE(CausalConv3d);

// x / ||x||_2 over channels * sqrt(C) * gamma (gamma [C,1,1,1]).
class ChannelRmsNormImpl : public torch::nn::Module {
 public:
  explicit ChannelRmsNormImpl(std::int64_t channels);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor gamma;

 private:
  double scale_;
};
TORCH_MODULE(ChannelRmsNorm);

class VaeResnetBlockImpl : public torch::nn::Module {
 public:
  VaeResnetBlockImpl(std::int64_t in, std::int64_t out);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  ChannelRmsNorm norm1_{nullptr}, norm2_{nullptr};
  CausalConv3d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Conv3d conv_shortcut_{nullptr};
};
TORCH_MODULE(VaeResnetBlock);

// Single-head attention over all latent positions with a block-causal mask (a position sees
// its own frame and the frames before). Computed frame by frame (exactly the masked result,
// without the [S, S] mask).
class VaeAttentionImpl : public torch::nn::Module {
 public:
  explicit VaeAttentionImpl(std::int64_t channels);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  ChannelRmsNorm norm_{nullptr};
  torch::nn::Conv3d to_q_{nullptr}, to_k_{nullptr}, to_v_{nullptr}, proj_out_{nullptr};
};
TORCH_MODULE(VaeAttention);

class VaeMidBlockImpl : public torch::nn::Module {
 public:
  explicit VaeMidBlockImpl(std::int64_t channels);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::ModuleList resnets_{nullptr}, attentions_{nullptr};
};
TORCH_MODULE(VaeMidBlock);

class VaeUpsampleImpl : public torch::nn::Module {
 public:
  VaeUpsampleImpl(std::int64_t in, std::int64_t out, bool temporal);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  CausalConv3d conv_{nullptr};
  bool temporal_;
  std::int64_t repeats_;
};
TORCH_MODULE(VaeUpsample);

class VaeDownsampleImpl : public torch::nn::Module {
 public:
  VaeDownsampleImpl(std::int64_t in, std::int64_t out, bool temporal);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  CausalConv3d conv_{nullptr};
  bool temporal_;
  std::int64_t group_size_;
};
TORCH_MODULE(VaeDownsample);

class VaeEncoderImpl : public torch::nn::Module {
 public:
  explicit VaeEncoderImpl(const VaeOptions& options);
  // [B, 3, F, H, W] in [-1, 1] -> moments [B, 2 * latent, F', H', W'].
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

 private:
  CausalConv3d conv_in_{nullptr}, conv_out_{nullptr};
  torch::nn::ModuleList down_blocks_{nullptr};
  VaeMidBlock mid_block_{nullptr};
  ChannelRmsNorm norm_out_{nullptr};
  std::int64_t group_size_;
};
TORCH_MODULE(VaeEncoder);

class VaeDecoderImpl : public torch::nn::Module {
 public:
  explicit VaeDecoderImpl(const VaeOptions& options);
  // Raw latents [B, latent, F', H', W'] -> [B, 3, 1 + 4 (F' - 1), 16 H', 16 W'].
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& z);

 private:
  CausalConv3d conv_in_{nullptr}, conv_out_{nullptr};
  VaeMidBlock mid_block_{nullptr};
  torch::nn::ModuleList up_blocks_{nullptr};
  ChannelRmsNorm norm_out_{nullptr};
  std::int64_t repeat_;
};
TORCH_MODULE(VaeDecoder);

// Diffusers' enable_tiling(): decode in spatial tiles of tile_sample_min / spatial_ratio latents
// with a stride of (1 - overlap) of that, blending neighbours linearly over overlap x
// tile_sample_min pixels (the same arithmetic as tiled_decode). Off by default, as there.
struct VaeTiling {
  bool enabled = false;
  std::int64_t tile_sample_min_height = 256;
  std::int64_t tile_sample_min_width = 256;
  double overlap_factor = 0.25;
};

class AutoencoderKLHunyuanVideo15Impl : public torch::nn::Module {
 public:
  // with_encoder = false leaves the encoder out (T2V replicas save its memory); such a model
  // must be loaded non-strictly for the `encoder.*` names (see load_vae in pipeline.cpp).
  explicit AutoencoderKLHunyuanVideo15Impl(VaeOptions options, bool with_encoder = true);

  // Raw latents (already divided by scaling_factor) -> video in about [-1, 1]. Tiled when
  // tiling is enabled and the latent is larger than one tile (as Diffusers' _decode).
  [[nodiscard]] torch::Tensor decode(const torch::Tensor& z);
  void set_tiling(const VaeTiling& tiling) noexcept { tiling_ = tiling; }
  [[nodiscard]] const VaeTiling& tiling() const noexcept { return tiling_; }
  // Video [B, 3, F, H, W] in [-1, 1] -> the posterior mean (`latent_dist.mode()`), unscaled.
  // Throws ModelError when the model was built without its encoder.
  [[nodiscard]] torch::Tensor encode_mean(const torch::Tensor& x);
  // Both halves of the posterior: [B, 2 * latent, ...] (mean, then logvar).
  [[nodiscard]] torch::Tensor encode_moments(const torch::Tensor& x);

  [[nodiscard]] const VaeOptions& options() const noexcept { return options_; }
  [[nodiscard]] bool has_encoder() const noexcept { return !encoder_.is_empty(); }

 private:
  [[nodiscard]] torch::Tensor tiled_decode(const torch::Tensor& z);

  VaeOptions options_;
  VaeTiling tiling_;
  VaeEncoder encoder_{nullptr};
  VaeDecoder decoder_{nullptr};
};
TORCH_MODULE(AutoencoderKLHunyuanVideo15);

}  // namespace omnidp::models::hv15
