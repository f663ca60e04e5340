#include "omnidp/models/wan/vae_blocks.hpp"

#include <cmath>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/conv.hpp"
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models::wan {

namespace {

using torch::indexing::Slice;

// Frames [begin, end) of a [B, C, T, H, W] tensor (a view).
torch::Tensor frames(const torch::Tensor& x, std::int64_t begin, std::int64_t end) {
  return x.slice(2, begin, end);
}

// A 2-D conv (weight [O, I, kh, kw]) applied to every frame of x [B, C, T, H, W]: a 3-D conv
// with a (1, kh, kw) kernel, which avoids the reference's frames-into-batch permutes.
torch::Tensor conv_per_frame(const torch::Tensor& x, const torch::nn::Conv2d& conv,
                             std::int64_t stride, std::int64_t padding) {
  return conv3d_fp32_accum(x, conv->weight.unsqueeze(2), conv->bias, {1, stride, stride},
                           {0, padding, padding});
}

}  // namespace

torch::Tensor& CausalCache::next_slot() {
  if (next_ == slots_.size()) {
    slots_.emplace_back();
  }
  return slots_[next_++];
}

torch::Tensor patchify(const torch::Tensor& x, std::int64_t patch_size) {
  if (patch_size == 1) {
    return x;
  }
  if (x.dim() != 5) {
    throw ModelError("patchify: expected [B, C, F, H, W], got " + std::to_string(x.dim()) +
                     " dimensions");
  }
  const auto b = x.size(0), c = x.size(1), f = x.size(2), h = x.size(3), w = x.size(4);
  const auto p = patch_size;
  if (h % p != 0 || w % p != 0) {
    throw ModelError("patchify: height " + std::to_string(h) + " and width " + std::to_string(w) +
                     " must be multiples of the patch size " + std::to_string(p));
  }
  return x.reshape({b, c, f, h / p, p, w / p, p})
      .permute({0, 1, 6, 4, 2, 3, 5})
      .reshape({b, c * p * p, f, h / p, w / p});
}

torch::Tensor unpatchify(const torch::Tensor& x, std::int64_t patch_size) {
  if (patch_size == 1) {
    return x;
  }
  const auto p = patch_size;
  if (x.dim() != 5 || x.size(1) % (p * p) != 0) {
    throw ModelError("unpatchify: expected [B, C*p*p, F, H, W] with p = " + std::to_string(p));
  }
  const auto b = x.size(0), c = x.size(1) / (p * p), f = x.size(2), h = x.size(3), w = x.size(4);
  return x.reshape({b, c, p, p, f, h, w}).permute({0, 1, 4, 5, 3, 6, 2}).reshape({b, c, f, h * p, w * p});
}

torch::Tensor avg_down_3d(const torch::Tensor& x, std::int64_t out_channels, std::int64_t factor_t,
                          std::int64_t factor_s) {
  const auto pad_t = (factor_t - x.size(2) % factor_t) % factor_t;
  const auto padded = pad_t > 0 ? torch::constant_pad_nd(x, {0, 0, 0, 0, pad_t, 0}) : x;
  const auto b = padded.size(0), c = padded.size(1), t = padded.size(2), h = padded.size(3),
             w = padded.size(4);
  const auto factor = factor_t * factor_s * factor_s;
  const auto group = c * factor / out_channels;
  return padded
      .reshape({b, c, t / factor_t, factor_t, h / factor_s, factor_s, w / factor_s, factor_s})
      .permute({0, 1, 3, 5, 7, 2, 4, 6})
      .reshape({b, out_channels, group, t / factor_t, h / factor_s, w / factor_s})
      .mean(2);
}

torch::Tensor dup_up_3d(const torch::Tensor& x, std::int64_t out_channels, std::int64_t factor_t,
                        std::int64_t factor_s, bool first_chunk) {
  const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  const auto factor = factor_t * factor_s * factor_s;
  const auto repeats = out_channels * factor / c;
  auto y = x.repeat_interleave(repeats, 1)
               .reshape({b, out_channels, factor_t, factor_s, factor_s, t, h, w})
               .permute({0, 1, 5, 2, 6, 3, 7, 4})
               .reshape({b, out_channels, t * factor_t, h * factor_s, w * factor_s});
  if (first_chunk) {
    y = frames(y, factor_t - 1, y.size(2));
  }
  return y;
}

// ---------------------------------------------------------------------------------------------

WanRMSNormImpl::WanRMSNormImpl(std::int64_t dim, bool images)
    : scale_(std::sqrt(static_cast<double>(dim))) {
  gamma =
      register_parameter("gamma", images ? torch::ones({dim, 1, 1}) : torch::ones({dim, 1, 1, 1}));
}

torch::Tensor WanRMSNormImpl::forward(const torch::Tensor& x) {
  return channel_rms_norm(x, gamma, scale_, false);
}

torch::Tensor WanRMSNormImpl::forward_silu(const torch::Tensor& x, const torch::Tensor& bias) {
  return channel_rms_norm(x, gamma, scale_, true, bias);
}

WanCausalConv3dImpl::WanCausalConv3dImpl(std::int64_t in, std::int64_t out,
                                         std::array<std::int64_t, 3> kernel,
                                         std::array<std::int64_t, 3> stride,
                                         std::array<std::int64_t, 3> padding)
    : stride_(stride), padding_(padding) {
  weight = register_parameter("weight", torch::empty({out, in, kernel[0], kernel[1], kernel[2]}));
  bias = register_parameter("bias", torch::zeros({out}));
  // The default Conv3d initialisation (real weights are always loaded over it).
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
}

torch::Tensor WanCausalConv3dImpl::forward(const torch::Tensor& x, torch::Tensor* slot,
                                           bool with_bias) {
  const std::int64_t pad_t = 2 * padding_[0];
  torch::Tensor input = x;
  if (pad_t > 0) {
    std::int64_t cached = 0;
    if (slot != nullptr && slot->defined()) {
      cached = slot->size(2);
      input = torch::cat({*slot, x}, 2);
    }
    if (slot != nullptr) {
      // The last pad_t real input frames are the next chunk's front context.
      *slot = frames(input, std::max<std::int64_t>(0, input.size(2) - pad_t), input.size(2)).clone();
    }
    if (cached < pad_t) {
      input = torch::constant_pad_nd(input, {0, 0, 0, 0, pad_t - cached, 0});
    }
  }
  return conv3d_fp32_accum(input, weight, with_bias ? bias : torch::Tensor(),
                           {stride_[0], stride_[1], stride_[2]}, {0, padding_[1], padding_[2]});
}

// ---------------------------------------------------------------------------------------------

WanResampleImpl::WanResampleImpl(std::int64_t dim, WanResampleMode mode, std::int64_t upsample_out_dim)
    : mode_(mode) {
  resample = register_module("resample", torch::nn::ModuleList());
  resample->push_back(torch::nn::Identity());  // nearest upsample or zero pad: no parameters
  const bool up = mode == WanResampleMode::upsample2d || mode == WanResampleMode::upsample3d;
  conv_ = up ? torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, upsample_out_dim, 3).padding(1))
             : torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 3).stride(2));
  resample->push_back(conv_);
  if (mode == WanResampleMode::upsample3d) {
    time_conv = register_module("time_conv",
                                WanCausalConv3d(dim, dim * 2, std::array<std::int64_t, 3>{3, 1, 1},
                                                std::array<std::int64_t, 3>{1, 1, 1},
                                                std::array<std::int64_t, 3>{1, 0, 0}));
  } else if (mode == WanResampleMode::downsample3d) {
    time_conv =
        register_module("time_conv", WanCausalConv3d(dim, dim, std::array<std::int64_t, 3>{3, 1, 1},
                                                     std::array<std::int64_t, 3>{2, 1, 1},
                                                     std::array<std::int64_t, 3>{0, 0, 0}));
  }
}

torch::Tensor WanResampleImpl::spatial(const torch::Tensor& x) const {
  namespace F = torch::nn::functional;
  if (mode_ == WanResampleMode::upsample2d || mode_ == WanResampleMode::upsample3d) {
    // nearest-exact at an integer factor picks the same source pixel as nearest.
    const auto up = F::interpolate(x, F::InterpolateFuncOptions()
                                          .scale_factor(std::vector<double>{1.0, 2.0, 2.0})
                                          .mode(torch::kNearest));
    return conv_per_frame(up, conv_, 1, 1);
  }
  return conv_per_frame(torch::constant_pad_nd(x, {0, 1, 0, 1}), conv_, 2, 0);
}

torch::Tensor WanResampleImpl::upsample_time(const torch::Tensor& x, torch::Tensor& slot) {
  // time_conv gives 2*C channels per frame: frame t becomes (first C, second C).
  const auto y = time_conv->forward(x, &slot);
  const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  return y.reshape({b, 2, c, t, h, w}).permute({0, 2, 3, 1, 4, 5}).reshape({b, c, 2 * t, h, w});
}

torch::Tensor WanResampleImpl::downsample_time(const torch::Tensor& x, torch::Tensor& slot,
                                               bool first_chunk) {
  // Over the whole stream s = x_0, x_1, ...: out = [x_0] + conv_stride2(s) (no padding). The
  // slot keeps the frames not yet consumed by a stride-2 window.
  const auto buffer = first_chunk || !slot.defined() ? x : torch::cat({slot, x}, 2);
  const auto length = buffer.size(2);
  const auto windows = length >= 3 ? (length - 3) / 2 + 1 : 0;
  torch::Tensor out =
      windows > 0 ? time_conv->forward(frames(buffer, 0, 2 * windows + 1)) : frames(buffer, 0, 0);
  slot = frames(buffer, 2 * windows, length).clone();
  if (first_chunk) {
    out = torch::cat({frames(x, 0, 1), out}, 2);
  }
  return out;
}

torch::Tensor WanResampleImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  switch (mode_) {
    case WanResampleMode::upsample2d:
    case WanResampleMode::downsample2d: return spatial(x);
    case WanResampleMode::upsample3d: {
      auto& slot = cache.next_slot();
      torch::Tensor doubled;
      if (cache.first_chunk()) {
        // The video's first frame is not doubled; the temporal conv sees the stream from the
        // second frame on (the reference's "Rep" state: zero context).
        doubled = x.size(2) > 1
                      ? torch::cat({frames(x, 0, 1), upsample_time(frames(x, 1, x.size(2)), slot)}, 2)
                      : x;
      } else {
        doubled = upsample_time(x, slot);
      }
      return spatial(doubled);
    }
    case WanResampleMode::downsample3d: {
      auto& slot = cache.next_slot();
      return downsample_time(spatial(x), slot, cache.first_chunk());
    }
  }
  throw ModelError("WanResample: unknown mode");
}

// ---------------------------------------------------------------------------------------------

WanResidualBlockImpl::WanResidualBlockImpl(std::int64_t in, std::int64_t out) {
  const std::array<std::int64_t, 3> k3{3, 3, 3}, one{1, 1, 1};
  norm1 = register_module("norm1", WanRMSNorm(in, false));
  conv1 = register_module("conv1", WanCausalConv3d(in, out, k3, one, one));
  norm2 = register_module("norm2", WanRMSNorm(out, false));
  conv2 = register_module("conv2", WanCausalConv3d(out, out, k3, one, one));
  if (in != out) {
    conv_shortcut = register_module("conv_shortcut", WanCausalConv3d(in, out, one));
  }
}

torch::Tensor WanResidualBlockImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  const auto shortcut = conv_shortcut ? conv_shortcut->forward(x) : x;
  auto h = norm1->forward_silu(x);
  h = conv1->forward(h, &cache.next_slot(), /*with_bias=*/false);
  h = norm2->forward_silu(h, conv1->bias);
  h = conv2->forward(h, &cache.next_slot());
  return h.add_(shortcut);
}

WanAttentionBlockImpl::WanAttentionBlockImpl(std::int64_t dim) {
  norm = register_module("norm", WanRMSNorm(dim, true));
  to_qkv = register_module("to_qkv", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim * 3, 1)));
  proj = register_module("proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 1)));
}

torch::Tensor WanAttentionBlockImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  const auto per_frame = x.permute({0, 2, 1, 3, 4}).reshape({b * t, c, h, w});
  const auto qkv =
      conv2d_fp32_accum(norm->forward(per_frame), to_qkv->weight, to_qkv->bias, {1, 1}, {0, 0})
          .reshape({b * t, 1, c * 3, h * w})
          .permute({0, 1, 3, 2});
  const auto parts = qkv.chunk(3, -1);
  const auto attended = omnidp::models::scaled_dot_product_attention(
      parts[0].contiguous(), parts[1].contiguous(), parts[2].contiguous());
  const auto y = conv2d_fp32_accum(attended.squeeze(1).permute({0, 2, 1}).reshape({b * t, c, h, w}),
                                   proj->weight, proj->bias, {1, 1}, {0, 0});
  return y.reshape({b, t, c, h, w}).permute({0, 2, 1, 3, 4}) + x;
}

WanMidBlockImpl::WanMidBlockImpl(std::int64_t dim, std::int64_t num_layers) {
  attentions = register_module("attentions", torch::nn::ModuleList());
  resnets = register_module("resnets", torch::nn::ModuleList());
  resnets->push_back(WanResidualBlock(dim, dim));
  for (std::int64_t i = 0; i < num_layers; ++i) {
    attentions->push_back(WanAttentionBlock(dim));
    resnets->push_back(WanResidualBlock(dim, dim));
  }
}

torch::Tensor WanMidBlockImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = resnets->ptr<WanResidualBlockImpl>(0)->forward(x, cache);
  for (std::size_t i = 0; i < attentions->size(); ++i) {
    h = attentions->ptr<WanAttentionBlockImpl>(i)->forward(h);
    h = resnets->ptr<WanResidualBlockImpl>(i + 1)->forward(h, cache);
  }
  return h;
}

// ---------------------------------------------------------------------------------------------

WanResidualDownBlockImpl::WanResidualDownBlockImpl(std::int64_t in, std::int64_t out,
                                                   std::int64_t num_res_blocks, bool temporal_down,
                                                   bool down_flag)
    : out_(out), factor_t_(temporal_down ? 2 : 1), factor_s_(down_flag ? 2 : 1) {
  if ((in * factor_t_ * factor_s_ * factor_s_) % out != 0) {
    throw ModelError("WanResidualDownBlock: " + std::to_string(in) + " -> " + std::to_string(out) +
                     " channels cannot be averaged in groups");
  }
  resnets = register_module("resnets", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < num_res_blocks; ++i) {
    resnets->push_back(WanResidualBlock(i == 0 ? in : out, out));
  }
  if (down_flag) {
    downsampler = register_module(
        "downsampler",
        WanResample(
            out, temporal_down ? WanResampleMode::downsample3d : WanResampleMode::downsample2d, out));
  }
}

torch::Tensor WanResidualDownBlockImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = x;
  for (std::size_t i = 0; i < resnets->size(); ++i) {
    h = resnets->ptr<WanResidualBlockImpl>(i)->forward(h, cache);
  }
  if (downsampler) {
    h = downsampler->forward(h, cache);
  }
  return h + avg_down_3d(x, out_, factor_t_, factor_s_);
}

WanResidualUpBlockImpl::WanResidualUpBlockImpl(std::int64_t in, std::int64_t out,
                                               std::int64_t num_res_blocks, bool temporal_up,
                                               bool up_flag)
    : out_(out), factor_t_(temporal_up ? 2 : 1), up_flag_(up_flag) {
  if (up_flag && (out * factor_t_ * 4) % in != 0) {
    throw ModelError("WanResidualUpBlock: " + std::to_string(in) + " -> " + std::to_string(out) +
                     " channels cannot be duplicated evenly");
  }
  resnets = register_module("resnets", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < num_res_blocks + 1; ++i) {
    resnets->push_back(WanResidualBlock(i == 0 ? in : out, out));
  }
  if (up_flag) {
    upsampler = register_module(
        "upsampler",
        WanResample(out, temporal_up ? WanResampleMode::upsample3d : WanResampleMode::upsample2d,
                    out));
  }
}

torch::Tensor WanResidualUpBlockImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = x;
  for (std::size_t i = 0; i < resnets->size(); ++i) {
    h = resnets->ptr<WanResidualBlockImpl>(i)->forward(h, cache);
  }
  if (!up_flag_) {
    return h;
  }
  h = upsampler->forward(h, cache);
  return h.add_(dup_up_3d(x, out_, factor_t_, 2, cache.first_chunk()));
}

WanUpBlockImpl::WanUpBlockImpl(std::int64_t in, std::int64_t out, std::int64_t num_res_blocks,
                               bool temporal_up, bool up_flag) {
  resnets = register_module("resnets", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < num_res_blocks + 1; ++i) {
    resnets->push_back(WanResidualBlock(i == 0 ? in : out, out));
  }
  if (up_flag) {
    upsamplers = register_module("upsamplers", torch::nn::ModuleList());
    upsamplers->push_back(WanResample(
        out, temporal_up ? WanResampleMode::upsample3d : WanResampleMode::upsample2d, out / 2));
  }
}

torch::Tensor WanUpBlockImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = x;
  for (std::size_t i = 0; i < resnets->size(); ++i) {
    h = resnets->ptr<WanResidualBlockImpl>(i)->forward(h, cache);
  }
  return upsamplers ? upsamplers->ptr<WanResampleImpl>(0)->forward(h, cache) : h;
}

// ---------------------------------------------------------------------------------------------

namespace {

// One entry of an encoder's down_blocks or a decoder's up_blocks, whichever type it is.
torch::Tensor run_block(const std::shared_ptr<torch::nn::Module>& block, const torch::Tensor& x,
                        CausalCache& cache) {
  if (auto* b = block->as<WanResidualDownBlockImpl>()) return b->forward(x, cache);
  if (auto* b = block->as<WanResidualUpBlockImpl>()) return b->forward(x, cache);
  if (auto* b = block->as<WanUpBlockImpl>()) return b->forward(x, cache);
  if (auto* b = block->as<WanResidualBlockImpl>()) return b->forward(x, cache);
  if (auto* b = block->as<WanResampleImpl>()) return b->forward(x, cache);
  throw ModelError("Wan VAE: unexpected block " + block->name());
}

}  // namespace

WanEncoder3dImpl::WanEncoder3dImpl(std::int64_t in_channels, std::int64_t dim,
                                   std::int64_t z_channels, const std::vector<std::int64_t>& dim_mult,
                                   std::int64_t num_res_blocks,
                                   const std::vector<bool>& temporal_downsample, bool residual) {
  const std::array<std::int64_t, 3> k3{3, 3, 3}, one{1, 1, 1};
  std::vector<std::int64_t> dims{dim};
  for (const auto m : dim_mult) {
    dims.push_back(dim * m);
  }
  conv_in = register_module("conv_in", WanCausalConv3d(in_channels, dims[0], k3, one, one));
  down_blocks = register_module("down_blocks", torch::nn::ModuleList());
  const auto levels = dim_mult.size();
  for (std::size_t i = 0; i < levels; ++i) {
    const bool last = i + 1 == levels;
    const bool temporal = !last && temporal_downsample.at(i);
    if (residual) {
      down_blocks->push_back(
          WanResidualDownBlock(dims[i], dims[i + 1], num_res_blocks, temporal, !last));
      continue;
    }
    for (std::int64_t r = 0; r < num_res_blocks; ++r) {
      down_blocks->push_back(WanResidualBlock(r == 0 ? dims[i] : dims[i + 1], dims[i + 1]));
    }
    if (!last) {
      down_blocks->push_back(WanResample(
          dims[i + 1], temporal ? WanResampleMode::downsample3d : WanResampleMode::downsample2d,
          dims[i + 1]));
    }
  }
  mid_block = register_module("mid_block", WanMidBlock(dims.back(), 1));
  norm_out = register_module("norm_out", WanRMSNorm(dims.back(), false));
  conv_out = register_module("conv_out", WanCausalConv3d(dims.back(), z_channels, k3, one, one));
}

torch::Tensor WanEncoder3dImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = conv_in->forward(x, &cache.next_slot());
  for (const auto& block : *down_blocks) {
    h = run_block(block, h, cache);
  }
  h = mid_block->forward(h, cache);
  h = norm_out->forward_silu(h);
  return conv_out->forward(h, &cache.next_slot());
}

WanDecoder3dImpl::WanDecoder3dImpl(std::int64_t dim, std::int64_t z_dim,
                                   const std::vector<std::int64_t>& dim_mult,
                                   std::int64_t num_res_blocks,
                                   const std::vector<bool>& temporal_upsample,
                                   std::int64_t out_channels, bool residual) {
  const std::array<std::int64_t, 3> k3{3, 3, 3}, one{1, 1, 1};
  std::vector<std::int64_t> dims{dim * dim_mult.back()};
  for (auto it = dim_mult.rbegin(); it != dim_mult.rend(); ++it) {
    dims.push_back(dim * *it);
  }
  conv_in = register_module("conv_in", WanCausalConv3d(z_dim, dims[0], k3, one, one));
  mid_block = register_module("mid_block", WanMidBlock(dims[0], 1));
  up_blocks = register_module("up_blocks", torch::nn::ModuleList());
  const auto levels = dim_mult.size();
  for (std::size_t i = 0; i < levels; ++i) {
    const bool up = i + 1 != levels;
    const bool temporal = up && temporal_upsample.at(i);
    if (residual) {
      up_blocks->push_back(WanResidualUpBlock(dims[i], dims[i + 1], num_res_blocks, temporal, up));
    } else {
      up_blocks->push_back(
          WanUpBlock(i > 0 ? dims[i] / 2 : dims[i], dims[i + 1], num_res_blocks, temporal, up));
    }
  }
  norm_out = register_module("norm_out", WanRMSNorm(dims.back(), false));
  conv_out = register_module("conv_out", WanCausalConv3d(dims.back(), out_channels, k3, one, one));
}

torch::Tensor WanDecoder3dImpl::forward(const torch::Tensor& x, CausalCache& cache) {
  auto h = conv_in->forward(x, &cache.next_slot());
  h = mid_block->forward(h, cache);
  for (const auto& block : *up_blocks) {
    h = run_block(block, h, cache);
  }
  h = norm_out->forward_silu(h);
  return conv_out->forward(h, &cache.next_slot());
}

}  // namespace omnidp::models::wan
