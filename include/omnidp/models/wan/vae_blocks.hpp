#pragma once
// Building blocks of the Wan video VAEs as Diffusers implements them
// (models/autoencoders/autoencoder_kl_wan.py): the Wan2.1 layout (plain down/up blocks) and the
// Wan2.2 `is_residual` layout (residual down/up blocks with space-to-channel shortcuts), on the
// same resnets, resamplers, attention and mid block. Parameter names of
// every block equal the Diffusers checkpoint names (`conv1.weight`, `norm1.gamma`,
// `resample.1.weight`, `time_conv.weight`, `to_qkv.weight`, ...).
//
// Temporal causality: every 3x3x3 conv is causal in time (2 frames of zero padding in front).
// The video is processed in chunks of frames; a `CausalCache` carries what a chunk needs from
// the previous one (the last 2 input frames of each causal conv, the stride-2 remainder of a
// temporal downsampler). Unlike the reference, whose layers are only correct for the chunk
// sizes it uses (decode: 1 latent frame; encode: 1 frame, then 4), the blocks here are
// correct for any chunking the caller's `AutoencoderKLWan` allows, and give the same result
// as the reference's chunking (see vae.hpp).
//
// Threading: the modules hold only parameters; all streaming state is in the CausalCache the
// caller passes, so one module can serve several threads, each with its own cache.
// Inference only: call under torch::NoGradGuard.

#include <torch/torch.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace omnidp::models::wan {

// Streaming state of one encode or decode pass over one video (or one spatial tile of it).
// Each temporal layer takes one slot per chunk, in call order, so every chunk must run the
// same layers in the same order. A slot is an undefined tensor until its layer stores one.
class CausalCache {
 public:
  // Starts a chunk: the layers take their slots from the first one again.
  void begin_chunk() noexcept { next_ = 0; }
  // Ends a chunk; later chunks are no longer the first.
  void end_chunk() noexcept { first_chunk_ = false; }
  // True while the first chunk of the pass runs (the reference's `first_chunk` and its
  // "Rep" marker in the temporal upsampler).
  [[nodiscard]] bool first_chunk() const noexcept { return first_chunk_; }
  // The next layer's slot (references stay valid for the cache's lifetime).
  [[nodiscard]] torch::Tensor& next_slot();
  [[nodiscard]] std::size_t slots() const noexcept { return slots_.size(); }

 private:
  std::deque<torch::Tensor> slots_;
  std::size_t next_ = 0;
  bool first_chunk_ = true;
};

// [B, C, F, H, W] -> [B, C*p*p, F, H/p, W/p] with Diffusers' channel order (c, w-offset,
// h-offset). p == 1 returns x. Throws ModelError when H or W is not a multiple of p.
[[nodiscard]] torch::Tensor patchify(const torch::Tensor& x, std::int64_t patch_size);
// The inverse of patchify: [B, C*p*p, F, h, w] -> [B, C, F, h*p, w*p].
[[nodiscard]] torch::Tensor unpatchify(const torch::Tensor& x, std::int64_t patch_size);

// AvgDown3D: space/time-to-channel rearrangement by (factor_t, factor_s, factor_s), then the
// mean over groups of in*factor/out channels. Pads the front of time with zeros to a
// multiple of factor_t (per call, as the reference does per chunk).
[[nodiscard]] torch::Tensor avg_down_3d(const torch::Tensor& x, std::int64_t out_channels,
                                        std::int64_t factor_t, std::int64_t factor_s);
// DupUp3D: repeats channels out*factor/in times and moves them to time and space; on the
// first chunk it drops the first factor_t - 1 frames.
[[nodiscard]] torch::Tensor dup_up_3d(const torch::Tensor& x, std::int64_t out_channels,
                                      std::int64_t factor_t, std::int64_t factor_s, bool first_chunk);

// WanRMS_norm (no bias): F.normalize over channels (dim 1) * sqrt(dim) * gamma. `images`
// selects gamma's shape: [dim,1,1] for 4-D inputs, [dim,1,1,1] for 5-D.
class WanRMSNormImpl : public torch::nn::Module {
 public:
  WanRMSNormImpl(std::int64_t dim, bool images);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);
  // SiLU(forward(x + bias)) with bias [C] over the channels (undefined: none; the deferred bias
  // of the convolution that produced x): one kernel on CUDA (layers::channel_rms_norm).
  [[nodiscard]] torch::Tensor forward_silu(const torch::Tensor& x, const torch::Tensor& bias = {});
  torch::Tensor gamma;

 private:
  double scale_;
};
TORCH_MODULE(WanRMSNorm);

// WanCausalConv3d: a Conv3d whose temporal padding (2*padding_t) is all in front.
class WanCausalConv3dImpl : public torch::nn::Module {
 public:
  WanCausalConv3dImpl(std::int64_t in, std::int64_t out, std::array<std::int64_t, 3> kernel,
                      std::array<std::int64_t, 3> stride = {1, 1, 1},
                      std::array<std::int64_t, 3> padding = {0, 0, 0});
  // x [B, in, T, H, W]. With a slot, the slot's frames (the previous chunk's last inputs)
  // replace the front zero padding and the slot is updated to this chunk's last 2*padding_t
  // inputs; without one, the front is zero padded. with_bias false leaves the bias out (the
  // caller adds it later, fused into the next operation).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, torch::Tensor* slot = nullptr,
                                      bool with_bias = true);
  torch::Tensor weight, bias;

 private:
  std::array<std::int64_t, 3> stride_;
  std::array<std::int64_t, 3> padding_;
};
TORCH_MODULE(WanCausalConv3d);

enum class WanResampleMode { upsample2d, upsample3d, downsample2d, downsample3d };

// WanResample: `resample.1` is the 2-D conv applied to every frame (after a nearest 2x
// upsample, or a (0,1,0,1) zero pad for the stride-2 downsample); `time_conv` is the temporal
// part of the 3-D modes. upsample3d doubles the frames (except the video's first frame);
// downsample3d halves them (keeping the video's first frame), stride 2 over the stream.
class WanResampleImpl : public torch::nn::Module {
 public:
  WanResampleImpl(std::int64_t dim, WanResampleMode mode, std::int64_t upsample_out_dim);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  torch::nn::ModuleList resample{nullptr};  // [0] parameterless (upsample / pad), [1] Conv2d
  WanCausalConv3d time_conv{nullptr};       // 3-D modes only

 private:
  [[nodiscard]] torch::Tensor spatial(const torch::Tensor& x) const;
  [[nodiscard]] torch::Tensor upsample_time(const torch::Tensor& x, torch::Tensor& slot);
  [[nodiscard]] torch::Tensor downsample_time(const torch::Tensor& x, torch::Tensor& slot,
                                              bool first_chunk);
  WanResampleMode mode_;
  torch::nn::Conv2d conv_{nullptr};
};
TORCH_MODULE(WanResample);

// WanResidualBlock: norm1 -> SiLU -> conv1 -> norm2 -> SiLU -> conv2, plus the input (through
// the 1x1x1 conv_shortcut when the channel counts differ).
class WanResidualBlockImpl : public torch::nn::Module {
 public:
  WanResidualBlockImpl(std::int64_t in, std::int64_t out);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  WanRMSNorm norm1{nullptr}, norm2{nullptr};
  WanCausalConv3d conv1{nullptr}, conv2{nullptr};
  WanCausalConv3d conv_shortcut{nullptr};  // only when in != out
};
TORCH_MODULE(WanResidualBlock);

// WanAttentionBlock: single-head self-attention over the pixels of each frame.
class WanAttentionBlockImpl : public torch::nn::Module {
 public:
  explicit WanAttentionBlockImpl(std::int64_t dim);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);
  WanRMSNorm norm{nullptr};
  torch::nn::Conv2d to_qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(WanAttentionBlock);

// WanMidBlock: resnets.0, then (attentions.i, resnets.i+1) for each layer.
class WanMidBlockImpl : public torch::nn::Module {
 public:
  WanMidBlockImpl(std::int64_t dim, std::int64_t num_layers);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  torch::nn::ModuleList attentions{nullptr}, resnets{nullptr};
};
TORCH_MODULE(WanMidBlock);

// WanResidualDownBlock: resnets (+ downsampler), plus the AvgDown3D shortcut of the input.
class WanResidualDownBlockImpl : public torch::nn::Module {
 public:
  WanResidualDownBlockImpl(std::int64_t in, std::int64_t out, std::int64_t num_res_blocks,
                           bool temporal_down, bool down_flag);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  torch::nn::ModuleList resnets{nullptr};
  WanResample downsampler{nullptr};  // only with down_flag

 private:
  std::int64_t out_;
  std::int64_t factor_t_, factor_s_;
};
TORCH_MODULE(WanResidualDownBlock);

// WanResidualUpBlock: num_res_blocks + 1 resnets (+ upsampler), plus the DupUp3D shortcut of
// the input when it upsamples.
class WanResidualUpBlockImpl : public torch::nn::Module {
 public:
  WanResidualUpBlockImpl(std::int64_t in, std::int64_t out, std::int64_t num_res_blocks,
                         bool temporal_up, bool up_flag);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  torch::nn::ModuleList resnets{nullptr};
  WanResample upsampler{nullptr};  // only with up_flag

 private:
  std::int64_t out_;
  std::int64_t factor_t_;
  bool up_flag_;
};
TORCH_MODULE(WanResidualUpBlock);

// WanUpBlock (Wan2.1 layout): num_res_blocks + 1 resnets, then `upsamplers.0` (a WanResample
// to out/2 channels) unless it is the last level.
class WanUpBlockImpl : public torch::nn::Module {
 public:
  WanUpBlockImpl(std::int64_t in, std::int64_t out, std::int64_t num_res_blocks, bool temporal_up,
                 bool up_flag);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  torch::nn::ModuleList resnets{nullptr}, upsamplers{nullptr};  // upsamplers: only with up_flag
};
TORCH_MODULE(WanUpBlock);

// WanEncoder3d: conv_in, down_blocks, mid_block, norm_out, SiLU, conv_out. dims = dim * [1] +
// dim_mult; the last level does not downsample. down_blocks holds one WanResidualDownBlock per
// level (residual layout) or, flat, each level's resnets followed by its WanResample (Wan2.1).
class WanEncoder3dImpl : public torch::nn::Module {
 public:
  WanEncoder3dImpl(std::int64_t in_channels, std::int64_t dim, std::int64_t z_channels,
                   const std::vector<std::int64_t>& dim_mult, std::int64_t num_res_blocks,
                   const std::vector<bool>& temporal_downsample, bool residual);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  WanCausalConv3d conv_in{nullptr}, conv_out{nullptr};
  torch::nn::ModuleList down_blocks{nullptr};
  WanMidBlock mid_block{nullptr};
  WanRMSNorm norm_out{nullptr};
};
TORCH_MODULE(WanEncoder3d);

// WanDecoder3d: conv_in, mid_block, up_blocks, norm_out, SiLU, conv_out. dims = dim *
// [dim_mult.back()] + reversed(dim_mult); the last level does not upsample. Residual layout:
// WanResidualUpBlocks; Wan2.1: WanUpBlocks, each level after the first taking half its width
// (the upsampler before it halves the channels).
class WanDecoder3dImpl : public torch::nn::Module {
 public:
  WanDecoder3dImpl(std::int64_t dim, std::int64_t z_dim, const std::vector<std::int64_t>& dim_mult,
                   std::int64_t num_res_blocks, const std::vector<bool>& temporal_upsample,
                   std::int64_t out_channels, bool residual);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, CausalCache& cache);
  WanCausalConv3d conv_in{nullptr}, conv_out{nullptr};
  WanMidBlock mid_block{nullptr};
  torch::nn::ModuleList up_blocks{nullptr};
  WanRMSNorm norm_out{nullptr};
};
TORCH_MODULE(WanDecoder3d);

}  // namespace omnidp::models::wan
