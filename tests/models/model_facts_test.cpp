// The torch-free model API: the manifest options a job reads its manifest with.
#include "omnidp/models/model_facts.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/registry/registry.hpp"
#include "omnidp/models/size_buckets.hpp"

namespace omnidp {
namespace {

// The facts of the built-in models come with their registrations.
const bool kRegistered = (models::register_builtin_models(), true);

TEST(JobManifestOptions, CarryTheWeightsIdentityAndTheModelsSizeMultiple) {
  Config config;
  config.input.manifest = "/data/prompts.jsonl";
  config.model.weights = WeightsSource::random;
  config.model.weights_seed = 7;
  config.generation.num_frames = 33;
  for (const auto& [name, multiple, identity] :
       {std::tuple<std::string, int, std::string>{"tiny-wan", 32, "random:7"},
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

TEST(JobManifestOptions, HunyuanVideoPicksI2vSizesFromItsBuckets) {
  Config config;
  config.model.weights = WeightsSource::random;
  for (const std::string name : {"tiny-wan", "wan2.2-ti2v-5b", "wan2.2-t2v-a14b", "synthetic"}) {
    config.model.name = name;
    EXPECT_FALSE(job_manifest_options(config).size_from_image) << name;
    EXPECT_EQ(describe_model(config.model).image_size_target, 0) << name;
    EXPECT_FALSE(describe_model(config.model).image_size_from_area) << name;
  }
  config.model.name = "hunyuanvideo-1.5";
  const ManifestOptions o = job_manifest_options(config);
  ASSERT_TRUE(o.size_from_image);
  EXPECT_EQ(describe_model(config.model).image_size_target, 640);  // the released 480p config
  EXPECT_EQ(o.size_from_image(720, 1280), (std::pair{480, 848}));

  // A snapshot's transformer/config.json target_size.
  const auto dir = std::filesystem::temp_directory_path() / "omnidp-model-api-target-size";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "transformer");
  { std::ofstream(dir / "transformer" / "config.json") << R"({"target_size": 64})"; }
  config.model.path = dir.string();
  EXPECT_EQ(describe_model(config.model).image_size_target, 64);
  { std::ofstream(dir / "transformer" / "config.json") << R"({"target_size": "big"})"; }
  EXPECT_THROW((void)describe_model(config.model), WeightsError);
  std::filesystem::remove_all(dir);
}

// The 36-channel Wan image-to-video checkpoints: an i2v line without height/width keeps its
// image's aspect ratio at the area of generation.height x width (diffusers' max_area recipe:
// round(sqrt(area * h / w)) // 16 * 16 for a VAE stride of 8 and patch 2).
TEST(JobManifestOptions, WanImageToVideoKeepsTheImagesAspectAtTheConfiguredArea) {
  Config config;
  config.model.weights = WeightsSource::random;
  config.generation.height = 480;
  config.generation.width = 832;
  for (const std::string name : {"wan2.2-i2v-a14b", "wan2.1-i2v-14b", "tiny-wan2.2-i2v-a14b"}) {
    config.model.name = name;
    EXPECT_TRUE(describe_model(config.model).image_size_from_area) << name;
    const ManifestOptions o = job_manifest_options(config);
    ASSERT_TRUE(o.size_from_image) << name;
    EXPECT_EQ(o.size_from_image(720, 1280), (std::pair{464, 832})) << name;
    EXPECT_EQ(o.size_from_image(1280, 720), (std::pair{832, 464})) << name;
    EXPECT_EQ(o.size_from_image(1024, 1024), (std::pair{624, 624})) << name;
    EXPECT_EQ(o.size_from_image(480, 832), (std::pair{480, 832})) << name;
    // 1:50 at this area would be 80 x 4464: over the 4096 a line could not set either.
    EXPECT_THROW((void)o.size_from_image(100, 5000), std::invalid_argument) << name;
  }
}

// A step cache needs a transformer block stack that runs through RequestCaches: a model
// without one refuses generation.cache instead of recording a cache it never ran.
TEST(JobManifestOptions, AModelWithoutABlockStackRefusesAStepCache) {
  Config config;
  config.model.weights = WeightsSource::random;
  config.generation.cache.policy = CachePolicy::taylorseer;
  for (const std::string name : {"tiny-wan", "tiny-wan2.2-t2v-a14b", "hunyuanvideo-1.5"}) {
    config.model.name = name;
    EXPECT_NO_THROW((void)job_manifest_options(config)) << name;
  }
  config.model.name = "synthetic";
  EXPECT_EQ(test::error_of<ConfigError>([&] { (void)job_manifest_options(config); }),
            "generation.cache: model 'synthetic' has no transformer block stack to cache: a "
            "step cache applies to the Wan family and hunyuanvideo-1.5 (docs/models.md, \"Step "
            "caching\")");
  config.generation.cache.policy = CachePolicy::off;
  EXPECT_NO_THROW((void)job_manifest_options(config));
}

// model.expert_residency swap moves the idle expert of a two-expert model: a model with one
// transformer refuses it, naming the key.
TEST(JobManifestOptions, SwapNeedsTwoExperts) {
  Config config;
  config.model.weights = WeightsSource::random;
  config.model.expert_residency = ExpertResidency::swap;
  config.model.name = "tiny-wan2.2-t2v-a14b";
  EXPECT_NO_THROW((void)job_manifest_options(config));
  config.model.name = "tiny-wan2.1-t2v";
  EXPECT_EQ(test::error_of<ConfigError>([&] { (void)job_manifest_options(config); }),
            "model.expert_residency: model 'tiny-wan2.1-t2v' has one transformer: swap moves "
            "the idle expert of a two-expert model (Wan2.2-A14B) between host and GPU memory");
}

TEST(JobManifestOptions, AHunyuanVideoSnapshotServesOneTask) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "omnidp-model-api-task";
  fs::remove_all(dir);
  fs::create_directories(dir / "transformer");
  { std::ofstream(dir / "transformer" / "config.json") << R"({"task_type": "i2v"})"; }
  Config config;
  config.model.name = "hunyuanvideo-1.5";
  config.model.path = dir.string();
  config.model.weights = WeightsSource::pretrained;
  ModelInfo info = describe_model(config.model);
  ASSERT_TRUE(info.snapshot_task.has_value());
  EXPECT_EQ(*info.snapshot_task, Task::i2v);
  EXPECT_EQ(info.snapshot_task_origin,
            "task_type in " + (dir / "transformer" / "config.json").string());
  // model_index.json's pipeline class, when it agrees, is the origin named.
  {
    std::ofstream(dir / "model_index.json")
        << R"({"_class_name": "HunyuanVideo15ImageToVideoPipeline"})";
  }
  info = describe_model(config.model);
  EXPECT_EQ(info.snapshot_task, Task::i2v);
  EXPECT_EQ(info.snapshot_task_origin,
            "HunyuanVideo15ImageToVideoPipeline in " + (dir / "model_index.json").string());
  // The two halves of the checkpoint disagree: an error naming both files.
  { std::ofstream(dir / "model_index.json") << R"({"_class_name": "HunyuanVideo15Pipeline"})"; }
  try {
    (void)describe_model(config.model);
    ADD_FAILURE() << "no error for a T2V pipeline class over an I2V transformer";
  } catch (const WeightsError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "model_index.json").string() +
                  ": HunyuanVideo15Pipeline serves t2v, but the transformer's task_type in " +
                  (dir / "transformer" / "config.json").string() + " says i2v");
  }
  fs::remove(dir / "model_index.json");
  // Random weights (benchmarks) serve both.
  config.model.weights = WeightsSource::random;
  EXPECT_FALSE(describe_model(config.model).snapshot_task.has_value());
  { std::ofstream(dir / "transformer" / "config.json") << R"({"task_type": "v2v"})"; }
  config.model.weights = WeightsSource::pretrained;
  EXPECT_THROW((void)describe_model(config.model), WeightsError);
  fs::remove_all(dir);
}

// HunyuanVideo-1.5's released variants are read from their snapshots, not assumed: the 720p
// I2V (target_size 960, shift 7) sizes its requests at 720p and takes the snapshot's shift; a
// cfg-distilled guider's scale 1 is the request's default; the sparse-attention and
// super-resolution checkpoints are refused before anything loads, naming the file
// (docs/models.md, "HunyuanVideo-1.5's released variants").
TEST(JobManifestOptions, HunyuanVideoVariantsComeFromTheSnapshot) {
  namespace fs = std::filesystem;
  const auto dir =
      fs::temp_directory_path() / ("omnidp-model-api-hv15-variants-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* sub : {"transformer", "guider", "scheduler"}) fs::create_directories(dir / sub);
  const auto transformer = dir / "transformer" / "config.json";
  const auto write = [](const fs::path& file, const std::string& text) {
    std::ofstream(file) << text;
  };
  write(transformer, R"({"_class_name": "HunyuanVideo15Transformer3DModel", "target_size": 960,
                         "task_type": "i2v", "use_meanflow": false})");
  write(dir / "guider" / "guider_config.json",
        R"({"_class_name": "ClassifierFreeGuidance", "guidance_scale": 1.0})");
  write(dir / "scheduler" / "scheduler_config.json",
        R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 7.0})");
  Config config;
  config.model.name = "hunyuanvideo-1.5";
  config.model.path = dir.string();
  config.model.weights = WeightsSource::pretrained;
  config.input.manifest = "/m.jsonl";
  const auto info = describe_model(config.model);
  EXPECT_EQ(info.image_size_target, 960);
  EXPECT_EQ(info.snapshot_task, Task::i2v);
  const ManifestOptions o = job_manifest_options(config);
  ASSERT_TRUE(o.size_from_image);
  EXPECT_EQ(o.size_from_image(720, 1280), (std::pair{720, 1280}));  // a 16:9 image at 720p
  // A portrait image: the target-960 bucket (its own rule, SizeBuckets.*), not the 480p one.
  const auto portrait = models::hv15_bucket_size(1280, 720, 960, 16);
  EXPECT_EQ(o.size_from_image(1280, 720), (std::pair{portrait.height, portrait.width}));
  EXPECT_NE(portrait, models::hv15_bucket_size(1280, 720, 640, 16));
  EXPECT_EQ(o.defaults.guidance_scale, 1.0);  // cfg-distilled: one forward per step
  EXPECT_EQ(o.defaults.flow_shift, 7.0);
  write(dir / "scheduler" / "scheduler_config.json",
        R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 9.0})");  // 720p T2V
  EXPECT_EQ(job_manifest_options(config).defaults.flow_shift, 9.0);

  const auto refused = [&](const std::string& what) {
    try {
      (void)describe_model(config.model);
    } catch (const WeightsError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted: " << what;
    return std::string();
  };
  write(transformer, R"({"target_size": 960, "attn_mode": "flex-block-attn",
                         "attn_param": {"attn_sparse_type": "ssta"}})");
  EXPECT_EQ(refused("sparse"),
            transformer.string() +
                ": attn_mode 'flex-block-attn': a sparse-attention (SSTA) checkpoint of "
                "HunyuanVideo-1.5 (720p *_sparse) is not served (Diffusers has no pipeline for it "
                "either); use the dense 720p checkpoint (720p_t2v, 720p_i2v or their "
                "cfg-distilled *_distilled)");
  write(transformer, R"({"attn_param": {"attn_sparse_type": "ssta"}})");
  EXPECT_NE(refused("sparse attn_param").find(": attn_param.attn_sparse_type: a sparse-attention"),
            std::string::npos);
  write(transformer, R"({"in_channels": 98, "out_channels": 32, "target_size": 1440})");
  EXPECT_EQ(refused("super-resolution"),
            transformer.string() +
                ": in_channels 98 = 3 x out_channels + 2 (latents, image condition + mask, "
                "low-resolution latents + mask): a super-resolution checkpoint of "
                "HunyuanVideo-1.5 (720p_sr_distilled, 1080p_sr_distilled) is not served "
                "(Diffusers has no pipeline for it either)");
  write(transformer, R"({"heads_num": 16, "mm_double_blocks_depth": 54, "hidden_size": 2048})");
  EXPECT_NE(refused("original layout")
                .find(": Tencent's original transformer config (heads_num, "
                      "mm_double_blocks_depth), not a Diffusers one"),
            std::string::npos);
  write(transformer, R"({"target_size": 960})");
  EXPECT_EQ(describe_model(config.model).image_size_target, 960);  // served again
  fs::create_directories(dir / "upsampler");
  EXPECT_EQ(refused("upsampler/").rfind((dir / "upsampler").string() + ": a latent upsampler", 0),
            0U);
  fs::remove_all(dir);
}

// Generation defaults: YAML > snapshot (guider/, scheduler/) > the model's default; each value
// says where it came from.
class GenerationDefaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("omnidp-model-api-defaults-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "guider");
    std::filesystem::create_directories(dir_ / "scheduler");
    config_.model.name = "hunyuanvideo-1.5";
    config_.model.weights = WeightsSource::random;
    config_.input.manifest = "/m.jsonl";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
  }
  [[nodiscard]] std::string described() const {
    return describe_generation_defaults(resolve_generation_defaults(config_));
  }

  std::filesystem::path dir_;
  Config config_;
};

TEST_F(GenerationDefaultsTest, EachSourceInItsOrder) {
  // No snapshot: the model's documented defaults.
  EXPECT_EQ(described(), "guidance_scale 6 (model default), flow_shift 5 (model default)");
  config_.model.name = "wan2.2-ti2v-5b";
  EXPECT_EQ(described(), "guidance_scale 5 (model default), flow_shift 5 (model default)");
  config_.model.name = "synthetic";
  EXPECT_EQ(described(), "guidance_scale 5 (model default), flow_shift 5 (model default)");

  // A snapshot with a guider and a flow-matching scheduler (what diffusers writes).
  config_.model.name = "hunyuanvideo-1.5";
  config_.model.path = dir_.string();
  EXPECT_EQ(described(),
            "guidance_scale 6 (model default), flow_shift 5 (model default)");  // empty folders
  write("guider/guider_config.json",
        R"({"_class_name": "ClassifierFreeGuidance", "guidance_scale": 4.5})");
  write("scheduler/scheduler_config.json",
        R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 7.0})");
  EXPECT_EQ(described(),
            "guidance_scale 4.5 (snapshot guider/guider_config.json), flow_shift 7 "
            "(snapshot scheduler/scheduler_config.json)");
  // config.json is read first, as for the other components.
  write("guider/config.json", R"({"guidance_scale": 3.25})");
  EXPECT_EQ(described(),
            "guidance_scale 3.25 (snapshot guider/config.json), flow_shift 7 "
            "(snapshot scheduler/scheduler_config.json)");
  // A config without the key leaves the model's default.
  write("guider/config.json", R"({"guidance_scale": null})");
  EXPECT_EQ(
      described(),
      "guidance_scale 6 (model default), flow_shift 7 (snapshot scheduler/scheduler_config.json)");

  // The YAML beats the snapshot.
  config_.generation.guidance_scale = 2.0;
  EXPECT_EQ(described(),
            "guidance_scale 2 (yaml generation.guidance_scale), flow_shift 7 "
            "(snapshot scheduler/scheduler_config.json)");
  config_.generation.flow_shift = 9.5;
  EXPECT_EQ(described(),
            "guidance_scale 2 (yaml generation.guidance_scale), flow_shift 9.5 (yaml "
            "generation.flow_shift)");

  // job_manifest_options fills the manifest defaults with them.
  const ManifestOptions o = job_manifest_options(config_);
  EXPECT_EQ(o.defaults.guidance_scale, 2.0);
  EXPECT_EQ(o.defaults.flow_shift, 9.5);
  // The effective configuration ends with them.
  const std::string yaml = effective_config_yaml(config_);
  EXPECT_EQ(
      yaml.substr(yaml.rfind("# generation")),
      "# generation defaults: guidance_scale 2 (yaml generation.guidance_scale), flow_shift 9.5 "
      "(yaml generation.flow_shift)\n");
}

TEST_F(GenerationDefaultsTest, WanReadsTheUniPcFlowShiftAndHasNoGuider) {
  config_.model.name = "wan2.2-ti2v-5b";
  config_.model.path = dir_.string();
  write("guider/guider_config.json", R"({"guidance_scale": 9})");  // not a Wan component
  write("scheduler/scheduler_config.json",
        R"({"_class_name": "UniPCMultistepScheduler", "flow_shift": 3.0, "shift": 1.0})");
  EXPECT_EQ(
      described(),
      "guidance_scale 5 (model default), flow_shift 3 (snapshot scheduler/scheduler_config.json)");
}

TEST_F(GenerationDefaultsTest, ABadSnapshotValueIsAnErrorNamingTheFile) {
  config_.model.path = dir_.string();
  write("scheduler/scheduler_config.json", R"({"shift": 0})");
  const auto file = (dir_ / "scheduler" / "scheduler_config.json").string();
  try {
    (void)resolve_generation_defaults(config_);
    ADD_FAILURE() << "no error";
  } catch (const WeightsError& e) {
    EXPECT_EQ(std::string(e.what()),
              file + ": shift: 0.0 is out of range (expected a number in (0, 100])");
  }
  write("scheduler/scheduler_config.json", R"({"shift": "five"})");
  EXPECT_THROW((void)resolve_generation_defaults(config_), WeightsError);
  // A value the YAML sets is not read from the snapshot at all.
  config_.generation.flow_shift = 5.0;
  EXPECT_EQ(described(),
            "guidance_scale 6 (model default), flow_shift 5 (yaml generation.flow_shift)");
}

TEST(SizeBuckets, CropSizeListOfTheReference) {
  // generate_crop_size_list(64, 16): 16 patches, ratios up to 4, in the reference's order.
  const std::vector<models::FrameSize> expected = {
      {128, 32}, {112, 32}, {96, 32}, {80, 32}, {80, 48},  {64, 48}, {64, 64},
      {48, 64},  {48, 80},  {32, 80}, {32, 96}, {32, 112}, {32, 128}};
  EXPECT_EQ(models::hv15_crop_sizes(64, 16), expected);
  EXPECT_THROW((void)models::hv15_crop_sizes(0, 16), std::invalid_argument);
}

TEST(SizeBuckets, ClosestRatioOnTheImagesSide) {
  using models::FrameSize;
  using models::hv15_bucket_size;
  // The fixture hv15_pipeline_i2v: a 70 x 90 (h x w) image at target 64 -> 64 x 64.
  EXPECT_EQ(hv15_bucket_size(70, 90, 64, 16), (FrameSize{64, 64}));
  // Landscape takes a ratio >= the image's, portrait (and square) one <= it.
  EXPECT_EQ(hv15_bucket_size(40, 100, 64, 16), (FrameSize{32, 80}));
  EXPECT_EQ(hv15_bucket_size(100, 40, 64, 16), (FrameSize{80, 32}));
  EXPECT_EQ(hv15_bucket_size(64, 64, 64, 16), (FrameSize{64, 64}));
  EXPECT_EQ(hv15_bucket_size(1000, 10, 64, 16), (FrameSize{128, 32}));  // beyond 4: the extreme
  // The released 480p (target 640) and 720p (960) configurations.
  EXPECT_EQ(hv15_bucket_size(720, 1280, 640, 16), (FrameSize{480, 848}));
  EXPECT_EQ(hv15_bucket_size(1280, 720, 640, 16), (FrameSize{848, 480}));
  EXPECT_EQ(hv15_bucket_size(512, 512, 640, 16), (FrameSize{640, 640}));
  EXPECT_EQ(hv15_bucket_size(1080, 1920, 960, 16), (FrameSize{720, 1280}));
  EXPECT_THROW((void)hv15_bucket_size(0, 10, 64, 16), std::invalid_argument);
}

TEST(SizeBuckets, AreaSizeKeepsTheAspectRatioRoundingAsPython) {
  using models::area_size;
  using models::FrameSize;
  EXPECT_EQ(area_size(720, 1280, 480.0 * 832.0, 16), (FrameSize{464, 832}));
  EXPECT_EQ(area_size(40, 60, 32.0 * 48.0, 16), (FrameSize{32, 48}));
  // Halves round to even, as Python's round: sqrt(1056.25) = 32.5 -> 32, sqrt(1122.25) = 33.5 -> 34.
  EXPECT_EQ(area_size(10, 10, 1056.25, 1), (FrameSize{32, 32}));
  EXPECT_EQ(area_size(10, 10, 1122.25, 1), (FrameSize{34, 34}));
  // A side never falls below one multiple.
  EXPECT_EQ(area_size(1, 1000, 1024.0, 16), (FrameSize{16, 1008}));
  EXPECT_THROW((void)area_size(0, 10, 1024.0, 16), std::invalid_argument);
  EXPECT_THROW((void)area_size(10, 10, 0.0, 16), std::invalid_argument);
  EXPECT_THROW((void)area_size(10, 10, 1024.0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace omnidp
