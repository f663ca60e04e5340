#include "omnidp/models/layers/quantization.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

// The layers of the blocks: those the plan quantizes, and the rest (which apply_fp8_plan sets
// back to the weights' dtype, so that a second plan replaces the first).
struct PlannedLayers {
  std::vector<std::string> names;
  std::vector<ParallelLinearBase*> layers, other_layers;
  std::vector<QKVParallelLinear*> fused, other_fused;
};

PlannedLayers plan_layers(torch::nn::Module& root, const Fp8Plan& plan) {
  if (plan.bf16_edge_blocks < 0) {
    throw ModelError(
        fmt::format("FP8 plan: bf16_edge_blocks must be >= 0 (got {})", plan.bf16_edge_blocks));
  }
  const auto modules = root.named_modules("", false);
  const auto* stack = modules.find(plan.blocks);
  if (plan.blocks.empty() || stack == nullptr) {
    throw ModelError("FP8 plan: no block stack '" + plan.blocks + "' in " + root.name());
  }
  const auto blocks = static_cast<std::int64_t>((*stack)->children().size());
  std::map<const torch::nn::Module*, QKVParallelLinear*> part_of;
  for (const auto& item : modules) {
    if (auto* owner = dynamic_cast<FusedLinearOwner*>(item.value().get())) {
      for (auto* fused : owner->fused_linears()) {
        for (std::size_t i = 0; i < fused->parts(); ++i) part_of[fused->part(i).get()] = fused;
      }
    }
  }
  PlannedLayers planned;
  std::map<QKVParallelLinear*, std::pair<std::vector<std::string>, std::vector<std::string>>> parts;
  std::vector<QKVParallelLinear*> order;  // the fused layers in module order
  const auto prefix = plan.blocks + ".";
  for (const auto& item : modules) {
    auto* layer = dynamic_cast<ParallelLinearBase*>(item.value().get());
    const auto& name = item.key();
    if (layer == nullptr || name.rfind(prefix, 0) != 0) continue;
    const auto dot = name.find('.', prefix.size());
    const auto index = std::stoll(name.substr(prefix.size(), dot - prefix.size()));
    const auto inner = dot == std::string::npos ? std::string() : name.substr(dot + 1);
    const bool edge = index < plan.bf16_edge_blocks || index >= blocks - plan.bf16_edge_blocks;
    const bool on = !edge && std::find(plan.keep.begin(), plan.keep.end(), inner) == plan.keep.end();
    if (const auto it = part_of.find(item.value().get()); it != part_of.end()) {
      if (parts.count(it->second) == 0) order.push_back(it->second);
      auto& [quantized, kept] = parts[it->second];
      (on ? quantized : kept).push_back(name);
      if (!on) continue;
    } else {
      (on ? planned.layers : planned.other_layers).push_back(layer);
    }
    if (on) planned.names.push_back(name);
  }
  for (auto* fused : order) {
    const auto& names = parts[fused];
    if (!names.first.empty() && !names.second.empty()) {
      throw ModelError("FP8 plan: " + names.first.front() + " and " + names.second.front() +
                       " are one fused layer: keep all of its parts or none");
    }
    (names.first.empty() ? planned.other_fused : planned.fused).push_back(fused);
  }
  return planned;
}

}  // namespace

std::vector<std::string> fp8_plan_layers(torch::nn::Module& root, const Fp8Plan& plan) {
  return plan_layers(root, plan).names;
}

void apply_fp8_plan(torch::nn::Module& root, const Fp8Plan& plan) {
  torch::NoGradGuard no_grad;
  const auto planned = plan_layers(root, plan);
  for (auto* layer : planned.other_layers) layer->set_fp8(std::nullopt);
  for (auto* fused : planned.other_fused) fused->set_fp8(std::nullopt);
  for (auto* layer : planned.layers) layer->set_fp8(plan.accumulation);
  for (auto* fused : planned.fused) fused->set_fp8(plan.accumulation);
}

}  // namespace omnidp::models
