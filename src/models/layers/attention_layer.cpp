#include "omnidp/models/layers/attention_layer.hpp"

#include <fmt/format.h>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/attention.hpp"

namespace omnidp::models {
namespace {

// Ragged entries without a group: entry b's video tokens and its first lengths[b] text tokens
// attend together; its text padding rows are zero.
std::pair<torch::Tensor, torch::Tensor> ragged_attention(const torch::Tensor& q,
                                                         const torch::Tensor& k,
                                                         const torch::Tensor& v,
                                                         const JointText& text) {
  if (static_cast<std::int64_t>(text.lengths.size()) != q.size(0)) {
    throw ModelError(fmt::format("ragged attention: {} text lengths for a batch of {}",
                                 text.lengths.size(), q.size(0)));
  }
  const auto n = q.size(1);
  const auto lt = text.q.size(1);
  std::vector<torch::Tensor> video;
  std::vector<torch::Tensor> words;
  for (std::int64_t b = 0; b < q.size(0); ++b) {
    const auto t = text.lengths[static_cast<std::size_t>(b)];
    const auto text_part = [&](const torch::Tensor& c) { return c.narrow(0, b, 1).narrow(1, 0, t); };
    const auto out = joint_attention(torch::cat({q.narrow(0, b, 1), text_part(text.q)}, 1),
                                     {k.narrow(0, b, 1), text_part(text.k)},
                                     {v.narrow(0, b, 1), text_part(text.v)})
                         .flatten(2);
    video.push_back(out.narrow(1, 0, n));
    words.push_back(torch::constant_pad_nd(out.narrow(1, n, t), {0, 0, 0, lt - t}));
  }
  return {torch::cat(video, 0), torch::cat(words, 0)};
}

}  // namespace

torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& key_mask) {
  if (!key_mask.defined()) {
    return models::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                v.transpose(1, 2))
        .transpose(1, 2)
        .flatten(2);
  }
  return masked_rows_attention(q, k, v, key_mask, key_mask).flatten(2);
}

std::pair<torch::Tensor, torch::Tensor> attend(const SequenceShard& sequence,
                                               const torch::Tensor& q, const torch::Tensor& k,
                                               const torch::Tensor& v, const JointText& text) {
  if (sequence.active()) return ulysses_attention(sequence, q, k, v, text);
  if (!text.q.defined()) return {joint_attention(q, {k}, {v}).flatten(2), {}};
  if (!text.lengths.empty()) return ragged_attention(q, k, v, text);
  const auto n = q.size(1);
  torch::Tensor out;
  if (text.key_mask.defined()) {
    const auto mask =
        torch::cat({torch::ones({q.size(0), n}, text.key_mask.options()), text.key_mask}, 1);
    out = masked_attention(torch::cat({q, text.q}, 1), torch::cat({k, text.k}, 1),
                           torch::cat({v, text.v}, 1), mask);
  } else {
    out = joint_attention(torch::cat({q, text.q}, 1), {k, text.k}, {v, text.v}).flatten(2);
  }
  return {out.slice(1, 0, n), out.slice(1, n)};
}

}  // namespace omnidp::models
