#include "omnidp/models/weights/checkpoint.hpp"

#include <fmt/format.h>
#include <algorithm>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"

namespace omnidp::models {
namespace fs = std::filesystem;
namespace {

std::string join_names(const std::vector<fs::path>& paths) {
  std::string out;
  for (const auto& p : paths) {
    if (!out.empty()) out += ", ";
    out += p.filename().string();
  }
  return out;
}

// One file among candidates: the only one, or the one with a standard stem.
fs::path choose(const fs::path& dir, std::vector<fs::path> candidates, std::string_view suffix) {
  std::sort(candidates.begin(), candidates.end());
  if (candidates.size() == 1) return candidates.front();
  for (const char* stem : {"diffusion_pytorch_model", "model"}) {
    const auto want = std::string(stem) + std::string(suffix);
    for (const auto& c : candidates) {
      if (c.filename() == want) return c;
    }
  }
  throw WeightsError(dir.string(), "several candidate checkpoint files (" + join_names(candidates) +
                                       "); keep one or name it explicitly");
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& path) {
  Checkpoint ckpt;
  ckpt.path_ = path;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    ckpt.files_.emplace_back(path);
    for (const auto& t : ckpt.files_.front().header().tensors) ckpt.where_.emplace(t.name, 0);
    return ckpt;
  }
  if (!fs::is_directory(path, ec)) {
    throw WeightsError(path.string(), "checkpoint folder or file does not exist");
  }
  std::vector<fs::path> indexes;
  std::vector<fs::path> singles;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file()) continue;
    if (name.ends_with(".safetensors.index.json")) indexes.push_back(entry.path());
    if (name.ends_with(".safetensors")) singles.push_back(entry.path());
  }
  if (ec) throw WeightsError(path.string(), "cannot list folder: " + ec.message());

  if (!indexes.empty()) {
    const auto index_path = choose(path, indexes, ".safetensors.index.json");
    const auto index = read_json(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw WeightsError(index_path.string(), "index has no 'weight_map' object");
    }
    std::map<std::string, std::size_t> shard_ids;
    std::vector<std::string> problems;
    for (const auto& item : index["weight_map"].items()) {
      if (!item.value().is_string()) {
        throw WeightsError(index_path.string(), "weight_map '" + item.key() + "' is not a string");
      }
      const auto shard = item.value().get<std::string>();
      const fs::path shard_path = path / shard;
      if (shard.empty() || fs::path(shard).has_parent_path() || shard == "." || shard == "..") {
        throw WeightsError(index_path.string(),
                           "weight_map '" + item.key() + "' names an invalid shard '" + shard + "'");
      }
      auto it = shard_ids.find(shard);
      if (it == shard_ids.end()) {
        ckpt.files_.emplace_back(shard_path);
        it = shard_ids.emplace(shard, ckpt.files_.size() - 1).first;
      }
      if (!ckpt.files_[it->second].contains(item.key())) {
        problems.push_back(item.key() + " (in " + shard + ")");
        continue;
      }
      ckpt.where_.emplace(item.key(), it->second);
    }
    if (!problems.empty()) {
      std::string msg =
          fmt::format("{} tensors of the weight_map are missing from their shard:", problems.size());
      for (std::size_t i = 0; i < problems.size() && i < 20; ++i) msg += " " + problems[i];
      throw WeightsError(index_path.string(), msg);
    }
    return ckpt;
  }
  if (singles.empty()) {
    throw WeightsError(path.string(),
                       "no *.safetensors or *.safetensors.index.json in the folder (expected "
                       "diffusion_pytorch_model.safetensors or model.safetensors, or shards "
                       "listed by their *.safetensors.index.json)");
  }
  ckpt.files_.emplace_back(choose(path, singles, ".safetensors"));
  for (const auto& t : ckpt.files_.front().header().tensors) ckpt.where_.emplace(t.name, 0);
  return ckpt;
}

std::vector<fs::path> Checkpoint::files() const {
  std::vector<fs::path> out;
  out.reserve(files_.size());
  for (const auto& f : files_) out.push_back(f.path());
  return out;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, index] : where_) out.push_back(name);
  return out;
}

bool Checkpoint::contains(std::string_view name) const noexcept {
  return where_.find(name) != where_.end();
}

const SafetensorsFile& Checkpoint::file_of(std::string_view name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) {
    throw WeightsError(path_.string(), "checkpoint has no tensor named '" + std::string(name) + "'");
  }
  return files_[it->second];
}

const fs::path& Checkpoint::file(std::string_view name) const { return file_of(name).path(); }

void Checkpoint::release(std::string_view name) const { file_of(name).release(name); }

fs::path snapshot_component(const fs::path& snapshot, std::string_view name,
                            std::string_view config_file, std::string_view holds) {
  const auto dir = snapshot / std::string(name);
  const auto config = dir / std::string(config_file);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw WeightsError(config.string(), "missing: the snapshot " + snapshot.string() + " has no " +
                                            std::string(name) + "/ folder (" + std::string(holds) +
                                            ")");
  }
  if (!fs::is_regular_file(config, ec)) {
    throw WeightsError(config.string(), "missing: the snapshot's " + std::string(name) +
                                            "/ folder has no " + std::string(config_file) + " (" +
                                            std::string(holds) + ")");
  }
  return dir;
}

const TensorMeta& Checkpoint::meta(std::string_view name) const { return file_of(name).meta(name); }

torch::Tensor Checkpoint::tensor(std::string_view name, torch::ScalarType dtype) const {
  return file_of(name).tensor(name, dtype);
}

torch::Tensor Checkpoint::tensor_slice(std::string_view name, std::int64_t dim, std::int64_t start,
                                       std::int64_t length, torch::ScalarType dtype) const {
  return file_of(name).tensor_slice(name, dim, start, length, dtype);
}

}  // namespace omnidp::models
