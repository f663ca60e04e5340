#include "omnidp/models/layers/ulysses.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/config/head_split.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/collective_ops.hpp"

namespace omnidp::models {

SequenceShard make_sequence_shard(Collective* group, std::int64_t tokens) {
  SequenceShard s;
  s.tokens = tokens;
  s.local = tokens;
  if (group == nullptr || group->size() == 1) return s;
  if (tokens < 1) throw ModelError("sequence parallel: no tokens to shard");
  s.group = group;
  const std::int64_t p = group->size();
  s.local = (tokens + p - 1) / p;
  s.offset = s.local * group->rank();
  return s;
}

void check_head_split(std::int64_t heads, std::int64_t tensor_size, std::int64_t sequence_size,
                      const std::string& who) {
  if (const auto error = head_split_error(heads, tensor_size, sequence_size, who)) {
    throw ConfigError(error->key, error->message);
  }
}

torch::Tensor shard_tokens(const SequenceShard& shard, const torch::Tensor& x, std::int64_t dim) {
  if (!shard.active()) return x;
  if (x.size(dim) != shard.tokens) {
    throw ModelError(fmt::format("sequence parallel: a tensor with {} tokens, not {}", x.size(dim),
                                 shard.tokens));
  }
  const std::int64_t real =
      std::max<std::int64_t>(0, std::min(shard.local, shard.tokens - shard.offset));
  auto part = x.narrow(dim, std::min(shard.offset, shard.tokens), real);
  if (real == shard.local) return part.contiguous();
  auto sizes = x.sizes().vec();
  sizes[static_cast<std::size_t>(dim)] = shard.local - real;
  return torch::cat({part, torch::zeros(sizes, x.options())}, dim);
}

torch::Tensor shard_positions(const SequenceShard& shard, const torch::Device& device) {
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  return torch::arange(shard.offset, shard.offset + shard.local, opts).clamp_max(shard.tokens - 1);
}

torch::Tensor gather_tokens(const SequenceShard& shard, const torch::Tensor& x) {
  if (!shard.active()) return x;
  auto all = all_gather(*shard.group, x);  // [P, B, local, ...]
  auto sizes = x.sizes().vec();
  sizes[1] = shard.padded();
  return all.movedim(0, 1).reshape(sizes).narrow(1, 0, shard.tokens);
}

std::vector<torch::Tensor> tokens_to_heads(const SequenceShard& shard,
                                           const std::vector<torch::Tensor>& xs) {
  const auto p = static_cast<std::int64_t>(shard.size());
  const auto& x0 = xs.at(0);
  const auto b = x0.size(0);
  const auto l = x0.size(1);
  const auto h = x0.size(2);
  const auto d = x0.size(3);
  const auto n = static_cast<std::int64_t>(xs.size());
  // [X, B, L, P, H/P, D] -> blocks by destination rank: [P, X, B, L, H/P, D].
  const auto send = torch::stack(xs, 0).view({n, b, l, p, h / p, d}).permute({3, 0, 1, 2, 4, 5});
  // Block i came from rank i: its tokens. [P, X, B, L, H/P, D] -> [X, B, P*L, H/P, D].
  const auto recv = all_to_all(*shard.group, send.contiguous());
  return recv.permute({1, 2, 0, 3, 4, 5}).reshape({n, b, p * l, h / p, d}).unbind(0);
}

torch::Tensor heads_to_tokens(const SequenceShard& shard, const torch::Tensor& o) {
  const auto p = static_cast<std::int64_t>(shard.size());
  const auto b = o.size(0);
  const auto hp = o.size(2);
  const auto d = o.size(3);
  const auto l = shard.local;
  // [B, P*L, H/P, D] -> blocks by destination (its tokens): [P, B, L, H/P, D].
  const auto send = o.reshape({b, p, l, hp, d}).permute({1, 0, 2, 3, 4});
  // Block i is head shard i of this rank's tokens: [B, L, P*H/P, D].
  const auto recv = all_to_all(*shard.group, send.contiguous());
  return recv.permute({1, 2, 0, 3, 4}).reshape({b, l, p * hp, d});
}

torch::Tensor local_heads(const SequenceShard& shard, const torch::Tensor& x) {
  const auto hp = x.size(2) / shard.size();
  return x.narrow(2, hp * shard.rank(), hp);
}

torch::Tensor gather_heads(const SequenceShard& shard, const torch::Tensor& x) {
  const auto all = all_gather(*shard.group, x.contiguous());  // [P, B, S, H/P, D]
  return all.permute({1, 2, 0, 3, 4})
      .reshape({x.size(0), x.size(1), shard.size() * x.size(2), x.size(3)});
}

std::pair<torch::Tensor, torch::Tensor> ulysses_attention(const SequenceShard& shard,
                                                          const torch::Tensor& q,
                                                          const torch::Tensor& k,
                                                          const torch::Tensor& v,
                                                          const JointText& text) {
  const auto qkv = tokens_to_heads(shard, {q, k, v});  // [B, padded, H/P, D]
  const auto n = shard.tokens;
  if (!text.q.defined()) {
    const auto o = joint_attention(qkv[0], {qkv[1].narrow(1, 0, n)}, {qkv[2].narrow(1, 0, n)});
    return {heads_to_tokens(shard, o).flatten(2, 3), {}};
  }
  const auto np = shard.padded();
  const auto jq = torch::cat({qkv[0], local_heads(shard, text.q)}, 1);
  const std::vector<torch::Tensor> jk{qkv[1].narrow(1, 0, n), local_heads(shard, text.k)};
  const std::vector<torch::Tensor> jv{qkv[2].narrow(1, 0, n), local_heads(shard, text.v)};
  torch::Tensor out;              // [B, padded + Lc, H/P, D]
  if (text.key_mask.defined()) {  // as a masked attention: masked keys, their query rows zero
    const auto& mask = text.key_mask;
    const auto b = mask.size(0);
    const auto keys = torch::cat({torch::ones({b, n}, mask.options()), mask}, 1);
    const auto rows = torch::cat({torch::ones({b, np}, mask.options()), mask}, 1);
    out = masked_rows_attention(jq, torch::cat(jk, 1), torch::cat(jv, 1), keys, rows);
  } else {
    out = joint_attention(jq, jk, jv);
  }
  return {heads_to_tokens(shard, out.narrow(1, 0, np)).flatten(2, 3),
          gather_heads(shard, out.narrow(1, np, out.size(1) - np)).flatten(2, 3)};
}

}  // namespace omnidp::models
