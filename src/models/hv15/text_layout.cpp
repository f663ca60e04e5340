#include "omnidp/models/hv15/text_layout.hpp"

#include <algorithm>
#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp::models::hv15 {

TextPadding resolve_text_padding(TextPadding configured, std::int64_t batch) {
  const auto layout = configured != TextPadding::automatic ? configured
                      : batch == 1                         ? TextPadding::drop
                                                           : TextPadding::ragged;
  if (layout == TextPadding::drop && batch != 1)
    throw ModelError("text padding 'drop' needs batch 1, got " + std::to_string(batch));
  return layout;
}

TextTokens valid_tokens_first(const std::vector<TextSource>& sources) {
  std::vector<torch::Tensor> tokens;
  std::vector<torch::Tensor> valid;
  for (const auto& s : sources) {
    tokens.push_back(s.tokens);
    valid.push_back(s.valid);
  }
  const auto all_tokens = torch::cat(tokens, 1);
  const auto all_valid = torch::cat(valid, 1);
  const auto b = all_tokens.size(0);
  const auto order =
      std::get<1>(torch::sort(all_valid.logical_not().to(torch::kInt), /*stable=*/true, 1, false));
  const auto gathered =
      all_tokens.gather(1, order.unsqueeze(-1).expand({b, order.size(1), all_tokens.size(2)}));
  return {gathered, {all_valid.gather(1, order), {}}};
}

TextTokens pad_entries(std::vector<torch::Tensor> entries) {
  if (entries.empty()) throw ModelError("the ragged text layout needs at least one entry");
  const auto b = static_cast<std::int64_t>(entries.size());
  std::vector<std::int64_t> lengths;
  std::int64_t longest = 0;
  for (const auto& e : entries) {
    lengths.push_back(e.size(1));
    longest = std::max(longest, e.size(1));
  }
  auto mask = torch::zeros(
      {b, longest}, torch::TensorOptions().dtype(torch::kBool).device(entries.front().device()));
  for (std::int64_t i = 0; i < b; ++i) {
    const auto t = lengths[static_cast<std::size_t>(i)];
    entries[static_cast<std::size_t>(i)] =
        torch::constant_pad_nd(entries[static_cast<std::size_t>(i)], {0, 0, 0, longest - t});
    mask[i].narrow(0, 0, t).fill_(true);
  }
  return {torch::cat(entries, 0), {mask, std::move(lengths)}};
}

torch::Tensor pad_cat(const torch::Tensor& a, const torch::Tensor& b) {
  const auto longest = std::max(a.size(1), b.size(1));
  const auto pad = [longest](const torch::Tensor& t) {
    std::vector<std::int64_t> widths(2 * static_cast<std::size_t>(t.dim() - 1), 0);
    widths.back() = longest - t.size(1);  // constant_pad_nd: last dim first, dim 1 last
    return torch::constant_pad_nd(t, widths);
  };
  return torch::cat({pad(a), pad(b)}, 0);
}

}  // namespace omnidp::models::hv15
