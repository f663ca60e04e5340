#include "omnidp/models/wan/pipeline.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string_view>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/image.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/layers/rng.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/pipelines/guided_step.hpp"
#include "omnidp/models/sample_schedule.hpp"
#include "omnidp/models/snapshot_config.hpp"
#include "omnidp/models/text/prompt_encoders.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/wan/flops.hpp"
#include "omnidp/models/wan/image_preprocess.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::wan {
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kWanTextTokens = 512;  // the pipelines' max_sequence_length

// Zeroes the positions the mask marks invalid and pads with zeros to 512 tokens, as
// WanPipeline._get_t5_prompt_embeds does.
torch::Tensor wan_text_context(const PromptEmbedding& e) {
  auto x = e.embeds.to(torch::kFloat32);
  if (e.mask.defined()) x = x * e.mask.to(x.device()).to(torch::kFloat32).unsqueeze(-1);
  if (x.size(1) < kWanTextTokens) {
    x = torch::cat(
        {x, torch::zeros({x.size(0), kWanTextTokens - x.size(1), x.size(2)}, x.options())}, 1);
  }
  return x;
}

}  // namespace

WanPipeline::WanPipeline(WanPipelineParts parts, torch::Device device)
    : parts_(std::move(parts)), device_(device) {
  if (!parts_.transformer || !parts_.vae)
    throw ModelError("WanPipeline needs a transformer and a VAE");
  if (parts_.transformer->options().in_channels != parts_.vae->options().z_dim ||
      parts_.transformer->options().out_channels != parts_.vae->options().z_dim) {
    throw ModelError("transformer in/out channels do not match the VAE z_dim");
  }
}

std::vector<std::int64_t> WanPipeline::latent_shape(int num_frames, int height, int width) const {
  const auto& vo = parts_.vae->options();
  return {1, parts_.transformer->options().in_channels,
          (num_frames - 1) / vo.scale_factor_temporal + 1, height / vo.scale_factor_spatial,
          width / vo.scale_factor_spatial};
}

WanSampleOutputs WanPipeline::sample(const WanSampleInputs& in, const GenerateContext* ctx) {
  c10::InferenceMode inference;
  auto& transformer = parts_.transformer;
  auto& vae = parts_.vae;
  const auto& to = transformer->options();
  const auto& vo = vae->options();
  // Tensor parallel and Ulysses (GenerateContext::tensor, ::sequence): the transformer's shard
  // runs with its groups; with a sequence group every forward shards the video tokens over it
  // and returns the whole prediction on every rank, so the steps stay identical.
  runtime::Collective* sequence = ctx != nullptr ? ctx->sequence : nullptr;
  transformer->bind_parallel({ctx != nullptr ? ctx->tensor : nullptr, sequence});

  // The reference's rounding of the size (with a warning there too).
  const int t = static_cast<int>(vo.scale_factor_temporal);
  int frames = in.num_frames % t != 1 ? in.num_frames / t * t + 1 : in.num_frames;
  frames = std::max(frames, 1);
  const int h_mult = static_cast<int>(vo.scale_factor_spatial * to.patch_size[1]);
  const int w_mult = static_cast<int>(vo.scale_factor_spatial * to.patch_size[2]);
  const int height = in.height / h_mult * h_mult;
  const int width = in.width / w_mult * w_mult;
  if (frames != in.num_frames || height != in.height || width != in.width) {
    log_warn("wan: size " + std::to_string(in.width) + "x" + std::to_string(in.height) + "x" +
             std::to_string(in.num_frames) + " adjusted to " + std::to_string(width) + "x" +
             std::to_string(height) + "x" + std::to_string(frames) + " as the reference does");
  }
  if (height <= 0 || width <= 0) throw ModelError("height and width must be at least 32");
  if (in.num_inference_steps < 1) throw ModelError("num_inference_steps must be >= 1");
  const auto shape = latent_shape(frames, height, width);
  if (!in.noise.defined() || in.noise.sizes().vec() != shape) {
    throw ModelError("noise must have the latent shape [1, z, T, h, w]");
  }

  const bool do_cfg = in.guidance_scale > 1.0;
  const auto tdtype = transformer->dtype();
  const auto prompt = in.prompt_embeds.to(device_, tdtype);
  torch::Tensor negative;
  if (do_cfg) {
    if (!in.negative_prompt_embeds.defined()) {
      throw ModelError("guidance_scale > 1 needs negative prompt embeddings");
    }
    negative = in.negative_prompt_embeds.to(device_, tdtype);
  }
  // CFG-parallel (GenerateContext::cfg): this rank runs one branch of every step, rank 0 the
  // conditional one, rank 1 the unconditional one; both combine the gathered predictions alike.
  runtime::Collective* cfg = ctx != nullptr ? ctx->cfg : nullptr;
  check_cfg_group(cfg);
  const int branch = cfg != nullptr ? cfg->rank() : 0;
  const bool batch_cfg =
      cfg == nullptr && do_cfg && parts_.cfg_batch && prompt.sizes() == negative.sizes();
  const auto context = batch_cfg ? torch::cat({prompt, negative}, 0) : prompt;

  UniPCOptions so = parts_.scheduler;
  so.flow_shift = in.flow_shift;
  UniPCScheduler scheduler(so);
  scheduler.set_timesteps(in.num_inference_steps);
  const int steps = scheduler.num_steps();

  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  auto latents = in.noise.to(device_, torch::kFloat32);

  // expand_timesteps: mask 0 on the conditioned first latent frame (I2V), 1 elsewhere.
  auto mask = torch::ones({1, 1, shape[2], shape[3], shape[4]}, f32);
  torch::Tensor condition;
  if (in.image.defined()) {
    const auto image = in.image.to(device_, torch::kFloat32).unsqueeze(2).to(vae->dtype());
    const auto latent = vae->encode(image).mean.to(torch::kFloat32);
    condition = vae->normalize_latents(latent);
    mask.select(2, 0).zero_();
  }
  const auto token_mask = mask[0][0]
                              .slice(0, 0, shape[2], to.patch_size[0])
                              .slice(1, 0, shape[3], to.patch_size[1])
                              .slice(2, 0, shape[4], to.patch_size[2])
                              .flatten();
  const auto blend = [&](const torch::Tensor& x) {
    return condition.defined() ? (1 - mask) * condition + mask * x : x;
  };

  // The text side of every step, once: the embedded context's keys and values per block.
  const auto text = branch == 0 ? transformer->prepare_context(context) : WanPreparedContext{};
  const auto negative_text = do_cfg && !batch_cfg && (cfg == nullptr || branch == 1)
                                 ? transformer->prepare_context(negative)
                                 : WanPreparedContext{};

  const auto timesteps = scheduler.timesteps().to(device_);
  const CfgLayout layout{cfg, batch_cfg};
  run_denoising_steps(steps, ctx, device_, [&](int i) {
    const auto model_input = blend(latents).to(tdtype);
    const auto ts = (token_mask * timesteps[i]).unsqueeze(0);  // [1, N]
    const auto forward = [&](CfgBranch b) {
      if (b == CfgBranch::both) {
        return transformer->forward(torch::cat({model_input, model_input}, 0), ts.expand({2, -1}),
                                    text);
      }
      return transformer->forward(model_input, ts,
                                  b == CfgBranch::conditional ? text : negative_text);
    };
    const auto noise_pred =
        guided_prediction(layout, do_cfg, in.guidance_scale, {}, forward, model_input);
    latents = scheduler.step(noise_pred, i, latents);
  });
  latents = blend(latents);

  WanSampleOutputs out;
  out.final_latents = latents;
  if (!group_leader(ctx)) return out;  // a parallel group: only its leader decodes
  require_finite_latents(latents);
  const auto z = vae->denormalize_latents(latents.to(vae->dtype()));
  auto video = vae->decode(z);  // [1, 3, F, H, W]
  video = (video / 2 + 0.5).clamp(0, 1);
  out.video = video.to(torch::kFloat32).permute({0, 2, 3, 4, 1}).contiguous();
  return out;
}

torch::Tensor WanPipeline::encode_text(const std::string& text) {
  if (!parts_.text_encoder) {
    throw InputError("<prompt>", "model '" + parts_.model_name +
                                     "' has no text encoder in this build: give the request a "
                                     "prompt_embeds file");
  }
  return wan_text_context(parts_.text_encoder->encode(text));
}

std::pair<torch::Tensor, torch::Tensor> WanPipeline::text_embeddings(const Request& request,
                                                                     bool need_negative) {
  const auto text_dim = parts_.transformer->options().text_dim;
  torch::Tensor positive, negative;
  if (!request.prompt_embeds.empty()) {
    try {
      const SafetensorsFile file(request.prompt_embeds);
      positive = file.tensor("prompt_embeds", torch::kFloat32);
      if (need_negative && file.contains("negative_prompt_embeds")) {
        negative = file.tensor("negative_prompt_embeds", torch::kFloat32);
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::input) throw;
      throw InputError(request.prompt_embeds, e.what());
    }
    for (const auto* t : {&positive, &negative}) {
      if (t->defined() && (t->dim() != 3 || t->size(0) != 1 || t->size(2) != text_dim)) {
        throw InputError(request.prompt_embeds,
                         "embeddings must be [1, L, " + std::to_string(text_dim) + "]");
      }
    }
  } else {
    positive = encode_text(request.prompt);
  }
  if (need_negative && !negative.defined()) {
    if (!cached_negative_.defined() || cached_negative_text_ != request.negative_prompt) {
      cached_negative_ = encode_text(request.negative_prompt);
      cached_negative_text_ = request.negative_prompt;
    }
    negative = cached_negative_;
  }
  return {positive, negative};
}

std::optional<RequestFlops> WanPipeline::flops(const Request& request) const {
  const bool cfg = request.guidance_scale > 1.0;
  WanFlopsInputs in;
  const auto& vo = parts_.vae->options();
  const auto& to = parts_.transformer->options();
  const int t = static_cast<int>(vo.scale_factor_temporal);
  in.num_frames =
      std::max(request.num_frames % t != 1 ? request.num_frames / t * t + 1 : request.num_frames, 1);
  const int hm = static_cast<int>(vo.scale_factor_spatial * to.patch_size[1]);
  const int wm = static_cast<int>(vo.scale_factor_spatial * to.patch_size[2]);
  in.height = request.height / hm * hm;
  in.width = request.width / wm * wm;
  in.num_inference_steps = request.num_inference_steps;
  in.cfg = cfg;
  in.i2v = request.task == Task::i2v;
  in.text_tokens = kWanTextTokens;
  in.negative_text_tokens = kWanTextTokens;
  bool prompt_from_file = false;
  bool negative_from_file = false;
  if (!request.prompt_embeds.empty()) {
    const SafetensorsFile file(request.prompt_embeds);
    in.text_tokens = file.meta("prompt_embeds").shape.at(1);
    prompt_from_file = true;
    if (cfg && file.contains("negative_prompt_embeds")) {
      in.negative_text_tokens = file.meta("negative_prompt_embeds").shape.at(1);
      negative_from_file = true;
    }
  }
  if ((!prompt_from_file || (cfg && !negative_from_file)) && !parts_.text_encoder) {
    return std::nullopt;
  }
  if (!prompt_from_file) in.text_flops += parts_.text_encoder->encode_cost(request.prompt).flops;
  if (cfg && !negative_from_file) {
    in.text_flops += parts_.text_encoder->encode_cost(request.negative_prompt).flops;
  }
  return wan_request_flops(to, vo, in);
}

Video WanPipeline::generate(const Request& request, const GenerateContext& ctx) {
  c10::InferenceMode inference;
  WanSampleInputs in;
  set_schedule(in, request);
  std::tie(in.prompt_embeds, in.negative_prompt_embeds) =
      text_embeddings(request, request.guidance_scale > 1.0);
  if (request.task == Task::i2v) {
    if (request.image.empty()) throw InputError("<manifest>", "i2v request without an image");
    const RgbImage image =
        decode_image_rgb(request.image, parts_.max_image_pixels, request.image_sha256);
    in.image = preprocess_image(image, request.height, request.width);
  }
  // The rounded size decides the latent shape (sample() rounds the same way).
  const auto& vo = parts_.vae->options();
  const int t = static_cast<int>(vo.scale_factor_temporal);
  const int frames =
      std::max(request.num_frames % t != 1 ? request.num_frames / t * t + 1 : request.num_frames, 1);
  const auto& to = parts_.transformer->options();
  const int hm = static_cast<int>(vo.scale_factor_spatial * to.patch_size[1]);
  const int wm = static_cast<int>(vo.scale_factor_spatial * to.patch_size[2]);
  in.noise = randn_cpu(latent_shape(frames, request.height / hm * hm, request.width / wm * wm),
                       request.seed);
  const auto out = sample(in, &ctx);
  if (!out.video.defined())
    return Video{};  // a CFG-parallel or tensor-parallel member: the leader has it
  return video_from_frames(out.video);
}

// ---------------------------------------------------------------------------------------------
// Construction

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

std::unique_ptr<Pipeline> create_wan_pipeline(const Config& config, const DeviceBinding& binding) {
  const auto& m = config.model;
  const auto setup = model_placement(config, binding);
  const auto device = setup.spec.device;
  const auto dtype = setup.spec.dtype;
  const TensorShard shard{binding.tensor_rank, binding.tensor_size};

  WanPipelineParts parts;
  parts.model_name = m.name;
  parts.device_name = setup.device_name;

  WanTransformerOptions topts;
  AutoencoderKLWanOptions vopts;
  const text::EncoderPlacement placement{device, m.offload_text_encoder};
  std::future<std::unique_ptr<text::T5PromptEncoder>> text_load;
  const fs::path root(m.path);
  if (m.name == "tiny-wan") {
    if (m.weights != WeightsSource::random) {
      throw ConfigError("model.weights",
                        "tiny-wan has seeded random weights only (weights: random)");
    }
    topts = WanTransformerOptions::from_json_text(tiny_wan_transformer_config(),
                                                  "tiny-wan transformer");
    vopts = AutoencoderKLWanOptions::from_json_text(tiny_wan_vae_config(), "tiny-wan vae");
  } else if (m.name == "wan2.2-ti2v-5b") {
    if (m.weights == WeightsSource::pretrained) {
      if (m.path.empty())
        throw ConfigError("model.path", "wan2.2-ti2v-5b with pretrained weights needs model.path");
      // Every component is checked to be there before the first weights are read
      // (docs/models.md, "Loading a snapshot").
      if (!fs::is_regular_file(root / "model_index.json")) {
        throw WeightsError(
            (root / "model_index.json").string(),
            "missing: the snapshot " + root.string() + " has no model_index.json (WanPipeline)");
      }
      const auto transformer_dir = snapshot_component(
          root, "transformer", "config.json", "WanTransformer3DModel: config.json + safetensors");
      const auto vae_dir = snapshot_component(root, "vae", "config.json",
                                              "AutoencoderKLWan: config.json + safetensors");
      const auto scheduler_dir =
          snapshot_component(root, "scheduler", "scheduler_config.json",
                             "UniPCMultistepScheduler: scheduler_config.json");
      const auto text_dir = snapshot_component(root, "text_encoder", "config.json",
                                               "UMT5EncoderModel: config.json + safetensors");
      if (!fs::is_regular_file(root / "tokenizer" / "spiece.model") &&
          !fs::is_regular_file(root / "tokenizer" / "tokenizer.json")) {
        throw WeightsError((root / "tokenizer" / "spiece.model").string(),
                           "missing: the snapshot has no UMT5 tokenizer (tokenizer/spiece.model "
                           "or tokenizer/tokenizer.json)");
      }
      const auto transformer_config = transformer_dir / "config.json";
      const auto text_config = read_json(text_dir / "config.json");
      const auto text_dim = WanTransformerOptions::from_file(transformer_config).text_dim;
      if (text_config.contains("d_model") && text_config.at("d_model").is_number_integer() &&
          text_config.at("d_model").get<std::int64_t>() != text_dim) {
        throw WeightsError(
            (text_dir / "config.json").string(),
            "d_model " + std::to_string(text_config.at("d_model").get<std::int64_t>()) +
                " does not match text_dim " + std::to_string(text_dim) + " of " +
                transformer_config.string() + " (the encoder's output is the transformer's input)");
      }
      const auto index = read_json(root / "model_index.json");
      if (!index.value("expand_timesteps", false)) {
        throw ModelError(
            "only the Wan2.2 TI2V layout (model_index.json expand_timesteps: true) is supported",
            {(root / "model_index.json").string()});
      }
      if (index.contains("transformer_2") && !index.at("transformer_2").is_null() &&
          !(index.at("transformer_2").is_array() && index.at("transformer_2").at(0).is_null())) {
        throw ModelError("two-transformer (boundary_ratio) snapshots are not supported",
                         {(root / "model_index.json").string()});
      }
      // The text encoder loads on a thread of its own meanwhile (docs/performance.md, "Model
      // load"); its errors come out of get() below, after the transformer's.
      text_load =
          std::async(std::launch::async, [root, dtype, placement, threads = at::get_num_threads()] {
            at::set_num_threads(threads);  // a new thread starts from OpenMP's default
            return text::load_wan_text_encoder(root, dtype, placement);
          });
      parts.transformer = load_wan_transformer(transformer_dir, dtype, device, shard);
      parts.vae = load_autoencoder_kl_wan(vae_dir, dtype, device);
      parts.scheduler =
          unipc_options_from_config(read_json(scheduler_dir / "scheduler_config.json"));
    } else if (!m.path.empty()) {
      topts = WanTransformerOptions::from_file(root / "transformer" / "config.json");
      vopts = AutoencoderKLWanOptions::from_file(root / "vae");
    } else {
      topts = WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(),
                                                    "wan2.2-ti2v-5b transformer");
      vopts = AutoencoderKLWanOptions::wan22_ti2v_5b();
    }
  } else {
    throw ConfigError("model.name", "'" + m.name + "' is not a Wan model");
  }
  if (!parts.transformer) {
    // Seeded random weights: transformer from weights_seed, VAE from weights_seed + 1. The
    // phases are timed for the log: the random-weight load of the 5B model is slow on some
    // machines (docs/performance.md).
    using Clock = std::chrono::steady_clock;
    const auto since = [](Clock::time_point t) {
      char text[32];
      std::snprintf(text, sizeof text, "%.2f s",
                    std::chrono::duration<double>(Clock::now() - t).count());
      return std::string(text);
    };
    auto t = Clock::now();
    // Built in its final dtypes on the device: the random values are copied in place.
    WanTransformer3DModel transformer(topts, shard, ParamSpec{dtype, device});
    const std::string construct = since(t);
    t = Clock::now();
    init_random_weights(*transformer, m.weights_seed, transformer->shard_plan());
    const std::string init = since(t);
    t = Clock::now();
    transformer->to_dtype(device, dtype);
    freeze(*transformer);
    log_debug("wan: random transformer: construct " + construct + ", random init " + init +
              ", to " + device.str() + " " + since(t));
    parts.transformer = transformer;
    t = Clock::now();
    AutoencoderKLWan vae(vopts);
    init_random_weights(*vae, m.weights_seed + 1);
    vae->to(device, dtype);
    freeze(*vae);
    log_debug("wan: random VAE: " + since(t));
    parts.vae = vae;
  }
  if (m.quantization == Quantization::fp8) {
    require_fp8_config(device);
    parts.transformer->quantize_fp8();
  }
  // cuDNN's channels-last convolutions are the fast ones on recent GPUs (docs/performance.md);
  // the CPU keeps the contiguous layout.
  if (device.is_cuda()) parts.vae->set_channels_last(true);
  parts.max_image_pixels = config.input.max_image_pixels;
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

void register_wan_models(ModelTable& table) {
  for (const auto& [name, hidden, layers, heads] :
       {std::tuple{"wan2.2-ti2v-5b", 3072, 30, 24}, std::tuple{"tiny-wan", 128, 2, 2}}) {
    ModelRegistration r;
    r.name = name;
    r.facts.attention_heads = heads;
    r.facts.tensor_parallel = true;  // Megatron splits of attention and FFN (docs/models.md)
    r.facts.fp8 = true;              // W8A8 FP8 block GEMMs (docs/models.md, "FP8")
    // A pretrained snapshot's transformer/config.json (tiny-wan has its own built-in config).
    if (std::string_view(name) != "tiny-wan") {
      r.describe = [](const ModelConfig& model, ModelInfo& info) {
        if (model.path.empty() || model.weights != WeightsSource::pretrained) return;
        if (const auto file =
                component_file(std::filesystem::path(model.path) / "transformer", "config.json")) {
          const auto count = snapshot_number(
              *file, "num_attention_heads", +[](double x) {
                return x >= 1 && x == std::floor(x) ? std::string() : "must be a positive integer";
              });
          if (count) info.attention_heads = static_cast<int>(*count);
        }
      };
    }
    r.facts.patch_t = 1;  // VAE 4 x 16 x 16, patch (1, 2, 2)
    r.facts.patch_h = r.facts.patch_w = 2;
    r.facts.hidden_size = hidden;
    r.facts.num_layers = layers;
    r.facts.default_guidance_scale = 5.0;  // Wan2.2-TI2V-5B: CFG 5, UniPC flow_shift 5
    r.facts.default_flow_shift = 5.0;
    // A snapshot's scheduler/ flow_shift (UniPC; `shift` for a FlowMatchEuler scheduler). Wan
    // has no guider.
    r.snapshot_defaults = [](const Config& config, GenerationDefaults& d) {
      if (config.generation.flow_shift) return;
      const std::filesystem::path root(config.model.path);
      if (const auto file = component_file(root / "scheduler", "scheduler_config.json")) {
        const bool euler =
            snapshot_string(*file, "_class_name") == "FlowMatchEulerDiscreteScheduler";
        if (const auto v = snapshot_number(*file, euler ? "shift" : "flow_shift", &check_flow_shift)) {
          d.flow_shift = ValueOrigin{*v, "snapshot " + file->lexically_relative(root).string()};
        }
      }
    };
    r.create = create_wan_pipeline;
    table.add(std::move(r));
  }
}

}  // namespace omnidp::models::wan
