#pragma once
// The set of request ids seen in a manifest, for duplicate detection across a whole file
// (10^6 ids and more) in little memory: each id is kept as the first 16 bytes of its SHA-256
// plus the line it was first seen on (20 bytes a slot) in an open-addressing table that stays
// at most 3/4 full. 10^6 ids: 2^21 slots = 40 MiB (docs/manifest.md). Two different ids share
// a 128-bit prefix with probability ~n^2 / 2^129 (3e-27 for n = 10^6): negligible.
// Not thread-safe; move-only by value semantics of std::vector.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace omnidp {

class IdSet {
 public:
  IdSet();

  // Adds `id` first seen on `line` (1-based). Returns 0 if the id is new, else the line it
  // was first added with (lines above 2^32-2 are stored as 4294967295).
  [[nodiscard]] std::size_t insert(std::string_view id, std::size_t line);

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // Bytes of the table (the set's whole footprint apart from the object itself).
  [[nodiscard]] std::size_t bytes() const noexcept { return slots_.size() * sizeof(Slot); }

 private:
  struct Slot {
    std::array<std::uint32_t, 4> digest;  // first 16 bytes of SHA-256(id)
    std::uint32_t line;                   // 0 = empty slot
  };
  static_assert(sizeof(Slot) == 20);

  void grow();
  [[nodiscard]] std::size_t find_slot(const std::array<std::uint32_t, 4>& digest) const noexcept;

  std::vector<Slot> slots_;  // power-of-two size
  std::size_t size_ = 0;
};

}  // namespace omnidp
