#include "omnidp/models/hv15/configs.hpp"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {

const fs::path kCase = omnidp::test::fixture("diffusers-ref/hv15_transformer");

TEST(Hv15Configs, OptionsFromJsonValidate) {
  OMNIDP_REQUIRE_FIXTURES();
  auto cfg = omnidp::models::read_json(kCase / "config.json");
  const auto o = hv::TransformerOptions::from_json(cfg, "x");
  EXPECT_EQ(o.inner_dim(), 128);
  EXPECT_EQ(o.rope_axes_dim, (std::array<std::int64_t, 3>{16, 24, 24}));
  EXPECT_EQ(o.text_embed_dim, 48);
  cfg["rope_axes_dim"] = {16, 24, 20};
  EXPECT_THROW((void)hv::TransformerOptions::from_json(cfg, "x"), omnidp::WeightsError);
  cfg = omnidp::models::read_json(kCase / "config.json");
  cfg["qk_norm"] = "layer_norm";
  EXPECT_THROW((void)hv::TransformerOptions::from_json(cfg, "x"), omnidp::WeightsError);
  // The defaults are the released model (docs/models.md).
  const hv::TransformerOptions real;
  EXPECT_EQ(real.num_layers, 54);
  EXPECT_EQ(real.inner_dim(), 2048);
  EXPECT_EQ(real.in_channels, 65);
  EXPECT_EQ(real.rope_axes_dim, (std::array<std::int64_t, 3>{16, 56, 56}));
}

}  // namespace
