#include "omnidp/manifest/id_set.hpp"

#include <cstring>
#include <limits>

#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace {

constexpr std::size_t kInitialSlots = 1024;

std::array<std::uint32_t, 4> id_digest(std::string_view id) {
  Sha256 hasher;
  hasher.update(id);
  const Digest full = hasher.finish();
  std::array<std::uint32_t, 4> out{};
  std::memcpy(out.data(), full.data(), sizeof(out));
  return out;
}

}  // namespace

IdSet::IdSet() : slots_(kInitialSlots, Slot{{}, 0}) {}

std::size_t IdSet::find_slot(const std::array<std::uint32_t, 4>& digest) const noexcept {
  // The digest is uniformly distributed: its first word is the hash. Linear probing.
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = digest[0] & mask;
  while (slots_[i].line != 0 && slots_[i].digest != digest) i = (i + 1) & mask;
  return i;
}

void IdSet::grow() {
  std::vector<Slot> old(slots_.size() * 2, Slot{{}, 0});
  old.swap(slots_);
  for (const Slot& slot : old) {
    if (slot.line != 0) slots_[find_slot(slot.digest)] = slot;
  }
}

std::size_t IdSet::insert(std::string_view id, std::size_t line) {
  const auto digest = id_digest(id);
  const std::size_t i = find_slot(digest);
  if (slots_[i].line != 0) return slots_[i].line;
  constexpr std::size_t kMaxLine = std::numeric_limits<std::uint32_t>::max();
  const std::size_t stored = line == 0 ? 1 : (line < kMaxLine ? line : kMaxLine);  // 0 = empty
  slots_[i] = Slot{digest, static_cast<std::uint32_t>(stored)};
  ++size_;
  if (size_ * 4 > slots_.size() * 3) grow();
  return 0;
}

}  // namespace omnidp
