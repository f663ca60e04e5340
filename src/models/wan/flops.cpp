#include "omnidp/models/wan/flops.hpp"

#include <cmath>

#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/conv_macs.hpp"

namespace omnidp::models::wan {
namespace {

// Multiply-adds of the VAE's layers (WanResidualBlock: ConvMacs::residual).
struct Macs : ConvMacs {
  // WanAttentionBlock(c) at f frames of p pixels: qkv (c -> 3c) and proj 1x1 convs, one head.
  void attention(double f, double p, std::int64_t c) {
    const double cd = static_cast<double>(c);
    total += f * (4.0 * p * cd * cd + 2.0 * p * p * cd);
  }
  // WanMidBlock(c, 1): residual, attention, residual.
  void mid(double f, double p, std::int64_t c) {
    residual(f, p, c, c);
    attention(f, p, c);
    residual(f, p, c, c);
  }
};

}  // namespace

double wan_vae_decode_flops(const AutoencoderKLWanOptions& o, std::int64_t latent_frames,
                            std::int64_t latent_height, std::int64_t latent_width) {
  if (latent_frames < 1 || latent_height < 1 || latent_width < 1) {
    throw ModelError("wan_vae_decode_flops: latent sizes must be positive");
  }
  std::vector<std::int64_t> dims{o.decoder_base_dim * o.dim_mult.back()};
  for (auto it = o.dim_mult.rbegin(); it != o.dim_mult.rend(); ++it) {
    dims.push_back(o.decoder_base_dim * *it);
  }
  const std::vector<bool> temporal_up(o.temperal_downsample.rbegin(), o.temperal_downsample.rend());
  Macs m;
  double f = static_cast<double>(latent_frames);
  double p = static_cast<double>(latent_height * latent_width);
  m.conv(f * p, o.z_dim, o.z_dim, 1.0);   // post_quant_conv
  m.conv(f * p, o.z_dim, dims[0], 27.0);  // conv_in
  m.mid(f, p, dims[0]);
  const std::size_t levels = o.dim_mult.size();
  for (std::size_t i = 0; i < levels; ++i) {
    // Wan2.1: each level after the first starts at half width (its upsampler halves it).
    const std::int64_t in = i > 0 && !o.is_residual ? dims[i] / 2 : dims[i];
    const std::int64_t out = dims[i + 1];
    for (std::int64_t r = 0; r < o.num_res_blocks + 1; ++r)
      m.residual(f, p, r == 0 ? in : out, out);
    if (i + 1 == levels) break;  // the last block does not upsample
    if (temporal_up.at(i)) {
      m.conv((f - 1.0) * p, out, 2 * out, 3.0);  // time_conv on every frame but the first
      f = 1.0 + 2.0 * (f - 1.0);
    }
    p *= 4.0;
    m.conv(f * p, out, o.is_residual ? out : out / 2, 9.0);  // the 3x3 conv after the x2 upsample
  }
  m.conv(f * p, dims.back(), o.out_channels, 27.0);  // conv_out
  return 2.0 * m.total;
}

double wan_vae_encode_flops(const AutoencoderKLWanOptions& o, std::int64_t frames,
                            std::int64_t height, std::int64_t width) {
  if (frames < 1 || height < 1 || width < 1 || height % o.scale_factor_spatial != 0 ||
      width % o.scale_factor_spatial != 0) {
    throw ModelError(
        "wan_vae_encode_flops: frames must be positive, the size a positive multiple of " +
        std::to_string(o.scale_factor_spatial));
  }
  std::vector<std::int64_t> dims{o.base_dim};
  for (const auto mult : o.dim_mult) dims.push_back(o.base_dim * mult);
  Macs m;
  double f =
      static_cast<double>(1 + o.scale_factor_temporal * ((frames - 1) / o.scale_factor_temporal));
  double p = static_cast<double>((height / o.patch_size) * (width / o.patch_size));
  m.conv(f * p, o.in_channels, dims[0], 27.0);  // conv_in
  const std::size_t levels = o.dim_mult.size();
  for (std::size_t i = 0; i < levels; ++i) {
    const std::int64_t in = dims[i];
    const std::int64_t out = dims[i + 1];
    for (std::int64_t r = 0; r < o.num_res_blocks; ++r) m.residual(f, p, r == 0 ? in : out, out);
    if (i + 1 == levels) break;  // the last block does not downsample
    p /= 4.0;
    m.conv(f * p, out, out, 9.0);  // the stride-2 3x3 conv
    if (o.temperal_downsample.at(i)) {
      f = 1.0 + std::floor((f - 1.0) / 2.0);  // the first frame kept, then stride 2
      m.conv((f - 1.0) * p, out, out, 3.0);   // time_conv (not on the first frame)
    }
  }
  m.mid(f, p, dims.back());
  m.conv(f * p, dims.back(), 2 * o.z_dim, 27.0);  // conv_out
  m.conv(f * p, 2 * o.z_dim, 2 * o.z_dim, 1.0);   // quant_conv
  return 2.0 * m.total;
}

double wan_vae_encode_image_flops(const AutoencoderKLWanOptions& o, std::int64_t height,
                                  std::int64_t width) {
  return wan_vae_encode_flops(o, 1, height, width);
}

RequestFlops wan_request_flops(const WanTransformerOptions& t, const AutoencoderKLWanOptions& v,
                               const WanFlopsInputs& in) {
  const std::int64_t latent_frames = (in.num_frames - 1) / v.scale_factor_temporal + 1;
  const std::int64_t h = in.height / v.scale_factor_spatial;
  const std::int64_t w = in.width / v.scale_factor_spatial;
  const std::int64_t tokens =
      (latent_frames / t.patch_size[0]) * (h / t.patch_size[1]) * (w / t.patch_size[2]);
  RequestFlops f;
  const double steps = static_cast<double>(in.num_inference_steps);
  f.transformer = steps * wan_forward_flops(t, tokens, in.text_tokens, in.image_tokens);
  if (in.cfg) {
    f.transformer += steps * wan_forward_flops(t, tokens, in.negative_text_tokens, in.image_tokens);
  }
  f.vae = wan_vae_decode_flops(v, latent_frames, h, w);
  // I2V: the image alone (expand_timesteps), or the whole conditioning video (the image, zero
  // frames, an optional last image: the 36-channel transformers).
  if (in.i2v) {
    f.vae += t.in_channels == v.z_dim ? wan_vae_encode_image_flops(v, in.height, in.width)
                                      : wan_vae_encode_flops(v, in.num_frames, in.height, in.width);
  }
  f.text = in.text_flops;
  f.image = in.image_flops;
  return f;
}

double wan_forward_flops(const WanTransformerOptions& o, std::int64_t tokens,
                         std::int64_t text_tokens, std::int64_t image_tokens) {
  const double n = static_cast<double>(tokens);
  const double d = static_cast<double>(o.inner_dim());
  const double ff = static_cast<double>(o.ffn_dim);
  // The image's added K/V attention is one more cross-attention context, over Li tokens.
  const double lc = static_cast<double>(text_tokens + image_tokens);
  const double per_layer =
      2.0 * n * (6.0 * d * d + 2.0 * d * ff) + 4.0 * n * n * d + 4.0 * n * lc * d + 4.0 * lc * d * d;
  return static_cast<double>(o.num_layers) * per_layer;
}

}  // namespace omnidp::models::wan
