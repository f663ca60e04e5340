#include "omnidp/models/text/sentencepiece_normalizer.hpp"

#include <fmt/format.h>
#include <cstring>

#include "omnidp/common/error.hpp"

namespace omnidp::models::text {

namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";      // U+2581
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Darts-clone's double-array unit.
constexpr bool has_leaf(std::uint32_t unit) { return ((unit >> 8U) & 1U) == 1U; }
constexpr std::uint32_t value_of(std::uint32_t unit) { return unit & ((1U << 31U) - 1U); }
constexpr std::uint32_t label_of(std::uint32_t unit) { return unit & ((1U << 31U) | 0xFFU); }
constexpr std::uint32_t offset_of(std::uint32_t unit) {
  return (unit >> 10U) << ((unit & (1U << 9U)) >> 6U);
}

}  // namespace

PrecompiledCharsMap::PrecompiledCharsMap(std::string_view blob, const std::string& source) {
  const auto fail = [&](const std::string& what) {
    throw WeightsError(source, "normalizer precompiled_charsmap: " + what);
  };
  if (blob.size() <= 4) fail(fmt::format("shorter than its header ({} bytes)", blob.size()));
  std::uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8U) | static_cast<std::uint8_t>(blob[i]);
  if (trie_bytes >= blob.size() - 4) {
    fail(fmt::format("trie of {} bytes in a blob of {} bytes", trie_bytes, blob.size()));
  }
  if (trie_bytes < 4) fail("empty trie");
  units_.resize(trie_bytes / 4);
  for (std::size_t u = 0; u < units_.size(); ++u) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8U) | static_cast<std::uint8_t>(blob[4 + 4 * u + i]);
    units_[u] = v;
  }
  replacements_ = std::string(blob.substr(4 + trie_bytes));
  validate(source);
}

void PrecompiledCharsMap::validate(const std::string& source) const {
  const auto fail = [&](std::size_t unit, const std::string& what) {
    throw WeightsError(source, fmt::format("normalizer precompiled_charsmap: unit {} of {}: {}",
                                           unit, units_.size(), what));
  };
  // Every unit reachable from the root, once: Darts-clone shares the nodes of common suffixes
  // (a DAWG), so a unit may be reached by several keys.
  const std::size_t n = units_.size();
  std::vector<bool> visited(n, false);
  std::vector<std::size_t> stack{0};
  visited[0] = true;
  while (!stack.empty()) {
    const std::size_t node = stack.back();
    stack.pop_back();
    const std::size_t base = node ^ offset_of(units_[node]);
    if (has_leaf(units_[node])) {
      if (base >= n) fail(node, fmt::format("its value unit {} is outside the trie", base));
      const std::size_t at = value_of(units_[base]);
      if (at >= replacements_.size() ||
          std::memchr(replacements_.data() + at, '\0', replacements_.size() - at) == nullptr) {
        fail(node,
             fmt::format("replacement offset {} outside the {} bytes of NUL-terminated strings", at,
                         replacements_.size()));
      }
    }
    for (std::uint32_t label = 1; label < 256; ++label) {
      const std::size_t next = base ^ label;
      if (next >= n || label_of(units_[next]) != label || visited[next]) continue;
      visited[next] = true;
      stack.push_back(next);
    }
  }
}

std::pair<std::string_view, std::size_t> PrecompiledCharsMap::longest_prefix(std::string_view text) const {
  std::pair<std::string_view, std::size_t> best{{}, 0};
  if (units_.empty()) return best;
  // Darts::DoubleArray::commonPrefixSearch, keeping the longest match.
  std::size_t id = offset_of(units_[0]);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<std::uint8_t>(text[i]);
    id ^= byte;
    if (id >= units_.size() || label_of(units_[id]) != byte) break;
    const std::uint32_t unit = units_[id];
    id ^= offset_of(unit);
    if (has_leaf(unit)) {  // validated: id and the replacement are inside their buffers
      best = {std::string_view(replacements_.data() + value_of(units_[id])), i + 1};
    }
  }
  return best;
}

SentencePieceNormalizer::SentencePieceNormalizer(const SentencePieceModel& model,
                                                 const std::string& source)
    : add_dummy_prefix_(model.add_dummy_prefix),
      remove_extra_whitespaces_(model.remove_extra_whitespaces),
      escape_whitespaces_(model.escape_whitespaces),
      treat_whitespace_as_suffix_(model.treat_whitespace_as_suffix) {
  if (!model.precompiled_charsmap.empty())
    charsmap_ = PrecompiledCharsMap(model.precompiled_charsmap, source);
  std::vector<std::pair<std::string, std::int32_t>> symbols;
  for (std::size_t i = 0; i < model.pieces.size(); ++i) {
    if (model.pieces[i].type == SentencePieceModel::PieceType::user_defined)
      symbols.emplace_back(model.pieces[i].piece, static_cast<std::int32_t>(i));
  }
  user_defined_ = ByteTrie(std::move(symbols));
}

std::pair<std::string_view, std::size_t> SentencePieceNormalizer::normalize_prefix(
    std::string_view text) const {
  if (const auto [length, id] = user_defined_.longest_prefix(text); length > 0) {
    return {text.substr(0, length), length};
  }
  if (const auto rule = charsmap_.longest_prefix(text); rule.second > 0) return rule;
  const std::size_t length = valid_utf8_char_length(text);
  if (length == 0) return {kReplacementChar, 1};  // one malformed byte
  return {text.substr(0, length), length};
}

std::string SentencePieceNormalizer::normalize(std::string_view text) const {
  std::string out;
  if (remove_extra_whitespaces_) {  // leading whitespace
    while (!text.empty()) {
      const auto [sp, length] = normalize_prefix(text);
      if (sp != " ") break;
      text.remove_prefix(length);
    }
  }
  if (text.empty()) return out;
  out.reserve(text.size() * 3);
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : " ";
  if (!treat_whitespace_as_suffix_ && add_dummy_prefix_) out.append(space);
  bool is_prev_space = remove_extra_whitespaces_;
  while (!text.empty()) {
    auto [sp, length] = normalize_prefix(text);
    while (is_prev_space && !sp.empty() && sp.front() == ' ') sp.remove_prefix(1);
    if (!sp.empty()) {
      for (const char c : sp) {
        if (escape_whitespaces_ && c == ' ') {
          out.append(kSpaceSymbol);
        } else {
          out.push_back(c);
        }
      }
      is_prev_space = sp.back() == ' ';
    }
    text.remove_prefix(length);
    if (!remove_extra_whitespaces_) is_prev_space = false;
  }
  if (remove_extra_whitespaces_) {  // trailing whitespace
    while (out.size() >= space.size() &&
           out.compare(out.size() - space.size(), space.size(), space) == 0)
      out.resize(out.size() - space.size());
  }
  if (treat_whitespace_as_suffix_ && add_dummy_prefix_) out.append(space);
  return out;
}

}  // namespace omnidp::models::text
