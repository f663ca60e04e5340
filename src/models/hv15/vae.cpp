#include "omnidp/models/hv15/vae.hpp"

#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/attention.hpp"

namespace omnidp::models::hv15 {
namespace {

namespace nn = torch::nn;

nn::Conv3d pointwise(nn::Module& parent, const std::string& name, std::int64_t in, std::int64_t out) {
  return nn::Conv3d(parent.register_module(name, nn::Conv3d(nn::Conv3dOptions(in, out, 1))));
}

// (b, r1*r2*r3*c, f, h, w) -> (b, c, r1*f, r2*h, r3*w)
torch::Tensor up_rearrange(const torch::Tensor& t, std::int64_t r1, std::int64_t r2, std::int64_t r3) {
  const auto b = t.size(0), f = t.size(2), h = t.size(3), w = t.size(4);
  const auto c = t.size(1) / (r1 * r2 * r3);
  return t.view({b, r1, r2, r3, c, f, h, w})
      .permute({0, 4, 5, 1, 6, 2, 7, 3})
      .reshape({b, c, f * r1, h * r2, w * r3});
}

// (b, c, r1*f, r2*h, r3*w) -> (b, r1*r2*r3*c, f, h, w)
torch::Tensor down_rearrange(const torch::Tensor& t, std::int64_t r1, std::int64_t r2,
                             std::int64_t r3) {
  const auto b = t.size(0), c = t.size(1);
  const auto f = t.size(2) / r1, h = t.size(3) / r2, w = t.size(4) / r3;
  return t.view({b, c, f, r1, h, r2, w, r3})
      .permute({0, 3, 5, 7, 1, 2, 4, 6})
      .reshape({b, r1 * r2 * r3 * c, f, h, w});
}

// Mean over groups of `group` consecutive channels: [B, C*group, ...] -> [B, C, ...].
torch::Tensor group_mean(const torch::Tensor& t, std::int64_t out_channels, std::int64_t group) {
  return t.view({t.size(0), out_channels, group, t.size(2), t.size(3), t.size(4)}).mean(2);
}

std::int64_t exact_log2(std::int64_t v, const char* what) {
  std::int64_t n = 0;
  while ((std::int64_t{1} << n) < v) ++n;
  if ((std::int64_t{1} << n) != v)
    throw WeightsError("vae config", std::string(what) + " must be a power of 2");
  return n;
}

// One down or up stage: resnets, then an optional resampler (`downsamplers.0` / `upsamplers.0`).
class VaeStageImpl : public nn::Module {
 public:
  VaeStageImpl(std::int64_t in, std::int64_t out, std::int64_t layers) {
    resnets_ = register_module("resnets", nn::ModuleList());
    for (std::int64_t i = 0; i < layers; ++i)
      resnets_->push_back(VaeResnetBlock(i == 0 ? in : out, out));
  }
  void add_downsampler(std::int64_t in, std::int64_t out, bool temporal) {
    auto list = register_module("downsamplers", nn::ModuleList());
    list->push_back(VaeDownsample(in, out, temporal));
    resampler_ = list;
  }
  void add_upsampler(std::int64_t in, std::int64_t out, bool temporal) {
    auto list = register_module("upsamplers", nn::ModuleList());
    list->push_back(VaeUpsample(in, out, temporal));
    resampler_ = list;
  }
  torch::Tensor forward(torch::Tensor x) {
    for (const auto& r : *resnets_) x = r->as<VaeResnetBlock>()->forward(x);
    if (!resampler_.is_empty()) {
      const auto& m = resampler_[0];
      if (auto* down = m->as<VaeDownsample>()) {
        x = down->forward(x);
      } else {
        x = m->as<VaeUpsample>()->forward(x);
      }
    }
    return x;
  }

 private:
  nn::ModuleList resnets_{nullptr};
  nn::ModuleList resampler_{nullptr};
};
TORCH_MODULE(VaeStage);

}  // namespace

VaeOptions VaeOptions::from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw WeightsError(origin, "vae config is not a JSON object");
  VaeOptions o;
  o.in_channels = config_value(j, "in_channels", o.in_channels, origin);
  o.out_channels = config_value(j, "out_channels", o.out_channels, origin);
  o.latent_channels = config_value(j, "latent_channels", o.latent_channels, origin);
  o.block_out_channels = config_value(j, "block_out_channels", o.block_out_channels, origin);
  o.layers_per_block = config_value(j, "layers_per_block", o.layers_per_block, origin);
  o.spatial_compression_ratio =
      config_value(j, "spatial_compression_ratio", o.spatial_compression_ratio, origin);
  o.temporal_compression_ratio =
      config_value(j, "temporal_compression_ratio", o.temporal_compression_ratio, origin);
  o.downsample_match_channel =
      config_value(j, "downsample_match_channel", o.downsample_match_channel, origin);
  o.upsample_match_channel =
      config_value(j, "upsample_match_channel", o.upsample_match_channel, origin);
  o.scaling_factor = config_value(j, "scaling_factor", o.scaling_factor, origin);
  if (o.block_out_channels.empty()) throw WeightsError(origin, "block_out_channels is empty");
  for (const auto c : o.block_out_channels) {
    if (c <= 0) throw WeightsError(origin, "block_out_channels must be positive");
  }
  if (o.latent_channels <= 0 || o.in_channels <= 0 || o.out_channels <= 0 || o.layers_per_block < 0) {
    throw WeightsError(origin, "vae config has a non-positive size");
  }
  const auto s = exact_log2(o.spatial_compression_ratio, "spatial_compression_ratio");
  const auto t = exact_log2(o.temporal_compression_ratio, "temporal_compression_ratio");
  if (s > static_cast<std::int64_t>(o.block_out_channels.size()) - 1 || t > s) {
    throw WeightsError(origin, "compression ratios need more blocks than block_out_channels has");
  }
  return o;
}

// --- layers -------------------------------------------------------------------------------

CausalConv3dImpl::CausalConv3dImpl(std::int64_t in, std::int64_t out, std::int64_t kernel)
    : kernel_(kernel) {
  conv_ = register_module("conv", nn::Conv3d(nn::Conv3dOptions(in, out, kernel)));
}

torch::Tensor CausalConv3dImpl::forward(const torch::Tensor& x) {
  const auto p = kernel_ / 2;
#if TORCH_VERSION_MAJOR < 2
  // libtorch 1.13 has no CPU replication_pad3d for bf16/fp16: replicate the edges by hand.
  if (x.is_cpu() && (x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf)) {
    auto edge = [](const torch::Tensor& t, std::int64_t dim, std::int64_t before, std::int64_t after) {
      std::vector<torch::Tensor> parts;
      for (std::int64_t i = 0; i < before; ++i) parts.push_back(t.narrow(dim, 0, 1));
      parts.push_back(t);
      for (std::int64_t i = 0; i < after; ++i) parts.push_back(t.narrow(dim, t.size(dim) - 1, 1));
      return torch::cat(parts, dim);
    };
    return conv_(edge(edge(edge(x, 4, p, p), 3, p, p), 2, kernel_ - 1, 0));
  }
#endif
  const auto padded = nn::functional::pad(
      x, nn::functional::PadFuncOptions({p, p, p, p, kernel_ - 1, 0}).mode(torch::kReplicate));
  return conv_(padded);
}

ChannelRmsNormImpl::ChannelRmsNormImpl(std::int64_t channels)
    : scale_(std::sqrt(static_cast<double>(channels))) {
  gamma = register_parameter("gamma", torch::ones({channels, 1, 1, 1}));
}

torch::Tensor ChannelRmsNormImpl::forward(const torch::Tensor& x) {
  const bool low = x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16;
  const auto normalized = nn::functional::normalize(low ? x.to(torch::kFloat32) : x,
                                                    nn::functional::NormalizeFuncOptions().dim(1))
                              .to(x.scalar_type());
  return normalized * scale_ * gamma;
}

VaeResnetBlockImpl::VaeResnetBlockImpl(std::int64_t in, std::int64_t out) {
  norm1_ = register_module("norm1", ChannelRmsNorm(in));
  conv1_ = register_module("conv1", CausalConv3d(in, out));
  norm2_ = register_module("norm2", ChannelRmsNorm(out));
  conv2_ = register_module("conv2", CausalConv3d(out, out));
  if (in != out) conv_shortcut_ = pointwise(*this, "conv_shortcut", in, out);
}

torch::Tensor VaeResnetBlockImpl::forward(const torch::Tensor& x) {
  auto h = conv1_(torch::silu(norm1_(x)));
  h = conv2_(torch::silu(norm2_(h)));
  return h + (conv_shortcut_.is_empty() ? x : conv_shortcut_(x));
}

VaeAttentionImpl::VaeAttentionImpl(std::int64_t channels) {
  norm_ = register_module("norm", ChannelRmsNorm(channels));
  to_q_ = pointwise(*this, "to_q", channels, channels);
  to_k_ = pointwise(*this, "to_k", channels, channels);
  to_v_ = pointwise(*this, "to_v", channels, channels);
  proj_out_ = pointwise(*this, "proj_out", channels, channels);
}

torch::Tensor VaeAttentionImpl::forward(const torch::Tensor& x) {
  const auto h = norm_(x);
  const auto b = x.size(0), c = x.size(1), f = x.size(2), hh = x.size(3), ww = x.size(4);
  const auto hw = hh * ww;
  auto tokens = [&](const torch::Tensor& t) {
    return t.reshape({b, c, f * hw}).permute({0, 2, 1}).unsqueeze(1);
  };
  const auto q = tokens(to_q_(h));
  const auto k = tokens(to_k_(h));
  const auto v = tokens(to_v_(h));
  // Block-causal: the queries of frame i attend to the keys of frames 0..i.
  std::vector<torch::Tensor> frames;
  frames.reserve(static_cast<std::size_t>(f));
  for (std::int64_t i = 0; i < f; ++i) {
    const auto qi = q.slice(2, i * hw, (i + 1) * hw);
    const auto end = (i + 1) * hw;
    frames.push_back(
        omnidp::models::scaled_dot_product_attention(qi, k.slice(2, 0, end), v.slice(2, 0, end)));
  }
  const auto out =
      torch::cat(frames, 2).squeeze(1).reshape({b, f, hh, ww, c}).permute({0, 4, 1, 2, 3});
  return proj_out_(out) + x;
}

VaeMidBlockImpl::VaeMidBlockImpl(std::int64_t channels) {
  attentions_ = register_module("attentions", nn::ModuleList());
  attentions_->push_back(VaeAttention(channels));
  resnets_ = register_module("resnets", nn::ModuleList());
  resnets_->push_back(VaeResnetBlock(channels, channels));
  resnets_->push_back(VaeResnetBlock(channels, channels));
}

torch::Tensor VaeMidBlockImpl::forward(const torch::Tensor& x) {
  auto h = resnets_[0]->as<VaeResnetBlock>()->forward(x);
  h = attentions_[0]->as<VaeAttention>()->forward(h);
  return resnets_[1]->as<VaeResnetBlock>()->forward(h);
}

VaeUpsampleImpl::VaeUpsampleImpl(std::int64_t in, std::int64_t out, bool temporal)
    : temporal_(temporal) {
  const std::int64_t factor = temporal ? 8 : 4;
  conv_ = register_module("conv", CausalConv3d(in, out * factor));
  repeats_ = factor * out / in;
}

torch::Tensor VaeUpsampleImpl::forward(const torch::Tensor& x) {
  const auto h = conv_(x);
  if (!temporal_) {
    return up_rearrange(h, 1, 2, 2) + up_rearrange(x.repeat_interleave(repeats_, 1), 1, 2, 2);
  }
  // The first frame is upsampled spatially only (half the channels), the rest also in time.
  auto h_first = up_rearrange(h.slice(2, 0, 1), 1, 2, 2);
  h_first = h_first.slice(1, 0, h_first.size(1) / 2);
  const auto x_first = up_rearrange(x.slice(2, 0, 1), 1, 2, 2).repeat_interleave(repeats_ / 2, 1);
  if (x.size(2) == 1) return h_first + x_first;
  const auto h_next = up_rearrange(h.slice(2, 1), 2, 2, 2);
  const auto x_next = up_rearrange(x.slice(2, 1), 2, 2, 2).repeat_interleave(repeats_, 1);
  return torch::cat({h_first, h_next}, 2) + torch::cat({x_first, x_next}, 2);
}

VaeDownsampleImpl::VaeDownsampleImpl(std::int64_t in, std::int64_t out, bool temporal)
    : temporal_(temporal) {
  const std::int64_t factor = temporal ? 8 : 4;
  conv_ = register_module("conv", CausalConv3d(in, out / factor));
  group_size_ = factor * in / out;
}

torch::Tensor VaeDownsampleImpl::forward(const torch::Tensor& x) {
  const auto h = conv_(x);
  if (!temporal_) {
    const auto hd = down_rearrange(h, 1, 2, 2);
    return hd + group_mean(down_rearrange(x, 1, 2, 2), hd.size(1), group_size_);
  }
  auto h_first = down_rearrange(h.slice(2, 0, 1), 1, 2, 2);
  h_first = torch::cat({h_first, h_first}, 1);
  const auto out_c = h_first.size(1);
  const auto x_first = group_mean(down_rearrange(x.slice(2, 0, 1), 1, 2, 2), out_c, group_size_ / 2);
  if (x.size(2) == 1) return h_first + x_first;
  const auto h_next = down_rearrange(h.slice(2, 1), 2, 2, 2);
  const auto x_next = group_mean(down_rearrange(x.slice(2, 1), 2, 2, 2), out_c, group_size_);
  return torch::cat({h_first, h_next}, 2) + torch::cat({x_first, x_next}, 2);
}

// --- encoder / decoder --------------------------------------------------------------------

VaeEncoderImpl::VaeEncoderImpl(const VaeOptions& o) {
  const auto& boc = o.block_out_channels;
  const auto out_channels = 2 * o.latent_channels;
  group_size_ = boc.back() / out_channels;
  const auto log_s = exact_log2(o.spatial_compression_ratio, "spatial_compression_ratio");
  const auto log_st = exact_log2(o.spatial_compression_ratio / o.temporal_compression_ratio,
                                 "spatial / temporal compression");
  conv_in_ = register_module("conv_in", CausalConv3d(o.in_channels, boc[0]));
  down_blocks_ = register_module("down_blocks", nn::ModuleList());
  auto input = boc[0];
  for (std::size_t i = 0; i < boc.size(); ++i) {
    const auto idx = static_cast<std::int64_t>(i);
    auto stage = VaeStage(input, boc[i], o.layers_per_block);
    if (idx < log_s) {
      const auto down_out = o.downsample_match_channel ? boc[i + 1] : boc[i];
      stage->add_downsampler(boc[i], down_out, idx >= log_st);
      input = down_out;
    } else {
      input = boc[i];
    }
    down_blocks_->push_back(stage);
  }
  mid_block_ = register_module("mid_block", VaeMidBlock(boc.back()));
  norm_out_ = register_module("norm_out", ChannelRmsNorm(boc.back()));
  conv_out_ = register_module("conv_out", CausalConv3d(boc.back(), out_channels));
}

torch::Tensor VaeEncoderImpl::forward(const torch::Tensor& x) {
  if (group_size_ < 1) {
    throw ModelError("VAE encoder: block_out_channels[-1] is smaller than 2 * latent_channels");
  }
  auto h = conv_in_(x);
  for (const auto& stage : *down_blocks_) h = stage->as<VaeStage>()->forward(h);
  h = mid_block_(h);
  const auto shortcut = group_mean(h, h.size(1) / group_size_, group_size_);
  return conv_out_(torch::silu(norm_out_(h))) + shortcut;
}

VaeDecoderImpl::VaeDecoderImpl(const VaeOptions& o) {
  const std::vector<std::int64_t> boc(o.block_out_channels.rbegin(), o.block_out_channels.rend());
  if (boc.empty() || o.latent_channels <= 0)
    throw WeightsError("vae config", "block_out_channels is empty");
  const auto top = boc.at(0);
  repeat_ = top / o.latent_channels;
  if (repeat_ < 1 || top % o.latent_channels != 0) {
    throw WeightsError("vae config",
                       "block_out_channels[-1] must be a multiple of latent_channels");
  }
  const auto log_s = exact_log2(o.spatial_compression_ratio, "spatial_compression_ratio");
  const auto log_t = exact_log2(o.temporal_compression_ratio, "temporal_compression_ratio");
  conv_in_ = register_module("conv_in", CausalConv3d(o.latent_channels, top));
  mid_block_ = register_module("mid_block", VaeMidBlock(top));
  up_blocks_ = register_module("up_blocks", nn::ModuleList());
  auto input = top;
  for (std::size_t i = 0; i < boc.size(); ++i) {
    const auto idx = static_cast<std::int64_t>(i);
    auto stage = VaeStage(input, boc[i], o.layers_per_block + 1);
    if (idx < log_s || idx < log_t) {
      const auto up_out = o.upsample_match_channel ? boc[i + 1] : boc[i];
      stage->add_upsampler(boc[i], up_out, idx < log_t);
      input = up_out;
    } else {
      input = boc[i];
    }
    up_blocks_->push_back(stage);
  }
  norm_out_ = register_module("norm_out", ChannelRmsNorm(boc.back()));
  conv_out_ = register_module("conv_out", CausalConv3d(boc.back(), o.out_channels));
}

torch::Tensor VaeDecoderImpl::forward(const torch::Tensor& z) {
  auto h = conv_in_(z) + z.repeat_interleave(repeat_, 1);
  h = mid_block_(h);
  for (const auto& stage : *up_blocks_) h = stage->as<VaeStage>()->forward(h);
  return conv_out_(torch::silu(norm_out_(h)));
}

AutoencoderKLHunyuanVideo15Impl::AutoencoderKLHunyuanVideo15Impl(VaeOptions options, bool with_encoder)
    : options_(std::move(options)) {
  if (with_encoder) encoder_ = register_module("encoder", VaeEncoder(options_));
  decoder_ = register_module("decoder", VaeDecoder(options_));
}

torch::Tensor AutoencoderKLHunyuanVideo15Impl::decode(const torch::Tensor& z) {
  if (z.dim() != 5 || z.size(1) != options_.latent_channels) {
    throw ModelError("VAE decode expects [B, " + std::to_string(options_.latent_channels) +
                     ", F, H, W] latents");
  }
  const auto w = decoder_->parameters().front();
  const auto zz = z.to(w.device(), w.scalar_type());
  const auto s = options_.spatial_compression_ratio;
  if (tiling_.enabled && (zz.size(4) > tiling_.tile_sample_min_width / s ||
                          zz.size(3) > tiling_.tile_sample_min_height / s)) {
    return tiled_decode(zz);
  }
  return decoder_(zz);
}

namespace {

// blend_v / blend_h of Diffusers (in place on b, row by row with Python-float weights).
void blend(const torch::Tensor& a, torch::Tensor& b, std::int64_t extent, std::int64_t dim) {
  extent = std::min({a.size(dim), b.size(dim), extent});
  for (std::int64_t y = 0; y < extent; ++y) {
    const double wb = static_cast<double>(y) / static_cast<double>(extent);
    auto dst = b.select(dim, y);
    dst.copy_(a.select(dim, a.size(dim) - extent + y) * (1 - wb) + dst * wb);
  }
}

}  // namespace

torch::Tensor AutoencoderKLHunyuanVideo15Impl::tiled_decode(const torch::Tensor& z) {
  const auto s = options_.spatial_compression_ratio;
  const auto latent_h = tiling_.tile_sample_min_height / s;
  const auto latent_w = tiling_.tile_sample_min_width / s;
  const auto overlap_h =
      static_cast<std::int64_t>(static_cast<double>(latent_h) * (1 - tiling_.overlap_factor));
  const auto overlap_w =
      static_cast<std::int64_t>(static_cast<double>(latent_w) * (1 - tiling_.overlap_factor));
  const auto blend_h = static_cast<std::int64_t>(
      static_cast<double>(tiling_.tile_sample_min_height) * tiling_.overlap_factor);
  const auto blend_w = static_cast<std::int64_t>(
      static_cast<double>(tiling_.tile_sample_min_width) * tiling_.overlap_factor);
  const auto limit_h = tiling_.tile_sample_min_height - blend_h;
  const auto limit_w = tiling_.tile_sample_min_width - blend_w;
  if (overlap_h < 1 || overlap_w < 1) throw ModelError("VAE tiling: tiles smaller than one latent");
  std::vector<std::vector<torch::Tensor>> rows;
  for (std::int64_t i = 0; i < z.size(3); i += overlap_h) {
    std::vector<torch::Tensor> row;
    for (std::int64_t j = 0; j < z.size(4); j += overlap_w) {
      row.push_back(decoder_(z.slice(3, i, i + latent_h).slice(4, j, j + latent_w)));
    }
    rows.push_back(std::move(row));
  }
  std::vector<torch::Tensor> result_rows;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<torch::Tensor> result_row;
    for (std::size_t j = 0; j < rows[i].size(); ++j) {
      auto& tile = rows[i][j];
      if (i > 0) blend(rows[i - 1][j], tile, blend_h, 3);
      if (j > 0) blend(rows[i][j - 1], tile, blend_w, 4);
      result_row.push_back(tile.slice(3, 0, limit_h).slice(4, 0, limit_w));
    }
    result_rows.push_back(torch::cat(result_row, 4));
  }
  return torch::cat(result_rows, 3);
}

torch::Tensor AutoencoderKLHunyuanVideo15Impl::encode_moments(const torch::Tensor& x) {
  if (encoder_.is_empty()) throw ModelError("this VAE was built without its encoder");
  if (x.dim() != 5 || x.size(1) != options_.in_channels) {
    throw ModelError("VAE encode expects [B, " + std::to_string(options_.in_channels) +
                     ", F, H, W] video");
  }
  const auto w = encoder_->parameters().front();
  return encoder_(x.to(w.device(), w.scalar_type()));
}

torch::Tensor AutoencoderKLHunyuanVideo15Impl::encode_mean(const torch::Tensor& x) {
  const auto moments = encode_moments(x);
  return moments.slice(1, 0, options_.latent_channels);
}

}  // namespace omnidp::models::hv15
