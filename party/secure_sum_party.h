// The secure sum at a party (horizontal jobs; mohammed2010 §5, docs/crypto.md "Secure sum"): the
// state updates riding along, this party's statistics for the leader's request computed from its
// table, and its hop of the ring — input only from the predecessor agreed at Prepare, output only
// for the agreed successor (the last party's for the leader). The ring's first party starts from
// its own mask, drawn from a seed it hands the leader sealed with its answer to the collect's last
// chunk (protocol 2.1), or on SumUnmask once every chunk went round (a 2.0 leader asks). Each
// chunk is answered once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "fedanon/v1/federation.pb.h"
#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class SecureSumParty {
 public:
  SecureSumParty(JobContext& ctx, HorizontalTables& tables, const FinalCheckParty& final_check)
      : ctx_(ctx), tables_(tables), final_check_(final_check) {}

  // One chunk of a collect: the first carries the updates and the request.
  absl::StatusOr<fedanon::v1::PartyMessage> Step(const fedanon::v1::LeaderMessage& request);
  // The ring's first party's mask of the current collect, sealed for the leader, once this party
  // answered every chunk of the collect (the later hops it cannot see: they are sealed for the
  // other parties, so the seed unmasks nothing the leader holds until the ring's total).
  absl::StatusOr<fedanon::v1::PartyMessage> Unmask(const fedanon::v1::LeaderMessage& request);

  // After a restart: the mask seed recorded with the collect's first answer (the next Step takes
  // it), the reply that left for a chunk, and the mask's answer.
  void RestoreSeed(std::string seed) { restored_seed_ = std::move(seed); }
  void RestoreReply(uint32_t chunk, fedanon::v1::PartyMessage reply) {
    answered_.SetReply(chunk, std::move(reply));
  }
  void RestoreUnmask(const fedanon::v1::LeaderMessage& request, fedanon::v1::PartyMessage reply);
  void ClearRestored() { restored_seed_.reset(); }

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
};

}  // namespace fedanon::party
