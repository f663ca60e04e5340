#include "omnidp/common/error_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace omnidp {
namespace {

// A c10::Error's what() as libtorch builds it with a C++ backtrace (abridged to 3 frames of 30).
constexpr const char* kTorchWhat =
    "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1\n"
    "Exception raised from infer_size_impl at ../aten/src/ATen/ExpandUtils.cpp:31 (most recent "
    "call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in "
    "libc10.so)\n"
    "frame #1: at::infer_size(c10::ArrayRef<long>, c10::ArrayRef<long>) + 0x22 (0x7f in "
    "libtorch_cpu.so)\n"
    "frame #2: <unknown function> + 0x1234 (0x7f in libtorch_cpu.so)\n";

TEST(ErrorText, ABacktraceIsCutAfterTheMessage) {
  EXPECT_TRUE(has_backtrace(kTorchWhat));
  EXPECT_EQ(without_backtrace(kTorchWhat),
            "The size of tensor a (4) must match the size of tensor b (5) at non-singleton "
            "dimension 1");
}

TEST(ErrorText, FramesWithoutTheRaisedFromLineAreCutToo) {
  EXPECT_EQ(without_backtrace("request 'a': CUDA error\nmore context\nframe #0: x + 0x1\n"
                              "frame #1: y + 0x2\n"),
            "request 'a': CUDA error\nmore context");
}

TEST(ErrorText, AMessageWithoutABacktraceIsKeptWhole) {
  const std::string text = "two lines\nof message, frame #0: is not at a line start";
  EXPECT_FALSE(has_backtrace(text));
  EXPECT_EQ(without_backtrace(text), text);
  EXPECT_EQ(without_backtrace(""), "");
}

// Issue 52, class 15: a value the user gave, echoed in a one-line error, broke the line (a key
// path or an id holding a newline) or drove the terminal (an escape sequence). Every control
// character is written as an escape; printable text and UTF-8 stay as they are.
TEST(ErrorText, OneLineEscapesEveryControlCharacter) {
  EXPECT_EQ(one_line("scheduler.polcy\nx: unknown key"), "scheduler.polcy\\nx: unknown key");
  EXPECT_EQ(one_line("a\r\nb\tc"), "a\\r\\nb\\tc");
  EXPECT_EQ(one_line("\x1b[2Jcleared"), "\\x1b[2Jcleared");
  EXPECT_EQ(one_line(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(one_line("bell\a del\x7f"), "bell\\x07 del\\x7f");
  EXPECT_EQ(one_line("caf\xc3\xa9 \xe2\x9c\x93 'quoted' C:\\dir"),
            "caf\xc3\xa9 \xe2\x9c\x93 'quoted' C:\\dir");
  EXPECT_EQ(one_line(""), "");
  const std::string escaped = one_line("first\nsecond\rthird\x0b\x0c\x1f");
  EXPECT_EQ(escaped.find_first_of("\n\r\x0b\x0c\x1f"), std::string::npos) << escaped;
  EXPECT_EQ(escaped, "first\\nsecond\\rthird\\x0b\\x0c\\x1f");
}

}  // namespace
}  // namespace omnidp
