#include "omnidp/models/text/linear.hpp"

#include <gtest/gtest.h>

namespace omnidp::models::text {
namespace {

TEST(TextLinear, ParametersAreAllocatedInTheRequestedDtypeWithTorchNames) {
  Linear with_bias(3, 2, true, ParamSpec{torch::kBFloat16, torch::kCPU});
  Linear no_bias(3, 2, false, ParamSpec{});
  std::vector<std::string> names;
  for (const auto& p : with_bias->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(with_bias->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(with_bias->weight.sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(no_bias->named_parameters().size(), 1U);
  EXPECT_FALSE(no_bias->bias.defined());
}

TEST(TextLinear, ForwardIsXWTransposedPlusBias) {
  Linear lin(2, 2, true, ParamSpec{});
  lin->weight.set_data(torch::tensor({{1.0F, 2.0F}, {3.0F, 4.0F}}));
  lin->bias.set_data(torch::tensor({0.5F, -1.0F}));
  const auto y = lin->forward(torch::tensor({{1.0F, 1.0F}, {2.0F, 0.0F}}));
  EXPECT_TRUE(torch::equal(y, torch::tensor({{3.5F, 6.0F}, {2.5F, 5.0F}})));
}

TEST(TextEmbedding, RowsByIdAnyIntegerDtype) {
  Embedding emb(4, 2, ParamSpec{});
  emb->weight.set_data(torch::arange(8, torch::kFloat32).view({4, 2}));
  const auto y = emb->forward(torch::tensor({{3, 0}}, torch::kInt32));
  EXPECT_TRUE(torch::equal(y, torch::tensor({{{6.0F, 7.0F}, {0.0F, 1.0F}}})));
}

TEST(TextLinear, FreezeTurnsGradientsOff) {
  Linear lin(2, 2, true, ParamSpec{});
  for (const auto& p : lin->parameters()) p.set_requires_grad(true);
  freeze(*lin);
  for (const auto& p : lin->parameters()) EXPECT_FALSE(p.requires_grad());
}

}  // namespace
}  // namespace omnidp::models::text
