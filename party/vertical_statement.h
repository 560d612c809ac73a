// The exact bytes a party signs for the statements it makes to the other parties through the
// leader in a vertical job — its proposal of a round (participate or Not-participate, with the
// candidate and score) and, as a judge, its verdict on the winner — so that the leader can read
// them but cannot forge or alter them; in a local-recoding job, the digest of its per-group
// proposals of a wave (paged) with its replica's state digest, and as a judge the
// digest of its per-group verdicts of a wave (paged too) (docs/crypto.md "Signed vertical
// statements"). Each field is length-prefixed and the whole is bound to the job, the run and the
// round, so a statement cannot be replayed into another job, run or round or passed off as the
// other kind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

// Fields 1-4 of `proposal` (its signature is not part of it), made after the replica's
// `decisions`-th decision (VerticalParty::decisions): a proposal signed before a commit does not
// verify after it, even under the same round number.
std::string ProposalStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                              uint64_t decisions, const fedanon::v1::VerticalProposal& proposal);

// A vertical local-recoding wave's proposal list as it is signed and paged: the
// serialized LocalProposals holding field 1 only (every group proposal, group order).
std::string LocalProposalsList(const fedanon::v1::LocalProposals& proposals);

// What a party signs for its proposals of a wave: the SHA-256 of the serialized list
// (LocalProposalsList), the live-group count and the replica's state digest, bound to the wave.
// The first form computes the digest from `proposals` (fields 1, 2 and 80; not its signature).
std::string LocalProposalsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                    const fedanon::v1::LocalProposals& proposals);
std::string LocalProposalsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                    std::string_view list_digest, uint64_t live_groups,
                                    std::string_view state_digest);

// A judge's verdict list of a vertical local-recoding wave as it is signed and paged: the
// serialized LocalVerdicts holding field 1 only (per winning group of another party its group,
// attribute, candidate and the verdict, group order).
std::string LocalVerdictsList(const fedanon::v1::LocalVerdicts& verdicts);

// What a judge signs for its verdicts of a wave (paged verdicts): the SHA-256 of the serialized
// list (LocalVerdictsList), bound to the wave. The first form computes the digest from field 1 of
// `verdicts` (not its signature or page fields).
std::string LocalVerdictsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                   const fedanon::v1::LocalVerdicts& verdicts);
std::string LocalVerdictsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                   std::string_view list_digest);

// What a party signs once it has received the common digests of ID matching (round 0): their
// SHA-256 and their count. Every party checks every other party's before it aligns, so the leader
// cannot hand parties different intersections.
std::string IdCommonStatement(std::string_view job_id, std::string_view run_id,
                              std::string_view common_digest, uint64_t count);

// The candidate's attribute, node and candidate index (what identifies it) and the verdict, made
// after the judge's `decisions`-th decision (as for proposals).
std::string VerdictStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                             uint64_t decisions, const fedanon::v1::VerticalCandidate& candidate,
                             bool accept);

// What a computing party signs once the secure comparison of a round named its winner: the
// winner's name, bound to the round and to the signer's count of decisions.
std::string WinnerChoiceStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                                  uint64_t decisions, std::string_view winner);

}  // namespace fedanon::party
