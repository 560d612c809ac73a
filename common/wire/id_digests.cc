#include "common/wire/id_digests.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::wire {
namespace {

// A 16-byte digest as two big-endian words: the pairs order as the digests' bytes do, and
// sorting them moves 16-byte values instead of comparing strings through pointers.
struct Digest128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator<(const Digest128& a, const Digest128& b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }
  friend bool operator==(const Digest128& a, const Digest128& b) = default;
};

uint64_t LoadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void StoreBigEndian64(uint64_t v, std::string* out) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

absl::StatusOr<std::vector<Digest128>> Load(std::string_view packed, std::string_view what) {
  if (packed.size() % kIdDigestBytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " of ", packed.size(),
                                                   " bytes is not a multiple of ", kIdDigestBytes));
  }
  std::vector<Digest128> v;
  v.reserve(packed.size() / kIdDigestBytes);
  for (size_t i = 0; i < packed.size(); i += kIdDigestBytes) {
    v.push_back({LoadBigEndian64(packed.data() + i), LoadBigEndian64(packed.data() + i + 8)});
  }
  return v;
}

}  // namespace

std::string IdBatchPurpose(const std::string& run, const std::string& origin, size_t hop,
                           uint32_t batch, uint32_t batches) {
  return absl::StrCat("id-batch:", origin, ":run ", run, ":hop ", hop, ":", batch, "/", batches);
}

std::string IdDigestsPurpose(const std::string& run, const std::string& origin, uint32_t batch,
                             uint32_t batches) {
  return absl::StrCat("id-full:", origin, ":run ", run, ":", batch, "/", batches);
}

absl::StatusOr<std::string> CommonDigests(const std::vector<std::string>& packed_lists) {
  if (packed_lists.empty()) return std::string();
  // Sorted 16-byte values instead of hash maps of strings: 16 bytes per digest besides the lists
  // themselves, and sorting gives the canonical order directly.
  std::vector<Digest128> common;
  for (size_t i = 0; i < packed_lists.size(); ++i) {
    ASSIGN_OR_RETURN(std::vector<Digest128> list, Load(packed_lists[i], "an ID digest list"));
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    if (i == 0) {
      common = std::move(list);
      continue;
    }
    std::vector<Digest128> both;
    std::set_intersection(common.begin(), common.end(), list.begin(), list.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  std::string out;
  out.reserve(common.size() * kIdDigestBytes);
  for (const Digest128& d : common) {
    StoreBigEndian64(d.hi, &out);
    StoreBigEndian64(d.lo, &out);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> PositionsInCommon(std::string_view own,
                                                       std::string_view common) {
  ASSIGN_OR_RETURN(const std::vector<Digest128> mine, Load(own, "this party's digest list"));
  ASSIGN_OR_RETURN(const std::vector<Digest128> all, Load(common, "the common digests"));
  for (size_t c = 1; c < all.size(); ++c) {
    if (!(all[c - 1] < all[c])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the common digests are not strictly ascending (digest ", c, " of ", all.size(), ")"));
    }
  }
  // This party's list sorted by digest (with each item's place), then one merge.
  std::vector<std::pair<Digest128, size_t>> sorted;
  sorted.reserve(mine.size());
  for (size_t j = 0; j < mine.size(); ++j) sorted.emplace_back(mine[j], j);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> out(mine.size(), -1);
  size_t j = 0;
  for (size_t c = 0; c < all.size(); ++c) {
    while (j < sorted.size() && sorted[j].first < all[c]) ++j;
    if (j == sorted.size() || !(sorted[j].first == all[c])) {
      return absl::InvalidArgumentError(absl::StrCat("common digest ", c, " of ", all.size(),
                                                     " is not in this party's own list"));
    }
    out[sorted[j].second] = static_cast<int64_t>(c);
    ++j;
  }
  return out;
}

}  // namespace fedanon::wire
