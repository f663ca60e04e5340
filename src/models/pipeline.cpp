#include "omnidp/models/pipeline.hpp"

#include <algorithm>
#include <filesystem>

#include "omnidp/common/error.hpp"
#include "omnidp/models/snapshot_digest.hpp"

namespace omnidp {
namespace fs = std::filesystem;

ModelInfo describe_model(const ModelConfig& model) {
  ModelInfo info;
  info.name = model.name;
  if (model.name == "synthetic") {
    info.patch_h = info.patch_w = 1;
    info.hidden_size = 1;
    info.num_layers = 1;
  } else if (model.name == "wan2.2-ti2v-5b") {
    info.patch_t = 1; info.patch_h = 2; info.patch_w = 2;
    info.hidden_size = 3072; info.num_layers = 30;
  } else if (model.name == "tiny-wan") {
    info.patch_t = 1; info.patch_h = 2; info.patch_w = 2;
    info.hidden_size = 128; info.num_layers = 2;
  } else if (model.name == "hunyuanvideo-1.5") {
    info.patch_t = 1; info.patch_h = 1; info.patch_w = 1;
    info.hidden_size = 2048; info.num_layers = 54;
  } else {
    throw ConfigError("model.name", "unknown model '" + model.name +
                                        "' (known: synthetic, tiny-wan, wan2.2-ti2v-5b, hunyuanvideo-1.5)");
  }
  return info;
}

std::string weights_identity(const ModelConfig& model) {
  if (model.name == "synthetic") return "synthetic";
  if (model.weights == WeightsSource::random) return "random:" + std::to_string(model.weights_seed);
  return "snapshot-sha256:" + digest_snapshot(fs::path(model.path)).sha256;
}

ManifestOptions job_manifest_options(const Config& config) {
  ManifestOptions options = manifest_options(config, weights_identity(config.model));
  options.size_multiple = describe_model(config.model).size_multiple();
  return options;
}

}  // namespace omnidp
