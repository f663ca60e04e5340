#pragma once
// Ulysses sequence parallelism (docs/runtime.md, "Sequence parallel"): a forward's video tokens
// are sharded over the replica group's sequence axis (GenerateContext::sequence), N tokens in
// P shards of ceil(N / P), the last one padded past N. Around each self-attention one
// all-to-all turns the token shard of every head into every token of a head shard
// ([B, N/P, H, D] -> [B, N, H/P, D]) and another turns it back; the padding is dropped from
// the keys, so it never reaches a real token. Everything else a transformer does per token runs
// on the shard; the final output is all-gathered so every rank holds the whole prediction.
//
// Without a group (SequenceShard::active() false) no function here is called by the models:
// the single-rank path has no copies and no extra operations.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "omnidp/collective/collective.hpp"

namespace omnidp::models {

// One rank's part of a sharded token sequence.
struct SequenceShard {
  Collective* group = nullptr;  // the sequence axis; null: inactive (one rank, no shard)
  std::int64_t tokens = 0;      // N, the real token count
  std::int64_t local = 0;       // tokens per rank, ceil(N / P)
  std::int64_t offset = 0;      // this rank's first token (global position)

  [[nodiscard]] bool active() const noexcept { return group != nullptr; }
  [[nodiscard]] int size() const noexcept { return group != nullptr ? group->size() : 1; }
  [[nodiscard]] int rank() const noexcept { return group != nullptr ? group->rank() : 0; }
  [[nodiscard]] std::int64_t padded() const noexcept { return local * size(); }
};

// The shard of `tokens` tokens for this rank of `group` (inactive for null or a group of 1).
[[nodiscard]] SequenceShard make_sequence_shard(Collective* group, std::int64_t tokens);

// A model's `heads` over a tensor group of `tensor_size` and a sequence group of
// `sequence_size` (config/head_split.hpp, the rule the config checks too): ConfigError on the
// rule's key, naming `who`.
void check_head_split(std::int64_t heads, std::int64_t tensor_size, std::int64_t sequence_size,
                      const std::string& who);

// x with N along `dim` -> this rank's `local` entries there (zeros past N). Works for any
// per-token tensor: hidden states [B, N, D] (dim 1), RoPE tables [N, ...] (dim 0).
[[nodiscard]] torch::Tensor shard_tokens(const SequenceShard& shard, const torch::Tensor& x,
                                         std::int64_t dim);
// The global positions of this rank's tokens, clamped to N - 1 for the padding: [local] int64.
[[nodiscard]] torch::Tensor shard_positions(const SequenceShard& shard, const torch::Device& device);
// x [B, local, ...] on every rank -> [B, N, ...] on every rank (all-gather, padding dropped).
[[nodiscard]] torch::Tensor gather_tokens(const SequenceShard& shard, const torch::Tensor& x);

// Each of xs [B, local, H, D] -> [B, padded, H/P, D]: this rank's head shard of every token,
// tokens in global order. One all-to-all for all of xs (same shapes and dtype).
[[nodiscard]] std::vector<torch::Tensor> tokens_to_heads(const SequenceShard& shard,
                                                         const std::vector<torch::Tensor>& xs);
// The inverse: o [B, padded, H/P, D] -> [B, local, H, D].
[[nodiscard]] torch::Tensor heads_to_tokens(const SequenceShard& shard, const torch::Tensor& o);
// A replicated [B, S, H, D] -> this rank's head shard [B, S, H/P, D] (no communication).
[[nodiscard]] torch::Tensor local_heads(const SequenceShard& shard, const torch::Tensor& x);
// Every rank's head shard [B, S, H/P, D] -> [B, S, H, D] on every rank (all-gather).
[[nodiscard]] torch::Tensor gather_heads(const SequenceShard& shard, const torch::Tensor& x);

// The text a joint attention adds to the video tokens, replicated on every rank: cq, ck, cv
// [B, Lc, H, D] (undefined: no text, as Wan's self-attention); key_mask [B, Lc] bool (undefined:
// all valid): a masked text token is no key, and its own output row is zero. `lengths` (ragged
// entries, CFG's two branches as one batch): entry b's text is its first lengths[b] tokens and
// the rest padding; without a sequence group each entry attends over its own text alone (no
// mask), under Ulysses key_mask (which must then say the same) is used.
struct JointText {
  torch::Tensor q, k, v;
  torch::Tensor key_mask;
  std::vector<std::int64_t> lengths;
};

// Ulysses attention (docs/runtime.md, "Sequence parallel"): q, k, v [B, local, H, D] are this
// rank's video tokens (normalised and rotated). One all-to-all gives every video token of this
// rank's head shard; those and the text's same heads attend together (the padding past N is no
// key; layers/attention.hpp joint_attention, or scaled_dot_product_attention with the text's
// key mask); the video output goes back to its token shards, the text output is gathered over
// the heads. Returns {video [B, local, H*D], text [B, Lc, H*D] (undefined without text)}. The
// caller checks the head split (check_head_split) once per forward. The models call it through
// layers/attention_layer.hpp's attend, which is this with a group and plain attention without.
[[nodiscard]] std::pair<torch::Tensor, torch::Tensor> ulysses_attention(const SequenceShard& shard,
                                                                        const torch::Tensor& q,
                                                                        const torch::Tensor& k,
                                                                        const torch::Tensor& v,
                                                                        const JointText& text = {});

}  // namespace omnidp::models
