#include "omnidp/models/text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;

void AddedTokens::add(const std::string& content, std::int64_t id) {
  if (content.empty()) return;
  tokens_[content] = id;
}

std::int64_t AddedTokens::id_of(std::string_view content) const {
  const auto it = tokens_.find(content);
  return it == tokens_.end() ? -1 : it->second;
}

std::int64_t AddedTokens::max_id() const noexcept {
  std::int64_t m = -1;
  for (const auto& [content, id] : tokens_) m = std::max(m, id);
  return m;
}

void AddedTokens::merge(const AddedTokens& other) {
  for (const auto& [content, id] : other.tokens_) tokens_[content] = id;
}

std::vector<AddedTokens::Piece> AddedTokens::split(std::string_view text) const {
  std::vector<Piece> pieces;
  std::size_t plain_begin = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // The longest added token starting at pos (tokens are few: a linear scan is enough).
    std::string_view best;
    std::int64_t best_id = -1;
    for (const auto& [content, id] : tokens_) {
      if (content.size() > best.size() && text.compare(pos, content.size(), content) == 0) {
        best = content;
        best_id = id;
      }
    }
    if (best.empty()) {
      ++pos;
      continue;
    }
    if (pos > plain_begin) pieces.push_back({text.substr(plain_begin, pos - plain_begin), -1});
    pieces.push_back({text.substr(pos, best.size()), best_id});
    pos += best.size();
    plain_begin = pos;
  }
  if (text.size() > plain_begin) pieces.push_back({text.substr(plain_begin), -1});
  return pieces;
}

AddedTokens AddedTokens::from_folder(const fs::path& dir) {
  AddedTokens added;
  const auto config = dir / "tokenizer_config.json";
  const auto tokenizer_json = dir / "tokenizer.json";
  const auto added_json = dir / "added_tokens.json";
  try {
    if (fs::is_regular_file(config)) {
      const auto j = read_json(config);
      if (j.contains("added_tokens_decoder") && j.at("added_tokens_decoder").is_object()) {
        for (const auto& [id, entry] : j.at("added_tokens_decoder").items()) {
          added.add(entry.at("content").get<std::string>(), std::stoll(id));
        }
        return added;
      }
    }
    if (fs::is_regular_file(tokenizer_json)) {
      const auto j = read_json(tokenizer_json);
      if (j.contains("added_tokens") && j.at("added_tokens").is_array()) {
        for (const auto& entry : j.at("added_tokens")) {
          added.add(entry.at("content").get<std::string>(), entry.at("id").get<std::int64_t>());
        }
        return added;
      }
    }
    if (fs::is_regular_file(added_json)) {
      const auto j = read_json(added_json);
      for (const auto& [content, id] : j.items()) {
        added.add(content, id.get<std::int64_t>());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(dir.string(), std::string("malformed added tokens: ") + e.what());
  } catch (const std::logic_error& e) {  // std::stoll on a non-numeric key
    throw WeightsError(dir.string(), std::string("malformed added tokens: ") + e.what());
  }
  return added;
}

void truncate_for_special_tokens(std::vector<std::int64_t>& ids, std::size_t max_length,
                                 std::size_t reserved) {
  if (max_length == 0) return;
  const std::size_t keep = max_length > reserved ? max_length - reserved : 0;
  if (ids.size() > keep) ids.resize(keep);
}

}  // namespace omnidp::models::text
