#include "party/vertical_statement.h"

#include <cstring>

#include "absl/base/casts.h"
#include "crypto/hash.h"

namespace fedanon::party {
namespace {

constexpr char kDomain[] = "fedanon vertical statement v1";

void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutBytes(std::string_view s, std::string* out) {
  PutU64(s.size(), out);
  out->append(s);
}

std::string Header(std::string_view job_id, std::string_view run_id, uint64_t round,
                   std::string_view kind) {
  std::string out;
  PutBytes(kDomain, &out);
  PutBytes(job_id, &out);
  PutBytes(run_id, &out);
  PutU64(round, &out);
  PutBytes(kind, &out);
  return out;
}

}  // namespace

std::string ProposalStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                              uint64_t decisions, const fedanon::v1::VerticalProposal& proposal) {
  std::string out = Header(job_id, run_id, round, "proposal");
  PutU64(decisions, &out);
  PutU64(proposal.participate() ? 1 : 0, &out);
  const auto& c = proposal.candidate();
  PutU64(c.attribute(), &out);
  PutU64(static_cast<uint64_t>(static_cast<int64_t>(c.node())), &out);
  PutU64(static_cast<uint64_t>(static_cast<int64_t>(c.candidate())), &out);
  PutU64(absl::bit_cast<uint64_t>(c.score()), &out);
  PutU64(absl::bit_cast<uint64_t>(c.order_key()), &out);
  PutBytes(proposal.reason(), &out);
  PutU64(proposal.misbehaving() ? 1 : 0, &out);
  // A round's proposal (no candidate) and a winner's (with it) never read as each other.
  PutU64(proposal.has_candidate() ? 1 : 0, &out);
  return out;
}

std::string WinnerChoiceStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                                  uint64_t decisions, std::string_view winner) {
  std::string out = Header(job_id, run_id, round, "winner");
  PutU64(decisions, &out);
  PutBytes(winner, &out);
  return out;
}

std::string IdCommonStatement(std::string_view job_id, std::string_view run_id,
                              std::string_view common_digest, uint64_t count) {
  std::string out = Header(job_id, run_id, 0, "id-common");
  PutBytes(common_digest, &out);
  PutU64(count, &out);
  return out;
}

std::string LocalProposalsList(const fedanon::v1::LocalProposals& proposals) {
  fedanon::v1::LocalProposals list;
  *list.mutable_proposals() = proposals.proposals();
  return list.SerializeAsString();
}

std::string LocalProposalsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                    const fedanon::v1::LocalProposals& proposals) {
  return LocalProposalsStatement(job_id, run_id, wave,
                                 crypto::Sha256(LocalProposalsList(proposals)),
                                 proposals.live_groups(), proposals.state_digest());
}

std::string LocalProposalsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                    std::string_view list_digest, uint64_t live_groups,
                                    std::string_view state_digest) {
  std::string out = Header(job_id, run_id, wave, "local-proposals");
  PutBytes(list_digest, &out);
  PutU64(live_groups, &out);
  PutBytes(state_digest, &out);
  return out;
}

std::string LocalVerdictsList(const fedanon::v1::LocalVerdicts& verdicts) {
  fedanon::v1::LocalVerdicts list;
  *list.mutable_verdicts() = verdicts.verdicts();
  return list.SerializeAsString();
}

std::string LocalVerdictsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                   const fedanon::v1::LocalVerdicts& verdicts) {
  return LocalVerdictsStatement(job_id, run_id, wave, crypto::Sha256(LocalVerdictsList(verdicts)));
}

std::string LocalVerdictsStatement(std::string_view job_id, std::string_view run_id, uint64_t wave,
                                   std::string_view list_digest) {
  std::string out = Header(job_id, run_id, wave, "local-verdicts");
  PutBytes(list_digest, &out);
  return out;
}

std::string VerdictStatement(std::string_view job_id, std::string_view run_id, uint64_t round,
                             uint64_t decisions, const fedanon::v1::VerticalCandidate& candidate,
                             bool accept) {
  std::string out = Header(job_id, run_id, round, "verdict");
  PutU64(decisions, &out);
  PutU64(candidate.attribute(), &out);
  PutU64(static_cast<uint64_t>(static_cast<int64_t>(candidate.node())), &out);
  PutU64(static_cast<uint64_t>(static_cast<int64_t>(candidate.candidate())), &out);
  PutU64(accept ? 1 : 0, &out);
  return out;
}

}  // namespace fedanon::party
