// libFuzzer target for the SentencePiece model reader and the tokenizer built on it (built by
// scripts/fuzz.sh with clang, -fsanitize=fuzzer,address,undefined; not part of the CMake build).
//
// Input: a serialized ModelProto (spiece.model). Any input may be rejected with a WeightsError;
// an accepted model becomes a tokenizer that encodes a few texts (and the input's own bytes as
// text) without crashing, each id inside the vocabulary. Any other exception, a crash or a
// sanitizer report is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace text = omnidp::models::text;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto model = text::SentencePieceModel::parse(bytes, "fuzz");
    const text::SentencePieceTokenizer tok(model, {}, "fuzz");
    const std::string texts[] = {"a cat  walks\t",
                                 "\xEF\xBC\xA1\xE2\x96\x81\xFF\xC0\x80 \xF0\x9F\xA6\x8A",
                                 std::string(bytes.substr(0, 256))};
    for (const auto& t : texts) {
      for (const auto id : tok.encode(t, 64)) {
        check(id >= 0 && static_cast<std::size_t>(id) < model.pieces.size());
      }
    }
  } catch (const omnidp::WeightsError&) {
  }
  return 0;
}
