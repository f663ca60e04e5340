#include "omnidp/models/weights/checkpoint.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "test_files.hpp"

namespace omnidp::models {
namespace {

using testing::error_of;
using testing::fresh_dir;
namespace fs = std::filesystem;

TEST(Checkpoint, SingleFileFolder) {
  const auto dir = fresh_dir("single");
  save_safetensors(
      dir / "diffusion_pytorch_model.safetensors",
      {{"b.weight", torch::ones({2, 2}).to(torch::kBFloat16)}, {"a.bias", torch::zeros({2})}});
  testing::write_bytes(dir / "config.json", R"({"num_layers": 2})");
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"a.bias", "b.weight"}));
  EXPECT_EQ(ckpt.size(), 2U);
  EXPECT_EQ(ckpt.files().size(), 1U);
  EXPECT_EQ(ckpt.meta("b.weight").dtype, SafetensorsDtype::bf16);
  EXPECT_TRUE(torch::equal(ckpt.tensor("b.weight"), torch::ones({2, 2})));
  EXPECT_EQ(ckpt.tensor("b.weight", torch::kBFloat16).scalar_type(), torch::kBFloat16);
  EXPECT_EQ(read_json(dir / "config.json")["num_layers"], 2);
  const auto msg = error_of([&] { (void)ckpt.tensor("c"); });
  EXPECT_NE(msg.find("checkpoint has no tensor named 'c'"), std::string::npos) << msg;
  // A file path works too.
  EXPECT_EQ(Checkpoint::open(dir / "diffusion_pytorch_model.safetensors").size(), 2U);
}

TEST(Checkpoint, ShardedIndex) {
  const auto dir = fresh_dir("sharded");
  save_safetensors(dir / "model-00001-of-00002.safetensors",
                   {{"layers.0.w", torch::full({3}, 1.0F)}, {"layers.1.w", torch::full({3}, 2.0F)}});
  save_safetensors(dir / "model-00002-of-00002.safetensors", {{"head.w", torch::full({2, 2}, 3.0F)}});
  testing::write_bytes(dir / "model.safetensors.index.json", R"({
    "metadata": {"total_size": 32},
    "weight_map": {"layers.0.w": "model-00001-of-00002.safetensors",
                   "layers.1.w": "model-00001-of-00002.safetensors",
                   "head.w": "model-00002-of-00002.safetensors"}})");
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"head.w", "layers.0.w", "layers.1.w"}));
  EXPECT_EQ(ckpt.files().size(), 2U);
  EXPECT_TRUE(torch::equal(ckpt.tensor("layers.1.w"), torch::full({3}, 2.0F)));
  EXPECT_TRUE(torch::equal(ckpt.tensor("head.w"), torch::full({2, 2}, 3.0F)));
}

TEST(Checkpoint, IndexErrors) {
  const auto dir = fresh_dir("badindex");
  save_safetensors(dir / "s1.safetensors", {{"a", torch::ones({1})}});
  testing::write_bytes(
      dir / "model.safetensors.index.json",
      R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors", "c": "s1.safetensors"}})");
  auto msg = error_of([&] { (void)Checkpoint::open(dir); });
  EXPECT_NE(msg.find("2 tensors of the weight_map are missing from their shard: b (in "
                     "s1.safetensors) c (in s1.safetensors)"),
            std::string::npos)
      << msg;

  testing::write_bytes(dir / "model.safetensors.index.json",
                       R"({"weight_map": {"a": "s2.safetensors"}})");
  msg = error_of([&] { (void)Checkpoint::open(dir); });
  EXPECT_NE(msg.find("s2.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;

  testing::write_bytes(dir / "model.safetensors.index.json",
                       R"({"weight_map": {"a": "../s1.safetensors"}})");
  msg = error_of([&] { (void)Checkpoint::open(dir); });
  EXPECT_NE(msg.find("names an invalid shard '../s1.safetensors'"), std::string::npos) << msg;

  testing::write_bytes(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  msg = error_of([&] { (void)Checkpoint::open(dir); });
  EXPECT_NE(msg.find("index has no 'weight_map' object"), std::string::npos) << msg;

  testing::write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": )");
  msg = error_of([&] { (void)Checkpoint::open(dir); });
  EXPECT_NE(msg.find("model.safetensors.index.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(Checkpoint, ChoosesStandardNameAmongSeveral) {
  const auto dir = fresh_dir("choose");
  save_safetensors(dir / "diffusion_pytorch_model.safetensors", {{"std", torch::ones({1})}});
  save_safetensors(dir / "diffusion_pytorch_model.fp16.safetensors", {{"variant", torch::ones({1})}});
  EXPECT_EQ(Checkpoint::open(dir).names(), (std::vector<std::string>{"std"}));

  const auto other = fresh_dir("ambiguous");
  save_safetensors(other / "x.safetensors", {{"x", torch::ones({1})}});
  save_safetensors(other / "y.safetensors", {{"y", torch::ones({1})}});
  const auto msg = error_of([&] { (void)Checkpoint::open(other); });
  EXPECT_NE(msg.find("several candidate checkpoint files (x.safetensors, y.safetensors)"),
            std::string::npos)
      << msg;
}

TEST(Checkpoint, MissingFolderAndEmptyFolder) {
  const auto dir = fresh_dir("empty");
  EXPECT_NE(error_of([&] {
              (void)Checkpoint::open(dir);
            }).find("no *.safetensors or *.safetensors.index.json"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)Checkpoint::open(dir / "nope"); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)read_json(dir / "none.json"); }).find("cannot open JSON file"),
            std::string::npos);
}

TEST(Checkpoint, FileOfATensorInShards) {
  const auto dir = fresh_dir("file-of");
  save_safetensors(dir / "a.safetensors", {{"x", torch::ones({1})}});
  save_safetensors(dir / "b.safetensors", {{"y", torch::ones({1})}});
  testing::write_bytes(dir / "m.safetensors.index.json",
                       R"({"weight_map": {"x": "a.safetensors", "y": "b.safetensors"}})");
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_EQ(ckpt.file("x"), dir / "a.safetensors");
  EXPECT_EQ(ckpt.file("y"), dir / "b.safetensors");
  EXPECT_NE(error_of([&] { (void)ckpt.file("z"); }).find("checkpoint has no tensor named 'z'"),
            std::string::npos);
}

TEST(SnapshotComponent, NamesTheMissingFolderOrConfigFile) {
  const auto snap = fresh_dir("component");
  auto msg =
      error_of([&] { (void)snapshot_component(snap, "vae", "config.json", "AutoencoderKLWan"); });
  EXPECT_EQ(msg, (snap / "vae" / "config.json").string() + ": missing: the snapshot " +
                     snap.string() + " has no vae/ folder (AutoencoderKLWan)");
  fs::create_directories(snap / "scheduler");
  testing::write_bytes(snap / "scheduler" / "config.json", "{}");  // not the file asked for
  msg = error_of(
      [&] { (void)snapshot_component(snap, "scheduler", "scheduler_config.json", "UniPC"); });
  EXPECT_EQ(msg,
            (snap / "scheduler" / "scheduler_config.json").string() +
                ": missing: the snapshot's scheduler/ folder has no scheduler_config.json (UniPC)");
  testing::write_bytes(snap / "scheduler" / "scheduler_config.json", "{}");
  EXPECT_EQ(snapshot_component(snap, "scheduler", "scheduler_config.json", "UniPC"),
            snap / "scheduler");
}

TEST(Checkpoint, FixtureComponentsOpen) {
  OMNIDP_REQUIRE_FIXTURES();
  const fs::path root = omnidp::test::fixture("diffusers-ref");
  for (const char* component : {"wan_transformer", "wan22_vae", "hv15_transformer", "hv15_vae"}) {
    const auto ckpt = Checkpoint::open(root / component);
    EXPECT_GT(ckpt.size(), 10U) << component;
    EXPECT_EQ(ckpt.files().front().filename(), "diffusion_pytorch_model.safetensors");
    for (const auto& name : ckpt.names())
      EXPECT_EQ(ckpt.meta(name).dtype, SafetensorsDtype::bf16) << name;
    EXPECT_TRUE(read_json(root / component / "config.json").is_object());
  }
  const auto wan = Checkpoint::open(root / "wan_transformer");
  EXPECT_EQ(wan.meta("blocks.0.attn1.norm_q.weight").shape, (std::vector<std::int64_t>{128}));
}

}  // namespace
}  // namespace omnidp::models
