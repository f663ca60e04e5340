#pragma once
// A trie over byte strings, each key with an int32 value, built once from its keys: the
// vocabulary lookups of the SentencePiece tokenizer (every piece that starts at a position of
// the text, the longest user-defined symbol there). Nodes are numbered breadth-first and keep
// their children contiguous and sorted, so a step is a binary search over at most 256 labels.
// Immutable after construction; const members are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omnidp::models::text {

class ByteTrie {
 public:
  ByteTrie() = default;
  // Keys may come in any order; of equal keys the first one's value is kept.
  explicit ByteTrie(std::vector<std::pair<std::string, std::int32_t>> entries);

  [[nodiscard]] bool empty() const noexcept { return keys_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return keys_; }  // distinct keys

  // Calls on_match(length, value) for every key that is a prefix of `text`, shortest first.
  template <typename OnMatch>
  void for_each_prefix(std::string_view text, OnMatch&& on_match) const {
    if (value_.empty()) return;
    std::uint32_t node = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto next = child(node, static_cast<std::uint8_t>(text[i]));
      if (!next) return;
      node = *next;
      if (value_[node] >= 0) on_match(i + 1, value_[node]);
    }
  }

  // (length, value) of the longest key that is a prefix of `text`; length 0 when none is.
  [[nodiscard]] std::pair<std::size_t, std::int32_t> longest_prefix(std::string_view text) const;
  // The value of `key`, nullopt when it is not a key.
  [[nodiscard]] std::optional<std::int32_t> find(std::string_view key) const;

 private:
  [[nodiscard]] std::optional<std::uint32_t> child(std::uint32_t node, std::uint8_t label) const;

  std::vector<std::uint32_t> first_;  // node i's children are edges first_[i] .. first_[i + 1]
  std::vector<std::uint8_t> labels_;  // per edge, sorted within a node
  std::vector<std::uint32_t> child_;  // per edge
  std::vector<std::int32_t> value_;   // per node, -1 where no key ends
  std::size_t keys_ = 0;
};

}  // namespace omnidp::models::text
