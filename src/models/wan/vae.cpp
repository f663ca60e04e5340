#include "omnidp/models/wan/vae.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {

namespace {

using json = nlohmann::json;

// Frames processed by the reference encoder per step after the first frame.
constexpr std::int64_t kEncodeStep = 4;

// AutoencoderKLWan's defaults for latents_mean / latents_std (the Wan2.1 VAE's statistics): a
// config without them gets these, as diffusers does.
const std::vector<double> kWan21LatentsMean{-0.7571, -0.7089, -0.9113, 0.1075,  -0.1745, 0.9653,
                                            -0.1517, 1.5508,  0.4134,  -0.0715, 0.5517,  -0.3632,
                                            -0.1922, -0.9497, 0.2503,  -0.2921};
const std::vector<double> kWan21LatentsStd{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708,
                                           2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579,
                                           1.6382, 1.1253, 2.8251, 1.9160};

}  // namespace

AutoencoderKLWanOptions AutoencoderKLWanOptions::from_json_text(const std::string& text,
                                                                const std::string& origin) {
  const json j = parse_json_object(text, origin);
  AutoencoderKLWanOptions o;
  o.base_dim = config_value<std::int64_t>(j, "base_dim", 96, origin);
  o.decoder_base_dim = config_value<std::int64_t>(j, "decoder_base_dim", o.base_dim, origin);
  o.z_dim = config_value<std::int64_t>(j, "z_dim", 16, origin);
  o.dim_mult = config_value<std::vector<std::int64_t>>(j, "dim_mult", {1, 2, 4, 4}, origin);
  o.num_res_blocks = config_value<std::int64_t>(j, "num_res_blocks", 2, origin);
  o.temperal_downsample =
      config_value<std::vector<bool>>(j, "temperal_downsample", {false, true, true}, origin);
  o.is_residual = config_value<bool>(j, "is_residual", false, origin);
  o.in_channels = config_value<std::int64_t>(j, "in_channels", 3, origin);
  o.out_channels = config_value<std::int64_t>(j, "out_channels", 3, origin);
  o.patch_size = config_value<std::int64_t>(j, "patch_size", 1, origin);
  o.scale_factor_temporal = config_value<std::int64_t>(j, "scale_factor_temporal", 4, origin);
  o.scale_factor_spatial = config_value<std::int64_t>(j, "scale_factor_spatial", 8, origin);
  o.latents_mean = config_value<std::vector<double>>(j, "latents_mean", kWan21LatentsMean, origin);
  o.latents_std = config_value<std::vector<double>>(j, "latents_std", kWan21LatentsStd, origin);
  if (!config_value<std::vector<double>>(j, "attn_scales", {}, origin).empty()) {
    throw WeightsError(origin,
                       "attn_scales are not supported (the released Wan VAEs have attention only "
                       "in their mid blocks)");
  }
  o.validate(origin);
  return o;
}

AutoencoderKLWanOptions AutoencoderKLWanOptions::from_file(const std::filesystem::path& path) {
  const auto file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  return from_json_text(read_json_object(file).dump(), file.string());
}

AutoencoderKLWanOptions AutoencoderKLWanOptions::wan22_ti2v_5b() {
  AutoencoderKLWanOptions o;  // the defaults are this configuration's architecture
  o.latents_mean = {-0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174,  0.1838,  0.1557,
                    -0.1382, 0.0542,  0.2813,  0.0891,  0.1570,  -0.0098, 0.0375,  -0.1825,
                    -0.2246, -0.1207, -0.0698, 0.5109,  0.2665,  -0.2108, -0.2158, 0.2502,
                    -0.2055, -0.0322, 0.1109,  0.1567,  -0.0729, 0.0899,  -0.2799, -0.1230,
                    -0.0313, -0.1649, 0.0117,  0.0723,  -0.2839, -0.2083, -0.0520, 0.3748,
                    0.0152,  0.1957,  0.1433,  -0.2944, 0.3573,  -0.0548, -0.1681, -0.0667};
  o.latents_std = {0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344,
                   0.5894, 1.0901, 0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804,
                   0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999,
                   0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887,
                   0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744};
  return o;
}

AutoencoderKLWanOptions AutoencoderKLWanOptions::wan21() {
  AutoencoderKLWanOptions o;
  o.base_dim = o.decoder_base_dim = 96;
  o.z_dim = 16;
  o.is_residual = false;
  o.in_channels = o.out_channels = 3;
  o.patch_size = 1;
  o.scale_factor_spatial = 8;
  o.latents_mean = kWan21LatentsMean;
  o.latents_std = kWan21LatentsStd;
  return o;
}

void AutoencoderKLWanOptions::validate(const std::string& origin) const {
  const auto fail = [&](const std::string& message) { throw WeightsError(origin, message); };
  if (base_dim <= 0 || decoder_base_dim <= 0 || z_dim <= 0 || num_res_blocks < 1 ||
      in_channels <= 0 || out_channels <= 0 || patch_size < 1) {
    fail(
        "base_dim, decoder_base_dim, z_dim, in/out_channels and patch_size must be positive, "
        "num_res_blocks at least 1");
  }
  if (dim_mult.empty() || temperal_downsample.size() + 1 != dim_mult.size()) {
    fail("temperal_downsample must have one entry fewer than dim_mult (" +
         std::to_string(dim_mult.size()) + " levels)");
  }
  if (in_channels % (patch_size * patch_size) != 0 || out_channels % (patch_size * patch_size) != 0) {
    fail("in_channels and out_channels must be multiples of patch_size^2");
  }
  if (!latents_mean.empty() && static_cast<std::int64_t>(latents_mean.size()) != z_dim) {
    fail("latents_mean has " + std::to_string(latents_mean.size()) + " values, z_dim is " +
         std::to_string(z_dim));
  }
  if (!latents_std.empty() && static_cast<std::int64_t>(latents_std.size()) != z_dim) {
    fail("latents_std has " + std::to_string(latents_std.size()) + " values, z_dim is " +
         std::to_string(z_dim));
  }
}

// ---------------------------------------------------------------------------------------------

AutoencoderKLWanImpl::AutoencoderKLWanImpl(AutoencoderKLWanOptions options)
    : options_(std::move(options)) {
  options_.validate("AutoencoderKLWan");
  const auto& o = options_;
  const std::array<std::int64_t, 3> one{1, 1, 1};
  encoder = register_module(
      "encoder", WanEncoder3d(o.in_channels, o.base_dim, o.z_dim * 2, o.dim_mult, o.num_res_blocks,
                              o.temperal_downsample, o.is_residual));
  quant_conv = register_module("quant_conv", WanCausalConv3d(o.z_dim * 2, o.z_dim * 2, one));
  post_quant_conv = register_module("post_quant_conv", WanCausalConv3d(o.z_dim, o.z_dim, one));
  const std::vector<bool> temporal_upsample(o.temperal_downsample.rbegin(),
                                            o.temperal_downsample.rend());
  decoder = register_module("decoder",
                            WanDecoder3d(o.decoder_base_dim, o.z_dim, o.dim_mult, o.num_res_blocks,
                                         temporal_upsample, o.out_channels, o.is_residual));
}

torch::ScalarType AutoencoderKLWanImpl::dtype() const {
  return post_quant_conv->weight.scalar_type();
}

void AutoencoderKLWanImpl::set_channels_last(bool on) {
  torch::NoGradGuard no_grad;
  for (auto& p : parameters(true)) {
    if (p.dim() == 5)
      p.set_data(p.contiguous(on ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::Contiguous));
    if (p.dim() == 4)
      p.set_data(p.contiguous(on ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous));
  }
}

torch::Device AutoencoderKLWanImpl::device() const { return post_quant_conv->weight.device(); }

std::int64_t AutoencoderKLWanImpl::video_frames(std::int64_t latent_frames) const noexcept {
  return latent_frames <= 0 ? 0 : 1 + options_.scale_factor_temporal * (latent_frames - 1);
}

std::int64_t AutoencoderKLWanImpl::latent_frames(std::int64_t video_frames) const noexcept {
  return video_frames <= 0 ? 0 : 1 + (video_frames - 1) / options_.scale_factor_temporal;
}

torch::Tensor AutoencoderKLWanImpl::decode_frames(const torch::Tensor& x, std::int64_t chunk_frames) {
  CausalCache cache;
  std::vector<torch::Tensor> outputs;
  const auto total = x.size(2);
  for (std::int64_t begin = 0; begin < total; begin += chunk_frames) {
    cache.begin_chunk();
    outputs.push_back(
        decoder->forward(x.slice(2, begin, std::min(total, begin + chunk_frames)), cache));
    cache.end_chunk();
  }
  return outputs.size() == 1 ? outputs.front() : torch::cat(outputs, 2);
}

torch::Tensor AutoencoderKLWanImpl::decode(const torch::Tensor& z, std::int64_t chunk_frames) {
  if (z.dim() != 5 || z.size(1) != options_.z_dim || z.size(2) < 1) {
    throw ModelError("AutoencoderKLWan.decode: expected latents [B, " +
                     std::to_string(options_.z_dim) + ", T>=1, h, w], got " +
                     shape_string(z.sizes()));
  }
  if (chunk_frames < 1) {
    throw ModelError("AutoencoderKLWan.decode: chunk_frames must be at least 1");
  }
  torch::NoGradGuard no_grad;
  const auto x = post_quant_conv->forward(z.to(device(), dtype()));
  return unpatchify(decode_frames(x, chunk_frames), options_.patch_size).clamp_(-1.0, 1.0);
}

WanLatentDist AutoencoderKLWanImpl::encode(const torch::Tensor& x, std::int64_t chunk_frames) {
  const auto p = options_.patch_size;
  const auto channels = options_.in_channels / (p * p);
  if (x.dim() != 5 || x.size(1) != channels || x.size(2) < 1) {
    throw ModelError("AutoencoderKLWan.encode: expected video [B, " + std::to_string(channels) +
                     ", F>=1, H, W], got " + shape_string(x.sizes()));
  }
  if (chunk_frames < kEncodeStep || chunk_frames % kEncodeStep != 0) {
    throw ModelError(
        "AutoencoderKLWan.encode: chunk_frames must be a positive multiple of 4, "
        "got " +
        std::to_string(chunk_frames));
  }
  torch::NoGradGuard no_grad;
  const auto patches = patchify(x.to(device(), dtype()), p);
  // The reference encodes 1 + 4k frames and drops the rest.
  const auto used = 1 + kEncodeStep * ((patches.size(2) - 1) / kEncodeStep);
  CausalCache cache;
  std::vector<torch::Tensor> outputs;
  for (std::int64_t begin = 0; begin < used;) {
    const auto end = begin == 0 ? 1 : std::min(used, begin + chunk_frames);
    cache.begin_chunk();
    outputs.push_back(encoder->forward(patches.slice(2, begin, end), cache));
    cache.end_chunk();
    begin = end;
  }
  const auto moments = quant_conv->forward(torch::cat(outputs, 2));
  auto halves = moments.chunk(2, 1);
  return {halves[0], halves[1].clamp(-30.0, 20.0)};
}

torch::Tensor AutoencoderKLWanImpl::latent_stat(const std::vector<double>& values,
                                                const char* name) const {
  if (values.empty()) {
    throw ModelError(std::string("AutoencoderKLWan: the config has no ") + name);
  }
  return torch::tensor(values, torch::kFloat32).reshape({1, options_.z_dim, 1, 1, 1});
}

torch::Tensor AutoencoderKLWanImpl::normalize_latents(const torch::Tensor& z) const {
  const auto opts = torch::TensorOptions().device(z.device()).dtype(z.scalar_type());
  const auto mean = latent_stat(options_.latents_mean, "latents_mean").to(opts);
  const auto inv_std = (1.0 / latent_stat(options_.latents_std, "latents_std")).to(opts);
  return (z - mean) * inv_std;
}

torch::Tensor AutoencoderKLWanImpl::denormalize_latents(const torch::Tensor& z) const {
  const auto opts = torch::TensorOptions().device(z.device()).dtype(z.scalar_type());
  const auto mean = latent_stat(options_.latents_mean, "latents_mean").to(opts);
  const auto inv_std = (1.0 / latent_stat(options_.latents_std, "latents_std")).to(opts);
  return z / inv_std + mean;
}

AutoencoderKLWan load_autoencoder_kl_wan(const std::filesystem::path& dir, torch::ScalarType dtype,
                                         torch::Device device) {
  AutoencoderKLWan vae(AutoencoderKLWanOptions::from_file(dir));
  load_state_dict(*vae, Checkpoint::open(dir), dtype, device);
  vae->eval();
  return vae;
}

void init_random_vae_weights(AutoencoderKLWanImpl& vae, std::uint64_t seed) {
  init_random_weights(vae, seed);
  torch::NoGradGuard no_grad;
  for (auto& p : vae.named_parameters()) {
    const auto& name = p.key();
    if (name.size() >= 6 && name.compare(name.size() - 6, 6, ".gamma") == 0) {
      p.value().fill_(1.0);
    }
  }
}

}  // namespace omnidp::models::wan
