#include "omnidp/refcheck/wan_vae_cases.hpp"

#include "omnidp/models/wan/vae.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {

std::vector<CaseResult> run_wan_vae(const std::filesystem::path& case_dir,
                                    const nlohmann::json& /*case_json*/,
                                    const RefcheckOptions& options) {
  const models::SafetensorsFile io(case_dir / "io.safetensors");
  auto vae = models::wan::load_autoencoder_kl_wan(case_dir, options.dtype, options.device);
  const double tol = tolerance(ToleranceClass::forward, options);
  const auto cpu_float = [](const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat32); };

  std::vector<CaseResult> results;
  if (io.contains("latents") && io.contains("decoded")) {
    const auto decoded = vae->decode(io.tensor("latents"));
    results.push_back(compare("decoded", cpu_float(decoded), io.tensor("decoded"), tol));
  }
  if (io.contains("image") && (io.contains("encoded_mean") || io.contains("encoded_logvar"))) {
    const auto dist = vae->encode(io.tensor("image"));
    if (io.contains("encoded_mean")) {
      results.push_back(compare("encoded_mean", cpu_float(dist.mean), io.tensor("encoded_mean"), tol));
    }
    if (io.contains("encoded_logvar")) {
      results.push_back(
          compare("encoded_logvar", cpu_float(dist.logvar), io.tensor("encoded_logvar"), tol));
    }
  }
  return results;
}

}  // namespace omnidp::refcheck
