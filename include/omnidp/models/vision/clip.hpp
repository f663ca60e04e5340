#pragma once
// The CLIP vision tower (transformers' CLIPVisionModel + CLIPImageProcessor), the image encoder
// of Wan2.1 image-to-video (ViT-H/14: hidden 1280, 32 layers, 16 heads, 257 tokens), of which
// the pipeline takes hidden_states[-2]: the output of every encoder layer but the last.
//
// Embeddings: a class token, then the patches (Conv2d without bias, kernel = stride = patch),
// plus a learned position per token; pre_layrnorm; the encoder layers are SigLIP's
// (siglip.hpp: the same pre-LN layer and parameter names); post_layernorm. Parameter names are
// transformers' (`vision_model.embeddings.class_embedding`, `...patch_embedding.weight`,
// `...position_embedding.weight`, `vision_model.pre_layrnorm.*`, `vision_model.encoder.layers.N.*`,
// `vision_model.post_layernorm.*`), with or without the `vision_model.` prefix.
// Threading: one module per replica, forward from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "omnidp/models/layers/image_encoder.hpp"
#include "omnidp/models/vision/siglip.hpp"
#include "omnidp/models/vision/siglip_processor.hpp"

namespace omnidp::models::vision {

// The encoder layers' options from a CLIP config.json (CLIPVisionConfig, model_type
// clip_vision_model, or a CLIPConfig's `vision_config`): hidden_act defaults to quick_gelu,
// layer_norm_eps to 1e-5, no pooling head. Throws WeightsError naming `origin` and the key.
[[nodiscard]] SiglipVisionOptions clip_vision_options(const nlohmann::json& config,
                                                      const std::string& origin);

// class_embedding [D], patch_embedding (Conv2d, no bias), position_embedding [1 + patches, D].
class ClipVisionEmbeddingsImpl : public torch::nn::Module {
 public:
  ClipVisionEmbeddingsImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  // pixel_values [B, C, S, S] -> [B, 1 + patches, D]: the class token first.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& pixel_values) const;
  torch::Tensor class_embedding;
  torch::nn::Conv2d patch_embedding{nullptr};
  text::Embedding position_embedding{nullptr};

 private:
  std::int64_t patch_size_;
};
TORCH_MODULE(ClipVisionEmbeddings);

class ClipVisionModelImpl : public torch::nn::Module {
 public:
  explicit ClipVisionModelImpl(const SiglipVisionOptions& options, const ParamSpec& spec = {});
  // pixel_values [B, C, image_size, image_size] -> hidden_states[-2] [B, 1 + patches, hidden]
  // in the parameters' dtype. Throws ModelError for another shape.
  [[nodiscard]] torch::Tensor penultimate_hidden_state(const torch::Tensor& pixel_values) const;
  [[nodiscard]] const SiglipVisionOptions& options() const noexcept { return options_; }
  [[nodiscard]] torch::ScalarType dtype() const { return pre_layrnorm->weight.scalar_type(); }
  [[nodiscard]] torch::Device device() const { return pre_layrnorm->weight.device(); }

  ClipVisionEmbeddings embeddings{nullptr};
  SiglipLayerNorm pre_layrnorm{nullptr}, post_layernorm{nullptr};
  SiglipEncoder encoder{nullptr};

 private:
  SiglipVisionOptions options_;
};
TORCH_MODULE(ClipVisionModel);

// A transformers `image_encoder/` folder, loaded strictly into `dtype` on `device`. Throws
// WeightsError.
[[nodiscard]] ClipVisionModel load_clip_vision(const std::filesystem::path& dir,
                                               torch::ScalarType dtype, torch::Device device);

// CLIPImageProcessor: resize so that the shortest edge is `shortest_edge` (the other
// int(shortest_edge x long / short)), center crop to crop_height x crop_width, then rescale and
// normalise as SigLIP's processor (`normalize`, do_resize off) in the same convention.
struct ClipImageProcessorOptions {
  int shortest_edge = 224;
  bool do_center_crop = true;
  int crop_height = 224;
  int crop_width = 224;
  SiglipImageProcessorOptions normalize;  // resample, rescale, mean/std, convention

  // From a preprocessor_config.json (image_processor_type CLIPImageProcessor or
  // CLIPImageProcessorFast: the torchvision convention; CLIPImageProcessorPil: Pillow).
  // Throws WeightsError naming `origin` and the key.
  [[nodiscard]] static ClipImageProcessorOptions from_json(const nlohmann::json& config,
                                                           const std::string& origin);
};

// pixel_values [1, 3, crop_height, crop_width] float32 on the CPU.
[[nodiscard]] torch::Tensor clip_preprocess(const RgbImage& image,
                                            const ClipImageProcessorOptions& options);

// The ImageEncoder of Wan2.1 image-to-video: CLIPImageProcessor, then CLIPVisionModel's
// hidden_states[-2] ([1, 257, 1280] for ViT-H/14), as WanImageToVideoPipeline.encode_image.
// Owns both; encode() from one thread.
class ClipImageEncoder final : public ImageEncoder {
 public:
  ClipImageEncoder(ClipVisionModel model, ClipImageProcessorOptions processor);
  // penultimate_hidden_state of the processed image, in the model's dtype on its device.
  [[nodiscard]] torch::Tensor encode(const RgbImage& image) override;
  // clip_vision_flops of the model (vision/flops.hpp): one encode()'s FLOPs.
  [[nodiscard]] double encode_flops() const;
  // The tokens encode() returns: the class token and the patches.
  [[nodiscard]] std::int64_t tokens() const;

 private:
  ClipVisionModel model_;
  ClipImageProcessorOptions processor_;
};

// The released CLIP ViT-H/14 of Wan2.1 I2V (image_encoder/config.json: 1280 wide, 32 layers of
// 16 heads, MLP 5120, 224 px, patch 14, GELU) and a CLIPImageProcessor configuration
// (preprocessor_config.json: shortest edge and center crop `size`, CLIP's mean and std,
// bicubic), for built-in layouts and benchmark snapshots.
[[nodiscard]] nlohmann::json clip_vit_h14_config();
[[nodiscard]] nlohmann::json clip_processor_config(int size);

// An encoder of CLIP vision `config` (config.json's keys) with seeded random weights
// (init_random_weights) in `dtype` on `device`, with the processor of `processor`.
[[nodiscard]] std::unique_ptr<ClipImageEncoder> random_clip_image_encoder(
    const nlohmann::json& config, const nlohmann::json& processor, std::uint64_t seed,
    torch::ScalarType dtype, torch::Device device);

// A snapshot's image_encoder/ (config.json + safetensors) and image_processor/
// (preprocessor_config.json). Throws WeightsError naming the folder or the file.
[[nodiscard]] std::unique_ptr<ClipImageEncoder> load_clip_image_encoder(
    const std::filesystem::path& encoder_dir, const std::filesystem::path& processor_dir,
    torch::ScalarType dtype, torch::Device device);

}  // namespace omnidp::models::vision
