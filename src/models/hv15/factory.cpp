#include "omnidp/models/hv15/factory.hpp"

#include <filesystem>

#include "omnidp/common/error.hpp"
#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/layers/torch_settings.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/vision/siglip_encoder.hpp"
#include "omnidp/models/weights/checkpoint.hpp"

namespace omnidp::models::hv15 {
namespace fs = std::filesystem;
namespace {

torch::ScalarType to_torch(DType dtype) {
  switch (dtype) {
    case DType::bf16: return torch::kBFloat16;
    case DType::fp16: return torch::kFloat16;
    case DType::fp32: break;
  }
  return torch::kFloat32;
}

}  // namespace

std::unique_ptr<Pipeline> create_hunyuanvideo15_pipeline(const Config& config, const DeviceBinding& binding) {
  const auto& m = config.model;
  torch::Device device(torch::kCPU);
  if (binding.kind == DeviceKind::cuda) {
    if (!torch::cuda::is_available()) {
      throw ConfigError("model.device", "cuda requested but this libtorch/machine has no CUDA device");
    }
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(binding.index));
  }
  const auto dtype = to_torch(m.dtype);
  apply_torch_settings(config);

  PipelineParts parts;
  parts.model_name = m.name;
  parts.device_name = binding.name.empty() ? device.str() : binding.name;
  parts.max_image_pixels = config.input.max_image_pixels;
  const fs::path root(m.path);
  if (!m.path.empty()) {
    if (const auto guider = component_config(root / "guider", "guider_config.json")) {
      parts.guidance = guidance_options_from_json(read_json(*guider), guider->string());
    }
    if (const auto scheduler = component_config(root / "scheduler", "scheduler_config.json")) {
      parts.scheduler = scheduler_options_from_json(read_json(*scheduler), scheduler->string());
    }
  }

  if (m.weights == WeightsSource::pretrained) {
    if (m.path.empty()) throw ConfigError("model.path", "hunyuanvideo-1.5 with pretrained weights needs model.path");
    parts.transformer = load_transformer(root / "transformer", dtype, device);
    parts.vae = load_vae(root / "vae", dtype, device);
    // Qwen2.5-VL text + Glyph byT5 from tokenizer/, text_encoder/, tokenizer_2/, text_encoder_2/;
    // a snapshot without text_encoder/ (transformer and VAE only) takes prompt_embeds files.
    if (fs::exists(root / "text_encoder")) {
      parts.text_encoder = text::load_hv15_text_encoder(root, dtype, {device, m.offload_text_encoder});
    }
    // SigLIP from image_encoder/ + feature_extractor/ (the I2V snapshot); without them an I2V
    // request takes its image tokens from its prompt_embeds file.
    if (fs::exists(root / "image_encoder")) {
      if (!fs::exists(root / "feature_extractor")) {
        throw WeightsError((root / "feature_extractor").string(),
                           "the snapshot has image_encoder/ but no feature_extractor/ "
                           "(preprocessor_config.json of the SigLIP image processor)");
      }
      parts.image_encoder =
          vision::load_siglip_image_encoder(root / "image_encoder", root / "feature_extractor", dtype, device);
    }
  } else {
    TransformerOptions topts;  // the released 8.3B configuration
    VaeOptions vopts;
    if (!m.path.empty()) {
      const auto tconfig = root / "transformer" / "config.json";
      const auto vconfig = root / "vae" / "config.json";
      topts = TransformerOptions::from_json(read_json(tconfig), tconfig.string());
      vopts = VaeOptions::from_json(read_json(vconfig), vconfig.string());
    }
    parts.transformer = random_transformer(topts, m.weights_seed, dtype, device);
    parts.vae = random_vae(vopts, m.weights_seed + 1, dtype, device);
    parts.random_conditioning = true;
  }
  return std::make_unique<HunyuanVideo15Pipeline>(std::move(parts), device);
}

}  // namespace omnidp::models::hv15
