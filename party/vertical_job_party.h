// A vertical job at a party: its replica of the job's state (party/vertical_party.h) and the four
// protocols that act on it — ID matching, the rounds of global recoding, the waves of local
// recoding, the release — behind one entry point that routes each vertical step to its protocol.
// One request, one answer: the leader repeats only the last request it sent here, which gets the
// reply that left; a step producing chunked payloads is answered once per step key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "party/id_matching_party.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/reply_cache.h"
#include "party/vertical_party.h"
#include "party/vertical_release_party.h"
#include "party/vertical_rounds_party.h"
#include "party/vertical_waves_party.h"

namespace fedanon::party {

class VerticalJobParty {
 public:
  VerticalJobParty(JobContext& ctx, PayloadTransfer& transfer,
                   std::unique_ptr<VerticalParty> replica, ReleasedTableWriter write_table)
      : ctx_(ctx),
        transfer_(transfer),
        replica_(std::move(replica)),
        ids_(ctx, *replica_),
        rounds_(ctx, transfer, *replica_),
        waves_(ctx, transfer, *replica_),
        release_(ctx, transfer, *replica_, std::move(write_table)) {}

  absl::StatusOr<fedanon::v1::PartyMessage> Handle(const fedanon::v1::LeaderMessage& request);

  VerticalParty& replica() { return *replica_; }
  const VerticalParty& replica() const { return *replica_; }
  IdMatchingParty& ids() { return ids_; }
  VerticalRoundsParty& rounds() { return rounds_; }
  VerticalWavesParty& waves() { return waves_; }
  VerticalReleaseParty& release() { return release_; }
  // After a restart: the reply that left answers a repeated request.
  void RestoreLast(std::string request_digest, fedanon::v1::PartyMessage reply) {
    last_.Put(std::move(request_digest), std::move(reply));
  }

 private:
  absl::StatusOr<fedanon::v1::PartyMessage> Route(const fedanon::v1::VerticalStep& step,
                                                  uint64_t round);
  absl::Status AuditProposal(const fedanon::v1::VerticalProposal& proposal, uint64_t round) const;

  JobContext& ctx_;
  PayloadTransfer& transfer_;
  std::unique_ptr<VerticalParty> replica_;
  IdMatchingParty ids_;
  VerticalRoundsParty rounds_;
  VerticalWavesParty waves_;
  VerticalReleaseParty release_;
  OneReply<> last_;  // the last vertical step answered, by its request's digest
};

}  // namespace fedanon::party
