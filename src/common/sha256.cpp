#include "omnidp/common/sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp {

struct Sha256::Ctx {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md.get(), EVP_sha256(), nullptr) != 1) {
    throw RuntimeError("EVP_DigestInit_ex(sha256) failed");
  }
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::uint8_t> bytes) {
  if (EVP_DigestUpdate(ctx_->md.get(), bytes.data(), bytes.size()) != 1) {
    throw RuntimeError("EVP_DigestUpdate failed");
  }
}

void Sha256::update(std::string_view text) {
  update(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

Digest Sha256::finish() {
  Digest out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md.get(), out.data(), &len) != 1 || len != out.size()) {
    throw RuntimeError("EVP_DigestFinal_ex failed");
  }
  return out;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

std::string sha256_hex(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  const Digest d = h.finish();
  return to_hex(d);
}

std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot open for reading");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n > 0) h.update(std::span(reinterpret_cast<const std::uint8_t*>(buf.data()), n));
  }
  if (in.bad()) throw IoError(path.string(), "read failed");
  const Digest d = h.finish();
  return to_hex(d);
}

}  // namespace omnidp
