#pragma once
// A prompt encoder as a pipeline sees it. Implementations: UMT5 (Wan), Qwen2.5-VL text + byT5
// (HunyuanVideo-1.5), the tiny byte-level T5 of tiny-wan, and precomputed embeddings read from
// a safetensors file. Not thread-safe: one per replica, called from the worker thread.

#include <torch/torch.h>

#include <string>

namespace omnidp::models {

struct PromptEmbedding {
  torch::Tensor embeds;  // [1, L, D] float, on the encoder's device
  torch::Tensor mask;    // [1, L] int64/bool, 1 = valid token
};

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  TextEncoder() = default;
  TextEncoder(const TextEncoder&) = delete;
  TextEncoder& operator=(const TextEncoder&) = delete;

  [[nodiscard]] virtual PromptEmbedding encode(const std::string& prompt) = 0;
};

}  // namespace omnidp::models
