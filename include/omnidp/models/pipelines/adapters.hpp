#pragma once
// LoRA adapters of a pipeline's transformer(s) (docs/models.md, "LoRA"): the job's (model.lora)
// fused once after loading, and a request's (a manifest line's "lora") switched per request on
// top of them. Experts: {transformer} for one-expert models, {transformer, transformer_2} for
// Wan2.2-A14B (high-noise, low-noise); each adapter goes into the experts resolve_lora_expert
// names. Threading: the worker's thread, between requests.

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "omnidp/config/lora.hpp"
#include "omnidp/models/weights/lora.hpp"

namespace omnidp::models {

// Fuses `adapters` (model.lora) into `experts`, reading each file with `names`. Throws
// WeightsError for a file that cannot be read or does not fit (nothing of that adapter is
// fused then).
void fuse_job_adapters(const std::vector<LoraAdapter>& adapters,
                       const std::vector<torch::nn::Module*>& experts, const LoraNameMap& names);

// Whether `adapter` goes into expert `index` of `count` (0: the high-noise one).
[[nodiscard]] bool adapter_for_expert(const LoraAdapter& adapter, std::size_t index,
                                      std::size_t count);

// A request's adapters: read once per file (by SHA-256; the bytes must hash to the value the
// request was validated with), then each expert switched to the request's set: the low-rank
// parts of its linear layers beside them (LoraSidePath: no weight changes, the switch moves
// factors), the rest (full deltas, biases, other parameters) fused by a LoraSwitch. A set's
// outputs never depend on the sets before it. The experts must outlive this object.
class RequestAdapters {
 public:
  RequestAdapters(LoraNameMap names, std::vector<torch::nn::Module*> experts);
  // Makes every expert hold exactly `adapters` beyond its base weights (none: the base).
  // Returns whether any expert's weights changed (a fused part: FP8 layers are then quantized
  // again by the caller; the side path needs no such pass). Throws InputError for a file whose
  // bytes changed, WeightsError as fuse_lora.
  bool select(const std::vector<LoraAdapter>& adapters);
  // Adapter switches so far (a set other than the one held), for the log and benchmarks.
  [[nodiscard]] std::int64_t switches() const noexcept { return switches_; }

 private:
  const LoraFile& file(const LoraAdapter& adapter);
  // file(adapter) split for expert `index` (split_lora_file), kept with the file.
  const std::pair<LoraFile, LoraFile>& split(const LoraAdapter& adapter, std::size_t index);

  LoraNameMap names_;
  std::vector<torch::nn::Module*> experts_;
  std::vector<LoraSidePath> sides_;
  std::vector<LoraSwitch> switches_by_expert_;
  std::vector<std::string> held_;          // per expert: the key of the set it holds
  std::map<std::string, LoraFile> files_;  // sha256 -> the converted file
  std::map<std::pair<const LoraFile*, std::size_t>, std::pair<LoraFile, LoraFile>> splits_;
  std::int64_t switches_ = 0;
};

}  // namespace omnidp::models
