// Block: a 128-bit value, the unit of the garbled circuits and oblivious transfers of the secure
// comparison (wire labels, hash outputs, rows of the OT extension matrix). Internal to crypto/.
//
// In memory a Block is 16 bytes, `lo` first, each word little-endian (static_assert below): the
// byte string fixed-key AES reads and the wire encoding (EncodeBlock) are the same bytes.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace fedanon::crypto::mpc {

static_assert(std::endian::native == std::endian::little,
              "Block's memory layout is its wire encoding only on little-endian machines");

struct Block {
  uint64_t lo = 0;
  uint64_t hi = 0;

  friend Block operator^(Block a, Block b) { return {a.lo ^ b.lo, a.hi ^ b.hi}; }
  Block& operator^=(Block b) {
    lo ^= b.lo;
    hi ^= b.hi;
    return *this;
  }
  friend bool operator==(Block a, Block b) = default;
  // The point-and-permute bit.
  bool Lsb() const { return (lo & 1) != 0; }
};
static_assert(sizeof(Block) == 16);

// `b` when `bit` is set, zero otherwise, without a branch on `bit`.
inline Block SelectIf(bool bit, Block b) {
  const uint64_t mask = 0 - static_cast<uint64_t>(bit);
  return {b.lo & mask, b.hi & mask};
}

inline constexpr size_t kBlockBytes = 16;

inline void AppendBlock(Block b, std::string* out) {
  out->append(reinterpret_cast<const char*>(&b), kBlockBytes);
}
// Reads 16 bytes at `p` (the caller has checked the length).
inline Block LoadBlock(const char* p) {
  Block b;
  std::memcpy(&b, p, kBlockBytes);
  return b;
}

}  // namespace fedanon::crypto::mpc
