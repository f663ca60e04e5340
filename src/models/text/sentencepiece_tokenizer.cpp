#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

#include <algorithm>

#include "omnidp/common/error.hpp"

#ifdef OMNIDP_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace omnidp::models::text {
namespace fs = std::filesystem;

#ifdef OMNIDP_HAVE_SENTENCEPIECE

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

bool SentencePieceTokenizer::available() noexcept { return true; }

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, AddedTokens added)
    : impl_(std::make_unique<Impl>()), added_(std::move(added)) {
  if (!fs::is_regular_file(model_file)) throw WeightsError(model_file.string(), "SentencePiece model not found");
  const auto status = impl_->processor.Load(model_file.string());
  if (!status.ok()) {
    throw WeightsError(model_file.string(), "cannot load the SentencePiece model: " + status.ToString());
  }
  const auto& p = impl_->processor;
  eos_id_ = p.eos_id() >= 0 ? p.eos_id() : added_.id_of("</s>");
  if (eos_id_ < 0) throw WeightsError(model_file.string(), "the SentencePiece model has no </s> (eos) piece");
  pad_id_ = p.pad_id() >= 0 ? p.pad_id() : std::max<std::int64_t>(added_.id_of("<pad>"), 0);
}

std::vector<std::int64_t> SentencePieceTokenizer::encode(const std::string& text, std::size_t max_length) const {
  std::vector<std::int64_t> ids;
  std::vector<int> piece_ids;
  for (const auto& piece : added_.split(text)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    const auto status = impl_->processor.Encode(piece.text, &piece_ids);
    if (!status.ok()) throw InputError("<prompt>", "SentencePiece cannot encode the text: " + status.ToString());
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  }
  truncate_for_special_tokens(ids, max_length, 1);
  if (ids.empty() || ids.back() != eos_id_) ids.push_back(eos_id_);
  return ids;
}

std::int64_t SentencePieceTokenizer::piece_id(const std::string& piece) const {
  return impl_->processor.PieceToId(piece);
}

#else  // no SentencePiece in this build

struct SentencePieceTokenizer::Impl {};

bool SentencePieceTokenizer::available() noexcept { return false; }

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, AddedTokens added)
    : added_(std::move(added)) {
  throw ModelError("this build has no SentencePiece (install libsentencepiece-dev and reconfigure): "
                   "the UMT5 tokenizer is unavailable",
                   {model_file.string()});
}

std::vector<std::int64_t> SentencePieceTokenizer::encode(const std::string& /*text*/,
                                                         std::size_t /*max_length*/) const {
  throw ModelError("this build has no SentencePiece");
}

std::int64_t SentencePieceTokenizer::piece_id(const std::string& /*piece*/) const {
  throw ModelError("this build has no SentencePiece");
}

#endif

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_folder(const fs::path& dir) {
  return std::make_unique<SentencePieceTokenizer>(dir / "spiece.model", AddedTokens::from_folder(dir));
}

}  // namespace omnidp::models::text
