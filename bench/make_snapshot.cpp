// omni-dp-bench-make-snapshot: writes a HunyuanVideo-1.5 or Wan family Diffusers snapshot
// folder of a released architecture with seeded random weights (docs/performance.md,
// "HunyuanVideo-1.5 from a snapshot", "Model load").
//   omni-dp-bench-make-snapshot --out DIR [--model hv15|wan] [--task i2v|t2v] [--variant NAME]
//                               [--seed N] [--layers N] [--text-layers N] [--no-text-encoder]
//                               [--spiece FILE]
// hv15 --variant: the released checkpoint's target_size, use_meanflow, scheduler shift and guider
// scale (the step-distilled one adds time_embed.timestep_embedder_r).
// Wan: the transformer, the VAE, UMT5-XXL (the released text encoder, 5.7 B parameters) and a
// SentencePiece Unigram tokenizer: --spiece's model file, or a word model of a few words with
// byte fallback.
// Every config.json holds the released values under the Diffusers / transformers key names; the
// library's own from_json readers parse them before the modules are built, so that what is written
// is what the loaders accept. Weights are bf16, sharded at --shard-gib with an index file as
// save_pretrained writes them. Tokenizers are byte-level (one token per byte, no merges): a random
// text encoder has nothing to gain from the real 151k-entry vocabulary.

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/text/qwen25vl.hpp"
#include "omnidp/models/text/qwen2_tokenizer.hpp"
#include "omnidp/models/text/sentencepiece_model.hpp"
#include "omnidp/models/text/t5.hpp"
#include "omnidp/models/vision/clip.hpp"
#include "omnidp/models/vision/siglip.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/wan/family.hpp"
#include "omnidp/models/wan/transformer.hpp"
#include "omnidp/models/wan/vae.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

void write_json(const fs::path& path, const json& j) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << j.dump(2) << "\n";
}

// Parameters of `module` in bf16, split into shards of at most `shard_bytes` (name order), plus
// `<stem>.safetensors.index.json` when there is more than one shard.
std::size_t save_sharded(torch::nn::Module& module, const fs::path& dir, const std::string& stem,
                         std::size_t shard_bytes, const std::string& prefix = "") {
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> shards(1);
  std::size_t in_shard = 0, total = 0;
  for (const auto& item : module.named_parameters(true)) {
    auto t = item.value().detach().to(torch::kBFloat16).contiguous();
    const auto bytes = static_cast<std::size_t>(t.numel()) * 2;
    if (in_shard > 0 && in_shard + bytes > shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().emplace_back(prefix + item.key(), std::move(t));
    in_shard += bytes;
    total += bytes;
  }
  fs::create_directories(dir);
  if (shards.size() == 1) {
    omnidp::models::save_safetensors(dir / (stem + ".safetensors"), shards.front());
    return total;
  }
  json map = json::object();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    char name[128];
    std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", stem.c_str(), i + 1,
                  shards.size());
    omnidp::models::save_safetensors(dir / name, shards[i]);
    for (const auto& [tensor, value] : shards[i]) map[tensor] = name;
  }
  write_json(dir / (stem + ".safetensors.index.json"),
             json{{"metadata", {{"total_size", total}}}, {"weight_map", map}});
  return total;
}

// A transformers T5 encoder config.json (gated GELU, 64-wide heads, T5's relative position
// buckets): UMT5-XXL (Wan) and the Glyph byT5 (HunyuanVideo-1.5) differ only in these sizes.
json t5_encoder_config(const char* architecture, const char* model_type, int vocab, int d_model,
                       int d_ff, int layers, int heads) {
  return json{{"architectures", {architecture}},
              {"model_type", model_type},
              {"vocab_size", vocab},
              {"d_model", d_model},
              {"d_kv", 64},
              {"d_ff", d_ff},
              {"num_layers", layers},
              {"num_heads", heads},
              {"relative_attention_num_buckets", 32},
              {"relative_attention_max_distance", 128},
              {"layer_norm_epsilon", 1e-6},
              {"feed_forward_proj", "gated-gelu"},
              {"is_gated_act", true},
              {"dense_act_fn", "gelu_new"},
              {"tie_word_embeddings", false}};
}

// A seeded random T5 encoder of `config` built in `dtype`, written to `dir` (config.json +
// shards), reported through `done`.
void write_t5_encoder(const fs::path& dir, const json& config, std::uint64_t seed,
                      torch::ScalarType dtype, std::size_t shard,
                      const std::function<void(const char*, std::size_t)>& done) {
  namespace text = omnidp::models::text;
  const auto name = dir.filename().string();
  const auto opts = text::T5Options::from_json(config, name + "/config.json");
  auto model = text::random_t5_encoder(opts, seed, dtype, torch::kCPU);
  write_json(dir / "config.json", config);
  done(name.c_str(), save_sharded(*model, dir, "model", shard));
}

void write_qwen_tokenizer(const fs::path& dir) {
  json vocab = json::object();
  // The 256 byte tokens, spelt by GPT-2's byte -> printable unicode map.
  for (int b = 0; b < 256; ++b)
    vocab[omnidp::models::text::byte_level_char(static_cast<unsigned char>(b))] = b;
  write_json(dir / "vocab.json", vocab);
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  json added = json::object();
  // The special tokens follow the 256 byte tokens (ids 256-258), as in any vocabulary that its
  // added tokens extend: transformers' tokenizers number added tokens missing from vocab.json
  // after it, whatever id tokenizer_config.json gives them (Qwen's own 151643-151645 follow
  // its 151643 regular tokens).
  const std::vector<std::pair<int, std::string>> special{
      {256, "<|endoftext|>"}, {257, "<|im_start|>"}, {258, "<|im_end|>"}};
  for (const auto& [id, content] : special) {
    added[std::to_string(id)] = {{"content", content}, {"special", true}};
  }
  // Qwen2.5's chat template for plain-text messages: what transformers' apply_chat_template
  // renders for the pipelines' system + user conversation (models/text/prompt_encoders.hpp
  // writes the same text).
  const std::string chat_template =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + "
      "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\\n' }}{% endif %}";
  write_json(dir / "tokenizer_config.json", json{{"tokenizer_class", "Qwen2Tokenizer"},
                                                 {"added_tokens_decoder", added},
                                                 {"eos_token", "<|im_end|>"},
                                                 {"pad_token", "<|endoftext|>"},
                                                 {"chat_template", chat_template}});
}

// A WanTransformer3DModel config.json of `o` under Diffusers' key names.
json wan_transformer_config(const omnidp::models::wan::WanTransformerOptions& o) {
  const auto optional = [](std::int64_t v) { return v > 0 ? json(v) : json(); };
  return json{{"_class_name", "WanTransformer3DModel"},
              {"patch_size", o.patch_size},
              {"num_attention_heads", o.num_attention_heads},
              {"attention_head_dim", o.attention_head_dim},
              {"in_channels", o.in_channels},
              {"out_channels", o.out_channels},
              {"text_dim", o.text_dim},
              {"freq_dim", o.freq_dim},
              {"ffn_dim", o.ffn_dim},
              {"num_layers", o.num_layers},
              {"cross_attn_norm", o.cross_attn_norm},
              {"qk_norm", "rms_norm_across_heads"},
              {"eps", o.eps},
              {"image_dim", optional(o.image_dim)},
              {"added_kv_proj_dim", optional(o.added_kv_proj_dim)},
              {"rope_max_seq_len", o.rope_max_seq_len},
              {"pos_embed_seq_len", optional(o.pos_embed_seq_len)}};
}

// A Wan family Diffusers snapshot (models/wan/family.hpp: the released layout of `variant`,
// Wan-AI/<name>-Diffusers): transformer(s), VAE, UMT5-XXL text encoder, tokenizer, UniPC
// scheduler, and for Wan2.1 I2V the CLIP ViT-H/14 image encoder and processor. Every parameter is
// built in bf16 (no float32 copy of 14 B parameters). Seeds: transformer seed, VAE + 1, text + 2,
// transformer_2 + 3, image encoder + 4.
void write_wan_snapshot(const fs::path& root, const std::string& variant, std::uint64_t seed,
                        int layers, int text_layers, std::size_t shard, bool no_text,
                        const std::string& spiece,
                        const std::function<void(const char*, std::size_t)>& done) {
  namespace wan = omnidp::models::wan;
  namespace text = omnidp::models::text;
  namespace vision = omnidp::models::vision;
  const omnidp::models::ParamSpec bf16{torch::kBFloat16, torch::kCPU};
  auto layout = *wan::builtin_wan_layout(variant);
  if (layers >= 0) {
    layout.transformer.num_layers = layers;
    if (layout.transformer_2) layout.transformer_2->num_layers = layers;
  }
  const auto write_transformer = [&](const char* name, const wan::WanTransformerOptions& o,
                                     std::uint64_t weights_seed) {
    wan::WanTransformer3DModel model(o, omnidp::models::TensorShard{}, bf16);
    omnidp::models::init_random_weights(*model, weights_seed);
    write_json(root / name / "config.json", wan_transformer_config(o));
    done(name, save_sharded(*model, root / name, "diffusion_pytorch_model", shard));
  };
  write_transformer("transformer", layout.transformer, seed);
  if (layout.transformer_2) write_transformer("transformer_2", *layout.transformer_2, seed + 3);
  if (layout.image_encoder) {
    const auto config = vision::clip_vit_h14_config();
    auto encoder = vision::ClipVisionModel(
        vision::clip_vision_options(config, "image_encoder/config.json"), bf16);
    omnidp::models::init_random_weights(*encoder, seed + 4);
    write_json(root / "image_encoder" / "config.json", config);
    // transformers' CLIPVisionModel names: under vision_model.
    done("image_encoder",
         save_sharded(*encoder, root / "image_encoder", "model", shard, "vision_model."));
    write_json(root / "image_processor" / "preprocessor_config.json",
               vision::clip_processor_config(224));
  }
  {
    const auto& o = layout.vae;
    const json vae_config{
        {"_class_name", "AutoencoderKLWan"},
        {"attn_scales", json::array()},
        {"base_dim", o.base_dim},
        {"decoder_base_dim", o.decoder_base_dim == o.base_dim ? json() : json(o.decoder_base_dim)},
        {"dim_mult", o.dim_mult},
        {"dropout", 0.0},
        {"in_channels", o.in_channels},
        {"out_channels", o.out_channels},
        {"is_residual", o.is_residual},
        {"latents_mean", o.latents_mean},
        {"latents_std", o.latents_std},
        {"num_res_blocks", o.num_res_blocks},
        {"patch_size", o.patch_size == 1 ? json() : json(o.patch_size)},
        {"scale_factor_spatial", o.scale_factor_spatial},
        {"scale_factor_temporal", o.scale_factor_temporal},
        {"temperal_downsample", o.temperal_downsample},
        {"z_dim", o.z_dim}};
    write_json(root / "vae" / "config.json", vae_config);
    wan::AutoencoderKLWan vae(wan::AutoencoderKLWanOptions::from_file(root / "vae"));
    omnidp::models::init_random_weights(*vae, seed + 1);
    done("vae", save_sharded(*vae, root / "vae", "diffusion_pytorch_model", shard));
  }
  if (!no_text) {
    write_t5_encoder(root / "text_encoder",
                     t5_encoder_config("UMT5EncoderModel", "umt5", 256384, 4096, 10240,
                                       text_layers >= 0 ? text_layers : 24, 64),
                     seed + 2, torch::kBFloat16, shard, done);
    const auto tok = root / "tokenizer";
    fs::create_directories(tok);
    if (spiece.empty()) {
      std::ofstream(tok / "spiece.model", std::ios::binary)
          << text::unigram_word_model({"a", "cat", "walks", "on", "the", "grass", "in", "sun",
                                       "dog", "runs", "park", "at", "night"},
                                      /*byte_fallback=*/true)
                 .serialize();
    } else {
      fs::copy_file(spiece, tok / "spiece.model");
    }
    write_json(tok / "tokenizer_config.json",
               json{{"tokenizer_class", "T5Tokenizer"}, {"extra_ids", 0}});
  }
  write_json(root / "scheduler" / "scheduler_config.json",
             json{{"_class_name", "UniPCMultistepScheduler"},
                  {"beta_end", 0.02},
                  {"beta_schedule", "linear"},
                  {"beta_start", 0.0001},
                  {"disable_corrector", json::array()},
                  {"final_sigmas_type", "zero"},
                  {"flow_shift", layout.vae.is_residual ? 5.0 : 3.0},
                  {"lower_order_final", true},
                  {"num_train_timesteps", 1000},
                  {"predict_x0", true},
                  {"prediction_type", "flow_prediction"},
                  {"solver_order", 2},
                  {"solver_type", "bh2"},
                  {"timestep_spacing", "linspace"},
                  {"use_flow_sigmas", true}});
  // TI2V-5B's snapshot names WanPipeline (it serves both tasks); the 36-channel checkpoints
  // WanImageToVideoPipeline.
  const bool i2v_class = layout.image_to_video && !layout.expand_timesteps;
  json index{{"_class_name", i2v_class ? "WanImageToVideoPipeline" : "WanPipeline"},
             {"boundary_ratio", layout.boundary_ratio ? json(*layout.boundary_ratio) : json()},
             {"expand_timesteps", layout.expand_timesteps},
             {"scheduler", {"diffusers", "UniPCMultistepScheduler"}},
             {"transformer", {"diffusers", "WanTransformer3DModel"}},
             {"transformer_2", layout.transformer_2 ? json{"diffusers", "WanTransformer3DModel"}
                                                    : json{nullptr, nullptr}},
             {"vae", {"diffusers", "AutoencoderKLWan"}}};
  if (i2v_class) {
    index["image_encoder"] =
        layout.image_encoder ? json{"transformers", "CLIPVisionModel"} : json{nullptr, nullptr};
    index["image_processor"] =
        layout.image_encoder ? json{"transformers", "CLIPImageProcessor"} : json{nullptr, nullptr};
  }
  if (!no_text) {
    index["text_encoder"] = {"transformers", "UMT5EncoderModel"};
    index["tokenizer"] = {"transformers", "T5TokenizerFast"};
  }
  write_json(root / "model_index.json", index);
  done("snapshot", 0);
}

// The released HunyuanVideo-1.5 checkpoints that Diffusers converts (docs/models.md, "The
// released variants"): one architecture, these values differ.
struct Hv15Variant {
  const char* name;
  const char* task;
  int target_size;
  bool use_meanflow;
  double shift;
  double guidance_scale;
};
constexpr Hv15Variant kHv15Variants[] = {
    {"480p_t2v", "t2v", 640, false, 5.0, 6.0},
    {"480p_i2v", "i2v", 640, false, 5.0, 6.0},
    {"720p_t2v", "t2v", 960, false, 9.0, 6.0},
    {"720p_i2v", "i2v", 960, false, 7.0, 6.0},
    {"480p_t2v_distilled", "t2v", 640, false, 5.0, 1.0},
    {"480p_i2v_distilled", "i2v", 640, false, 5.0, 1.0},
    {"720p_t2v_distilled", "t2v", 960, false, 9.0, 1.0},
    {"720p_i2v_distilled", "i2v", 960, false, 7.0, 1.0},
    {"480p_i2v_step_distilled", "i2v", 640, true, 7.0, 1.0},
};

}  // namespace

int main(int argc, char** argv) {
  namespace hv = omnidp::models::hv15;
  namespace text = omnidp::models::text;
  namespace vision = omnidp::models::vision;
  CLI::App app(
      "omni-dp-bench-make-snapshot: a HunyuanVideo-1.5 or Wan family Diffusers snapshot with "
      "seeded random weights");
  std::string out;
  std::string model_name = "hv15";
  std::string task = "i2v";
  std::uint64_t seed = 0;
  int layers = -1;
  int text_layers = -1;
  double shard_gib = 5.0;
  bool no_text = false;
  std::string spiece;
  app.add_option("--out", out, "snapshot folder to write (must not exist)")->required();
  app.add_option("--model", model_name, "hv15 (HunyuanVideo-1.5) | wan (the Wan family)")
      ->check(CLI::IsMember({"hv15", "wan"}))
      ->capture_default_str();
  std::string variant;
  std::vector<std::string> variant_names = {"wan2.2-ti2v-5b",  "wan2.2-t2v-a14b", "wan2.2-i2v-a14b",
                                            "wan2.1-t2v-1.3b", "wan2.1-t2v-14b",  "wan2.1-i2v-14b"};
  for (const auto& v : kHv15Variants) variant_names.emplace_back(v.name);
  app.add_option("--variant", variant,
                 "the released checkpoint: wan (default wan2.2-ti2v-5b; wan2.2-t2v-a14b, "
                 "wan2.2-i2v-a14b, wan2.1-t2v-1.3b, wan2.1-t2v-14b, wan2.1-i2v-14b) or hv15 "
                 "(default 480p_<task>; 720p_t2v, 720p_i2v, 480p_t2v_distilled, "
                 "480p_i2v_distilled, 720p_t2v_distilled, 720p_i2v_distilled, "
                 "480p_i2v_step_distilled)")
      ->check(CLI::IsMember(variant_names));
  app.add_option("--task", task, "i2v (with image_encoder/ and feature_extractor/) | t2v")
      ->check(CLI::IsMember({"i2v", "t2v"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the random weights (each component adds its index)")
      ->capture_default_str();
  app.add_option("--layers", layers,
                 "transformer blocks (default: the released 54 for hv15, 30 for wan)");
  app.add_option("--text-layers", text_layers,
                 "Qwen2.5-VL decoder layers / UMT5 layers (default: the released 28 / 24)");
  app.add_option("--shard-gib", shard_gib, "largest safetensors shard")->capture_default_str();
  app.add_flag("--no-text-encoder", no_text, "leave out text_encoder(_2)/ and tokenizer(_2)/");
  app.add_option("--spiece", spiece,
                 "Wan: the tokenizer's SentencePiece Unigram model (default: a word model)")
      ->check(CLI::ExistingFile);
  CLI11_PARSE(app, argc, argv);
  const fs::path root(out);
  if (fs::exists(root)) {
    std::fprintf(stderr, "%s exists; give a new folder\n", out.c_str());
    return 2;
  }
  const auto shard = static_cast<std::size_t>(shard_gib * 1024.0 * 1024.0 * 1024.0);
  const auto start = Clock::now();
  const auto done = [&](const char* what, std::size_t bytes) {
    std::printf("%-18s %7.2f GB  (%.1f s)\n", what, static_cast<double>(bytes) / 1e9,
                std::chrono::duration<double>(Clock::now() - start).count());
    std::fflush(stdout);
  };
  const torch::Device cpu(torch::kCPU);
  if (model_name == "wan") {
    if (variant.empty()) variant = "wan2.2-ti2v-5b";
    if (!omnidp::models::wan::builtin_wan_layout(variant)) {
      std::fprintf(stderr,
                   "--variant %s is a HunyuanVideo-1.5 checkpoint; --model wan takes a Wan one\n",
                   variant.c_str());
      return 2;
    }
    write_wan_snapshot(root, variant, seed, layers, text_layers, shard, no_text, spiece, done);
    return 0;
  }
  if (variant.empty()) variant = "480p_" + task;
  const auto* hv15 = std::find_if(std::begin(kHv15Variants), std::end(kHv15Variants),
                                  [&](const Hv15Variant& v) { return variant == v.name; });
  if (hv15 == std::end(kHv15Variants)) {
    std::fprintf(stderr,
                 "--variant %s is a Wan checkpoint; --model hv15 takes a HunyuanVideo-1.5 one\n",
                 variant.c_str());
    return 2;
  }
  if (app.count("--task") > 0 && task != hv15->task) {
    std::fprintf(stderr, "--task %s disagrees with --variant %s (%s)\n", task.c_str(), hv15->name,
                 hv15->task);
    return 2;
  }
  task = hv15->task;

  // The released HunyuanVideo-1.5 transformer (docs/models.md), with the variant's values.
  const json transformer_config{{"_class_name", "HunyuanVideo15Transformer3DModel"},
                                {"in_channels", 65},
                                {"out_channels", 32},
                                {"num_attention_heads", 16},
                                {"attention_head_dim", 128},
                                {"num_layers", layers >= 0 ? layers : 54},
                                {"num_refiner_layers", 2},
                                {"mlp_ratio", 4.0},
                                {"patch_size", 1},
                                {"patch_size_t", 1},
                                {"qk_norm", "rms_norm"},
                                {"text_embed_dim", 3584},
                                {"text_embed_2_dim", 1472},
                                {"image_embed_dim", 1152},
                                {"rope_theta", 256.0},
                                {"rope_axes_dim", {16, 56, 56}},
                                {"target_size", hv15->target_size},
                                {"task_type", task},
                                {"use_meanflow", hv15->use_meanflow}};
  {
    const auto opts =
        hv::TransformerOptions::from_json(transformer_config, "transformer/config.json");
    auto model = hv::random_transformer(opts, seed, torch::kFloat32, cpu);
    write_json(root / "transformer" / "config.json", transformer_config);
    done("transformer", save_sharded(*model, root / "transformer", "diffusion_pytorch_model", shard));
  }
  const json vae_config{{"_class_name", "AutoencoderKLHunyuanVideo15"},
                        {"in_channels", 3},
                        {"out_channels", 3},
                        {"latent_channels", 32},
                        {"block_out_channels", {128, 256, 512, 1024, 1024}},
                        {"layers_per_block", 2},
                        {"spatial_compression_ratio", 16},
                        {"temporal_compression_ratio", 4},
                        {"downsample_match_channel", true},
                        {"upsample_match_channel", true},
                        {"scaling_factor", 1.03682}};
  {
    const auto opts = hv::VaeOptions::from_json(vae_config, "vae/config.json");
    auto model = hv::random_vae(opts, seed + 1, torch::kFloat32, cpu);
    write_json(root / "vae" / "config.json", vae_config);
    done("vae", save_sharded(*model, root / "vae", "diffusion_pytorch_model", shard));
  }
  if (!no_text) {
    // Qwen2.5-VL-7B-Instruct's text model and the Glyph byT5 (byt5-small) encoder.
    const json qwen_config{{"architectures", {"Qwen2_5_VLForConditionalGeneration"}},
                           {"model_type", "qwen2_5_vl"},
                           {"vocab_size", 152064},
                           {"hidden_size", 3584},
                           {"intermediate_size", 18944},
                           {"num_hidden_layers", text_layers >= 0 ? text_layers : 28},
                           {"num_attention_heads", 28},
                           {"num_key_value_heads", 4},
                           {"hidden_act", "silu"},
                           {"rms_norm_eps", 1e-6},
                           {"rope_theta", 1000000.0},
                           {"use_sliding_window", false},
                           {"max_position_embeddings", 128000},
                           {"bos_token_id", 151643},
                           {"eos_token_id", 151645},
                           {"torch_dtype", "bfloat16"}};
    {
      const auto opts =
          text::Qwen25VLTextOptions::from_json(qwen_config, "text_encoder/config.json");
      auto model = text::random_qwen25vl_text(opts, seed + 2, torch::kFloat32, cpu);
      write_json(root / "text_encoder" / "config.json", qwen_config);
      done("text_encoder", save_sharded(*model, root / "text_encoder", "model", shard));
    }
    write_qwen_tokenizer(root / "tokenizer");
    write_t5_encoder(root / "text_encoder_2",
                     t5_encoder_config("T5EncoderModel", "t5", 384, 1472, 3584, 12, 6), seed + 3,
                     torch::kFloat32, shard, done);
    write_json(root / "tokenizer_2" / "tokenizer_config.json",
               json{{"tokenizer_class", "ByT5Tokenizer"}});
  }
  if (task == "i2v") {
    // SigLIP so400m-patch14-384, as the I2V checkpoint ships it.
    const json siglip_config{{"architectures", {"SiglipVisionModel"}},
                             {"model_type", "siglip_vision_model"},
                             {"hidden_size", 1152},
                             {"intermediate_size", 4304},
                             {"num_hidden_layers", 27},
                             {"num_attention_heads", 16},
                             {"num_channels", 3},
                             {"image_size", 384},
                             {"patch_size", 14},
                             {"hidden_act", "gelu_pytorch_tanh"},
                             {"layer_norm_eps", 1e-6}};
    {
      const auto opts =
          vision::SiglipVisionOptions::from_json(siglip_config, "image_encoder/config.json");
      auto model = vision::random_siglip_vision(opts, seed + 4, torch::kFloat32, cpu);
      write_json(root / "image_encoder" / "config.json", siglip_config);
      done("image_encoder", save_sharded(*model, root / "image_encoder", "model", shard));
    }
    write_json(root / "feature_extractor" / "preprocessor_config.json",
               json{{"image_processor_type", "SiglipImageProcessor"},
                    {"do_convert_rgb", true},
                    {"do_resize", true},
                    {"size", {{"height", 384}, {"width", 384}}},
                    {"resample", 3},
                    {"do_rescale", true},
                    {"rescale_factor", 1.0 / 255.0},
                    {"do_normalize", true},
                    {"image_mean", {0.5, 0.5, 0.5}},
                    {"image_std", {0.5, 0.5, 0.5}}});
  }
  write_json(root / "scheduler" / "scheduler_config.json",
             json{{"_class_name", "FlowMatchEulerDiscreteScheduler"},
                  {"num_train_timesteps", 1000},
                  {"shift", hv15->shift},
                  {"use_dynamic_shifting", false}});
  write_json(root / "guider" / "guider_config.json", json{{"_class_name", "ClassifierFreeGuidance"},
                                                          {"guidance_scale", hv15->guidance_scale},
                                                          {"guidance_rescale", 0.0},
                                                          {"use_original_formulation", false},
                                                          {"enabled", true}});
  json index{{"_class_name",
              task == "i2v" ? "HunyuanVideo15ImageToVideoPipeline" : "HunyuanVideo15Pipeline"},
             {"transformer", {"diffusers", "HunyuanVideo15Transformer3DModel"}},
             {"vae", {"diffusers", "AutoencoderKLHunyuanVideo15"}},
             {"scheduler", {"diffusers", "FlowMatchEulerDiscreteScheduler"}},
             {"guider", {"diffusers", "ClassifierFreeGuidance"}}};
  if (!no_text) {
    index["text_encoder"] = {"transformers", "Qwen2_5_VLTextModel"};
    index["tokenizer"] = {"transformers", "Qwen2Tokenizer"};
    index["text_encoder_2"] = {"transformers", "T5EncoderModel"};
    index["tokenizer_2"] = {"transformers", "ByT5Tokenizer"};
  }
  if (task == "i2v") {
    index["image_encoder"] = {"transformers", "SiglipVisionModel"};
    index["feature_extractor"] = {"transformers", "SiglipImageProcessor"};
  }
  write_json(root / "model_index.json", index);
  done("snapshot", 0);
  return 0;
}
