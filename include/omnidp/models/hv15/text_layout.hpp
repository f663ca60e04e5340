#pragma once
// HunyuanVideo-1.5's text-token layouts (docs/models.md, "HunyuanVideo-1.5"): how the image,
// glyph (byT5) and Qwen tokens of each batch entry are ordered and padded for the
// double-stream blocks, and which of them the joint attention sees. The transformer embeds
// the tokens; these functions only arrange them. Pure functions of their inputs.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace omnidp::models::hv15 {

// How padded text tokens are handled (all give the same video-token outputs):
//   mask: the reference layout [valid image, valid byT5, valid Qwen, padding] with padding
//         masked as keys and its query rows zeroed; works for any batch size.
//   drop: padded tokens are removed before the refiner and the blocks (batch 1 only): no mask,
//         shorter sequences, the fused attention kernels apply.
//   ragged: every batch entry keeps only its valid tokens (as drop), padded at the end to the
//         longest entry's count; the blocks run batched and the joint attention per entry over
//         its valid tokens (no mask): CFG's two branches as one batch of 2.
//   automatic: drop for batch 1, ragged otherwise.
enum class TextPadding { automatic, mask, drop, ragged };

// The layout a forward of `batch` entries uses: `configured`, automatic resolved (drop for
// batch 1, ragged otherwise). ModelError for drop with another batch than 1.
[[nodiscard]] TextPadding resolve_text_padding(TextPadding configured, std::int64_t batch);

// Which text tokens of a [B, Lt] text stream the joint attention sees: `mask` [B, Lt] bool
// (undefined: all valid) or, in the ragged layout, `lengths`: entry b's valid text is its first
// lengths[b] tokens (the rest is padding, whose outputs are zero).
struct TextKeys {
  torch::Tensor mask;
  std::vector<std::int64_t> lengths;
};

// The text stream the blocks run on: tokens [B, Lt, D] and the keys the attention sees.
struct TextTokens {
  torch::Tensor tokens;
  TextKeys keys;
};

// One source of the reference layout: tokens [B, L, D] and which are valid, [B, L] bool.
struct TextSource {
  torch::Tensor tokens;
  torch::Tensor valid;
};

// The reference (mask) layout: per entry, the valid tokens of every source in source order,
// then the invalid ones in the same order (a stable sort on validity), and the mask that says
// which are valid.
[[nodiscard]] TextTokens valid_tokens_first(const std::vector<TextSource>& sources);

// The ragged layout: entry i's tokens [1, L_i, D] (only its valid ones), zero-padded at the end
// to the longest L_i and stacked [B, max L_i, D], with the lengths and the matching mask.
// Throws ModelError for no entries.
[[nodiscard]] TextTokens pad_entries(std::vector<torch::Tensor> entries);

// Two batch-1 entries [1, L_i, ...] (or masks [1, L_i]) as one batch [2, max L_i, ...], each
// zero-padded at the end of dim 1: CFG's two branches as the inputs of one ragged batch.
[[nodiscard]] torch::Tensor pad_cat(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace omnidp::models::hv15
