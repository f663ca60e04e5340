#include "omnidp/models/text/qwen25vl.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("transformers-ref/qwen25vl_text");

TEST(Qwen25VLTextOptions, FromTheFixtureConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto o = Qwen25VLTextOptions::from_json(read_json(kCase / "config.json"), "qwen");
  EXPECT_EQ(o.hidden_size, 64);
  EXPECT_EQ(o.intermediate_size, 96);
  EXPECT_EQ(o.num_hidden_layers, 4);
  EXPECT_EQ(o.num_attention_heads, 4);
  EXPECT_EQ(o.num_key_value_heads, 2);
  EXPECT_EQ(o.head_dim, 16);
  EXPECT_EQ(o.vocab_size, 512);
  EXPECT_DOUBLE_EQ(o.rope_theta, 1e6);  // from rope_parameters
  EXPECT_DOUBLE_EQ(o.rms_norm_eps, 1e-6);
}

TEST(Qwen25VLTextOptions, OlderAndNestedLayouts) {
  const nlohmann::json flat = {{"vocab_size", 16},         {"hidden_size", 8},
                               {"intermediate_size", 12},  {"num_hidden_layers", 2},
                               {"num_attention_heads", 2}, {"num_key_value_heads", 1},
                               {"rope_theta", 5000.0}};
  const auto a = Qwen25VLTextOptions::from_json(flat, "x");
  EXPECT_DOUBLE_EQ(a.rope_theta, 5000.0);
  EXPECT_EQ(a.head_dim, 4);
  const auto b =
      Qwen25VLTextOptions::from_json({{"model_type", "qwen2_5_vl"}, {"text_config", flat}}, "x");
  EXPECT_EQ(b.num_key_value_heads, 1);
  auto sliding = flat;
  sliding["use_sliding_window"] = true;
  EXPECT_THROW((void)Qwen25VLTextOptions::from_json(sliding, "x"), WeightsError);
  auto bad_gqa = flat;
  bad_gqa["num_key_value_heads"] = 3;
  EXPECT_THROW((void)Qwen25VLTextOptions::from_json(bad_gqa, "x"), WeightsError);
}

TEST(Qwen25VLText, ParameterNamesAreTheCheckpointNames) {
  OMNIDP_REQUIRE_FIXTURES();
  Qwen25VLTextModel model(Qwen25VLTextOptions::from_json(read_json(kCase / "config.json"), "qwen"));
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, Checkpoint::open(kCase).names());
}

class Qwen25VLTextLoaded : public ::testing::Test {
 protected:
  void SetUp() override {
    OMNIDP_REQUIRE_FIXTURES();
    model_ = load_qwen25vl_text(kCase, torch::kFloat32, torch::kCPU);
  }
  Qwen25VLTextModel model_{nullptr};
  const torch::Tensor ids_ = torch::tensor({{485, 125, 493, 256, 238, 184, 387}}, torch::kLong);
};

TEST_F(Qwen25VLTextLoaded, HiddenStateIndicesFollowTheReferenceTuple) {
  c10::InferenceMode guard;
  const auto n = model_->options().num_hidden_layers;
  // Entry 0: the embeddings; -1 and n: the normed output (last_hidden_state).
  EXPECT_TRUE(torch::equal(model_->hidden_state(ids_, {}, 0), model_->embed_tokens->forward(ids_)));
  EXPECT_TRUE(torch::equal(model_->hidden_state(ids_, {}, -1), model_->forward(ids_)));
  EXPECT_TRUE(torch::equal(model_->hidden_state(ids_, {}, n), model_->forward(ids_)));
  // -3 is the output of layer n - 3 (two layers before the last), i.e. entry n - 2.
  EXPECT_TRUE(torch::equal(model_->hidden_state(ids_, {}, -3), model_->hidden_state(ids_, {}, n - 2)));
  // Entries differ from each other.
  EXPECT_FALSE(torch::allclose(model_->hidden_state(ids_, {}, 1), model_->hidden_state(ids_, {}, 2)));
  EXPECT_THROW((void)model_->hidden_state(ids_, {}, n + 1), ModelError);
  EXPECT_THROW((void)model_->hidden_state(ids_, {}, -(n + 2)), ModelError);
}

TEST_F(Qwen25VLTextLoaded, CausalPrefixAndRightPaddingDoNotChangeValidPositions) {
  c10::InferenceMode guard;
  const auto full = model_->hidden_state(ids_, {}, -3);
  // Causal: a prefix's outputs are the full sequence's first positions.
  const auto prefix = model_->hidden_state(ids_.narrow(1, 0, 4), {}, -3);
  EXPECT_TRUE(torch::allclose(prefix, full.narrow(1, 0, 4), 1e-5, 1e-6));
  const auto padded_ids = torch::cat({ids_, torch::zeros({1, 3}, torch::kLong)}, 1);
  const auto mask =
      torch::cat({torch::ones({1, 7}, torch::kLong), torch::zeros({1, 3}, torch::kLong)}, 1);
  const auto padded = model_->hidden_state(padded_ids, mask, -3);
  EXPECT_TRUE(torch::allclose(padded.narrow(1, 0, 7), full, 1e-5, 1e-6));
  EXPECT_TRUE(torch::isfinite(padded).all().item<bool>());
  // Left padding: no fully masked row, so no NaN anywhere.
  const auto left = model_->hidden_state(
      torch::cat({torch::zeros({1, 2}, torch::kLong), ids_}, 1),
      torch::cat({torch::zeros({1, 2}, torch::kLong), torch::ones({1, 7}, torch::kLong)}, 1), -1);
  EXPECT_TRUE(torch::isfinite(left).all().item<bool>());
}

TEST_F(Qwen25VLTextLoaded, PrefixedCheckpointsLoadAndSkipOtherParts) {
  const auto src = Checkpoint::open(kCase);
  for (const std::string prefix : {"model.", "model.language_model."}) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& name : src.names())
      tensors.emplace_back(prefix + name, src.tensor(name, torch::kBFloat16));
    tensors.emplace_back("lm_head.weight", torch::zeros({512, 64}, torch::kBFloat16));
    tensors.emplace_back("visual.patch_embed.proj.weight", torch::zeros({4, 4}, torch::kBFloat16));
    omnidp::test::TempDir dir;
    fs::copy_file(kCase / "config.json", dir.path() / "config.json");
    save_safetensors(dir.path() / "model.safetensors", tensors);
    const auto model = load_qwen25vl_text(dir.path(), torch::kFloat32, torch::kCPU);
    c10::InferenceMode guard;
    EXPECT_TRUE(torch::equal(model->forward(ids_), model_->forward(ids_))) << prefix;
  }
}

TEST(Qwen25VLText, RandomWeightsAreSeeded) {
  Qwen25VLTextOptions o{.vocab_size = 32,
                        .hidden_size = 16,
                        .intermediate_size = 24,
                        .num_hidden_layers = 2,
                        .num_attention_heads = 4,
                        .num_key_value_heads = 2,
                        .head_dim = 4};
  const auto a = random_qwen25vl_text(o, 3, torch::kFloat32, torch::kCPU);
  const auto b = random_qwen25vl_text(o, 3, torch::kFloat32, torch::kCPU);
  c10::InferenceMode guard;
  const auto ids = torch::tensor({{1, 2, 3}}, torch::kLong);
  EXPECT_TRUE(torch::equal(a->forward(ids), b->forward(ids)));
  EXPECT_TRUE(torch::isfinite(a->forward(ids)).all().item<bool>());
}

}  // namespace
}  // namespace omnidp::models::text
