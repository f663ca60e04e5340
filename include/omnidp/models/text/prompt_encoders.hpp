#pragma once
// The prompt encoders of the pipelines (TextEncoder implementations), with the reference
// pipelines' prompt handling, padding and truncation:
//   - Wan (WanPipeline._get_t5_prompt_embeds): prompt_clean, UMT5 tokens + </s> (at most 512),
//     last_hidden_state, zeros beyond the valid tokens, padded to 512.
//   - tiny-wan: the same with a tiny byte-level T5 (ByT5 tokenizer, seeded weights, no files).
//   - HunyuanVideo-1.5 (HunyuanVideo15Pipeline._get_mllm/_get_byt5_prompt_embeds): the Qwen2.5-VL
//     chat template with the pipeline's system message, at most 108 + 1000 tokens,
//     hidden_states[-3] with the first 108 (template) positions cropped -> [1, 1000, D]; the byT5
//     glyph embeddings of the prompt's quoted text in the `Text "..." ` format (at most 256
//     tokens) -> [1, 256, D2], all-zero with an all-zero mask when nothing is quoted.
// Encoders run only the valid tokens (padding cannot change them: keys are masked and, for the
// causal Qwen model, padding comes after them) and return zeros at padding positions where the
// reference leaves values that every consumer masks out.
//
// Placement: with `offload` (config model.offload_text_encoder) the weights live on the CPU and
// move to the device for each encode() and back afterwards; otherwise they stay on the device.
// Ownership and threading: one encoder per replica, encode() from the worker thread.

#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "omnidp/models/text/encoder.hpp"
#include "omnidp/models/text/qwen25vl.hpp"
#include "omnidp/models/text/t5.hpp"
#include "omnidp/models/text/tokenizer.hpp"

namespace omnidp::models::text {

struct EncoderPlacement {
  torch::Device device = torch::kCPU;  // where encode() computes and returns its tensors
  bool offload = true;                 // weights on the CPU between encodes
};

// WanPipeline's prompt_clean without ftfy: HTML entities unescaped twice (named entities of
// HTML's common set and numeric references), whitespace runs (Python's \s, Unicode) -> one
// space, trimmed.
[[nodiscard]] std::string wan_prompt_clean(const std::string& text);

// HunyuanVideo-1.5's extract_glyph_texts: the spans between "..." or “...” (not across a
// newline, shortest match), deduplicated in order when there are several, joined as
// `Text "a". Text "b". `; nullopt when the prompt quotes nothing.
[[nodiscard]] std::optional<std::string> hv15_glyph_text(const std::string& prompt);

// HunyuanVideo15Pipeline.system_message (the line continuations keep their 8-space indents).
[[nodiscard]] const std::string& hv15_system_message();
// The Qwen2.5-VL chat template with add_generation_prompt, for a system and one user message
// (an empty user message becomes " ", as format_text_input does):
// "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n".
[[nodiscard]] std::string hv15_chat_text(const std::string& user, const std::string& system_message);

class T5PromptEncoder final : public TextEncoder {
 public:
  struct Options {
    std::size_t max_length = 512;   // tokens, </s> included
    bool pad_to_max_length = true;  // [1, max_length, D] with zeros beyond the valid tokens
    bool clean_prompt = true;       // wan_prompt_clean first
    EncoderPlacement placement;
  };

  // `model` may be anywhere; it is moved to the placement's home (CPU when offloading).
  T5PromptEncoder(std::unique_ptr<Tokenizer> tokenizer, T5EncoderModel model, Options options);

  // embeds float32 [1, L, d_model] and mask int64 [1, L] on the placement device (L =
  // max_length when padding, else the valid token count).
  [[nodiscard]] PromptEmbedding encode(const std::string& prompt) override;
  // t5_encoder_flops over the prompt's valid tokens (the encoder runs only those).
  [[nodiscard]] EncodeCost encode_cost(const std::string& prompt) const override;

  [[nodiscard]] const T5EncoderModel& model() const noexcept { return model_; }
  [[nodiscard]] const Tokenizer& tokenizer() const noexcept { return *tokenizer_; }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
  T5EncoderModel model_;
  Options options_;
};

class Hv15PromptEncoder final : public TextEncoder {
 public:
  struct Options {
    std::size_t max_length = 1000;         // tokenizer_max_length (after the crop)
    std::size_t crop_start = 108;          // prompt_template_encode_start_idx
    std::int64_t hidden_state_index = -3;  // hidden_states[-(num_hidden_layers_to_skip + 1)]
    std::size_t glyph_max_length = 256;    // tokenizer_2_max_length
    std::string system_message = hv15_system_message();
    EncoderPlacement placement;
  };

  // `tokenizer` is the Qwen2 tokenizer of the snapshot (any Tokenizer in tests), `glyph_tokenizer`
  // the ByT5 one.
  Hv15PromptEncoder(std::unique_ptr<Tokenizer> tokenizer, Qwen25VLTextModel text_model,
                    std::unique_ptr<Tokenizer> glyph_tokenizer, T5EncoderModel glyph_model,
                    Options options);

  // embeds float32 [1, max_length, hidden] + mask int64 [1, max_length]; embeds_2 float32
  // [1, glyph_max_length, d_model2] + mask_2 int64, on the placement device.
  [[nodiscard]] PromptEmbedding encode(const std::string& prompt) override;
  // qwen25vl_text_flops over the chat text's tokens through the layers hidden_state_index
  // needs, plus t5_encoder_flops of the glyph text's tokens when the prompt quotes any; the
  // valid tokens after the template crop, and the glyph tokens.
  [[nodiscard]] EncodeCost encode_cost(const std::string& prompt) const override;

  [[nodiscard]] const Qwen25VLTextModel& text_model() const noexcept { return text_model_; }
  [[nodiscard]] const T5EncoderModel& glyph_model() const noexcept { return glyph_model_; }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
  Qwen25VLTextModel text_model_;
  std::unique_ptr<Tokenizer> glyph_tokenizer_;
  T5EncoderModel glyph_model_;
  Options options_;
};

// The tiny byte-level T5 of tiny-wan: ByT5 vocabulary (384), d_model given (the transformer's
// text_dim), 4 heads of d_model / 4 (1 head when d_model is not a multiple of 4), d_ff 2 x
// d_model, 2 layers, gated-GELU, the position bias in layer 0 (T5 v1.1).
[[nodiscard]] T5Options tiny_byte_t5_options(std::int64_t d_model);
// A T5PromptEncoder over that model with seeded bf16-exact weights (init_random_weights(seed)):
// Wan's 512 tokens and prompt cleaning, no files needed.
[[nodiscard]] std::unique_ptr<T5PromptEncoder> make_tiny_byte_t5(std::uint64_t seed,
                                                                 std::int64_t d_model,
                                                                 torch::ScalarType dtype,
                                                                 EncoderPlacement placement);

// Wan2.2's encoder from a Diffusers snapshot: <snapshot>/tokenizer (spiece.model) and
// <snapshot>/text_encoder (UMT5EncoderModel). Throws WeightsError / ModelError (a build without
// SentencePiece).
[[nodiscard]] std::unique_ptr<T5PromptEncoder> load_wan_text_encoder(
    const std::filesystem::path& snapshot, torch::ScalarType dtype, EncoderPlacement placement);

// HunyuanVideo-1.5's encoders from a Diffusers snapshot: tokenizer/ (Qwen2: vocab.json,
// merges.txt), text_encoder/ (Qwen2_5_VLTextModel), tokenizer_2/ (ByT5 + added tokens),
// text_encoder_2/ (T5EncoderModel, the Glyph byT5). Throws WeightsError / ModelError (a build
// without PCRE2).
[[nodiscard]] std::unique_ptr<Hv15PromptEncoder> load_hv15_text_encoder(
    const std::filesystem::path& snapshot, torch::ScalarType dtype, EncoderPlacement placement);

}  // namespace omnidp::models::text
