#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

#include <algorithm>
#include <cfloat>
#include <limits>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/utf8.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;
using PieceType = SentencePieceModel::PieceType;

namespace {

const char* model_type_name(SentencePieceModel::ModelType type) {
  switch (type) {
    case SentencePieceModel::ModelType::unigram: return "Unigram";
    case SentencePieceModel::ModelType::bpe: return "BPE";
    case SentencePieceModel::ModelType::word: return "word";
    case SentencePieceModel::ModelType::character: return "char";
  }
  return "?";
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const SentencePieceModel& model, AddedTokens added,
                                               const std::string& source)
    : normalizer_(model, source), added_(std::move(added)) {
  if (model.model_type != SentencePieceModel::ModelType::unigram) {
    throw WeightsError(source, std::string("a ") + model_type_name(model.model_type) +
                                   " SentencePiece model: only Unigram models are supported");
  }
  model.validate(source);
  // As unigram::Model: the score range of the normal pieces (FLT_MIN, not -FLT_MAX, is where
  // SentencePiece starts the maximum), a trie of the pieces that can be matched.
  min_score_ = FLT_MAX;
  max_score_ = FLT_MIN;
  std::vector<std::pair<std::string, std::int32_t>> matchable;
  types_.reserve(model.pieces.size());
  scores_.reserve(model.pieces.size());
  for (std::size_t i = 0; i < model.pieces.size(); ++i) {
    const auto& p = model.pieces[i];
    const auto id = static_cast<std::int32_t>(i);
    types_.push_back(p.type);
    scores_.push_back(p.score);
    switch (p.type) {
      case PieceType::normal:
        min_score_ = std::min(min_score_, p.score);
        max_score_ = std::max(max_score_, p.score);
        matchable.emplace_back(p.piece, id);
        break;
      case PieceType::user_defined:
      case PieceType::unused: matchable.emplace_back(p.piece, id); break;
      case PieceType::unknown: unk_id_ = id; [[fallthrough]];
      case PieceType::control:
      case PieceType::byte: reserved_.emplace(p.piece, id); break;
    }
  }
  pieces_ = ByteTrie(std::move(matchable));
  byte_fallback_ = model.byte_fallback;
  treat_whitespace_as_suffix_ = model.treat_whitespace_as_suffix;
  allow_whitespace_only_pieces_ = model.allow_whitespace_only_pieces;
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b)
      byte_ids_[static_cast<std::size_t>(b)] = reserved_.at(byte_piece(static_cast<std::uint8_t>(b)));
  }
  // eos_id() / pad_id() of SentencePieceProcessor: the id of the named piece when it is a
  // control piece; else the folder's added tokens.
  const auto control_id = [&](const std::string& piece) -> std::int64_t {
    const auto id = piece_id(piece);
    return types_[static_cast<std::size_t>(id)] == PieceType::control ? id : -1;
  };
  eos_id_ = control_id(model.eos_piece);
  if (eos_id_ < 0) eos_id_ = added_.id_of("</s>");
  if (eos_id_ < 0) throw WeightsError(source, "the SentencePiece model has no </s> (eos) piece");
  pad_id_ = control_id(model.pad_piece);
  if (pad_id_ < 0) pad_id_ = std::max<std::int64_t>(added_.id_of("<pad>"), 0);
}

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, AddedTokens added)
    : SentencePieceTokenizer(SentencePieceModel::read(model_file), std::move(added),
                             model_file.string()) {}

fs::path SentencePieceTokenizer::model_file(const fs::path& dir) {
  if (fs::is_regular_file(dir / "spiece.model")) return dir / "spiece.model";
  if (fs::is_regular_file(dir / "tokenizer.json")) return dir / "tokenizer.json";
  throw WeightsError((dir / "spiece.model").string(),
                     "missing: no SentencePiece model (spiece.model, or a Unigram tokenizer.json)");
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_folder(const fs::path& dir) {
  const auto file = model_file(dir);
  auto model = file.filename() == "tokenizer.json" ? SentencePieceModel::read_tokenizer_json(file)
                                                   : SentencePieceModel::read(file);
  return std::make_unique<SentencePieceTokenizer>(model, AddedTokens::from_folder(dir),
                                                  file.string());
}

std::int64_t SentencePieceTokenizer::piece_id(std::string_view piece) const {
  if (const auto it = reserved_.find(std::string(piece)); it != reserved_.end()) return it->second;
  return pieces_.find(piece).value_or(unk_id_);
}

std::vector<std::string_view> split_into_words(std::string_view text, bool whitespace_as_suffix,
                                               bool whitespace_only_pieces) {
  constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"
  // Words as (begin, length) while scanning; views at the end.
  std::vector<std::pair<std::size_t, std::size_t>> words;
  bool in_whitespace = false;
  if (whitespace_as_suffix && !text.empty()) words.emplace_back(0, 0);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = std::min(utf8_length_of_lead(text[at]), text.size() - at);
    const bool space = text.substr(at, n) == kSpace;
    if (whitespace_as_suffix) {
      if (space) {
        in_whitespace = true;
      } else if (in_whitespace) {
        if (whitespace_only_pieces) words.emplace_back(at, 0);
        in_whitespace = false;
      }
      words.back().second += n;
      at += n;
      if (at < text.size() && space && !whitespace_only_pieces) words.emplace_back(at, 0);
    } else {
      if (at == 0 || (space && (!in_whitespace || !whitespace_only_pieces))) {
        words.emplace_back(at, 0);
        in_whitespace = true;
      }
      if (in_whitespace && !space) in_whitespace = false;
      words.back().second += n;
      at += n;
    }
  }
  std::vector<std::string_view> out;
  out.reserve(words.size());
  for (const auto& [begin, length] : words) out.push_back(text.substr(begin, length));
  return out;
}

void SentencePieceTokenizer::best_path(std::string_view text, std::size_t offset,
                                       std::vector<Step>& path) const {
  // unigram::Model's Viterbi (EncodeOptimized) over one word: the best path ending at every
  // byte position, each piece that starts at a character boundary tried once, scores summed
  // and compared in float, the earliest start kept on a tie.
  constexpr float kUnkPenalty = 10.0F;
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  struct Best {
    std::int32_t id = -1;
    float score = 0.0F;
    std::size_t starts_at = kNone;
  };
  const std::size_t n = text.size();
  std::vector<Best> best(n + 1);
  const float unk_score = min_score_ - kUnkPenalty;
  const auto offer = [&](std::size_t end, std::int32_t id, float score, std::size_t start) {
    auto& target = best[end];
    if (target.starts_at == kNone || score > target.score) target = {id, score, start};
  };
  for (std::size_t start = 0; start < n;) {
    const float till_here = best[start].score;
    const std::size_t char_length = std::min(utf8_length_of_lead(text[start]), n - start);
    bool has_single_node = false;
    pieces_.for_each_prefix(text.substr(start), [&](std::size_t length, std::int32_t id) {
      const auto type = types_[static_cast<std::size_t>(id)];
      if (type == PieceType::unused) return;
      // A user-defined piece always wins: length x the best score, less 0.1.
      const float score =
          type == PieceType::user_defined
              ? static_cast<float>(static_cast<double>(static_cast<float>(length) * max_score_) - 0.1)
              : scores_[static_cast<std::size_t>(id)];
      offer(start + length, id, score + till_here, start);
      if (length == char_length) has_single_node = true;
    });
    if (!has_single_node) offer(start + char_length, unk_id_, unk_score + till_here, start);
    start += char_length;
  }
  const std::size_t first = path.size();
  for (std::size_t end = n; end > 0; end = best[end].starts_at) {
    path.push_back({offset + best[end].starts_at, offset + end, best[end].id});
  }
  std::reverse(path.begin() + static_cast<std::ptrdiff_t>(first), path.end());
}

std::vector<std::int64_t> SentencePieceTokenizer::encode_pieces(std::string_view text) const {
  const std::string normalized = normalizer_.normalize(text);
  const std::string_view view(normalized);
  // Each word on its own, as SentencePiece (0.2.1 and later) encodes a text.
  std::vector<Step> path;
  for (const auto word :
       split_into_words(view, treat_whitespace_as_suffix_, allow_whitespace_only_pieces_)) {
    best_path(word, static_cast<std::size_t>(word.data() - view.data()), path);
  }
  // SentencePieceProcessor::PopulateSentencePieceText: an unknown piece becomes its bytes'
  // pieces with byte fallback; without, a run of unknown pieces is one unknown id.
  std::vector<std::int64_t> ids;
  ids.reserve(path.size());
  bool previous_unknown = false;
  for (const auto& step : path) {
    const bool unknown = types_[static_cast<std::size_t>(step.id)] == PieceType::unknown;
    if (unknown && byte_fallback_) {
      for (std::size_t i = step.begin; i < step.end; ++i)
        ids.push_back(byte_ids_[static_cast<std::uint8_t>(view[i])]);
    } else if (!(unknown && previous_unknown)) {
      ids.push_back(step.id);
    }
    previous_unknown = unknown;
  }
  return ids;
}

std::vector<std::int64_t> SentencePieceTokenizer::encode(const std::string& text,
                                                         std::size_t max_length) const {
  std::vector<std::int64_t> ids;
  for (const auto& piece : added_.split(text)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    const auto part = encode_pieces(piece.text);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  truncate_for_special_tokens(ids, max_length, 1);
  if (ids.empty() || ids.back() != eos_id_) ids.push_back(eos_id_);
  return ids;
}

}  // namespace omnidp::models::text
