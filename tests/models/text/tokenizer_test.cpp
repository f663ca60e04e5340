#include "omnidp/models/text/tokenizer.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {

using omnidp::test::TempDir;

using Pieces = std::vector<std::pair<std::string, std::int64_t>>;

Pieces pieces_of(const AddedTokens& added, const std::string& text) {
  Pieces out;
  for (const auto& p : added.split(text)) out.emplace_back(std::string(p.text), p.id);
  return out;
}

TEST(AddedTokens, SplitsPlainTextAndTokensInOrder) {
  AddedTokens added;
  added.add("</s>", 1);
  added.add("<pad>", 0);
  EXPECT_EQ(pieces_of(added, "a</s>b<pad>"),
            (Pieces{{"a", -1}, {"</s>", 1}, {"b", -1}, {"<pad>", 0}}));
  EXPECT_EQ(pieces_of(added, "</s></s>"), (Pieces{{"</s>", 1}, {"</s>", 1}}));
  EXPECT_EQ(pieces_of(added, "plain"), (Pieces{{"plain", -1}}));
  EXPECT_TRUE(pieces_of(added, "").empty());
  EXPECT_EQ(added.id_of("</s>"), 1);
  EXPECT_EQ(added.id_of("<s>"), -1);
  EXPECT_EQ(added.max_id(), 1);
}

TEST(AddedTokens, LongestTokenAtTheEarliestPositionWins) {
  AddedTokens added;
  added.add("<a>", 5);
  added.add("<a><b>", 6);
  added.add("b><", 7);
  EXPECT_EQ(pieces_of(added, "x<a><b>y"), (Pieces{{"x", -1}, {"<a><b>", 6}, {"y", -1}}));
  EXPECT_EQ(pieces_of(added, "<a>c"), (Pieces{{"<a>", 5}, {"c", -1}}));
}

TEST(AddedTokens, MergeReplacesTokensOfTheSameContent) {
  AddedTokens a;
  a.add("<x>", 1);
  AddedTokens b;
  b.add("<x>", 9);
  b.add("<y>", 10);
  a.merge(b);
  EXPECT_EQ(a.id_of("<x>"), 9);
  EXPECT_EQ(a.id_of("<y>"), 10);
  EXPECT_EQ(a.size(), 2U);
}

TEST(AddedTokens, FromFolderReadsTokenizerConfigFirst) {
  TempDir dir;
  dir.write("tokenizer_config.json",
            R"({"added_tokens_decoder": {"384": {"content": "<color-0>", "special": true},
                                         "385": {"content": "<en-font-0>", "special": true}}})");
  dir.write("added_tokens.json", R"({"<other>": 999})");
  const auto added = AddedTokens::from_folder(dir.path());
  EXPECT_EQ(added.size(), 2U);
  EXPECT_EQ(added.id_of("<color-0>"), 384);
  EXPECT_EQ(added.id_of("<en-font-0>"), 385);
  EXPECT_EQ(added.id_of("<other>"), -1);
}

TEST(AddedTokens, FromFolderFallsBackToTokenizerJsonThenAddedTokensJson) {
  TempDir a;
  a.write("tokenizer.json", R"({"added_tokens": [{"id": 151643, "content": "<|endoftext|>"},
                                                  {"id": 151644, "content": "<|im_start|>"}]})");
  const auto from_json = AddedTokens::from_folder(a.path());
  EXPECT_EQ(from_json.id_of("<|im_start|>"), 151644);
  EXPECT_EQ(from_json.id_of("<|endoftext|>"), 151643);

  TempDir b;
  b.write("added_tokens.json", R"({"<color-1>": 386})");
  EXPECT_EQ(AddedTokens::from_folder(b.path()).id_of("<color-1>"), 386);

  TempDir empty;
  EXPECT_TRUE(AddedTokens::from_folder(empty.path()).empty());
}

TEST(AddedTokens, MalformedFilesAreWeightsErrors) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"added_tokens_decoder": {"x": {"content": "<a>"}}})");
  EXPECT_THROW((void)AddedTokens::from_folder(dir.path()), WeightsError);
  TempDir broken;
  broken.write("tokenizer_config.json", "{not json");
  const std::string error =
      omnidp::test::error_of<WeightsError>([&] { (void)AddedTokens::from_folder(broken.path()); });
  EXPECT_NE(error.find("tokenizer_config.json"), std::string::npos) << error;
}

TEST(Tokenizer, TruncationKeepsRoomForSpecialTokens) {
  std::vector<std::int64_t> ids{1, 2, 3, 4, 5};
  truncate_for_special_tokens(ids, 4, 1);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2, 3}));
  truncate_for_special_tokens(ids, 0, 1);  // no limit
  EXPECT_EQ(ids.size(), 3U);
  truncate_for_special_tokens(ids, 2, 0);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2}));
}

}  // namespace
}  // namespace omnidp::models::text
