#pragma once
// The attention layer of every model (docs/architecture.md, "How a model is built"): what the
// transformers call after their projections, norms and rotary embedding. Without a sequence
// group it is plain attention (layers/attention.hpp's kernels); with one it is Ulysses
// (layers/ulysses.hpp). It owns the joint text keys and values, their key mask, the ragged CFG
// entries and the key padding, so that a model states only which tokens attend to which.
// Thread-safe (pure functions of their inputs); under a sequence group every rank of the group
// calls it with its own shard, in the same order.

#include <torch/torch.h>

#include <utility>

#include "omnidp/models/layers/ulysses.hpp"

namespace omnidp::models {

// Attention of the video tokens q, k, v [B, L, H, D] (normalised and rotated; under Ulysses this
// rank's L = shard.local tokens of all heads) together with the joint `text` (JointText: none,
// all valid, a key mask, or ragged entries). Returns {video [B, L, H*D], text [B, Lc, H*D]
// (undefined without text)}:
//   - no group, no text: scaled dot-product attention of the video tokens (joint_attention);
//   - no group, text: the video and text tokens attend as one sequence; masked text keys are no
//     keys and their own output rows are zero; ragged entries attend each over their own first
//     lengths[b] text tokens and their padding rows are zero;
//   - a sequence group: ulysses_attention (the same values up to the summation order of the
//     kernel). The caller checks the head split once per forward (check_head_split).
[[nodiscard]] std::pair<torch::Tensor, torch::Tensor> attend(const SequenceShard& sequence,
                                                             const torch::Tensor& q,
                                                             const torch::Tensor& k,
                                                             const torch::Tensor& v,
                                                             const JointText& text = {});

// Attention over q, k, v [B, S, H, D] with an optional key mask [B, S] (true = valid): masked
// keys are no keys and the masked rows' outputs are zero (what a masked softmax with every key
// masked gives in PyTorch >= 2.5), so no NaN can appear. Returns [B, S, H*D]. Used for
// self-attention over a padded text (HunyuanVideo-1.5's token refiner) and by attend.
[[nodiscard]] torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k,
                                             const torch::Tensor& v, const torch::Tensor& key_mask);

}  // namespace omnidp::models
