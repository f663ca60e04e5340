// The snapshot config readers of the model registrations (models/snapshot_config.hpp).
#include "omnidp/models/snapshot_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace omnidp::models {
namespace {

namespace fs = std::filesystem;

TEST(ComponentFile, PrefersConfigJson) {
  const auto dir =
      fs::temp_directory_path() / ("omnidp-component-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_FALSE(component_file(dir, "guider_config.json").has_value());
  { std::ofstream(dir / "guider_config.json") << "{}"; }
  EXPECT_EQ(component_file(dir, "guider_config.json"), dir / "guider_config.json");
  { std::ofstream(dir / "config.json") << "{}"; }
  EXPECT_EQ(component_file(dir, "guider_config.json"), dir / "config.json");
  fs::remove_all(dir);
}

TEST(SnapshotFlowShift, TheKeyOfTheSchedulerClass) {
  const auto dir =
      fs::temp_directory_path() / ("omnidp-snapshot-shift-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "scheduler");
  Config config;
  config.model.path = dir.string();
  const auto shift = [&](const std::string& json, const char* other_key) {
    { std::ofstream(dir / "scheduler" / "scheduler_config.json") << json; }
    GenerationDefaults d{{6.0, "model default"}, {5.0, "model default"}};
    snapshot_flow_shift(config, d, other_key);
    return std::to_string(d.flow_shift.value) + " (" + d.flow_shift.origin + ")";
  };
  const std::string both = R"("flow_shift": 3.0, "shift": 7.0})";
  EXPECT_EQ(shift(R"({"_class_name": "UniPCMultistepScheduler", )" + both, "shift"),
            "3.000000 (snapshot scheduler/scheduler_config.json)");
  EXPECT_EQ(shift(R"({"_class_name": "FlowMatchEulerDiscreteScheduler", )" + both, "flow_shift"),
            "7.000000 (snapshot scheduler/scheduler_config.json)");
  // Another class (or none): the model's key (Wan: flow_shift, HunyuanVideo-1.5: shift).
  EXPECT_EQ(shift("{" + both, "flow_shift"), "3.000000 (snapshot scheduler/scheduler_config.json)");
  EXPECT_EQ(shift("{" + both, "shift"), "7.000000 (snapshot scheduler/scheduler_config.json)");
  EXPECT_EQ(shift(R"({"_class_name": "UniPCMultistepScheduler"})", "shift"),
            "5.000000 (model default)");
  // The YAML's value is not replaced.
  config.generation.flow_shift = 9.0;
  EXPECT_EQ(shift(R"({"_class_name": "UniPCMultistepScheduler", )" + both, "shift"),
            "5.000000 (model default)");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::models
