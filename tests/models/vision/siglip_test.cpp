#include "omnidp/models/vision/siglip.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::vision {
namespace {
namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("diffusers-ref/siglip_vision");

using omnidp::test::TempDir;

nlohmann::json fixture_config() { return read_json(kCase / "config.json"); }

double max_rel_error(const torch::Tensor& ours, const torch::Tensor& ref) {
  const auto a = ours.to(torch::kCPU, torch::kFloat64);
  const auto b = ref.to(torch::kCPU, torch::kFloat64);
  return (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
}

// Every checkpoint tensor under `prefix`, split over two shards with an index.
void write_sharded(const fs::path& dir, const std::string& prefix,
                   const std::vector<std::string>& drop = {},
                   const std::vector<std::pair<std::string, torch::Tensor>>& extra = {}) {
  const SafetensorsFile src(kCase / "model.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> a;
  std::vector<std::pair<std::string, torch::Tensor>> b;
  nlohmann::json map = nlohmann::json::object();
  std::size_t i = 0;
  for (const auto& name : src.names()) {
    if (std::find(drop.begin(), drop.end(), name) != drop.end()) continue;
    auto& shard = (i++ % 2 == 0) ? a : b;
    shard.emplace_back(prefix + name, src.tensor(name, torch::kBFloat16));
    map[prefix + name] =
        (&shard == &a) ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  for (const auto& [name, t] : extra) {
    a.emplace_back(name, t);
    map[name] = "model-00001-of-00002.safetensors";
  }
  save_safetensors(dir / "model-00001-of-00002.safetensors", a);
  save_safetensors(dir / "model-00002-of-00002.safetensors", b);
  std::ofstream(dir / "model.safetensors.index.json")
      << nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump();
}

void write_config(const fs::path& dir, const nlohmann::json& config) {
  std::ofstream(dir / "config.json") << config.dump();
}

TEST(SiglipVisionOptions, FromTheFixtureConfig) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto o = SiglipVisionOptions::from_json(fixture_config(), "config.json");
  EXPECT_EQ(o.hidden_size, 32);
  EXPECT_EQ(o.intermediate_size, 64);
  EXPECT_EQ(o.num_hidden_layers, 2);
  EXPECT_EQ(o.num_attention_heads, 2);
  EXPECT_EQ(o.num_channels, 3);
  EXPECT_EQ(o.image_size, 56);
  EXPECT_EQ(o.patch_size, 14);
  EXPECT_EQ(o.num_patches(), 16);
  EXPECT_EQ(o.head_dim(), 16);
  EXPECT_DOUBLE_EQ(o.layer_norm_eps, 1e-6);
  EXPECT_EQ(o.hidden_act, "gelu_pytorch_tanh");
  EXPECT_TRUE(o.use_head);
}

TEST(SiglipVisionOptions, TheReleasedSo400mShapes) {
  const nlohmann::json vision = {{"hidden_size", 1152},
                                 {"intermediate_size", 4304},
                                 {"num_hidden_layers", 27},
                                 {"num_attention_heads", 16},
                                 {"image_size", 384},
                                 {"patch_size", 14},
                                 {"model_type", "siglip_vision_model"}};
  // A SiglipConfig with the vision tower nested.
  const auto o =
      SiglipVisionOptions::from_json({{"model_type", "siglip"}, {"vision_config", vision}}, "x");
  EXPECT_EQ(o.num_patches(), 729);
  EXPECT_EQ(o.head_dim(), 72);
}

std::string error_of(const nlohmann::json& config) {
  try {
    (void)SiglipVisionOptions::from_json(config, "/snap/image_encoder/config.json");
  } catch (const WeightsError& e) {
    return e.what();
  }
  return "no error";
}

// The fixture's config with `key` set to `value`: its error says `fragment`.
void expect_error_with(const std::string& key, const nlohmann::json& value,
                       const std::string& fragment) {
  auto c = fixture_config();
  c[key] = value;
  const std::string error = error_of(c);
  EXPECT_NE(error.find(fragment), std::string::npos) << key << ": " << error;
}

TEST(SiglipVisionOptions, BadValuesNameTheFileAndTheKey) {
  OMNIDP_REQUIRE_FIXTURES();
  auto c = fixture_config();
  c.erase("patch_size");
  EXPECT_NE(error_of(c).find("/snap/image_encoder/config.json"), std::string::npos) << error_of(c);
  EXPECT_NE(error_of(c).find("missing key 'patch_size'"), std::string::npos) << error_of(c);
  expect_error_with("hidden_act", "relu", "key 'hidden_act' is 'relu'");
  expect_error_with("hidden_size", "32", "key 'hidden_size' must be an integer");
  expect_error_with("num_attention_heads", 3,
                    "key 'hidden_size' (32) must be a multiple of num_attention_heads (3)");
  expect_error_with("model_type", "siglip2_vision_model",
                    "key 'model_type' is 'siglip2_vision_model'");
  expect_error_with("vision_use_head", 1, "key 'vision_use_head' must be true or false");
  expect_error_with("image_size", 0, "key 'image_size' must be positive");
}

TEST(SiglipVision, ParameterNamesAreTheCheckpointNames) {
  OMNIDP_REQUIRE_FIXTURES();
  SiglipVisionModel model(SiglipVisionOptions::from_json(fixture_config(), "x"));
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, Checkpoint::open(kCase).names());
}

TEST(SiglipVision, LastHiddenStateMatchesTransformers) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto model = load_siglip_vision(kCase, torch::kFloat32, torch::kCPU);
  const SafetensorsFile io(kCase / "io.safetensors");
  c10::InferenceMode guard;
  const auto out = model->forward(io.tensor("pixel_values"));
  const auto ref = io.tensor("last_hidden_state");
  ASSERT_EQ(out.sizes(), ref.sizes());
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_LE(max_rel_error(out, ref), 1e-4);
  // Not a constant: a zero image gives other tokens.
  EXPECT_GT(max_rel_error(model->forward(torch::zeros_like(io.tensor("pixel_values"))), ref), 1e-2);
}

TEST(SiglipVision, Bf16RunsInBf16CloseToTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto model = load_siglip_vision(kCase, torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(model->dtype(), torch::kBFloat16);
  const SafetensorsFile io(kCase / "io.safetensors");
  c10::InferenceMode guard;
  const auto out = model->forward(io.tensor("pixel_values"));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_LE(max_rel_error(out, io.tensor("last_hidden_state")), 8e-2);
}

TEST(SiglipVision, PrefixedShardedCheckpointLoadsTheSameWeights) {
  OMNIDP_REQUIRE_FIXTURES();
  TempDir dir;
  write_config(dir.path(), fixture_config());
  write_sharded(dir.path(), "vision_model.");
  const auto prefixed = load_siglip_vision(dir.path(), torch::kFloat32, torch::kCPU);
  const auto bare = load_siglip_vision(kCase, torch::kFloat32, torch::kCPU);
  const SafetensorsFile io(kCase / "io.safetensors");
  c10::InferenceMode guard;
  EXPECT_TRUE(torch::equal(prefixed->forward(io.tensor("pixel_values")),
                           bare->forward(io.tensor("pixel_values"))));
  EXPECT_TRUE(torch::equal(prefixed->head->probe, bare->head->probe));
}

std::string load_error(const fs::path& dir) {
  try {
    (void)load_siglip_vision(dir, torch::kFloat32, torch::kCPU);
  } catch (const WeightsError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SiglipVision, StrictLoading) {
  OMNIDP_REQUIRE_FIXTURES();
  {  // an unknown tensor (e.g. a whole SiglipModel's text tower) is not skipped
    TempDir dir;
    write_config(dir.path(), fixture_config());
    write_sharded(dir.path(), "vision_model.", {},
                  {{"text_model.final_layer_norm.weight", torch::ones({32})}});
    EXPECT_NE(load_error(dir.path()).find("text_model.final_layer_norm.weight"), std::string::npos)
        << load_error(dir.path());
  }
  {  // the config promises a head that the checkpoint lacks
    TempDir dir;
    write_config(dir.path(), fixture_config());
    write_sharded(dir.path(), "", {"head.probe"});
    EXPECT_NE(load_error(dir.path()).find("head.probe"), std::string::npos) << load_error(dir.path());
  }
  {  // vision_use_head false: the head's tensors are unexpected
    TempDir dir;
    auto config = fixture_config();
    config["vision_use_head"] = false;
    write_config(dir.path(), config);
    write_sharded(dir.path(), "");
    EXPECT_NE(load_error(dir.path()).find("head.attention.in_proj_weight"), std::string::npos)
        << load_error(dir.path());
  }
  {  // a wrong shape
    TempDir dir;
    auto config = fixture_config();
    config["intermediate_size"] = 48;
    write_config(dir.path(), config);
    write_sharded(dir.path(), "");
    EXPECT_NE(load_error(dir.path()).find("mlp.fc1.weight"), std::string::npos)
        << load_error(dir.path());
  }
}

TEST(SiglipVision, PoolingHeadIsTorchMultiheadAttentionThenMlp) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto model = load_siglip_vision(kCase, torch::kFloat32, torch::kCPU);
  const SafetensorsFile io(kCase / "io.safetensors");
  c10::InferenceMode guard;
  const auto hidden = io.tensor("last_hidden_state");
  const auto pooled = model->pool(hidden);
  ASSERT_EQ(pooled.sizes(), (std::vector<std::int64_t>{1, 32}));
  // The reference: libtorch's own multi_head_attention_forward ([L, B, D] layout).
  const auto& head = *model->head;
  namespace F = torch::nn::functional;
  const auto probe = head.probe.expand({1, 1, 32});
  const auto attended = std::get<0>(F::multi_head_attention_forward(
      probe.transpose(0, 1), hidden.transpose(0, 1), hidden.transpose(0, 1),
      F::MultiheadAttentionForwardFuncOptions(
          32, 2, head.attention->in_proj_weight, head.attention->in_proj_bias, {}, {}, false, 0.0,
          head.attention->out_proj->weight, head.attention->out_proj->bias)
          .training(false)
          .need_weights(false)));
  const auto h = attended.transpose(0, 1);
  const auto ln = torch::layer_norm(h, {32}, head.layernorm->weight, head.layernorm->bias, 1e-6);
  const auto mlp = torch::linear(
      torch::gelu(torch::linear(ln, head.mlp->fc1->weight, head.mlp->fc1->bias), "tanh"),
      head.mlp->fc2->weight, head.mlp->fc2->bias);
  EXPECT_LE(max_rel_error(pooled, (h + mlp).select(1, 0)), 1e-6);
}

TEST(SiglipVision, WrongPixelShapeIsAModelError) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto model = random_siglip_vision(SiglipVisionOptions::from_json(fixture_config(), "x"), 7,
                                          torch::kFloat32, torch::kCPU);
  c10::InferenceMode guard;
  EXPECT_THROW((void)model->forward(torch::zeros({1, 3, 42, 56})), ModelError);
  EXPECT_THROW((void)model->forward(torch::zeros({3, 56, 56})), ModelError);
  EXPECT_EQ(model->forward(torch::zeros({2, 3, 56, 56})).sizes(),
            (std::vector<std::int64_t>{2, 16, 32}));
}

}  // namespace
}  // namespace omnidp::models::vision
