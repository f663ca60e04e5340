// omni-dp-bench-tokenizer: what the UMT5 (SentencePiece Unigram) tokenizer costs, and the ids it
// gives (docs/performance.md, "The UMT5 tokenizer").
//   omni-dp-bench-tokenizer --tokenizer DIR|FILE [--text T ...] [--strings strings.bin] [--repeat N]
// DIR: a Hugging Face tokenizer folder (spiece.model or tokenizer.json, and its added tokens);
// FILE: a spiece.model. Prints the load time, the ids of each --text (with </s>, as the Wan
// pipeline encodes a prompt), and with --strings (tests/models/text/data/sentencepiece) the time
// per encode over those strings and per KB of text.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using omnidp::models::text::SentencePieceTokenizer;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// strings.bin: LEB128 count, then per string its LEB128 length and bytes.
std::vector<std::string> read_strings(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  std::size_t at = 0;
  const auto number = [&] {
    std::uint64_t v = 0;
    for (unsigned shift = 0; at < bytes.size(); shift += 7) {
      const auto b = static_cast<std::uint8_t>(bytes[at++]);
      v |= static_cast<std::uint64_t>(b & 0x7FU) << shift;
      if ((b & 0x80U) == 0) return v;
    }
    throw omnidp::InputError(file.string(), "truncated");
  };
  std::vector<std::string> out(number());
  for (auto& str : out) {
    const auto n = number();
    if (n > bytes.size() - at) throw omnidp::InputError(file.string(), "truncated");
    str = bytes.substr(at, n);
    at += n;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "omni-dp-bench-tokenizer: the UMT5 (SentencePiece Unigram) tokenizer's cost and ids");
  std::string tokenizer;
  std::vector<std::string> texts;
  std::string strings_file;
  int repeat = 3;
  app.add_option("--tokenizer", tokenizer, "a tokenizer folder or a spiece.model")->required();
  app.add_option("--text", texts, "texts to print the ids of");
  app.add_option("--strings", strings_file, "strings.bin of the reference data: time every encode");
  app.add_option("--repeat", repeat, "passes over --strings (the best is printed)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto t0 = Clock::now();
    const auto tok = fs::is_directory(tokenizer)
                         ? SentencePieceTokenizer::from_folder(tokenizer)
                         : std::make_unique<SentencePieceTokenizer>(fs::path(tokenizer));
    std::printf("load %.1f ms (%zu pieces)\n", 1e3 * seconds_since(t0), tok->vocab_size());
    for (const auto& text : texts) {
      const auto t = Clock::now();
      const auto ids = tok->encode(text, 512);
      const double us = 1e6 * seconds_since(t);
      std::printf("%zu ids in %.1f us:", ids.size(), us);
      for (const auto id : ids) std::printf(" %lld", static_cast<long long>(id));
      std::printf("\n");
    }
    if (!strings_file.empty()) {
      const auto strings = read_strings(strings_file);
      std::size_t bytes = 0, ids = 0;
      double best = 1e30;
      for (int r = 0; r < repeat; ++r) {
        const auto t = Clock::now();
        ids = 0;
        bytes = 0;
        for (const auto& s : strings) {
          ids += tok->encode(s).size();
          bytes += s.size();
        }
        best = std::min(best, seconds_since(t));
      }
      std::printf("%zu strings, %.2f MB, %zu ids: %.3f s, %.1f us per string, %.1f us per KB\n",
                  strings.size(), static_cast<double>(bytes) / 1e6, ids, best,
                  1e6 * best / static_cast<double>(strings.size()),
                  1e6 * best / (static_cast<double>(bytes) / 1024.0));
    }
  } catch (const omnidp::Error& e) {
    std::fprintf(stderr, "omni-dp-bench-tokenizer: %s\n", e.what());
    return 2;
  }
  return 0;
}
