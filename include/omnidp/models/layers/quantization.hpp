#pragma once
// model.quantization fp8 as one plan per model (vLLM's quantization config chosen per layer):
// which linear layers compute with LinearMethod::fp8_rowwise (layers/parallel_linear.hpp),
// applied once after the weights are loaded. A model states its plan; the walk below is the
// same for every model. Not thread-safe (changes the layers); call before the first forward.

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "omnidp/models/layers/fp8.hpp"

namespace omnidp::models {

struct Fp8Plan {
  Fp8Accumulation accumulation = Fp8Accumulation::fast;
  // The block stack's module name under the model ("blocks"): only the parallel linear layers
  // of its blocks are planned; embeddings, modulation and output projections keep their dtype.
  std::string blocks;
  // That many blocks at each end of the stack keep the weights' dtype (HunyuanVideo-1.5: the
  // first ones see the embeddings as they come, the last ones feed the output head).
  std::int64_t bf16_edge_blocks = 0;
  // Layers that keep the weights' dtype, by their name inside a block ("attn2.to_k").
  std::vector<std::string> keep;
};

// The full names of the layers `plan` quantizes under `root`, in module order: every
// ParallelLinearBase of a planned block that is not kept. The parts of a fused layer
// (QKVParallelLinear, listed by their FusedLinearOwner) are quantized as one GEMM, so a plan
// keeps all of them or none (ModelError otherwise); ModelError too for no block stack of that
// name or a negative bf16_edge_blocks. Changes nothing.
[[nodiscard]] std::vector<std::string> fp8_plan_layers(torch::nn::Module& root, const Fp8Plan& plan);

// Quantizes the layers of fp8_plan_layers (a fused layer once, its fused weight) and sets the
// blocks' other parallel linear layers back to the weights' dtype, so that a second plan
// replaces the first. ModelError where FP8 is unsupported (layers/fp8.hpp: a GPU that runs
// FP8 GEMMs); a plan that quantizes nothing applies anywhere.
void apply_fp8_plan(torch::nn::Module& root, const Fp8Plan& plan);

}  // namespace omnidp::models
