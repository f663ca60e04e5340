#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"

#ifdef OMNIDP_HAVE_SENTENCEPIECE
#include <dlfcn.h>

#include "sentencepiece_shim.hpp"
#endif

namespace omnidp::models::text {
namespace fs = std::filesystem;

#ifdef OMNIDP_HAVE_SENTENCEPIECE

namespace {

// The shim library, loaded once per process and kept (never dlclose()d: processors created
// from it may live until exit).
struct Shim {
  OmnidpSpmOpen open = nullptr;
  OmnidpSpmClose close = nullptr;
  OmnidpSpmEncode encode = nullptr;
  OmnidpSpmSpecialId eos_id = nullptr;
  OmnidpSpmSpecialId pad_id = nullptr;
  OmnidpSpmPieceToId piece_to_id = nullptr;
  OmnidpSpmTrain train = nullptr;
  std::string error;  // why loading failed; empty when loaded
};

template <typename F>
F symbol(void* lib, const char* name, std::string& error) {
  void* p = dlsym(lib, name);
  if (p == nullptr && error.empty()) error = std::string("missing symbol ") + name;
  return reinterpret_cast<F>(p);
}

const Shim& shim() {
  static const Shim loaded = [] {
    Shim s;
#if defined(__SANITIZE_ADDRESS__)
    s.error =
        "SentencePiece is unavailable in sanitizer builds (its shim runs in a separate link "
        "namespace)";
#else
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("OMNIDP_SENTENCEPIECE_SHIM"); env != nullptr && *env != '\0') {
      candidates.emplace_back(env);
    }
    candidates.emplace_back(OMNIDP_SENTENCEPIECE_SHIM);  // the build tree's copy
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
      candidates.push_back(
          (exe.parent_path() / fs::path(OMNIDP_SENTENCEPIECE_SHIM).filename()).string());
    void* lib = nullptr;
    std::string tried;
    for (const auto& path : candidates) {
      // A new link-map namespace: SentencePiece keeps its own protobuf (sentencepiece_shim.hpp).
      lib = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why != nullptr ? why : "not loadable");
    }
    if (lib == nullptr) {
      s.error = "cannot load the SentencePiece shim (set OMNIDP_SENTENCEPIECE_SHIM):" + tried;
      return s;
    }
    s.open = symbol<OmnidpSpmOpen>(lib, kOmnidpSpmOpen, s.error);
    s.close = symbol<OmnidpSpmClose>(lib, kOmnidpSpmClose, s.error);
    s.encode = symbol<OmnidpSpmEncode>(lib, kOmnidpSpmEncode, s.error);
    s.eos_id = symbol<OmnidpSpmSpecialId>(lib, kOmnidpSpmEosId, s.error);
    s.pad_id = symbol<OmnidpSpmSpecialId>(lib, kOmnidpSpmPadId, s.error);
    s.piece_to_id = symbol<OmnidpSpmPieceToId>(lib, kOmnidpSpmPieceToId, s.error);
    s.train = symbol<OmnidpSpmTrain>(lib, kOmnidpSpmTrain, s.error);
#endif
    return s;
  }();
  return loaded;
}

const Shim& loaded_shim(const char* context) {
  const auto& s = shim();
  if (!s.error.empty()) throw ModelError("SentencePiece unavailable: " + s.error, {context});
  return s;
}

}  // namespace

// The processor handle of the shim (RAII, move-only through unique_ptr<Impl>).
struct SentencePieceTokenizer::Impl {
  explicit Impl(void* p) : processor(p) {}
  ~Impl() { shim().close(processor); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  void* processor;
};

bool SentencePieceTokenizer::available() noexcept { return shim().error.empty(); }

void SentencePieceTokenizer::train_model(const std::string& args) {
  const auto& s = loaded_shim("SentencePieceTrainer");
  std::array<char, 1024> error{};
  if (s.train(args.c_str(), error.data(), error.size()) != 0) {
    throw ModelError(std::string("SentencePiece training failed: ") + error.data());
  }
}

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, AddedTokens added)
    : added_(std::move(added)) {
  const auto& s = loaded_shim(model_file.c_str());
  if (!fs::is_regular_file(model_file))
    throw WeightsError(model_file.string(), "SentencePiece model not found");
  std::array<char, 1024> error{};
  void* processor = s.open(model_file.c_str(), error.data(), error.size());
  if (processor == nullptr) {
    throw WeightsError(model_file.string(),
                       std::string("cannot load the SentencePiece model: ") + error.data());
  }
  impl_ = std::make_unique<Impl>(processor);
  eos_id_ = s.eos_id(processor) >= 0 ? s.eos_id(processor) : added_.id_of("</s>");
  if (eos_id_ < 0)
    throw WeightsError(model_file.string(), "the SentencePiece model has no </s> (eos) piece");
  pad_id_ = s.pad_id(processor) >= 0 ? s.pad_id(processor)
                                     : std::max<std::int64_t>(added_.id_of("<pad>"), 0);
}

std::vector<std::int64_t> SentencePieceTokenizer::encode(const std::string& text,
                                                         std::size_t max_length) const {
  const auto& s = shim();
  std::vector<std::int64_t> ids;
  std::vector<std::int32_t> buffer(64);
  std::array<char, 1024> error{};
  for (const auto& piece : added_.split(text)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    std::size_t count = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (s.encode(impl_->processor, piece.text.data(), piece.text.size(), buffer.data(),
                   buffer.size(), &count, error.data(), error.size()) != 0) {
        throw InputError("<prompt>",
                         std::string("SentencePiece cannot encode the text: ") + error.data());
      }
      if (count <= buffer.size()) break;
      buffer.resize(count);
    }
    ids.insert(ids.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(count));
  }
  truncate_for_special_tokens(ids, max_length, 1);
  if (ids.empty() || ids.back() != eos_id_) ids.push_back(eos_id_);
  return ids;
}

std::int64_t SentencePieceTokenizer::piece_id(const std::string& piece) const {
  return shim().piece_to_id(impl_->processor, piece.c_str());
}

#else  // no SentencePiece in this build

struct SentencePieceTokenizer::Impl {};

bool SentencePieceTokenizer::available() noexcept { return false; }

void SentencePieceTokenizer::train_model(const std::string& /*args*/) {
  throw ModelError(
      "this build has no SentencePiece (install libsentencepiece-dev and reconfigure)");
}

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, AddedTokens added)
    : added_(std::move(added)) {
  throw ModelError(
      "this build has no SentencePiece (install libsentencepiece-dev and reconfigure): "
      "the UMT5 tokenizer is unavailable",
      {model_file.string()});
}

std::vector<std::int64_t> SentencePieceTokenizer::encode(const std::string& /*text*/,
                                                         std::size_t /*max_length*/) const {
  throw ModelError("this build has no SentencePiece");
}

std::int64_t SentencePieceTokenizer::piece_id(const std::string& /*piece*/) const {
  throw ModelError("this build has no SentencePiece");
}

#endif

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_folder(const fs::path& dir) {
  return std::make_unique<SentencePieceTokenizer>(dir / "spiece.model",
                                                  AddedTokens::from_folder(dir));
}

}  // namespace omnidp::models::text
