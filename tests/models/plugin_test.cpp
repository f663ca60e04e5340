#include "omnidp/models/plugin.hpp"

#include <gtest/gtest.h>

#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"

namespace omnidp::models {
namespace {

std::string load_error(const std::string& path) {
  try {
    load_model_plugin(path);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "model.plugin");
    return e.what();
  }
  return "";
}

TEST(ModelPlugin, RegistersItsModelsIntoTheProcessTable) {
  ASSERT_EQ(model_table().find("test-plugin-model"), nullptr);
  load_model_plugin(OMNIDP_TEST_GOOD_PLUGIN);
  load_model_plugin(OMNIDP_TEST_GOOD_PLUGIN);  // a second load is a no-op, not a duplicate
  const auto* r = model_table().find("test-plugin-model");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->origin, std::string("plugin ") + OMNIDP_TEST_GOOD_PLUGIN);

  // Its facts and cost function reach describe_model and the cost prior; its factory builds.
  ModelConfig m;
  m.name = "test-plugin-model";
  const ModelInfo info = describe_model(m);
  EXPECT_EQ(info.num_layers, 3);
  EXPECT_EQ(prior_coefficients(info).a, 1.0);
  EXPECT_EQ(prior_coefficients(info).b, 3.0);
  EXPECT_EQ(weights_identity(m), "test-plugin-model");
  Config config;
  config.model = m;
  config.input.manifest = "m.jsonl";
  validate_config(config);  // its name is valid now
  const auto pipeline = r->create(config, DeviceBinding{});
  Request req;
  req.num_frames = 1;
  req.height = 2;
  req.width = 2;
  req.seed = 260;
  const Video v = pipeline->generate(req, GenerateContext{});
  EXPECT_EQ(v.data, std::vector<std::uint8_t>(12, 9));
}

TEST(ModelPlugin, AMismatchedAbiNamesBothVersions) {
  EXPECT_EQ(load_error(OMNIDP_TEST_ABI_PLUGIN),
            std::string("model.plugin: ") + OMNIDP_TEST_ABI_PLUGIN +
                ": plugin ABI version 999, this omni-dp has version " +
                std::to_string(kPluginAbiVersion) +
                " (rebuild the plugin against this installation)");
}

TEST(ModelPlugin, ALibraryWithoutEntryPointsIsNotAPlugin) {
  const std::string e = load_error(OMNIDP_TEST_NOT_A_PLUGIN);
  EXPECT_EQ(e.rfind(std::string("model.plugin: ") + OMNIDP_TEST_NOT_A_PLUGIN +
                        ": not an omni-dp model plugin (no omnidp_plugin_abi_version: ",
                    0),
            0U)
      << e;
}

TEST(ModelPlugin, AMissingFileCannotBeLoaded) {
  const std::string e = load_error("/nonexistent/libx.so");
  EXPECT_EQ(e.rfind("model.plugin: /nonexistent/libx.so: cannot load: /nonexistent/libx.so: cannot "
                    "open shared object file",
                    0),
            0U)
      << e;
}

TEST(ModelTable, RefusesADuplicateNameNamingBothOrigins) {
  ModelTable table;
  ModelRegistration a;
  a.name = "m";
  table.add(a);
  ModelRegistration b;
  b.name = "m";
  b.origin = "plugin /x.so";
  try {
    table.add(b);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "model.name: model 'm' is registered twice (built in, then plugin /x.so)");
  }
  EXPECT_EQ(table.names(), std::vector<std::string>{"m"});
}

TEST(ModelTable, SyntheticIsAlwaysRegisteredWithoutWeights) {
  const auto* r = model_table().find("synthetic");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->has_weights);
  Config config;
  config.model.name = "synthetic";
  config.model.weights = WeightsSource::pretrained;
  config.model.path = "/x";
  config.input.manifest = "m.jsonl";
  try {
    validate_config(config);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "model.weights: 'pretrained' is not available for model 'synthetic', which has no "
                 "weights (use random)");
  }
}

}  // namespace
}  // namespace omnidp::models
