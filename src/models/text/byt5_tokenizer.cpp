#include "omnidp/models/text/byt5_tokenizer.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace omnidp::models::text {

ByT5Tokenizer::ByT5Tokenizer() {
  added_.add("<pad>", kPadId);
  added_.add("</s>", kEosId);
  added_.add("<unk>", kUnkId);
  for (std::int64_t i = 0; i < kExtraIds; ++i) {
    added_.add(fmt::format("<extra_id_{}>", i), kByteOffset + 256 + i);
  }
  vocab_size_ = kByteOffset + 256 + kExtraIds;
}

ByT5Tokenizer::ByT5Tokenizer(const std::filesystem::path& folder) : ByT5Tokenizer() {
  added_.merge(AddedTokens::from_folder(folder));
  vocab_size_ = std::max(vocab_size_, added_.max_id() + 1);
}

std::vector<std::int64_t> ByT5Tokenizer::encode(const std::string& text,
                                                std::size_t max_length) const {
  std::vector<std::int64_t> ids;
  ids.reserve(text.size() + 1);
  for (const auto& piece : added_.split(text)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    for (const char c : piece.text) ids.push_back(static_cast<unsigned char>(c) + kByteOffset);
  }
  truncate_for_special_tokens(ids, max_length, 1);
  if (ids.empty() || ids.back() != kEosId) ids.push_back(kEosId);
  return ids;
}

}  // namespace omnidp::models::text
