#include "omnidp/models/weights/lora.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "temp_dir.hpp"

namespace omnidp::models {
namespace {
namespace fs = std::filesystem;
using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

// A module with the names of a Wan block's layers the tests need: blocks.0.attn1.to_q (64 ->
// 64), blocks.0.ffn.net.0.proj (64 -> 128, column split), blocks.0.ffn.net.2 (128 -> 64, row
// split), blocks.0.scale_shift_table, and the top-level proj_out.
struct Block : torch::nn::Module {
  Block(TensorShard shard, const ParamSpec& spec) {
    auto attn1 = register_module("attn1", std::make_shared<torch::nn::Module>());
    attn1->register_module("to_q", ColumnParallelLinear(64, 64, true, shard, spec, "test"));
    auto ffn = register_module("ffn", std::make_shared<torch::nn::Module>());
    auto net = ffn->register_module("net", std::make_shared<torch::nn::Module>());
    auto zero = net->register_module("0", std::make_shared<torch::nn::Module>());
    zero->register_module("proj", ColumnParallelLinear(64, 128, true, shard, spec, "test"));
    net->register_module("2", RowParallelLinear(128, 64, true, shard, spec, "test"));
    register_parameter("scale_shift_table", torch::zeros({1, 6, 64}), false);
  }
};
struct Tiny : torch::nn::Module {
  explicit Tiny(TensorShard shard = {}, const ParamSpec& spec = {}) {
    auto blocks = register_module("blocks", std::make_shared<torch::nn::Module>());
    blocks->register_module("0", std::make_shared<Block>(shard, spec));
    register_module("proj_out", ColumnParallelLinear(64, 16, true, TensorShard{}, spec, "test"));
    torch::NoGradGuard no_grad;
    auto g = at::detail::createCPUGenerator(7);
    for (auto& p : parameters()) p.copy_(torch::randn(p.sizes(), g));
  }
};

// A name map as a model keeps one (wan/lora_names.hpp is Wan's): the original names of Tiny's
// layers under `diffusion_model.`, and musubi-tuner's flattening of them.
LoraNameMap tiny_names() {
  static const std::map<std::string, std::string, std::less<>> modules{
      {"blocks.0.self_attn.q", "blocks.0.attn1.to_q"},
      {"blocks.0.self_attn.k", "blocks.0.attn1.to_k"},
      {"blocks.0.self_attn.v", "blocks.0.attn1.to_v"},
      {"blocks.0.self_attn.o", "blocks.0.attn1.to_out.0"},
      {"blocks.0.ffn.0", "blocks.0.ffn.net.0.proj"},
      {"blocks.0.ffn.2", "blocks.0.ffn.net.2"},
      {"head.head", "proj_out"}};
  LoraNameMap map;
  map.module = [](const std::string& original) -> std::optional<std::string> {
    const auto it = modules.find(original);
    if (it == modules.end()) return std::nullopt;
    return it->second;
  };
  map.parameter = [](const std::string& original) -> std::optional<std::string> {
    if (original == "blocks.0.modulation") return std::string("blocks.0.scale_shift_table");
    return std::nullopt;
  };
  map.musubi = [](const std::string& flat) {
    std::vector<std::string> originals;
    for (const auto& [original, _] : modules) originals.push_back(original);
    return unflatten_lora_name(flat, originals);
  };
  return map;
}

torch::Tensor param(torch::nn::Module& m, const std::string& name) {
  return m.named_parameters()[name].clone();
}

torch::Tensor bf16_randn(std::vector<std::int64_t> shape, std::uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  return (torch::randn(shape, g) * 0.1).to(torch::kBFloat16);
}

class LoraFiles : public ::testing::Test {
 protected:
  test::TempDir dir_{"lora_test"};
  fs::path write(const std::string& name, const Tensors& tensors,
                 const std::map<std::string, std::string>& metadata = {}) {
    const auto path = dir_.path() / name;
    save_safetensors(path, tensors, metadata);
    return path;
  }
};

TEST_F(LoraFiles, DiffusersNamesFuseAsWPlusScaleTimesBA) {
  const auto a = bf16_randn({4, 64}, 1), b = bf16_randn({64, 4}, 2), bias = bf16_randn({64}, 3);
  const auto path =
      write("peft.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
                                 {"transformer.blocks.0.attn1.to_q.lora_B.weight", b},
                                 {"transformer.blocks.0.attn1.to_q.lora_B.bias", bias}});
  const auto file = read_lora_file(path);
  EXPECT_EQ(file.format, LoraFormat::diffusers);
  ASSERT_EQ(file.low_rank.size(), 1U);
  EXPECT_DOUBLE_EQ(file.low_rank.at("blocks.0.attn1.to_q").alpha_over_rank, 1.0);
  Tiny model;
  const auto w = param(model, "blocks.0.attn1.to_q.weight");
  const auto bw = param(model, "blocks.0.attn1.to_q.bias");
  fuse_lora(model, file, 0.75);
  const auto expected = w + 0.75 * torch::matmul(b.to(torch::kFloat32), a.to(torch::kFloat32));
  EXPECT_TRUE(torch::equal(param(model, "blocks.0.attn1.to_q.weight"), expected));
  EXPECT_TRUE(
      torch::equal(param(model, "blocks.0.attn1.to_q.bias"), bw + 0.75 * bias.to(torch::kFloat32)));
  // Everything else is untouched.
  Tiny fresh;
  EXPECT_TRUE(torch::equal(param(model, "proj_out.weight"), param(fresh, "proj_out.weight")));
}

TEST_F(LoraFiles, PeftMetadataAlphaScalesLikeDiffusers) {
  const auto a = bf16_randn({8, 64}, 1), b = bf16_randn({64, 8}, 2);
  const auto path = write(
      "meta.safetensors",
      {{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
       {"transformer.blocks.0.attn1.to_q.lora_B.weight", b},
       {"transformer.proj_out.lora_A.weight", bf16_randn({8, 64}, 4)},
       {"transformer.proj_out.lora_B.weight", bf16_randn({16, 8}, 5)}},
      {{"lora_adapter_metadata",
        R"({"transformer.lora_alpha": 4, "transformer.r": 8, "transformer.alpha_pattern": {"proj_out": 16}})"}});
  const auto file = read_lora_file(path);
  EXPECT_DOUBLE_EQ(file.low_rank.at("blocks.0.attn1.to_q").alpha_over_rank, 0.5);
  EXPECT_DOUBLE_EQ(file.low_rank.at("proj_out").alpha_over_rank, 2.0);
}

TEST_F(LoraFiles, OriginalNamesWithAlphaDiffAndDiffBMapToDiffusersModules) {
  const auto down = bf16_randn({4, 64}, 1), up = bf16_randn({128, 4}, 2);
  const auto diff = bf16_randn({16, 64}, 3), diff_b = bf16_randn({64}, 4),
             mod = bf16_randn({1, 6, 64}, 5);
  const auto path =
      write("kohya.safetensors", {{"diffusion_model.blocks.0.ffn.0.lora_down.weight", down},
                                  {"diffusion_model.blocks.0.ffn.0.lora_up.weight", up},
                                  {"diffusion_model.blocks.0.ffn.0.alpha", torch::tensor(2.0)},
                                  {"diffusion_model.head.head.diff", diff},
                                  {"diffusion_model.blocks.0.self_attn.q.diff_b", diff_b},
                                  {"diffusion_model.blocks.0.modulation.diff", mod}});
  const auto file = read_lora_file(path, tiny_names());
  EXPECT_EQ(file.format, LoraFormat::original);
  EXPECT_DOUBLE_EQ(file.low_rank.at("blocks.0.ffn.net.0.proj").alpha_over_rank, 0.5);
  EXPECT_TRUE(file.deltas.contains("proj_out.weight"));
  EXPECT_TRUE(file.deltas.contains("blocks.0.attn1.to_q.bias"));
  EXPECT_TRUE(file.deltas.contains("blocks.0.scale_shift_table"));
  Tiny model;
  const auto w = param(model, "blocks.0.ffn.net.0.proj.weight");
  const auto head = param(model, "proj_out.weight");
  const auto table = param(model, "blocks.0.scale_shift_table");
  fuse_lora(model, file, 2.0);
  EXPECT_TRUE(torch::equal(
      param(model, "blocks.0.ffn.net.0.proj.weight"),
      w + 2.0 * (torch::matmul(up.to(torch::kFloat32), down.to(torch::kFloat32)) * 0.5)));
  EXPECT_TRUE(torch::equal(param(model, "proj_out.weight"), head + 2.0 * diff.to(torch::kFloat32)));
  EXPECT_TRUE(torch::equal(param(model, "blocks.0.scale_shift_table"),
                           table + 2.0 * mod.to(torch::kFloat32)));
}

TEST_F(LoraFiles, MusubiNamesAreTheOriginalOnesFlattened) {
  const auto path =
      write("musubi.safetensors",
            {{"lora_unet_blocks_0_self_attn_q.lora_down.weight", bf16_randn({4, 64}, 1)},
             {"lora_unet_blocks_0_self_attn_q.lora_up.weight", bf16_randn({64, 4}, 2)},
             {"lora_unet_blocks_0_self_attn_q.alpha", torch::tensor(8.0)},
             {"lora_unet_blocks_0_ffn_2.lora_down.weight", bf16_randn({4, 128}, 3)},
             {"lora_unet_blocks_0_ffn_2.lora_up.weight", bf16_randn({64, 4}, 4)},
             {"lora_unet_blocks_0_ffn_2.alpha", torch::tensor(4.0)}});
  const auto file = read_lora_file(path, tiny_names());
  EXPECT_EQ(file.format, LoraFormat::musubi);
  EXPECT_DOUBLE_EQ(file.low_rank.at("blocks.0.attn1.to_q").alpha_over_rank, 2.0);
  EXPECT_DOUBLE_EQ(file.low_rank.at("blocks.0.ffn.net.2").alpha_over_rank, 1.0);
  Tiny model;
  EXPECT_TRUE(lora_problems(model, file).empty());
}

// Nothing a file holds is dropped: each key that cannot be placed is listed, and nothing is read.
TEST_F(LoraFiles, EveryKeyThatCannotBeAppliedIsListed) {
  const auto path =
      write("bad.safetensors",
            {{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", bf16_randn({4, 64}, 1)},
             {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", bf16_randn({64, 8}, 2)},
             {"diffusion_model.blocks.0.self_attn.k.lora_down.weight", bf16_randn({4, 64}, 3)},
             {"diffusion_model.blocks.0.mystery.lora_down.weight", bf16_randn({4, 64}, 4)},
             {"diffusion_model.blocks.0.self_attn.v.alpha", torch::ones({2})},
             {"diffusion_model.blocks.0.self_attn.o.dora_scale", bf16_randn({64}, 5)},
             {"diffusion_model.blocks.0.self_attn.o.weight", bf16_randn({64}, 6)}});
  const std::string message =
      test::error_of<WeightsError>([&] { (void)read_lora_file(path, tiny_names()); });
  EXPECT_NE(
      message.find(
          "6 key(s) of this LoRA (original names (diffusion_model.) format) cannot be applied"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("blocks.0.attn1.to_q: the ranks differ: down/A [4, 64], up/B [64, 8]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("has lora_A/lora_down but no lora_B/lora_up"), std::string::npos) << message;
  EXPECT_NE(message.find("diffusion_model.blocks.0.mystery.lora_down.weight (no module "
                         "'blocks.0.mystery' in this model)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("an alpha holds one number, not shape [2]"), std::string::npos) << message;
  EXPECT_NE(message.find("DoRA adapters are not supported"), std::string::npos) << message;
  EXPECT_NE(message.find("diffusion_model.blocks.0.self_attn.o.weight (not a LoRA tensor"),
            std::string::npos)
      << message;
}

TEST_F(LoraFiles, NotALoraFileIsAClearError) {
  const auto text = dir_.path() / "notes.safetensors";
  std::ofstream(text) << "not a safetensors file";
  EXPECT_THROW((void)read_lora_file(text), WeightsError);
  const auto empty = write("empty.safetensors", {});
  EXPECT_NE(
      test::error_of<WeightsError>([&] { (void)read_lora_file(empty); }).find("holds no tensors"),
      std::string::npos);
  // An original-name file read without a name map.
  const auto kohya =
      write("k.safetensors", {{"diffusion_model.head.head.diff", bf16_randn({16, 64}, 1)}});
  EXPECT_NE(test::error_of<WeightsError>([&] {
              (void)read_lora_file(kohya);
            }).find("convert it to Diffusers names"),
            std::string::npos);
}

TEST_F(LoraFiles, ModulesAndShapesTheModelLacksAreListedAndNothingIsFused) {
  const auto path =
      write("wrong.safetensors",
            {{"transformer.blocks.0.attn1.to_q.lora_A.weight", bf16_randn({4, 32}, 1)},
             {"transformer.blocks.0.attn1.to_q.lora_B.weight", bf16_randn({64, 4}, 2)},
             {"transformer.blocks.7.attn1.to_q.lora_A.weight", bf16_randn({4, 64}, 3)},
             {"transformer.blocks.7.attn1.to_q.lora_B.weight", bf16_randn({64, 4}, 4)},
             {"transformer.proj_out.lora_A.weight", bf16_randn({4, 64}, 5)},
             {"transformer.proj_out.lora_B.weight", bf16_randn({16, 4}, 6)}});
  const auto file = read_lora_file(path);
  Tiny model;
  const auto before = param(model, "proj_out.weight");
  const auto problems = lora_problems(model, file);
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_EQ(problems[0],
            "blocks.0.attn1.to_q (lora): shape [64, 32] does not fit blocks.0.attn1.to_q.weight "
            "[64, 64]");
  EXPECT_EQ(problems[1],
            "blocks.7.attn1.to_q (lora): the model has no parameter blocks.7.attn1.to_q.weight");
  const auto message = test::error_of<WeightsError>([&] { fuse_lora(model, file, 1.0); });
  EXPECT_NE(message.find("2 part(s) of this LoRA do not fit the model"), std::string::npos)
      << message;
  EXPECT_TRUE(torch::equal(param(model, "proj_out.weight"), before));  // the fitting part too
}

// A tensor-parallel shard takes its slice of the delta: column layers their rows, row layers
// their columns; the shards together equal the whole model's fused weights.
TEST_F(LoraFiles, TensorParallelShardsTakeTheirSliceOfTheDelta) {
  const auto path =
      write("tp.safetensors",
            {{"transformer.blocks.0.ffn.net.0.proj.lora_A.weight", bf16_randn({4, 64}, 1)},
             {"transformer.blocks.0.ffn.net.0.proj.lora_B.weight", bf16_randn({128, 4}, 2)},
             {"transformer.blocks.0.ffn.net.2.lora_A.weight", bf16_randn({4, 128}, 3)},
             {"transformer.blocks.0.ffn.net.2.lora_B.weight", bf16_randn({64, 4}, 4)}});
  const auto file = read_lora_file(path);
  Tiny whole;
  const auto w0 = param(whole, "blocks.0.ffn.net.0.proj.weight");
  const auto w2 = param(whole, "blocks.0.ffn.net.2.weight");
  fuse_lora(whole, file, 1.5);
  for (std::int64_t r = 0; r < 2; ++r) {
    Tiny shard(TensorShard{r, 2});
    torch::NoGradGuard no_grad;
    auto params = shard.named_parameters();
    params["blocks.0.ffn.net.0.proj.weight"].copy_(w0.narrow(0, r * 64, 64));
    params["blocks.0.ffn.net.2.weight"].copy_(w2.narrow(1, r * 64, 64));
    EXPECT_TRUE(lora_problems(shard, file).empty());
    fuse_lora(shard, file, 1.5);
    EXPECT_TRUE(torch::equal(param(shard, "blocks.0.ffn.net.0.proj.weight"),
                             param(whole, "blocks.0.ffn.net.0.proj.weight").narrow(0, r * 64, 64)));
    EXPECT_TRUE(torch::equal(param(shard, "blocks.0.ffn.net.2.weight"),
                             param(whole, "blocks.0.ffn.net.2.weight").narrow(1, r * 64, 64)));
  }
}

// A request's set is fused on the base weights whatever was held before, so the same set gives
// the same bytes; the empty set gives the base back exactly (in bf16 too).
TEST_F(LoraFiles, ASwitchedSetNeverDependsOnTheSetsBefore) {
  const auto one = read_lora_file(write(
      "one.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", bf16_randn({4, 64}, 1)},
                          {"transformer.blocks.0.attn1.to_q.lora_B.weight", bf16_randn({64, 4}, 2)}}));
  const auto two = read_lora_file(write(
      "two.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", bf16_randn({4, 64}, 3)},
                          {"transformer.blocks.0.attn1.to_q.lora_B.weight", bf16_randn({64, 4}, 4)},
                          {"transformer.proj_out.lora_A.weight", bf16_randn({4, 64}, 5)},
                          {"transformer.proj_out.lora_B.weight", bf16_randn({16, 4}, 6)}}));
  Tiny model(TensorShard{}, ParamSpec{torch::kBFloat16, torch::kCPU});
  const auto base_q = param(model, "blocks.0.attn1.to_q.weight");
  const auto base_out = param(model, "proj_out.weight");
  LoraSwitch sw(model);
  EXPECT_TRUE(sw.set("one", {{&one, 0.5}}));
  const auto first = param(model, "blocks.0.attn1.to_q.weight");
  EXPECT_FALSE(torch::equal(first, base_q));
  EXPECT_FALSE(sw.set("one", {{&one, 0.5}}));  // held already
  EXPECT_TRUE(sw.set("both", {{&two, 1.0}, {&one, 0.25}}));
  EXPECT_FALSE(torch::equal(param(model, "proj_out.weight"), base_out));
  EXPECT_TRUE(sw.set("one", {{&one, 0.5}}));
  EXPECT_TRUE(torch::equal(param(model, "blocks.0.attn1.to_q.weight"), first));
  EXPECT_TRUE(torch::equal(param(model, "proj_out.weight"), base_out));
  EXPECT_TRUE(sw.set("", {}));
  EXPECT_TRUE(torch::equal(param(model, "blocks.0.attn1.to_q.weight"), base_q));
}

// Beside the layers (a request's set): the low-rank parts of the linear layers go beside them,
// stacked into one update per layer, while a bias delta and a parameter that is no layer's
// weight are split off for fusing; the weights stay the base's, the layers act as the fused
// ones, and the next set replaces the last.
TEST_F(LoraFiles, TheSidePathActsAsTheFusedWeightsAndLeavesThemAlone) {
  const auto a = bf16_randn({4, 64}, 1), b = bf16_randn({64, 4}, 2), bias = bf16_randn({64}, 3);
  const auto one = read_lora_file(write(
      "one.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
                          {"transformer.blocks.0.attn1.to_q.lora_B.weight", b},
                          {"transformer.blocks.0.attn1.to_q.lora_B.bias", bias},
                          {"transformer.blocks.0.scale_shift_table.diff", bf16_randn({1, 6, 64}, 4)},
                          {"transformer.proj_out.lora_A.weight", bf16_randn({2, 64}, 5)},
                          {"transformer.proj_out.lora_B.weight", bf16_randn({16, 2}, 6)}}));
  const auto two = read_lora_file(write(
      "two.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", bf16_randn({2, 64}, 7)},
                          {"transformer.blocks.0.attn1.to_q.lora_B.weight", bf16_randn({64, 2}, 8)}}));
  Tiny model;
  LoraSidePath side(model);
  EXPECT_TRUE(side.takes("blocks.0.attn1.to_q"));
  EXPECT_TRUE(side.takes("blocks.0.ffn.net.2"));
  EXPECT_FALSE(side.takes("blocks.0.scale_shift_table"));
  const auto [beside, rest] = split_lora_file(one, side);
  EXPECT_EQ(beside.low_rank.size(), 2U);
  EXPECT_TRUE(beside.deltas.empty());
  EXPECT_TRUE(rest.low_rank.empty());
  EXPECT_EQ(rest.deltas.size(), 2U);  // to_q's bias and the table

  Tiny fused;
  fuse_lora(fused, two, 0.5);
  fuse_lora(fused, beside, 1.0);
  const auto base_q = param(model, "blocks.0.attn1.to_q.weight");
  EXPECT_EQ(side.set({{&beside, 1.0}, {&two, 0.5}}), 2U);
  EXPECT_TRUE(torch::equal(param(model, "blocks.0.attn1.to_q.weight"), base_q));
  const auto named = [](torch::nn::Module& m, const std::string& name) {
    return std::dynamic_pointer_cast<ColumnParallelLinearImpl>(m.named_modules("", false)[name]);
  };
  const auto q = named(model, "blocks.0.attn1.to_q");
  ASSERT_EQ(q->method().low_rank().size(), 1U);
  EXPECT_EQ(q->method().low_rank()[0].down.size(0), 6);  // ranks 4 and 2, stacked
  const auto x = torch::randn({3, 64});
  torch::NoGradGuard no_grad;
  for (const char* name : {"blocks.0.attn1.to_q", "proj_out"}) {
    const auto got = named(model, name)->forward(x);
    const auto want = named(fused, name)->forward(x);
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-4) << name;
  }
  EXPECT_EQ(side.set({{&two, 0.5}}), 1U);
  EXPECT_TRUE(named(model, "proj_out")->method().low_rank().empty());
  EXPECT_EQ(side.set({}), 0U);
  EXPECT_TRUE(q->method().low_rank().empty());
}

// A tensor-parallel shard holds its slice of each factor: up's rows for a column-split layer,
// down's columns for a row-split one.
TEST_F(LoraFiles, SideShardsTakeTheirSliceOfEachFactor) {
  const auto file = read_lora_file(
      write("tp.safetensors",
            {{"transformer.blocks.0.ffn.net.0.proj.lora_A.weight", bf16_randn({4, 64}, 1)},
             {"transformer.blocks.0.ffn.net.0.proj.lora_B.weight", bf16_randn({128, 4}, 2)},
             {"transformer.blocks.0.ffn.net.2.lora_A.weight", bf16_randn({4, 128}, 3)},
             {"transformer.blocks.0.ffn.net.2.lora_B.weight", bf16_randn({64, 4}, 4)}}));
  for (std::int64_t r = 0; r < 2; ++r) {
    Tiny shard(TensorShard{r, 2});
    LoraSidePath side(shard);
    EXPECT_EQ(side.set({{&file, 2.0}}), 2U);
    const auto modules = shard.named_modules("", false);
    const auto& proj =
        std::dynamic_pointer_cast<ColumnParallelLinearImpl>(modules["blocks.0.ffn.net.0.proj"])
            ->method()
            .low_rank()
            .at(0);
    const auto& out =
        std::dynamic_pointer_cast<RowParallelLinearImpl>(modules["blocks.0.ffn.net.2"])
            ->method()
            .low_rank()
            .at(0);
    const auto& lp = file.low_rank.at("blocks.0.ffn.net.0.proj");
    const auto& lo = file.low_rank.at("blocks.0.ffn.net.2");
    EXPECT_TRUE(torch::equal(proj.up, lp.up.narrow(0, r * 64, 64) * 2.0));
    EXPECT_TRUE(torch::equal(proj.down, lp.down));
    EXPECT_TRUE(torch::equal(out.down, lo.down.narrow(1, r * 64, 64)));
    EXPECT_TRUE(torch::equal(out.up, lo.up * 2.0));
  }
}

}  // namespace
}  // namespace omnidp::models
