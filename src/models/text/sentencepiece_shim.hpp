#pragma once
// The C ABI between omnidp::text and libomnidp_sentencepiece_shim.so (private to src/models/text).
//
// Why a shim: Debian's libsentencepiece exports its bundled protobuf-lite 3.14 symbols, and
// libtorch loads libprotobuf 3.21; linked into one process the two interpose each other and
// the process aborts at start-up. The shim links libsentencepiece and is loaded with
// dlmopen(LM_ID_NEWLM): a separate link-map namespace (its own libstdc++ and libc copies), so
// SentencePiece binds to its own protobuf and nothing of it reaches the main namespace.
// (RTLD_DEEPBIND is not enough: SentencePiece's logging then writes to an unconstructed
// std::cerr, the executable holding the copy-relocated one.) Only C types cross this ABI;
// memory is freed on the side that allocated it and no exception leaves the shim.
//
// Every function reports failure by returning non-zero (or null) and writing a message into
// `error` (size `error_size`, always NUL-terminated).

#include <cstddef>
#include <cstdint>

extern "C" {

using OmnidpSpmOpen = void* (*)(const char* model_file, char* error, std::size_t error_size);
using OmnidpSpmClose = void (*)(void* processor);
// Writes at most `capacity` ids; `*count` is the number of ids of the text (may exceed capacity).
using OmnidpSpmEncode = int (*)(const void* processor, const char* text, std::size_t length,
                                std::int32_t* ids, std::size_t capacity, std::size_t* count,
                                char* error, std::size_t error_size);
using OmnidpSpmSpecialId = std::int32_t (*)(const void* processor);  // -1 when the model has none
using OmnidpSpmPieceToId = std::int32_t (*)(const void* processor, const char* piece);
using OmnidpSpmTrain = int (*)(const char* args, char* error, std::size_t error_size);

}  // extern "C"

// Symbol names exported by the shim.
inline constexpr const char* kOmnidpSpmOpen = "omnidp_spm_open";
inline constexpr const char* kOmnidpSpmClose = "omnidp_spm_close";
inline constexpr const char* kOmnidpSpmEncode = "omnidp_spm_encode";
inline constexpr const char* kOmnidpSpmEosId = "omnidp_spm_eos_id";
inline constexpr const char* kOmnidpSpmPadId = "omnidp_spm_pad_id";
inline constexpr const char* kOmnidpSpmPieceToId = "omnidp_spm_piece_to_id";
inline constexpr const char* kOmnidpSpmTrain = "omnidp_spm_train";
