#include "omnidp/models/wan/factory.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/snapshot_config.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/vision/clip.hpp"
#include "omnidp/models/wan/family.hpp"
#include "omnidp/models/wan/lora_names.hpp"
#include "omnidp/models/wan/pipeline.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/lora.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {
namespace fs = std::filesystem;

WanTransformer3DModel load_wan_transformer(const fs::path& dir, torch::ScalarType dtype,
                                           torch::Device device, TensorShard shard) {
  WanTransformer3DModel model(WanTransformerOptions::from_file(dir / "config.json"), shard,
                              ParamSpec{dtype, device});
  LoadOptions options;
  options.shard = model->shard_plan();  // only this rank's slices are read
  options.in_place = true;
  load_state_dict(*model, Checkpoint::open(dir), dtype, device, options);
  model->to_dtype(device, dtype);  // the buffers (the parameters are in place already)
  freeze(*model);
  return model;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string since(Clock::time_point t) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", std::chrono::duration<double>(Clock::now() - t).count());
  return std::string(text);
}

// Seeded random weights, built in their final dtypes on the device (the random values are
// copied in place). The phases are timed for the log: the random-weight load of the large
// models is slow on some machines (docs/performance.md).
WanTransformer3DModel random_transformer(const WanTransformerOptions& options, std::uint64_t seed,
                                         const ParamSpec& spec, TensorShard shard) {
  auto t = Clock::now();
  WanTransformer3DModel transformer(options, shard, spec);
  const std::string construct = since(t);
  t = Clock::now();
  init_random_weights(*transformer, seed, transformer->shard_plan());
  const std::string init = since(t);
  t = Clock::now();
  transformer->to_dtype(spec.device, spec.dtype);
  freeze(*transformer);
  log_debug("wan: random transformer: construct " + construct + ", random init " + init + ", to " +
            spec.device.str() + " " + since(t));
  return transformer;
}

// Every component of a snapshot is checked to be there before the first weights are read
// (docs/models.md, "Loading a snapshot"); the layout (family.hpp) has checked the JSON files.
void check_text_components(const fs::path& root, const WanLayout& layout) {
  (void)snapshot_component(root, "scheduler", "scheduler_config.json",
                           "UniPCMultistepScheduler: scheduler_config.json");
  const auto text_dir = snapshot_component(root, "text_encoder", "config.json",
                                           "UMT5EncoderModel: config.json + safetensors");
  if (!fs::is_regular_file(root / "tokenizer" / "spiece.model") &&
      !fs::is_regular_file(root / "tokenizer" / "tokenizer.json")) {
    throw WeightsError((root / "tokenizer" / "spiece.model").string(),
                       "missing: the snapshot has no UMT5 tokenizer (tokenizer/spiece.model "
                       "or tokenizer/tokenizer.json)");
  }
  const auto text_config = read_json(text_dir / "config.json");
  const auto text_dim = layout.transformer.text_dim;
  if (text_config.contains("d_model") && text_config.at("d_model").is_number_integer() &&
      text_config.at("d_model").get<std::int64_t>() != text_dim) {
    throw WeightsError((text_dir / "config.json").string(),
                       "d_model " + std::to_string(text_config.at("d_model").get<std::int64_t>()) +
                           " does not match text_dim " + std::to_string(text_dim) + " of " +
                           (root / "transformer" / "config.json").string() +
                           " (the encoder's output is the transformer's input)");
  }
}

}  // namespace

std::unique_ptr<Pipeline> create_wan_pipeline(const Config& config, const DeviceBinding& binding) {
  const auto& m = config.model;
  const auto setup = model_placement(config, binding);
  const auto device = setup.spec.device;
  const auto dtype = setup.spec.dtype;
  const TensorShard shard{binding.tensor_rank, binding.tensor_size};
  const bool pretrained = m.weights == WeightsSource::pretrained;
  const auto layout = resolve_wan_layout(m.name, m.path, pretrained);

  WanPipelineParts parts;
  parts.model_name = m.name;
  parts.checkpoint = wan_variant_name(layout);
  parts.device_name = setup.device_name;
  parts.expand_timesteps = layout.expand_timesteps;
  parts.boundary_ratio = layout.boundary_ratio;
  // model.expert_residency swap: both experts are built in host memory; the pipeline keeps their
  // page-locked copies and moves one at a time into its one device buffer, so that the device
  // never holds both.
  parts.swap_experts = m.expert_residency == ExpertResidency::swap && layout.transformer_2;
  const torch::Device expert_device = parts.swap_experts ? torch::Device(torch::kCPU) : device;
  const text::EncoderPlacement placement{device, m.offload_text_encoder};
  std::future<std::unique_ptr<text::T5PromptEncoder>> text_load;
  const fs::path root(m.path);
  if (pretrained) {
    check_text_components(root, layout);
    // The text encoder loads on a thread of its own meanwhile (docs/performance.md, "Model
    // load"); its errors come out of get() below, after the transformers'.
    text_load =
        std::async(std::launch::async, [root, dtype, placement, threads = at::get_num_threads()] {
          at::set_num_threads(threads);  // a new thread starts from OpenMP's default
          return text::load_wan_text_encoder(root, dtype, placement);
        });
    parts.transformer = load_wan_transformer(root / "transformer", dtype, expert_device, shard);
    if (layout.transformer_2) {
      parts.transformer_2 = load_wan_transformer(root / "transformer_2", dtype, expert_device, shard);
    }
    parts.vae = load_autoencoder_kl_wan(root / "vae", dtype, device);
    if (layout.image_encoder) {
      // In float32 whatever the transformer's dtype, as diffusers' Wan2.1 I2V example loads it
      // (0.6 B parameters, one forward per request); its tokens are cast to the transformer's.
      parts.image_encoder = vision::load_clip_image_encoder(
          root / "image_encoder", root / "image_processor", torch::kFloat32, device);
    }
    parts.scheduler =
        unipc_options_from_config(read_json(root / "scheduler" / "scheduler_config.json"));
  } else {
    // Seeds: transformer weights_seed, VAE + 1, text + 2, the low-noise expert + 3, CLIP + 4.
    const ParamSpec spec{dtype, expert_device};
    parts.transformer = random_transformer(layout.transformer, m.weights_seed, spec, shard);
    if (layout.transformer_2) {
      parts.transformer_2 =
          random_transformer(*layout.transformer_2, m.weights_seed + 3, spec, shard);
    }
    const auto t = Clock::now();
    AutoencoderKLWan vae(layout.vae);
    init_random_weights(*vae, m.weights_seed + 1);
    vae->to(device, dtype);
    freeze(*vae);
    log_debug("wan: random VAE: " + since(t));
    parts.vae = vae;
    // The image encoder (seed + 4): the released CLIP ViT-H/14, or the fixtures' tiny one.
    if (layout.image_encoder) {
      const bool released = layout.transformer.image_dim == 1280;
      auto clip = released ? vision::clip_vit_h14_config()
                           : nlohmann::json{{"hidden_size", layout.transformer.image_dim},
                                            {"intermediate_size", 2 * layout.transformer.image_dim},
                                            {"num_hidden_layers", 3},
                                            {"num_attention_heads", 2},
                                            {"image_size", 32},
                                            {"patch_size", 8},
                                            {"hidden_act", "gelu"}};
      parts.image_encoder = vision::random_clip_image_encoder(
          clip, vision::clip_processor_config(clip.at("image_size").get<int>()), m.weights_seed + 4,
          torch::kFloat32, device);  // float32, as loaded from a snapshot
    }
  }
  // The job's LoRA adapters: part of the weights from here on (FP8 quantizes the fused ones).
  if (!m.lora.empty()) {
    std::vector<torch::nn::Module*> experts{parts.transformer.get()};
    if (parts.transformer_2) experts.push_back(parts.transformer_2.get());
    fuse_job_adapters(m.lora, experts, wan_lora_names());
  }
  if (m.quantization == Quantization::fp8) {
    require_fp8_config(device);
    parts.transformer->quantize_fp8();
    if (parts.transformer_2) parts.transformer_2->quantize_fp8();
    parts.fp8 = true;
  }
  // cuDNN's channels-last convolutions are the fast ones on recent GPUs (docs/performance.md);
  // the CPU keeps the contiguous layout.
  if (device.is_cuda()) parts.vae->set_channels_last(true);
  parts.max_image_pixels = config.input.max_image_pixels;
  parts.cache = config.generation.cache;
  // Text (a request's prompt_embeds file still wins): UMT5 from the snapshot, or for seeded
  // weights the tiny byte-level T5 of width text_dim (seed weights_seed + 2; docs/models.md).
  if (text_load.valid()) {
    parts.text_encoder = text_load.get();
  } else {
    parts.text_encoder = text::make_tiny_byte_t5(
        m.weights_seed + 2, parts.transformer->options().text_dim, dtype, placement);
  }
  return std::make_unique<WanPipeline>(std::move(parts), device);
}

namespace {

// The facts config validation and the cost model read, from a layout.
void describe_layout(const WanLayout& layout, ModelInfo& info) {
  const auto& t = layout.transformer;
  info.attention_heads = static_cast<int>(t.num_attention_heads);
  info.hidden_size = static_cast<int>(t.inner_dim());
  // Two experts run one after the other: a step costs one expert's forward.
  info.num_layers = static_cast<int>(t.num_layers);
  info.vae_spatial = static_cast<int>(layout.vae.scale_factor_spatial);
  info.vae_temporal = static_cast<int>(layout.vae.scale_factor_temporal);
  info.patch_t = static_cast<int>(t.patch_size[0]);
  info.patch_h = static_cast<int>(t.patch_size[1]);
  info.patch_w = static_cast<int>(t.patch_size[2]);
  info.supports_i2v = layout.image_to_video;
  // TI2V-5B serves both tasks; the others one (the pipeline class of the snapshot).
  if (!layout.expand_timesteps) {
    info.snapshot_task = layout.image_to_video ? Task::i2v : Task::t2v;
    info.snapshot_task_origin = layout.origin.rfind("built-in", 0) == 0
                                    ? layout.origin
                                    : "model_index.json of " + layout.origin;
  }
  info.default_flow_shift = layout.vae.is_residual ? 5.0 : 3.0;
  info.two_experts = layout.transformer_2.has_value();
  // The 36-channel image-to-video checkpoints size a request from its image (max_area); the
  // TI2V-5B takes generation.height x width for both tasks.
  info.image_size_from_area = layout.image_to_video && !layout.expand_timesteps;
  // First-last-frame: the 36-channel conditioning with a last frame; CLIP tokens of two images
  // need a transformer whose pos_embed_seq_len covers both (Wan2.1-FLF2V), which then needs it.
  const bool flf2v = t.pos_embed_seq_len > 0;
  info.last_image = info.image_size_from_area && (!t.image_tokens() || flf2v);
  info.requires_last_image = flf2v;
}

}  // namespace

namespace {

// A LoRA adapter against the transformer(s) of the job: a snapshot's checkpoint headers, or for
// seeded weights the layout's transformer built on the meta device (shapes without memory).
std::string wan_lora_problem(const ModelConfig& model, const LoraAdapter& adapter) {
  LoraFile file;
  try {
    file = read_lora_file(adapter.path, wan_lora_names());
  } catch (const WeightsError& e) {
    return e.message();
  }
  const bool pretrained = model.weights == WeightsSource::pretrained;
  const auto layout = resolve_wan_layout(model.name, model.path, pretrained);
  const std::size_t count = layout.transformer_2 ? 2 : 1;
  for (std::size_t i = 0; i < count; ++i) {
    if (!adapter_for_expert(adapter, i, count)) continue;
    ParameterShapes shapes;
    if (pretrained) {
      shapes = parameter_shapes(
          Checkpoint::open(fs::path(model.path) / (i == 0 ? "transformer" : "transformer_2")));
    } else {
      WanTransformer3DModel meta(i == 0 ? layout.transformer : *layout.transformer_2, TensorShard{},
                                 ParamSpec{torch::kFloat32, torch::Device(torch::kMeta)});
      shapes = parameter_shapes(*meta);
    }
    auto text = describe_lora_problems(shapes, file,
                                       count == 1 ? "transformer"
                                       : i == 0   ? "high-noise expert (transformer)"
                                                  : "low-noise expert (transformer_2)");
    if (!text.empty()) return text;
  }
  return {};
}

}  // namespace

void register_wan_models(ModelTable& table) {
  for (const auto& name : wan_model_names()) {
    ModelRegistration r;
    r.name = name;
    r.facts.tensor_parallel = true;  // Megatron splits of attention and FFN (docs/models.md)
    r.facts.fp8 = true;              // W8A8 FP8 block GEMMs (docs/models.md, "FP8")
    r.facts.step_cache = true;       // generation.cache over run_blocks()
    r.facts.lora = true;             // model.lora, a line's "lora" (weights/lora.hpp)
    r.lora_problem = wan_lora_problem;
    r.facts.default_guidance_scale = 5.0;  // diffusers' WanPipeline default
    r.facts.rounds_size = true;            // frames and sides as WanPipeline rounds them
    if (name != "wan") describe_layout(*builtin_wan_layout(name), r.facts);
    // A snapshot's configs (read, and checked against a released name), else the built-in ones.
    r.describe = [name](const ModelConfig& model, ModelInfo& info) {
      const fs::path root(model.path);
      if (!model.path.empty() && !fs::is_regular_file(root / "model_index.json")) {
        // A folder that is no whole snapshot: what it has (creating the pipeline names what
        // is missing).
        if (const auto file = component_file(root / "transformer", "config.json")) {
          const auto options = WanTransformerOptions::from_file(*file);
          info.attention_heads = static_cast<int>(options.num_attention_heads);
        }
        return;
      }
      describe_layout(
          resolve_wan_layout(name, model.path, model.weights == WeightsSource::pretrained), info);
    };
    // A snapshot's scheduler/ flow_shift (UniPC; `shift` for a FlowMatchEuler scheduler). Wan
    // has no guider.
    r.snapshot_defaults = [](const Config& config, GenerationDefaults& d) {
      snapshot_flow_shift(config, d, "flow_shift");
    };
    r.create = create_wan_pipeline;
    table.add(std::move(r));
  }
}

}  // namespace omnidp::models::wan
