#include "omnidp/models/hv15/factory.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/hv15/lora_names.hpp"
#include "omnidp/models/hv15/pipeline.hpp"
#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/pipelines/adapters.hpp"
#include "omnidp/models/snapshot_config.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/vision/siglip_encoder.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/lora.hpp"

namespace omnidp::models::hv15 {
namespace fs = std::filesystem;
namespace {

// The guider's guidance_scale and the FlowMatchEuler scheduler's shift, as the snapshot's
// pipeline would take them, for the keys the YAML leaves unset (docs/configuration.md,
// "Generation defaults").
void snapshot_defaults(const Config& config, GenerationDefaults& d) {
  const fs::path root(config.model.path);
  const auto origin = [&root](const fs::path& file) {
    return "snapshot " + file.lexically_relative(root).string();
  };
  if (!config.generation.guidance_scale) {
    if (const auto file = component_file(root / "guider", "guider_config.json")) {
      if (const auto v = snapshot_number(*file, "guidance_scale", &check_guidance_scale)) {
        d.guidance_scale = ValueOrigin{*v, origin(*file)};
      }
    }
  }
  snapshot_flow_shift(config, d, "shift");
}

// HunyuanVideo-1.5 snapshot facts: transformer/config.json target_size (640, the released 480p
// configuration, without model.path or the key) and, for pretrained weights, the one task the
// snapshot serves (model_index.json's pipeline class, else the transformer's task_type).
void hv15_facts(const ModelConfig& model, ModelInfo& info) {
  constexpr int kReleased = 640;
  info.image_size_target = kReleased;
  if (model.path.empty()) return;
  std::error_code ec;
  // The guider the pipeline runs (its window decides the guided steps the cost model counts).
  if (const auto guider = component_file(fs::path(model.path) / "guider", "guider_config.json")) {
    try {
      info.guidance.guider = guidance_options_from_json(read_json(*guider), guider->string());
    } catch (const Error&) {  // a guider it cannot read or run: creating the pipeline says so
    }
  }
  const auto config = fs::path(model.path) / "transformer" / "config.json";
  // Tencent's original layout ships the super-resolution checkpoints' latent upsamplers here.
  if (const auto upsampler = fs::path(model.path) / "upsampler"; fs::is_directory(upsampler, ec)) {
    throw WeightsError(upsampler.string(),
                       "a latent upsampler: the super-resolution checkpoints of HunyuanVideo-1.5 "
                       "(720p_sr_distilled, 1080p_sr_distilled) are not served (Diffusers has no "
                       "pipeline for them either)");
  }
  if (fs::is_regular_file(config, ec)) {
    const auto j = read_json_object(config);
    check_served_variant(j, config.string());  // sparse-attention, super-resolution: exit 2 here
    try {
      info.image_size_target = j.value("target_size", kReleased);
      info.attention_heads = j.value("num_attention_heads", info.attention_heads);
      if (model.weights == WeightsSource::pretrained && j.contains("task_type")) {
        const auto task = j.at("task_type").get<std::string>();
        if (task != "t2v" && task != "i2v")
          throw WeightsError(config.string(), "task_type '" + task + "' is not t2v or i2v");
        info.snapshot_task = task == "t2v" ? Task::t2v : Task::i2v;
        info.snapshot_task_origin = "task_type in " + config.string();
      }
    } catch (const nlohmann::json::exception& e) {
      throw WeightsError(config.string(), std::string("bad config: ") + e.what());
    }
    if (info.image_size_target <= 0) throw WeightsError(config.string(), "target_size must be > 0");
  }
  const auto index = fs::path(model.path) / "model_index.json";
  if (model.weights == WeightsSource::pretrained && fs::is_regular_file(index, ec)) {
    const auto cls = read_json_object(index).value("_class_name", std::string());
    if (cls == "HunyuanVideo15Pipeline" || cls == "HunyuanVideo15ImageToVideoPipeline") {
      const Task task = cls == "HunyuanVideo15Pipeline" ? Task::t2v : Task::i2v;
      // Two halves of one checkpoint that disagree: neither can be trusted to win.
      if (info.snapshot_task && *info.snapshot_task != task) {
        throw WeightsError(index.string(),
                           cls + " serves " + to_string(task) + ", but the transformer's " +
                               info.snapshot_task_origin + " says " + to_string(*info.snapshot_task));
      }
      info.snapshot_task = task;
      info.snapshot_task_origin = cls + " in " + index.string();
    }
  }
}

// The output width of an encoder (its config file's `key`, inside `section` when the file nests
// it, as a SiglipConfig's vision_config) must be the transformer's input width `transformer_key`:
// otherwise a WeightsError naming both files, before any weights are read.
void check_width(const fs::path& encoder_config, const char* key, const char* section,
                 std::int64_t expected, const char* transformer_key,
                 const fs::path& transformer_config) {
  const auto j = read_json(encoder_config);
  const auto& holder = section != nullptr && j.contains(section) ? j.at(section) : j;
  if (!holder.contains(key) || !holder.at(key).is_number_integer())
    return;  // the loader reports it
  const auto width = holder.at(key).get<std::int64_t>();
  if (width != expected) {
    throw WeightsError(encoder_config.string(),
                       std::string(key) + " " + std::to_string(width) + " does not match " +
                           transformer_key + " " + std::to_string(expected) + " of " +
                           transformer_config.string() +
                           " (the encoder's output is the transformer's input)");
  }
}

}  // namespace

std::unique_ptr<Pipeline> create_hunyuanvideo15_pipeline(const Config& config,
                                                         const DeviceBinding& binding) {
  const auto& m = config.model;
  const auto setup = model_placement(config, binding);
  const auto device = setup.spec.device;
  const auto dtype = setup.spec.dtype;
  const TensorShard shard{binding.tensor_rank, binding.tensor_size};

  PipelineParts parts;
  parts.model_name = m.name;
  parts.device_name = setup.device_name;
  parts.max_image_pixels = config.input.max_image_pixels;
  parts.cache = config.generation.cache;
  const fs::path root(m.path);
  if (!m.path.empty()) {
    if (const auto guider = component_file(root / "guider", "guider_config.json")) {
      parts.guidance = guidance_options_from_json(read_json(*guider), guider->string());
    }
    if (const auto scheduler = component_file(root / "scheduler", "scheduler_config.json")) {
      parts.scheduler = scheduler_options_from_json(read_json(*scheduler), scheduler->string());
    }
  }

  if (m.weights == WeightsSource::pretrained) {
    if (m.path.empty())
      throw ConfigError("model.path", "hunyuanvideo-1.5 with pretrained weights needs model.path");
    // Every component is checked to be there before the first weights are read (docs/models.md,
    // "Loading a snapshot").
    const auto transformer_dir =
        snapshot_component(root, "transformer", "config.json",
                           "HunyuanVideo15Transformer3DModel: config.json + safetensors");
    const auto vae_dir = snapshot_component(
        root, "vae", "config.json", "AutoencoderKLHunyuanVideo15: config.json + safetensors");
    const auto transformer_config = transformer_dir / "config.json";
    const auto topts =
        TransformerOptions::from_json(read_json(transformer_config), transformer_config.string());
    // Qwen2.5-VL text + Glyph byT5 from tokenizer/, text_encoder/, tokenizer_2/, text_encoder_2/;
    // a snapshot without text_encoder/ (transformer and VAE only) takes prompt_embeds files.
    const bool with_text = fs::exists(root / "text_encoder");
    if (with_text) {
      const auto qwen = snapshot_component(root, "text_encoder", "config.json",
                                           "Qwen2_5_VLTextModel: config.json + safetensors");
      const auto byt5 =
          snapshot_component(root, "text_encoder_2", "config.json",
                             "T5EncoderModel (Glyph byT5): config.json + safetensors");
      if (!fs::is_regular_file(root / "tokenizer" / "vocab.json") &&
          !fs::is_regular_file(root / "tokenizer" / "tokenizer.json")) {
        throw WeightsError((root / "tokenizer" / "vocab.json").string(),
                           "missing: the snapshot has text_encoder/ but no Qwen2 tokenizer "
                           "(tokenizer/vocab.json + "
                           "merges.txt, or tokenizer/tokenizer.json)");
      }
      if (!fs::is_directory(root / "tokenizer_2")) {
        throw WeightsError(
            (root / "tokenizer_2").string(),
            "missing: the snapshot has text_encoder/ but no tokenizer_2/ folder (ByT5Tokenizer: "
            "tokenizer_config.json with the glyph tokens)");
      }
      check_width(qwen / "config.json", "hidden_size", "text_config", topts.text_embed_dim,
                  "text_embed_dim", transformer_config);
      check_width(byt5 / "config.json", "d_model", nullptr, topts.text_embed_2_dim,
                  "text_embed_2_dim", transformer_config);
    }
    // SigLIP from image_encoder/ + feature_extractor/ (the I2V snapshot); without them an I2V
    // request takes its image tokens from its prompt_embeds file.
    const bool with_image = fs::exists(root / "image_encoder");
    if (with_image) {
      const auto siglip = snapshot_component(root, "image_encoder", "config.json",
                                             "SiglipVisionModel: config.json + safetensors");
      (void)snapshot_component(root, "feature_extractor", "preprocessor_config.json",
                               "the SigLIP image processor of the image_encoder/");
      check_width(siglip / "config.json", "hidden_size", "vision_config", topts.image_embed_dim,
                  "image_embed_dim", transformer_config);
    }
    parts.transformer = load_transformer(transformer_dir, dtype, device, shard);
    parts.vae = load_vae(vae_dir, dtype, device);
    if (with_text) {
      parts.text_encoder =
          text::load_hv15_text_encoder(root, dtype, {device, m.offload_text_encoder});
    }
    if (with_image) {
      parts.image_encoder = vision::load_siglip_image_encoder(
          root / "image_encoder", root / "feature_extractor", dtype, device);
    }
  } else {
    TransformerOptions topts;  // the released 8.3B configuration
    VaeOptions vopts;
    if (!m.path.empty()) {
      const auto tconfig = root / "transformer" / "config.json";
      const auto vconfig = root / "vae" / "config.json";
      topts = TransformerOptions::from_json(read_json(tconfig), tconfig.string());
      vopts = VaeOptions::from_json(read_json(vconfig), vconfig.string());
    }
    parts.transformer = random_transformer(topts, m.weights_seed, dtype, device, shard);
    parts.vae = random_vae(vopts, m.weights_seed + 1, dtype, device);
    parts.random_conditioning = true;
  }
  // The job's LoRA adapters (Diffusers or original names, hv15_lora_names), fused before FP8
  // quantizes the layers.
  if (!m.lora.empty()) fuse_job_adapters(m.lora, {parts.transformer.get()}, hv15_lora_names());
  if (m.quantization == Quantization::fp8) {
    require_fp8_config(device);
    parts.transformer->quantize_fp8();
    parts.fp8 = true;
  }
  parts.vae->set_tiling(VaeTiling{.enabled = m.vae_tiling});
  return std::make_unique<HunyuanVideo15Pipeline>(std::move(parts), device);
}

namespace {

// A LoRA adapter against the transformer of a snapshot (its checkpoint headers). Seeded
// weights are checked when the adapter is fused (the transformer is built in float32 first:
// no shapes without memory).
std::string hv15_lora_problem(const ModelConfig& model, const LoraAdapter& adapter) {
  LoraFile file;
  try {
    file = read_lora_file(adapter.path, hv15_lora_names());
  } catch (const WeightsError& e) {
    return e.message();
  }
  if (model.weights != WeightsSource::pretrained) return {};
  return describe_lora_problems(
      parameter_shapes(Checkpoint::open(fs::path(model.path) / "transformer")), file, "transformer");
}

}  // namespace

void register_hunyuanvideo15(ModelTable& table) {
  ModelRegistration r;
  r.name = "hunyuanvideo-1.5";
  r.facts.patch_t = r.facts.patch_h = r.facts.patch_w = 1;  // VAE 4 x 16 x 16
  r.facts.hidden_size = 2048;
  r.facts.num_layers = 54;
  r.facts.attention_heads = 16;          // a snapshot's transformer/config.json may say otherwise
  r.facts.tensor_parallel = true;        // Megatron splits of attention and FFN (docs/models.md)
  r.facts.fp8 = true;                    // W8A8 FP8 block GEMMs (docs/models.md, "FP8")
  r.facts.vae_tiling = true;             // Diffusers' enable_tiling() (hv15/vae.hpp, VaeTiling)
  r.facts.step_cache = true;             // generation.cache over run_blocks()
  r.facts.lora = true;                   // model.lora, a line's "lora" (hv15_lora_names)
  r.facts.default_guidance_scale = 6.0;  // the released 480p pipelines: CFG 6, shift 5
  r.facts.default_flow_shift = 5.0;
  r.facts.guidance.rule = GuidanceRule::guider;  // ClassifierFreeGuidance (guider/ config)
  r.describe = hv15_facts;
  r.snapshot_defaults = snapshot_defaults;
  r.lora_problem = hv15_lora_problem;
  r.create = create_hunyuanvideo15_pipeline;
  table.add(std::move(r));
}

}  // namespace omnidp::models::hv15
