// The FP8 plan (layers/quantization.hpp) over a small block stack: which layers a plan selects
// (edge blocks, kept layers, a fused layer as one), what it refuses, and that applying it on
// the CPU quantizes nothing silently (FP8 needs a GPU; fp8_test.cpp covers the GEMM there).
#include "omnidp/models/layers/quantization.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

// A block as the models build them: a fused q/k/v whose parts carry the checkpoint's names, an
// output projection, and a layer that is not a parallel linear one.
class BlockImpl : public torch::nn::Module, public FusedLinearOwner {
 public:
  BlockImpl() : qkv_(16, 16, 3, true, TensorShard{}, ParamSpec{}, "test") {
    register_module("to_q", qkv_.part(0));
    register_module("to_k", qkv_.part(1));
    register_module("to_v", qkv_.part(2));
    register_module("to_out", RowParallelLinear(16, 16, true, TensorShard{}, ParamSpec{}, "test"));
    register_module("norm", torch::nn::Linear(16, 16));
  }
  std::vector<QKVParallelLinear*> fused_linears() override { return {&qkv_}; }

 private:
  QKVParallelLinear qkv_;
};
TORCH_MODULE(Block);

struct TinyModel : torch::nn::Module {
  TinyModel() {
    register_module("embed", ColumnParallelLinear(16, 16, true, TensorShard{}, ParamSpec{}, "test"));
    auto stack = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < 3; ++i) stack->push_back(Block());
  }
};

std::vector<std::string> block_layers(int i, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back("blocks." + std::to_string(i) + "." + n);
  return out;
}

TEST(Fp8Plan, SelectsTheBlocksParallelLinearLayers) {
  TinyModel model;
  Fp8Plan plan;
  plan.blocks = "blocks";
  std::vector<std::string> all;
  for (int i = 0; i < 3; ++i) {
    for (const auto& n : block_layers(i, {"to_q", "to_k", "to_v", "to_out"})) all.push_back(n);
  }
  EXPECT_EQ(fp8_plan_layers(model, plan), all);  // not embed (outside), not norm (not parallel)
  plan.bf16_edge_blocks = 1;
  EXPECT_EQ(fp8_plan_layers(model, plan), block_layers(1, {"to_q", "to_k", "to_v", "to_out"}));
  plan.keep = {"to_out"};
  EXPECT_EQ(fp8_plan_layers(model, plan), block_layers(1, {"to_q", "to_k", "to_v"}));
  plan.keep = {"to_q", "to_k", "to_v", "to_out"};
  EXPECT_TRUE(fp8_plan_layers(model, plan).empty());
  plan.bf16_edge_blocks = 2;  // every block is an edge block
  plan.keep.clear();
  EXPECT_TRUE(fp8_plan_layers(model, plan).empty());
}

TEST(Fp8Plan, RefusesToSplitAFusedLayerAndNamesItsParts) {
  TinyModel model;
  Fp8Plan plan;
  plan.blocks = "blocks";
  plan.keep = {"to_k"};
  try {
    (void)fp8_plan_layers(model, plan);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("FP8 plan: blocks.0.to_q and blocks.0.to_k are one fused "
                                         "layer: keep all of its parts or none"),
              std::string::npos)
        << e.what();
  }
}

TEST(Fp8Plan, RefusesAMissingStackAndNegativeEdges) {
  TinyModel model;
  Fp8Plan plan;
  plan.blocks = "layers";
  EXPECT_THROW((void)fp8_plan_layers(model, plan), ModelError);
  plan.blocks = "";
  EXPECT_THROW((void)fp8_plan_layers(model, plan), ModelError);
  plan.blocks = "blocks";
  plan.bf16_edge_blocks = -1;
  try {
    (void)fp8_plan_layers(model, plan);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "FP8 plan: bf16_edge_blocks must be >= 0 (got -1)");
  }
}

TEST(Fp8Plan, OnTheCpuAPlanOfNoLayersAppliesAndOneOfSomeIsRefused) {
  TinyModel model;  // CPU weights: FP8 GEMMs need a GPU
  Fp8Plan plan;
  plan.blocks = "blocks";
  plan.bf16_edge_blocks = 2;
  EXPECT_NO_THROW(apply_fp8_plan(model, plan));
  plan.bf16_edge_blocks = 0;
  try {
    apply_fp8_plan(model, plan);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.quantization fp8: " + fp8_unavailable_reason(torch::kCPU));
  }
}

}  // namespace
}  // namespace omnidp::models
