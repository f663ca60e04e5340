#include "omnidp/models/registry/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/models/model_table.hpp"

namespace omnidp::models {
namespace {

TEST(Registry, CreatesTheSyntheticModel) {
  Config config;
  config.model.name = "synthetic";
  const auto pipeline = create_pipeline(config, DeviceBinding{DeviceKind::cpu, 0, "cpu"});
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->model_name(), "synthetic");
  EXPECT_EQ(pipeline->device_name(), "cpu");
  const auto names = available_pipelines();
  EXPECT_NE(std::find(names.begin(), names.end(), "synthetic"), names.end());
}

TEST(Registry, UnknownModelIsAConfigError) {
  Config config;
  config.model.name = "no-such-model";
  try {
    (void)create_pipeline(config, DeviceBinding{});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "model.name");
    EXPECT_STREQ(e.what(), "model.name: model 'no-such-model' is not available in this build");
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
  }
}

}  // namespace
}  // namespace omnidp::models

namespace omnidp::models {
namespace {

// The model table's head counts, which parallel.sequence_parallel_size and
// tensor_parallel_size must divide: the released models' and tiny-wan's own, or a snapshot's
// transformer/config.json; and which models implement tensor parallelism.
TEST(Registry, ChoicesCarryTheHeadCountsOfTheModelTable) {
  register_builtin_models();
  const auto choices = model_table().choices();
  const auto heads = [&](const std::string& name, const ModelConfig& model) {
    const auto it = std::find_if(choices.begin(), choices.end(),
                                 [&](const ModelChoice& c) { return c.name == name; });
    EXPECT_NE(it, choices.end()) << name;
    EXPECT_EQ(it->tensor_parallel, name != "synthetic") << name;  // Wan and HV15 implement it
    return it->attention_heads ? it->attention_heads(model) : -1;
  };
  EXPECT_EQ(heads("tiny-wan", {}), 2);
  EXPECT_EQ(heads("wan2.2-ti2v-5b", {}), 24);
  EXPECT_EQ(heads("hunyuanvideo-1.5", {}), 16);
  EXPECT_EQ(heads("synthetic", {}), 0);  // not checked
  const auto dir = std::filesystem::temp_directory_path() / "omnidp-registry-heads";
  std::filesystem::create_directories(dir / "transformer");
  std::ofstream(dir / "transformer" / "config.json")
      << R"({"num_attention_heads": 4, "target_size": 480})";
  ModelConfig snapshot;
  snapshot.path = dir.string();
  EXPECT_EQ(heads("hunyuanvideo-1.5", snapshot), 4);
  snapshot.weights = WeightsSource::pretrained;
  EXPECT_EQ(heads("wan2.2-ti2v-5b", snapshot), 4);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::models
