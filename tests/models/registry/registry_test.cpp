#include "omnidp/models/registry/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "omnidp/common/error.hpp"

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
