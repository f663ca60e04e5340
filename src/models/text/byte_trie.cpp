#include "omnidp/models/text/byte_trie.hpp"

#include <algorithm>

namespace omnidp::models::text {

ByteTrie::ByteTrie(std::vector<std::pair<std::string, std::int32_t>> entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Breadth-first: node q covers the sorted keys [lo, hi) that share its first `depth` bytes.
  struct Span {
    std::size_t lo, hi, depth;
  };
  std::vector<Span> queue{{0, entries.size(), 0}};
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const auto [lo, hi, depth] = queue[q];
    std::size_t i = lo;
    std::int32_t value = -1;
    if (i < hi && entries[i].first.size() == depth) {
      value = entries[i].second;
      ++keys_;
      while (i < hi && entries[i].first.size() == depth) ++i;  // equal keys: the first one
    }
    value_.push_back(value);
    first_.push_back(static_cast<std::uint32_t>(labels_.size()));
    while (i < hi) {
      const auto label = static_cast<std::uint8_t>(entries[i].first[depth]);
      std::size_t j = i;
      while (j < hi && static_cast<std::uint8_t>(entries[j].first[depth]) == label) ++j;
      labels_.push_back(label);
      child_.push_back(static_cast<std::uint32_t>(queue.size()));
      queue.push_back({i, j, depth + 1});
      i = j;
    }
  }
  first_.push_back(static_cast<std::uint32_t>(labels_.size()));
}

std::optional<std::uint32_t> ByteTrie::child(std::uint32_t node, std::uint8_t label) const {
  const auto begin = labels_.begin() + first_[node];
  const auto end = labels_.begin() + first_[node + 1];
  const auto it = std::lower_bound(begin, end, label);
  if (it == end || *it != label) return std::nullopt;
  return child_[static_cast<std::size_t>(it - labels_.begin())];
}

std::pair<std::size_t, std::int32_t> ByteTrie::longest_prefix(std::string_view text) const {
  std::pair<std::size_t, std::int32_t> best{0, -1};
  for_each_prefix(text, [&](std::size_t length, std::int32_t value) { best = {length, value}; });
  return best;
}

std::optional<std::int32_t> ByteTrie::find(std::string_view key) const {
  if (value_.empty()) return std::nullopt;
  std::uint32_t node = 0;
  for (const char c : key) {
    const auto next = child(node, static_cast<std::uint8_t>(c));
    if (!next) return std::nullopt;
    node = *next;
  }
  if (value_[node] < 0) return std::nullopt;
  return value_[node];
}

}  // namespace omnidp::models::text
