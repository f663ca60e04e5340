#include "omnidp/refcheck/text_cases.hpp"

#include <fmt/format.h>
#include <regex>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/byt5_tokenizer.hpp"
#include "omnidp/models/text/qwen25vl.hpp"
#include "omnidp/models/text/t5.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace fs = std::filesystem;
using models::SafetensorsFile;

namespace {

struct TextInputs {
  torch::Tensor ids;    // [B, L] int64
  torch::Tensor mask;   // [B, L] int64
  torch::Tensor valid;  // [N, 2] (batch, position) of the valid tokens
};

TextInputs read_inputs(const SafetensorsFile& io) {
  TextInputs in;
  in.ids = io.tensor("input_ids").round().to(torch::kLong);
  in.mask = io.contains("attention_mask") ? io.tensor("attention_mask").round().to(torch::kLong)
                                          : torch::ones_like(in.ids);
  if (in.ids.dim() == 1) in.ids = in.ids.unsqueeze(0);
  if (in.mask.dim() == 1) in.mask = in.mask.unsqueeze(0);
  in.valid = in.mask.nonzero();
  return in;
}

// The rows of [B, L, D] at the valid (batch, position) pairs: [N, D].
torch::Tensor at_valid(const torch::Tensor& x, const torch::Tensor& valid) {
  const auto cpu = x.to(torch::kCPU, torch::kFloat32);
  return cpu.index({valid.select(1, 0), valid.select(1, 1)});
}

CaseResult compare_valid(const std::string& check, const torch::Tensor& ours,
                         const torch::Tensor& ref, const TextInputs& in, double tol) {
  if (ours.sizes() != ref.sizes())
    return compare(check, ours.to(torch::kCPU, torch::kFloat32), ref, tol);
  return compare(check, at_valid(ours, in.valid), at_valid(ref, in.valid), tol,
                 fmt::format("{} valid positions", in.valid.size(0)));
}

std::vector<CaseResult> run_t5(const fs::path& case_dir, const RefcheckOptions& options) {
  const SafetensorsFile io(case_dir / "io.safetensors");
  const auto model = models::text::load_t5_encoder(case_dir, options.dtype, options.device);
  const auto in = read_inputs(io);
  c10::InferenceMode inference;
  const auto out = model->forward(in.ids.to(options.device), in.mask.to(options.device));
  return {compare_valid("last_hidden_state", out, io.tensor("last_hidden_state"), in,
                        tolerance(ToleranceClass::forward, options))};
}

}  // namespace

std::vector<CaseResult> run_umt5_encoder(const fs::path& case_dir,
                                         const nlohmann::json& /*case_json*/,
                                         const RefcheckOptions& options) {
  return run_t5(case_dir, options);
}

std::vector<CaseResult> run_byt5_encoder(const fs::path& case_dir, const nlohmann::json& case_json,
                                         const RefcheckOptions& options) {
  auto results = run_t5(case_dir, options);
  if (case_json.contains("texts") && case_json.at("texts").is_array()) {
    const SafetensorsFile io(case_dir / "io.safetensors");
    const models::text::ByT5Tokenizer tokenizer;
    const auto& texts = case_json.at("texts");
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto key = fmt::format("text{}_ids", i);
      if (!io.contains(key)) continue;
      const auto ids = tokenizer.encode(texts.at(i).get<std::string>());
      const auto ours = torch::tensor(ids, torch::kLong).to(torch::kFloat32);
      results.push_back(compare(key, ours, io.tensor(key),
                                tolerance(ToleranceClass::exact, options), "ByT5 tokenizer"));
    }
  }
  return results;
}

std::vector<CaseResult> run_qwen25vl_text(const fs::path& case_dir,
                                          const nlohmann::json& /*case_json*/,
                                          const RefcheckOptions& options) {
  const SafetensorsFile io(case_dir / "io.safetensors");
  const auto model = models::text::load_qwen25vl_text(case_dir, options.dtype, options.device);
  const auto in = read_inputs(io);
  const double tol = tolerance(ToleranceClass::forward, options);
  static const std::regex kHidden(R"(hidden_states_(minus)?(\d+))");
  std::vector<CaseResult> results;
  c10::InferenceMode inference;
  const auto ids = in.ids.to(options.device);
  const auto mask = in.mask.to(options.device);
  for (const auto& name : io.names()) {
    std::smatch m;
    std::int64_t index = 0;
    if (name == "last_hidden_state") {
      index = -1;
    } else if (std::regex_match(name, m, kHidden)) {
      index = std::stoll(m[2].str()) * (m[1].matched ? -1 : 1);
    } else {
      continue;
    }
    results.push_back(
        compare_valid(name, model->hidden_state(ids, mask, index), io.tensor(name), in, tol));
  }
  return results;
}

}  // namespace omnidp::refcheck
