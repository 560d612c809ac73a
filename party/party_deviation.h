// Where a party may deviate from the protocol. A party runs honest unless its options name a
// deviation (PartyAgentOptions::deviation): then each hook below is called at the point it names
// and may alter what the party is about to send. Two users:
//  * the daemon's `--misbehave` (server/party/party_main.cc): the two malicious behaviours of
//    mohammed2011 §6 in the vertical participation game (MaliciousVerticalParty, below), so that
//    the game-theoretic strategy can be demonstrated against them;
//  * tests of what the other roles refuse (party/testing/deviating_party.h, a testing-only target:
//    inflated or moved counts, a wrong final check, a union altered on its way, other release
//    seeds, a boasting release report, other children for some parties, ...).
// The honest behaviour is the base class: every hook leaves what it is given unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::party {

class VerticalParty;
struct VerticalProposalView;

class PartyDeviation {
 public:
  virtual ~PartyDeviation() = default;

  // The deviation's name, logged when a job starts (a deviating party says so in every signed
  // vertical proposal too: VerticalProposal.misbehaving).
  virtual std::string Name() const = 0;
  // Whether a table larger than the signed job's max_records_per_party is loaded anyway.
  virtual bool IgnoresRecordLimit() const { return false; }
  // The proposal this party's vertical replica is about to sign in a round of the participation
  // game (`view`: the honest one; `replica`: the replica, which knows this party's last vetoed
  // candidate).
  virtual void VerticalProposal(const VerticalParty& /*replica*/,
                                VerticalProposalView* /*view*/) const {}
  // The tie-break key (party/vertical_winner_comparison.h) this party feeds the round's secure
  // comparison, whole or in shares.
  virtual void WinnerKey(std::vector<uint64_t>* /*key*/) const {}
  // The score this party's local-recoding replica declares for its best candidate of a group.
  virtual void GroupProposalScore(double* /*score*/) const {}
  // This party's released columns of a vertical job (a serialized VerticalColumns, rows in the
  // release order) before they are sealed for the recipient.
  virtual void ReleasedColumns(const fedanon::v1::JobSpec& /*spec*/,
                               std::string* /*columns*/) const {}
  // This party's released counts of a secure sum before they are masked: `combinations` counts
  // per released group, groups one after the other.
  virtual void ReleasedCounts(uint64_t /*combinations*/, std::vector<uint64_t>* /*counts*/) const {}
  // This party's final-check vector before it is masked.
  virtual void FinalCheckCounts(std::vector<uint64_t>* /*counts*/) const {}
  // The secure union's list on its way through this party: `copies` says how many times this
  // party passes on the earlier parties' rows (sealed for the recipient) by their index in the
  // list it received (an index not in it: once), `lines` holds this party's own rows (CSV lines
  // in the order of `spec`'s attributes without the record id), not yet added.
  virtual void UnionHop(const fedanon::v1::JobSpec& /*spec*/, std::map<uint64_t, int>* /*copies*/,
                        std::vector<std::string>* /*lines*/) const {}
  // The release-order seed this party, first of the ring, seals for `party`; `last`: `party` is
  // the ring's last.
  virtual void ReleaseOrderSeed(const std::string& /*party*/, bool /*last*/,
                                std::string* /*seed*/) const {}
  // This party's vertical release report.
  virtual void ReleaseReport(fedanon::v1::Report* /*report*/) const {}
  // The instruction a winner's owner seals for the parties after the judges (`bytes`: the one the
  // judges accepted; `replica`: the owner's replica, which can rebuild another).
  virtual absl::StatusOr<std::string> InstructionForOthers(const VerticalParty& /*replica*/,
                                                           std::string bytes) const {
    return bytes;
  }
};

// mohammed2011 §6's malicious parties in the vertical participation game: `never-participate`
// or `under-declare` (the daemon's `--misbehave`).
class MaliciousVerticalParty final : public PartyDeviation {
 public:
  // InvalidArgument naming the two modes for any other name.
  static absl::StatusOr<MaliciousVerticalParty> Named(const std::string& mode);
  std::string Name() const override;
  void VerticalProposal(const VerticalParty& replica, VerticalProposalView* view) const override;

 private:
  explicit MaliciousVerticalParty(bool never_participates)
      : never_participates_(never_participates) {}
  bool never_participates_;
};

}  // namespace fedanon::party
