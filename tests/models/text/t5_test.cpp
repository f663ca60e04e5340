#include "omnidp/models/text/t5.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("transformers-ref");

std::vector<std::string> param_names(torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(T5Options, FromTheFixtureConfigs) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto umt5 = T5Options::from_json(read_json(kRef / "umt5_encoder" / "config.json"), "umt5");
  EXPECT_EQ(umt5.d_model, 64);
  EXPECT_EQ(umt5.d_kv, 16);
  EXPECT_EQ(umt5.d_ff, 96);
  EXPECT_EQ(umt5.num_heads, 4);
  EXPECT_EQ(umt5.num_layers, 2);
  EXPECT_EQ(umt5.vocab_size, 256);
  EXPECT_TRUE(umt5.is_gated_act);
  EXPECT_EQ(umt5.dense_act_fn, "gelu_new");
  EXPECT_TRUE(umt5.bias_in_every_layer);
  const auto byt5 = T5Options::from_json(read_json(kRef / "byt5_encoder" / "config.json"), "byt5");
  EXPECT_FALSE(byt5.bias_in_every_layer);
  EXPECT_EQ(byt5.vocab_size, 384);
}

TEST(T5Options, FeedForwardProjResolvesLikeT5Config) {
  const auto relu = T5Options::from_json(
      {{"vocab_size", 8}, {"d_model", 4}, {"d_kv", 2}, {"d_ff", 8}, {"num_layers", 1}, {"num_heads", 2}},
      "x");
  EXPECT_FALSE(relu.is_gated_act);
  EXPECT_EQ(relu.dense_act_fn, "relu");
  const auto gated = T5Options::from_json({{"vocab_size", 8},
                                           {"d_model", 4},
                                           {"d_kv", 2},
                                           {"d_ff", 8},
                                           {"num_layers", 1},
                                           {"num_heads", 2},
                                           {"feed_forward_proj", "gated-gelu"}},
                                          "x");
  EXPECT_TRUE(gated.is_gated_act);
  EXPECT_EQ(gated.dense_act_fn, "gelu_new");
  EXPECT_THROW((void)T5Options::from_json({{"d_model", 4}}, "x"), WeightsError);
  EXPECT_THROW((void)T5Options::from_json({{"vocab_size", 8},
                                           {"d_model", 4},
                                           {"d_kv", 2},
                                           {"d_ff", 8},
                                           {"num_layers", 1},
                                           {"num_heads", 2},
                                           {"feed_forward_proj", "gated-tanhx"}},
                                          "x"),
               WeightsError);
}

// Hand-computed buckets for 32 buckets, max distance 128: 16 per direction, 8 exact, then
// 8 + floor(log(d / 8) / log(16) * 8) capped at 15; keys after the query add 16.
TEST(T5, RelativePositionBuckets) {
  const auto rel =
      torch::tensor({0, -1, -7, 1, 7, -8, -17, -20, -33, -127, -128, -1000, 1000}, torch::kLong);
  const auto buckets = relative_position_bucket(rel, 32, 128);
  const auto expected = torch::tensor({0, 1, 7, 17, 23, 8, 10, 10, 12, 15, 15, 15, 31}, torch::kLong);
  EXPECT_TRUE(torch::equal(buckets, expected)) << buckets;
}

TEST(T5, LayerNormIsRmsWithoutMean) {
  RMSNorm norm(2, 0.0, RmsNormStyle::t5);
  norm->weight.set_data(torch::tensor({2.0F, 1.0F}));
  const auto y = norm->forward(torch::tensor({{3.0F, 4.0F}}));  // rms = sqrt(12.5)
  const float r = std::sqrt(12.5F);
  EXPECT_TRUE(torch::allclose(y, torch::tensor({{6.0F / r, 4.0F / r}})));
}

TEST(T5, ParameterNamesAreTheCheckpointNames) {
  OMNIDP_REQUIRE_FIXTURES();
  for (const char* name : {"umt5_encoder", "byt5_encoder"}) {
    const auto dir = kRef / name;
    T5EncoderModel model(T5Options::from_json(read_json(dir / "config.json"), name));
    EXPECT_EQ(param_names(*model), Checkpoint::open(dir).names()) << name;
  }
}

TEST(T5, PaddingDoesNotChangeValidPositions) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto model = load_t5_encoder(kRef / "umt5_encoder", torch::kFloat32, torch::kCPU);
  c10::InferenceMode guard;
  const auto ids = torch::tensor({{5, 17, 200, 33, 1}}, torch::kLong);
  const auto alone = model->forward(ids);
  const auto padded_ids = torch::cat({ids, torch::zeros({1, 3}, torch::kLong)}, 1);
  const auto mask = torch::tensor({{1, 1, 1, 1, 1, 0, 0, 0}}, torch::kLong);
  const auto padded = model->forward(padded_ids, mask);
  // Equal up to float32 rounding: the padded matmuls have other shapes, so other BLAS kernels
  // and summation orders (3.1e-6 on values up to 3.0 measured with Debian's OpenBLAS).
  const double scale = std::max(1.0, alone.abs().max().item<double>());
  EXPECT_LE((padded.narrow(1, 0, 5) - alone).abs().max().item<double>(), 1e-5 * scale);
  // Without the mask the padding is attended to and the outputs change.
  EXPECT_GT((model->forward(padded_ids).narrow(1, 0, 5) - alone).abs().max().item<double>(),
            1e-3 * scale);
}

TEST(T5, UmT5UsesEveryBlocksTableAndT5OnlyTheFirst) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto umt5 = load_t5_encoder(kRef / "umt5_encoder", torch::kFloat32, torch::kCPU);
  EXPECT_TRUE(umt5->encoder->block->ptr<T5BlockImpl>(1)
                  ->self_attention->SelfAttention->has_relative_attention_bias());
  const auto byt5 = load_t5_encoder(kRef / "byt5_encoder", torch::kFloat32, torch::kCPU);
  EXPECT_FALSE(byt5->encoder->block->ptr<T5BlockImpl>(1)
                   ->self_attention->SelfAttention->has_relative_attention_bias());
  // UMT5: zeroing block 1's table changes the output.
  c10::InferenceMode guard;
  const auto ids = torch::tensor({{5, 17, 200, 33, 1}}, torch::kLong);
  const auto before = umt5->forward(ids);
  umt5->encoder->block->ptr<T5BlockImpl>(1)
      ->self_attention->SelfAttention->relative_attention_bias->weight.zero_();
  EXPECT_FALSE(torch::allclose(umt5->forward(ids), before));
}

TEST(T5, TiedEmbeddingNamesLoad) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto src = Checkpoint::open(kRef / "byt5_encoder");
  std::vector<std::pair<std::string, torch::Tensor>> renamed;
  std::vector<std::pair<std::string, torch::Tensor>> both;
  for (const auto& name : src.names()) {
    const auto t = src.tensor(name, torch::kBFloat16);
    renamed.emplace_back(name == "shared.weight" ? "encoder.embed_tokens.weight" : name, t);
    both.emplace_back(name, t);
    if (name == "shared.weight") both.emplace_back("encoder.embed_tokens.weight", t);
  }
  const auto reference = load_t5_encoder(kRef / "byt5_encoder", torch::kFloat32, torch::kCPU);
  c10::InferenceMode guard;
  const auto ids = torch::tensor({{70, 80, 90, 1}}, torch::kLong);
  const auto expected = reference->forward(ids);
  for (const auto* tensors : {&renamed, &both}) {
    omnidp::test::TempDir dir;
    fs::copy_file(kRef / "byt5_encoder" / "config.json", dir.path() / "config.json");
    save_safetensors(dir.path() / "model.safetensors", *tensors);
    const auto model = load_t5_encoder(dir.path(), torch::kFloat32, torch::kCPU);
    EXPECT_TRUE(torch::equal(model->forward(ids), expected));
  }
}

TEST(T5, MissingTensorsAreNamed) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto src = Checkpoint::open(kRef / "umt5_encoder");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : src.names()) {
    if (name != "encoder.block.1.layer.1.DenseReluDense.wo.weight")
      tensors.emplace_back(name, src.tensor(name));
  }
  omnidp::test::TempDir dir;
  fs::copy_file(kRef / "umt5_encoder" / "config.json", dir.path() / "config.json");
  save_safetensors(dir.path() / "model.safetensors", tensors);
  try {
    (void)load_t5_encoder(dir.path(), torch::kFloat32, torch::kCPU);
    FAIL() << "expected WeightsError";
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder.block.1.layer.1.DenseReluDense.wo.weight"),
              std::string::npos)
        << e.what();
  }
}

TEST(T5, RandomWeightsAreSeededAndBf16Exact) {
  OMNIDP_REQUIRE_FIXTURES();
  T5Options o = T5Options::from_json(read_json(kRef / "byt5_encoder" / "config.json"), "byt5");
  const auto a = random_t5_encoder(o, 11, torch::kFloat32, torch::kCPU);
  const auto b = random_t5_encoder(o, 11, torch::kFloat32, torch::kCPU);
  const auto c = random_t5_encoder(o, 12, torch::kFloat32, torch::kCPU);
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  const auto pc = c->named_parameters();
  bool any_differs = false;
  for (const auto& p : pa) {
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), p.value().to(torch::kBFloat16).to(torch::kFloat32)))
        << p.key();
    EXPECT_FALSE(p.value().requires_grad());
    any_differs = any_differs || !torch::equal(p.value(), pc[p.key()]);
  }
  EXPECT_TRUE(any_differs);
}

}  // namespace
}  // namespace omnidp::models::text
