#pragma once
// LoRA adapter files (docs/models.md, "LoRA"): read in any of the shared formats, converted to
// the Diffusers module names, and fused into a module's weights (W += scale * alpha/r * B A,
// plus full deltas) or run beside its linear layers unfused (LoraSidePath), each
// tensor-parallel shard taking its slice.
//
// Formats (detected from the keys; every key must be understood, none is dropped):
//   - Diffusers / PEFT: `[transformer.|base_model.model.]<module>.lora_A.weight`,
//     `.lora_B.weight`, `.lora_B.bias` (PEFT's lora_bias), optional `<module>.alpha`; the
//     file's `lora_adapter_metadata` (lora_alpha, alpha_pattern) as diffusers reads it;
//   - Kohya / ComfyUI / LightX2V: the checkpoint's original names under `diffusion_model.`
//     (`blocks.N.self_attn.q`), `lora_down`/`lora_up` (or lora_A/lora_B) + `.alpha`, and
//     full deltas `.diff` (weights) and `.diff_b` (biases);
//   - musubi-tuner: `lora_unet_blocks_N_self_attn_q.lora_down.weight` + `.alpha`.
// The original-name formats need the model's name map (LoraNameMap), which each model keeps
// with its architecture (wan/lora_names.hpp, hv15/lora_names.hpp).
// Threading: a LoraFile is immutable after reading; fuse/LoraSwitch change a module (call from
// the thread that owns it, before or between forwards).

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/weights/checkpoint.hpp"

namespace omnidp::models {

// B A of one linear layer: down (A) [r, in] and up (B) [out, r] in float32 on the CPU.
struct LowRankDelta {
  torch::Tensor down;
  torch::Tensor up;
  double alpha_over_rank = 1.0;  // the file's alpha / r (1 without an alpha, as diffusers)
};

enum class LoraFormat { diffusers, original, musubi };
[[nodiscard]] const char* to_string(LoraFormat format) noexcept;

struct LoraFile {
  std::filesystem::path path;
  LoraFormat format = LoraFormat::diffusers;
  // Diffusers module name (under the transformer) -> B A, applied to "<module>.weight".
  std::map<std::string, LowRankDelta> low_rank;
  // Full parameter name -> a delta of the parameter's whole shape (`.diff`, `.diff_b`,
  // `lora_B.bias`), float32 on the CPU.
  std::map<std::string, torch::Tensor> deltas;
};

// The original checkpoint names of a model's modules as the original-name formats write them:
// original module name ("blocks.3.self_attn.q", "head.head") -> Diffusers module name
// ("blocks.3.attn1.to_q", "proj_out"), or nullopt for a name the model does not have. A
// parameter that is not a module's weight or bias (Wan's "blocks.3.modulation") maps by its
// full name with `parameter`; musubi-tuner's flattened names ("blocks_3_self_attn_q") are
// turned back into original ones by `musubi` (absent: the model takes no musubi files).
struct LoraNameMap {
  std::function<std::optional<std::string>(const std::string& original_module)> module;
  std::function<std::optional<std::string>(const std::string& original_parameter)> parameter;
  std::function<std::optional<std::string>(const std::string& flat)> musubi;
};

// A model's original module names as tables (the maps of wan/lora_names.hpp and
// hv15/lora_names.hpp): per kind of block, the original prefix ("double_blocks.") and the
// Diffusers one ("transformer_blocks."), both followed by the block index, with the names within
// a block; and the top-level names. Immutable once built; thread-safe.
struct LoraNameTables {
  using Table = std::map<std::string, std::string, std::less<>>;
  struct Blocks {
    std::string original;
    std::string diffusers;
    Table names;
  };
  std::vector<Blocks> blocks;
  Table top;

  // The Diffusers module name of an original one, or nullopt for a name the tables lack.
  [[nodiscard]] std::optional<std::string> module(const std::string& original) const;
  // Every original name, a block index written as <N>.
  [[nodiscard]] std::vector<std::string> originals() const;
};

// The original name among `originals` whose dots written as underscores give `flat` (musubi-
// tuner's flattening), a block index written as <N> in them matching any number; nullopt for
// none. For a model's LoraNameMap::musubi.
[[nodiscard]] std::optional<std::string> unflatten_lora_name(const std::string& flat,
                                                             const std::vector<std::string>& originals);

// Reads and converts a file. `names`: the model's original-name map (empty functions: only
// Diffusers-named files are taken). Throws WeightsError naming the file and listing every key
// it cannot place (unknown names, a lora_A without its lora_B, a rank that differs between A
// and B or an alpha that is not one number, DoRA's dora_scale).
[[nodiscard]] LoraFile read_lora_file(const std::filesystem::path& path,
                                      const LoraNameMap& names = {});

// Parameter name -> its whole (unsliced) shape: a module's (a tensor-parallel shard's slices
// scaled back by layer_shard_plan) or a checkpoint's header (no tensor is read).
using ParameterShapes = std::map<std::string, std::vector<std::int64_t>>;
[[nodiscard]] ParameterShapes parameter_shapes(torch::nn::Module& root);
[[nodiscard]] ParameterShapes parameter_shapes(const Checkpoint& checkpoint);

// Every problem of fusing `file` into a model of these parameters (empty: it fits): a module or
// parameter the file names that the model does not have, a shape that does not match (naming
// the key and both shapes).
[[nodiscard]] std::vector<std::string> lora_problems(const ParameterShapes& shapes,
                                                     const LoraFile& file);
[[nodiscard]] std::vector<std::string> lora_problems(torch::nn::Module& root, const LoraFile& file);
// lora_problems as one text: "" when the file fits, else "N part(s) do not fit the <what>: ..."
// (the first 20, with the count of the rest): the models' rank-0 check (ModelRegistration::
// lora_problem).
[[nodiscard]] std::string describe_lora_problems(const ParameterShapes& shapes,
                                                 const LoraFile& file, std::string_view what);

// root's parameters += scale * (alpha/r * B A, and the full deltas), computed in float32 and
// rounded once to each parameter's dtype; a sharded parameter takes its slice. Throws
// WeightsError with lora_problems() (the first 20, with the count) and changes nothing then.
void fuse_lora(torch::nn::Module& root, const LoraFile& file, double scale);

// The adapter set a module holds for the request at hand, on top of its loaded weights (and the
// job's fused adapters): set() saves every parameter a set changes (once, in host memory) and
// restores the saved values before it fuses the next set, so the weights of a set never depend
// on the sets before it (same request, same bytes). The module must outlive the switch.
class LoraSwitch {
 public:
  explicit LoraSwitch(torch::nn::Module& root) : root_(&root) {}
  // Makes root's weights its base plus each (file, scale) of `adapters`; `key` names the set
  // (the same key as the set held: nothing is done). Returns whether the weights changed (the
  // empty set after the empty set: they did not).
  // Throws WeightsError as fuse_lora (the base restored first).
  bool set(const std::string& key, const std::vector<std::pair<const LoraFile*, double>>& adapters);
  [[nodiscard]] const std::string& key() const noexcept { return key_; }

 private:
  void restore();
  torch::nn::Module* root_;
  std::map<std::string, torch::Tensor> saved_;  // parameter name -> its base value
  std::vector<std::string> changed_;            // parameters the set held changed
  std::string key_;
};

// A request's adapters unfused: each low-rank part whose module is a linear layer that takes
// updates (a ColumnParallelLinear or RowParallelLinear, a fused QKV projection's part) runs
// beside that layer (LinearMethod::set_low_rank: + x A^T (scale alpha/r B)^T), the adapters of
// a set stacked into one wider update per layer (one GEMM pair). The weights are never
// touched, so a switch moves only the factors and a set's outputs never depend on the sets
// before it. Whatever else a file changes (full deltas, biases, other layers) is split off
// (split_lora_file) for a LoraSwitch to fuse. The module must outlive this object.
class LoraSidePath {
 public:
  explicit LoraSidePath(torch::nn::Module& root);
  // Whether the Diffusers module `module` (under root) takes low-rank updates.
  [[nodiscard]] bool takes(const std::string& module) const { return targets_.contains(module); }
  // Makes the layers hold exactly the low-rank parts of `adapters` (each file's parts must all
  // be taken: split_lora_file), in the layers' dtype and device; the layers of the set before
  // are cleared. Throws WeightsError as fuse_lora for a part that does not fit (the layers are
  // then cleared). Returns the number of layers that hold an update.
  std::size_t set(const std::vector<std::pair<const LoraFile*, double>>& adapters);

 private:
  struct Target {
    ParallelLinearBase* layer = nullptr;  // a standalone layer, or
    QKVParallelLinear* fused = nullptr;   // the fused projection whose part it is
    std::size_t part = 0;
    torch::Tensor weight;  // the layer's (or part's) weight: shape, dtype, device
    std::optional<TensorSlice> slice;
  };
  void clear();
  torch::nn::Module* root_;
  std::map<std::string, Target> targets_;
  std::vector<std::string> held_;
};

// `file` in two: {the low-rank parts whose module `side` takes, everything else}.
[[nodiscard]] std::pair<LoraFile, LoraFile> split_lora_file(const LoraFile& file,
                                                            const LoraSidePath& side);

}  // namespace omnidp::models
