// Whole snapshots end to end (docs/models.md, "Loading a snapshot"): complete Diffusers-layout
// snapshots of HunyuanVideo-1.5 (T2V and I2V checkpoints) and Wan2.2-TI2V-5B are assembled from
// the reference fixtures' components in a temporary folder, then the real omni-dp-batch
// generates text-to-video and image-to-video requests from them with `weights: pretrained`
// (prompt text through the snapshot's tokenizers and text encoders, the I2V image through its
// SigLIP encoder). Broken snapshots must stop the job with one error naming the folder and file.
//
// The fixtures' text encoders are 64 wide while their transformers take 48/40 (HunyuanVideo-1.5)
// and 32 (Wan) wide text: the snapshot's transformer is the fixture's with its text input
// projections widened to 64 (the extra columns repeat the first ones; config.json says 64). The
// whole-pipeline reference videos were made from precomputed embeddings, so no comparison with
// them can hold here; the tests check shapes, the I2V bucket, and seeds (same request, same video).

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/models/text/qwen2_tokenizer.hpp"
#include "omnidp/models/text/sentencepiece_model.hpp"
#include "omnidp/models/weights/safetensors_header.hpp"
#include "omnidp/results/result_files.hpp"
#include "png_file.hpp"
#include "test_files.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path ref(const std::string& name) { return omnidp::test::fixture("diffusers-ref/" + name); }
fs::path text_ref(const std::string& name) {
  return omnidp::test::fixture("transformers-ref/" + name);
}

using omnidp::cli::testing::read_text;
using omnidp::cli::testing::write_text;

// A fixture file linked into the snapshot (as Hugging Face cache snapshots link their blobs).
void link(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::create_symlink(from, to);
}

// ---- safetensors, torch-free: the test widens a few tensors of a fixture checkpoint.

struct RawTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

std::map<std::string, RawTensor> read_safetensors(const fs::path& file) {
  const std::string data = read_text(file);
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(data.data()),
                                            data.size());
  const auto header = omnidp::models::parse_safetensors_header(bytes, data.size(), file.string());
  std::map<std::string, RawTensor> out;
  for (const auto& t : header.tensors) {
    out[t.name] = {std::string(omnidp::models::to_string(t.dtype)), t.shape,
                   data.substr(header.data_offset + t.begin, t.nbytes())};
  }
  return out;
}

void write_safetensors(const fs::path& file, const std::map<std::string, RawTensor>& tensors) {
  json header = json::object();
  std::string body;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {body.size(), body.size() + t.bytes.size()}}};
    body += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  write_text(file, out + text + body);
}

// The last dimension of a [rows, in] (or [in]) tensor grown to `width` by repeating its first
// columns: the widened model still depends on every input feature.
void widen_last_dim(RawTensor& t, std::int64_t width) {
  const std::int64_t in = t.shape.back();
  ASSERT_LE(in, width);
  ASSERT_LE(width - in, in);
  const std::size_t item = t.bytes.size() / static_cast<std::size_t>(in) /
                           static_cast<std::size_t>(t.shape.size() == 2 ? t.shape[0] : 1);
  const std::int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
  std::string out;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row_bytes = static_cast<std::size_t>(in) * item;
    const std::string row = t.bytes.substr(static_cast<std::size_t>(r) * row_bytes, row_bytes);
    out += row + row.substr(0, static_cast<std::size_t>(width - in) * item);
  }
  t.bytes = std::move(out);
  t.shape.back() = width;
}

// A fixture transformer copied to `to` with `widen` tensors' last dimension set to a new width
// and `config` merged into its config.json.
void widened_component(const fs::path& from, const fs::path& to,
                       const std::map<std::string, std::int64_t>& widen, const json& config) {
  auto tensors = read_safetensors(from / "diffusion_pytorch_model.safetensors");
  for (const auto& [name, width] : widen) {
    ASSERT_EQ(tensors.count(name), 1U) << name;
    widen_last_dim(tensors[name], width);
  }
  write_safetensors(to / "diffusion_pytorch_model.safetensors", tensors);
  auto c = json::parse(read_text(from / "config.json"));
  c.merge_patch(config);
  write_text(to / "config.json", c.dump(2));
}

// ---- tokenizers written by the test

// GPT-2's byte-to-unicode map (byte-level BPE), as the tokenizer reads it.
using models::text::byte_level_char;

// A Qwen2 byte-level BPE folder: the 256 byte tokens, two merges, the chat template's special
// tokens (ids below the fixture model's vocab_size 512).
void write_qwen_tokenizer(const fs::path& dir) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(b)] = b;
  const std::string space = byte_level_char(' ');
  vocab[space + "a"] = 256;
  vocab["he"] = 257;
  write_text(dir / "vocab.json", vocab.dump());
  write_text(dir / "merges.txt", "#version: 0.2\n" + space + " a\nh e\n");
  write_text(dir / "tokenizer_config.json",
             R"({"tokenizer_class": "Qwen2Tokenizer", "padding_side": "right", "added_tokens_decoder": {
                  "300": {"content": "<|endoftext|>", "special": true},
                  "301": {"content": "<|im_start|>", "special": true},
                  "302": {"content": "<|im_end|>", "special": true}}})");
}

// A UMT5 SentencePiece folder: a word model (ids below the fixture's vocab 256).
void write_umt5_tokenizer(const fs::path& dir) {
  fs::create_directories(dir);
  write_text(dir / "spiece.model",
             models::text::unigram_word_model(
                 {"the", "cat", "walks", "on", "grass", "a", "dog", "runs", "in", "park"})
                 .serialize());
  write_text(dir / "tokenizer_config.json", R"({"tokenizer_class": "T5Tokenizer", "extra_ids": 0})");
}

// ---- snapshots

enum class Hv15Task { t2v, i2v };

// HunyuanVideo-1.5 as the Diffusers checkpoints hunyuanvideo-community/HunyuanVideo-1.5-
// Diffusers-480p_t2v / _i2v lay it out.
void write_hv15_snapshot(const fs::path& snap, Hv15Task task) {
  const bool i2v = task == Hv15Task::i2v;
  json index = {
      {"_class_name", i2v ? "HunyuanVideo15ImageToVideoPipeline" : "HunyuanVideo15Pipeline"},
      {"_diffusers_version", "0.36.0.dev0"},
      {"guider", {"diffusers", "ClassifierFreeGuidance"}},
      {"scheduler", {"diffusers", "FlowMatchEulerDiscreteScheduler"}},
      {"text_encoder", {"transformers", "Qwen2_5_VLTextModel"}},
      {"text_encoder_2", {"transformers", "T5EncoderModel"}},
      {"tokenizer", {"transformers", "Qwen2TokenizerFast"}},
      {"tokenizer_2", {"transformers", "ByT5Tokenizer"}},
      {"transformer", {"diffusers", "HunyuanVideo15Transformer3DModel"}},
      {"vae", {"diffusers", "AutoencoderKLHunyuanVideo15"}}};
  if (i2v) {
    index["image_encoder"] = {"transformers", "SiglipVisionModel"};
    index["feature_extractor"] = {"transformers", "SiglipImageProcessor"};
  }
  write_text(snap / "model_index.json", index.dump(2));
  // Qwen2.5-VL and byT5 of the fixtures are 64 wide.
  widened_component(ref(i2v ? "hv15_transformer_i2v" : "hv15_transformer"), snap / "transformer",
                    {{"context_embedder.proj_in.weight", 64},
                     {"context_embedder.time_text_embed.text_embedder.linear_1.weight", 64},
                     {"context_embedder_2.norm.weight", 64},
                     {"context_embedder_2.norm.bias", 64},
                     {"context_embedder_2.linear_1.weight", 64}},
                    {{"text_embed_dim", 64}, {"text_embed_2_dim", 64}});
  // hv15_vae_encode: the fixture VAE that can encode (the I2V condition frame).
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) {
    link(ref("hv15_vae_encode") / f, snap / "vae" / f);
  }
  link(ref("hv15_pipeline_t2v") / "scheduler" / "scheduler_config.json",
       snap / "scheduler" / "scheduler_config.json");
  link(ref("hv15_pipeline_t2v") / "guider" / "guider_config.json",
       snap / "guider" / "guider_config.json");
  for (const char* f : {"config.json", "model.safetensors"}) {
    link(text_ref("qwen25vl_text") / f, snap / "text_encoder" / f);
    link(text_ref("byt5_encoder") / f, snap / "text_encoder_2" / f);
  }
  write_qwen_tokenizer(snap / "tokenizer");
  write_text(snap / "tokenizer_2" / "tokenizer_config.json",
             R"({"tokenizer_class": "ByT5Tokenizer", "extra_ids": 0})");
  if (i2v) {
    for (const char* f : {"config.json", "model.safetensors"}) {
      link(ref("siglip_vision") / f, snap / "image_encoder" / f);
    }
    link(ref("siglip_vision") / "preprocessor_config.json",
         snap / "feature_extractor" / "preprocessor_config.json");
  }
}

// Wan2.2-TI2V-5B as Wan-AI/Wan2.2-TI2V-5B-Diffusers lays it out: one model for both tasks.
void write_wan_snapshot(const fs::path& snap) {
  write_text(snap / "model_index.json", R"({
  "_class_name": "WanPipeline",
  "_diffusers_version": "0.35.0.dev0",
  "boundary_ratio": null,
  "expand_timesteps": true,
  "scheduler": ["diffusers", "UniPCMultistepScheduler"],
  "text_encoder": ["transformers", "UMT5EncoderModel"],
  "tokenizer": ["transformers", "T5TokenizerFast"],
  "transformer": ["diffusers", "WanTransformer3DModel"],
  "transformer_2": [null, null],
  "vae": ["diffusers", "AutoencoderKLWan"]
})");
  // UMT5 of the fixture is 64 wide.
  widened_component(ref("wan_transformer"), snap / "transformer",
                    {{"condition_embedder.text_embedder.linear_1.weight", 64}}, {{"text_dim", 64}});
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) {
    link(ref("wan22_vae") / f, snap / "vae" / f);
  }
  write_text(snap / "scheduler" / "scheduler_config.json", R"({
  "_class_name": "UniPCMultistepScheduler",
  "beta_end": 0.02, "beta_schedule": "linear", "beta_start": 0.0001, "disable_corrector": [],
  "dynamic_thresholding_ratio": 0.995, "final_sigmas_type": "zero", "flow_shift": 5.0,
  "lower_order_final": true, "num_train_timesteps": 1000, "predict_x0": true,
  "prediction_type": "flow_prediction", "rescale_betas_zero_snr": false, "sample_max_value": 1.0,
  "solver_order": 2, "solver_p": null, "solver_type": "bh2", "steps_offset": 0, "thresholding": false,
  "timestep_spacing": "linspace", "trained_betas": null, "use_beta_sigmas": false,
  "use_exponential_sigmas": false, "use_flow_sigmas": true, "use_karras_sigmas": false
})");
  for (const char* f : {"config.json", "model.safetensors"}) {
    link(text_ref("umt5_encoder") / f, snap / "text_encoder" / f);
  }
  write_umt5_tokenizer(snap / "tokenizer");
}

// The Wan family's layouts (models/wan/family.hpp) from the repository's tiny fixtures
// (scripts/wan_family_fixtures.py): Wan2.1 text-to-video, Wan2.2-A14B text-to-video (two
// experts, boundary 0.875) and image-to-video (two 36-channel experts, boundary 0.9), and
// Wan2.1 image-to-video (one 36-channel transformer with image_dim, CLIP image_encoder/ and
// image_processor/).
enum class WanFamilySnapshot { wan21_t2v, a14b_t2v, a14b_i2v, wan21_i2v, wan21_flf2v };

void write_wan_family_snapshot(const fs::path& snap, WanFamilySnapshot kind) {
  const bool flf2v = kind == WanFamilySnapshot::wan21_flf2v;
  const bool clip = kind == WanFamilySnapshot::wan21_i2v || flf2v;
  const bool two = kind != WanFamilySnapshot::wan21_t2v && !clip;
  const bool i2v = kind == WanFamilySnapshot::a14b_i2v || clip;
  json index = {
      {"_class_name", i2v ? "WanImageToVideoPipeline" : "WanPipeline"},
      {"_diffusers_version", "0.35.0.dev0"},
      {"boundary_ratio", two ? json(i2v ? 0.9 : 0.875) : json()},
      {"expand_timesteps", false},
      {"scheduler", {"diffusers", "UniPCMultistepScheduler"}},
      {"text_encoder", {"transformers", "UMT5EncoderModel"}},
      {"tokenizer", {"transformers", "T5TokenizerFast"}},
      {"transformer", {"diffusers", "WanTransformer3DModel"}},
      {"transformer_2", two ? json{"diffusers", "WanTransformer3DModel"} : json{nullptr, nullptr}},
      {"vae", {"diffusers", "AutoencoderKLWan"}}};
  if (i2v) {
    index["image_encoder"] = clip ? json{"transformers", "CLIPVisionModel"} : json{nullptr, nullptr};
    index["image_processor"] =
        clip ? json{"transformers", "CLIPImageProcessor"} : json{nullptr, nullptr};
  }
  if (clip) {
    for (const char* f : {"config.json", "model.safetensors"}) {
      link(ref("clip_vision") / f, snap / "image_encoder" / f);
    }
    link(ref("clip_vision") / "preprocessor_config.json",
         snap / "image_processor" / "preprocessor_config.json");
  }
  write_text(snap / "model_index.json", index.dump(2));
  // UMT5 of the fixture is 64 wide, the family's tiny transformers 32.
  const std::string t1 = flf2v  ? "wan21_flf2v_transformer"
                         : clip ? "wan21_i2v_transformer"
                         : i2v  ? "wan_i2v_transformer"
                                : "wan21_transformer";
  const json text_width = {{"text_dim", 64}};
  const std::map<std::string, std::int64_t> widen{
      {"condition_embedder.text_embedder.linear_1.weight", 64}};
  widened_component(ref(t1), snap / "transformer", widen, text_width);
  const std::string t2 = t1 + "_2";
  if (two) widened_component(ref(t2), snap / "transformer_2", widen, text_width);
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) {
    link(ref("wan21_vae") / f, snap / "vae" / f);
  }
  write_text(snap / "scheduler" / "scheduler_config.json", R"({
  "_class_name": "UniPCMultistepScheduler", "flow_shift": 3.0, "num_train_timesteps": 1000,
  "prediction_type": "flow_prediction", "solver_order": 2, "solver_type": "bh2",
  "use_flow_sigmas": true, "lower_order_final": true, "predict_x0": true
})");
  for (const char* f : {"config.json", "model.safetensors"}) {
    link(text_ref("umt5_encoder") / f, snap / "text_encoder" / f);
  }
  write_umt5_tokenizer(snap / "tokenizer");
}

// An RGB PNG of width x height (a gradient).
void write_png(const fs::path& file, int width, int height) {
  fs::create_directories(file.parent_path());
  ASSERT_TRUE(
      omnidp::test::write_rgb_png(file, width, height, omnidp::test::gradient_rgb(width, height)));
}

std::string config_yaml(const std::string& model, int height, int width) {
  return "model:\n  name: " + model +
         "\n  weights: pretrained\n  path: snap\n  dtype: fp32\n  device: cpu\n  torch_threads: 1\n"
         "generation:\n  num_frames: 5\n  height: " +
         std::to_string(height) + "\n  width: " + std::to_string(width) +
         "\n  num_inference_steps: 2\n  guidance_scale: " +
         (model == "hunyuanvideo-1.5" ? "6.0" : "5.0") +
         "\n  flow_shift: 5.0\ninput:\n  manifest: m.jsonl\noutput:\n  dir: out\n";
}

struct BatchRun {
  int exit_code = -1;
  std::string err;
};

BatchRun run_batch(const fs::path& dir) {
  const std::string cmd = "export OMP_NUM_THREADS=1; cd '" + dir.string() +
                          "' && exec " OMNIDP_BATCH_EXE
                          " --config c.yaml > stdout.txt 2> stderr.txt";
  BatchRun r;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = read_text(dir / "stderr.txt");
  return r;
}

class SnapshotE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    OMNIDP_REQUIRE_FIXTURES();
    dir_ = fs::temp_directory_path() /
           ("omnidp-snapshot-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  // Runs the manifest `lines` and returns the rows by id (every one must be ok with a video).
  std::map<std::string, results::StoredRow> generate(const std::string& model, int height, int width,
                                                     const std::vector<std::string>& lines) {
    write_text(dir_ / "c.yaml", config_yaml(model, height, width));
    std::string manifest;
    for (const auto& l : lines) manifest += l + "\n";
    write_text(dir_ / "m.jsonl", manifest);
    const auto r = run_batch(dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, results::StoredRow> rows;
    if (r.exit_code != 0) return rows;
    for (auto& row : results::read_stored_rows(dir_ / "out" / "results.h5")) {
      EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id << ": " << row.record.error;
      EXPECT_TRUE(row.video_present) << row.record.id;
      EXPECT_EQ(row.record.video_sha256.size(), 64U) << row.record.id;
      rows.emplace(row.record.id, row);
    }
    EXPECT_EQ(rows.size(), lines.size());
    return rows;
  }

  // Runs c.yaml/m.jsonl as written and expects exit 2 with one error line holding `fragments`.
  void expect_refused(const std::vector<std::string>& fragments) {
    const auto r = run_batch(dir_);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const auto& f : fragments) {
      std::string want = f;
      for (auto at = want.find("@DIR@"); at != std::string::npos; at = want.find("@DIR@", at)) {
        want.replace(at, 5, dir_.string());
      }
      EXPECT_NE(r.err.find(want), std::string::npos) << "missing: " << want << "\nstderr:\n"
                                                     << r.err;
    }
    EXPECT_FALSE(fs::exists(dir_ / "out")) << "the job created its output folder";
  }

  fs::path dir_;
};

void expect_shape(const results::StoredRow& row, int frames, int height, int width) {
  EXPECT_EQ(row.record.frames, frames) << row.record.id;
  EXPECT_EQ(row.record.height, height) << row.record.id;
  EXPECT_EQ(row.record.width, width) << row.record.id;
}

const std::string& sha(const std::map<std::string, results::StoredRow>& rows, const std::string& id) {
  return rows.at(id).record.video_sha256;
}

TEST_F(SnapshotE2e, HunyuanVideoTextToVideoFromPromptText) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  ASSERT_FALSE(HasFatalFailure());
  const auto rows =
      generate("hunyuanvideo-1.5", 32, 48,
               {R"({"id": "a", "prompt": "a red kite over the sea", "seed": 1})",
                R"({"id": "a_again", "prompt": "a red kite over the sea", "seed": 1})",
                R"({"id": "a_seed2", "prompt": "a red kite over the sea", "seed": 2})",
                R"({"id": "glyph", "prompt": "a sign that reads \"OPEN\"", "seed": 1})"});
  ASSERT_EQ(rows.size(), 4U);
  for (const auto& [id, row] : rows) expect_shape(row, 5, 32, 48);
  EXPECT_EQ(sha(rows, "a"), sha(rows, "a_again"));
  EXPECT_NE(sha(rows, "a"), sha(rows, "a_seed2"));
  EXPECT_NE(sha(rows, "a"), sha(rows, "glyph"));  // the prompt goes through the text encoders
}

TEST_F(SnapshotE2e, HunyuanVideoImageToVideoTakesTheImagesBucket) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::i2v);
  write_png(dir_ / "img" / "tall.png", 50, 100);  // h/w = 2 at target_size 64: the 80 x 48 bucket
  write_png(dir_ / "img" / "wide.png", 90, 70);   // as the fixture hv15_pipeline_i2v: 64 x 64
  ASSERT_FALSE(HasFatalFailure());
  const auto rows = generate(
      "hunyuanvideo-1.5", 32, 48,
      {R"({"id": "tall", "prompt": "a red kite", "image": "img/tall.png", "seed": 1})",
       R"({"id": "tall_again", "prompt": "a red kite", "image": "img/tall.png", "seed": 1})",
       R"({"id": "tall_seed2", "prompt": "a red kite", "image": "img/tall.png", "seed": 2})",
       R"({"id": "wide", "prompt": "a red kite", "image": "img/wide.png", "seed": 1})",
       R"({"id": "sized", "prompt": "a red kite", "image": "img/tall.png", "seed": 1, "height": 32, "width": 32})"});
  ASSERT_EQ(rows.size(), 5U);
  expect_shape(rows.at("tall"), 5, 80, 48);
  expect_shape(rows.at("tall_again"), 5, 80, 48);
  expect_shape(rows.at("tall_seed2"), 5, 80, 48);
  expect_shape(rows.at("wide"), 5, 64, 64);
  expect_shape(rows.at("sized"), 5, 32, 32);  // the line's own size overrides the bucket
  EXPECT_EQ(sha(rows, "tall"), sha(rows, "tall_again"));
  EXPECT_NE(sha(rows, "tall"), sha(rows, "tall_seed2"));
}

TEST_F(SnapshotE2e, WanTextAndImageToVideoFromOneSnapshot) {
  write_wan_snapshot(dir_ / "snap");
  write_png(dir_ / "img" / "a.png", 80, 40);  // stretched to the request's 64 x 32
  ASSERT_FALSE(HasFatalFailure());
  const auto rows = generate(
      "wan2.2-ti2v-5b", 32, 64,
      {R"({"id": "t", "prompt": "the cat walks on the grass", "seed": 1})",
       R"({"id": "t_again", "prompt": "the cat walks on the grass", "seed": 1})",
       R"({"id": "t_seed2", "prompt": "the cat walks on the grass", "seed": 2})",
       R"({"id": "t_other", "prompt": "a dog runs in the park", "seed": 1})",
       R"({"id": "i", "prompt": "the cat walks on the grass", "image": "img/a.png", "seed": 1})",
       R"({"id": "i_again", "prompt": "the cat walks on the grass", "image": "img/a.png", )"
       R"("seed": 1})"});
  ASSERT_EQ(rows.size(), 6U);
  for (const auto& [id, row] : rows) expect_shape(row, 5, 32, 64);
  EXPECT_EQ(sha(rows, "t"), sha(rows, "t_again"));
  EXPECT_NE(sha(rows, "t"), sha(rows, "t_seed2"));
  EXPECT_NE(sha(rows, "t"), sha(rows, "t_other"));
  EXPECT_EQ(sha(rows, "i"), sha(rows, "i_again"));
  EXPECT_NE(sha(rows, "i"), sha(rows, "t"));
}

// ---- broken snapshots: exit 2 before anything runs, one error naming the folder and the file.

void patch_config(const fs::path& file, const json& patch) {
  auto c = json::parse(read_text(file));
  c.merge_patch(patch);
  write_text(file, c.dump(2));
}

constexpr const char* kTextLine = R"({"id": "a", "prompt": "a red kite", "seed": 1})";

TEST_F(SnapshotE2e, AMissingComponentIsNamed) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  fs::remove_all(dir_ / "snap" / "vae");
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/vae/config.json: missing: the snapshot @DIR@/snap has no vae/ folder "
       "(AutoencoderKLHunyuanVideo15: config.json + safetensors)"});
}

TEST_F(SnapshotE2e, ATransformerWithoutWeightsIsNamed) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  fs::remove(dir_ / "snap" / "transformer" / "diffusion_pytorch_model.safetensors");
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/transformer: no *.safetensors or *.safetensors.index.json in the folder "
       "(expected diffusion_pytorch_model.safetensors or model.safetensors"});
}

TEST_F(SnapshotE2e, MoreLayersThanTheWeightsHold) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  patch_config(dir_ / "snap" / "transformer" / "config.json", {{"num_layers", 3}});
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/transformer: checkpoint does not match the model; ",
       " missing: transformer_blocks.2.",
       "(the model was built from @DIR@/snap/transformer/config.json: do its sizes match these "
       "weights?)"});
}

TEST_F(SnapshotE2e, AWidthTheWeightsDoNotHaveNamesTheTensorAndTheFile) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  patch_config(dir_ / "snap" / "transformer" / "config.json",
               {{"image_embed_dim", 32}});  // the weights: 24
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/transformer: checkpoint does not match the model; ",
       "image_embedder.norm_in.weight (checkpoint [24] in diffusion_pytorch_model.safetensors, "
       "model [32])",
       "(the model was built from @DIR@/snap/transformer/config.json"});
}

TEST_F(SnapshotE2e, ATextEncoderOfAnotherWidthIsNamedBeforeLoading) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  patch_config(dir_ / "snap" / "transformer" / "config.json", {{"text_embed_dim", 48}});
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/text_encoder/config.json: hidden_size 64 does not match text_embed_dim 48 of "
       "@DIR@/snap/transformer/config.json (the encoder's output is the transformer's input)"});
}

TEST_F(SnapshotE2e, ATextToVideoCheckpointAskedForImageToVideo) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::t2v);
  write_png(dir_ / "img" / "a.png", 64, 64);
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n" +
                                   R"({"id": "b", "prompt": "a red kite", "image": "img/a.png"})" +
                                   "\n");
  expect_refused(
      {"@DIR@/m.jsonl:2:task: task i2v, but the snapshot serves t2v only "
       "(HunyuanVideo15Pipeline in @DIR@/snap/model_index.json; input.tasks selects the lines a "
       "job runs)"});
}

TEST_F(SnapshotE2e, AnImageToVideoCheckpointAskedForTextToVideo) {
  write_hv15_snapshot(dir_ / "snap", Hv15Task::i2v);
  write_text(dir_ / "c.yaml", config_yaml("hunyuanvideo-1.5", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/m.jsonl:1:task: task t2v, but the snapshot serves i2v only "
       "(HunyuanVideo15ImageToVideoPipeline in @DIR@/snap/model_index.json; input.tasks selects "
       "the lines a job runs)"});
}

TEST_F(SnapshotE2e, AWanSnapshotWithoutItsTokenizerIsNamed) {
  write_wan_snapshot(dir_ / "snap");
  fs::remove(dir_ / "snap" / "tokenizer" / "spiece.model");
  write_text(dir_ / "c.yaml", config_yaml("wan2.2-ti2v-5b", 32, 64));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/tokenizer/spiece.model: missing: the snapshot has no UMT5 tokenizer "
       "(tokenizer/spiece.model or tokenizer/tokenizer.json)"});
}

TEST_F(SnapshotE2e, AWanTextEncoderOfAnotherWidthIsNamedBeforeLoading) {
  write_wan_snapshot(dir_ / "snap");
  patch_config(dir_ / "snap" / "transformer" / "config.json", {{"text_dim", 32}});
  write_text(dir_ / "c.yaml", config_yaml("wan2.2-ti2v-5b", 32, 64));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"@DIR@/snap/text_encoder/config.json: d_model 64 does not match text_dim 32 of "
       "@DIR@/snap/transformer/config.json (the encoder's output is the transformer's input)"});
}

// ---- the Wan family from prompt text (and image), through omni-dp-batch

TEST_F(SnapshotE2e, Wan21TextToVideoIsReadFromTheSnapshot) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_t2v);
  ASSERT_FALSE(HasFatalFailure());
  const auto rows = generate("wan", 32, 48,
                             {R"({"id": "t", "prompt": "the cat walks on the grass", "seed": 1})",
                              R"({"id": "u", "prompt": "the cat walks on the grass", "seed": 2})"});
  ASSERT_EQ(rows.size(), 2U);
  expect_shape(rows.at("t"), 5, 32, 48);
  EXPECT_NE(sha(rows, "t"), sha(rows, "u"));
}

// The released name is an alias of `wan`, checked against the snapshot: same videos.
TEST_F(SnapshotE2e, A14bTextToVideoRunsBothExpertsUnderEitherName) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_t2v);
  ASSERT_FALSE(HasFatalFailure());
  const std::string line = R"({"id": "t", "prompt": "the cat walks on the grass", "seed": 1})";
  const auto by_alias = generate("wan2.2-t2v-a14b", 32, 48, {line});
  fs::remove_all(dir_ / "out");
  const auto by_family = generate("wan", 32, 48, {line});
  ASSERT_EQ(by_alias.size(), 1U);
  ASSERT_EQ(by_family.size(), 1U);
  EXPECT_EQ(sha(by_alias, "t"), sha(by_family, "t"));
}

// A line without height/width keeps its image's aspect ratio at the area of generation.height x
// width (diffusers' max_area recipe), each side a multiple of 16; a line's own size wins.
TEST_F(SnapshotE2e, A14bImageToVideoFromAnImage) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_i2v);
  write_png(dir_ / "img" / "a.png", 60, 40);  // 3:2 at 32 x 48's area: 32 x 48
  write_png(dir_ / "img" / "b.png", 40, 60);  // 2:3: 48 x 32
  ASSERT_FALSE(HasFatalFailure());
  const auto rows = generate(
      "wan2.2-i2v-a14b", 32, 48,
      {R"({"id": "i", "prompt": "the cat walks on the grass", "image": "img/a.png", "seed": 1})",
       R"({"id": "j", "prompt": "the cat walks on the grass", "image": "img/a.png", "seed": 1})",
       R"({"id": "k", "prompt": "the cat walks on the grass", "image": "img/b.png", "seed": 1})",
       R"({"id": "l", "prompt": "a dog", "image": "img/b.png", "height": 32, "width": 32})",
       R"({"id": "m", "prompt": "the cat walks on the grass", "image": "img/a.png", )"
       R"("last_image": "img/b.png", "seed": 1})"});
  ASSERT_EQ(rows.size(), 5U);
  expect_shape(rows.at("i"), 5, 32, 48);
  expect_shape(rows.at("k"), 5, 48, 32);
  expect_shape(rows.at("l"), 5, 32, 32);
  expect_shape(rows.at("m"), 5, 32, 48);  // the first image's size
  EXPECT_EQ(sha(rows, "i"), sha(rows, "j"));
  EXPECT_NE(sha(rows, "i"), sha(rows, "m"));  // first-last-frame: the last frame conditions it
}

// Wan2.1 I2V: the CLIP tokens of the request's image in every block's cross-attention.
TEST_F(SnapshotE2e, Wan21ImageToVideoTakesTheImagesClipTokens) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_i2v);
  write_png(dir_ / "img" / "a.png", 60, 40);
  write_png(dir_ / "img" / "b.png", 40, 60);  // another image: other tokens, other latents
  ASSERT_FALSE(HasFatalFailure());
  const auto rows = generate(
      "wan2.1-i2v-14b", 32, 48,
      {R"({"id": "i", "prompt": "the cat walks on the grass", "image": "img/a.png", "seed": 1})",
       R"({"id": "j", "prompt": "the cat walks on the grass", "image": "img/a.png", "seed": 1})",
       R"({"id": "k", "prompt": "the cat walks on the grass", "image": "img/b.png", "seed": 1})"});
  ASSERT_EQ(rows.size(), 3U);
  expect_shape(rows.at("i"), 5, 32, 48);
  expect_shape(rows.at("k"), 5, 48, 32);  // the portrait image's aspect (max_area)
  EXPECT_EQ(sha(rows, "i"), sha(rows, "j"));
  EXPECT_NE(sha(rows, "i"), sha(rows, "k"));
}

TEST_F(SnapshotE2e, ATransformerWithImageDimNeedsItsImageEncoder) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_i2v);
  fs::remove_all(dir_ / "snap" / "image_encoder");
  fs::remove_all(dir_ / "snap" / "image_processor");
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"snap/transformer/config.json: image_dim 32 is set, but the snapshot has no "
       "image_encoder/ (CLIP)"});
}

// A first-last-frame checkpoint (Wan2.1-FLF2V: pos_embed_seq_len covers two images' CLIP
// tokens): every i2v line needs last_image, refused by line before any weights are read; with
// it, prompt and both images to video through omni-dp-batch.
TEST_F(SnapshotE2e, AFirstLastFrameCheckpointTakesEachLinesLastImage) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_flf2v);
  write_png(dir_ / "img" / "a.png", 60, 40);
  write_png(dir_ / "img" / "b.png", 40, 60);
  ASSERT_FALSE(HasFatalFailure());
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl",
             std::string(R"({"id": "i", "prompt": "the cat", "image": "img/a.png"})") + "\n");
  expect_refused(
      {"@DIR@/m.jsonl:1:task: the snapshot is first-last-frame to video (its "
       "transformer's pos_embed_seq_len): an i2v line needs \"last_image\""});
  fs::remove_all(dir_ / "out");
  const auto rows = generate(
      "wan", 32, 48,
      {R"({"id": "i", "prompt": "the cat", "image": "img/a.png", "last_image": "img/b.png", "seed": 1})",
       R"({"id": "j", "prompt": "the cat", "image": "img/a.png", "last_image": "img/b.png", "seed": 1})",
       R"({"id": "k", "prompt": "the cat", "image": "img/a.png", "last_image": "img/a.png", "seed": 1})"});
  ASSERT_EQ(rows.size(), 3U);
  expect_shape(rows.at("i"), 5, 32, 48);
  EXPECT_EQ(sha(rows, "i"), sha(rows, "j"));
  EXPECT_NE(sha(rows, "i"), sha(rows, "k"));  // another last frame, another video
}

// Wan2.1 I2V without a first-last-frame transformer takes no last image: refused by line.
TEST_F(SnapshotE2e, ALastImageOnAModelWithoutFirstLastFrameIsRefused) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_i2v);
  write_png(dir_ / "img" / "a.png", 60, 40);
  ASSERT_FALSE(HasFatalFailure());
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl",
             std::string(R"({"id": "i", "prompt": "the cat", "image": "img/a.png", )") +
                 R"("last_image": "img/a.png"})" + "\n");
  expect_refused(
      {"@DIR@/m.jsonl:1:last_image: the model takes no last image (first-last-frame "
       "to video: Wan2.2-I2V-A14B and the Wan2.1-FLF2V checkpoints)"});
}

TEST_F(SnapshotE2e, AnImageEncoderOfAnotherWidthIsNamed) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::wan21_i2v);
  fs::remove(dir_ / "snap" / "image_encoder" / "config.json");
  auto config = json::parse(read_text(ref("clip_vision") / "config.json"));
  config["hidden_size"] = 48;
  write_text(dir_ / "snap" / "image_encoder" / "config.json", config.dump());
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"snap/image_encoder/config.json: hidden_size 48 does not match image_dim 32 of "
       "@DIR@/snap/transformer/config.json"});
}

TEST_F(SnapshotE2e, AnA14bSnapshotIsNotTheNameItIsGiven) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_t2v);
  write_text(dir_ / "c.yaml", config_yaml("wan2.1-t2v-14b", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"model.name: 'wan2.1-t2v-14b' does not match the snapshot @DIR@/snap, which holds "
       "wan2.2-t2v-a14b (two experts, 2 blocks of 64, 16 input channels, Wan2.1 VAE, "
       "text-to-video); model.name: wan takes the snapshot's variant"});
}

TEST_F(SnapshotE2e, ASecondTransformerWithoutBoundaryRatioIsNamed) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_t2v);
  patch_config(dir_ / "snap" / "model_index.json", {{"boundary_ratio", nullptr}});
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused({"snap/model_index.json: transformer_2 is set but boundary_ratio is not"});
}

TEST_F(SnapshotE2e, AnImageEncoderWithoutItsProcessorIsNamed) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_i2v);
  fs::create_directories(dir_ / "snap" / "image_encoder");
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"snap/image_processor: missing: the snapshot has image_encoder/ but no "
       "image_processor/"});
}

TEST_F(SnapshotE2e, AnImageToVideoTransformerUnderTheTextToVideoClassIsNamed) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_i2v);
  patch_config(dir_ / "snap" / "model_index.json", {{"_class_name", "WanPipeline"}});
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"snap/transformer/config.json: in_channels 36 is an image-to-video transformer, "
       "but model_index.json names WanPipeline (text-to-video)"});
}

TEST_F(SnapshotE2e, AVaeOfTheOtherLayoutIsNamed) {
  write_wan_family_snapshot(dir_ / "snap", WanFamilySnapshot::a14b_t2v);
  fs::remove_all(dir_ / "snap" / "vae");
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) {
    link(ref("wan22_vae") / f, dir_ / "snap" / "vae" / f);
  }
  write_text(dir_ / "c.yaml", config_yaml("wan", 32, 48));
  write_text(dir_ / "m.jsonl", std::string(kTextLine) + "\n");
  expect_refused(
      {"snap/vae/config.json: z_dim 48 (the Wan2.2-TI2V layout) does not match "
       "out_channels 16 of @DIR@/snap/transformer/config.json"});
}

}  // namespace
}  // namespace omnidp
