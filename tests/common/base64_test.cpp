#include "omnidp/common/base64.hpp"

#include <gtest/gtest.h>

#include <string>

namespace omnidp {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), plain) << encoded;
  }
}

TEST(Base64, EveryByteValueRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256 * 3 + 1; ++i) bytes.push_back(static_cast<char>(i * 37 % 256));
  const auto encoded = base64_encode(bytes);
  EXPECT_EQ(encoded.size(), (bytes.size() + 2) / 3 * 4);
  EXPECT_EQ(base64_decode(encoded), bytes);
}

TEST(Base64, MalformedTextIsRejected) {
  EXPECT_EQ(base64_decode("Zg="), std::nullopt);         // not a multiple of 4
  EXPECT_EQ(base64_decode("Zg=a"), std::nullopt);        // padding in the middle
  EXPECT_EQ(base64_decode("Z==="), std::nullopt);        // three padding characters
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), std::nullopt);  // whitespace
  EXPECT_EQ(base64_decode("Zm-v"), std::nullopt);        // the URL-safe alphabet
}

}  // namespace
}  // namespace omnidp
