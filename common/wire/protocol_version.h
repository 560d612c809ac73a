// The version of the leader-party protocol, exchanged in PartyHello / HelloAck (not the software
// version, which is only logged). Major versions are incompatible; within a major version the
// leader serves parties of its own minor version and of the one before (one minor version of
// skew, so parties can be upgraded after the leader). A peer that sends no version speaks 1.0,
// the protocol before versions were exchanged. docs/operations.md, "Upgrades".
//
// History: 1.0 — one job at a time per party. 1.1 — versions exchanged at hello; a party holds
// several prepared jobs at once and answers their requests in parallel (the leader gives a 1.0
// party one job at a time). 1.2 — per-record payloads (ID lists, vertical instructions and
// columns, the secure union's list) travel in chunks under the message limit (ChunkRef, ChunkGet,
// ChunkPut; common/wire/payload_chunks.h) when the leader's PrepareJob names its message limit,
// which a 1.2 leader does only when every data party of the job speaks 1.2 (with a 1.1 party the
// payloads travel whole, as in 1.1). 1.3 — vertical ID matching in batches (IdEncrypt /
// IdReEncrypt per batch, IdDigests, IdAlign on the delivered batches; docs/crypto.md), which a
// 1.3 leader uses only when every data party of the job speaks 1.3 (with a 1.2 party each list
// goes whole, in chunks, as in 1.2). 1.4 — vertical local recoding's waves in pages: a party's
// proposals are fetched page by page (LocalPropose.page) and delivered to the other parties page
// by page (LocalProposalsPut) under the message limit; LocalWinners names a count and digest of
// the won groups; a vertical release report too large for one message comes in pages
// (VerticalReleased.report_pages, ReleaseReportPage), which a 1.3 party never declares. A 1.4
// leader refuses a vertical `recoding: local` job when a data party of it
// speaks 1.3 (kLocalWavesNeedProtocol); every other job kind still runs with 1.3 parties.
// 2.0 — every field a party acts on bound to the signed job (incompatible with 1.x, which no 2.0
// peer serves): the ring's first party masks every secure sum itself and hands its mask to the
// leader (SumUnmask; the leader's masks are gone); a split threshold only on a public cell
// boundary, once per interval (numeric_split: binned); a vertical release sealed only for the
// signed recipient, under a purpose naming it; released counts only for a leader that is the
// signed recipient; ID matching in batches only, each list blinded by its owner with three or more
// parties and intersected by the leader (IdCommon), every party signing the intersection it was
// handed (IdAlign); every sealed box bound to the admin's run id; union rows padded to one length;
// the admin's signed job names the taxonomy paths (AuthorizedJob.taxonomy_paths); a signed vertical
// proposal or verdict binds its author's count of decisions. (The last two came after the first
// builds that said 2.0, with no release between: docs/operations.md "Upgrades".)
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::common {

struct ProtocolVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
  friend bool operator==(const ProtocolVersion&, const ProtocolVersion&) = default;
};

inline constexpr ProtocolVersion kProtocolVersion{2, 0};      // what this build speaks
inline constexpr ProtocolVersion kUnversionedProtocol{1, 0};  // a peer that sends none

// "1.1".
std::string ProtocolVersionText(const ProtocolVersion& v);
// The version a hello carries (kUnversionedProtocol when it carries none), and the message form.
ProtocolVersion ProtocolVersionOf(const fedanon::v1::PartyHello& hello);
ProtocolVersion ProtocolVersionOf(const fedanon::v1::HelloAck& ack);
fedanon::v1::ProtocolVersion ToProto(const ProtocolVersion& v);

// Whether a leader speaking `leader` serves a party speaking `party`: the same major version and
// a minor version of `leader.minor - 1` or `leader.minor`. FailedPrecondition naming both, e.g.
// "party 'hospital-a' speaks protocol 2.0; this leader supports 1.0-1.1".
absl::Status CheckPartyProtocol(const std::string& party, const ProtocolVersion& party_version,
                                const ProtocolVersion& leader = kProtocolVersion);
// Whether a party speaking `party` works with a leader speaking `leader`: the same major version
// and a minor version not older than `party.minor - 1` (a newer leader decides for itself).
// FailedPrecondition naming both, e.g. "the leader speaks protocol 2.0; this party speaks 1.1".
absl::Status CheckLeaderProtocol(const ProtocolVersion& leader,
                                 const ProtocolVersion& party = kProtocolVersion);
// Whether a party of this version can hold several jobs at once (1.1 and later).
bool HoldsSeveralJobs(const ProtocolVersion& party);
// Whether a party of this version sends per-record payloads in chunks (1.2 and later).
bool ChunksPayloads(const ProtocolVersion& party);
// Whether a party of this version matches ids in batches (1.3 and later).
bool BatchesIdMatching(const ProtocolVersion& party);
// Whether a party of this version runs vertical local recoding's waves in pages (1.4 and later).
bool PagesLocalWaves(const ProtocolVersion& party);
// The named reason a leader refuses a vertical local-recoding job with a party older than 1.4.
inline constexpr char kLocalWavesNeedProtocol[] =
    "vertical local recoding needs protocol 1.4 (waves in pages) at every data party";

}  // namespace fedanon::common
