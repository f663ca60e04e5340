#include "omnidp/models/text/sentencepiece_model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <system_error>
#include <unordered_map>

#include "omnidp/common/base64.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/text/protobuf_wire.hpp"
#include "omnidp/models/text/utf8.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;
using Model = SentencePieceModel;

namespace {

// Field numbers of sentencepiece_model.proto.
namespace field {
constexpr std::uint32_t kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr std::uint32_t kPiece = 1, kScore = 2, kType = 3;
constexpr std::uint32_t kModelType = 3, kTreatWhitespaceAsSuffix = 24,
                        kAllowWhitespaceOnlyPieces = 26, kByteFallback = 35, kUnkId = 40,
                        kBosId = 41, kEosId = 42, kPadId = 43, kUnkPiece = 45, kBosPiece = 46,
                        kEosPiece = 47, kPadPiece = 48;
constexpr std::uint32_t kName = 1, kPrecompiledCharsmap = 2, kAddDummyPrefix = 3,
                        kRemoveExtraWhitespaces = 4, kEscapeWhitespaces = 5;
}  // namespace field

Model::Piece parse_piece(protobuf::Reader reader) {
  Model::Piece p;
  while (const auto f = reader.next()) {
    switch (f->number) {
      case field::kPiece: p.piece = std::string(as_bytes(reader, *f)); break;
      case field::kScore: p.score = as_float(reader, *f); break;
      case field::kType: {
        // proto2 keeps an enum value it does not know as an unknown field: the type stays NORMAL.
        const auto type = as_varint(reader, *f);
        if (type >= 1 && type <= 6) p.type = static_cast<Model::PieceType>(type);
        break;
      }
      default: break;
    }
  }
  return p;
}

void parse_trainer_spec(protobuf::Reader reader, Model& m) {
  while (const auto f = reader.next()) {
    switch (f->number) {
      case field::kModelType: {
        const auto type = as_varint(reader, *f);
        if (type >= 1 && type <= 4) m.model_type = static_cast<Model::ModelType>(type);
        break;
      }
      case field::kTreatWhitespaceAsSuffix:
        m.treat_whitespace_as_suffix = as_bool(reader, *f);
        break;
      case field::kAllowWhitespaceOnlyPieces:
        m.allow_whitespace_only_pieces = as_bool(reader, *f);
        break;
      case field::kByteFallback: m.byte_fallback = as_bool(reader, *f); break;
      case field::kUnkId: m.unk_id = as_int32(reader, *f); break;
      case field::kBosId: m.bos_id = as_int32(reader, *f); break;
      case field::kEosId: m.eos_id = as_int32(reader, *f); break;
      case field::kPadId: m.pad_id = as_int32(reader, *f); break;
      case field::kUnkPiece: m.unk_piece = std::string(as_bytes(reader, *f)); break;
      case field::kBosPiece: m.bos_piece = std::string(as_bytes(reader, *f)); break;
      case field::kEosPiece: m.eos_piece = std::string(as_bytes(reader, *f)); break;
      case field::kPadPiece: m.pad_piece = std::string(as_bytes(reader, *f)); break;
      default: break;
    }
  }
}

void parse_normalizer_spec(protobuf::Reader reader, Model& m) {
  while (const auto f = reader.next()) {
    switch (f->number) {
      case field::kName: m.normalizer_name = std::string(as_bytes(reader, *f)); break;
      case field::kPrecompiledCharsmap:
        m.precompiled_charsmap = std::string(as_bytes(reader, *f));
        break;
      case field::kAddDummyPrefix: m.add_dummy_prefix = as_bool(reader, *f); break;
      case field::kRemoveExtraWhitespaces: m.remove_extra_whitespaces = as_bool(reader, *f); break;
      case field::kEscapeWhitespaces: m.escape_whitespaces = as_bool(reader, *f); break;
      default: break;
    }
  }
}

std::string read_file(const fs::path& file) {
  std::error_code ec;
  if (fs::exists(file, ec) && !fs::is_regular_file(file, ec))
    throw WeightsError(file.string(), "the SentencePiece model is not a regular file");
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) throw WeightsError(file.string(), "cannot open the SentencePiece model");
  const auto size = in.tellg();
  if (size < 0) throw WeightsError(file.string(), "cannot read the SentencePiece model");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw WeightsError(file.string(), "cannot read the SentencePiece model");
  return bytes;
}

}  // namespace

std::string byte_piece(std::uint8_t byte) {
  return fmt::format("<0x{:02X}>", static_cast<unsigned>(byte));
}

int byte_of_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (const char c : piece.substr(3, 2)) {
    if (c >= '0' && c <= '9') {
      value = value * 16 + (c - '0');
    } else if (c >= 'A' && c <= 'F') {
      value = value * 16 + (c - 'A' + 10);
    } else {
      return -1;  // SentencePiece names bytes in upper case only
    }
  }
  return value;
}

Model unigram_word_model(const std::vector<std::string>& words, bool byte_fallback) {
  Model m;
  m.unk_id = 2;
  m.eos_id = 1;
  m.pad_id = 0;
  m.bos_id = -1;
  m.byte_fallback = byte_fallback;
  m.normalizer_name = "identity";
  m.pieces = {{"<pad>", 0.0F, Model::PieceType::control},
              {"</s>", 0.0F, Model::PieceType::control},
              {"<unk>", 0.0F, Model::PieceType::unknown}};
  const std::string space = "\xE2\x96\x81";
  std::set<std::string> seen;
  const auto add = [&](std::string piece, float score) {
    if (seen.insert(piece).second)
      m.pieces.push_back({std::move(piece), score, Model::PieceType::normal});
  };
  for (std::size_t i = 0; i < words.size(); ++i)
    add(space + words[i], -1.0F - 0.001F * static_cast<float>(i));
  add(space, -5.0F);
  for (const auto& w : words) {
    for (std::size_t at = 0; at < w.size();) {
      const std::size_t n = std::min(utf8_length_of_lead(w[at]), w.size() - at);
      add(w.substr(at, n), -8.0F);
      at += n;
    }
  }
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      m.pieces.push_back({byte_piece(static_cast<std::uint8_t>(b)), 0.0F, Model::PieceType::byte});
    }
  }
  return m;
}

Model Model::parse(std::string_view bytes, const std::string& source) {
  Model m;
  protobuf::Reader reader(bytes, source);
  while (const auto f = reader.next()) {
    switch (f->number) {
      case field::kPieces: m.pieces.push_back(parse_piece(reader.nested(*f))); break;
      case field::kTrainerSpec: parse_trainer_spec(reader.nested(*f), m); break;
      case field::kNormalizerSpec: parse_normalizer_spec(reader.nested(*f), m); break;
      default: break;  // self-test data, the denormalizer, fields of newer versions
    }
  }
  m.validate(source);
  return m;
}

Model Model::read(const fs::path& file) { return parse(read_file(file), file.string()); }

void Model::validate(const std::string& source) const {
  if (pieces.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw WeightsError(source, "more pieces than 32-bit ids can number");
  // As ModelInterface::InitializePieces: normal, user-defined and unused pieces share one
  // namespace, the other types another.
  std::unordered_map<std::string_view, std::size_t> normal;
  std::unordered_map<std::string_view, std::size_t> reserved;
  std::array<bool, 256> bytes{};
  bool unknown = false;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    const auto where = fmt::format("piece {}", i);
    if (p.piece.empty()) throw WeightsError(source, where + " is empty");
    const bool is_normal = p.type == PieceType::normal || p.type == PieceType::user_defined ||
                           p.type == PieceType::unused;
    if (!(is_normal ? normal : reserved).emplace(p.piece, i).second)
      throw WeightsError(source, where + " '" + p.piece + "' is already defined");
    if (p.type == PieceType::unknown) {
      if (unknown) throw WeightsError(source, where + ": a second unknown piece");
      unknown = true;
    }
    if (p.type == PieceType::byte) {
      if (!byte_fallback)
        throw WeightsError(source,
                           where + " '" + p.piece + "' is a byte piece without byte_fallback");
      const int b = byte_of_piece(p.piece);
      if (b < 0)
        throw WeightsError(source, where + " '" + p.piece + "' is not a byte piece <0xHH>");
      bytes[static_cast<std::size_t>(b)] = true;
    }
  }
  if (!unknown) throw WeightsError(source, "the model has no unknown piece");
  if (normal.empty()) throw WeightsError(source, "the model has no pieces to encode with");
  if (byte_fallback) {
    for (std::size_t b = 0; b < bytes.size(); ++b) {
      if (!bytes[b])
        throw WeightsError(source, "byte_fallback is on but there is no byte piece " +
                                       byte_piece(static_cast<std::uint8_t>(b)));
    }
  }
}

std::string Model::serialize() const {
  protobuf::Writer out;
  for (const auto& p : pieces) {
    protobuf::Writer piece;
    piece.bytes(field::kPiece, p.piece);
    piece.float32(field::kScore, p.score);
    if (p.type != PieceType::normal) piece.varint(field::kType, static_cast<std::uint64_t>(p.type));
    out.bytes(field::kPieces, piece.data());
  }
  protobuf::Writer trainer;
  trainer.varint(field::kModelType, static_cast<std::uint64_t>(model_type));
  trainer.boolean(field::kTreatWhitespaceAsSuffix, treat_whitespace_as_suffix);
  trainer.boolean(field::kAllowWhitespaceOnlyPieces, allow_whitespace_only_pieces);
  trainer.boolean(field::kByteFallback, byte_fallback);
  trainer.int32(field::kUnkId, unk_id);
  trainer.int32(field::kBosId, bos_id);
  trainer.int32(field::kEosId, eos_id);
  trainer.int32(field::kPadId, pad_id);
  trainer.bytes(field::kUnkPiece, unk_piece);
  trainer.bytes(field::kBosPiece, bos_piece);
  trainer.bytes(field::kEosPiece, eos_piece);
  trainer.bytes(field::kPadPiece, pad_piece);
  out.bytes(field::kTrainerSpec, trainer.data());
  protobuf::Writer normalizer;
  normalizer.bytes(field::kName, normalizer_name);
  if (!precompiled_charsmap.empty())
    normalizer.bytes(field::kPrecompiledCharsmap, precompiled_charsmap);
  normalizer.boolean(field::kAddDummyPrefix, add_dummy_prefix);
  normalizer.boolean(field::kRemoveExtraWhitespaces, remove_extra_whitespaces);
  normalizer.boolean(field::kEscapeWhitespaces, escape_whitespaces);
  out.bytes(field::kNormalizerSpec, normalizer.data());
  return out.data();
}

namespace {

// The normalizers of a tokenizer.json, a Sequence flattened.
void flatten_normalizers(const nlohmann::json& n, std::vector<const nlohmann::json*>& out) {
  if (n.is_null()) return;
  if (n.value("type", "") == "Sequence") {
    for (const auto& sub : n.at("normalizers")) flatten_normalizers(sub, out);
  } else {
    out.push_back(&n);
  }
}

}  // namespace

Model Model::read_tokenizer_json(const fs::path& file) {
  const auto source = file.string();
  const auto j = read_json_object(file);
  Model m;
  try {
    const auto& model = j.at("model");
    if (model.value("type", "") != "Unigram") {
      throw WeightsError(source, "model.type is '" + model.value("type", "") +
                                     "': only Unigram tokenizers are SentencePiece models");
    }
    m.model_type = ModelType::unigram;
    m.byte_fallback = model.value("byte_fallback", false);
    const auto unk = model.at("unk_id");
    m.unk_id = unk.is_null() ? -1 : unk.get<std::int32_t>();
    // Added tokens: special ones are SentencePiece's control pieces, the others user-defined.
    std::map<std::int64_t, bool> added;  // id -> special
    if (j.contains("added_tokens")) {
      for (const auto& t : j.at("added_tokens"))
        added[t.at("id").get<std::int64_t>()] = t.value("special", false);
    }
    const auto& vocab = model.at("vocab");
    m.pieces.reserve(vocab.size());
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      const auto& entry = vocab.at(i);
      Piece p{entry.at(0).get<std::string>(), entry.at(1).get<float>(), PieceType::normal};
      const auto id = static_cast<std::int64_t>(i);
      if (id == m.unk_id) {
        p.type = PieceType::unknown;
      } else if (const auto it = added.find(id); it != added.end()) {
        p.type = it->second ? PieceType::control : PieceType::user_defined;
      } else if (m.byte_fallback && byte_of_piece(p.piece) >= 0) {
        p.type = PieceType::byte;
      }
      m.pieces.push_back(std::move(p));
    }
    if (m.unk_id >= 0 && static_cast<std::size_t>(m.unk_id) < m.pieces.size())
      m.unk_piece = m.pieces[static_cast<std::size_t>(m.unk_id)].piece;
    // The special ids, by the pieces' conventional names.
    m.eos_id = m.bos_id = m.pad_id = -1;
    for (std::size_t i = 0; i < m.pieces.size(); ++i) {
      if (m.pieces[i].type != PieceType::control) continue;
      const auto id = static_cast<std::int32_t>(i);
      if (m.pieces[i].piece == m.eos_piece) m.eos_id = id;
      if (m.pieces[i].piece == m.bos_piece) m.bos_id = id;
      if (m.pieces[i].piece == m.pad_piece) m.pad_id = id;
    }
    // Normalizer: Precompiled(charsmap), and Strip/Replace(" {2,}") where SentencePiece removes
    // extra whitespace (transformers' SpmConverter writes them for remove_extra_whitespaces).
    std::vector<const nlohmann::json*> normalizers;
    if (j.contains("normalizer")) flatten_normalizers(j.at("normalizer"), normalizers);
    m.remove_extra_whitespaces = false;
    m.normalizer_name = "identity";
    for (const auto* n : normalizers) {
      const auto type = n->value("type", "");
      if (type == "Precompiled") {
        const auto& charsmap = n->at("precompiled_charsmap");
        if (charsmap.is_null()) continue;
        auto bytes = base64_decode(charsmap.get<std::string>());
        if (!bytes) throw WeightsError(source, "normalizer precompiled_charsmap is not base64");
        m.precompiled_charsmap = std::move(*bytes);
        m.normalizer_name = "precompiled";
      } else if (type == "Strip" || type == "Replace") {
        m.remove_extra_whitespaces = true;
      } else {
        throw WeightsError(source, "normalizer '" + type +
                                       "' has no SentencePiece equivalent (Precompiled, Strip and "
                                       "Replace are read)");
      }
    }
    // Metaspace: "▁" for spaces, and the dummy prefix unless prepend_scheme is "never" (older
    // files: add_prefix_space); a WhitespaceSplit before it folds whitespace as SentencePiece's
    // remove_extra_whitespaces does.
    m.add_dummy_prefix = false;
    m.escape_whitespaces = false;
    std::vector<const nlohmann::json*> pre_tokenizers;
    if (j.contains("pre_tokenizer") && !j.at("pre_tokenizer").is_null()) {
      const auto& pre = j.at("pre_tokenizer");
      if (pre.value("type", "") == "Sequence") {
        for (const auto& p : pre.at("pretokenizers")) pre_tokenizers.push_back(&p);
      } else {
        pre_tokenizers.push_back(&pre);
      }
    }
    for (const auto* pre : pre_tokenizers) {
      const auto type = pre->value("type", "");
      if (type == "Metaspace") {
        m.escape_whitespaces = true;
        m.add_dummy_prefix = pre->contains("prepend_scheme")
                                 ? pre->at("prepend_scheme").get<std::string>() != "never"
                                 : pre->value("add_prefix_space", true);
      } else if (type == "WhitespaceSplit") {
        m.remove_extra_whitespaces = true;
      } else {
        throw WeightsError(source, "pre_tokenizer '" + type +
                                       "': a SentencePiece tokenizer.json has Metaspace (and "
                                       "WhitespaceSplit)");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(source, std::string("not a Unigram tokenizer.json: ") + e.what());
  }
  m.validate(source);
  return m;
}

}  // namespace omnidp::models::text
