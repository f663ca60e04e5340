#include "omnidp/manifest/chunked_lines.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

std::vector<std::string> all_lines(ChunkedLines& lines, std::vector<bool>* too_long = nullptr) {
  std::vector<std::string> out;
  std::string text;
  bool over = false;
  while (lines.next(text, over)) {
    out.push_back(text);
    if (too_long != nullptr) too_long->push_back(over);
  }
  return out;
}

TEST(ChunkedLines, LineEndsByteOrderMarkAndALastLineWithoutItsEnd) {
  test::TempDir dir;
  const auto file = dir.write("m.jsonl",
                              "\xEF\xBB\xBF"
                              "a\r\nb\n\nc");
  ChunkedLines lines(file, 100);
  EXPECT_EQ(all_lines(lines), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(lines.line(), 4U);
  EXPECT_EQ(lines.line_offset(), 10U);  // "c" starts at byte 10
}

TEST(ChunkedLines, LongLinesAreSkippedWithoutBeingHeldAcrossChunks) {
  test::TempDir dir;
  const std::string huge(300 * 1024, 'x');  // several 64 KiB chunks
  const auto file = dir.write("m.jsonl", "ok\n" + huge + "\nlast\n");
  ChunkedLines lines(file, 1024);
  std::vector<bool> too_long;
  EXPECT_EQ(all_lines(lines, &too_long), (std::vector<std::string>{"ok", "", "last"}));
  EXPECT_EQ(too_long, (std::vector<bool>{false, true, false}));
  EXPECT_LT(lines.peak_buffer_bytes(), 64U * 1024 + 4 * 1024);
}

TEST(ChunkedLines, StartsAtAnOffsetAndCountsOnFromItsLine) {
  test::TempDir dir;
  const auto file = dir.write("m.jsonl", "a\nb\nc\n");
  ChunkedLines lines(file, 100, 2, 1);
  EXPECT_EQ(all_lines(lines), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(lines.line(), 3U);
  EXPECT_EQ(test::error_of<ManifestError>([&] { ChunkedLines folder(dir.path(), 100); }),
            dir.path().string() + ": is a folder, not a manifest file");
  EXPECT_EQ(
      test::error_of<ManifestError>([&] { ChunkedLines none(dir.path() / "no.jsonl", 100); }),
      (dir.path() / "no.jsonl").string() + ": cannot open the manifest: No such file or directory");
}

}  // namespace
}  // namespace omnidp
