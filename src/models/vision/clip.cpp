#include "omnidp/models/vision/clip.hpp"

#include <algorithm>
#include <cmath>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/vision/flops.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::vision {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& key, const std::string& what) {
  throw WeightsError(origin, "CLIP: key '" + key + "' " + what);
}

int positive_int(const json& config, const std::string& key, const std::string& origin) {
  if (!config.is_number_integer() || config.get<long long>() <= 0) {
    fail(origin, key, "must be a positive integer, got " + config.dump());
  }
  return config.get<int>();
}

}  // namespace

SiglipVisionOptions clip_vision_options(const json& config_in, const std::string& origin) {
  if (!config_in.is_object()) throw WeightsError(origin, "CLIP vision config: not a JSON object");
  const json& config =
      config_in.contains("vision_config") ? config_in.at("vision_config") : config_in;
  const auto type = config.value("model_type", std::string("clip_vision_model"));
  if (type != "clip_vision_model") {
    fail(origin, "model_type", "is '" + type + "', expected 'clip_vision_model'");
  }
  // SigLIP's reader checks the shared keys; CLIP's defaults differ for two of them.
  json as_siglip = config;
  as_siglip["model_type"] = "siglip_vision_model";
  if (!as_siglip.contains("hidden_act") || as_siglip.at("hidden_act").is_null()) {
    as_siglip["hidden_act"] = "quick_gelu";
  }
  if (!as_siglip.contains("layer_norm_eps") || as_siglip.at("layer_norm_eps").is_null()) {
    as_siglip["layer_norm_eps"] = 1e-5;
  }
  as_siglip["vision_use_head"] = false;
  return SiglipVisionOptions::from_json(as_siglip, origin);
}

ClipVisionEmbeddingsImpl::ClipVisionEmbeddingsImpl(const SiglipVisionOptions& o, const ParamSpec& spec)
    : patch_size_(o.patch_size) {
  class_embedding =
      register_parameter("class_embedding", torch::zeros({o.hidden_size}, spec.options()), false);
  patch_embedding = register_module(
      "patch_embedding",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(o.num_channels, o.hidden_size, o.patch_size)
                            .stride(o.patch_size)
                            .bias(false)));
  patch_embedding->to(spec.device, spec.dtype);
  position_embedding = register_module("position_embedding",
                                       text::Embedding(o.num_patches() + 1, o.hidden_size, spec));
}

torch::Tensor ClipVisionEmbeddingsImpl::forward(const torch::Tensor& pixel_values) const {
  const auto patches =
      torch::conv2d(pixel_values, patch_embedding->weight, {}, {patch_size_, patch_size_})
          .flatten(2)
          .transpose(1, 2);  // [B, N, D]
  const auto cls = class_embedding.view({1, 1, -1}).expand({patches.size(0), 1, -1});
  return torch::cat({cls, patches}, 1) + position_embedding->weight.unsqueeze(0);
}

ClipVisionModelImpl::ClipVisionModelImpl(const SiglipVisionOptions& options, const ParamSpec& spec)
    : options_(options) {
  embeddings = register_module("embeddings", ClipVisionEmbeddings(options, spec));
  pre_layrnorm = register_module(
      "pre_layrnorm", SiglipLayerNorm(options.hidden_size, options.layer_norm_eps, spec));
  encoder = register_module("encoder", SiglipEncoder(options, spec));
  post_layernorm = register_module(
      "post_layernorm", SiglipLayerNorm(options.hidden_size, options.layer_norm_eps, spec));
}

torch::Tensor ClipVisionModelImpl::penultimate_hidden_state(const torch::Tensor& pixel_values) const {
  const auto& o = options_;
  if (pixel_values.dim() != 4 || pixel_values.size(1) != o.num_channels ||
      pixel_values.size(2) != o.image_size || pixel_values.size(3) != o.image_size) {
    throw ModelError("CLIP vision: pixel_values must be [B, " + std::to_string(o.num_channels) +
                     ", " + std::to_string(o.image_size) + ", " + std::to_string(o.image_size) +
                     "]");
  }
  auto h = pre_layrnorm->forward(embeddings->forward(pixel_values.to(device(), dtype())));
  // hidden_states[-2]: after every layer but the last.
  const auto layers = encoder->layers->size();
  for (std::size_t i = 0; i + 1 < layers; ++i) {
    h = encoder->layers->ptr<SiglipEncoderLayerImpl>(i)->forward(h);
  }
  return h;
}

ClipVisionModel load_clip_vision(const fs::path& dir, torch::ScalarType dtype, torch::Device device) {
  const auto file = dir / "config.json";
  const auto options = clip_vision_options(read_json(file), file.string());
  ClipVisionModel model(options, ParamSpec{dtype, torch::kCPU});
  load_vision_tower(dir, model.ptr(), dtype, device);
  return model;
}

ClipImageProcessorOptions ClipImageProcessorOptions::from_json(const json& config,
                                                               const std::string& origin) {
  if (!config.is_object()) throw WeightsError(origin, "CLIP image processor: not a JSON object");
  // The normalisation keys are SigLIP's; the processor type and the sizes are CLIP's.
  json rest = config;
  ClipImageProcessorOptions o;
  ResizeConvention convention = ResizeConvention::torch;
  if (config.contains("image_processor_type")) {
    const auto type = config.at("image_processor_type").is_string()
                          ? config.at("image_processor_type").get<std::string>()
                          : std::string();
    if (type == "CLIPImageProcessorPil") {
      convention = ResizeConvention::pillow;
    } else if (type != "CLIPImageProcessor" && type != "CLIPImageProcessorFast") {
      fail(origin, "image_processor_type",
           "is " + config.at("image_processor_type").dump() +
               " (supported: CLIPImageProcessor, CLIPImageProcessorFast, CLIPImageProcessorPil)");
    }
  }
  if (config.contains("size")) {
    const auto& size = config.at("size");
    if (!size.is_object() || !size.contains("shortest_edge") || size.size() != 1) {
      fail(origin, "size", "must be {\"shortest_edge\": N}, got " + size.dump());
    }
    o.shortest_edge = positive_int(size.at("shortest_edge"), "size.shortest_edge", origin);
  }
  if (config.contains("crop_size")) {
    const auto& crop = config.at("crop_size");
    if (!crop.is_object() || !crop.contains("height") || !crop.contains("width")) {
      fail(origin, "crop_size", "must be {\"height\": H, \"width\": W}, got " + crop.dump());
    }
    o.crop_height = positive_int(crop.at("height"), "crop_size.height", origin);
    o.crop_width = positive_int(crop.at("width"), "crop_size.width", origin);
  }
  o.do_center_crop = config.value("do_center_crop", true);
  o.shortest_edge = config.value("do_resize", true) ? o.shortest_edge : 0;
  for (const char* key : {"image_processor_type", "size", "crop_size", "do_center_crop",
                          "do_resize", "processor_class"}) {
    rest.erase(key);
  }
  o.normalize = SiglipImageProcessorOptions::from_json(rest, origin);
  o.normalize.convention = convention;
  o.normalize.do_resize = false;
  return o;
}

torch::Tensor clip_preprocess(const RgbImage& image, const ClipImageProcessorOptions& o) {
  RgbImage x = image;
  if (o.shortest_edge > 0) {
    const bool portrait = image.height > image.width;
    const int short_side = portrait ? image.width : image.height;
    const int long_side = portrait ? image.height : image.width;
    const int scaled =
        static_cast<int>(static_cast<double>(o.shortest_edge) * long_side / short_side);
    const int width = portrait ? o.shortest_edge : scaled;
    const int height = portrait ? scaled : o.shortest_edge;
    if (width != image.width || height != image.height) {
      x = resize_rgb(image, width, height, o.normalize.resample, o.normalize.convention);
    }
  }
  if (o.do_center_crop) {
    if (x.height < o.crop_height || x.width < o.crop_width) {
      throw InputError("<image>", "smaller than the CLIP crop " + std::to_string(o.crop_width) +
                                      "x" + std::to_string(o.crop_height));
    }
    // torchvision rounds half the margin to even (Python's round), numpy's path floors it.
    const auto offset = [&](int margin) {
      const int floor_half = margin / 2;
      const bool to_even = o.normalize.convention == ResizeConvention::torch && margin % 2 == 1;
      return to_even && floor_half % 2 == 1 ? floor_half + 1 : floor_half;
    };
    const int top = offset(x.height - o.crop_height);
    const int left = offset(x.width - o.crop_width);
    RgbImage crop;
    crop.height = o.crop_height;
    crop.width = o.crop_width;
    crop.data.resize(static_cast<std::size_t>(crop.height) * crop.width * 3);
    for (int r = 0; r < crop.height; ++r) {
      const auto* from = x.data.data() + (static_cast<std::size_t>(top + r) * x.width + left) * 3;
      std::copy(from, from + static_cast<std::size_t>(crop.width) * 3,
                crop.data.data() + static_cast<std::size_t>(r) * crop.width * 3);
    }
    x = std::move(crop);
  }
  return siglip_preprocess(x, o.normalize);
}

ClipImageEncoder::ClipImageEncoder(ClipVisionModel model, ClipImageProcessorOptions processor)
    : model_(std::move(model)), processor_(std::move(processor)) {}

torch::Tensor ClipImageEncoder::encode(const RgbImage& image) {
  torch::NoGradGuard no_grad;
  return model_->penultimate_hidden_state(clip_preprocess(image, processor_));
}

double ClipImageEncoder::encode_flops() const { return clip_vision_flops(model_->options()); }

std::int64_t ClipImageEncoder::tokens() const { return model_->options().num_patches() + 1; }

std::unique_ptr<ClipImageEncoder> load_clip_image_encoder(const fs::path& encoder_dir,
                                                          const fs::path& processor_dir,
                                                          torch::ScalarType dtype,
                                                          torch::Device device) {
  const auto file = processor_dir / "preprocessor_config.json";
  if (!fs::is_regular_file(file)) {
    throw WeightsError(file.string(), "missing: the CLIP image processor's configuration");
  }
  auto processor = ClipImageProcessorOptions::from_json(read_json(file), file.string());
  return std::make_unique<ClipImageEncoder>(load_clip_vision(encoder_dir, dtype, device),
                                            std::move(processor));
}

json clip_vit_h14_config() {
  return json{{"architectures", {"CLIPVisionModel"}},
              {"model_type", "clip_vision_model"},
              {"hidden_size", 1280},
              {"intermediate_size", 5120},
              {"num_hidden_layers", 32},
              {"num_attention_heads", 16},
              {"num_channels", 3},
              {"image_size", 224},
              {"patch_size", 14},
              {"hidden_act", "gelu"},
              {"layer_norm_eps", 1e-5},
              {"projection_dim", 1024}};
}

json clip_processor_config(int size) {
  return json{{"image_processor_type", "CLIPImageProcessor"},
              {"size", {{"shortest_edge", size}}},
              {"crop_size", {{"height", size}, {"width", size}}},
              {"do_resize", true},
              {"do_center_crop", true},
              {"do_rescale", true},
              {"rescale_factor", 1.0 / 255.0},
              {"do_normalize", true},
              {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
              {"image_std", {0.26862954, 0.26130258, 0.27577711}},
              {"resample", 3}};
}

std::unique_ptr<ClipImageEncoder> random_clip_image_encoder(const json& config,
                                                            const json& processor, std::uint64_t seed,
                                                            torch::ScalarType dtype,
                                                            torch::Device device) {
  ClipVisionModel model(clip_vision_options(config, "random CLIP config"), ParamSpec{dtype, device});
  init_random_weights(*model, seed);
  freeze(*model);
  model->eval();
  return std::make_unique<ClipImageEncoder>(
      std::move(model), ClipImageProcessorOptions::from_json(processor, "random CLIP processor"));
}

}  // namespace omnidp::models::vision
