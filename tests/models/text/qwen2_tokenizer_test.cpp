#include "omnidp/models/text/qwen2_tokenizer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {

using Ids = std::vector<std::int64_t>;
using Strings = std::vector<std::string>;
using Merges = std::vector<std::pair<std::string, std::string>>;

// A tiny byte-level vocabulary checked by hand: the 256 byte characters with id = byte value,
// then merged tokens from 256 on, and the Qwen2 special tokens.
std::unordered_map<std::string, std::int64_t> tiny_vocab() {
  std::unordered_map<std::string, std::int64_t> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace(byte_level_char(static_cast<unsigned char>(b)), b);
  vocab.emplace(
      "\xC4\xA0"
      "c",
      256);  // "Ġc"
  vocab.emplace(
      "\xC4\xA0"
      "ca",
      257);  // "Ġca"
  vocab.emplace(
      "\xC4\xA0"
      "cat",
      258);  // "Ġcat"
  vocab.emplace("he", 259);
  vocab.emplace("ll", 260);
  vocab.emplace("hell", 261);
  vocab.emplace("aa", 262);
  vocab.emplace("\xC3\xA7\xC4\xAE", 263);  // "çĮ": the first two bytes of 猫 (E7 8C)
  vocab.emplace("\xC4\xA0\xC4\xA0", 264);  // "ĠĠ"
  return vocab;
}

Merges tiny_merges() {
  return {{"\xC4\xA0", "c"},
          {"\xC4\xA0"
           "c",
           "a"},
          {"\xC4\xA0"
           "ca",
           "t"},
          {"h", "e"},
          {"l", "l"},
          {"he", "ll"},
          {"a", "a"},
          {"\xC3\xA7", "\xC4\xAE"},
          {"\xC4\xA0", "\xC4\xA0"}};
}

AddedTokens qwen_added() {
  AddedTokens added;
  added.add("<|endoftext|>", 300);
  added.add("<|im_start|>", 301);
  added.add("<|im_end|>", 302);
  return added;
}

class Qwen2TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Qwen2Tokenizer::available()) GTEST_SKIP() << "this build has no PCRE2";
    tok_ = std::make_unique<Qwen2Tokenizer>(tiny_vocab(), tiny_merges(), qwen_added());
  }
  std::unique_ptr<Qwen2Tokenizer> tok_;
};

TEST(ByteLevel, Gpt2ByteToUnicodeMap) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(byte_level_char(0), "\xC4\x80");     // Ā U+0100
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_char('~'), "~");
  EXPECT_EQ(byte_level_char(0x7F), "\xC4\xA1");  // U+0121: the 34th unprintable byte
  EXPECT_EQ(byte_level_char(0x8C), "\xC4\xAE");  // Į U+012E
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");  // Ń U+0143 (soft hyphen)
  EXPECT_EQ(byte_level_char(0xE7), "\xC3\xA7");  // ç: printable Latin-1 maps to itself
  EXPECT_EQ(byte_level_char(0xFF), "\xC3\xBF");
}

TEST_F(Qwen2TokenizerTest, PreTokenizerAscii) {
  EXPECT_EQ(tok_->pre_tokenize("Hello world"), (Strings{"Hello", " world"}));
  EXPECT_EQ(tok_->pre_tokenize("I'm here, DON'T"), (Strings{"I", "'m", " here", ",", " DON", "'T"}));
  EXPECT_EQ(tok_->pre_tokenize("abc 123"), (Strings{"abc", " ", "1", "2", "3"}));
  EXPECT_EQ(tok_->pre_tokenize("x.y!!"), (Strings{"x", ".y", "!!"}));
}

TEST_F(Qwen2TokenizerTest, PreTokenizerWhitespaceRuns) {
  EXPECT_EQ(tok_->pre_tokenize("a   b"), (Strings{"a", "  ", " b"}));
  EXPECT_EQ(tok_->pre_tokenize("a\n\nb"), (Strings{"a", "\n\n", "b"}));
  EXPECT_EQ(tok_->pre_tokenize("a \n b"), (Strings{"a", " \n", " b"}));
  EXPECT_EQ(tok_->pre_tokenize("a\t\tb  "), (Strings{"a", "\t", "\tb", "  "}));
}

TEST_F(Qwen2TokenizerTest, PreTokenizerCjkAndEmoji) {
  // \p{L} covers CJK and kana: one piece; emoji are neither letters nor numbers.
  EXPECT_EQ(tok_->pre_tokenize("\xE7\x8C\xAB\xE3\x81\x8C\xE6\xAD\xA9\xE3\x81\x8F"),
            (Strings{"\xE7\x8C\xAB\xE3\x81\x8C\xE6\xAD\xA9\xE3\x81\x8F"}));
  EXPECT_EQ(tok_->pre_tokenize("I \xE2\x9C\x93 \xF0\x9F\x90\xB1!"),
            (Strings{"I", " \xE2\x9C\x93", " \xF0\x9F\x90\xB1!"}));
  // Unicode digits are \p{N}, one per piece.
  EXPECT_EQ(tok_->pre_tokenize("\xD9\xA3\xD9\xA4"),
            (Strings{"\xD9\xA3", "\xD9\xA4"}));  // Arabic-Indic 3 4
}

TEST_F(Qwen2TokenizerTest, BpeMergesByRank) {
  EXPECT_EQ(tok_->bpe("hello"), (Strings{"hell", "o"}));
  EXPECT_EQ(tok_->bpe(" cat"), (Strings{"\xC4\xA0"
                                        "cat"}));
  EXPECT_EQ(tok_->bpe("aaa"), (Strings{"aa", "a"}));
  EXPECT_EQ(tok_->bpe("x"), (Strings{"x"}));
}

TEST_F(Qwen2TokenizerTest, EncodeAsciiCjkEmojiAndWhitespace) {
  EXPECT_EQ(tok_->encode("hello cat"), (Ids{261, 111, 258}));
  // 猫 = E7 8C AB: the merge "çĮ" covers the first two bytes, AB stays a byte.
  EXPECT_EQ(tok_->encode("\xE7\x8C\xAB"), (Ids{263, 0xAB}));
  // 🐱 = F0 9F 90 B1: no merges, one id per byte.
  EXPECT_EQ(tok_->encode("\xF0\x9F\x90\xB1"), (Ids{0xF0, 0x9F, 0x90, 0xB1}));
  // "a   b" -> "a", "  " (ĠĠ), " b" (Ġ b).
  EXPECT_EQ(tok_->encode("a   b"), (Ids{'a', 264, ' ', 'b'}));
  EXPECT_EQ(tok_->encode(""), (Ids{}));
}

TEST_F(Qwen2TokenizerTest, AddedTokensAndTruncation) {
  EXPECT_EQ(tok_->encode("<|im_start|>user\nhi<|im_end|>"),
            (Ids{301, 'u', 's', 'e', 'r', '\n', 'h', 'i', 302}));
  EXPECT_EQ(tok_->encode("<|im_start|>user\nhi", 3), (Ids{301, 'u', 's'}));  // nothing appended
  EXPECT_EQ(tok_->pad_id(), 300);
}

TEST_F(Qwen2TokenizerTest, NfcNormalisation) {
  // "e" + COMBINING ACUTE ACCENT -> "é" (C3 A9) under NFC.
  const auto ids = tok_->encode("e\xCC\x81");
  if (Qwen2Tokenizer::normalizes()) {
    EXPECT_EQ(ids, (Ids{0xC3, 0xA9}));
    EXPECT_EQ(nfc_normalize("e\xCC\x81"), "\xC3\xA9");
  } else {
    EXPECT_EQ(ids, (Ids{'e', 0xCC, 0x81}));
  }
  EXPECT_EQ(nfc_normalize("plain ascii"), "plain ascii");
}

TEST_F(Qwen2TokenizerTest, InvalidUtf8IsAnInputError) {
  EXPECT_THROW((void)tok_->encode("bad \xC3 byte"), InputError);
}

TEST_F(Qwen2TokenizerTest, FromFolderMatchesTheInMemoryTokenizer) {
  omnidp::test::TempDir dir;
  nlohmann::json vocab;
  for (const auto& [token, id] : tiny_vocab()) vocab[token] = id;
  dir.write("vocab.json", vocab.dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : tiny_merges()) merges += a + " " + b + "\n";
  dir.write("merges.txt", merges);
  dir.write(
      "tokenizer_config.json",
      R"({"added_tokens_decoder": {"300": {"content": "<|endoftext|>"}, "301": {"content": "<|im_start|>"},
                "302": {"content": "<|im_end|>"}}})");
  const auto tok = Qwen2Tokenizer::from_folder(dir.path());
  for (const std::string text :
       {"hello cat", "<|im_start|>a   b\n\xE7\x8C\xAB<|im_end|>", "I'm \xF0\x9F\x90\xB1"}) {
    EXPECT_EQ(tok->encode(text), tok_->encode(text)) << text;
  }
  dir.write("merges.txt", "#version: 0.2\nonlyone\n");
  const std::string error =
      omnidp::test::error_of<WeightsError>([&] { (void)Qwen2Tokenizer::from_folder(dir.path()); });
  EXPECT_NE(error.find("merge 2"), std::string::npos) << error;
}

TEST_F(Qwen2TokenizerTest, FromTokenizerJsonAlone) {
  omnidp::test::TempDir dir;
  nlohmann::json j;
  for (const auto& [token, id] : tiny_vocab()) j["model"]["vocab"][token] = id;
  j["model"]["merges"] = nlohmann::json::array();
  for (const auto& [a, b] : tiny_merges())
    j["model"]["merges"].push_back(nlohmann::json::array({a, b}));
  j["added_tokens"] = {{{"id", 301}, {"content", "<|im_start|>"}}};
  dir.write("tokenizer.json", j.dump());
  const auto tok = Qwen2Tokenizer::from_folder(dir.path());
  EXPECT_EQ(tok->encode("<|im_start|>hello cat"), (Ids{301, 261, 111, 258}));
  omnidp::test::TempDir empty;
  EXPECT_THROW((void)Qwen2Tokenizer::from_folder(empty.path()), WeightsError);
}

TEST_F(Qwen2TokenizerTest, UnknownTokenIsAModelError) {
  // Without the byte characters a piece cannot be mapped.
  Qwen2Tokenizer partial({{"a", 0}}, {}, {});
  EXPECT_EQ(partial.encode("aa"), (Ids{0, 0}));
  EXPECT_THROW((void)partial.encode("b"), ModelError);
}

}  // namespace
}  // namespace omnidp::models::text
