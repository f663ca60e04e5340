#pragma once
// A prompt encoder as a pipeline sees it. Implementations (models/text/prompt_encoders.hpp):
// UMT5 (Wan), Qwen2.5-VL text + byT5 glyph (HunyuanVideo-1.5), the tiny byte-level T5 of
// tiny-wan. Not thread-safe: one per replica, called from the worker thread.

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace omnidp::models {

struct PromptEmbedding {
  torch::Tensor embeds;  // [1, L, D] float, on the encoder's device
  torch::Tensor mask;    // [1, L] int64/bool, 1 = valid token
  // A second encoder's output where the model has one (HunyuanVideo-1.5's byT5 glyph
  // embeddings, [1, L2, D2] and [1, L2]); undefined otherwise.
  torch::Tensor embeds_2;
  torch::Tensor mask_2;
};

// The FLOPs of one encode() (models/text/flops.hpp) and the valid tokens it marks.
struct EncodeCost {
  double flops = 0.0;
  std::int64_t valid_tokens = 0;    // of `embeds`
  std::int64_t valid_tokens_2 = 0;  // of `embeds_2` (0: no second encoder, or nothing quoted)
};

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  TextEncoder() = default;
  TextEncoder(const TextEncoder&) = delete;
  TextEncoder& operator=(const TextEncoder&) = delete;

  [[nodiscard]] virtual PromptEmbedding encode(const std::string& prompt) = 0;
  // What encode(prompt) computes, without running it: tokenizes only.
  [[nodiscard]] virtual EncodeCost encode_cost(const std::string& prompt) const = 0;
};

}  // namespace omnidp::models
