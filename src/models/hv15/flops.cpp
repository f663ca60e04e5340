#include "omnidp/models/hv15/flops.hpp"

#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/conv_macs.hpp"

namespace omnidp::models::hv15 {
namespace {

std::int64_t log2_of(std::int64_t v) {
  std::int64_t n = 0;
  while ((std::int64_t{1} << n) < v) ++n;
  return n;
}

// Multiply-adds of the VAE's layers (VaeResnetBlock: ConvMacs::residual).
struct Macs : ConvMacs {
  // VaeMidBlock(c): resnet, block-causal attention, resnet.
  void mid(double f, double p, std::int64_t c) {
    const double cd = static_cast<double>(c);
    residual(f, p, c, c);
    total += 4.0 * f * p * cd * cd;       // to_q, to_k, to_v, proj_out
    total += cd * p * p * f * (f + 1.0);  // scores and values: 2 x C P^2 x sum(i + 1)
    residual(f, p, c, c);
  }
};

}  // namespace

double hv15_forward_flops(const TransformerOptions& o, std::int64_t video_tokens,
                          std::int64_t text_tokens) {
  const double d = static_cast<double>(o.inner_dim());
  const double f = d * o.mlp_ratio;
  const double s = static_cast<double>(video_tokens + text_tokens);
  return static_cast<double>(o.num_layers) *
         (2.0 * s * (4.0 * d * d + 2.0 * d * f) + 4.0 * s * s * d);
}

double hv15_vae_decode_flops(const VaeOptions& o, std::int64_t latent_frames,
                             std::int64_t latent_height, std::int64_t latent_width) {
  if (latent_frames < 1 || latent_height < 1 || latent_width < 1) {
    throw ModelError("hv15_vae_decode_flops: latent sizes must be positive");
  }
  const std::vector<std::int64_t> boc(o.block_out_channels.rbegin(), o.block_out_channels.rend());
  const auto log_s = log2_of(o.spatial_compression_ratio);
  const auto log_t = log2_of(o.temporal_compression_ratio);
  Macs m;
  double f = static_cast<double>(latent_frames);
  double p = static_cast<double>(latent_height * latent_width);
  m.conv(f * p, o.latent_channels, boc[0], 27.0);  // conv_in
  m.mid(f, p, boc[0]);
  std::int64_t input = boc[0];
  for (std::size_t i = 0; i < boc.size(); ++i) {
    const auto idx = static_cast<std::int64_t>(i);
    for (std::int64_t r = 0; r < o.layers_per_block + 1; ++r) {
      m.residual(f, p, r == 0 ? input : boc[i], boc[i]);
    }
    input = boc[i];
    if (idx < log_s || idx < log_t) {
      const bool temporal = idx < log_t;
      const auto up_out = o.upsample_match_channel ? boc[i + 1] : boc[i];
      m.conv(f * p, boc[i], up_out * (temporal ? 8 : 4), 27.0);
      p *= 4.0;
      if (temporal) f = 1.0 + 2.0 * (f - 1.0);
      input = up_out;
    }
  }
  m.conv(f * p, boc.back(), o.out_channels, 27.0);  // conv_out
  return 2.0 * m.total;
}

double hv15_vae_encode_image_flops(const VaeOptions& o, std::int64_t height, std::int64_t width) {
  if (height < 1 || width < 1 || height % o.spatial_compression_ratio != 0 ||
      width % o.spatial_compression_ratio != 0) {
    throw ModelError("hv15_vae_encode_image_flops: the size must be a positive multiple of " +
                     std::to_string(o.spatial_compression_ratio));
  }
  const auto& boc = o.block_out_channels;
  const auto log_s = log2_of(o.spatial_compression_ratio);
  const auto log_st = log2_of(o.spatial_compression_ratio / o.temporal_compression_ratio);
  Macs m;
  const double f = 1.0;
  double p = static_cast<double>(height * width);
  m.conv(f * p, o.in_channels, boc[0], 27.0);  // conv_in
  std::int64_t input = boc[0];
  for (std::size_t i = 0; i < boc.size(); ++i) {
    const auto idx = static_cast<std::int64_t>(i);
    for (std::int64_t r = 0; r < o.layers_per_block; ++r) {
      m.residual(f, p, r == 0 ? input : boc[i], boc[i]);
    }
    input = boc[i];
    if (idx < log_s) {
      const auto down_out = o.downsample_match_channel ? boc[i + 1] : boc[i];
      m.conv(f * p, boc[i], down_out / (idx >= log_st ? 8 : 4), 27.0);
      p /= 4.0;
      input = down_out;
    }
  }
  m.mid(f, p, boc.back());
  m.conv(f * p, boc.back(), 2 * o.latent_channels, 27.0);  // conv_out
  return 2.0 * m.total;
}

RequestFlops hv15_request_flops(const TransformerOptions& t, const VaeOptions& v,
                                const Hv15FlopsInputs& in) {
  const std::int64_t latent_frames = (in.num_frames - 1) / v.temporal_compression_ratio + 1;
  const std::int64_t h = in.height / v.spatial_compression_ratio;
  const std::int64_t w = in.width / v.spatial_compression_ratio;
  const std::int64_t tokens =
      latent_frames / t.patch_size_t * (h / t.patch_size) * (w / t.patch_size);
  RequestFlops f;
  f.transformer =
      static_cast<double>(in.num_inference_steps) * hv15_forward_flops(t, tokens, in.text_tokens) +
      static_cast<double>(in.cfg_steps) * hv15_forward_flops(t, tokens, in.negative_text_tokens);
  f.vae = hv15_vae_decode_flops(v, latent_frames, h, w);
  if (in.i2v) f.vae += hv15_vae_encode_image_flops(v, in.height, in.width);
  f.text = in.text_flops;
  f.image = in.image_flops;
  return f;
}

}  // namespace omnidp::models::hv15
