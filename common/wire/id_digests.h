// The ID digests of vertical ID matching as both roles handle them: a list's fully encrypted ids
// as packed 16-byte digests (party/id_matching.h FinalDigests), the intersection of every
// party's list that the leader computes, and a party's check of the intersection it is handed
// against its own list. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fedanon::wire {

inline constexpr size_t kIdDigestBytes = 16;

// The walk of list o among n data parties (ring order): hop 0 at o, hop h at party (o + h) % n
// for 0 < h < n, and with three or more parties hop n at o again, which removes the blinding it
// put on at hop 0. The last hop (this one's output is the digests) is n - 1 with two parties
// (pairwise is all-party then: no blinding needed), n with more.
inline bool IdListsBlinded(size_t parties) { return parties >= 3; }
inline size_t IdLastHop(size_t parties) { return parties >= 3 ? parties : parties - 1; }

// What a batch's sealed box is bound to, besides job, run, round, sender and receiver: the list's
// origin, the hop that produced it (0: the owner's encryption), the batch and the count.
std::string IdBatchPurpose(const std::string& run, const std::string& origin, size_t hop,
                           uint32_t batch, uint32_t batches);
// The last hop's digests of a batch, sealed for the leader (and for the owner with two parties).
std::string IdDigestsPurpose(const std::string& run, const std::string& origin, uint32_t batch,
                             uint32_t batches);

// The digests present in every one of `packed_lists` (each a concatenation of 16-byte digests),
// sorted ascending (as bytes), each once, packed. InvalidArgument for a list whose length is not
// a multiple of 16; empty for no lists.
absl::StatusOr<std::string> CommonDigests(const std::vector<std::string>& packed_lists);

// For every digest of `own` (packed, in the party's list order), its position in `common` or -1;
// `common` must be strictly ascending and each of its digests must occur in `own` (a party
// refuses an intersection it cannot have been part of). InvalidArgument naming the problem.
absl::StatusOr<std::vector<int64_t>> PositionsInCommon(std::string_view own,
                                                       std::string_view common);

}  // namespace fedanon::wire
