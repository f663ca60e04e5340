#pragma once
// Tensor-parallel linear layers (vLLM's ColumnParallelLinear and RowParallelLinear) and the
// LinearMethod that runs their GEMM (docs/models.md, "Tensor parallelism" and "FP8").
//
// Built for shard r of n, a layer allocates only its slice and declares which checkpoint
// dimension the slice is cut along (TensorParallelLayer::parameter_slices); the loader and
// init_random_weights read that slice through layer_shard_plan(model), so no model states its
// splits a second time by name. Parameter names are torch::nn::Linear's ("weight" [out, in],
// "bias" [out]), zero at construction (layers/linear.hpp says why), in a ParamSpec.
//   ColumnParallelLinear: weight [out/n, in], bias [out/n]. forward(x) = x W_r^T + b_r: this
//     rank's columns of the output; no communication.
//   RowParallelLinear: weight [out, in/n], bias [out] (whole). forward(x_r) = sum_r x_r W_r^T
//     + b: the sum is an all-reduce over the tensor group (bind_tensor_groups), the bias added
//     once after it, or returned unapplied (forward_skip_bias) for the caller's next kernel.
// With shard {0, 1} and no group both are plain linear layers, bit for bit LinearImpl's.
// Threading: as any torch::nn::Module (one thread at a time); forward() is const.

#include <torch/torch.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/param_spec.hpp"
#include "omnidp/models/layers/tensor_parallel.hpp"
#include "omnidp/models/layers/tensor_slice.hpp"

namespace omnidp::models {

// A low-rank update beside a linear layer (a LoRA applied unfused, models/weights/lora.hpp):
// output columns [offset, offset + up.size(0)) gain (x down^T) up^T. down [r, in] (a row-split
// layer: this shard's input columns), up [rows, r] (a column-split one: this shard's output
// rows), the adapter's scale folded into up; both in the layer's dtype and on its device.
struct LowRankUpdate {
  torch::Tensor down;
  torch::Tensor up;
  std::int64_t offset = 0;
};

// How a linear layer computes x @ W^T + b: in the weights' dtype (the default), or FP8
// row-wise W8A8 (layers/fp8.hpp: the weight quantized once per output channel, each activation
// row at every call, bf16 out); plus low-rank updates beside it (none by default), whichever
// way the base product is computed. Value type; apply() is a pure function.
class LinearMethod {
 public:
  LinearMethod() = default;  // unquantized
  // The FP8 form of weight [out, in] (on a GPU that runs FP8 GEMMs; ModelError otherwise, or
  // where in or out is not a multiple of 16).
  [[nodiscard]] static LinearMethod fp8_rowwise(const torch::Tensor& weight,
                                                Fp8Accumulation accumulation);
  [[nodiscard]] bool quantized() const noexcept { return fp8_.defined(); }
  // x [..., in] @ weight^T + bias (undefined: none) -> [..., out]: linear_bias (layers/fused.hpp)
  // unquantized, fp8_linear once quantized (`weight` is then not read); then each low-rank
  // update added into its columns (one GEMM for every update's down, one addmm each for up).
  [[nodiscard]] torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias) const;
  // Replaces the low-rank updates (empty: none). ModelError for an update whose down and up
  // ranks differ or whose columns do not fit `out` output features.
  void set_low_rank(std::vector<LowRankUpdate> updates, std::int64_t out, const std::string& owner);
  [[nodiscard]] const std::vector<LowRankUpdate>& low_rank() const noexcept { return low_rank_; }
  // weight v + the updates' up (down v) in float32: the layer's matrix times a vector [in]
  // (a folded bias, wan/transformer.hpp). Unreduced for a row-split shard.
  [[nodiscard]] torch::Tensor matvec_f32(const torch::Tensor& weight, const torch::Tensor& v) const;

 private:
  Fp8Weight fp8_;
  std::vector<LowRankUpdate> low_rank_;
  torch::Tensor downs_;  // every update's down, stacked [sum r, in]: one GEMM per call
};

// A layer that holds slices of its checkpoint tensors and, where its results are partial,
// needs the tensor group that completes them.
class TensorParallelLayer {
 public:
  TensorParallelLayer() = default;
  TensorParallelLayer(const TensorParallelLayer&) = default;
  TensorParallelLayer& operator=(const TensorParallelLayer&) = default;
  TensorParallelLayer(TensorParallelLayer&&) = default;
  TensorParallelLayer& operator=(TensorParallelLayer&&) = default;
  virtual ~TensorParallelLayer() = default;
  // (parameter name within the layer, its slice) for each sliced parameter; empty unsharded.
  [[nodiscard]] virtual std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const = 0;
  // The group of this layer's shard (null: unsharded). Called by bind_tensor_groups.
  virtual void bind_tensor_group(Collective* group) = 0;
};

// One linear layer of either split: the parameters, the method, the quantization switch.
class ParallelLinearBase : public TensorParallelLayer {
 public:
  // Quantizes the weight to FP8 (LinearMethod::fp8_rowwise), or back to the weights' dtype
  // for nullopt. The weight itself stays (checkpoint names, clone()).
  // The quantization keeps the low-rank updates.
  void set_fp8(std::optional<Fp8Accumulation> accumulation);
  // Low-rank updates beside the weight (LinearMethod::set_low_rank; empty: none).
  void set_low_rank(std::vector<LowRankUpdate> updates);
  [[nodiscard]] const LinearMethod& method() const noexcept { return method_; }
  [[nodiscard]] const TensorShard& shard() const noexcept { return shard_; }

 protected:
  ParallelLinearBase(TensorShard shard, std::string owner)
      : shard_(shard), owner_(std::move(owner)) {}
  [[nodiscard]] virtual const torch::Tensor& weight_tensor() const = 0;
  [[nodiscard]] const std::string& owner() const noexcept { return owner_; }

 private:
  TensorShard shard_;
  std::string owner_;
  LinearMethod method_;
};

class ColumnParallelLinearImpl : public torch::nn::Module, public ParallelLinearBase {
 public:
  // ConfigError (parallel.tensor_parallel_size, naming `owner`) where shard.size does not
  // divide out_features.
  ColumnParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                           TensorShard shard, const ParamSpec& spec, const std::string& owner);
  // x [..., in] -> this rank's columns [..., out/n], bias included.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  // forward(x) without the bias: {x W_r^T, the bias (undefined: none)}.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> forward_skip_bias(const torch::Tensor& x) const;
  [[nodiscard]] std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const override;
  void bind_tensor_group(Collective* /*group*/) override {}

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  [[nodiscard]] const torch::Tensor& weight_tensor() const override { return weight; }
};
TORCH_MODULE(ColumnParallelLinear);

class RowParallelLinearImpl : public torch::nn::Module, public ParallelLinearBase {
 public:
  // ConfigError (as above) where shard.size does not divide in_features.
  RowParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                        TensorShard shard, const ParamSpec& spec, const std::string& owner);
  // x [..., in/n] (this rank's part of the input) -> the whole output [..., out], bias once.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  // forward(x) without the bias: {the reduced product, the bias (undefined: none)}.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> forward_skip_bias(const torch::Tensor& x) const;
  // This rank's x_r W_r^T alone, neither reduced nor biased: for a caller that reduces the
  // products of several layers in one all-reduce and adds each `bias` after it.
  [[nodiscard]] torch::Tensor partial_product(const torch::Tensor& x) const;
  // This rank's W_r v_r in float32 (low-rank updates included), unreduced: for a caller that
  // folds a bias through the layer (v [in/n]).
  [[nodiscard]] torch::Tensor partial_matvec_f32(const torch::Tensor& v) const;
  [[nodiscard]] std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const override;
  // A sharded layer takes the group of its shard (ModelError for no group or another size or
  // rank); a layer built whole (shard size 1, a replicated layer) ignores it.
  void bind_tensor_group(Collective* group) override;

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  [[nodiscard]] const torch::Tensor& weight_tensor() const override { return weight; }
  Collective* group_ = nullptr;
};
TORCH_MODULE(RowParallelLinear);

// Two row-split layers whose outputs complete together (a joint attention's two output
// projections: HunyuanVideo-1.5's to_out.0 over the video tokens and to_add_out over the text
// tokens). With a tensor group both partial products are concatenated along dim 1 and reduced
// in one all-reduce, each layer's bias added after it; without one each layer's forward. Not a
// module: its owner registers the two layers under the checkpoint's names and passes its
// tensor group on (bind_tensor_group), a group of one rank included.
class JointRowParallelLinear {
 public:
  JointRowParallelLinear() = default;
  JointRowParallelLinear(RowParallelLinear first, RowParallelLinear second)
      : first_(std::move(first)), second_(std::move(second)) {}
  // x [B, N, in/n] and y [B, M, in/n] -> {first(x) [B, N, out], second(y) [B, M, out]}.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x,
                                                                const torch::Tensor& y) const;
  void bind_tensor_group(Collective* group) noexcept { group_ = group; }

 private:
  RowParallelLinear first_{nullptr}, second_{nullptr};
  Collective* group_ = nullptr;
};

// vLLM's QKVParallelLinear for checkpoints that store q, k and v (or k and v) apart, as
// Diffusers does: one fused weight [parts x out/n, in] and bias computes them in one GEMM. Each
// part is a ColumnParallelLinear whose weight and bias are views into the fused storage; the
// owner registers the parts under the checkpoint's names (register_module("to_q", part(0))), so
// loading in place, random init and the shard slices go through the parts and fill the fused
// storage. The QKV object is not a module (its parts are) and owns the storage with them.
// Replacing a part's storage (set_data, Module::to) breaks the views: forward() then throws
// ModelError; to() converts the fused storage and keeps them. Threading as a module.
class QKVParallelLinear {
 public:
  QKVParallelLinear() = default;  // no parts
  // `parts` projections of in_features -> out_features each (column-split by shard; ConfigError
  // as ColumnParallelLinear's where shard.size does not divide out_features).
  QKVParallelLinear(std::int64_t in_features, std::int64_t out_features, std::size_t parts,
                    bool with_bias, TensorShard shard, const ParamSpec& spec,
                    const std::string& owner);
  [[nodiscard]] const ColumnParallelLinear& part(std::size_t i) const { return parts_.at(i); }
  [[nodiscard]] std::size_t parts() const noexcept { return parts_.size(); }
  // x [..., in] -> each part's columns [..., out/n], biases included: one GEMM.
  [[nodiscard]] std::vector<torch::Tensor> forward(const torch::Tensor& x) const;
  // forward(x) without the biases (each part's is part(i)->bias).
  [[nodiscard]] std::vector<torch::Tensor> forward_skip_bias(const torch::Tensor& x) const;
  // The fused GEMM in FP8 (LinearMethod::fp8_rowwise), or back in the weights' dtype (nullopt);
  // the low-rank updates stay.
  void set_fp8(std::optional<Fp8Accumulation> accumulation);
  // Part i's low-rank updates (their offsets within the part; empty: none), added to the fused
  // GEMM's output in that part's columns. The other parts' stay.
  void set_low_rank(std::size_t part, std::vector<LowRankUpdate> updates);
  [[nodiscard]] const LinearMethod& method() const noexcept { return method_; }
  // The fused storage on `device` in `dtype`, the parts views into it again (quantization and
  // low-rank updates are dropped: set them after a conversion).
  void to(torch::Device device, torch::ScalarType dtype);
  // The fused weight and bias (undefined without biases): handles that share their
  // implementations, for walks that move storage in place (layers/host_weights.hpp).
  [[nodiscard]] std::vector<torch::Tensor> fused_tensors() const { return {weight_, bias_}; }

 private:
  void bind_views();
  [[nodiscard]] bool views_bound() const;
  void check_views() const;
  torch::Tensor weight_, bias_;
  std::vector<ColumnParallelLinear> parts_;
  std::vector<std::vector<LowRankUpdate>> part_low_rank_;  // per part, offsets within it
  LinearMethod method_;
  std::string owner_;
};

// A module that owns QKVParallelLinear layers (which are not modules: their parts are), so that
// model-wide walks (layers/quantization.hpp) reach the fused layer behind the parts.
class FusedLinearOwner {
 public:
  FusedLinearOwner() = default;
  FusedLinearOwner(const FusedLinearOwner&) = default;
  FusedLinearOwner& operator=(const FusedLinearOwner&) = default;
  FusedLinearOwner(FusedLinearOwner&&) = default;
  FusedLinearOwner& operator=(FusedLinearOwner&&) = default;
  virtual ~FusedLinearOwner() = default;
  // The fused layers this module owns (pointers valid as long as the module).
  [[nodiscard]] virtual std::vector<QKVParallelLinear*> fused_linears() = 0;
};

// The slices every TensorParallelLayer under `root` declares, by full parameter name (the
// checkpoint's): what LoadOptions::shard and init_random_weights take. An empty function when
// nothing under root is sliced.
[[nodiscard]] ShardPlan layer_shard_plan(torch::nn::Module& root);

// Binds `group` (null: none) to every TensorParallelLayer under `root`; the model's one call
// that gives its layers their tensor group.
void bind_tensor_groups(torch::nn::Module& root, Collective* group);

}  // namespace omnidp::models
