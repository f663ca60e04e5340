#pragma once
// A Diffusers / transformers component folder as one name -> tensor map: a single
// `*.safetensors` file, or shards listed by a `*.safetensors.index.json` (`weight_map`).
// Ownership: a Checkpoint owns its mapped files (move-only). Thread-safety: const member
// functions may be called concurrently.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models {

class Checkpoint {
 public:
  // `path` is a component folder (e.g. <snapshot>/transformer) or one .safetensors file.
  // In a folder: an index (`*.safetensors.index.json`) wins over single files; where several
  // candidates exist, the standard names (diffusion_pytorch_model.*, model.*) are chosen,
  // otherwise it is an error listing them. Every shard named by the index must exist and hold
  // the tensors mapped to it. Throws WeightsError.
  [[nodiscard]] static Checkpoint open(const std::filesystem::path& path);

  // The folder (or file) given to open().
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  // The safetensors files in use (one, or the shards).
  [[nodiscard]] std::vector<std::filesystem::path> files() const;
  // Tensor names, sorted.
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return where_.size(); }
  // Throw WeightsError for an unknown name.
  [[nodiscard]] const TensorMeta& meta(std::string_view name) const;
  [[nodiscard]] torch::Tensor tensor(std::string_view name,
                                     torch::ScalarType dtype = torch::kFloat32) const;
  // SafetensorsFile::tensor_slice of the file that holds `name`.
  [[nodiscard]] torch::Tensor tensor_slice(std::string_view name, std::int64_t dim,
                                           std::int64_t start, std::int64_t length,
                                           torch::ScalarType dtype = torch::kFloat32) const;
  // SafetensorsFile::release of the file that holds `name`.
  void release(std::string_view name) const;
  // The safetensors file that holds `name` (throws WeightsError for an unknown name).
  [[nodiscard]] const std::filesystem::path& file(std::string_view name) const;

 private:
  Checkpoint() = default;
  [[nodiscard]] const SafetensorsFile& file_of(std::string_view name) const;

  std::filesystem::path path_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t, std::less<>> where_;  // tensor name -> index in files_
};

// The component folder `name` of a Diffusers snapshot (e.g. "vae"), checked to hold
// `config_file`: a missing folder or config file is a WeightsError naming the file the snapshot
// lacks and `holds` (what the folder should contain, e.g. "AutoencoderKLWan: config.json +
// safetensors"). The weights themselves are checked by Checkpoint::open.
[[nodiscard]] std::filesystem::path snapshot_component(const std::filesystem::path& snapshot,
                                                       std::string_view name,
                                                       std::string_view config_file,
                                                       std::string_view holds);

}  // namespace omnidp::models
