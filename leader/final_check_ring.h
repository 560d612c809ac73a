// The leader's side of the final check of a horizontal job (docs/threat-model.md, "Parties
// re-check what they apply"): it relays the parties' sealed boxes around the agreed ring — the
// sum of the global group counts of the final cut, masked by the ring's first party and sealed
// hop by hop, then the first party's total sealed for every other party — and asks every party
// to verify the privacy model on it. The leader reads nothing of it: every box is sealed for a
// party. Plain logic over a PartyChannel; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::leader {

struct FinalCheckRing {
  wire::PartyChannel* channel = nullptr;  // not owned
  std::string job_id;
  std::vector<std::string> ring;  // the data parties in the order agreed at Prepare
  uint32_t round = 0;
  absl::Duration timeout = absl::Seconds(60);
  std::function<absl::Status()> check = [] { return absl::OkStatus(); };  // e.g. cancellation
  uint64_t chunk_words = uint64_t{1} << 20;
};

// Runs the final check over `total_words` words (the layout of common/engine/final_check.h),
// with `updates` (state updates the parties have not received yet) applied first. OK when every
// party reports that the model holds; otherwise FailedPrecondition naming every party that
// refused and its reason ("final check: the parties refuse to release: party 'hospital-a':
// refuses to release: final check failed: {g} k=3: group (g=gb) holds 2 records, ...").
absl::Status RunFinalCheck(const FinalCheckRing& ring,
                           const std::vector<fedanon::v1::StateUpdate>& updates,
                           uint64_t total_words);

// The same with two data parties (ring of 2): the parties' secure comparisons
// (party/final_check_comparisons.h). Every comparison's six steps alternate between ring[1]
// (steps 1, 3, 5) and ring[0] (2, 4, 6), the leader relaying each sealed message to the other
// party; the number of comparisons is the parties' (both must give the same); then both report
// their verdict. The number of comparisons, or FailedPrecondition naming each party that refused
// and its reason, as RunFinalCheck.
absl::StatusOr<uint32_t> RunTwoPartyFinalCheck(const FinalCheckRing& ring,
                                               const std::vector<fedanon::v1::StateUpdate>& updates,
                                               uint64_t total_words);

}  // namespace fedanon::leader
