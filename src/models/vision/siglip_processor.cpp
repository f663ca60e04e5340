#include "omnidp/models/vision/siglip_processor.hpp"

#include <fmt/format.h>
#include <cmath>
#include <stdexcept>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"

namespace omnidp::models::vision {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kWhat = "SigLIP image processor config: ";

[[noreturn]] void fail(const std::string& origin, const std::string& key, const std::string& message) {
  throw WeightsError(origin, std::string(kWhat) + "key '" + key + "' " + message);
}

const json* find_key(const json& config, const char* key) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

bool bool_value(const json& config, const char* key, const std::string& origin, bool fallback) {
  const json* v = find_key(config, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail(origin, key, "must be true or false");
  return v->get<bool>();
}

int positive_int(const json& v, const std::string& key, const std::string& origin) {
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > (1 << 16)) {
    fail(origin, key, "must be a positive integer (at most 65536), got " + v.dump());
  }
  return static_cast<int>(v.get<std::int64_t>());
}

std::array<double, 3> channel_values(const json& config, const char* key, const std::string& origin,
                                     const std::array<double, 3>& fallback) {
  const json* v = find_key(config, key);
  if (v == nullptr) return fallback;
  if (v->is_number()) {
    const double x = v->get<double>();
    return {x, x, x};
  }
  if (!v->is_array() || v->size() != 3)
    fail(origin, key, "must be a number or a list of 3 numbers");
  std::array<double, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!v->at(i).is_number()) fail(origin, key, "must be a number or a list of 3 numbers");
    out[i] = v->at(i).get<double>();
  }
  return out;
}

}  // namespace

SiglipImageProcessorOptions SiglipImageProcessorOptions::from_json(const json& config,
                                                                   const std::string& origin) {
  if (!config.is_object()) throw WeightsError(origin, std::string(kWhat) + "not a JSON object");
  SiglipImageProcessorOptions o;
  if (const json* type = find_key(config, "image_processor_type")) {
    const auto name = type->is_string() ? type->get<std::string>() : std::string();
    if (name == "SiglipImageProcessor" || name == "SiglipImageProcessorFast") {
      o.convention = ResizeConvention::torch;
    } else if (name == "SiglipImageProcessorPil") {
      o.convention = ResizeConvention::pillow;
    } else {
      fail(origin, "image_processor_type",
           "is " + type->dump() +
               " (supported: SiglipImageProcessor, SiglipImageProcessorFast, "
               "SiglipImageProcessorPil)");
    }
  }
  o.do_resize = bool_value(config, "do_resize", origin, o.do_resize);
  o.do_rescale = bool_value(config, "do_rescale", origin, o.do_rescale);
  o.do_normalize = bool_value(config, "do_normalize", origin, o.do_normalize);
  (void)bool_value(config, "do_convert_rgb", origin, true);  // type-checked; images are RGB already
  if (const json* size = find_key(config, "size")) {
    if (!size->is_object() || !size->contains("height") || !size->contains("width") ||
        size->size() != 2) {
      fail(origin, "size", "must be {\"height\": H, \"width\": W}, got " + size->dump());
    }
    o.height = positive_int(size->at("height"), "size.height", origin);
    o.width = positive_int(size->at("width"), "size.width", origin);
  }
  if (const json* resample = find_key(config, "resample")) {
    if (!resample->is_number_integer())
      fail(origin, "resample", "must be a PIL resample code, got " + resample->dump());
    try {
      o.resample = resample_filter_from_pil(resample->get<int>());
    } catch (const std::invalid_argument& e) {
      fail(origin, "resample", e.what());
    }
    if (o.resample == ResampleFilter::lanczos && o.convention == ResizeConvention::torch) {
      fail(origin, "resample", "is 1 (lanczos), which the torchvision backend does not have");
    }
  }
  if (const json* factor = find_key(config, "rescale_factor")) {
    if (!factor->is_number() || !(factor->get<double>() > 0.0) ||
        !std::isfinite(factor->get<double>())) {
      fail(origin, "rescale_factor", "must be a positive number, got " + factor->dump());
    }
    o.rescale_factor = factor->get<double>();
  }
  o.image_mean = channel_values(config, "image_mean", origin, o.image_mean);
  o.image_std = channel_values(config, "image_std", origin, o.image_std);
  for (const double s : o.image_std) {
    if (!(s != 0.0) || !std::isfinite(s)) fail(origin, "image_std", "must be finite and non-zero");
  }
  for (const double m : o.image_mean) {
    if (!std::isfinite(m)) fail(origin, "image_mean", "must be finite");
  }
  return o;
}

SiglipImageProcessorOptions load_siglip_image_processor(const fs::path& path) {
  const auto file = fs::is_directory(path) ? path / "preprocessor_config.json" : path;
  return SiglipImageProcessorOptions::from_json(read_json(file), file.string());
}

torch::Tensor siglip_preprocess(const RgbImage& image, const SiglipImageProcessorOptions& o) {
  const RgbImage sized =
      o.do_resize ? resize_rgb(image, o.width, o.height, o.resample, o.convention) : image;
  if (sized.width <= 0 || sized.height <= 0 ||
      sized.data.size() !=
          static_cast<std::size_t>(sized.width) * static_cast<std::size_t>(sized.height) * 3U) {
    throw InputError("<image>", fmt::format("not a {}x{} RGB image", sized.width, sized.height));
  }
  const auto bytes = torch::from_blob(const_cast<std::uint8_t*>(sized.data.data()),
                                      {sized.height, sized.width, 3}, torch::kUInt8)
                         .permute({2, 0, 1});  // [3, H, W]
  auto channel = [](const std::array<float, 3>& v) {
    return torch::tensor({v[0], v[1], v[2]}).view({3, 1, 1});
  };
  torch::Tensor x;
  if (o.convention == ResizeConvention::torch) {
    // torchvision backend: mean and std multiplied by 1 / rescale_factor in float32,
    // then one float32 (x - mean) / std.
    x = bytes.to(torch::kFloat32);
    const float inv = o.do_rescale ? static_cast<float>(1.0 / o.rescale_factor) : 1.0F;
    if (o.do_normalize) {
      std::array<float, 3> mean{};
      std::array<float, 3> std_dev{};
      for (std::size_t c = 0; c < 3; ++c) {
        mean[c] = static_cast<float>(o.image_mean[c]) * inv;
        std_dev[c] = static_cast<float>(o.image_std[c]) * inv;
      }
      x = (x - channel(mean)) / channel(std_dev);
    } else if (o.do_rescale) {
      x = x * static_cast<float>(o.rescale_factor);
    }
  } else {
    // PIL backend (numpy): x * rescale_factor in float64 stored as float32, then float32
    // (x - mean) / std.
    x = o.do_rescale ? (bytes.to(torch::kFloat64) * o.rescale_factor).to(torch::kFloat32)
                     : bytes.to(torch::kFloat32);
    if (o.do_normalize) {
      std::array<float, 3> mean{};
      std::array<float, 3> std_dev{};
      for (std::size_t c = 0; c < 3; ++c) {
        mean[c] = static_cast<float>(o.image_mean[c]);
        std_dev[c] = static_cast<float>(o.image_std[c]);
      }
      x = (x - channel(mean)) / channel(std_dev);
    }
  }
  return x.unsqueeze(0).contiguous();
}

}  // namespace omnidp::models::vision
