#include "omnidp/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

// The models validation is given (the model table's choices in a real process).
// The head counts as the model table gives them (a stand-in: a snapshot's config may differ).
int heads_of(const ModelConfig& m) {
  return m.name == "tiny-wan" ? 2 : m.name == "wan2.2-ti2v-5b" ? 24 : 16;
}
const std::vector<ModelChoice> kModels{{"synthetic", false, {}, false},
                                       {"tiny-wan", true, heads_of, false},
                                       {"wan2.2-ti2v-5b", true, heads_of, false},
                                       {"wan", true, heads_of, false},
                                       {"wan2.2-t2v-a14b", true, heads_of, false},
                                       {"wan2.2-i2v-a14b", true, heads_of, false},
                                       {"hunyuanvideo-1.5", true, heads_of, false},
                                       {"wan2.1-i2v-14b", true, heads_of, false}};

// The ConfigError message (what()) of parsing `yaml`, or "" when it parses.
std::string parse_error(const std::string& yaml) {
  try {
    (void)parse_config_yaml(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The ConfigError message of validating `yaml` (which must parse) against `models`, or "" when
// valid. The struct defaults have no manifest, so one is added unless `yaml` has an input section.
std::string validate_error(const std::string& yaml, const std::vector<ModelChoice>& models = kModels) {
  const bool has_input = yaml.find("input:") != std::string::npos;
  Config config =
      parse_config_yaml(has_input ? yaml : yaml + "input: {manifest: m.jsonl}\n", "test.yaml");
  try {
    validate_and_resolve(config, models);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string override_error(const std::vector<std::string>& sets) {
  Config config = default_config();
  try {
    apply_overrides(config, sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

using omnidp::test::TempDir;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// --- defaults and the embedded default -------------------------------------------------------

TEST(ConfigDefaults, EmptyTextGivesStructDefaults) {
  EXPECT_EQ(parse_config_yaml("", "empty.yaml"), Config{});
  EXPECT_EQ(parse_config_yaml("# only a comment\n", "c.yaml"), Config{});
  EXPECT_EQ(parse_config_yaml("faults:\n", "c.yaml"), Config{});
}

TEST(ConfigDefaults, StructDefaultsMatchSpec) {
  const Config c;
  EXPECT_EQ(c.generation.num_frames, 121);
  EXPECT_EQ(c.generation.height, 480);
  EXPECT_EQ(c.generation.width, 848);
  EXPECT_EQ(c.generation.num_inference_steps, 50);
  EXPECT_EQ(c.scheduler.policy, SchedulerPolicy::dynamic);
  EXPECT_EQ(c.scheduler.order, WorkOrder::cost_desc);
  EXPECT_EQ(c.parallel.data_parallel_size, 0);
  EXPECT_TRUE(c.parallel.devices.empty());
  EXPECT_EQ(compression_string(c.output), "none");
  EXPECT_EQ(c.scheduler.deadline_margin_s, 60.0);
  EXPECT_EQ(c.output.file_locking, FileLocking::automatic);
}

TEST(ConfigDefaults, EmbeddedDefaultIsTinyYamlAndValidates) {
  Config embedded = default_config();
  EXPECT_TRUE(embedded.source_file.empty());
  EXPECT_EQ(embedded.model.name, "tiny-wan");
  EXPECT_EQ(embedded.model.weights, WeightsSource::random);
  EXPECT_EQ(embedded.model.device, DeviceKind::cpu);
  EXPECT_EQ(embedded.model.dtype, DType::fp32);
  EXPECT_EQ(embedded.input.manifest, "prompts/demo.jsonl");
  EXPECT_EQ(embedded.output.dir, "results/tiny");
  // Identical to the file it was generated from.
  Config from_file = load_config_file(fs::path(OMNIDP_SOURCE_DIR) / "configs" / "tiny.yaml");
  from_file.source_file.clear();
  EXPECT_EQ(embedded, from_file);
  EXPECT_NO_THROW(validate_and_resolve(embedded, kModels));
  EXPECT_EQ(embedded.input.manifest, (fs::current_path() / "prompts/demo.jsonl").string());
}

// Every configs/*.yaml (the HunyuanVideo-1.5 variants: docs/models.md, "HunyuanVideo-1.5's
// released variants").
constexpr const char* kShippedConfigs[] = {"tiny.yaml",
                                           "synthetic.yaml",
                                           "hv15.yaml",
                                           "wan22-ti2v-5b.yaml",
                                           "wan22-t2v-a14b.yaml",
                                           "wan22-i2v-a14b.yaml",
                                           "wan21-t2v.yaml",
                                           "wan21-i2v.yaml",
                                           "hv15-720p-t2v.yaml",
                                           "hv15-720p-i2v.yaml",
                                           "hv15-480p-t2v-distilled.yaml",
                                           "hv15-480p-i2v-distilled.yaml",
                                           "hv15-720p-t2v-distilled.yaml",
                                           "hv15-720p-i2v-distilled.yaml",
                                           "hv15-480p-i2v-step-distilled.yaml"};

TEST(ConfigDefaults, ShippedConfigsValidate) {
  for (const char* name : kShippedConfigs) {
    SCOPED_TRACE(name);
    Config config = load_config_file(fs::path(OMNIDP_SOURCE_DIR) / "configs" / name);
    EXPECT_NO_THROW(validate_and_resolve(config, kModels));
  }
}

TEST(ConfigDefaults, RealModelConfigsCarrySpecDefaults) {
  const fs::path dir = fs::path(OMNIDP_SOURCE_DIR) / "configs";
  const Config hv = load_config_file(dir / "hv15.yaml");
  EXPECT_EQ(hv.model.name, "hunyuanvideo-1.5");
  EXPECT_EQ(hv.model.dtype, DType::bf16);
  EXPECT_EQ(hv.model.device, DeviceKind::cuda);
  EXPECT_EQ(hv.model.weights, WeightsSource::pretrained);
  EXPECT_EQ(hv.generation.width, 848);
  EXPECT_EQ(hv.generation.height, 480);
  EXPECT_EQ(hv.generation.num_frames, 121);
  EXPECT_EQ(hv.generation.num_inference_steps, 50);
  // Left unset: the snapshot's guider/ and scheduler/ values win (docs/configuration.md).
  EXPECT_EQ(hv.generation.guidance_scale, std::nullopt);
  EXPECT_EQ(hv.generation.flow_shift, std::nullopt);
  EXPECT_EQ(hv.input.tasks, (std::vector<std::string>{"t2v", "i2v"}));
  const Config wan = load_config_file(dir / "wan22-ti2v-5b.yaml");
  EXPECT_EQ(wan.model.name, "wan2.2-ti2v-5b");
  EXPECT_EQ(wan.generation.width, 1280);
  EXPECT_EQ(wan.generation.height, 704);
  EXPECT_EQ(wan.generation.num_frames, 121);
  EXPECT_EQ(wan.generation.num_inference_steps, 50);
  EXPECT_EQ(wan.generation.guidance_scale, std::nullopt);
  EXPECT_EQ(wan.generation.flow_shift, std::nullopt);
  EXPECT_EQ(wan.model.dtype, DType::bf16);
  // The A14B recipe is stated, not left to the snapshot (whose scheduler says shift 3).
  const Config a14b = load_config_file(dir / "wan22-t2v-a14b.yaml");
  EXPECT_EQ(a14b.generation.num_inference_steps, 40);
  EXPECT_EQ(a14b.generation.guidance_scale, 4.0);
  EXPECT_EQ(a14b.generation.guidance_scale_2, 3.0);
  EXPECT_EQ(a14b.generation.flow_shift, 12.0);
  EXPECT_EQ(a14b.generation.num_frames, 81);
  EXPECT_EQ(a14b.generation.fps, 16);
  // Both GPU configs take cuDNN attention first (docs/performance.md).
  EXPECT_EQ(hv.model.attention, AttentionKernel::cudnn);
  EXPECT_EQ(wan.model.attention, AttentionKernel::cudnn);
}

// The HunyuanVideo-1.5 variants state their size, steps and task; guidance and shift are the
// snapshot's (guider 6 or 1, shift 5 / 9 / 7), so the YAML leaves them unset.
TEST(ConfigDefaults, Hv15VariantConfigsCarryTheirRecipe) {
  const fs::path dir = fs::path(OMNIDP_SOURCE_DIR) / "configs";
  struct Want {
    const char* file;
    int width, height, steps;
    const char* task;
  };
  for (const Want& w : {Want{"hv15-720p-t2v.yaml", 1280, 720, 50, "t2v"},
                        Want{"hv15-720p-i2v.yaml", 1280, 720, 50, "i2v"},
                        Want{"hv15-480p-t2v-distilled.yaml", 848, 480, 50, "t2v"},
                        Want{"hv15-480p-i2v-distilled.yaml", 848, 480, 50, "i2v"},
                        Want{"hv15-720p-t2v-distilled.yaml", 1280, 720, 50, "t2v"},
                        Want{"hv15-720p-i2v-distilled.yaml", 1280, 720, 50, "i2v"},
                        Want{"hv15-480p-i2v-step-distilled.yaml", 848, 480, 8, "i2v"}}) {
    SCOPED_TRACE(w.file);
    const Config c = load_config_file(dir / w.file);
    EXPECT_EQ(c.model.name, "hunyuanvideo-1.5");
    EXPECT_EQ(c.model.weights, WeightsSource::pretrained);
    EXPECT_EQ(c.generation.width, w.width);
    EXPECT_EQ(c.generation.height, w.height);
    EXPECT_EQ(c.generation.num_frames, 121);
    EXPECT_EQ(c.generation.num_inference_steps, w.steps);
    EXPECT_EQ(c.generation.guidance_scale, std::nullopt);
    EXPECT_EQ(c.generation.flow_shift, std::nullopt);
    EXPECT_EQ(c.input.tasks, (std::vector<std::string>{w.task}));
  }
}

// --- parsing ---------------------------------------------------------------------------------

TEST(ConfigParse, ReadsEverySpecialForm) {
  const Config c = parse_config_yaml(R"(
model: {name: synthetic, dtype: bf16, device: cuda, weights_seed: 18446744073709551615}
parallel:
  data_parallel_size: 3
  devices: [0, "cuda:1", 2]
scheduler: {policy: round_robin, order: manifest, prefetch: 0, request_timeout_s: 2.5}
generation: {guidance_scale: 7, negative_prompt: "blurry, dark", seed: 9223372036854775807}
output: {compression: "gzip:4", store_video: false}
synthetic: {wait: busy}
faults: {fail_ids: [a, "b c"], kill_rank: 2}
)",
                                     "t.yaml");
  EXPECT_EQ(c.model.name, "synthetic");
  EXPECT_EQ(c.model.dtype, DType::bf16);
  EXPECT_EQ(c.model.device, DeviceKind::cuda);
  EXPECT_EQ(c.model.weights_seed, 18446744073709551615ULL);
  EXPECT_EQ(c.parallel.data_parallel_size, 3);
  EXPECT_EQ(c.parallel.devices, (std::vector<std::string>{"0", "cuda:1", "2"}));
  EXPECT_EQ(c.scheduler.policy, SchedulerPolicy::round_robin);
  EXPECT_EQ(c.scheduler.order, WorkOrder::manifest);
  EXPECT_EQ(c.scheduler.prefetch, 0);
  EXPECT_EQ(c.scheduler.request_timeout_s, 2.5);
  EXPECT_EQ(c.generation.guidance_scale, 7.0);
  EXPECT_EQ(c.generation.negative_prompt, "blurry, dark");
  EXPECT_EQ(c.generation.seed, 9223372036854775807ULL);
  EXPECT_EQ(c.output.compression, CompressionKind::gzip);
  EXPECT_EQ(c.output.gzip_level, 4);
  EXPECT_FALSE(c.output.store_video);
  EXPECT_EQ(c.synthetic.wait, WaitMode::busy);
  EXPECT_EQ(c.faults.fail_ids, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(c.faults.kill_rank, 2);
  // Untouched keys keep their defaults.
  EXPECT_EQ(c.generation.num_frames, 121);
}

TEST(ConfigParse, AutoForms) {
  const Config c = parse_config_yaml("parallel: {data_parallel_size: auto, devices: auto}\n", "t");
  EXPECT_EQ(c.parallel.data_parallel_size, 0);
  EXPECT_TRUE(c.parallel.devices.empty());
  const Config lzf = parse_config_yaml("output: {compression: lzf}\n", "t");
  EXPECT_EQ(lzf.output.compression, CompressionKind::lzf);
  EXPECT_EQ(compression_string(lzf.output), "lzf");
}

TEST(ConfigParse, UnknownKeysNameThePathAndTheNearestKey) {
  EXPECT_EQ(parse_error("scheduler:\n  polcy: dynamic\n"),
            "scheduler.polcy: unknown key (did you mean 'policy'?)");
  EXPECT_EQ(parse_error("modle:\n  name: tiny-wan\n"),
            "modle: unknown key (did you mean 'model'?)");
  EXPECT_EQ(parse_error("generation: {frames: 9}\n"),
            "generation.frames: unknown key (did you mean 'num_frames'?)");
  EXPECT_EQ(parse_error("parallel: {data_paralel_size: 2}\n"),
            "parallel.data_paralel_size: unknown key (did you mean 'data_parallel_size'?)");
  EXPECT_EQ(parse_error("determinism: {zzz: 1}\n"), "determinism.zzz: unknown key (valid: strict)");
}

// Issue 52, class 10: a key twice in a nested map was read as one of its values. Refused in
// every map at every depth, in a file and in a --set value, with the line of the second one.
TEST(ConfigParse, DuplicateKeysAreErrorsAtEveryDepth) {
  EXPECT_EQ(parse_error("model: {name: a}\nmodel: {name: b}\n"),
            "test.yaml:2: model: duplicate key");
  EXPECT_EQ(parse_error("model:\n  name: a\n  name: b\n"),
            "test.yaml:3: model.name: duplicate key");
  EXPECT_EQ(parse_error("generation:\n  cache: {policy: first_block, policy: off}\n"),
            "test.yaml:2: generation.cache.policy: duplicate key");
  EXPECT_EQ(parse_error("generation:\n  cache:\n    policy: first_block\n    threshold: 0.1\n"
                        "    threshold: 0.2\n"),
            "test.yaml:5: generation.cache.threshold: duplicate key");
  EXPECT_EQ(parse_error("faults:\n  fail_ids: [a, {k: 1, k: 2}]\n"),
            "test.yaml:2: faults.fail_ids[1].k: duplicate key");
  EXPECT_EQ(parse_error("x:\n  - y:\n      z: 1\n      z: 2\n"),
            "test.yaml:4: x[0].y.z: duplicate key");
  EXPECT_EQ(override_error({"generation.cache={policy: first_block, policy: off}"}),
            "--set: generation.cache.policy: duplicate key");
  EXPECT_EQ(
      override_error({"generation.cache={policy: magcache, calibrate: true, calibrate: false}"}),
      "--set: generation.cache.calibrate: duplicate key");
  // The same key in two maps is no duplicate.
  EXPECT_EQ(parse_error("generation:\n  cache: {policy: first_block, threshold: 0.1}\n"
                        "scheduler: {policy: dynamic}\n"),
            "");
}

// Issue 52, class 11: tags were ignored (`num_frames: !!float 9` read as 9). A standard tag
// that contradicts the key's type, a tag that does not fit its node and an unknown tag are
// errors naming the line and the key, at any depth, in a file and in --set; a standard tag
// that agrees with the key's type is read.
TEST(ConfigParse, TagsThatContradictTheKeyOrAreUnknownAreErrors) {
  const std::string integer = ": the tag !!float contradicts the key's type (expected an integer)";
  EXPECT_EQ(parse_error("generation:\n  fps: 8\n  num_frames: !!float 9\n"),
            "test.yaml:3: generation.num_frames" + integer);
  EXPECT_EQ(override_error({"generation.num_frames=!!float 9"}),
            "--set: generation.num_frames" + integer);
  EXPECT_EQ(parse_error("generation: {fps: !!str 8}\n"),
            "test.yaml:1: generation.fps: the tag !!str contradicts the key's type (expected an "
            "integer)");
  EXPECT_EQ(
      parse_error("model:\n  name: !!int 5\n"),
      "test.yaml:2: model.name: the tag !!int contradicts the key's type (expected a string)");
  EXPECT_EQ(parse_error("output:\n  store_video: !!int 1\n"),
            "test.yaml:2: output.store_video: the tag !!int contradicts the key's type (expected "
            "true or false)");
  EXPECT_EQ(parse_error("generation:\n  guidance_scale: !!bool true\n"),
            "test.yaml:2: generation.guidance_scale: the tag !!bool contradicts the key's type "
            "(expected a number)");
  EXPECT_EQ(parse_error("model:\n  dtype: !!float 16\n"),
            "test.yaml:2: model.dtype: the tag !!float contradicts the key's type (expected one "
            "of fp32 | bf16 | fp16)");
  EXPECT_EQ(parse_error("faults:\n  fail_ids:\n    - a\n    - !!int 3\n"),
            "test.yaml:4: faults.fail_ids[1]: the tag !!int contradicts the key's type (expected "
            "a string)");
  EXPECT_EQ(parse_error("parallel: {data_parallel_size: !!int auto}\n"),
            "test.yaml:1: parallel.data_parallel_size: the tag !!int contradicts the key's type "
            "(expected 'auto' or an integer >= 1)");
  EXPECT_EQ(parse_error("generation:\n  cache: {policy: first_block, threshold: !!str 0.1}\n"),
            "test.yaml:2: generation.cache.threshold: the tag !!str contradicts the key's type "
            "(expected a number)");
  EXPECT_EQ(override_error({"generation.cache={policy: magcache, mag_ratios: [1, !!bool true]}"}),
            "--set: generation.cache.mag_ratios[1]: the tag !!bool contradicts the key's type "
            "(expected a number)");
  // A tag that does not fit its node, and unknown tags (of any key, at any depth).
  EXPECT_EQ(parse_error("generation: !!seq {fps: 8}\n"),
            "test.yaml:1: generation: the tag !!seq does not fit a map");
  EXPECT_EQ(parse_error("generation:\n  fps: !!map 8\n"),
            "test.yaml:2: generation.fps: the tag !!map does not fit '8'");
  EXPECT_EQ(parse_error("generation:\n  fps: !!null 8\n"),
            "test.yaml:2: generation.fps: the tag !!null does not fit '8'");
  const std::string unknown =
      " (the standard tags !!str, !!int, !!float, !!bool, !!null, !!seq and !!map are read where "
      "they agree with the key's type)";
  EXPECT_EQ(parse_error("generation:\n  num_frames: !foo 9\n"),
            "test.yaml:2: generation.num_frames: unknown tag !foo" + unknown);
  EXPECT_EQ(parse_error("generation:\n  cache: {policy: !!binary b2Zm}\n"),
            "test.yaml:2: generation.cache.policy: unknown tag !!binary" + unknown);
  EXPECT_EQ(parse_error("zzz: !<tag:example.com,2000:x> 1\n"),
            "test.yaml:1: zzz: unknown tag tag:example.com,2000:x" + unknown);
  EXPECT_EQ(override_error({"generation.cache={policy: !custom first_block}"}),
            "--set: generation.cache.policy: unknown tag !custom" + unknown);
  EXPECT_EQ(override_error({"faults.fail_ids=!!set {a, b}"}),
            "--set: faults.fail_ids: unknown tag !!set" + unknown);
  // Standard tags that agree are read.
  const Config c = parse_config_yaml(
      "generation:\n  num_frames: !!int 9\n  guidance_scale: !!float 4\n  flow_shift: !!int 3\n"
      "  guidance_scale_2: !!null\n  negative_prompt: !!str 12\n"
      "  cache: !!map {policy: !!str first_block, threshold: !!float 0.5}\n"
      "model: !!map\n  dtype: !!str bf16\n  fused_kernels: !!bool false\n"
      "  path: !<tag:yaml.org,2002:str> p\n"
      "parallel:\n  devices: !!seq [!!str cpu]\n  data_parallel_size: !!str auto\n",
      "t");
  EXPECT_EQ(c.generation.num_frames, 9);
  EXPECT_EQ(c.generation.guidance_scale, 4.0);
  EXPECT_EQ(c.generation.flow_shift, 3.0);
  EXPECT_FALSE(c.generation.guidance_scale_2.has_value());
  EXPECT_EQ(c.generation.negative_prompt, "12");
  EXPECT_EQ(c.generation.cache.policy, CachePolicy::first_block);
  EXPECT_EQ(c.generation.cache.threshold, 0.5);
  EXPECT_EQ(c.model.dtype, DType::bf16);
  EXPECT_FALSE(c.model.fused_kernels);
  EXPECT_EQ(c.model.path, "p");
  EXPECT_EQ(c.parallel.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(c.parallel.data_parallel_size, 0);
}

// Issue 52, class 4: deep nesting crashed the recursive readers. Lists and maps nest at most
// kMaxValueNesting levels (the document's map is level 1), in block and flow style, in a file
// and in --set; deeper is an error naming the line and the key (beyond yaml-cpp's own guard of
// a few hundred levels, its line and column).
TEST(ConfigParse, NestingDeeperThanTheLimitIsAnErrorNamingTheLineAndKey) {
  const auto repeat = [](const std::string& text, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += text;
    return out;
  };
  const std::string too_deep = ": nested deeper than 64 levels of lists and maps";
  // faults.fail_ids is level 3: 62 lists in it are level 64, read (and refused by the key).
  EXPECT_EQ(parse_error("faults:\n  fail_ids: " + repeat("[", 62) + repeat("]", 62) + "\n"),
            "faults.fail_ids[0]: expected a string, got a list");
  EXPECT_EQ(parse_error("faults:\n  fail_ids: " + repeat("[", 63) + repeat("]", 63) + "\n"),
            "test.yaml:2: faults.fail_ids" + repeat("[0]", 62) + too_deep);
  EXPECT_EQ(parse_error("generation:\n  cache: " + repeat("{a: ", 63) + "1" + repeat("}", 63) + "\n"),
            "test.yaml:2: generation.cache" + repeat(".a", 62) + too_deep);
  EXPECT_EQ(
      parse_error("generation:\n  cache: " + repeat("[{a: ", 40) + "1" + repeat("}]", 40) + "\n"),
      "test.yaml:2: generation.cache" + repeat("[0].a", 31) + too_deep);
  // Block style: the map holding a64 is level 65, on line 65.
  std::string block;
  std::string path;
  for (int i = 0; i < 70; ++i) {
    block += std::string(static_cast<std::size_t>(2 * i), ' ') + "a" + std::to_string(i) + ":\n";
    if (i < 64) path += (i > 0 ? ".a" : "a") + std::to_string(i);
  }
  EXPECT_EQ(parse_error(block), "test.yaml:65: " + path + too_deep);
  EXPECT_EQ(parse_error("generation:\n  cache: " + repeat("[", 300) + repeat("]", 300) + "\n"),
            "test.yaml:2: generation.cache" + repeat("[0]", 62) + too_deep);
  // Beyond yaml-cpp's guard (a few hundred levels): its position, never a crash.
  for (const int levels : {1000, 100000}) {
    SCOPED_TRACE(levels);
    const std::string flow = repeat("[", levels) + repeat("]", levels);
    const std::string file_error = parse_error("generation:\n  cache: " + flow + "\n");
    EXPECT_EQ(file_error.rfind("test.yaml:2:", 0), 0U) << file_error;
    EXPECT_TRUE(file_error.ends_with(too_deep)) << file_error;
    const std::string set_error = override_error({"generation.cache=" + flow});
    EXPECT_EQ(set_error.rfind("--set generation.cache:1:", 0), 0U) << set_error;
    EXPECT_TRUE(set_error.ends_with(too_deep)) << set_error;
  }
  // A --set value counts from its key's level (generation.cache is level 3).
  EXPECT_EQ(override_error({"generation.cache=" + repeat("[", 62) + repeat("]", 62)}),
            "generation.cache: expected off | first_block | taylorseer | magcache, or a map with "
            "a policy, got a list");
  EXPECT_EQ(override_error({"generation.cache=" + repeat("[", 63) + repeat("]", 63)}),
            "--set: generation.cache" + repeat("[0]", 62) + too_deep);
}

TEST(ConfigParse, WrongTypesNameThePathAndTheValue) {
  EXPECT_EQ(parse_error("generation: {num_frames: abc}\n"),
            "generation.num_frames: expected an integer, got 'abc'");
  EXPECT_EQ(parse_error("generation: {num_frames: 9.5}\n"),
            "generation.num_frames: expected an integer, got '9.5'");
  EXPECT_EQ(parse_error("generation: {num_frames: \"9\"}\n"),
            "generation.num_frames: expected an integer, got the string '9'");
  EXPECT_EQ(parse_error("generation: {num_frames: [9]}\n"),
            "generation.num_frames: expected an integer, got a list");
  EXPECT_EQ(parse_error("generation:\n  num_frames:\n"),
            "generation.num_frames: expected an integer, got null");
  EXPECT_EQ(parse_error("generation: {num_frames: 99999999999}\n"),
            "generation.num_frames: '99999999999' is out of range for this key");
  EXPECT_EQ(parse_error("generation: {seed: -1}\n"),
            "generation.seed: expected a non-negative integer, got '-1'");
  EXPECT_EQ(parse_error("generation: {guidance_scale: high}\n"),
            "generation.guidance_scale: expected a finite number, got 'high'");
  EXPECT_EQ(parse_error("generation: {guidance_scale: nan}\n"),
            "generation.guidance_scale: expected a finite number, got 'nan'");
  EXPECT_EQ(parse_error("output: {store_video: maybe}\n"),
            "output.store_video: expected true or false, got 'maybe'");
  EXPECT_EQ(parse_error("model: {name: {a: 1}}\n"), "model.name: expected a string, got a map");
  EXPECT_EQ(parse_error("faults: {fail_ids: a}\n"),
            "faults.fail_ids: expected a list of strings, got 'a'");
  EXPECT_EQ(parse_error("faults: {fail_ids: [a, [b]]}\n"),
            "faults.fail_ids[1]: expected a string, got a list");
  EXPECT_EQ(parse_error("model: tiny-wan\n"), "model: expected a map of keys, got 'tiny-wan'");
  EXPECT_EQ(parse_error("- a\n- b\n"),
            "<top level>: expected a map of sections (model, parallel, scheduler, generation, "
            "input, output, determinism, runtime, synthetic, faults), got a list");
  EXPECT_EQ(parse_error("parallel: {data_parallel_size: many}\n"),
            "parallel.data_parallel_size: expected an integer, got 'many'");
  EXPECT_EQ(parse_error("parallel: {data_parallel_size: 0}\n"),
            "parallel.data_parallel_size: 0 is out of range (expected 'auto' or an integer >= 1)");
  EXPECT_EQ(parse_error("parallel: {devices: gpu}\n"),
            "parallel.devices: expected 'auto' or a list of devices, got 'gpu'");
  EXPECT_EQ(parse_error("parallel: {devices: []}\n"),
            "parallel.devices: an empty list (write 'auto' for the default)");
}

TEST(ConfigParse, BadEnumsListTheValuesAndSuggest) {
  EXPECT_EQ(
      parse_error("model: {dtype: bf32}\n"),
      "model.dtype: invalid value 'bf32' (expected fp32 | bf16 | fp16; did you mean 'bf16'?)");
  EXPECT_EQ(parse_error("model: {device: tpu}\n"),
            "model.device: invalid value 'tpu' (expected cuda | cpu; did you mean 'cpu'?)");
  EXPECT_EQ(parse_error("model: {weights: pretrain}\n"),
            "model.weights: invalid value 'pretrain' (expected pretrained | random; did you mean "
            "'pretrained'?)");
  EXPECT_EQ(parse_error("scheduler: {policy: roundrobin}\n"),
            "scheduler.policy: invalid value 'roundrobin' (expected dynamic | round_robin; did you "
            "mean 'round_robin'?)");
  EXPECT_EQ(parse_error("scheduler: {order: random}\n"),
            "scheduler.order: invalid value 'random' (expected cost_desc | manifest)");
  EXPECT_EQ(parse_error("output: {file_locking: yes}\n"),
            "output.file_locking: invalid value 'yes' (expected auto | on | off)");
  EXPECT_EQ(parse_error("synthetic: {wait: spin}\n"),
            "synthetic.wait: invalid value 'spin' (expected sleep | busy)");
  EXPECT_EQ(
      parse_error("model: {attention: cudn}\n"),
      "model.attention: invalid value 'cudn' (expected auto | flash | cudnn | efficient | math; "
      "did you mean 'cudnn'?)");
}

TEST(ConfigParse, AttentionKernels) {
  EXPECT_EQ(parse_config_yaml("model: {name: tiny-wan}\n", "t").model.attention,
            AttentionKernel::automatic);
  EXPECT_EQ(parse_config_yaml("model: {attention: cudnn}\n", "t").model.attention,
            AttentionKernel::cudnn);
  EXPECT_EQ(parse_config_yaml("model: {attention: flash}\n", "t").model.attention,
            AttentionKernel::flash);
}

TEST(ConfigParse, BadCompression) {
  for (const char* bad : {"gzip", "gzip:0", "gzip:10", "zstd", "gzip:a", "GZIP:3"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(parse_error(std::string("output: {compression: \"") + bad + "\"}\n"),
              std::string("output.compression: invalid value '") + bad +
                  "' (expected none | gzip:1-9 | lzf)");
  }
  for (int level = 1; level <= 9; ++level) {
    const Config c =
        parse_config_yaml("output: {compression: gzip:" + std::to_string(level) + "}\n", "t");
    EXPECT_EQ(c.output.gzip_level, level);
    EXPECT_EQ(compression_string(c.output), "gzip:" + std::to_string(level));
  }
}

TEST(ConfigParse, SyntaxErrorsNameTheOriginLineAndColumn) {
  const std::string message = parse_error("model:\n  name: [tiny\n");
  EXPECT_EQ(message.rfind("test.yaml:", 0), 0U) << message;
  EXPECT_NE(message.find("invalid YAML"), std::string::npos) << message;
}

// --- validation ------------------------------------------------------------------------------

TEST(ConfigValidate, MetricsTextfileEndsInPromAndIntervalIsPositive) {
  EXPECT_EQ(validate_error("output: {metrics_textfile: /var/lib/node_exporter/omnidp.prom}\n"), "");
  EXPECT_EQ(validate_error("output: {metrics_textfile: ''}\n"), "");  // off
  EXPECT_EQ(validate_error("output: {metrics_textfile: /tmp/omnidp.txt}\n"),
            "output.metrics_textfile: '/tmp/omnidp.txt' does not end in .prom (node_exporter's "
            "textfile collector reads only *.prom files)");
  EXPECT_EQ(validate_error("output: {metrics_textfile: .prom}\n"),
            "output.metrics_textfile: '.prom' does not end in .prom (node_exporter's textfile "
            "collector reads only *.prom files)");
  EXPECT_EQ(validate_error("output: {metrics_interval_s: 0}\n"),
            "output.metrics_interval_s: 0.0 is out of range (expected a finite number > 0)");
  EXPECT_EQ(validate_error("output: {metrics_interval_s: 0.5}\n"), "");
  const Config c =
      parse_config_yaml("output: {metrics_textfile: m.prom, metrics_interval_s: 2}\n", "test.yaml");
  EXPECT_EQ(c.output.metrics_textfile, "m.prom");
  EXPECT_EQ(c.output.metrics_interval_s, 2.0);
  EXPECT_EQ(default_config().output.metrics_interval_s, 5.0);
}

TEST(ConfigValidate, FramesMustBe4kPlus1InRange) {
  EXPECT_EQ(validate_error("generation: {num_frames: 10}\n"),
            "generation.num_frames: 10 is not of the form 4k+1 (e.g. 9 or 13)");
  EXPECT_EQ(validate_error("generation: {num_frames: 0}\n"),
            "generation.num_frames: 0 is out of range [1, 1025]");
  EXPECT_EQ(validate_error("generation: {num_frames: -5}\n"),
            "generation.num_frames: -5 is out of range [1, 1025]");
  EXPECT_EQ(validate_error("generation: {num_frames: 1000000000}\n"),
            "generation.num_frames: 1000000000 is out of range [1, 1025]");
  EXPECT_EQ(validate_error("generation: {num_frames: 1}\n"), "");
  EXPECT_EQ(validate_error("generation: {num_frames: 1025}\n"), "");
}

TEST(ConfigValidate, SizesMustBeMultiplesOf16InRange) {
  EXPECT_EQ(validate_error("generation: {height: 500}\n"),
            "generation.height: 500 is not a multiple of 16 (e.g. 496 or 512)");
  EXPECT_EQ(validate_error("generation: {width: 1}\n"),
            "generation.width: 1 is out of range [16, 4096]");
  EXPECT_EQ(validate_error("generation: {width: 8192}\n"),
            "generation.width: 8192 is out of range [16, 4096]");
  EXPECT_EQ(validate_error("generation: {height: 16, width: 4096}\n"), "");
}

TEST(ConfigValidate, GenerationRanges) {
  EXPECT_EQ(validate_error("generation: {num_inference_steps: 0}\n"),
            "generation.num_inference_steps: 0 is out of range [1, 1000]");
  EXPECT_EQ(validate_error("generation: {num_inference_steps: 100000}\n"),
            "generation.num_inference_steps: 100000 is out of range [1, 1000]");
  EXPECT_EQ(validate_error("generation: {guidance_scale: -0.5}\n"),
            "generation.guidance_scale: -0.5 is out of range (expected a number in [0, 100])");
  EXPECT_EQ(validate_error("generation: {guidance_scale: 1e300}\n"),
            "generation.guidance_scale: 1e+300 is out of range (expected a number in [0, 100])");
  EXPECT_EQ(validate_error("generation: {guidance_scale: 100, flow_shift: 100}\n"), "");
  EXPECT_EQ(validate_error("generation: {flow_shift: 0}\n"),
            "generation.flow_shift: 0.0 is out of range (expected a number in (0, 100])");
  EXPECT_EQ(validate_error("generation: {flow_shift: 100.5}\n"),
            "generation.flow_shift: 100.5 is out of range (expected a number in (0, 100])");
  EXPECT_EQ(validate_error("generation: {fps: 0}\n"), "generation.fps: 0 is out of range [1, 240]");
  EXPECT_EQ(validate_error("generation: {seed: 9223372036854775808}\n"),
            "generation.seed: 9223372036854775808 is out of range [0, 2^63-1]");
  EXPECT_EQ(validate_error("generation: {guidance_scale: 0, seed: 0}\n"), "");
}

TEST(ConfigValidate, ModelRules) {
  EXPECT_EQ(
      validate_error("model: {name: tiny-wna}\n"),
      "model.name: unknown model 'tiny-wna' (expected synthetic | tiny-wan | wan2.2-ti2v-5b | "
      "wan | wan2.2-t2v-a14b | wan2.2-i2v-a14b | hunyuanvideo-1.5 | wan2.1-i2v-14b; did you "
      "mean 'tiny-wan'?)");
  EXPECT_EQ(validate_error("model: {name: wan2.2-ti2v-5b, weights: pretrained}\n"),
            "model.path: required when model.weights is 'pretrained' (got '')");
  EXPECT_EQ(validate_error("model: {name: synthetic, weights: pretrained, path: /m}\n"),
            "model.weights: 'pretrained' is not available for model 'synthetic', which has no "
            "weights (use random)");
  EXPECT_EQ(validate_error("model: {torch_threads: -1}\n"),
            "model.torch_threads: -1 is out of range [0, 1024]");
}

TEST(ConfigValidate, ParallelRules) {
  EXPECT_EQ(validate_error("parallel: {tensor_parallel_size: 0}\n"),
            "parallel.tensor_parallel_size: 0 is out of range [1, 1024]");
  EXPECT_EQ(validate_error("parallel: {cfg_parallel_size: 3}\n"),
            "parallel.cfg_parallel_size: 3 is not allowed (expected 1 or 2)");
  EXPECT_EQ(
      validate_error("model: {device: cuda}\nparallel: {devices: [0, gpu1]}\n"),
      "parallel.devices[1]: invalid device 'gpu1' (expected cpu, cuda:N or a CUDA ordinal N)");
  EXPECT_EQ(validate_error("model: {device: cpu}\nparallel: {devices: [\"cuda:0\"]}\n"),
            "parallel.devices[0]: device 'cuda:0' with model.device cpu (expected cpu)");
  EXPECT_EQ(validate_error("model: {device: cuda}\nparallel: {devices: [cpu]}\n"),
            "parallel.devices[0]: device 'cpu' with model.device cuda (expected cuda:N or N)");
  EXPECT_EQ(validate_error("model: {device: cuda}\nparallel: {devices: [\"cuda:3\", 2], "
                           "cfg_parallel_size: 2}\n"),
            "");
}

TEST(ConfigValidate, SequenceParallelSplitsTheModelsHeads) {
  EXPECT_EQ(
      validate_error("model: {name: wan2.2-ti2v-5b}\nparallel: {sequence_parallel_size: 4}\n"), "");
  EXPECT_EQ(
      validate_error("model: {name: hunyuanvideo-1.5}\nparallel: {sequence_parallel_size: 8}\n"),
      "");
  EXPECT_EQ(
      validate_error("model: {name: wan2.2-ti2v-5b}\nparallel: {sequence_parallel_size: 5}\n"),
      "parallel.sequence_parallel_size: 5 does not divide the 24 attention heads of model "
      "'wan2.2-ti2v-5b' (Ulysses shards the heads over the sequence group: use a divisor of 24)");
  EXPECT_EQ(
      validate_error("model: {name: hunyuanvideo-1.5}\nparallel: {sequence_parallel_size: 3}\n"),
      "parallel.sequence_parallel_size: 3 does not divide the 16 attention heads of model "
      "'hunyuanvideo-1.5' (Ulysses shards the heads over the sequence group: use a divisor of 16)");
  EXPECT_EQ(validate_error("model: {name: tiny-wan}\nparallel: {sequence_parallel_size: 4}\n"),
            "parallel.sequence_parallel_size: 4 does not divide the 2 attention heads of model "
            "'tiny-wan' (Ulysses shards the heads over the sequence group: use a divisor of 2)");
  // A model without a head count (synthetic) takes any size.
  EXPECT_EQ(validate_error("model: {name: synthetic}\nparallel: {sequence_parallel_size: 3}\n"), "");
}

TEST(ConfigValidate, UlyssesDegreeIsTheSequenceParallelSize) {
  Config config = parse_config_yaml(
      "model: {name: wan2.2-ti2v-5b}\nparallel: {ulysses_degree: 4}\ninput: {manifest: m.jsonl}\n",
      "t.yaml");
  validate_and_resolve(config, kModels);
  EXPECT_EQ(config.parallel.sequence_parallel_size, 4);
  validate_and_resolve(config, kModels);  // idempotent: both now say 4
  EXPECT_EQ(config.parallel.sequence_parallel_size, 4);
  Config back = parse_config_yaml(to_yaml(config), "to_yaml");
  EXPECT_EQ(back.parallel, config.parallel);
  EXPECT_EQ(validate_error("model: {name: wan2.2-ti2v-5b}\nparallel: {ulysses_degree: 2, "
                           "sequence_parallel_size: 2}\n"),
            "");
  EXPECT_EQ(validate_error("model: {name: wan2.2-ti2v-5b}\nparallel: {ulysses_degree: 2, "
                           "sequence_parallel_size: 4}\n"),
            "parallel.ulysses_degree: 2 disagrees with parallel.sequence_parallel_size 4 (the same "
            "setting "
            "under its two names: set one)");
  EXPECT_EQ(
      validate_error("model: {name: wan2.2-ti2v-5b}\nparallel: {ulysses_degree: 5}\n"),
      "parallel.sequence_parallel_size: 5 does not divide the 24 attention heads of model "
      "'wan2.2-ti2v-5b' (Ulysses shards the heads over the sequence group: use a divisor of 24)");
  EXPECT_EQ(validate_error("parallel: {ulysses_degree: -1}\n"),
            "parallel.ulysses_degree: -1 is out of range [1, 1024]");
  // Unset, it is not written back.
  EXPECT_EQ(to_yaml(default_config()).find("ulysses_degree"), std::string::npos);
}

TEST(ConfigValidate, TensorParallelNeedsAModelThatImplementsIt) {
  EXPECT_EQ(
      validate_error("model: {name: tiny-wan}\nparallel: {tensor_parallel_size: 2}\n"),
      "parallel.tensor_parallel_size: 2: tensor parallelism is not implemented by model 'tiny-wan' "
      "(expected 1)");
  std::vector<ModelChoice> models = kModels;
  models[1].tensor_parallel = true;
  EXPECT_EQ(
      validate_error("model: {name: tiny-wan}\nparallel: {tensor_parallel_size: 2}\n", models), "");
}

TEST(ConfigValidate, VaeTilingNeedsAModelThatImplementsIt) {
  EXPECT_EQ(parse_error("model: {vae_tiling: maybe}\n"),
            "model.vae_tiling: expected true or false, got 'maybe'");
  EXPECT_EQ(validate_error("model: {name: tiny-wan, vae_tiling: true}\n"),
            "model.vae_tiling: true: a tiled VAE decode is not implemented by model 'tiny-wan' "
            "(expected false; HunyuanVideo-1.5 has it)");
  std::vector<ModelChoice> models = kModels;
  models[1].vae_tiling = true;
  EXPECT_EQ(validate_error("model: {name: tiny-wan, vae_tiling: true}\n", models), "");
  // Written back into the effective configuration.
  Config config = default_config();
  config.model.vae_tiling = true;
  EXPECT_NE(to_yaml(config).find("  vae_tiling: true\n"), std::string::npos);
}

TEST(ConfigValidate, Fp8QuantizationNeedsAModelThatImplementsItOnTheGpuInBf16) {
  EXPECT_EQ(parse_error("model: {quantization: int4}\n"),
            "model.quantization: invalid value 'int4' (expected none | fp8)");
  EXPECT_EQ(validate_error("model: {name: tiny-wan, quantization: fp8}\n"),
            "model.quantization: fp8: FP8 quantization is not implemented by model 'tiny-wan' "
            "(expected none)");
  std::vector<ModelChoice> models = kModels;
  models[1].fp8 = true;
  const auto error = [&](const std::string& yaml) { return validate_error(yaml, models); };
  EXPECT_EQ(error("model: {name: tiny-wan, quantization: fp8}\n"),
            "model.quantization: fp8 needs model.device cuda and model.dtype bf16 (got cpu, fp32)");
  EXPECT_EQ(
      error("model: {name: tiny-wan, quantization: fp8, device: cuda, dtype: fp16}\n"),
      "model.quantization: fp8 needs model.device cuda and model.dtype bf16 (got cuda, fp16)");
  EXPECT_EQ(error("model: {name: tiny-wan, quantization: fp8, device: cuda, dtype: bf16}\n"), "");
  EXPECT_EQ(error("model: {name: tiny-wan, quantization: none}\n"), "");
  // Written back into the effective configuration.
  Config config = default_config();
  config.model.quantization = Quantization::fp8;
  EXPECT_NE(to_yaml(config).find("  quantization: fp8\n"), std::string::npos);
}

// model.expert_residency (docs/models.md, "Two experts"): swap is for the GPU, with bf16 experts.
TEST(ConfigValidate, ExpertSwapNeedsTheGpuAndNoFp8) {
  EXPECT_EQ(parse_error("model: {expert_residency: offload}\n"),
            "model.expert_residency: invalid value 'offload' (expected resident | swap)");
  EXPECT_EQ(validate_error("model: {name: tiny-wan, expert_residency: swap}\n"),
            "model.expert_residency: swap keeps the idle expert in host memory: it needs "
            "model.device cuda (on the CPU both experts are in host memory already)");
  std::vector<ModelChoice> models = kModels;
  models[1].fp8 = true;
  EXPECT_EQ(validate_error("model: {name: tiny-wan, expert_residency: swap, device: cuda, dtype: "
                           "bf16, quantization: fp8}\n",
                           models),
            "model.expert_residency: swap with model.quantization fp8 is not supported (the "
            "experts move as bf16 weights)");
  EXPECT_EQ(validate_error("model: {name: tiny-wan, expert_residency: resident}\n"), "");
  Config swap = default_config();
  swap.model.expert_residency = ExpertResidency::swap;
  EXPECT_NE(to_yaml(swap).find("  expert_residency: swap\n"), std::string::npos);
}

TEST(ConfigValidate, SchedulerRules) {
  EXPECT_EQ(validate_error("scheduler: {prefetch: -1}\n"),
            "scheduler.prefetch: -1 is out of range [0, 1024]");
  EXPECT_EQ(validate_error("scheduler: {max_retries: -2}\n"),
            "scheduler.max_retries: -2 is out of range [0, 100]");
  EXPECT_EQ(validate_error("scheduler: {request_timeout_s: -1}\n"),
            "scheduler.request_timeout_s: -1.0 is out of range (expected a finite number >= 0)");
  EXPECT_EQ(validate_error("scheduler: {heartbeat_s: 0}\n"),
            "scheduler.heartbeat_s: 0.0 is out of range (expected a finite number > 0)");
  EXPECT_EQ(validate_error("scheduler: {deadline_margin_s: -1}\n"),
            "scheduler.deadline_margin_s: -1.0 is out of range (expected a finite number >= 0)");
  EXPECT_EQ(validate_error("scheduler: {lookahead: 0}\n"),
            "scheduler.lookahead: 0 is out of range [1, 100000000]");
}

TEST(ConfigValidate, InputOutputAndFaultRules) {
  EXPECT_EQ(validate_error("input: {manifest: \"\"}\n"), "input.manifest: required (got '')");
  EXPECT_EQ(validate_error("input: {manifest: m, max_line_bytes: 10}\n"),
            "input.max_line_bytes: 10 is out of range [256, 1073741824]");
  EXPECT_EQ(validate_error("input: {manifest: m, max_image_pixels: 0}\n"),
            "input.max_image_pixels: 0 is out of range [1, 4294967296]");
  EXPECT_EQ(validate_error("input: {manifest: m, max_image_aspect: 0.5}\n"),
            "input.max_image_aspect: 0.5 is out of range (expected a number in [1, 1e6])");
  EXPECT_EQ(validate_error("input: {manifest: m, max_image_aspect: 1e7}\n"),
            "input.max_image_aspect: 1e+07 is out of range (expected a number in [1, 1e6])");
  EXPECT_EQ(validate_error("input: {manifest: m, max_image_aspect: 1}\n"), "");
  EXPECT_EQ(validate_error("output: {dir: \"\"}\n"), "output.dir: required (got '')");
  EXPECT_EQ(validate_error("output: {export: [mp4, webm]}\n"),
            "output.export[1]: unknown format 'webm' (expected mp4, png or gif)");
  EXPECT_EQ(validate_error("output: {export: [png, gif, png]}\n"),
            "output.export[2]: format 'png' is listed twice");
  EXPECT_EQ(validate_error("output: {export: [mp4, png, gif]}\n"), "");
  EXPECT_EQ(validate_error("runtime: {peak_tflops: 0}\n"),
            "runtime.peak_tflops: 0.0 is out of range (expected a finite number > 0)");
  EXPECT_EQ(validate_error("runtime: {peak_tflops: -989.4}\n"),
            "runtime.peak_tflops: -989.4 is out of range (expected a finite number > 0)");
  EXPECT_EQ(parse_error("runtime: {peak_tflops: .inf}\n"),
            "runtime.peak_tflops: expected a finite number, got '.inf'");
  EXPECT_EQ(validate_error("runtime: {peak_tflops: 756}\n"), "");
  EXPECT_EQ(validate_error("runtime: {peak_tflops: null}\n"), "");  // the device table
  EXPECT_EQ(validate_error("synthetic: {seconds_per_gcost: -1}\n"),
            "synthetic.seconds_per_gcost: -1.0 is out of range (expected a finite number >= 0)");
  EXPECT_EQ(validate_error("faults: {fail_ids: [a, \"\"]}\n"), "faults.fail_ids[1]: an empty id");
  EXPECT_EQ(validate_error("faults: {kill_rank: -2}\n"),
            "faults.kill_rank: -2 is out of range (expected >= -1; -1 = off)");
  EXPECT_EQ(validate_error("faults: {drain_after: -1}\n"),
            "faults.drain_after: -1 is out of range (expected >= 0; 0 = off)");
  EXPECT_EQ(validate_error("faults: {kill_after: -1}\n"),
            "faults.kill_after: -1 is out of range (expected >= 0; 0 = off)");
}

TEST(ConfigValidate, ProgrammaticBadValuesAreCaughtToo) {
  Config c = default_config();
  c.output.compression = CompressionKind::gzip;
  c.output.gzip_level = 0;
  try {
    validate_and_resolve(c, kModels);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "output.compression: 0 is out of range [1, 9]");
    EXPECT_EQ(e.path(), "output.compression");
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
  }
  Config d = default_config();
  d.parallel.data_parallel_size = -1;
  EXPECT_THROW(validate_and_resolve(d, kModels), ConfigError);
}

TEST(ConfigValidate, PathsResolveAgainstTheConfigFolderAndOutputAgainstCwd) {
  TempDir dir;
  fs::create_directories(dir.path() / "job");
  write_file(dir.path() / "job" / "c.yaml",
             "model: {name: wan2.2-ti2v-5b, weights: pretrained, path: ../models/wan}\n"
             "input: {manifest: prompts/p.jsonl}\noutput: {dir: out/run1}\n");
  Config c = load_config_file(dir.path() / "job" / "c.yaml");
  EXPECT_EQ(c.source_file, (dir.path() / "job" / "c.yaml").lexically_normal());
  validate_and_resolve(c, kModels);
  EXPECT_EQ(c.input.manifest, (dir.path() / "job" / "prompts" / "p.jsonl").string());
  EXPECT_EQ(c.model.path, (dir.path() / "models" / "wan").string());
  EXPECT_EQ(c.output.dir, (fs::current_path() / "out" / "run1").string());
  // Idempotent: resolving again changes nothing.
  const Config once = c;
  validate_and_resolve(c, kModels);
  EXPECT_EQ(c, once);
  // Absolute paths stay as they are.
  Config abs =
      parse_config_yaml("input: {manifest: /data/m.jsonl}\noutput: {dir: /scratch/o}\n", "t");
  validate_and_resolve(abs, kModels);
  EXPECT_EQ(abs.input.manifest, "/data/m.jsonl");
  EXPECT_EQ(abs.output.dir, "/scratch/o");
}

TEST(ConfigValidate, UnreadableFileIsAConfigError) {
  TempDir dir;
  const fs::path missing = dir.path() / "missing.yaml";
  try {
    (void)load_config_file(missing);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              missing.string() + ": cannot read the config file: no such file or not readable");
  }
  try {
    (void)load_config_file(dir.path());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.path().string() + ": cannot read the config file: it is a folder");
  }
  // Issue 39, class 13: /dev/null was read as an empty file (every default), not refused.
  try {
    (void)load_config_file("/dev/null");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/null: cannot read the config file: it is a character device, not a regular "
              "file");
  }
}

// Issue 39, class 10: a second document (after '---') was read as nothing; refused with the
// line of its marker. A leading '---' and a closing '...' are one document.
TEST(ConfigParse, ASecondYamlDocumentIsRefusedWithItsLine) {
  const auto error_of = [](const std::string& text) {
    try {
      (void)parse_config_yaml(text, "c.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string second =
      ": a second YAML document starts here: a configuration holds one document (remove this "
      "'---' and what follows it, or merge the two)";
  EXPECT_EQ(error_of("model:\n  name: synthetic\n---\nmodel:\n  name: tiny-wan\n"),
            "c.yaml:3" + second);
  EXPECT_EQ(error_of("model:\n  name: synthetic\n---\n"), "c.yaml:3" + second);
  EXPECT_EQ(error_of("generation:\n  fps: 8\n--- # two\n\n# c\ngeneration:\n  fps: 9\n"),
            "c.yaml:3" + second);
  EXPECT_EQ(parse_config_yaml("---\ngeneration:\n  fps: 8\n", "c.yaml").generation.fps, 8);
  EXPECT_EQ(parse_config_yaml("generation:\n  fps: 8\n...\n", "c.yaml").generation.fps, 8);
}

// --- overrides -------------------------------------------------------------------------------

TEST(ConfigOverrides, SetsAnyKeyIncludingListsAndSpecialForms) {
  Config c = default_config();
  apply_overrides(
      c, {"scheduler.policy=round_robin", "generation.num_frames=17", "parallel.devices=[cpu, cpu]",
          "faults.fail_ids=[x, 'y z']", "output.compression=gzip:9",
          "parallel.data_parallel_size=2", "generation.negative_prompt=blurry, low quality",
          "model.path=a=b", "generation.guidance_scale=3.25", "determinism.strict=false"});
  EXPECT_EQ(c.scheduler.policy, SchedulerPolicy::round_robin);
  EXPECT_EQ(c.generation.num_frames, 17);
  EXPECT_EQ(c.parallel.devices, (std::vector<std::string>{"cpu", "cpu"}));
  EXPECT_EQ(c.faults.fail_ids, (std::vector<std::string>{"x", "y z"}));
  EXPECT_EQ(c.output.gzip_level, 9);
  EXPECT_EQ(c.parallel.data_parallel_size, 2);
  EXPECT_EQ(c.generation.negative_prompt, "blurry, low quality");
  EXPECT_EQ(c.model.path, "a=b");
  EXPECT_EQ(c.generation.guidance_scale, 3.25);
  EXPECT_FALSE(c.determinism.strict);
  // Later assignments win.
  apply_overrides(c, {"generation.num_frames=5", "generation.num_frames=13"});
  EXPECT_EQ(c.generation.num_frames, 13);
  apply_overrides(c, {"parallel.devices=auto", "parallel.data_parallel_size=auto"});
  EXPECT_TRUE(c.parallel.devices.empty());
  EXPECT_EQ(c.parallel.data_parallel_size, 0);
}

// Issue 52, class 15: a key path with an empty name was read as the names around the gap
// (".x=5" said "unknown key" of nothing, "a..b=5" named only "a"); every such path is refused,
// naming the assignment and the path as given.
TEST(ConfigOverrides, AKeyPathWithAnEmptyNameIsAnError) {
  EXPECT_EQ(override_error({".x=5"}),
            "--set: '.x=5': the key path '.x' has an empty name (expected section.key=value)");
  EXPECT_EQ(override_error({"x.=5"}),
            "--set: 'x.=5': the key path 'x.' has an empty name (expected section.key=value)");
  EXPECT_EQ(override_error({"a..b=5"}),
            "--set: 'a..b=5': the key path 'a..b' has an empty name (expected section.key=value)");
  EXPECT_EQ(override_error({"scheduler.=dynamic"}),
            "--set: 'scheduler.=dynamic': the key path 'scheduler.' has an empty name (expected "
            "section.key=value)");
  EXPECT_EQ(override_error({".scheduler.policy=dynamic"}),
            "--set: '.scheduler.policy=dynamic': the key path '.scheduler.policy' has an empty "
            "name (expected section.key=value)");
  EXPECT_EQ(override_error({"scheduler..policy=dynamic"}),
            "--set: 'scheduler..policy=dynamic': the key path 'scheduler..policy' has an empty "
            "name (expected section.key=value)");
  EXPECT_EQ(override_error({"=5"}),
            "--set: '=5': the key path is empty (expected section.key=value)");
  EXPECT_EQ(override_error({"="}),
            "--set: '=': the key path is empty (expected section.key=value)");
  // A good assignment after a bad one is never applied: the first error stops the list.
  EXPECT_EQ(override_error({"a..b=5", "scheduler.policy=round_robin"}),
            "--set: 'a..b=5': the key path 'a..b' has an empty name (expected section.key=value)");
}

TEST(ConfigOverrides, ErrorsAreTheSameAsInAFile) {
  EXPECT_EQ(override_error({"scheduler.polcy=dynamic"}),
            "scheduler.polcy: unknown key (did you mean 'policy'?)");
  EXPECT_EQ(override_error({"schedular.policy=dynamic"}),
            "schedular: unknown key (did you mean 'scheduler'?)");
  EXPECT_EQ(override_error({"model.name.x=1"}), "model.name.x: unknown key (did you mean 'name'?)");
  EXPECT_EQ(override_error({"generation.num_frames=many"}),
            "generation.num_frames: expected an integer, got 'many'");
  EXPECT_EQ(override_error({"generation.num_frames="}),
            "generation.num_frames: expected an integer, got null");
  EXPECT_EQ(
      override_error({"model.dtype=bf17"}),
      "model.dtype: invalid value 'bf17' (expected fp32 | bf16 | fp16; did you mean 'bf16'?)");
  EXPECT_EQ(override_error({"noequals"}), "--set: 'noequals' is not of the form section.key=value");
  EXPECT_EQ(override_error({"=3"}),
            "--set: '=3': the key path is empty (expected section.key=value)");
  EXPECT_EQ(override_error({"determinism=1"}),
            "determinism: a section, not a key: use determinism.KEY=value (keys: strict)");
  EXPECT_EQ(override_error({"faults.fail_ids=[a, [b]]"}),
            "faults.fail_ids[1]: expected a string, got a list");
  // Ranges are checked by validate_and_resolve, as for a file.
  Config c = default_config();
  apply_overrides(c, {"generation.height=100"});
  try {
    validate_and_resolve(c, kModels);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "generation.height: 100 is not a multiple of 16 (e.g. 96 or 112)");
  }
}

// --- to_yaml ---------------------------------------------------------------------------------

void expect_round_trip(const Config& config) {
  const std::string text = to_yaml(config);
  Config back = parse_config_yaml(text, "to_yaml");
  back.source_file = config.source_file;  // not part of the YAML
  EXPECT_EQ(back, config) << text;
  EXPECT_EQ(to_yaml(back), text);
}

TEST(ConfigToYaml, RoundTripsExactly) {
  expect_round_trip(Config{});
  expect_round_trip(default_config());
  for (const char* name : kShippedConfigs) {
    SCOPED_TRACE(name);
    Config c = load_config_file(fs::path(OMNIDP_SOURCE_DIR) / "configs" / name);
    expect_round_trip(c);
    validate_and_resolve(c, kModels);
    expect_round_trip(c);
  }
}

TEST(ConfigToYaml, RoundTripsAwkwardValues) {
  Config c;
  c.model.name = "null";
  c.model.path = "  /models/with spaces and: colon # hash ";
  c.model.weights_seed = 18446744073709551615ULL;
  c.parallel.data_parallel_size = 7;
  c.parallel.devices = {"0", "cuda:1", "cpu"};
  c.generation.negative_prompt = "multi\nline \"quoted\" 'single' 日本語 ~";
  c.generation.guidance_scale = 0.1 + 0.2;  // 0.30000000000000004 survives
  c.generation.flow_shift = 1e-300;
  c.generation.seed = 9223372036854775807ULL;
  c.scheduler.request_timeout_s = 123456789.125;
  c.output.compression = CompressionKind::gzip;
  c.output.gzip_level = 3;
  c.output.dir = "";
  c.output.export_formats = {"", "true", "123", "[x]", "- y"};
  c.faults.fail_ids = {"a/b", "#c", "d: e", "~", "yes", "a, b", "x]", "{y}", "&z", "*w", "!t"};
  c.runtime.peak_tflops = 989.4;
  expect_round_trip(c);
}

// runtime.peak_tflops: unset (the device table) is left out, and with it the section, which
// then has no key; a value is written and read back, and --set takes it like any key.
TEST(ConfigRuntime, PeakTflopsUnsetSetAndOverridden) {
  EXPECT_EQ(to_yaml(Config{}).find("runtime:"), std::string::npos) << to_yaml(Config{});
  expect_round_trip(Config{});
  Config c = parse_config_yaml("runtime: {peak_tflops: 756}\n", "a.yaml");
  EXPECT_EQ(c.runtime.peak_tflops, 756.0);
  EXPECT_NE(to_yaml(c).find("runtime:\n  peak_tflops: 756.0\n"), std::string::npos) << to_yaml(c);
  apply_overrides(c, {"runtime.peak_tflops=312"});
  EXPECT_EQ(c.runtime.peak_tflops, 312.0);
  apply_overrides(c, {"runtime.peak_tflops=null"});
  EXPECT_EQ(c.runtime.peak_tflops, std::nullopt);
  try {
    (void)parse_config_yaml("runtime: {peak_tflop: 1}\n", "b.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "runtime.peak_tflop: unknown key (did you mean 'peak_tflops'?)");
  }
}

TEST(ConfigToYaml, WritesEverySectionAndTheSpecialForms) {
  const std::string text = to_yaml(Config{});
  for (const char* expected :
       {"model:\n  name: tiny-wan\n", "parallel:\n  data_parallel_size: auto\n",
        "  devices: auto\n", "  num_inference_steps: 50\n  seed: 42\n", "  compression: none\n",
        "  manifest: \"\"\n  tasks: [t2v, i2v]\n", "  negative_prompt: \"\"\n", "  fail_ids: []\n",
        "determinism:\n  strict: true\n", "synthetic:\n  seconds_per_gcost: 0.0\n  wait: sleep\n"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n"
                                                      << text;
  }
}

// generation.guidance_scale / flow_shift: a number, or left out / null for "unset" (the
// snapshot's or the model's default); to_yaml leaves an unset one out.
TEST(ConfigOptionalGeneration, UnsetSetAndNull) {
  const Config unset = parse_config_yaml("generation: {num_frames: 9}\n", "a.yaml");
  EXPECT_EQ(unset.generation.guidance_scale, std::nullopt);
  EXPECT_EQ(unset.generation.flow_shift, std::nullopt);
  EXPECT_EQ(to_yaml(unset).find("guidance_scale"), std::string::npos);
  EXPECT_EQ(to_yaml(unset).find("flow_shift"), std::string::npos);

  Config set = parse_config_yaml("generation: {guidance_scale: 7.5, flow_shift: 3}\n", "b.yaml");
  EXPECT_EQ(set.generation.guidance_scale, 7.5);
  EXPECT_EQ(set.generation.flow_shift, 3.0);
  EXPECT_NE(to_yaml(set).find("  guidance_scale: 7.5\n  flow_shift: 3.0\n"), std::string::npos);
  EXPECT_EQ(parse_config_yaml(to_yaml(set), "c.yaml").generation, set.generation);

  // null (or nothing after the colon) unsets, also through --set.
  EXPECT_EQ(parse_config_yaml("generation:\n  guidance_scale:\n", "d.yaml").generation.guidance_scale,
            std::nullopt);
  apply_overrides(set, {"generation.guidance_scale=null", "generation.flow_shift=~"});
  EXPECT_EQ(set.generation.guidance_scale, std::nullopt);
  EXPECT_EQ(set.generation.flow_shift, std::nullopt);
  apply_overrides(set, {"generation.flow_shift=7"});
  EXPECT_EQ(set.generation.flow_shift, 7.0);

  // Ranges are checked only when set.
  Config c = set;
  c.input.manifest = "m.jsonl";
  EXPECT_NO_THROW(validate_and_resolve(c, kModels));
}

TEST(ConfigInputTasks, ListOfKnownTasks) {
  EXPECT_EQ(Config{}.input.tasks, (std::vector<std::string>{"t2v", "i2v"}));
  EXPECT_EQ(parse_config_yaml("input: {tasks: [i2v]}\n", "a.yaml").input.tasks,
            std::vector<std::string>{"i2v"});
  const auto error = [](const std::string& yaml) -> std::string {
    try {
      Config c = parse_config_yaml(yaml, "t.yaml");
      c.input.manifest = "m.jsonl";
      validate_and_resolve(c, kModels);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("input: {tasks: [i2v]}\n"), "");
  EXPECT_EQ(error("input: {tasks: [i2v, x2v]}\n"),
            "input.tasks[1]: unknown task 'x2v' (expected t2v or i2v; did you mean 't2v'?)");
  EXPECT_EQ(error("input: {tasks: [video]}\n"),
            "input.tasks[0]: unknown task 'video' (expected t2v or i2v)");
  EXPECT_EQ(error("input: {tasks: [t2v, t2v]}\n"), "input.tasks[1]: task 't2v' is listed twice");
  EXPECT_EQ(error("input: {tasks: []}\n"),
            "input.tasks: an empty list (expected some of t2v, i2v; leave the key out for both)");
  EXPECT_EQ(error("input: {tasks: i2v}\n"), "input.tasks: expected a list of strings, got 'i2v'");
}

// --- shared check helpers --------------------------------------------------------------------

TEST(ConfigChecks, SharedGenerationRules) {
  EXPECT_EQ(check_num_frames(121), "");
  EXPECT_EQ(check_num_frames(120), "120 is not of the form 4k+1 (e.g. 117 or 121)");
  EXPECT_EQ(check_frame_size(848), "");
  EXPECT_EQ(check_frame_size(850), "850 is not a multiple of 16 (e.g. 848 or 864)");
  EXPECT_EQ(check_num_inference_steps(50), "");
  EXPECT_EQ(check_guidance_scale(6.0), "");
  EXPECT_EQ(check_flow_shift(-1.0), "-1.0 is out of range (expected a number in (0, 100])");
  EXPECT_EQ(check_fps(24), "");
  EXPECT_EQ(check_seed(-7), "-7 is out of range [0, 2^63-1]");
}

TEST(ConfigChecks, EnumNames) {
  EXPECT_STREQ(to_string(DType::bf16), "bf16");
  EXPECT_STREQ(to_string(DeviceKind::cuda), "cuda");
  EXPECT_STREQ(to_string(WeightsSource::pretrained), "pretrained");
  EXPECT_STREQ(to_string(SchedulerPolicy::round_robin), "round_robin");
  EXPECT_STREQ(to_string(WorkOrder::cost_desc), "cost_desc");
  EXPECT_STREQ(to_string(WaitMode::busy), "busy");
  EXPECT_STREQ(to_string(AttentionKernel::automatic), "auto");
}

// --- generation.cache (step caching) -------------------------------------------------------

TEST(ConfigCache, APolicyNameTakesItsDefaultsAndAMapSetsItsOwnKeys) {
  EXPECT_EQ(Config{}.generation.cache.policy, CachePolicy::off);
  const Config named = parse_config_yaml("generation:\n  cache: taylorseer\n", "c.yaml");
  EXPECT_EQ(named.generation.cache.policy, CachePolicy::taylorseer);
  EXPECT_EQ(named.generation.cache.cache_interval, 5);
  EXPECT_EQ(named.generation.cache.disable_cache_before_step, 3);
  EXPECT_EQ(named.generation.cache.max_order, 1);
  const Config fbc = parse_config_yaml("generation:\n  cache: first_block\n", "c.yaml");
  EXPECT_DOUBLE_EQ(fbc.generation.cache.resolved_threshold(), 0.05);
  const Config mag = parse_config_yaml(
      "generation:\n  cache: {policy: magcache, threshold: 0.1, max_skip_steps: 2,\n"
      "          retention_ratio: 0.25, mag_ratios: [1.0, 1.02, 0.99]}\n",
      "c.yaml");
  const auto& m = mag.generation.cache;
  EXPECT_EQ(m.policy, CachePolicy::magcache);
  EXPECT_DOUBLE_EQ(m.resolved_threshold(), 0.1);
  EXPECT_EQ(m.max_skip_steps, 2);
  EXPECT_DOUBLE_EQ(m.retention_ratio, 0.25);
  EXPECT_EQ(m.mag_ratios, (std::vector<double>{1.0, 1.02, 0.99}));
  // Written back and read again: the same configuration (the default threshold made explicit).
  for (const Config* c : {&named, &fbc, &mag}) {
    EXPECT_EQ(parse_config_yaml(to_yaml(*c), "to_yaml").generation.cache.policy,
              c->generation.cache.policy);
    EXPECT_EQ(describe_cache(parse_config_yaml(to_yaml(*c), "to_yaml").generation.cache),
              describe_cache(c->generation.cache));
  }
  EXPECT_EQ(to_yaml(default_config()).find("cache"), std::string::npos);  // off: not written
  EXPECT_NE(to_yaml(named).find("policy: taylorseer"), std::string::npos);
}

TEST(ConfigCache, KeysOfAnotherPolicyAndBadValuesAreErrors) {
  EXPECT_EQ(parse_error("generation:\n  cache: {policy: taylorseer, threshold: 0.1}\n"),
            "generation.cache.threshold: not a key of the taylorseer cache (its keys: "
            "cache_interval, disable_cache_before_step, max_order)");
  EXPECT_EQ(parse_error("generation:\n  cache: {threshold: 0.1}\n"),
            "generation.cache.policy: required in a cache map (expected off | "
            "first_block | taylorseer | magcache)");
  EXPECT_NE(parse_error("generation:\n  cache: teacache\n").find("invalid value 'teacache'"),
            std::string::npos);
  EXPECT_EQ(validate_error("generation:\n  cache: {policy: first_block, threshold: 0}\n"),
            "generation.cache.threshold: 0.0 is out of range (expected a number in (0, 10])");
  EXPECT_EQ(validate_error("generation:\n  cache: {policy: taylorseer, cache_interval: 0}\n"),
            "generation.cache.cache_interval: 0 is out of range [1, 1000]");
  EXPECT_NE(validate_error("generation:\n  cache: magcache\n")
                .find("generation.cache.mag_ratios: required by the magcache policy"),
            std::string::npos);
  EXPECT_EQ(validate_error("generation:\n  cache: {policy: magcache, calibrate: true}\n"), "");
  EXPECT_EQ(validate_error("generation:\n  cache: {policy: magcache, mag_ratios: [1, -1]}\n"),
            "generation.cache.mag_ratios[1]: -1.0 is out of range (expected a number in (0, 100])");
  Config config = default_config();
  apply_overrides(config, {"generation.cache={policy: first_block, threshold: 0.2}"});
  EXPECT_DOUBLE_EQ(config.generation.cache.resolved_threshold(), 0.2);
  apply_overrides(config, {"generation.cache=off"});
  EXPECT_EQ(config.generation.cache, StepCacheConfig{});
}

TEST(ConfigScheduler, TheSilentTimeoutOutlastsTwoHeartbeats) {
  EXPECT_EQ(Config{}.scheduler.silent_timeout_s, 300.0);
  EXPECT_EQ(validate_error("scheduler: {heartbeat_s: 5, silent_timeout_s: 9}\n"),
            "scheduler.silent_timeout_s: 9.0 is shorter than two heartbeats (scheduler.heartbeat_s "
            "5.0): a live replica would be taken for lost (0 turns the watch off)");
  EXPECT_EQ(validate_error("scheduler: {heartbeat_s: 5, silent_timeout_s: 0}\n"), "");
  EXPECT_EQ(validate_error("scheduler: {heartbeat_s: 5, silent_timeout_s: 10}\n"), "");
}

}  // namespace
}  // namespace omnidp
