#pragma once
// Loading a checkpoint into a libtorch module by the Diffusers/transformers tensor names, and
// seeded random weights for `weights: random` and the tiny models.
// Call from the thread that owns the module; not thread-safe with respect to that module.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "omnidp/models/layers/tensor_slice.hpp"
#include "omnidp/models/weights/checkpoint.hpp"

namespace omnidp::models {

struct LoadOptions {
  // Checkpoint names to ignore when the module has no such parameter/buffer (may be empty).
  std::function<bool(const std::string&)> ignore_unexpected;
  // Module parameters allowed to stay as they are when the checkpoint lacks them (may be empty).
  std::function<bool(const std::string&)> ignore_missing;
  // Tensors the module holds a slice of: the module's tensor has the slice's shape, and only
  // the slice is read from the checkpoint (never the whole tensor). A checkpoint dimension
  // that the parts do not divide is a shape mismatch.
  ShardPlan shard;
  // Copy each tensor into its parameter or buffer as allocated (its dtype and device) instead
  // of replacing the parameter's data by a new tensor of `dtype` on `device`: for modules
  // built in their final dtypes on their final device (no float32 staging on the host, no
  // second allocation). `dtype` and `device` are then ignored.
  bool in_place = false;
};

// Strict load. Every parameter of `module` must be in the checkpoint with the same shape, and
// every checkpoint tensor must be a parameter or buffer of the module. Buffers are loaded when
// the checkpoint has them; a buffer the checkpoint lacks is not an error (libtorch has no
// persistent flag: modules compute their non-persistent buffers, e.g. RoPE tables, themselves).
// Nothing is modified unless everything matches: all missing names, unexpected names and shape
// mismatches are reported in one WeightsError (the first 20 of each, with counts).
// Loaded tensors replace the parameters' data converted to `dtype` on `device` (floating
// tensors only; integer/bool tensors keep their dtype), or are copied into them in place
// (LoadOptions::in_place). The tensors are read and copied on libtorch's intra-op threads, each
// from its own part of the mapped files; the result does not depend on the thread count.
void load_state_dict(torch::nn::Module& module, const Checkpoint& checkpoint,
                     torch::ScalarType dtype, torch::Device device, const LoadOptions& options = {});

// Seeded, deterministic random weights, written into the parameters in place (each keeps its
// dtype and device). Every parameter draws from its own CPU generator seeded from (seed, its
// full name), so values do not depend on registration order or on other parameters:
//   - tensors of rank >= 2 (linear, conv, embedding weights, modulation tables):
//     normal(0, 1) / sqrt(fan_in), fan_in = numel / size(0);
//   - rank-1 tensors named "*weight" / "*scale" / "*gamma" (norm gains): ones;
//   - other rank-1 tensors (biases) and scalars: normal(0, 0.02).
// Every value is rounded through bf16, so the weights are exact in bf16, fp16-safe in range
// and identical whatever dtype the model runs in. Buffers are not touched.
// With a `shard` plan, a sliced parameter gets its slice of the values the whole tensor would
// get (its full shape is the slice's times `parts`), so a tensor-parallel model's shards equal
// the single-rank model's weights.
void init_random_weights(torch::nn::Module& module, std::uint64_t seed, const ShardPlan& shard = {});

}  // namespace omnidp::models
