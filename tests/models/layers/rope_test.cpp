// The shared 3-D RoPE (layers/rope.hpp) against hand computations: HunyuanVideo-1.5's layout
// (float32, axes as given) and Wan's (float64 tables read at another split), the grid limit and
// the cache.
#include "omnidp/models/layers/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/fused_switch.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

TEST(Rope3d, EachPairTurnsByItsAxisPositionTimesItsFrequency) {
  // axes (2, 2, 4), theta 256 over a 2 x 3 x 4 grid: pairs f, h, w at frequency 1, then w at
  // 256^(-2/4) = 1/16.
  Rope3dOptions o;
  o.axes_dim = {2, 2, 4};
  o.theta = 256.0;
  for (const auto tables : {RopeTables::device_float32, RopeTables::cpu_float64}) {
    o.tables = tables;
    const auto [cos, sin] = rope_3d_tables(o, 2, 3, 4, torch::kCPU);
    ASSERT_EQ(cos.sizes(), (std::vector<std::int64_t>{24, 4}));
    ASSERT_EQ(sin.scalar_type(), torch::kFloat32);
    for (int f = 0; f < 2; ++f) {
      for (int h = 0; h < 3; ++h) {
        for (int w = 0; w < 4; ++w) {
          const int token = (f * 3 + h) * 4 + w;
          const double angles[4] = {1.0 * f, 1.0 * h, 1.0 * w, w / 16.0};
          for (int j = 0; j < 4; ++j) {
            EXPECT_NEAR(cos[token][j].item<double>(), std::cos(angles[j]), 1e-6) << token << " " << j;
            EXPECT_NEAR(sin[token][j].item<double>(), std::sin(angles[j]), 1e-6) << token << " " << j;
          }
        }
      }
    }
  }
}

TEST(Rope3d, ReadsTheTablesAtTheSplitItIsGiven) {
  // Wan's head_dim 64: tables t = 24, h = w = 20 columns, read as [22, 21, 21]. Pair 21 then
  // takes cos from column 42 (h table, frequency 9, by row) and sin from column 43 (h table,
  // frequency 9, by column); pair 11 (columns 22, 23: the t table's frequency 11) goes by row.
  Rope3dOptions o;
  o.axes_dim = {24, 20, 20};
  o.split_dim = {22, 21, 21};
  o.tables = RopeTables::cpu_float64;
  const auto [cos, sin] = rope_3d_tables(o, 3, 4, 6, torch::kCPU);
  const std::int64_t f = 2, h = 3, w = 5;
  const std::int64_t token = (f * 4 + h) * 6 + w;
  const double freq9 = std::pow(10000.0, -18.0 / 20.0);
  EXPECT_NEAR(cos[token][21].item<double>(), std::cos(static_cast<double>(h) * freq9), 1e-6);
  EXPECT_NEAR(sin[token][21].item<double>(), std::sin(static_cast<double>(w) * freq9), 1e-6);
  const double freq11 = std::pow(10000.0, -22.0 / 24.0);
  EXPECT_NEAR(cos[token][11].item<double>(), std::cos(static_cast<double>(h) * freq11), 1e-6);
  EXPECT_NEAR(sin[token][11].item<double>(), std::sin(static_cast<double>(h) * freq11), 1e-6);
  EXPECT_NEAR(cos[token][0].item<double>(), std::cos(static_cast<double>(f)), 1e-6);
  // Where the splits agree, reading at the split is reading the tables.
  o.axes_dim = {44, 42, 42};
  o.split_dim = {44, 42, 42};
  const auto at_split = rope_3d_tables(o, 3, 4, 6, torch::kCPU);
  o.split_dim = {};
  const auto plain = rope_3d_tables(o, 3, 4, 6, torch::kCPU);
  EXPECT_TRUE(torch::equal(at_split.first, plain.first));
  EXPECT_TRUE(torch::equal(at_split.second, plain.second));
}

TEST(Rope3d, RefusesAGridPastItsPositions) {
  Rope3dOptions o;
  o.axes_dim = {2, 2, 4};
  o.max_positions = 4;
  EXPECT_NO_THROW((void)rope_3d_tables(o, 4, 4, 4, torch::kCPU));
  try {
    (void)rope_3d_tables(o, 2, 5, 3, torch::kCPU);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("latent grid 2x5x3 exceeds rope_max_seq_len 4"),
              std::string::npos)
        << e.what();
  }
}

TEST(Rope3d, CachesTheRotationsOfTheLastGrid) {
  Rope3dOptions o;
  o.axes_dim = {2, 2, 4};
  Rope3d rope(o);
  const auto first = rope.freqs(2, 3, 4, torch::kCPU);
  ASSERT_EQ(first.sizes(), (std::vector<std::int64_t>{24, 1, 4}));
  EXPECT_EQ(first.scalar_type(), torch::kComplexFloat);
  const auto [cos, sin] = rope_3d_tables(o, 2, 3, 4, torch::kCPU);
  EXPECT_TRUE(torch::equal(torch::view_as_real(first.squeeze(1)), torch::stack({cos, sin}, -1)));
  EXPECT_TRUE(rope.freqs(2, 3, 4, torch::kCPU).is_same(first));
  EXPECT_FALSE(rope.freqs(2, 3, 5, torch::kCPU).is_same(first));
  rope.clear();
  EXPECT_TRUE(torch::equal(rope.freqs(2, 3, 4, torch::kCPU), first));
}

TEST(ApplyRope, IsTheComplexRotationOnBothPaths) {
  const auto x = torch::tensor({1.0F, 2.0F, 3.0F, 4.0F}).view({1, 1, 1, 4});
  const auto freqs =
      torch::complex(torch::tensor({0.0F, 0.5F}), torch::tensor({1.0F, -0.5F})).view({1, 1, 2});
  const auto expect = torch::tensor(
      {1 * 0.0F - 2 * 1.0F, 1 * 1.0F + 2 * 0.0F, 3 * 0.5F - 4 * -0.5F, 3 * -0.5F + 4 * 0.5F});
  EXPECT_LT((apply_rope(x, freqs).flatten() - expect).abs().max().item<double>(), 1e-6);
  const testing::FusedSwitch off(false);
  EXPECT_LT((apply_rope(x, freqs).flatten() - expect).abs().max().item<double>(), 1e-6);
}

// HunyuanVideo-1.5 rotated with its own real expression where the fused path was off (the
// cos/sin tables repeated per pair, x * cos + rotate_half(x) * sin); the one RoPE gives the
// same bits for float32 and bf16 inputs.
TEST(ApplyRope, EqualsTheRepeatedTablesExpressionBitForBit) {
  const testing::FusedSwitch off(false);
  torch::manual_seed(3);
  const std::int64_t s = 6, pairs = 4;
  const auto angles = torch::randn({s, 1, pairs});
  const auto freqs = torch::polar(torch::ones_like(angles), angles);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto x = torch::randn({2, s, 3, 2 * pairs}).to(dtype);
    const auto c =
        torch::view_as_real(freqs).select(-1, 0).repeat_interleave(2, -1).view({1, s, 1, -1});
    const auto sn =
        torch::view_as_real(freqs).select(-1, 1).repeat_interleave(2, -1).view({1, s, 1, -1});
    const auto xp = x.reshape({2, s, 3, pairs, 2});
    const auto rotated = torch::stack({-xp.select(-1, 1), xp.select(-1, 0)}, -1).flatten(3);
    const auto want = (x.to(torch::kFloat32) * c + rotated.to(torch::kFloat32) * sn).to(dtype);
    EXPECT_TRUE(torch::equal(apply_rope(x, freqs.view({1, s, 1, pairs})), want)) << dtype;
  }
}

TEST(ApplyRopeHeads, RotatesEachHeadAndPassesThroughWithoutFreqs) {
  torch::manual_seed(5);
  const auto x = torch::randn({2, 4, 3, 8});
  const auto angles = torch::randn({4, 1, 4});
  const auto freqs = torch::polar(torch::ones_like(angles), angles);
  const auto flat = x.flatten(2);
  const auto out = apply_rope_heads(flat, freqs, 8);
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_TRUE(torch::equal(out, apply_rope(x, freqs).flatten(2)));
  const auto strided = torch::randn({2, 4, 48}).narrow(2, 24, 24);
  const auto same = apply_rope_heads(strided, torch::Tensor(), 8);
  EXPECT_TRUE(same.is_contiguous());
  EXPECT_TRUE(torch::equal(same, strided));
}

}  // namespace
}  // namespace omnidp::models
