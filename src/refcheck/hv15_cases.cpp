#include "omnidp/refcheck/hv15_cases.hpp"

#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/hv15/vae.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

std::vector<CaseResult> run_hv15_transformer(const fs::path& case_dir, const nlohmann::json& /*case_json*/,
                                             const RefcheckOptions& options) {
  torch::NoGradGuard no_grad;
  const auto config = models::read_json(case_dir / "config.json");
  hv::HunyuanVideo15Transformer3DModel model(
      hv::TransformerOptions::from_json(config, (case_dir / "config.json").string()));
  models::load_state_dict(*model, models::Checkpoint::open(case_dir), options.dtype, options.device);
  model->eval();

  const models::SafetensorsFile io(case_dir / "io.safetensors");
  auto get = [&](const char* name) { return io.tensor(name).to(options.device); };
  hv::TransformerInputs in;
  in.hidden_states = get("hidden_states");
  in.timestep = get("timestep");
  in.encoder_hidden_states = get("encoder_hidden_states");
  in.encoder_attention_mask = get("encoder_attention_mask");
  in.encoder_hidden_states_2 = get("encoder_hidden_states_2");
  in.encoder_attention_mask_2 = get("encoder_attention_mask_2");
  if (io.contains("image_embeds")) in.image_embeds = get("image_embeds");
  if (io.contains("timestep_r")) in.timestep_r = get("timestep_r");
  const auto expected = io.tensor("out");
  const double tol = tolerance(ToleranceClass::forward, options);

  std::vector<CaseResult> results;
  model->set_text_padding(hv::TextPadding::mask);
  results.push_back(compare("out", model->forward(in).to(torch::kCPU, torch::kFloat32), expected, tol));
  if (in.hidden_states.size(0) == 1) {
    model->set_text_padding(hv::TextPadding::drop);
    results.push_back(compare("out_drop_padding", model->forward(in).to(torch::kCPU, torch::kFloat32),
                              expected, tol));
  }
  return results;
}

std::vector<CaseResult> run_hv15_vae(const fs::path& case_dir, const nlohmann::json& /*case_json*/,
                                     const RefcheckOptions& options) {
  torch::NoGradGuard no_grad;
  const auto config = models::read_json(case_dir / "config.json");
  hv::AutoencoderKLHunyuanVideo15 vae(hv::VaeOptions::from_json(config, (case_dir / "config.json").string()));
  models::load_state_dict(*vae, models::Checkpoint::open(case_dir), options.dtype, options.device);
  vae->eval();

  const models::SafetensorsFile io(case_dir / "io.safetensors");
  const double tol = tolerance(ToleranceClass::forward, options);
  std::vector<CaseResult> results;
  if (io.contains("latents") && io.contains("decoded")) {
    const auto decoded = vae->decode(io.tensor("latents").to(options.device));
    results.push_back(compare("decoded", decoded.to(torch::kCPU, torch::kFloat32), io.tensor("decoded"), tol));
  }
  // encode: the Wan case's names (`image` or `video` in, `encoded_mean` / `encoded_logvar` out).
  const char* input = io.contains("image") ? "image" : "video";
  if (io.contains(input) && io.contains("encoded_mean")) {
    const auto moments = vae->encode_moments(io.tensor(input).to(options.device)).to(torch::kCPU, torch::kFloat32);
    const auto latent = vae->options().latent_channels;
    results.push_back(compare("encoded_mean", moments.slice(1, 0, latent), io.tensor("encoded_mean"), tol));
    if (io.contains("encoded_logvar")) {
      // DiagonalGaussianDistribution clamps logvar to [-30, 20].
      results.push_back(compare("encoded_logvar", moments.slice(1, latent).clamp(-30.0, 20.0),
                                io.tensor("encoded_logvar"), tol));
    }
  }
  if (results.empty()) results.push_back(skip("decoded", "io.safetensors has neither latents/decoded nor image/encoded_mean"));
  return results;
}

}  // namespace omnidp::refcheck
