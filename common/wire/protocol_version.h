// The version of the leader-party protocol, exchanged in PartyHello / HelloAck (not the software
// version, which is only logged). Major versions are incompatible; within a major version the
// leader serves parties of its own minor version and of the one before (one minor version of
// skew, so parties can be upgraded after the leader). docs/operations.md, "Upgrades".
//
// 2.0: the leader is not trusted, so every field a party acts on is bound to the job the admin
// signed or checked against the party's own state (docs/protocol.md lists each check):
//  * the admin's signed job names the taxonomy paths (AuthorizedJob.taxonomy_paths), and every
//    sealed box is bound to the admin's run id;
//  * the ring's first party masks every secure sum itself and hands its mask to the leader
//    (SumUnmask), so the leader holds no mask of its own;
//  * a split threshold lies only on a public cell boundary, once per interval (numeric_split:
//    binned);
//  * vertical ID matching runs in batches (IdEncrypt / IdReEncrypt per batch, IdDigests, IdAlign;
//    docs/crypto.md), each list blinded by its owner with three or more parties and intersected
//    by the leader (IdCommon), every party signing the intersection it was handed (IdAlign);
//  * a signed vertical proposal or verdict binds its author's count of decisions;
//  * a vertical release is sealed only for the signed recipient, under a purpose naming it, and
//    released counts go only to a leader that is the signed recipient;
//  * the secure union's rows are padded to one length.
// And no message grows with the table: per-record payloads travel in chunks under the message
// limit the leader names in PrepareJob (ChunkRef, ChunkGet, ChunkPut; common/wire/payload_chunks.h;
// a Prepare without one makes them travel whole), and vertical local recoding's proposals and
// verdicts and a large release report travel in pages. A party holds several prepared jobs at once
// and answers their requests in parallel. A 1.x peer, or one that sends no version (a build older
// than the exchange of versions), is refused at the hello.
//
// 2.1: the ring's first party hands its mask's seed to the leader with its answer to a collect's
// last chunk (SumStepResult.mask_seed), saving the SumUnmask round trip of every secure sum (a
// quarter of a three-party horizontal job's sequential round trips: docs/operations.md "Wide-area
// links"). A 2.1 leader still asks a 2.0 party with SumUnmask; a 2.0 leader ignores the field.
//
// 3.0: secure comparisons (issue 44; crypto/secure_comparison.h). A vertical round's proposals
// carry participation only, and the winner is the argmax of the parties' tie-break keys computed
// by the ring's first two parties (VerticalCompare; the owner reveals its candidate in
// VerticalInstructions.won, and every commit carries both computing parties' signed choices).
// With two data parties the horizontal final check runs by secure comparisons
// (FinalCheckStep.PHASE_COMPARE). A 2.x party would send scores and skip the comparisons: refused.
//
// 4.0: bins opened only when they hold K records (issue 44; numeric_split: binned). The ring's
// first party withholds the mask of a collect whose answer holds class counts over bins until it
// and the ring's last party showed, by a secure comparison the leader relays (SumBinCheck), that
// every bin is empty or holds at least the bin bound; an attribute's bins are asked once, and a
// threshold lies on a bin boundary. A 3.x party would hand over its mask unchecked: refused.
//
// 4.1: a vertical job's computing parties keep the base OTs of the run's first winner comparison
// (VerticalCompared.base_kept), and the leader starts every later comparison at step 3: three
// relayed messages instead of five and no elliptic-curve work a round (docs/crypto.md "Base OTs
// kept for a run"). A 4.1 leader starts at step 1 unless both computing parties said they keep
// them (a 4.0 party never does); a 4.0 leader always starts at step 1, which a 4.1 party accepts.
// And the next round's proposal rides with a party's answer to the commit
// (VerticalCommit.propose_next): one sequential call less a round; a 4.0 party answers
// `committed` and is asked with VerticalPropose as before.
//
// 5.0: local recoding's within-group bins are checked as global bins are (issue 44). Under
// `recoding: local` and `numeric_split: binned`, a collect of labelled within-group ranges
// (LocalStatsRequest.ranges) is unmasked only after the same SumBinCheck showed every range empty
// or holding at least the within-group bound (the model's largest k, at least the global bins');
// a group's ranges on an attribute are asked once, and a threshold split lies on a boundary of
// them. A 4.x first party would hand over the mask of such a collect unchecked: refused. And
// every bin check is cheaper: its inputs are taken modulo 2^40 (64 bits before; exact for any
// union of fewer than 2^40 records), and the first party's mask seed comes with its last step
// (SumBinChecked.mask_seed) instead of a SumUnmask of its own. Every secure comparison's message
// (bin check, two-party final check, vertical winner) that fits one chunk travels whole with its
// step in a chunked job too, not as a stream the leader fetches and hands in two more calls.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {

struct ProtocolVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
  friend bool operator==(const ProtocolVersion&, const ProtocolVersion&) = default;
};

inline constexpr ProtocolVersion kProtocolVersion{5, 0};  // what this build speaks

// "2.0".
std::string ProtocolVersionText(const ProtocolVersion& v);
// The version a hello carries, and the message form. A hello without one comes from a build older
// than the exchange of versions: 1.0, which CheckPartyProtocol and CheckLeaderProtocol refuse.
ProtocolVersion ProtocolVersionOf(const fedanon::v1::PartyHello& hello);
ProtocolVersion ProtocolVersionOf(const fedanon::v1::HelloAck& ack);
fedanon::v1::ProtocolVersion ToProto(const ProtocolVersion& v);

// Whether a leader speaking `leader` serves a party speaking `party`: the same major version and
// a minor version of `leader.minor - 1` or `leader.minor`. FailedPrecondition naming both, e.g.
// "party 'hospital-a' speaks protocol 1.4; this leader supports 2.0-2.0".
absl::Status CheckPartyProtocol(const std::string& party, const ProtocolVersion& party_version,
                                const ProtocolVersion& leader = kProtocolVersion);
// Whether a party speaking `party` works with a leader speaking `leader`: the same major version
// and a minor version not older than `party.minor - 1` (a newer leader decides for itself).
// FailedPrecondition naming both, e.g. "the leader speaks protocol 1.4; this party speaks 2.0".
absl::Status CheckLeaderProtocol(const ProtocolVersion& leader,
                                 const ProtocolVersion& party = kProtocolVersion);

}  // namespace fedanon::wire
