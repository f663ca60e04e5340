#include "omnidp/models/text/prompt_encoders.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/text/byt5_tokenizer.hpp"
#include "omnidp/models/text/sentencepiece_tokenizer.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("transformers-ref");

TEST(WanPromptClean, WhitespaceAndEntities) {
  EXPECT_EQ(wan_prompt_clean("  a   cat\n\twalks  "), "a cat walks");
  EXPECT_EQ(wan_prompt_clean("a\xE3\x80\x80"
                             "b\xC2\xA0"
                             "c"),
            "a b c");  // ideographic / no-break space
  EXPECT_EQ(wan_prompt_clean("fish &amp; chips"), "fish & chips");
  EXPECT_EQ(wan_prompt_clean("&amp;lt;b&amp;gt;"), "<b>");  // unescaped twice
  EXPECT_EQ(wan_prompt_clean("&#65;&#x42;&#67"), "ABC");
  EXPECT_EQ(wan_prompt_clean("&nbsp;x&nbsp;"), "x");
  EXPECT_EQ(wan_prompt_clean("&unknown; & &amp"), "&unknown; & &");
  EXPECT_EQ(wan_prompt_clean(""), "");
}

TEST(WanPromptClean, FtfySubset) {
  EXPECT_EQ(wan_prompt_clean("\xE2\x80\x9CHi\xE2\x80\x9D \xE2\x80\x98x\xE2\x80\x99"),
            "\"Hi\" 'x'");                                                     // curly quotes
  EXPECT_EQ(wan_prompt_clean("\xEF\xAC\x81ne"), "fine");                       // ﬁ ligature
  EXPECT_EQ(wan_prompt_clean("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3"), "ABC");  // full width
  EXPECT_EQ(wan_prompt_clean("a\x01"
                             "b"),
            "ab");  // control
  EXPECT_EQ(wan_prompt_clean("\xE7\x8C\xAB \xF0\x9F\x90\xB1"), "\xE7\x8C\xAB \xF0\x9F\x90\xB1");  // kept
}

TEST(Hv15GlyphText, QuotedSpansInTheReferenceFormat) {
  EXPECT_EQ(hv15_glyph_text("A sign saying \"OPEN\" and \xE2\x80\x9C"
                            "CLOSED\xE2\x80\x9D."),
            "Text \"OPEN\". Text \"CLOSED\". ");
  EXPECT_EQ(hv15_glyph_text("one \"a\""), "Text \"a\". ");
  EXPECT_EQ(hv15_glyph_text("x \"a\" y \"b\" z \"a\""), "Text \"a\". Text \"b\". ");  // deduplicated
  EXPECT_EQ(hv15_glyph_text("empty \"\" quotes"), "Text \"\". ");
  EXPECT_EQ(hv15_glyph_text("say \"a\nb\" ok \"c"), "Text \" ok \". ");  // no match across a newline
  EXPECT_EQ(hv15_glyph_text("no quotes"), std::nullopt);
  EXPECT_EQ(hv15_glyph_text("unclosed \"quote"), std::nullopt);
  EXPECT_EQ(hv15_glyph_text(""), std::nullopt);
}

TEST(Hv15ChatText, TemplateAndSystemMessage) {
  EXPECT_EQ(hv15_chat_text("a cat", "SYS"),
            "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\na "
            "cat<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(
      hv15_chat_text("", "SYS"),
      "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n <|im_end|>\n<|im_start|>assistant\n");
  const auto& sys = hv15_system_message();
  EXPECT_EQ(
      sys.rfind(
          "You are a helpful assistant. Describe the video by detailing the following aspects: ", 0),
      0U);
  EXPECT_NE(
      sys.find("aspects:         1. The main content and theme of the video.         2. The color"),
      std::string::npos);
  EXPECT_NE(sys.find("objects.         4. background environment, light, style and atmosphere.     "
                     "    5. camera"),
            std::string::npos);
  EXPECT_EQ(sys.substr(sys.size() - 18), "used in the video.");
}

TEST(TinyByteT5, OptionsFollowTheTextDim) {
  const auto o = tiny_byte_t5_options(32);
  EXPECT_EQ(o.d_model, 32);
  EXPECT_EQ(o.num_heads, 4);
  EXPECT_EQ(o.d_kv, 8);
  EXPECT_EQ(o.d_ff, 64);
  EXPECT_EQ(o.num_layers, 2);
  EXPECT_EQ(o.vocab_size, 384);
  EXPECT_FALSE(o.bias_in_every_layer);
  const auto odd = tiny_byte_t5_options(30);
  EXPECT_EQ(odd.num_heads, 1);
  EXPECT_EQ(odd.d_kv, 30);
}

TEST(TinyByteT5, WanPaddingAndDeterminism) {
  auto a = make_tiny_byte_t5(7, 32, torch::kFloat32, EncoderPlacement{});
  auto b = make_tiny_byte_t5(7, 32, torch::kFloat32, EncoderPlacement{});
  auto c = make_tiny_byte_t5(8, 32, torch::kFloat32, EncoderPlacement{});
  const auto ea = a->encode("a cat");
  EXPECT_EQ(ea.embeds.sizes(), (std::vector<std::int64_t>{1, 512, 32}));
  EXPECT_EQ(ea.embeds.scalar_type(), torch::kFloat32);
  EXPECT_EQ(ea.mask.sizes(), (std::vector<std::int64_t>{1, 512}));
  EXPECT_EQ(ea.mask.sum().item<std::int64_t>(), 6);  // 5 bytes + </s>
  EXPECT_EQ(ea.mask.narrow(1, 0, 6).min().item<std::int64_t>(), 1);
  EXPECT_EQ(ea.embeds.narrow(1, 6, 506).abs().max().item<float>(),
            0.0F);  // zeros beyond the valid tokens
  EXPECT_GT(ea.embeds.narrow(1, 0, 6).abs().min().item<float>(), 0.0F);
  EXPECT_FALSE(ea.embeds_2.defined());
  // Same seed, same weights and outputs; another seed differs.
  EXPECT_TRUE(torch::equal(b->encode("a cat").embeds, ea.embeds));
  EXPECT_FALSE(torch::equal(c->encode("a cat").embeds, ea.embeds));
  // The valid rows are the model's output for the token ids.
  c10::InferenceMode guard;
  const auto ids = torch::tensor({{100, 35, 102, 100, 119, 1}}, torch::kLong);
  EXPECT_TRUE(torch::allclose(ea.embeds.narrow(1, 0, 6), a->model()->forward(ids), 1e-6, 1e-7));
}

TEST(TinyByteT5, PromptCleaningTruncationAndEmptyPrompt) {
  auto enc = make_tiny_byte_t5(1, 16, torch::kFloat32, EncoderPlacement{});
  EXPECT_TRUE(torch::equal(enc->encode("  a   cat ").embeds, enc->encode("a cat").embeds));
  const auto long_prompt = enc->encode(std::string(700, 'x'));
  EXPECT_EQ(long_prompt.mask.sum().item<std::int64_t>(), 512);
  const auto empty = enc->encode("");
  EXPECT_EQ(empty.mask.sum().item<std::int64_t>(), 1);  // </s> alone
  EXPECT_EQ(enc->tokenizer().encode(std::string(700, 'x'), 512).back(), ByT5Tokenizer::kEosId);
}

TEST(TinyByteT5, OffloadedWeightsStayOnTheCpu) {
  auto enc = make_tiny_byte_t5(1, 16, torch::kBFloat16, EncoderPlacement{torch::kCPU, true});
  (void)enc->encode("x");
  for (const auto& p : enc->model()->parameters()) {
    EXPECT_TRUE(p.device().is_cpu());
    EXPECT_EQ(p.scalar_type(), torch::kBFloat16);
  }
}

TEST(WanTextEncoder, UmT5FixtureWithoutATokenizerFolderIsAClearError) {
  // A snapshot needs tokenizer/spiece.model: the fixture has only the model.
  EXPECT_THROW(
      (void)load_wan_text_encoder(kRef / "umt5_encoder", torch::kFloat32, EncoderPlacement{}), Error);
}

// A snapshot laid out as Wan's: tokenizer/spiece.model (a word model) and text_encoder/ (the
// umt5_encoder fixture).
TEST(WanTextEncoder, SnapshotFoldersEndToEnd) {
  OMNIDP_REQUIRE_FIXTURES();
  omnidp::test::TempDir snap;
  fs::create_directories(snap.path() / "tokenizer");
  fs::create_directories(snap.path() / "text_encoder");
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(kRef / "umt5_encoder" / f, snap.path() / "text_encoder" / f);
  }
  snap.write("tokenizer/spiece.model",
             unigram_word_model({"the", "cat", "walks", "on", "grass", "dog", "runs"}).serialize());
  auto enc = load_wan_text_encoder(snap.path(), torch::kFloat32, EncoderPlacement{});
  const SentencePieceTokenizer tok(snap.path() / "tokenizer" / "spiece.model");
  const auto ids = std::vector<std::int64_t>{tok.piece_id("\xE2\x96\x81the"),
                                             tok.piece_id("\xE2\x96\x81"
                                                          "cat"),
                                             1};
  const auto e = enc->encode("  the   cat ");  // prompt_clean folds the whitespace
  EXPECT_EQ(e.embeds.sizes(), (std::vector<std::int64_t>{1, 512, 64}));
  EXPECT_EQ(e.mask.sum().item<std::int64_t>(), 3);
  c10::InferenceMode guard;
  const auto expected = enc->model()->forward(torch::tensor(ids, torch::kLong).view({1, 3}));
  EXPECT_TRUE(torch::allclose(e.embeds.narrow(1, 0, 3), expected, 1e-6, 1e-7));
  EXPECT_EQ(e.embeds.narrow(1, 3, 509).abs().max().item<float>(), 0.0F);
}

// HunyuanVideo-1.5's prompt handling over the fixture models, with the byte tokenizer standing
// in for the Qwen2 vocabulary (ids < 384 < the fixture model's 512).
class Hv15PromptEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OMNIDP_REQUIRE_FIXTURES();
    Hv15PromptEncoder::Options options;
    options.max_length = 64;
    text_model_ = load_qwen25vl_text(kRef / "qwen25vl_text", torch::kFloat32, torch::kCPU);
    glyph_model_ = load_t5_encoder(kRef / "byt5_encoder", torch::kFloat32, torch::kCPU);
    encoder_ = std::make_unique<Hv15PromptEncoder>(std::make_unique<ByT5Tokenizer>(), text_model_,
                                                   std::make_unique<ByT5Tokenizer>(), glyph_model_,
                                                   options);
  }
  Qwen25VLTextModel text_model_{nullptr};
  T5EncoderModel glyph_model_{nullptr};
  std::unique_ptr<Hv15PromptEncoder> encoder_;
};

TEST_F(Hv15PromptEncoderTest, CropsTheTemplateAndTakesHiddenStateMinus3) {
  const std::string prompt = "a cat";
  const auto e = encoder_->encode(prompt);
  EXPECT_EQ(e.embeds.sizes(), (std::vector<std::int64_t>{1, 64, 64}));
  EXPECT_EQ(e.mask.sizes(), (std::vector<std::int64_t>{1, 64}));
  const auto ids = ByT5Tokenizer().encode(hv15_chat_text(prompt, hv15_system_message()), 64 + 108);
  ASSERT_GT(ids.size(), 108U + 64U - 1);  // the long system message fills the window
  EXPECT_EQ(e.mask.sum().item<std::int64_t>(), 64);
  c10::InferenceMode guard;
  const auto full = text_model_->hidden_state(torch::tensor(ids, torch::kLong).view({1, -1}), {}, -3);
  EXPECT_TRUE(torch::allclose(e.embeds, full.narrow(1, 108, 64), 1e-6, 1e-7));
}

TEST_F(Hv15PromptEncoderTest, GlyphEmbeddingsOnlyForQuotedText) {
  const auto none = encoder_->encode("a cat");
  EXPECT_EQ(none.embeds_2.sizes(), (std::vector<std::int64_t>{1, 256, 64}));
  EXPECT_EQ(none.mask_2.sum().item<std::int64_t>(), 0);
  EXPECT_EQ(none.embeds_2.abs().max().item<float>(), 0.0F);

  const auto quoted = encoder_->encode("a sign saying \"OPEN\"");
  const std::string glyph = "Text \"OPEN\". ";
  EXPECT_EQ(quoted.mask_2.sum().item<std::int64_t>(), static_cast<std::int64_t>(glyph.size() + 1));
  c10::InferenceMode guard;
  const auto ids = ByT5Tokenizer().encode(glyph);
  const auto expected = glyph_model_->forward(torch::tensor(ids, torch::kLong).view({1, -1}));
  const auto n = static_cast<std::int64_t>(ids.size());
  EXPECT_TRUE(torch::allclose(quoted.embeds_2.narrow(1, 0, n), expected, 1e-6, 1e-7));
  EXPECT_EQ(quoted.embeds_2.narrow(1, n, 256 - n).abs().max().item<float>(), 0.0F);
}

TEST_F(Hv15PromptEncoderTest, EmptyPromptIsASpace) {
  EXPECT_TRUE(torch::equal(encoder_->encode("").embeds, encoder_->encode(" ").embeds));
}

}  // namespace
}  // namespace omnidp::models::text
