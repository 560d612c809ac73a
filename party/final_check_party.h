// The final check at a party (horizontal jobs): with three or more data parties, one more ring
// sum, without the leader, of the global group counts of the final cut; the ring's first party
// masks and unmasks it, every party re-checks the signed privacy model on the total and refuses
// to release unless it holds (common/engine/final_check.h, docs/threat-model.md "Final check").
// With two data parties the sum would hand each the other's counts: the two decide every group
// size and confidence bound by secure comparisons instead (party/final_check_comparisons.h), the
// leader relaying sealed messages, and each refuses to release unless all of them held.
// Once started, the cut is fixed (HorizontalTables::cut_fixed).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/final_check.h"
#include "fedanon/v1/federation.pb.h"
#include "party/final_check_comparisons.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class FinalCheckParty {
 public:
  FinalCheckParty(JobContext& ctx, HorizontalTables& tables, PayloadTransfer& transfer)
      : ctx_(ctx), tables_(tables), transfer_(transfer) {}

  // One chunk of one phase (sum, unmask, verify) of the check.
  absl::StatusOr<fedanon::v1::PartyMessage> Step(const fedanon::v1::LeaderMessage& request);
  // OK when this party may release rows or released counts now: the final check passed here, or
  // the job has two data parties and an ldiversity / tcloseness model, which the comparisons do
  // not check (the check is skipped; docs/threat-model.md).
  absl::Status ReleaseAllowed(const std::string& what) const;
  bool started() const { return check_.has_value(); }
  // Once the check passed (global recoding, three or more parties): its layout over the final cut
  // and the summed vector every party re-checked; null otherwise. The recipient compares the
  // released table with them (common/engine/released_table_check.h).
  // With two data parties there is no summed vector (the comparisons reveal no count): null.
  const engine::FinalCheckLayout* passed_layout() const {
    return check_ && check_->passed && !tables_.local && !two_parties() ? &check_->layout : nullptr;
  }
  const std::vector<uint64_t>* passed_total() const {
    return check_ && check_->passed && !tables_.local && !two_parties() ? &check_->total : nullptr;
  }

  // After a restart: the mask the ring's first party drew before it (the next Step takes it),
  // and the reply that left for an answered chunk.
  void RestoreMask(std::vector<uint64_t> mask) { restored_mask_ = std::move(mask); }
  void RestoreReply(const fedanon::v1::FinalCheckStep& step, fedanon::v1::PartyMessage reply);
  void ClearRestored() {
    restored_mask_.reset();
    restored_compare_seed_.clear();
  }
  // After a restart: an answered final-check request with the reply that left and the record's
  // extra (the ring's first party's mask; a comparison's seed, kept with this party's first step
  // of it), handed to the check again. A comparison step runs again from its instance's seed, so
  // it sends the same messages and an instance interrupted by the restart goes on.
  absl::Status Replay(const fedanon::v1::LeaderMessage& request,
                      const fedanon::v1::PartyMessage& stored, const std::string& extra);

 private:
  struct State {
    engine::FinalCheckLayout layout;
    std::string chain;             // the update chain (the cut) the check runs on
    std::vector<uint64_t> counts;  // this party's counts in the layout
    std::vector<uint64_t> mask;    // the ring's first party: its own random mask
    std::vector<uint64_t> total;   // the global vector, filled as its chunks arrive
    std::vector<bool> have;        // chunks of `total` received
    uint64_t chunk_words = 0;
    uint32_t chunks = 0;
    // (phase, chunk) -> (the request's bytes, the reply): one request, one answer.
    ReplyCache<uint64_t> answered;
    bool passed = false;
    std::string failure;  // the named reason when the model does not hold
    // Two data parties: the secure comparisons of this party's side.
    std::unique_ptr<FinalCheckComparisons> comparisons;
  };
  // One chunk of one phase, as Step checked it: where it lies in the vector and the purposes its
  // boxes are sealed under.
  struct Chunk {
    const fedanon::v1::FinalCheckStep& step;
    uint64_t round = 0;
    uint64_t offset = 0;
    uint64_t len = 0;
    std::string hop_purpose;
    std::string total_purpose;
  };
  // The sum: this party's counts added to the predecessor's hop (the first party: to its own
  // mask), sealed for the successor (the last party's for the first).
  absl::Status SumPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out);
  // The first party removes its mask from the last party's hop and seals the total for the others.
  absl::Status UnmaskPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out);
  // Every party checks the privacy model on the whole total, once every chunk is there (two
  // data parties: reports the comparisons' verdict).
  absl::Status VerifyPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out);
  // Two data parties: one step of one secure comparison.
  absl::Status ComparePhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out);
  bool two_parties() const { return ctx_.ring.size() == 2; }
  // Whether the signed model puts a sensitive distribution on its groups (ldiversity, tcloseness).
  bool ModelHasDistribution() const;
  // `chunk.step.input()`, which must be sealed by `sender` for this party under `purpose`.
  absl::StatusOr<std::vector<uint64_t>> OpenInput(const Chunk& chunk, const std::string& sender,
                                                  const std::string& purpose) const;
  absl::Status AuditChunk(const Chunk& chunk, const fedanon::v1::FinalCheckResult& out) const;
  // The first sum's chunk 0: fixes the cut and computes this party's counts in the layout.
  absl::Status Start(const fedanon::v1::FinalCheckStep& step, uint64_t round);

  JobContext& ctx_;
  HorizontalTables& tables_;
  PayloadTransfer& transfer_;  // comparison messages, whole or in chunks
  std::optional<State> check_;
  std::optional<std::vector<uint64_t>> restored_mask_;
  // Set while Replay hands over this party's first step of a comparison: the seed it drew.
  std::string restored_compare_seed_;
};

}  // namespace fedanon::party
