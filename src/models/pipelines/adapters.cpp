#include "omnidp/models/pipelines/adapters.hpp"

#include <fmt/format.h>

#include <chrono>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/layers/placement.hpp"

namespace omnidp::models {
namespace {

// Files kept converted beyond the ones of the request at hand (a job cycles through a few sets).
constexpr std::size_t kKeptFiles = 8;

}  // namespace

bool adapter_for_expert(const LoraAdapter& adapter, std::size_t index, std::size_t count) {
  const LoraExpert expert = resolve_lora_expert(adapter, count == 2);
  if (expert == LoraExpert::all) return true;
  return (expert == LoraExpert::high_noise) == (index == 0);
}

void fuse_job_adapters(const std::vector<LoraAdapter>& adapters,
                       const std::vector<torch::nn::Module*>& experts, const LoraNameMap& names) {
  for (const auto& adapter : adapters) {
    const LoraFile file = read_lora_file(adapter.path, names);
    for (std::size_t i = 0; i < experts.size(); ++i) {
      if (!adapter_for_expert(adapter, i, experts.size())) continue;
      fuse_lora(*experts[i], file, adapter.scale);
    }
    log_info(fmt::format(
        "lora: fused {} ({}, {} layers, {} deltas) at scale {} into {}", adapter.path,
        to_string(file.format), file.low_rank.size(), file.deltas.size(), adapter.scale,
        experts.size() == 1 ? std::string("the transformer")
                            : std::string(to_string(resolve_lora_expert(adapter, true)))));
  }
}

RequestAdapters::RequestAdapters(LoraNameMap names, std::vector<torch::nn::Module*> experts)
    : names_(std::move(names)), experts_(std::move(experts)) {
  for (auto* e : experts_) {
    sides_.emplace_back(*e);
    switches_by_expert_.emplace_back(*e);
  }
  held_.resize(experts_.size());
}

const LoraFile& RequestAdapters::file(const LoraAdapter& adapter) {
  if (const auto it = files_.find(adapter.sha256); it != files_.end()) return it->second;
  const std::string actual = sha256_file_hex(adapter.path);
  if (!adapter.sha256.empty() && actual != adapter.sha256) {
    throw InputError(adapter.path,
                     fmt::format("the LoRA file changed after its request was validated (its bytes "
                                 "hash to {}, its input key was computed from {})",
                                 actual, adapter.sha256));
  }
  return files_.emplace(actual, read_lora_file(adapter.path, names_)).first->second;
}

const std::pair<LoraFile, LoraFile>& RequestAdapters::split(const LoraAdapter& adapter,
                                                            std::size_t index) {
  const LoraFile& f = file(adapter);
  const auto key = std::make_pair(&f, index);
  if (const auto it = splits_.find(key); it != splits_.end()) return it->second;
  return splits_.emplace(key, split_lora_file(f, sides_[index])).first->second;
}

bool RequestAdapters::select(const std::vector<LoraAdapter>& adapters) {
  // Files are converted again from the page cache when needed (never while a set is built).
  if (files_.size() > kKeptFiles) {
    splits_.clear();
    files_.clear();
  }
  const auto start = std::chrono::steady_clock::now();
  bool changed = false;
  bool weights_changed = false;
  std::size_t beside = 0;
  std::size_t fused = 0;
  for (std::size_t i = 0; i < experts_.size(); ++i) {
    // A set by its files' bytes and scales (an adapter without its hash: by its path).
    std::string key;
    for (const auto& adapter : adapters) {
      if (!adapter_for_expert(adapter, i, experts_.size())) continue;
      key += fmt::format("{}*{};", adapter.sha256.empty() ? adapter.path : adapter.sha256,
                         adapter.scale);
    }
    if (key == held_[i]) continue;
    held_[i].clear();
    std::vector<std::pair<const LoraFile*, double>> side_set, fused_set;
    for (const auto& adapter : adapters) {
      if (!adapter_for_expert(adapter, i, experts_.size())) continue;
      const auto& [side, rest] = split(adapter, i);
      side_set.emplace_back(&side, adapter.scale);
      if (!rest.low_rank.empty() || !rest.deltas.empty())
        fused_set.emplace_back(&rest, adapter.scale);
      fused += rest.low_rank.size() + rest.deltas.size();
    }
    beside += sides_[i].set(side_set);
    weights_changed =
        switches_by_expert_[i].set(fused_set.empty() ? "" : key, fused_set) || weights_changed;
    held_[i] = key;
    changed = true;
  }
  if (changed) {
    ++switches_;
    // The kernels are queued: the switch ends when the device has run them.
    if (const auto& params = experts_.front()->parameters(); !params.empty())
      synchronize(params.front().device());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log_info(fmt::format(
        "lora: switched to the request's adapter set ({} adapter(s): {} layer(s) beside, {} "
        "part(s) fused) in {:.3f} s (switch {})",
        adapters.size(), beside, fused, seconds, switches_));
  }
  return weights_changed;
}

}  // namespace omnidp::models
