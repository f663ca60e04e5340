#pragma once
// SHA-256 through OpenSSL's EVP interface. Sha256 is an incremental hasher (move-only, owns
// the EVP_MD_CTX); sha256_hex() hashes one buffer. Thread-safe per instance.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace omnidp {

using Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::uint8_t> bytes);
  void update(std::string_view text);
  // Finishes the hash; the hasher must not be updated afterwards.
  [[nodiscard]] Digest finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

[[nodiscard]] std::string to_hex(std::span<const std::uint8_t> bytes);
[[nodiscard]] std::string sha256_hex(std::span<const std::uint8_t> bytes);
[[nodiscard]] std::string sha256_hex(std::string_view text);
// Streams the file; throws IoError if it cannot be read.
[[nodiscard]] std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace omnidp
