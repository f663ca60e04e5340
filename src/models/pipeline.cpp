#include "omnidp/models/pipeline.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/size_buckets.hpp"

namespace omnidp {
namespace fs = std::filesystem;

namespace {
nlohmann::json read_config(const fs::path& file) {
  std::ifstream in(file);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(file.string(), std::string("bad config: ") + e.what());
  }
}

// HunyuanVideo-1.5 snapshot facts: transformer/config.json target_size (640, the released 480p
// configuration, without model.path or the key) and, for pretrained weights, the one task the
// snapshot serves (model_index.json's pipeline class, else the transformer's task_type).
void hv15_facts(const ModelConfig& model, ModelInfo& info) {
  constexpr int kReleased = 640;
  info.image_size_target = kReleased;
  if (model.path.empty()) return;
  std::error_code ec;
  const auto config = fs::path(model.path) / "transformer" / "config.json";
  if (fs::is_regular_file(config, ec)) {
    const auto j = read_config(config);
    try {
      info.image_size_target = j.value("target_size", kReleased);
      if (model.weights == WeightsSource::pretrained && j.contains("task_type")) {
        const auto task = j.at("task_type").get<std::string>();
        if (task != "t2v" && task != "i2v") throw WeightsError(config.string(), "task_type '" + task + "' is not t2v or i2v");
        info.snapshot_task = task == "t2v" ? Task::t2v : Task::i2v;
        info.snapshot_task_origin = "task_type in " + config.string();
      }
    } catch (const nlohmann::json::exception& e) {
      throw WeightsError(config.string(), std::string("bad config: ") + e.what());
    }
    if (info.image_size_target <= 0) throw WeightsError(config.string(), "target_size must be > 0");
  }
  const auto index = fs::path(model.path) / "model_index.json";
  if (model.weights == WeightsSource::pretrained && fs::is_regular_file(index, ec)) {
    const auto cls = read_config(index).value("_class_name", std::string());
    if (cls == "HunyuanVideo15Pipeline" || cls == "HunyuanVideo15ImageToVideoPipeline") {
      info.snapshot_task = cls == "HunyuanVideo15Pipeline" ? Task::t2v : Task::i2v;
      info.snapshot_task_origin = cls + " in " + index.string();
    }
  }
}
}  // namespace

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
    hv15_facts(model, info);
  } else {
    throw ConfigError("model.name", "unknown model '" + model.name +
                                        "' (known: synthetic, tiny-wan, wan2.2-ti2v-5b, hunyuanvideo-1.5)");
  }
  return info;
}

namespace {
// Reads the JSON header of a safetensors file (not the tensor bytes).
std::string safetensors_header(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw WeightsError(file.string(), "cannot open");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  if (in.gcount() != 8) throw WeightsError(file.string(), "truncated: no header length");
  std::uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  if (len > (100ULL << 20)) throw WeightsError(file.string(), "header larger than 100 MiB");
  std::string header(len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(len));
  if (static_cast<std::uint64_t>(in.gcount()) != len) throw WeightsError(file.string(), "truncated header");
  return header;
}
}  // namespace

std::string weights_identity(const ModelConfig& model) {
  if (model.name == "synthetic") return "synthetic";
  if (model.weights == WeightsSource::random) return "random:" + std::to_string(model.weights_seed);
  const fs::path root(model.path);
  if (!fs::is_directory(root)) throw WeightsError(model.path, "model.path is not a folder");
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const auto name = entry.path().filename().string();
    if (name == "model_index.json" || name == "config.json" || entry.path().extension() == ".safetensors") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const auto& f : files) {
    h.update(fs::relative(f, root).generic_string());
    h.update(std::string_view("\0", 1));
    if (f.extension() == ".safetensors") {
      h.update(safetensors_header(f));
    } else {
      h.update(sha256_file_hex(f));
    }
    h.update(std::string_view("\0", 1));
  }
  const Digest d = h.finish();
  return "snapshot:" + to_hex(d);
}

ManifestOptions job_manifest_options(const Config& config) {
  ManifestOptions options = manifest_options(config, weights_identity(config.model));
  const ModelInfo info = describe_model(config.model);
  options.size_multiple = info.size_multiple();
  options.only_task = info.snapshot_task;
  options.only_task_origin = info.snapshot_task_origin;
  if (info.image_size_target > 0) {
    options.size_from_image = [target = info.image_size_target, patch = info.vae_spatial](int h, int w) {
      const auto size = models::hv15_bucket_size(h, w, target, patch);
      return std::pair{size.height, size.width};
    };
  }
  return options;
}

}  // namespace omnidp
