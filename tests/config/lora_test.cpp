#include "omnidp/config/lora.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/config/numerics.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

// An adapter of `path` for `expert` (unset: the file name's), scale 1, no hash.
LoraAdapter named(const std::string& path, std::optional<LoraExpert> expert = std::nullopt) {
  LoraAdapter a;
  a.path = path;
  a.expert = expert;
  return a;
}

std::string sha_of(const std::string& text) {
  return sha256_hex({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

std::string lora_error(const std::string& text) {
  return test::error_of<ConfigError>([&] { (void)parse_lora_list(text, "model.lora"); });
}

TEST(LoraList, PathsAndMapsInYamlOrJson) {
  const auto list = parse_lora_list(
      "[a.safetensors, {path: b.safetensors, scale: 0.5}, {path: c.safetensors, expert: "
      "low_noise}]",
      "model.lora");
  ASSERT_EQ(list.size(), 3U);
  EXPECT_EQ(list[0].path, "a.safetensors");
  EXPECT_DOUBLE_EQ(list[0].scale, 1.0);
  EXPECT_FALSE(list[0].expert);
  EXPECT_DOUBLE_EQ(list[1].scale, 0.5);
  EXPECT_EQ(list[2].expert, LoraExpert::low_noise);
  const auto json =
      parse_lora_list(R"([{"path": "x.safetensors", "scale": -1.25, "expert": "all"}])", "lora");
  EXPECT_DOUBLE_EQ(json.at(0).scale, -1.25);
  EXPECT_EQ(json.at(0).expert, LoraExpert::all);
  EXPECT_TRUE(parse_lora_list("[]", "lora").empty());
  EXPECT_TRUE(parse_lora_list("", "lora").empty());
  // What lora_list_yaml writes reads back equal.
  EXPECT_EQ(parse_lora_list(lora_list_yaml(list), "model.lora"), list);
}

TEST(LoraList, EveryBadValueNamesItsPath) {
  EXPECT_EQ(lora_error("a.safetensors"),
            "model.lora: expected a list of adapters (each a path or {path, scale, expert})");
  EXPECT_EQ(lora_error("[{scale: 1}]"),
            "model.lora[0].path: missing: every adapter names its file");
  EXPECT_EQ(lora_error("[{path: ''}]"),
            "model.lora[0].path: expected the path of a .safetensors file, got an empty string");
  EXPECT_EQ(lora_error("[a, {path: b, scale: .nan}]"),
            "model.lora[1].scale: '.nan' is not a finite number");
  EXPECT_EQ(lora_error("[{path: b, scale: strong}]"),
            "model.lora[0].scale: 'strong' is not a finite number");
  EXPECT_EQ(lora_error("[{path: b, scale: 1000}]"),
            "model.lora[0].scale: 1000 is out of range (expected a number in [-100, 100])");
  EXPECT_EQ(
      lora_error("[{path: b, expert: middle}]"),
      "model.lora[0].expert: 'middle' is not an expert (expected all | high_noise | low_noise)");
  EXPECT_EQ(lora_error("[{path: b, strength: 1}]"),
            "model.lora[0].strength: not a key of a LoRA adapter (its keys: path, scale, expert)");
  EXPECT_EQ(lora_error("[[a]]"), "model.lora[0]: expected a path or a map {path, scale, expert}");
}

TEST(LoraList, TheExpertAFileNameStates) {
  EXPECT_EQ(
      lora_expert_from_file_name("/m/Wan2.2-Lightning_T2V-A14B-4steps-lora_HIGH_fp16.safetensors"),
      LoraExpert::high_noise);
  EXPECT_EQ(lora_expert_from_file_name("loras/low_noise_model.safetensors"), LoraExpert::low_noise);
  EXPECT_EQ(lora_expert_from_file_name("x/Wan22_LowNoise.safetensors"), LoraExpert::low_noise);
  EXPECT_EQ(lora_expert_from_file_name("style.safetensors"), std::nullopt);
  EXPECT_EQ(lora_expert_from_file_name("highway.safetensors"), std::nullopt);  // words, not letters
  EXPECT_EQ(lora_expert_from_file_name("high_and_low.safetensors"), std::nullopt);
  // Resolution: the line's expert, else the name (two experts), else all.
  LoraAdapter a{.path = "a_HIGH.safetensors", .scale = 1.0, .expert = std::nullopt, .sha256 = {}};
  EXPECT_EQ(resolve_lora_expert(a, true), LoraExpert::high_noise);
  EXPECT_EQ(resolve_lora_expert(a, false), LoraExpert::all);
  a.expert = LoraExpert::all;
  EXPECT_EQ(resolve_lora_expert(a, true), LoraExpert::all);
}

TEST(LoraList, ExpertsTheModelDoesNotHaveOrTheFileContradictsAreRefused) {
  const auto check = [](std::vector<LoraAdapter> list, bool two) {
    return test::error_of<ConfigError>([&] { check_lora_experts(list, two, "model.lora"); });
  };
  EXPECT_EQ(
      check({named("s.safetensors", LoraExpert::low_noise)}, false),
      "model.lora[0].expert: low_noise: this model has one transformer (an expert is chosen only "
      "on a two-expert model such as Wan2.2-A14B)");
  EXPECT_EQ(
      check({named("s.safetensors"), named("lightning_HIGH.safetensors", LoraExpert::low_noise)},
            true),
      "model.lora[1].expert: low_noise: the file lightning_HIGH.safetensors is named for the "
      "high-noise expert (write expert: high_noise, or rename the file if the name is wrong)");
  EXPECT_EQ(
      check({named("lightning_HIGH.safetensors", LoraExpert::high_noise),
             named("lightning_LOW.safetensors"), named("any_HIGH.safetensors", LoraExpert::all)},
            true),
      "");
}

TEST(LoraList, DescriptionsTellSetsApart) {
  const LoraAdapter a{
      .path = "a", .scale = 0.5, .expert = std::nullopt, .sha256 = std::string(64, 'a')};
  const LoraAdapter b{
      .path = "b", .scale = 1.0, .expert = LoraExpert::low_noise, .sha256 = std::string(64, 'b')};
  EXPECT_EQ(describe_lora({a, b}), "aaaaaaaaaaaa*0.5+bbbbbbbbbbbb*1@low_noise");
  EXPECT_NE(describe_lora({a}), describe_lora({LoraAdapter{a.path, 0.75, {}, a.sha256}}));
}

// model.lora through the YAML: parsed, resolved against the config file's folder, hashed; a
// missing file is a ConfigError; the profile names the adapters.
TEST(LoraConfig, TheJobsAdaptersAreResolvedHashedAndInTheProfile) {
  test::TempDir dir;
  std::ofstream(dir.path() / "style.safetensors") << "bytes";
  std::ofstream(dir.path() / "m.jsonl") << "";
  const auto yaml = dir.path() / "job.yaml";
  std::ofstream(yaml)
      << "model: {lora: [{path: style.safetensors, scale: 0.8}]}\ninput: {manifest: m.jsonl}\n";
  Config config = load_config_file(yaml);
  ModelChoice wan;
  wan.name = "tiny-wan";
  wan.lora = true;
  ModelChoice no_weights;
  no_weights.name = "synthetic";
  no_weights.has_weights = false;
  const std::vector<ModelChoice> models{wan, no_weights};
  validate_and_resolve(config, models);
  ASSERT_EQ(config.model.lora.size(), 1U);
  EXPECT_EQ(config.model.lora[0].path, (dir.path() / "style.safetensors").string());
  EXPECT_EQ(config.model.lora[0].sha256, sha_of("bytes"));
  const auto profile = parse_numerics(numerics_profile(config, "v"));
  EXPECT_EQ(profile.at("lora"), sha_of("bytes").substr(0, 12) + "*0.8");
  EXPECT_FALSE(profile.contains("lora_line"));
  const LoraAdapter line{
      .path = "x", .scale = 2, .expert = std::nullopt, .sha256 = std::string(64, 'c')};
  EXPECT_EQ(parse_numerics(numerics_profile(config, "v", {}, {line})).at("lora_line"),
            "cccccccccccc*2");
  // An adapter set is a numerics difference; a profile without the key had none.
  EXPECT_TRUE(compare_numerics(numerics_profile(config, "v"), "dtype=fp32").numerics());

  std::ofstream(yaml) << "model: {lora: [gone.safetensors]}\ninput: {manifest: m.jsonl}\n";
  Config missing = load_config_file(yaml);
  EXPECT_EQ(test::error_of<ConfigError>([&] { validate_and_resolve(missing, models); }),
            "model.lora[0].path: " + (dir.path() / "gone.safetensors").string() + ": no such file");
  std::ofstream(yaml)
      << "model: {name: synthetic, lora: [style.safetensors]}\ninput: {manifest: m.jsonl}\n";
  Config synthetic = load_config_file(yaml);
  EXPECT_EQ(test::error_of<ConfigError>([&] { validate_and_resolve(synthetic, models); }),
            "model.lora: LoRA adapters are not implemented by model 'synthetic' (expected no "
            "adapters; the Wan family and HunyuanVideo-1.5 take them)");
}

}  // namespace
}  // namespace omnidp
