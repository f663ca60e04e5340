// A model's declared float32 modules (layers/placement.hpp): which parameters a name list keeps,
// and the conversion that keeps them while the rest take the model's dtype.
#include "omnidp/models/layers/placement.hpp"

#include <gtest/gtest.h>

namespace omnidp::models {
namespace {

TEST(Float32Modules, MatchWholeComponentsOfTheDottedName) {
  const Float32Modules keep{"time_embedder", "scale_shift_table", "norm2"};
  EXPECT_TRUE(kept_in_float32("condition_embedder.time_embedder.linear_1.weight", keep));
  EXPECT_TRUE(kept_in_float32("scale_shift_table", keep));
  EXPECT_TRUE(kept_in_float32("blocks.3.scale_shift_table", keep));
  EXPECT_TRUE(kept_in_float32("blocks.0.norm2.bias", keep));
  EXPECT_FALSE(kept_in_float32("blocks.0.norm22.bias", keep));  // a component, not a substring
  EXPECT_FALSE(kept_in_float32("blocks.0.attn2.norm_q.weight", keep));
  EXPECT_FALSE(kept_in_float32("time_embedder_r.weight", keep));
  EXPECT_FALSE(kept_in_float32("proj_out.weight", {}));
}

TEST(Float32Modules, ConversionKeepsThemAndTheParametersHandles) {
  torch::nn::Sequential model(torch::nn::Linear(2, 3),
                              torch::nn::LayerNorm(torch::nn::LayerNormOptions({3})));
  auto weight = model->named_parameters()["0.weight"];
  to_dtype_keeping_float32(*model, torch::kCPU, torch::kBFloat16, {"1"});
  for (const auto& item : model->named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(),
              item.key().rfind("1.", 0) == 0 ? torch::kFloat32 : torch::kBFloat16)
        << item.key();
  }
  EXPECT_EQ(weight.scalar_type(), torch::kBFloat16);  // the same parameter, converted in place
}

}  // namespace
}  // namespace omnidp::models
