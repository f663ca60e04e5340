#include "omnidp/models/weights/lora.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <set>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kLoraListed = 20;

std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kLoraListed; ++i)
    out += (i ? "; " : "") + items[i];
  if (items.size() > kLoraListed) out += fmt::format(" ... (+{} more)", items.size() - kLoraListed);
  return out;
}

bool strip_suffix(std::string& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.resize(s.size() - suffix.size());
  return true;
}

// One key of a file, split into the name it is about and what it holds.
enum class Part { down, up, up_bias, alpha, diff, diff_b };
struct KeyPart {
  std::string name;
  Part part;
};

std::optional<KeyPart> split_key(std::string key) {
  static const std::array<std::pair<std::string_view, Part>, 10> kSuffixes{{
      {".lora_down.weight", Part::down},
      {".lora_up.weight", Part::up},
      {".lora_A.weight", Part::down},
      {".lora_B.weight", Part::up},
      {".lora_B.bias", Part::up_bias},
      {".lora_up.bias", Part::up_bias},
      {".alpha", Part::alpha},
      {".diff_b", Part::diff_b},
      {".diff", Part::diff},
      {".lora.down.weight", Part::down},
  }};
  for (const auto& [suffix, part] : kSuffixes) {
    if (strip_suffix(key, suffix)) return KeyPart{key, part};
  }
  return std::nullopt;
}

// The pieces of one module collected from its keys.
struct Pieces {
  torch::Tensor down, up, up_bias, diff, diff_b;
  std::optional<double> alpha;
  std::vector<std::string> keys;
};

// diffusers' lora_adapter_metadata: lora_alpha and alpha_pattern (PEFT's LoraConfig), keys
// with or without the component prefix.
struct PeftAlphas {
  std::optional<double> lora_alpha;
  std::map<std::string, double> pattern;
  [[nodiscard]] std::optional<double> of(const std::string& module) const {
    for (const auto& [key, alpha] : pattern) {
      if (module == key || module.ends_with("." + key)) return alpha;
    }
    return lora_alpha;
  }
};

PeftAlphas peft_alphas(const SafetensorsFile& file) {
  PeftAlphas out;
  const auto& meta = file.header().metadata;
  const auto it = meta.find("lora_adapter_metadata");
  if (it == meta.end()) return out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(file.path().string(),
                       std::string("its lora_adapter_metadata is not JSON: ") + e.what());
  }
  for (const auto& [key, value] : j.items()) {
    const std::string bare = key.starts_with("transformer.") ? key.substr(12) : key;
    if (bare == "lora_alpha" && value.is_number()) out.lora_alpha = value.get<double>();
    if (bare == "alpha_pattern" && value.is_object()) {
      for (const auto& [k, v] : value.items()) {
        if (v.is_number()) out.pattern[k] = v.get<double>();
      }
    }
  }
  return out;
}

// A parameter of `root` by full name, and the parameter a Diffusers-named delta `<name>.weight`
// means when `<name>` is itself a parameter (scale_shift_table.diff).
const torch::Tensor* find_parameter(const torch::OrderedDict<std::string, torch::Tensor>& params,
                                    const std::string& name) {
  if (const auto* p = params.find(name)) return p;
  std::string bare = name;
  if (strip_suffix(bare, ".weight")) return params.find(bare);
  return nullptr;
}

std::string name_of_found(const torch::OrderedDict<std::string, torch::Tensor>& params,
                          const std::string& name) {
  if (params.find(name) != nullptr) return name;
  std::string bare = name;
  strip_suffix(bare, ".weight");
  return bare;
}

// The whole (unsliced) shape of parameter `name` as stored in `root`.
std::vector<std::int64_t> full_shape(const torch::Tensor& p, const std::optional<TensorSlice>& slice) {
  auto shape = p.sizes().vec();
  if (slice) shape[static_cast<std::size_t>(slice->dim)] *= slice->parts;
  return shape;
}

// One parameter's change: the whole tensor's delta (float32, CPU) before slicing.
// One parameter's change: its pieces (B A products and full deltas), summed on the parameter's
// device when fused (a GPU model's deltas are computed there: no [out, in] float32 tensor
// crosses the bus, only the factors).
struct Change {
  std::vector<const LowRankDelta*> low_rank;
  std::vector<torch::Tensor> deltas;
  std::vector<std::string> from;  // the file's names, for messages
  [[nodiscard]] std::vector<std::int64_t> shape() const {
    if (!deltas.empty()) return deltas.front().sizes().vec();
    return {low_rank.front()->up.size(0), low_rank.front()->down.size(1)};
  }
  [[nodiscard]] bool shapes_agree() const {
    const auto s = shape();
    for (const auto* lr : low_rank) {
      if (std::vector<std::int64_t>{lr->up.size(0), lr->down.size(1)} != s) return false;
    }
    for (const auto& d : deltas) {
      if (d.sizes().vec() != s) return false;
    }
    return true;
  }
  // The whole parameter's delta in float32 on `device`.
  [[nodiscard]] torch::Tensor on(torch::Device device) const {
    torch::Tensor sum;
    for (const auto* lr : low_rank) {
      auto d = torch::matmul(lr->up.to(device), lr->down.to(device));
      if (lr->alpha_over_rank != 1.0) d = d * lr->alpha_over_rank;
      sum = sum.defined() ? sum + d : d;
    }
    for (const auto& delta : deltas) {
      const auto d = delta.to(device);
      sum = sum.defined() ? sum + d : d;
    }
    return sum;
  }
};

std::map<std::string, Change> changes_of(const LoraFile& file) {
  std::map<std::string, Change> out;
  for (const auto& [module, lr] : file.low_rank) {
    auto& c = out[module + ".weight"];
    c.low_rank.push_back(&lr);
    c.from.push_back(module + " (lora)");
  }
  for (const auto& [param, delta] : file.deltas) {
    auto& c = out[param];
    c.deltas.push_back(delta);
    c.from.push_back(param + " (delta)");
  }
  return out;
}

}  // namespace

const char* to_string(LoraFormat format) noexcept {
  switch (format) {
    case LoraFormat::diffusers: return "diffusers";
    case LoraFormat::original: return "original names (diffusion_model.)";
    case LoraFormat::musubi: return "musubi-tuner (lora_unet_)";
  }
  return "?";
}

std::optional<std::string> LoraNameTables::module(const std::string& original) const {
  for (const auto& b : blocks) {
    if (!original.starts_with(b.original)) continue;
    const auto dot = original.find('.', b.original.size());
    if (dot == std::string::npos || dot == b.original.size()) continue;
    const auto index = original.substr(b.original.size(), dot - b.original.size());
    if (!std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      continue;
    const auto it = b.names.find(original.substr(dot + 1));
    if (it == b.names.end()) return std::nullopt;
    return b.diffusers + index + "." + it->second;
  }
  const auto it = top.find(original);
  if (it == top.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> LoraNameTables::originals() const {
  std::vector<std::string> out;
  for (const auto& b : blocks) {
    for (const auto& [name, _] : b.names) out.push_back(b.original + "<N>." + name);
  }
  for (const auto& [name, _] : top) out.push_back(name);
  return out;
}

std::optional<std::string> unflatten_lora_name(const std::string& flat,
                                               const std::vector<std::string>& originals) {
  for (const auto& original : originals) {
    const auto at = original.find("<N>");
    std::string written = original;
    std::replace(written.begin(), written.end(), '.', '_');
    if (at == std::string::npos) {
      if (written == flat) return original;
      continue;
    }
    // "<head>.<N>.<tail>": flat must be head_<digits>_tail.
    const auto head = original.substr(0, at);   // ends with '.'
    const auto tail = original.substr(at + 3);  // starts with '.'
    std::string head_flat = head, tail_flat = tail;
    std::replace(head_flat.begin(), head_flat.end(), '.', '_');
    std::replace(tail_flat.begin(), tail_flat.end(), '.', '_');
    if (!flat.starts_with(head_flat) || !flat.ends_with(tail_flat) ||
        flat.size() <= head_flat.size() + tail_flat.size())
      continue;
    const auto digits =
        flat.substr(head_flat.size(), flat.size() - head_flat.size() - tail_flat.size());
    if (!std::all_of(digits.begin(), digits.end(),
                     [](unsigned char c) { return std::isdigit(c) != 0; }))
      continue;
    return head + digits + tail;
  }
  return std::nullopt;
}

LoraFile read_lora_file(const fs::path& path, const LoraNameMap& names) {
  const SafetensorsFile st(path);
  const std::string where = path.string();
  LoraFile out;
  out.path = path;
  const auto keys = st.names();
  if (keys.empty()) throw WeightsError(where, "holds no tensors: not a LoRA adapter");
  const auto any_prefix = [&](std::string_view p) {
    return std::any_of(keys.begin(), keys.end(),
                       [&](const std::string& k) { return k.starts_with(p); });
  };
  std::string prefix;
  if (any_prefix("diffusion_model.")) {
    out.format = LoraFormat::original;
    prefix = "diffusion_model.";
  } else if (any_prefix("lora_unet_")) {
    out.format = LoraFormat::musubi;
    prefix = "lora_unet_";
  } else if (any_prefix("transformer.")) {
    prefix = "transformer.";
  } else if (any_prefix("base_model.model.")) {
    prefix = "base_model.model.";
  }
  if ((out.format == LoraFormat::original && !names.module) ||
      (out.format == LoraFormat::musubi && (!names.module || !names.musubi))) {
    throw WeightsError(
        where,
        fmt::format("is a LoRA in the {} format, whose names this model has no "
                    "map for: convert it to Diffusers names (transformer.<module>.lora_A.weight)",
                    to_string(out.format)));
  }

  std::vector<std::string> unknown;
  std::map<std::string, Pieces> modules;  // Diffusers module (or parameter) name -> pieces
  std::map<std::string, std::string> parameter_deltas;  // original full-parameter deltas
  for (const auto& key : keys) {
    if (key.find("dora_scale") != std::string::npos) {
      unknown.push_back(key + " (DoRA's magnitude: DoRA adapters are not supported)");
      continue;
    }
    if (!key.starts_with(prefix)) {
      unknown.push_back(key + " (not under '" + prefix + "' like the file's other keys)");
      continue;
    }
    const auto split = split_key(key.substr(prefix.size()));
    if (!split) {
      unknown.push_back(
          key +
          " (not a LoRA tensor: expected lora_A/lora_B, lora_down/lora_up, alpha, diff or diff_b)");
      continue;
    }
    std::string name = split->name;
    if (out.format == LoraFormat::musubi) {
      const auto original = names.musubi ? names.musubi(name) : std::nullopt;
      if (!original) {
        unknown.push_back(key + " (no such musubi-tuner module name)");
        continue;
      }
      name = *original;
    }
    if (out.format != LoraFormat::diffusers) {
      if (const auto module = names.module(name)) {
        name = *module;
      } else if (split->part == Part::diff && names.parameter && names.parameter(name)) {
        name = "=" + *names.parameter(name);  // a parameter, not a module's weight
      } else {
        unknown.push_back(key + " (no module '" + split->name + "' in this model)");
        continue;
      }
    }
    auto& p = modules[name];
    p.keys.push_back(key);
    switch (split->part) {
      case Part::down: p.down = st.tensor(key); break;
      case Part::up: p.up = st.tensor(key); break;
      case Part::up_bias: p.up_bias = st.tensor(key); break;
      case Part::diff: p.diff = st.tensor(key); break;
      case Part::diff_b: p.diff_b = st.tensor(key); break;
      case Part::alpha: {
        const auto a = st.tensor(key);
        if (a.numel() != 1) {
          unknown.push_back(fmt::format("{} (an alpha holds one number, not shape {})", key,
                                        shape_string(a.sizes())));
        } else {
          p.alpha = a.item<double>();
        }
        break;
      }
    }
  }

  const PeftAlphas peft = out.format == LoraFormat::diffusers ? peft_alphas(st) : PeftAlphas{};
  for (auto& [name, p] : modules) {
    const std::string keys_text = p.keys.front();
    if (name.starts_with("=")) {  // a parameter's full delta
      out.deltas[name.substr(1)] = p.diff;
      continue;
    }
    if (p.down.defined() != p.up.defined()) {
      unknown.push_back(fmt::format("{} (has {} but no {})", keys_text,
                                    p.down.defined() ? "lora_A/lora_down" : "lora_B/lora_up",
                                    p.down.defined() ? "lora_B/lora_up" : "lora_A/lora_down"));
      continue;
    }
    if (p.down.defined()) {
      if (p.down.dim() != 2 || p.up.dim() != 2 || p.down.size(0) != p.up.size(1)) {
        unknown.push_back(
            fmt::format("{}: the ranks differ: down/A {}, up/B {} (expected A [r, in], B [out, r])",
                        name, shape_string(p.down.sizes()), shape_string(p.up.sizes())));
        continue;
      }
      const double rank = static_cast<double>(p.down.size(0));
      std::optional<double> alpha = p.alpha;
      if (!alpha) alpha = peft.of(name);
      out.low_rank[name] = LowRankDelta{p.down, p.up, alpha ? *alpha / rank : 1.0};
    } else if (p.alpha) {
      unknown.push_back(name + ".alpha (an alpha without lora_down/lora_up)");
      continue;
    }
    if (p.up_bias.defined()) out.deltas[name + ".bias"] = p.up_bias;
    if (p.diff.defined()) out.deltas[name + ".weight"] = p.diff;
    if (p.diff_b.defined()) {
      auto& b = out.deltas[name + ".bias"];
      b = b.defined() ? b + p.diff_b : p.diff_b;
    }
  }
  if (!unknown.empty()) {
    throw WeightsError(where,
                       fmt::format("{} key(s) of this LoRA ({} format) cannot be applied: {}",
                                   unknown.size(), to_string(out.format), listed(unknown)));
  }
  return out;
}

ParameterShapes parameter_shapes(torch::nn::Module& root) {
  const auto plan = layer_shard_plan(root);
  ParameterShapes out;
  for (const auto& item : root.named_parameters()) {
    out.emplace(item.key(), full_shape(item.value(), plan ? plan(item.key()) : std::nullopt));
  }
  return out;
}

ParameterShapes parameter_shapes(const Checkpoint& checkpoint) {
  ParameterShapes out;
  for (const auto& name : checkpoint.names()) {
    const auto& shape = checkpoint.meta(name).shape;
    out.emplace(name, std::vector<std::int64_t>(shape.begin(), shape.end()));
  }
  return out;
}

std::vector<std::string> lora_problems(const ParameterShapes& shapes, const LoraFile& file) {
  std::vector<std::string> problems;
  for (const auto& [param, change] : changes_of(file)) {
    std::string name = param;
    auto it = shapes.find(name);
    if (it == shapes.end() && strip_suffix(name, ".weight")) it = shapes.find(name);
    if (it == shapes.end()) {
      problems.push_back(fmt::format("{}: the model has no parameter {}", listed(change.from), param));
      continue;
    }
    if (!change.shapes_agree() || change.shape() != it->second) {
      problems.push_back(fmt::format("{}: shape {} does not fit {} {}", listed(change.from),
                                     shape_string(change.shape()), it->first,
                                     shape_string(it->second)));
    }
  }
  return problems;
}

std::string describe_lora_problems(const ParameterShapes& shapes, const LoraFile& file,
                                   std::string_view what) {
  const auto problems = lora_problems(shapes, file);
  if (problems.empty()) return {};
  return fmt::format("{} part(s) do not fit the {}: {}", problems.size(), what, listed(problems));
}

std::vector<std::string> lora_problems(torch::nn::Module& root, const LoraFile& file) {
  return lora_problems(parameter_shapes(root), file);
}

void fuse_lora(torch::nn::Module& root, const LoraFile& file, double scale) {
  const auto problems = lora_problems(root, file);
  if (!problems.empty()) {
    throw WeightsError(file.path.string(),
                       fmt::format("{} part(s) of this LoRA do not fit the model: {}",
                                   problems.size(), listed(problems)));
  }
  const auto params = root.named_parameters();
  const auto plan = layer_shard_plan(root);
  torch::NoGradGuard no_grad;
  for (const auto& [param, change] : changes_of(file)) {
    const auto name = name_of_found(params, param);
    torch::Tensor target = *find_parameter(params, param);
    torch::Tensor delta = change.on(target.device());
    if (const auto slice = plan ? plan(name) : std::nullopt) {
      const auto length = target.size(slice->dim);
      delta = delta.narrow(slice->dim, slice->index * length, length);
    }
    delta = delta * scale;
    target.copy_(target.to(torch::kFloat32).add_(delta));
  }
}

bool LoraSwitch::set(const std::string& key,
                     const std::vector<std::pair<const LoraFile*, double>>& adapters) {
  if (key == key_) return false;
  const bool held = !changed_.empty();
  restore();
  key_.clear();
  if (adapters.empty()) return held;
  const auto params = root_->named_parameters();
  // Save every parameter the set changes, once (in host memory; page-locked for a GPU module).
  for (const auto& [file, scale] : adapters) {
    for (const auto& problem : lora_problems(*root_, *file)) {
      throw WeightsError(file->path.string(), "does not fit the model: " + problem);
    }
    for (const auto& [param, change] : changes_of(*file)) {
      (void)change;
      const auto name = name_of_found(params, param);
      if (std::find(changed_.begin(), changed_.end(), name) == changed_.end())
        changed_.push_back(name);
      if (!saved_.contains(name)) {
        const auto& p = *params.find(name);
        auto copy =
            torch::empty(p.sizes(), p.options().device(torch::kCPU).pinned_memory(p.is_cuda()));
        copy.copy_(p);
        saved_.emplace(name, copy);
      }
    }
  }
  for (const auto& [file, scale] : adapters) fuse_lora(*root_, *file, scale);
  key_ = key;
  return true;
}

void LoraSwitch::restore() {
  if (changed_.empty()) return;
  const auto params = root_->named_parameters();
  torch::NoGradGuard no_grad;
  for (const auto& name : changed_) {
    auto p = *params.find(name);
    p.copy_(saved_.at(name));
  }
  changed_.clear();
}

LoraSidePath::LoraSidePath(torch::nn::Module& root) : root_(&root) {
  const auto plan = layer_shard_plan(root);
  std::map<const torch::nn::Module*, std::string> names;
  for (const auto& item : root.named_modules("", /*include_self=*/false)) {
    names.emplace(item.value().get(), item.key());
    auto* layer = dynamic_cast<ParallelLinearBase*>(item.value().get());
    if (layer == nullptr) continue;
    const auto weight = item.value()->named_parameters(false)["weight"];
    targets_[item.key()] =
        Target{layer, nullptr, 0, weight, plan ? plan(item.key() + ".weight") : std::nullopt};
  }
  std::vector<torch::nn::Module*> modules{&root};
  for (const auto& module : root.modules(/*include_self=*/false)) modules.push_back(module.get());
  for (auto* module : modules) {
    auto* owner = dynamic_cast<FusedLinearOwner*>(module);
    if (owner == nullptr) continue;
    for (auto* fused : owner->fused_linears()) {
      for (std::size_t i = 0; i < fused->parts(); ++i) {
        const auto it = names.find(fused->part(i).get());
        if (it == names.end()) continue;
        auto& t = targets_.at(it->second);
        t.layer = nullptr;
        t.fused = fused;
        t.part = i;
      }
    }
  }
}

std::size_t LoraSidePath::set(const std::vector<std::pair<const LoraFile*, double>>& adapters) {
  clear();
  std::map<std::string, std::vector<LowRankUpdate>> updates;
  for (const auto& [file, scale] : adapters) {
    if (const auto problems = lora_problems(*root_, *file); !problems.empty()) {
      throw WeightsError(file->path.string(), "does not fit the model: " + listed(problems));
    }
    for (const auto& [module, lr] : file->low_rank) {
      const auto found = targets_.find(module);
      if (found == targets_.end()) {
        throw ModelError(
            fmt::format("{}: {} is not a layer that takes low-rank updates (split "
                        "the file first)",
                        file->path.string(), module));
      }
      const auto& t = found->second;
      auto down = lr.down;
      auto up = lr.up * (scale * lr.alpha_over_rank);
      if (t.slice && t.slice->dim == 0) {
        const auto rows = t.weight.size(0);
        up = up.narrow(0, t.slice->index * rows, rows);
      } else if (t.slice) {
        const auto cols = t.weight.size(1);
        down = down.narrow(1, t.slice->index * cols, cols);
      }
      const auto options = t.weight.options();
      updates[module].push_back(LowRankUpdate{down.to(options), up.to(options), 0});
    }
  }
  for (auto& [module, list] : updates) {
    // Several adapters on one layer: one update of their stacked ranks.
    std::vector<torch::Tensor> downs, ups;
    for (const auto& u : list) {
      downs.push_back(u.down);
      ups.push_back(u.up);
    }
    std::vector<LowRankUpdate> one{
        LowRankUpdate{torch::cat(downs, 0).contiguous(), torch::cat(ups, 1).contiguous(), 0}};
    const auto& t = targets_.at(module);
    if (t.fused != nullptr) {
      t.fused->set_low_rank(t.part, std::move(one));
    } else {
      t.layer->set_low_rank(std::move(one));
    }
    held_.push_back(module);
  }
  return held_.size();
}

void LoraSidePath::clear() {
  for (const auto& module : held_) {
    const auto& t = targets_.at(module);
    if (t.fused != nullptr) {
      t.fused->set_low_rank(t.part, {});
    } else {
      t.layer->set_low_rank({});
    }
  }
  held_.clear();
}

std::pair<LoraFile, LoraFile> split_lora_file(const LoraFile& file, const LoraSidePath& side) {
  LoraFile beside{file.path, file.format, {}, {}};
  LoraFile rest{file.path, file.format, {}, file.deltas};
  for (const auto& [module, lr] : file.low_rank) {
    (side.takes(module) ? beside : rest).low_rank.emplace(module, lr);
  }
  return {std::move(beside), std::move(rest)};
}

}  // namespace omnidp::models
