// libomnidp_sentencepiece_shim.so: SentencePiece behind a C ABI (see sentencepiece_shim.hpp).
// Loaded at run time by sentencepiece_tokenizer.cpp; never linked into an executable.

#include "sentencepiece_shim.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

void set_error(char* error, std::size_t size, const std::string& message) {
  if (error == nullptr || size == 0) return;
  const std::size_t n = std::min(size - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

const sentencepiece::SentencePieceProcessor& processor_of(const void* p) {
  return *static_cast<const sentencepiece::SentencePieceProcessor*>(p);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* omnidp_spm_open(const char* model_file, char* error,
                                                             std::size_t error_size) {
  try {
    auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = processor->Load(model_file);
    if (!status.ok()) {
      set_error(error, error_size, status.ToString());
      return nullptr;
    }
    return processor.release();
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
    return nullptr;
  }
}

__attribute__((visibility("default"))) void omnidp_spm_close(void* processor) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(processor);
}

__attribute__((visibility("default"))) int omnidp_spm_encode(const void* processor, const char* text,
                                                             std::size_t length, std::int32_t* ids,
                                                             std::size_t capacity, std::size_t* count,
                                                             char* error, std::size_t error_size) {
  try {
    std::vector<int> out;
    const auto status = processor_of(processor).Encode(std::string_view(text, length), &out);
    if (!status.ok()) {
      set_error(error, error_size, status.ToString());
      return 1;
    }
    *count = out.size();
    for (std::size_t i = 0; i < out.size() && i < capacity; ++i) ids[i] = out[i];
    return 0;
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
    return 1;
  }
}

__attribute__((visibility("default"))) std::int32_t omnidp_spm_eos_id(const void* processor) {
  return processor_of(processor).eos_id();
}

__attribute__((visibility("default"))) std::int32_t omnidp_spm_pad_id(const void* processor) {
  return processor_of(processor).pad_id();
}

__attribute__((visibility("default"))) std::int32_t omnidp_spm_piece_to_id(const void* processor,
                                                                           const char* piece) {
  return processor_of(processor).PieceToId(piece);
}

__attribute__((visibility("default"))) int omnidp_spm_train(const char* args, char* error,
                                                            std::size_t error_size) {
  try {
    const auto status = sentencepiece::SentencePieceTrainer::Train(args);
    if (!status.ok()) {
      set_error(error, error_size, status.ToString());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
    return 1;
  }
}

}  // extern "C"
