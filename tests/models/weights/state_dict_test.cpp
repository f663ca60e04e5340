#include "omnidp/models/weights/state_dict.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "omnidp/common/error.hpp"
#include "test_files.hpp"

namespace omnidp::models {
namespace {

using testing::error_of;
using testing::fresh_dir;

// A small module with Diffusers-style names: blocks.0.proj, to_out.0, a norm and a buffer.
struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    proj = register_module("proj", torch::nn::Linear(4, 6));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({6})));
  }
  torch::nn::Linear proj{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(Block);

struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    blocks = register_module("blocks", torch::nn::ModuleList(Block(), Block()));
    to_out = register_module("to_out", torch::nn::ModuleList(torch::nn::Linear(6, 3)));
    table = register_parameter("scale_shift_table", torch::zeros({1, 2, 6}));
    freqs = register_buffer("freqs", torch::zeros({5}));
  }
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::ModuleList to_out{nullptr};
  torch::Tensor table;
  torch::Tensor freqs;
};
TORCH_MODULE(Tiny);

std::vector<std::pair<std::string, torch::Tensor>> state_of(torch::nn::Module& m, float offset) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  float k = offset;
  for (const auto& p : m.named_parameters()) {
    out.emplace_back(
        p.key(), (torch::arange(p.value().numel(), torch::kFloat32).reshape(p.value().sizes()) / 8 + k)
                     .to(torch::kBFloat16));
    k += 1;
  }
  return out;
}

TEST(StateDict, LoadsEveryParameterByName) {
  const auto dir = fresh_dir("load");
  Tiny model;
  const auto state = state_of(*model, 0.5F);
  save_safetensors(dir / "model.safetensors", state);
  load_state_dict(*model, Checkpoint::open(dir), torch::kFloat32, torch::kCPU);
  const auto params = model->named_parameters();
  for (const auto& [name, value] : state) {
    ASSERT_TRUE(params.contains(name)) << name;
    EXPECT_EQ(params[name].scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(params[name], value.to(torch::kFloat32))) << name;
  }
  EXPECT_TRUE(params.contains("to_out.0.weight"));
  EXPECT_TRUE(params.contains("blocks.1.norm.bias"));
  // The module still works and trains through the loaded tensors.
  const auto y = model->to_out[0]->as<torch::nn::Linear>()->forward(torch::ones({1, 6}));
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{1, 3}));
}

TEST(StateDict, LoadsInBf16AndBuffersWhenPresent) {
  const auto dir = fresh_dir("bf16");
  Tiny model;
  auto state = state_of(*model, 0.0F);
  state.emplace_back("freqs", torch::full({5}, 7.0F));
  save_safetensors(dir / "model.safetensors", state);
  load_state_dict(*model, Checkpoint::open(dir), torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(model->blocks[0]->as<Block>()->proj->weight.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(
      torch::equal(model->named_buffers()["freqs"].to(torch::kFloat32), torch::full({5}, 7.0F)));
}

TEST(StateDict, InPlaceKeepsEachTensorsDtypeAndStorage) {
  const auto dir = fresh_dir("in_place");
  Tiny model;
  // A module in mixed dtypes, as the Wan transformer is built: bf16 weights, a float32 table.
  for (auto& p : model->named_parameters()) {
    if (p.key() != "scale_shift_table") p.value().set_data(p.value().to(torch::kBFloat16));
  }
  auto state = state_of(*model, 0.25F);
  for (auto& [name, value] : state) {
    if (name == "scale_shift_table")
      value = value.to(torch::kFloat32) + 1.0F / 1024;  // not bf16-exact
  }
  save_safetensors(dir / "model.safetensors", state);
  std::map<std::string, const void*> storage;
  for (const auto& p : model->named_parameters()) storage[p.key()] = p.value().data_ptr();
  LoadOptions options;
  options.in_place = true;
  const auto checkpoint = Checkpoint::open(dir);
  // dtype and device are ignored in place: every tensor keeps its own.
  load_state_dict(*model, checkpoint, torch::kFloat16, torch::kCPU, options);
  const auto params = model->named_parameters();
  for (const auto& [name, value] : state) {
    const bool table = name == "scale_shift_table";
    EXPECT_EQ(params[name].scalar_type(), table ? torch::kFloat32 : torch::kBFloat16) << name;
    EXPECT_EQ(params[name].data_ptr(), storage[name]) << name;  // copied into, not replaced
    EXPECT_TRUE(torch::equal(params[name], value.to(params[name].scalar_type()))) << name;
  }
  // The pages released after each copy are read again from the file by a second load.
  Tiny again;
  load_state_dict(*again, checkpoint, torch::kFloat32, torch::kCPU);
  EXPECT_TRUE(torch::equal(again->named_parameters()["to_out.0.weight"],
                           params["to_out.0.weight"].to(torch::kFloat32)));
}

TEST(StateDict, StrictErrorsListEverythingAndChangeNothing) {
  const auto dir = fresh_dir("strict");
  Tiny model;
  auto state = state_of(*model, 0.0F);
  // Drop two names, add three unexpected ones and break one shape.
  state.erase(std::remove_if(state.begin(), state.end(),
                             [](const auto& kv) {
                               return kv.first == "blocks.0.norm.weight" ||
                                      kv.first == "to_out.0.bias";
                             }),
              state.end());
  state.emplace_back("blocks.2.proj.weight", torch::zeros({6, 4}));
  state.emplace_back("extra.a", torch::zeros({1}));
  state.emplace_back("extra.b", torch::zeros({1}));
  for (auto& [name, value] : state) {
    if (name == "blocks.1.proj.weight") value = torch::zeros({4, 6});
  }
  save_safetensors(dir / "model.safetensors", state);
  const auto before = model->blocks[1]->as<Block>()->proj->bias.clone();
  const auto msg =
      error_of([&] { load_state_dict(*model, Checkpoint::open(dir), torch::kFloat32, torch::kCPU); });
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 missing: blocks.0.norm.weight to_out.0.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 unexpected: blocks.2.proj.weight extra.a extra.b"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 shape mismatches: blocks.1.proj.weight (checkpoint [4, 6] in "
                     "model.safetensors, model [6, 4])"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("the model was built from"), std::string::npos)
      << msg;  // the folder has no config.json
  { std::ofstream(dir / "config.json") << "{}"; }
  const auto with_config =
      error_of([&] { load_state_dict(*model, Checkpoint::open(dir), torch::kFloat32, torch::kCPU); });
  EXPECT_NE(with_config.find("(the model was built from " + (dir / "config.json").string() +
                             ": do its sizes match these weights?)"),
            std::string::npos)
      << with_config;
  EXPECT_TRUE(torch::equal(model->blocks[1]->as<Block>()->proj->bias, before));

  LoadOptions lenient;
  lenient.ignore_unexpected = [](const std::string& n) { return n.rfind("extra.", 0) == 0; };
  lenient.ignore_missing = [](const std::string& n) { return n == "to_out.0.bias"; };
  const auto msg2 = error_of([&] {
    load_state_dict(*model, Checkpoint::open(dir), torch::kFloat32, torch::kCPU, lenient);
  });
  EXPECT_EQ(msg2.find("extra.a"), std::string::npos) << msg2;
  EXPECT_EQ(msg2.find("to_out.0.bias"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("1 missing: blocks.0.norm.weight"), std::string::npos) << msg2;
}

TEST(StateDict, LongListsAreCut) {
  const auto dir = fresh_dir("long");
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (int i = 0; i < 25; ++i)
    state.emplace_back("junk." + std::to_string(100 + i), torch::zeros({1}));
  save_safetensors(dir / "model.safetensors", state);
  torch::nn::Linear lin(2, 2);
  const auto msg =
      error_of([&] { load_state_dict(*lin, Checkpoint::open(dir), torch::kFloat32, torch::kCPU); });
  EXPECT_NE(msg.find("2 missing: bias weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("25 unexpected: junk.100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("junk.119 ... (+5 more)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("junk.120"), std::string::npos) << msg;
}

TEST(StateDict, RandomWeightsDeterministicBf16ExactAndScaled) {
  Tiny a;
  Tiny b;
  init_random_weights(*a, 42);
  init_random_weights(*b, 42);
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  for (const auto& p : pa) {
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), p.value().to(torch::kBFloat16).to(torch::kFloat32)))
        << p.key();
  }
  EXPECT_TRUE(torch::equal(pa["blocks.0.norm.weight"], torch::ones({6})));
  const auto bias = pa["blocks.0.proj.bias"];
  EXPECT_GT(bias.abs().max().item<float>(), 0.0F);
  EXPECT_LT(bias.abs().max().item<float>(), 0.1F);
  // Different parameters draw different numbers; other seeds give other weights.
  EXPECT_FALSE(torch::equal(pa["blocks.0.proj.weight"], pa["blocks.1.proj.weight"]));
  Tiny c;
  init_random_weights(*c, 43);
  EXPECT_FALSE(torch::equal(pa["to_out.0.weight"], c->named_parameters()["to_out.0.weight"]));
  // Buffers untouched.
  EXPECT_TRUE(torch::equal(a->named_buffers()["freqs"], torch::zeros({5})));
}

TEST(StateDict, RandomWeightScaleFollowsFanIn) {
  torch::nn::Linear wide(torch::nn::LinearOptions(1024, 256));
  init_random_weights(*wide, 7);
  const double std = wide->weight.std().item<double>();
  EXPECT_NEAR(std * std::sqrt(1024.0), 1.0, 0.02);
  EXPECT_NEAR(wide->weight.mean().item<double>(), 0.0, 0.002);
}

TEST(StateDict, RandomWeightsIndependentOfOtherParameters) {
  // The same name gets the same values whatever else the module holds.
  torch::nn::Sequential small(torch::nn::Linear(3, 3));
  torch::nn::Sequential big(torch::nn::Linear(3, 3), torch::nn::Linear(3, 8));
  init_random_weights(*small, 5);
  init_random_weights(*big, 5);
  EXPECT_TRUE(
      torch::equal(small->named_parameters()["0.weight"], big->named_parameters()["0.weight"]));
}

TEST(StateDict, RandomWeightsKeepDtype) {
  torch::nn::Linear lin(8, 8);
  lin->to(torch::kBFloat16);
  init_random_weights(*lin, 1);
  torch::nn::Linear ref(8, 8);
  init_random_weights(*ref, 1);
  EXPECT_EQ(lin->weight.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(lin->weight.to(torch::kFloat32), ref->weight));
}

// A tensor-parallel shard of two layers: "up" holds rows, "down" columns of the whole weights.
struct ShardImpl : torch::nn::Module {
  explicit ShardImpl(std::int64_t parts) {
    up = register_parameter("up", torch::zeros({6 / parts, 4}));
    up_bias = register_parameter("up_bias", torch::zeros({6 / parts}));
    down = register_parameter("down", torch::zeros({4, 6 / parts}));
    down_bias = register_parameter("down_bias", torch::zeros({4}));
  }
  torch::Tensor up, up_bias, down, down_bias;
};
TORCH_MODULE(Shard);

ShardPlan plan_of(std::int64_t index, std::int64_t parts) {
  return [=](const std::string& name) -> std::optional<TensorSlice> {
    if (name == "up" || name == "up_bias") return TensorSlice{0, index, parts};
    if (name == "down") return TensorSlice{1, index, parts};
    return std::nullopt;
  };
}

TEST(StateDict, TensorSlicesCopyExactlyTheSlice) {
  const auto dir = fresh_dir("slice");
  const auto t = (torch::arange(48, torch::kFloat32).reshape({4, 6, 2}) / 4).to(torch::kBFloat16);
  save_safetensors(dir / "model.safetensors", {{"t", t}});
  const auto ckpt = Checkpoint::open(dir);
  for (std::int64_t dim = 0; dim < 3; ++dim) {
    const auto length = t.size(dim) / 2;
    const auto got = ckpt.tensor_slice("t", dim, length, length);
    EXPECT_EQ(got.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(torch::equal(got, t.narrow(dim, length, length).to(torch::kFloat32)))
        << "dim " << dim;
  }
  EXPECT_TRUE(torch::equal(ckpt.tensor_slice("t", 1, 0, 0, torch::kBFloat16), t.narrow(1, 0, 0)));
  const auto error = error_of([&] { (void)ckpt.tensor_slice("t", 1, 4, 3); });
  EXPECT_NE(error.find("tensor 't': slice [4, 7) of dim 1 is outside its shape of 3 dims"),
            std::string::npos)
      << error;
  EXPECT_NE(error_of([&] { (void)ckpt.tensor_slice("t", 3, 0, 1); }), "");
}

TEST(StateDict, AShardPlanLoadsOnlyEachShardsSlices) {
  const auto dir = fresh_dir("shard");
  Shard whole(1);
  const auto state = state_of(*whole, 0.25F);
  save_safetensors(dir / "model.safetensors", state);
  std::map<std::string, torch::Tensor> full;
  for (const auto& [name, value] : state) full.emplace(name, value.to(torch::kFloat32));
  for (std::int64_t r = 0; r < 2; ++r) {
    Shard shard(2);
    LoadOptions options;
    options.shard = plan_of(r, 2);
    load_state_dict(*shard, Checkpoint::open(dir), torch::kFloat32, torch::kCPU, options);
    EXPECT_TRUE(torch::equal(shard->up, full["up"].narrow(0, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->up_bias, full["up_bias"].narrow(0, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->down, full["down"].narrow(1, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->down_bias, full["down_bias"]));  // a row-split bias is whole
  }
  // Parts that do not divide the checkpoint's dimension, and a module of the wrong shard size.
  const auto shard_error = [&](Shard& module, std::int64_t parts) {
    LoadOptions options;
    options.shard = plan_of(0, parts);
    return error_of([&] {
      load_state_dict(*module, Checkpoint::open(dir), torch::kFloat32, torch::kCPU, options);
    });
  };
  Shard four(4);  // up [1, 4] against [6, 4] / 4
  const auto error = shard_error(four, 4);
  EXPECT_NE(
      error.find(
          "up (checkpoint [6, 4] in model.safetensors cannot be split in 4 parts along dim 0)"),
      std::string::npos)
      << error;
  Shard three(3);
  const auto wrong = shard_error(three, 2);
  EXPECT_NE(
      wrong.find(
          "down (checkpoint [4, 6], shard 0/2 of dim 1 [4, 3] in model.safetensors, model [4, 2])"),
      std::string::npos)
      << wrong;
}

TEST(StateDict, RandomWeightsOfAShardAreTheSlicesOfTheWholeModels) {
  Shard whole(1);
  init_random_weights(*whole, 17);
  for (std::int64_t r = 0; r < 2; ++r) {
    Shard shard(2);
    init_random_weights(*shard, 17, plan_of(r, 2));
    EXPECT_TRUE(torch::equal(shard->up, whole->up.narrow(0, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->up_bias, whole->up_bias.narrow(0, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->down, whole->down.narrow(1, 3 * r, 3)));
    EXPECT_TRUE(torch::equal(shard->down_bias, whole->down_bias));
  }
}

}  // namespace
}  // namespace omnidp::models
