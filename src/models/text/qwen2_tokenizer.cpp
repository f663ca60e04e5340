#include "omnidp/models/text/qwen2_tokenizer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <climits>
#include <fstream>
#include <mutex>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"

#ifdef OMNIDP_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

#ifdef OMNIDP_HAVE_ICU
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#endif

namespace omnidp::models::text {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPretokenizePattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string utf8_of(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Splits UTF-8 into code points (each as its bytes). Byte-level text is valid by construction.
std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 1;
    if (c >= 0xF0) {
      n = 4;
    } else if (c >= 0xE0) {
      n = 3;
    } else if (c >= 0xC0) {
      n = 2;
    }
    n = std::min(n, s.size() - i);
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

bool is_ascii(const std::string& s) {
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

const std::string& byte_level_char(unsigned char byte) {
  static const std::array<std::string, 256> table = [] {
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    std::array<std::string, 256> t;
    std::uint32_t next = 256;
    for (int b = 0; b < 256; ++b)
      t[b] = utf8_of(printable[b] ? static_cast<std::uint32_t>(b) : next++);
    return t;
  }();
  return table[byte];
}

#ifdef OMNIDP_HAVE_ICU
bool Qwen2Tokenizer::normalizes() noexcept { return true; }

std::string nfc_normalize(const std::string& text) {
  if (is_ascii(text)) return text;
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&err);
  if (U_FAILURE(err))
    throw ModelError(std::string("ICU NFC normalizer unavailable: ") + u_errorName(err));
  const auto fail = [](UErrorCode e) {
    throw InputError("<prompt>", std::string("cannot normalise the text (NFC): ") + u_errorName(e));
  };
  std::int32_t len16 = 0;
  u_strFromUTF8(nullptr, 0, &len16, text.data(), static_cast<std::int32_t>(text.size()), &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) fail(err);
  err = U_ZERO_ERROR;
  std::vector<UChar> utf16(static_cast<std::size_t>(len16) + 1);
  u_strFromUTF8(utf16.data(), len16 + 1, nullptr, text.data(),
                static_cast<std::int32_t>(text.size()), &err);
  if (U_FAILURE(err)) fail(err);
  if (unorm2_isNormalized(nfc, utf16.data(), len16, &err) != 0 && U_SUCCESS(err)) return text;
  err = U_ZERO_ERROR;
  const std::int32_t n = unorm2_normalize(nfc, utf16.data(), len16, nullptr, 0, &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) fail(err);
  err = U_ZERO_ERROR;
  std::vector<UChar> normalized(static_cast<std::size_t>(n) + 1);
  unorm2_normalize(nfc, utf16.data(), len16, normalized.data(), n + 1, &err);
  if (U_FAILURE(err)) fail(err);
  std::int32_t len8 = 0;
  u_strToUTF8(nullptr, 0, &len8, normalized.data(), n, &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) fail(err);
  err = U_ZERO_ERROR;
  std::string out(static_cast<std::size_t>(len8) + 1, '\0');
  u_strToUTF8(out.data(), len8 + 1, nullptr, normalized.data(), n, &err);
  if (U_FAILURE(err)) fail(err);
  out.resize(static_cast<std::size_t>(len8));
  return out;
}
#else
bool Qwen2Tokenizer::normalizes() noexcept { return false; }

std::string nfc_normalize(const std::string& text) {
  if (!is_ascii(text)) {
    static std::once_flag once;
    std::call_once(once, [] {
      log_warn("this build has no ICU: Qwen2 prompts are tokenized without NFC normalisation");
    });
  }
  return text;
}
#endif

#ifdef OMNIDP_HAVE_PCRE2

namespace {

struct Pcre2CodeFree {
  void operator()(pcre2_code* code) const noexcept { pcre2_code_free(code); }
};
using Pcre2Code = std::unique_ptr<pcre2_code, Pcre2CodeFree>;

struct Pcre2MatchDataFree {
  void operator()(pcre2_match_data* data) const noexcept { pcre2_match_data_free(data); }
};
using Pcre2MatchData = std::unique_ptr<pcre2_match_data, Pcre2MatchDataFree>;

std::string pcre2_message(int code) {
  std::array<PCRE2_UCHAR, 256> buf{};
  const int n = pcre2_get_error_message(code, buf.data(), buf.size());
  if (n < 0) return fmt::format("PCRE2 error {}", code);
  return {reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n)};
}

}  // namespace

struct Qwen2Tokenizer::Impl {
  Pcre2Code code;
};

bool Qwen2Tokenizer::available() noexcept { return true; }

std::vector<std::string> Qwen2Tokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> pieces;
  Pcre2MatchData md(pcre2_match_data_create_from_pattern(impl_->code.get(), nullptr));
  if (!md) throw ModelError("PCRE2: cannot allocate match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t offset = 0;
  std::uint32_t options = 0;  // the first call checks the whole subject is valid UTF-8
  while (offset < text.size()) {
    const int rc =
        pcre2_match(impl_->code.get(), subject, text.size(), offset, options, md.get(), nullptr);
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
        throw InputError("<prompt>", "the text is not valid UTF-8: " + pcre2_message(rc));
      }
      throw ModelError("PCRE2 match failed: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (ov[0] > offset) pieces.emplace_back(text.substr(offset, ov[0] - offset));
    if (ov[1] == ov[0]) {  // cannot happen with this pattern; never loop forever
      pieces.emplace_back(text.substr(ov[0], 1));
      offset = ov[0] + 1;
      continue;
    }
    pieces.emplace_back(text.substr(ov[0], ov[1] - ov[0]));
    offset = ov[1];
  }
  if (offset < text.size()) pieces.emplace_back(text.substr(offset));
  return pieces;
}

#else  // no PCRE2 in this build

struct Qwen2Tokenizer::Impl {};

bool Qwen2Tokenizer::available() noexcept { return false; }

std::vector<std::string> Qwen2Tokenizer::pre_tokenize(const std::string& /*text*/) const {
  throw ModelError("this build has no PCRE2");
}

#endif

Qwen2Tokenizer::Qwen2Tokenizer(std::unordered_map<std::string, std::int64_t> vocab,
                               const std::vector<std::pair<std::string, std::string>>& merges,
                               AddedTokens added)
    : impl_(std::make_unique<Impl>()), vocab_(std::move(vocab)), added_(std::move(added)) {
#ifdef OMNIDP_HAVE_PCRE2
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  impl_->code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPretokenizePattern),
                                  PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &error,
                                  &error_offset, nullptr));
  if (!impl_->code) {
    throw ModelError(
        fmt::format("PCRE2 cannot compile the Qwen2 pre-tokenizer pattern at offset {}: {}",
                    error_offset, pcre2_message(error)));
  }
#else
  throw ModelError(
      "this build has no PCRE2 (install libpcre2-dev and reconfigure): the Qwen2 tokenizer of "
      "HunyuanVideo-1.5 is unavailable");
#endif
  ranks_.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    ranks_.emplace(merges[i].first + " " + merges[i].second, static_cast<int>(i));
  }
  pad_id_ = added_.id_of("<|endoftext|>");
  if (pad_id_ < 0) {
    const auto it = vocab_.find("<|endoftext|>");
    pad_id_ = it == vocab_.end() ? 0 : it->second;
  }
}

Qwen2Tokenizer::~Qwen2Tokenizer() = default;

std::vector<std::string> Qwen2Tokenizer::bpe(const std::string& piece) const {
  std::string mapped;
  for (const char c : piece) mapped += byte_level_char(static_cast<unsigned char>(c));
  auto parts = utf8_chars(mapped);
  while (parts.size() > 1) {
    int best = INT_MAX;
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = ranks_.find(parts[i] + " " + parts[i + 1]);
      if (it != ranks_.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == INT_MAX) break;
    const std::string left = parts[at];
    const std::string right = parts[at + 1];
    std::vector<std::string> merged;
    merged.reserve(parts.size());
    for (std::size_t i = 0; i < parts.size();) {
      if (i + 1 < parts.size() && parts[i] == left && parts[i + 1] == right) {
        merged.push_back(left + right);
        i += 2;
      } else {
        merged.push_back(parts[i]);
        ++i;
      }
    }
    parts = std::move(merged);
  }
  return parts;
}

std::vector<std::int64_t> Qwen2Tokenizer::encode(const std::string& text,
                                                 std::size_t max_length) const {
  const std::string normalized = nfc_normalize(text);
  std::vector<std::int64_t> ids;
  for (const auto& piece : added_.split(normalized)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    for (const auto& word : pre_tokenize(std::string(piece.text))) {
      for (const auto& token : bpe(word)) {
        const auto it = vocab_.find(token);
        if (it == vocab_.end())
          throw ModelError("Qwen2 tokenizer: token '" + token + "' is not in vocab.json");
        ids.push_back(it->second);
      }
    }
  }
  truncate_for_special_tokens(ids, max_length, 0);
  return ids;
}

std::unique_ptr<Qwen2Tokenizer> Qwen2Tokenizer::from_folder(const fs::path& dir) {
  const auto vocab_path = dir / "vocab.json";
  const auto merges_path = dir / "merges.txt";
  const auto tokenizer_json = dir / "tokenizer.json";
  std::unordered_map<std::string, std::int64_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  const auto split_merge = [](const std::string& line, const fs::path& file, std::size_t line_no) {
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size()) {
      throw WeightsError(file.string(), fmt::format("merge {}: expected two tokens", line_no));
    }
    return std::make_pair(line.substr(0, space), line.substr(space + 1));
  };

  if (!fs::is_regular_file(vocab_path) && fs::is_regular_file(tokenizer_json)) {
    // Only the fast tokenizer's file: its BPE model holds the same vocabulary and merges.
    std::ifstream in(tokenizer_json, std::ios::binary);
    try {
      const auto j = nlohmann::json::parse(in);
      const auto& model = j.at("model");
      for (const auto& [token, id] : model.at("vocab").items())
        vocab.emplace(token, id.get<std::int64_t>());
      std::size_t n = 0;
      for (const auto& m : model.at("merges")) {
        ++n;
        if (m.is_array()) {
          merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
        } else {
          merges.push_back(split_merge(m.get<std::string>(), tokenizer_json, n));
        }
      }
    } catch (const nlohmann::json::exception& e) {
      throw WeightsError(tokenizer_json.string(), std::string("invalid BPE tokenizer: ") + e.what());
    }
    return std::make_unique<Qwen2Tokenizer>(std::move(vocab), merges, AddedTokens::from_folder(dir));
  }

  std::ifstream vin(vocab_path, std::ios::binary);
  if (!vin) {
    throw WeightsError(vocab_path.string(),
                       "cannot open (a Qwen2 tokenizer folder needs vocab.json and merges.txt, "
                       "or tokenizer.json)");
  }
  try {
    const auto j = nlohmann::json::parse(vin);
    vocab.reserve(j.size());
    for (const auto& [token, id] : j.items()) vocab.emplace(token, id.get<std::int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(vocab_path.string(), std::string("invalid vocab: ") + e.what());
  }
  std::ifstream min(merges_path, std::ios::binary);
  if (!min)
    throw WeightsError(merges_path.string(),
                       "cannot open (a Qwen2 tokenizer folder needs merges.txt)");
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(min, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    merges.push_back(split_merge(line, merges_path, line_no));
  }
  return std::make_unique<Qwen2Tokenizer>(std::move(vocab), merges, AddedTokens::from_folder(dir));
}

}  // namespace omnidp::models::text
