// custom-gradient: a seeded tiny video generator registered from outside the omni-dp tree.
// Every frame is a colour gradient whose phase moves with the frame index and whose palette
// comes from the request's seed, so each video is a pure function of (seed, frames, size).
#include <omnidp/common/error.hpp>
#include <omnidp/models/model_table.hpp>
#include <omnidp/models/plugin.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace {

class GradientPipeline final : public omnidp::Pipeline {
 public:
  explicit GradientPipeline(omnidp::DeviceBinding device) : device_(std::move(device)) {}

  omnidp::Video generate(const omnidp::Request& request, const omnidp::GenerateContext&) override {
    if (request.prompt.empty()) throw omnidp::ModelError("custom-gradient: empty prompt");
    omnidp::Video video{request.num_frames, request.height, request.width, {}};
    video.data.resize(video.byte_size());
    const std::uint64_t seed = request.seed;
    std::size_t i = 0;
    for (int f = 0; f < video.frames; ++f) {
      for (int y = 0; y < video.height; ++y) {
        for (int x = 0; x < video.width; ++x) {
          for (std::uint64_t c = 0; c < 3; ++c) {
            const std::uint64_t phase = (seed >> (8 * c)) & 0xFF;
            video.data[i++] = static_cast<std::uint8_t>(phase + 4 * f + x * (c + 1) + y * (3 - c));
          }
        }
      }
    }
    return video;
  }
  std::string model_name() const override { return "custom-gradient"; }
  std::string device_name() const override { return device_.name; }

 private:
  omnidp::DeviceBinding device_;
};

void register_custom_models(omnidp::models::ModelTable& table) {
  omnidp::models::ModelRegistration r;
  r.name = "custom-gradient";
  r.has_weights = false;
  r.facts.hidden_size = 8;  // cost prior: 1 layer of width 8, no patching
  r.facts.num_layers = 1;
  r.create = [](const omnidp::Config&,
                const omnidp::DeviceBinding& device) -> std::unique_ptr<omnidp::Pipeline> {
    return std::make_unique<GradientPipeline>(device);
  };
  table.add(std::move(r));
}

}  // namespace

OMNIDP_MODEL_PLUGIN(register_custom_models)
