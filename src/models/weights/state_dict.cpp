#include "omnidp/models/weights/state_dict.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"

namespace omnidp::models {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kListed = 20;

void append_list(std::string& msg, const std::string& what, const std::vector<std::string>& items) {
  if (items.empty()) return;
  msg += fmt::format("; {} {}:", items.size(), what);
  for (std::size_t i = 0; i < items.size() && i < kListed; ++i) msg += " " + items[i];
  if (items.size() > kListed) msg += fmt::format(" ... (+{} more)", items.size() - kListed);
}

// splitmix64 over (seed, FNV-1a of the name): an independent stream per parameter.
std::uint64_t parameter_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (h | 1U);
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

void load_one(const Checkpoint& checkpoint, const std::string& name, torch::Tensor& target,
              const std::map<std::string, TensorSlice>& slices, torch::ScalarType dtype,
              torch::Device device, bool in_place) {
  const auto stored = to_scalar_type(checkpoint.meta(name).dtype);
  const bool floating = at::isFloatingType(stored) && at::isFloatingType(target.scalar_type());
  const auto as = floating && !in_place ? dtype : target.scalar_type();
  const auto slice = slices.find(name);
  torch::Tensor value;
  if (slice == slices.end()) {
    value = checkpoint.tensor(name, as);
  } else {
    const auto& s = slice->second;
    const auto length = target.size(s.dim);
    value = checkpoint.tensor_slice(name, s.dim, s.index * length, length, as);
  }
  checkpoint.release(name);  // copied out: its file pages leave this process's resident set
  if (in_place) {
    target.copy_(value);
  } else {
    target.set_data(value.to(device));
  }
}

}  // namespace

void load_state_dict(torch::nn::Module& module, const Checkpoint& checkpoint,
                     torch::ScalarType dtype, torch::Device device, const LoadOptions& options) {
  std::map<std::string, torch::Tensor> params;
  for (const auto& item : module.named_parameters(true)) params.emplace(item.key(), item.value());
  std::map<std::string, torch::Tensor> buffers;
  for (const auto& item : module.named_buffers(true)) buffers.emplace(item.key(), item.value());

  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
  std::vector<std::string> mismatched;
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  for (const auto& [name, param] : params) {
    if (!checkpoint.contains(name)) {
      if (!(options.ignore_missing && options.ignore_missing(name))) missing.push_back(name);
      continue;
    }
    targets.emplace_back(name, param);
  }
  for (const auto& name : checkpoint.names()) {
    if (params.count(name) != 0) continue;
    const auto b = buffers.find(name);
    if (b != buffers.end()) {
      targets.emplace_back(name, b->second);
      continue;
    }
    if (!(options.ignore_unexpected && options.ignore_unexpected(name))) unexpected.push_back(name);
  }
  std::map<std::string, TensorSlice> slices;
  for (const auto& [name, target] : targets) {
    const auto& meta = checkpoint.meta(name);
    auto expected = meta.shape;
    std::string sliced;
    if (options.shard) {
      if (const auto slice = options.shard(name)) {
        const auto d = static_cast<std::size_t>(slice->dim);
        if (slice->dim < 0 || d >= expected.size() || slice->parts <= 0 ||
            expected[d] % slice->parts != 0) {
          mismatched.push_back(
              fmt::format("{} (checkpoint {} in {} cannot be split in {} parts along dim {})", name,
                          shape_string(meta.shape), checkpoint.file(name).filename().string(),
                          slice->parts, slice->dim));
          continue;
        }
        expected[d] /= slice->parts;
        slices.emplace(name, *slice);
        sliced = fmt::format(", shard {}/{} of dim {} {}", slice->index, slice->parts, slice->dim,
                             shape_string(expected));
      }
    }
    if (target.sizes() != at::IntArrayRef(expected)) {
      mismatched.push_back(name + " (checkpoint " + shape_string(meta.shape) + sliced + " in " +
                           checkpoint.file(name).filename().string() + ", model " +
                           shape_string(target.sizes()) + ")");
    }
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string msg = "checkpoint does not match the model";
    append_list(msg, "missing", missing);
    append_list(msg, "unexpected", unexpected);
    append_list(msg, "shape mismatches", mismatched);
    // A component folder's model is built from its config.json: a config that does not match
    // the weights (more layers, another width) shows up as missing names or shape mismatches.
    std::error_code ec;
    const auto config = checkpoint.path() / "config.json";
    if (fs::is_directory(checkpoint.path(), ec) && fs::is_regular_file(config, ec)) {
      msg +=
          " (the model was built from " + config.string() + ": do its sizes match these weights?)";
    }
    throw WeightsError(checkpoint.path().string(), msg);
  }

  // One task per tensor: read out of the mapping (the file's pages come in on these threads),
  // convert, copy to the device. Tensors are independent, so the order does not matter.
  at::parallel_for(0, static_cast<std::int64_t>(targets.size()), 1,
                   [&](std::int64_t begin, std::int64_t end) {
                     torch::NoGradGuard no_grad;
                     for (auto i = begin; i < end; ++i) {
                       auto& [name, target] = targets[static_cast<std::size_t>(i)];
                       load_one(checkpoint, name, target, slices, dtype, device, options.in_place);
                     }
                   });
}

void init_random_weights(torch::nn::Module& module, std::uint64_t seed, const ShardPlan& shard) {
  torch::NoGradGuard no_grad;
  const auto params = module.named_parameters(true);
  // Every parameter has its own generator, so the values do not depend on the order or the
  // thread: generate them in parallel (a 5B model takes minutes on one core).
  at::parallel_for(
      0, static_cast<std::int64_t>(params.size()), 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          const auto& item = params[static_cast<std::size_t>(i)];
          const std::string& name = item.key();
          auto param = item.value();
          // A sliced parameter draws the whole tensor's values, then keeps its slice.
          const auto slice = shard ? shard(name) : std::nullopt;
          auto sizes = param.sizes().vec();
          if (slice) sizes.at(static_cast<std::size_t>(slice->dim)) *= slice->parts;
          const auto numel = c10::multiply_integers(sizes);
          torch::Tensor value;
          if (sizes.size() >= 2) {
            auto gen = at::detail::createCPUGenerator(parameter_seed(seed, name));
            const double fan_in = static_cast<double>(numel) / static_cast<double>(sizes[0]);
            value = torch::randn(sizes, gen, torch::kFloat32) / std::sqrt(std::max(1.0, fan_in));
          } else if (sizes.size() == 1 && (name.ends_with("weight") || name.ends_with("scale") ||
                                           name.ends_with("gamma"))) {
            value = torch::ones(sizes, torch::kFloat32);
          } else {
            auto gen = at::detail::createCPUGenerator(parameter_seed(seed, name));
            value = torch::randn(sizes, gen, torch::kFloat32) * 0.02;
          }
          if (slice)
            value = value.narrow(slice->dim, slice->index * param.size(slice->dim),
                                 param.size(slice->dim));
          param.copy_(value.to(torch::kBFloat16).to(param.scalar_type()));
        }
      });
}

}  // namespace omnidp::models
