// The secure sum at a party (horizontal jobs; mohammed2010 §5, docs/crypto.md "Secure sum"): the
// state updates riding along, this party's statistics for the leader's request computed from its
// table, and its hop of the ring — input only from the predecessor agreed at Prepare, output only
// for the agreed successor (the last party's for the leader). The ring's first party starts from
// its own mask, drawn from a seed it hands the leader sealed with its answer to the collect's last
// chunk (protocol 2.1), or on SumUnmask once every chunk went round (a 2.0 leader asks). Each
// chunk is answered once.
//
// numeric_split: binned (protocol 4.0): a collect whose answer holds class counts over bins
// (engine::GuardedRanges) is unmasked only after its bin check (SumBinCheck): the ring's first
// party (it holds the mask) and its last (it sealed the masked total for the leader) compare, by a
// secure comparison the leader relays, each bin's masked total with minus its mask, and learn one
// bit: every bin is empty or holds at least the bin bound (engine::SplitBinBound). Only then does
// the first party hand over its mask; a bin below the bound is refused by both, by name, and its
// class counts stay masked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "common/engine/numeric_split.h"
#include "crypto/secure_comparison.h"
#include "fedanon/v1/federation.pb.h"
#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class SecureSumParty {
 public:
  SecureSumParty(JobContext& ctx, HorizontalTables& tables, const FinalCheckParty& final_check,
                 PayloadTransfer& transfer)
      : ctx_(ctx), tables_(tables), final_check_(final_check), transfer_(transfer) {}

  // One chunk of a collect: the first carries the updates and the request.
  absl::StatusOr<fedanon::v1::PartyMessage> Step(const fedanon::v1::LeaderMessage& request);
  // The ring's first party's mask of the current collect, sealed for the leader, once this party
  // answered every chunk of the collect (the later hops it cannot see: they are sealed for the
  // other parties, so the seed unmasks nothing the leader holds until the ring's total).
  absl::StatusOr<fedanon::v1::PartyMessage> Unmask(const fedanon::v1::LeaderMessage& request);
  // A step of the current collect's bin check (SumBinCheck): the ring's first party garbles
  // (steps 2, 4, 6), its last evaluates (1, 3, 5). The same step again gets the same answer.
  absl::StatusOr<fedanon::v1::PartyMessage> BinCheck(const fedanon::v1::LeaderMessage& request);
  // After a restart, an older collect's first chunk: its updates applied and its bins recorded
  // (HorizontalTables::RecordBins), nothing answered.
  absl::Status ReplayOlderCollect(const fedanon::v1::SumStep& step);

  // After a restart: the mask seed recorded with the collect's first answer (the next Step takes
  // it), the reply that left for a chunk, and the mask's answer.
  void RestoreSeed(std::string seed) { restored_seed_ = std::move(seed); }
  void RestoreReply(uint32_t chunk, fedanon::v1::PartyMessage reply) {
    answered_.SetReply(chunk, std::move(reply));
  }
  void RestoreUnmask(const fedanon::v1::LeaderMessage& request, fedanon::v1::PartyMessage reply);
  void ClearRestored() {
    restored_seed_.reset();
    restored_bin_seed_.clear();
  }
  // After a restart: the bin check's seed recorded with this party's first step of it (the
  // comparison runs again from it, so its messages are the same), and the reply that left.
  void RestoreBinCheckSeed(std::string seed) { restored_bin_seed_ = std::move(seed); }
  void RestoreBinCheckReply(uint32_t step, fedanon::v1::PartyMessage reply) {
    bin_answers_.SetReply(step, std::move(reply));
  }

 private:
  // A new collect's first chunk: applies the updates, checks the request against the signed job
  // and computes this party's counts.
  absl::Status StartCollect(const fedanon::v1::SumStep& step, size_t position);
  // The request against the signed job and the job's stage: released counts only for a leader
  // recipient and once the final check allows it, a local job's statistics only for its groups,
  // nothing but the released counts after the final check, released counts over a declared
  // domain.
  absl::Status CheckRequest(const fedanon::v1::SumStep& step,
                            const engine::StatsRequest& stats_request, bool local_release) const;
  // What this party adds its counts to: its own mask (the ring's first party) or the hop sealed
  // for it by its predecessor agreed at Prepare.
  absl::StatusOr<std::vector<uint64_t>> HopInput(const fedanon::v1::SumStep& step, uint64_t round,
                                                 size_t position, uint64_t chunk_len,
                                                 const std::string& purpose) const;
  // The bin bound of the current collect, computed once from the signed model: a global bin's
  // (engine::SplitBinBound), or a local job's within-group bin's (also at least the largest k).
  absl::StatusOr<uint64_t> BinBound();
  // This party's inputs to the bin check, modulo 2^bits: minus each guarded range's mask (the
  // first party), the masked totals it sealed for the leader (the last).
  absl::StatusOr<std::vector<uint64_t>> BinCheckInputs(bool garbler, uint32_t bits) const;
  // The ring's first party's seed of the current collect sealed for the leader (a SumMask),
  // kept as the answer to a SumUnmask of the collect, audited.
  absl::StatusOr<fedanon::v1::PartyMessage> SealMask();
  // `acc` (the input plus this party's counts) sealed for `receiver`, answered once, audited; the
  // ring's first party's answer to a collect's last chunk carries its mask seed (protocol 2.1).
  absl::StatusOr<fedanon::v1::PartyMessage> SealHop(const fedanon::v1::SumStep& step,
                                                    uint64_t round, const std::string& receiver,
                                                    const std::string& purpose,
                                                    const std::vector<uint64_t>& acc);

  JobContext& ctx_;
  HorizontalTables& tables_;
  const FinalCheckParty& final_check_;
  PayloadTransfer& transfer_;  // the bin check's messages, whole or in chunks
  // The local counts of the collect in progress (kept across its chunks), the digest of the
  // request they answer, and the reply given to each chunk (chunk -> (purpose, reply)).
  uint64_t collect_ = UINT64_MAX;
  uint64_t collect_round_ = 0;  // the round of the collect's first chunk
  std::string digest_;
  uint32_t chunks_ = 0;
  std::vector<uint64_t> counts_;
  bool counts_release_ = false;  // the counts are those of the released table
  ReplyCache<uint32_t> answered_;
  // The ring's first party: the seed of its mask over the current collect's vector
  // (crypto::MaskWordsFromSeed), and the answer handing it to the leader.
  std::string seed_;
  OneReply<> unmask_;
  std::optional<std::string> restored_seed_;
  // numeric_split: binned: the current collect's guarded ranges, the last party's masked totals of
  // them (what it sealed for the leader), and the bin check: its comparison, its answers by step,
  // and whether it showed every range empty or at least the bound.
  std::vector<engine::GuardedRange> guarded_;
  std::vector<uint64_t> guarded_totals_;
  std::optional<uint64_t> bin_bound_;
  uint64_t local_bin_bound_ = 0;
  bool local_bins_ = false;  // the current collect's guarded ranges are within-group bins
  std::unique_ptr<crypto::ComparisonSide> bin_check_;
  ReplyCache<uint32_t> bin_answers_;
  bool bins_held_ = false;
  std::string restored_bin_seed_;
};

}  // namespace fedanon::party
