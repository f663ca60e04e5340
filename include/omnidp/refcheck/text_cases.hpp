#pragma once
// Refcheck runners of the prompt encoders (see refcheck.hpp for the runner contract). A case
// folder holds a transformers model (config.json + model.safetensors or shards) and
// io.safetensors with `input_ids` [B, L] and `attention_mask` [B, L] (float32 like every
// tensor there) plus the expected outputs; only the positions where the mask is 1 are compared
// (forward tolerance). Every size comes from the case files.

#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {

// UMT5EncoderModel: `last_hidden_state`.
[[nodiscard]] std::vector<CaseResult> run_umt5_encoder(const std::filesystem::path& case_dir,
                                                       const nlohmann::json& case_json,
                                                       const RefcheckOptions& options);

// T5EncoderModel (T5 v1.1 / ByT5): `last_hidden_state`, and for each case.json `texts[i]`
// with a `text<i>_ids` tensor the ByT5 tokenizer's ids (exact).
[[nodiscard]] std::vector<CaseResult> run_byt5_encoder(const std::filesystem::path& case_dir,
                                                       const nlohmann::json& case_json,
                                                       const RefcheckOptions& options);

// Qwen2_5_VLTextModel: `last_hidden_state` and every `hidden_states_minus<k>` (the reference's
// hidden_states[-k]) or `hidden_states_<k>` present.
[[nodiscard]] std::vector<CaseResult> run_qwen25vl_text(const std::filesystem::path& case_dir,
                                                        const nlohmann::json& case_json,
                                                        const RefcheckOptions& options);

}  // namespace omnidp::refcheck
