#pragma once
// Refcheck runners of the prompt encoders (see refcheck.hpp for the runner contract, checks.hpp for
// what runners share). A case folder holds a transformers model (config.json + model.safetensors or
// shards) and io.safetensors with `input_ids` [B, L] and `attention_mask` [B, L] (float32 like
// every tensor there) plus the expected outputs; only the positions where the mask is 1 are
// compared (forward tolerance). Every size comes from the case files.

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// UMT5EncoderModel: `last_hidden_state`.
[[nodiscard]] CaseRunner run_umt5_encoder;

// T5EncoderModel (T5 v1.1 / ByT5): `last_hidden_state`, and for each case.json `texts[i]`
// with a `text<i>_ids` tensor the ByT5 tokenizer's ids (exact).
[[nodiscard]] CaseRunner run_byt5_encoder;

// Qwen2_5_VLTextModel: `last_hidden_state` and every `hidden_states_minus<k>` (the reference's
// hidden_states[-k]) or `hidden_states_<k>` present.
[[nodiscard]] CaseRunner run_qwen25vl_text;

}  // namespace omnidp::refcheck
