#include "omnidp/refcheck/vision_cases.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/models/vision/siglip.hpp"
#include "omnidp/models/vision/siglip_processor.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
using models::SafetensorsFile;

namespace {

// An [H, W, 3] float tensor of byte values as an RgbImage.
RgbImage to_image(const torch::Tensor& hwc, const fs::path& origin) {
  if (hwc.dim() != 3 || hwc.size(2) != 3)
    throw InputError(origin.string(), "image_rgb_uint8 must be [H, W, 3]");
  const auto bytes = hwc.round().clamp(0, 255).to(torch::kUInt8).contiguous();
  RgbImage im;
  im.height = static_cast<int>(bytes.size(0));
  im.width = static_cast<int>(bytes.size(1));
  im.data.assign(bytes.data_ptr<std::uint8_t>(), bytes.data_ptr<std::uint8_t>() + bytes.numel());
  return im;
}

}  // namespace

std::vector<CaseResult> run_siglip_vision(const fs::path& case_dir,
                                          const nlohmann::json& /*case_json*/,
                                          const RefcheckOptions& options) {
  const SafetensorsFile io(case_dir / "io.safetensors");
  std::vector<CaseResult> results;
  if (io.contains("pixel_values") && io.contains("image_rgb_uint8")) {
    const auto processor = models::vision::load_siglip_image_processor(case_dir);
    const auto ours = models::vision::siglip_preprocess(
        to_image(io.tensor("image_rgb_uint8"), case_dir), processor);
    results.push_back(compare("pixel_values", ours, io.tensor("pixel_values"),
                              tolerance(ToleranceClass::exact, options), "SiglipImageProcessor"));
  }
  const auto model = models::vision::load_siglip_vision(case_dir, options.dtype, options.device);
  c10::InferenceMode inference;
  const auto out = model->forward(io.tensor("pixel_values").to(options.device));
  results.push_back(compare("last_hidden_state", out.to(torch::kCPU, torch::kFloat32),
                            io.tensor("last_hidden_state"),
                            tolerance(ToleranceClass::forward, options)));
  return results;
}

}  // namespace omnidp::refcheck
