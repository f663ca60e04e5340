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

}  // namespace
}  // namespace omnidp
