// The torch-free model API: the manifest options a job reads its manifest with.
#include "omnidp/models/pipeline.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

TEST(JobManifestOptions, CarryTheWeightsIdentityAndTheModelsSizeMultiple) {
  Config config;
  config.input.manifest = "/data/prompts.jsonl";
  config.model.weights = WeightsSource::random;
  config.model.weights_seed = 7;
  config.generation.num_frames = 33;
  for (const auto& [name, multiple, identity] : {std::tuple<std::string, int, std::string>{"tiny-wan", 32, "random:7"},
                                                 {"wan2.2-ti2v-5b", 32, "random:7"},
                                                 {"hunyuanvideo-1.5", 16, "random:7"},
                                                 {"synthetic", 16, "synthetic"}}) {
    config.model.name = name;
    const ManifestOptions o = job_manifest_options(config);
    EXPECT_EQ(o.size_multiple, multiple) << name;
    EXPECT_EQ(o.weights_identity, identity) << name;
    EXPECT_EQ(o.model_name, name);
    EXPECT_EQ(o.path, "/data/prompts.jsonl");
    EXPECT_EQ(o.defaults.num_frames, 33);
  }
  config.model.name = "no-such-model";
  EXPECT_THROW((void)job_manifest_options(config), ConfigError);
}

}  // namespace
}  // namespace omnidp
