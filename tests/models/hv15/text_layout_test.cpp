// HunyuanVideo-1.5's text-token layouts on small hand-made tokens: the padding a batch
// resolves to, the reference layout's valid-first order, the ragged entries and CFG's two
// branches as one padded batch.
#include "omnidp/models/hv15/text_layout.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp::models::hv15 {
namespace {

// [1, n, 1] tokens with values `v`.
torch::Tensor column(std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return torch::tensor(v).view({1, n, 1});
}

torch::Tensor flags(std::vector<int> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return torch::tensor(v).view({1, n}).to(torch::kBool);
}

TEST(Hv15TextLayout, AutomaticPaddingDropsForOneEntryAndIsRaggedForMore) {
  EXPECT_EQ(resolve_text_padding(TextPadding::automatic, 1), TextPadding::drop);
  EXPECT_EQ(resolve_text_padding(TextPadding::automatic, 2), TextPadding::ragged);
  EXPECT_EQ(resolve_text_padding(TextPadding::mask, 1), TextPadding::mask);
  EXPECT_EQ(resolve_text_padding(TextPadding::ragged, 1), TextPadding::ragged);
  try {
    (void)resolve_text_padding(TextPadding::drop, 2);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("text padding 'drop' needs batch 1, got 2"),
              std::string::npos);
  }
}

TEST(Hv15TextLayout, TheReferenceLayoutPutsEverySourcesValidTokensFirst) {
  // image (all valid), glyph (1 of 3 valid), Qwen (2 of 3 valid, the middle one padding)
  const auto out = valid_tokens_first({{column({1, 2}), flags({1, 1})},
                                       {column({10, 11, 12}), flags({0, 1, 0})},
                                       {column({20, 21, 22}), flags({1, 0, 1})}});
  EXPECT_TRUE(torch::equal(out.tokens.flatten(),
                           torch::tensor({1.F, 2.F, 11.F, 20.F, 22.F, 10.F, 12.F, 21.F})));
  EXPECT_TRUE(torch::equal(out.keys.mask, flags({1, 1, 1, 1, 1, 0, 0, 0})));
  EXPECT_TRUE(out.keys.lengths.empty());
}

TEST(Hv15TextLayout, RaggedEntriesArePaddedAtTheEnd) {
  const auto out = pad_entries({column({1, 2, 3}), column({4})});
  EXPECT_EQ(out.tokens.sizes(), (std::vector<std::int64_t>{2, 3, 1}));
  EXPECT_TRUE(torch::equal(out.tokens.flatten(), torch::tensor({1.F, 2.F, 3.F, 4.F, 0.F, 0.F})));
  EXPECT_EQ(out.keys.lengths, (std::vector<std::int64_t>{3, 1}));
  EXPECT_TRUE(
      torch::equal(out.keys.mask, torch::tensor({1, 1, 1, 1, 0, 0}).view({2, 3}).to(torch::kBool)));
}

TEST(Hv15TextLayout, TwoBranchesBecomeOnePaddedBatch) {
  const auto tokens = pad_cat(column({1}), column({2, 3}));
  EXPECT_TRUE(torch::equal(tokens.flatten(), torch::tensor({1.F, 0.F, 2.F, 3.F})));
  const auto masks = pad_cat(torch::ones({1, 2}), torch::ones({1, 1}));
  EXPECT_TRUE(torch::equal(masks, torch::tensor({{1.F, 1.F}, {1.F, 0.F}})));
}

}  // namespace
}  // namespace omnidp::models::hv15
