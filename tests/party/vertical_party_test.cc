// The vertical steps of PartyAgent (party/party_agent.h, party/vertical_party.h) between two
// parties with small tables, the test playing the leader: private ID matching (encrypt,
// re-encrypt, align) finds the common records, one round (proposals, the winner's instruction,
// the other's verdict, commit) and the release of the joined table to the leader; and the
// error replies for steps out of order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/sealed_box.h"
#include "common/base/status_macros.h"
#include "tests/party/party_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStep;
using fedanon::v1::VerticalStepResult;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSpec[] = R"(name: vertical-unit
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
privacy:
  model: templates
  templates:
    - {qid: [Sex, Job], k: 1}
partitioning: vertical
)";

// Five common ids (in different orders) and one id only each party has.
std::vector<std::map<std::string, std::string>> TwoHospitals() {
  const std::string sex = "Male;ANY_Sex\nFemale;ANY_Sex\n";
  const std::string job = "Janitor;Blue-collar;ANY_Job\nLawyer;White-collar;ANY_Job\n";
  return {{{"table.csv",
            "ID,Class,Sex\np1,Y,Male\np2,N,Male\np3,Y,Female\np4,N,Female\np5,Y,Male\n"
            "only-a,N,Male\n"},
           {"sex.csv", sex},
           {"job.csv", job}},
          {{"table.csv",
            "ID,Class,Job\np5,Y,Lawyer\nonly-b,Y,Lawyer\np4,N,Janitor\np3,Y,Lawyer\n"
            "p2,N,Janitor\np1,Y,Janitor\n"},
           {"sex.csv", sex},
           {"job.csv", job}}};
}

LeaderMessage Step(uint32_t round, VerticalStep step) {
  LeaderMessage msg;
  msg.set_job_id("job-00000000000f");
  msg.set_round(round);
  *msg.mutable_vertical() = std::move(step);
  return msg;
}

absl::StatusOr<VerticalStepResult> CallStep(PartyFixture& f, const std::string& party,
                                            uint32_t round, VerticalStep step) {
  auto reply = f.Call(party, Step(round, std::move(step)));
  if (!reply.ok()) return reply.status();
  return reply->vertical();
}

// The ID matching of the parties as an honest leader drives it; each party's common count.
absl::StatusOr<std::vector<uint64_t>> MatchIds(PartyFixture& f) {
  return f.MatchIds("job-00000000000f");
}

TEST(VerticalPartyAgent, IdMatchingOneRoundAndRelease) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_round", TwoHospitals()));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> digests, f->PrepareAll("job-00000000000f", kSpec));
  EXPECT_EQ(digests[0], digests[1]);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> common, MatchIds(*f));
  EXPECT_EQ(common, (std::vector<uint64_t>{5, 5}));

  // Round 1: each party proposes its own attribute's candidate; the better one wins.
  std::vector<fedanon::v1::VerticalProposal> proposals;
  for (const auto& party : f->names) {
    VerticalStep step;
    step.mutable_propose();
    ASSERT_OK_AND_ASSIGN(VerticalStepResult reply, CallStep(*f, party, 1, step));
    proposals.push_back(reply.proposal());
  }
  ASSERT_TRUE(proposals[0].participate()) << proposals[0].reason();
  ASSERT_TRUE(proposals[1].participate()) << proposals[1].reason();
  EXPECT_EQ(proposals[0].candidate().attribute(), 0u);  // Sex, hospital-a's
  EXPECT_EQ(proposals[1].candidate().attribute(), 1u);  // Job, hospital-b's
  const size_t owner = proposals[1].candidate().score() >= proposals[0].candidate().score() ? 1 : 0;
  const std::string& winner_party = f->names[owner];
  const std::string& other_party = f->names[1 - owner];
  const fedanon::v1::VerticalCandidate winner = proposals[owner].candidate();

  // Every party's signed proposal travels with the winner, the owner's with the commit.
  std::vector<fedanon::v1::SignedProposal> signed_proposals(proposals.size());
  for (size_t i = 0; i < proposals.size(); ++i) {
    signed_proposals[i].set_party(f->names[i]);
    *signed_proposals[i].mutable_proposal() = proposals[i];
  }
  VerticalStep win;
  *win.mutable_winner()->mutable_candidate() = winner;
  for (const auto& p : signed_proposals) *win.mutable_winner()->add_proposals() = p;
  // Only the owner can build the instruction.
  // (It refuses: the winner is not its own best proposal, and the attribute is not its own.)
  EXPECT_FALSE(CallStep(*f, other_party, 1, win).ok());
  ASSERT_OK_AND_ASSIGN(VerticalStepResult to_judges, CallStep(*f, winner_party, 1, win));
  // No party holds sensitive values: nobody judges, so nobody gets the children before the
  // verdict, and a party that does not judge refuses to be asked for one.
  EXPECT_EQ(to_judges.instructions().for_parties_size(), 0);
  VerticalStep deliver;
  deliver.mutable_deliver()->mutable_instruction()->set_sender(winner_party);
  EXPECT_THAT(CallStep(*f, other_party, 1, deliver),
              StatusIs(absl::StatusCode::kPermissionDenied, "judges no candidate"));

  // Accepted (no judge to hear): the owner seals the children for the other party now.
  VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = winner;
  ASSERT_OK_AND_ASSIGN(VerticalStepResult instructions, CallStep(*f, winner_party, 1, publish));
  ASSERT_EQ(instructions.instructions().for_parties_size(), 1);
  EXPECT_EQ(instructions.instructions().for_parties(0).receiver(), other_party);
  // Published once. The leader's byte-identical repeat (its reply was lost) gets the stored
  // answer again, nothing recomputed (one request, one answer); the same publish as a new
  // request (another round) is refused.
  ASSERT_OK_AND_ASSIGN(VerticalStepResult repeated, CallStep(*f, winner_party, 1, publish));
  EXPECT_EQ(repeated.SerializeAsString(), instructions.SerializeAsString());
  EXPECT_THAT(CallStep(*f, winner_party, 2, publish),
              StatusIs(absl::StatusCode::kFailedPrecondition, "did not just instruct"));

  {  // The other party cannot commit the winner without its children.
    VerticalStep commit;
    *commit.mutable_commit()->mutable_candidate() = winner;
    commit.mutable_commit()->set_accept(true);
    *commit.mutable_commit()->mutable_winner() = signed_proposals[owner];
    EXPECT_THAT(CallStep(*f, other_party, 1, commit),
                StatusIs(absl::StatusCode::kFailedPrecondition, "instruction never arrived"));
  }
  for (const auto& party : f->names) {
    VerticalStep commit;
    *commit.mutable_commit()->mutable_candidate() = winner;
    commit.mutable_commit()->set_accept(true);
    *commit.mutable_commit()->mutable_winner() = signed_proposals[owner];
    if (party == other_party) {
      *commit.mutable_commit()->mutable_instruction() = instructions.instructions().for_parties(0);
    }
    ASSERT_OK_AND_ASSIGN(VerticalStepResult committed, CallStep(*f, party, 1, commit));
    EXPECT_TRUE(committed.committed());
  }

  // Release: every party's columns sealed for the leader, who joins them. The first party of the
  // ring draws the release order and seals its seed for the other.
  ASSERT_OK_AND_ASSIGN(auto keys, crypto::SealKeyPairFromPem(f->leader_seal.key_pem));
  std::vector<fedanon::v1::VerticalColumns> parts;
  fedanon::v1::SealedPayload seed;
  for (const auto& party : f->names) {
    VerticalStep release;
    release.mutable_release()->set_recipient("leader");
    if (party != f->names[0]) {
      // Without the first party's seed the release is refused.
      EXPECT_THAT(CallStep(*f, party, 2, release),
                  StatusIs(absl::StatusCode::kInvalidArgument, "must come from the ring's first"));
      *release.mutable_release()->mutable_order_seed() = seed;
    }
    ASSERT_OK_AND_ASSIGN(VerticalStepResult released, CallStep(*f, party, 2, release));
    if (party == f->names[0]) {
      ASSERT_EQ(released.released().order_seeds_size(), 1);
      seed = released.released().order_seeds(0);
      EXPECT_EQ(seed.receiver(), f->names[1]);
    }
    const fedanon::v1::SealedPayload& payload = released.released().columns();
    EXPECT_EQ(payload.sender(), party);
    EXPECT_EQ(released.released().report().steps_size(), 1);
    ASSERT_OK_AND_ASSIGN(auto sender_key, f->PartyKey(party));
    ASSERT_OK_AND_ASSIGN(std::string bytes,
                         crypto::OpenFrom(*keys, *sender_key,
                                          {"job-00000000000f", f->run_ids.at("job-00000000000f"), 2,
                                           party, "leader", common::ReleasePurpose("leader")},
                                          payload.ciphertext()));
    ASSERT_TRUE(parts.emplace_back().ParseFromString(bytes));
  }
  {
    // Payloads travel whole in this job (no message limit at Prepare): the release is still
    // answered once. Asked again under another round, the first party refuses; the very same
    // request gets an answer again (docs/protocol.md, "Fields without a check", item 3).
    VerticalStep again;
    again.mutable_release()->set_recipient("leader");
    EXPECT_THAT(CallStep(*f, f->names[0], 3, again),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "one request, one answer: vertical step 'columns' was already answered "
                         "for another request"));
    EXPECT_OK(CallStep(*f, f->names[0], 2, again).status());
  }
  ASSERT_OK_AND_ASSIGN(std::string csv,
                       common::JoinReleasedColumns(parts, {"Sex", "Job", "Class"}));
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u) << csv;  // the header and the five common records
  EXPECT_EQ(lines[0], "Sex,Job,Class");
  EXPECT_THAT(csv, Not(HasSubstr("only-")));
  EXPECT_THAT(csv, Not(HasSubstr("p1")));
}

// A leader that names a data party as recipient of a vertical job: every party refuses at
// Prepare unless the signed spec allows it (the leader's own check could be skipped).
TEST(VerticalPartyAgent, ADataHoldingRecipientIsRefusedAtPrepareWithoutTheOptIn) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_recipient", TwoHospitals()));
  EXPECT_THAT(f->PrepareAll("job-00000000000f", kSpec, "hospital-b"),
              StatusIs(absl::StatusCode::kPermissionDenied, "holds data of this vertical job"));
  const std::string allowed =
      std::string(kSpec) + "release: {allow_data_holding_recipient: true}\n";
  ASSERT_OK(f->PrepareAll("job-00000000000f", allowed, "hospital-b"));
}

// hospital-a holds the sensitive values, so it judges hospital-b's candidates; hospital-b (the
// owner) seals the children for hospital-a before the verdict and publishes them to no one else
// (two parties) — but only on hospital-a's own sealed acceptance, not on the leader's word.
constexpr char kJudgedSpec[] = R"(name: vertical-judged
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
  - {name: Diag, role: sensitive, values: [flu, hiv], party: hospital-a}
privacy: {model: lkc, L: 2, K: 1, C: 1, sensitive_values: [hiv]}
partitioning: vertical
)";

// TwoHospitals with a sensitive column at hospital-a.
std::vector<std::map<std::string, std::string>> TwoHospitalsWithDiag() {
  auto files = TwoHospitals();
  files[0]["table.csv"] =
      "ID,Class,Sex,Diag\np1,Y,Male,flu\np2,N,Male,hiv\np3,Y,Female,flu\np4,N,Female,flu\n"
      "p5,Y,Male,hiv\nonly-a,N,Male,flu\n";
  return files;
}

// Issue 27 §4: with infogain/(privloss+1) and no anonymity threshold, PrivLoss is the rise of a
// confidence; hospital-b could not compute it for Job (in the scope of hospital-a's Diag), so every
// party refuses the job at Prepare by name rather than rank differently from the centralized run.
// With the bound's scope local to its holder (Sex at hospital-a) the job is accepted.
TEST(VerticalPartyAgent, APrivLossItCannotComputeIsRefusedAtPrepare) {
  constexpr char kConfidence[] = R"(name: vertical-privloss
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
  - {name: Diag, role: sensitive, values: [flu, hiv], party: hospital-a}
privacy:
  model: templates
  confidence:
    - {qid: [SCOPE], attribute: Diag, sensitive_values: [hiv], max: 0.9}
score: infogain_privloss
partitioning: vertical
)";
  auto spec_with = [&](const std::string& scope) {
    std::string s = kConfidence;
    s.replace(s.find("SCOPE"), 5, scope);
    return s;
  };
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_privloss", TwoHospitalsWithDiag()));
  EXPECT_THAT(f->PrepareAll("job-00000000000f", spec_with("Sex, Job")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "score infogain_privloss cannot be computed in this vertical job: QID "
                       "attribute 'Job' (at 'hospital-b') is in confidence template 1 on 'Diag' "
                       "(at 'hospital-a')"));
  ASSERT_OK_AND_ASSIGN(auto g,
                       PartyFixture::Create("vertical_privloss_local", TwoHospitalsWithDiag()));
  EXPECT_OK(g->PrepareAll("job-00000000000f", spec_with("Sex")));
}

TEST(VerticalPartyAgent, TheOwnerPublishesOnlyOnTheJudgesSealedAcceptance) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_judged", TwoHospitalsWithDiag()));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kJudgedSpec));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> common, MatchIds(*f));
  ASSERT_EQ(common[0], 5u);
  VerticalStep propose;
  propose.mutable_propose();
  // Every party's signed proposal travels with the winner (hospital-b's candidate wins here).
  std::vector<fedanon::v1::SignedProposal> signed_proposals;
  for (const auto& party : f->names) {
    ASSERT_OK_AND_ASSIGN(VerticalStepResult p, CallStep(*f, party, 1, propose));
    signed_proposals.emplace_back().set_party(party);
    *signed_proposals.back().mutable_proposal() = p.proposal();
  }
  const fedanon::v1::VerticalProposal& proposal_b = signed_proposals[1].proposal();
  ASSERT_TRUE(proposal_b.participate()) << proposal_b.reason();
  const fedanon::v1::VerticalCandidate winner = proposal_b.candidate();
  VerticalStep win;
  *win.mutable_winner()->mutable_candidate() = winner;
  for (const auto& p : signed_proposals) *win.mutable_winner()->add_proposals() = p;
  ASSERT_OK_AND_ASSIGN(VerticalStepResult to_judges, CallStep(*f, "hospital-b", 1, win));
  ASSERT_EQ(to_judges.instructions().for_parties_size(), 1);
  EXPECT_EQ(to_judges.instructions().for_parties(0).receiver(), "hospital-a");

  // The leader claims acceptance without the judge's verdict: refused.
  VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = winner;
  EXPECT_THAT(CallStep(*f, "hospital-b", 1, publish),
              StatusIs(absl::StatusCode::kPermissionDenied, "no acceptance from judge"));
  // A verdict "from" the judge sealed by someone else (here: the owner's own box) does not open.
  publish.mutable_publish()->add_verdicts()->set_sender("hospital-a");
  EXPECT_FALSE(CallStep(*f, "hospital-b", 1, publish).ok());

  VerticalStep deliver;
  *deliver.mutable_deliver()->mutable_instruction() = to_judges.instructions().for_parties(0);
  ASSERT_OK_AND_ASSIGN(VerticalStepResult verdict, CallStep(*f, "hospital-a", 1, deliver));
  ASSERT_TRUE(verdict.verdict().accept());  // C = 1: nothing to veto
  EXPECT_EQ(verdict.verdict().for_owner().receiver(), "hospital-b");
  publish.mutable_publish()->clear_verdicts();
  *publish.mutable_publish()->add_verdicts() = verdict.verdict().for_owner();
  // Replayed into another round: refused.
  EXPECT_FALSE(CallStep(*f, "hospital-b", 2, publish).ok());
  ASSERT_OK_AND_ASSIGN(VerticalStepResult published, CallStep(*f, "hospital-b", 1, publish));
  EXPECT_EQ(published.instructions().for_parties_size(), 0);  // every other party judged it
  fedanon::v1::SignedVerdict signed_verdict;
  signed_verdict.set_judge("hospital-a");
  *signed_verdict.mutable_candidate() = winner;
  signed_verdict.set_accept(verdict.verdict().accept());
  signed_verdict.set_signature(verdict.verdict().signature());
  for (const auto& party : f->names) {
    VerticalStep commit;
    *commit.mutable_commit()->mutable_candidate() = winner;
    commit.mutable_commit()->set_accept(true);
    *commit.mutable_commit()->mutable_winner() = signed_proposals[1];
    *commit.mutable_commit()->add_verdicts() = signed_verdict;
    ASSERT_OK_AND_ASSIGN(VerticalStepResult committed, CallStep(*f, party, 1, commit));
    EXPECT_TRUE(committed.committed());
  }
}

// Parties keep no round counter: Propose answers any round number. A leader that asks for the
// proposals of round 2 before it commits round 1, then asks again after the commit, holds two
// signed proposals of each party for round 2. The older one names a candidate of a cut that no
// longer is; it is bound to the decisions its replica had made, so relayed in round 2's winner
// after the commit it does not verify (docs/protocol.md, "Fields without a check", item 4).
TEST(VerticalPartyAgent, AProposalSignedBeforeACommitDoesNotVerifyAfterIt) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_stale", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kSpec));
  ASSERT_OK(MatchIds(*f).status());
  auto propose_all =
      [&](uint32_t round) -> absl::StatusOr<std::vector<fedanon::v1::SignedProposal>> {
    std::vector<fedanon::v1::SignedProposal> out;
    for (const auto& party : f->names) {
      VerticalStep step;
      step.mutable_propose();
      ASSIGN_OR_RETURN(VerticalStepResult reply, CallStep(*f, party, round, step));
      out.emplace_back().set_party(party);
      *out.back().mutable_proposal() = reply.proposal();
    }
    return out;
  };
  ASSERT_OK_AND_ASSIGN(const auto round1, propose_all(1));
  ASSERT_OK_AND_ASSIGN(const auto stale_round2, propose_all(2));  // before round 1's commit
  const size_t owner =
      round1[1].proposal().candidate().score() >= round1[0].proposal().candidate().score() ? 1 : 0;
  const fedanon::v1::VerticalCandidate winner = round1[owner].proposal().candidate();
  VerticalStep win;
  *win.mutable_winner()->mutable_candidate() = winner;
  for (const auto& p : round1) *win.mutable_winner()->add_proposals() = p;
  ASSERT_OK(CallStep(*f, f->names[owner], 1, win).status());
  VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = winner;
  ASSERT_OK_AND_ASSIGN(VerticalStepResult instructions, CallStep(*f, f->names[owner], 1, publish));
  for (const auto& party : f->names) {
    VerticalStep commit;
    *commit.mutable_commit()->mutable_candidate() = winner;
    commit.mutable_commit()->set_accept(true);
    *commit.mutable_commit()->mutable_winner() = round1[owner];
    if (party != f->names[owner]) {
      *commit.mutable_commit()->mutable_instruction() = instructions.instructions().for_parties(0);
    }
    ASSERT_OK(CallStep(*f, party, 1, commit).status());
  }
  ASSERT_OK_AND_ASSIGN(const auto fresh_round2, propose_all(2));
  // Round 2's winner at the other party, with the owner's proposal taken before the commit.
  const size_t other = 1 - owner;
  ASSERT_TRUE(fresh_round2[other].proposal().participate());
  VerticalStep stale_win;
  *stale_win.mutable_winner()->mutable_candidate() = fresh_round2[other].proposal().candidate();
  *stale_win.mutable_winner()->add_proposals() = stale_round2[owner];
  *stale_win.mutable_winner()->add_proposals() = fresh_round2[other];
  EXPECT_THAT(CallStep(*f, f->names[other], 2, stale_win),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("forged vertical proposal: the proposal of '", f->names[owner],
                                    "' as relayed by the leader does not carry its signature")));
  // The other party's own proposal of before the commit is refused the same way.
  VerticalStep own_stale = stale_win;
  *own_stale.mutable_winner()->mutable_proposals(0) = fresh_round2[owner];
  *own_stale.mutable_winner()->mutable_proposals(1) = stale_round2[other];
  EXPECT_THAT(CallStep(*f, f->names[other], 2, own_stale),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not carry its signature"));
}

TEST(VerticalPartyAgent, StepsOutOfOrderAreRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_order", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kSpec));
  VerticalStep reencrypt;
  reencrypt.mutable_id_reencrypt()->set_origin("hospital-b");
  EXPECT_THAT(CallStep(*f, "hospital-a", 0, reencrypt),
              StatusIs(absl::StatusCode::kFailedPrecondition, "ID matching has not started"));
  VerticalStep align;
  align.mutable_id_align();
  EXPECT_THAT(CallStep(*f, "hospital-a", 0, align),
              StatusIs(absl::StatusCode::kFailedPrecondition, "ID matching has not started"));

  // Before the IDs are aligned there is no replica to propose from or to commit to.
  VerticalStep propose;
  propose.mutable_propose();
  ASSERT_OK_AND_ASSIGN(VerticalStepResult proposal, CallStep(*f, "hospital-a", 1, propose));
  EXPECT_FALSE(proposal.proposal().participate());
  EXPECT_EQ(proposal.proposal().reason(), "the job has not started");
  VerticalStep commit;
  commit.mutable_commit()->mutable_candidate();
  // (Refused before any replica is consulted: it carries no signed winning proposal.)
  EXPECT_THAT(CallStep(*f, "hospital-a", 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied, "forged vertical proposal"));

  // A list goes in batches only (whole lists are gone), and an alignment comes after the common
  // ids.
  VerticalStep whole;
  whole.mutable_id_encrypt()->set_next("hospital-b");
  EXPECT_THAT(CallStep(*f, "hospital-a", 0, whole),
              StatusIs(absl::StatusCode::kInvalidArgument, "names no size"));
  VerticalStep encrypt = whole;
  encrypt.mutable_id_encrypt()->set_batch_ids(100);
  ASSERT_OK(CallStep(*f, "hospital-a", 0, encrypt));
  EXPECT_THAT(CallStep(*f, "hospital-a", 0, align),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "IdAlign before every batch of the common ids arrived"));

  // A step the agent does not know.
  EXPECT_THAT(CallStep(*f, "hospital-a", 1, VerticalStep()),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown vertical step"));
}

// A vertical job has no local table of the horizontal kind: secure sums and unions for it are
// refused (they used to dereference a table the party never loaded).
TEST(VerticalPartyAgent, HorizontalStepsForAVerticalJobAreRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_horizontal", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kSpec));
  LeaderMessage sum;
  sum.set_job_id("job-00000000000f");
  sum.mutable_sum_step()->set_chunks(1);
  EXPECT_THAT(f->Call("hospital-a", sum),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared horizontal job"));
  LeaderMessage union_step;
  union_step.set_job_id("job-00000000000f");
  union_step.mutable_union_step()->set_recipient("leader");
  union_step.mutable_union_step()->set_next("leader");
  EXPECT_THAT(f->Call("hospital-a", union_step),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared horizontal job"));
}

TEST(VerticalPartyAgent, NeverParticipateModeDeclinesLoudly) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_misbehave", TwoHospitals(),
                                                    [](party::PartyAgentOptions& o) {
                                                      if (o.name == "hospital-a") {
                                                        o.misbehave = "never-participate";
                                                      }
                                                    }));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kSpec));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> common, MatchIds(*f));
  EXPECT_EQ(common[0], 5u);
  VerticalStep propose;
  propose.mutable_propose();
  ASSERT_OK_AND_ASSIGN(VerticalStepResult a, CallStep(*f, "hospital-a", 1, propose));
  EXPECT_FALSE(a.proposal().participate());
  EXPECT_TRUE(a.proposal().misbehaving());
  EXPECT_EQ(a.proposal().reason(), "misbehaving: never participates");
  ASSERT_OK_AND_ASSIGN(VerticalStepResult b, CallStep(*f, "hospital-b", 1, propose));
  EXPECT_TRUE(b.proposal().participate());
  EXPECT_FALSE(b.proposal().misbehaving());
}

// The recipient reads released columns in place (issue 30); what it reads must be what the
// message parser reads, whatever the field layout.
TEST(VerticalColumnsView, ReadsWhatTheMessageHoldsInAnyFieldLayout) {
  fedanon::v1::VerticalColumns message;
  message.add_names("a");
  message.add_names("b");
  const std::vector<std::string> cells = {"x",
                                          "",
                                          "with,comma \"and\" quote",
                                          std::string(300, 'y'),
                                          "line\nbreak",
                                          "\xC3\xA9t\xC3\xA9"};
  for (const auto& c : cells) message.add_cells(c);
  auto check = [&](const std::string& bytes) {
    ASSERT_OK_AND_ASSIGN(common::VerticalColumnsView view,
                         common::VerticalColumnsView::Parse(bytes));
    EXPECT_EQ(view.names(), std::vector<std::string>({"a", "b"}));
    EXPECT_EQ(view.cells(), 6u);
    ASSERT_EQ(view.rows(), 3u);
    std::vector<std::string_view> row;
    for (size_t r = 0; r < 3; ++r) {
      view.Row(r, &row);
      ASSERT_EQ(row.size(), 2u);
      EXPECT_EQ(row[0], cells[2 * r]);
      EXPECT_EQ(row[1], cells[2 * r + 1]);
    }
  };
  check(message.SerializeAsString());
  // The cells before the names (a merge of two messages), and an unknown field in between.
  fedanon::v1::VerticalColumns only_cells = message;
  only_cells.clear_names();
  fedanon::v1::VerticalColumns only_names = message;
  only_names.clear_cells();
  check(only_cells.SerializeAsString() + std::string("\x18\x01", 2) +
        only_names.SerializeAsString());
  // What the parser refuses, the view refuses: truncated, a length past the end, not UTF-8.
  const std::string whole = message.SerializeAsString();
  for (const std::string& bad : {whole.substr(0, whole.size() - 1), std::string("\x12\x05x", 3),
                                 std::string("\x0a\x01"
                                             "a\x12\x01\xff",
                                             6)}) {
    fedanon::v1::VerticalColumns parsed;
    EXPECT_FALSE(parsed.ParseFromString(bad));
    EXPECT_THAT(common::VerticalColumnsView::Parse(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "do not parse"));
  }
  // A last row short of a cell: the join calls the columns ragged.
  message.add_cells("z");
  std::vector<common::VerticalColumnsView> parts;
  ASSERT_OK_AND_ASSIGN(parts.emplace_back(),
                       common::VerticalColumnsView::Parse(message.SerializeAsString()));
  EXPECT_EQ(parts[0].rows(), 3u);
  EXPECT_THAT(common::JoinReleasedColumnsTo(parts, {"a"},
                                            [](std::string_view) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kInvalidArgument, "ragged"));
}

// Joined into a sink, a large release arrives in pieces (never whole) and is the same table.
TEST(VerticalColumnsView, JoinIntoASinkComesInPiecesAndIsTheJoinedTable) {
  fedanon::v1::VerticalColumns a, b;
  a.add_names("id-free");
  a.add_names("age");
  b.add_names("job");
  constexpr int kRows = 40000;
  for (int r = 0; r < kRows; ++r) {
    a.add_cells(absl::StrCat("row ", r, " of a, \"quoted\""));
    a.add_cells(absl::StrCat(r % 90));
    b.add_cells(absl::StrCat("job-", r));
  }
  const std::vector<std::string> header = {"job", "age", "id-free"};
  ASSERT_OK_AND_ASSIGN(const std::string whole, common::JoinReleasedColumns({a, b}, header));
  std::vector<common::VerticalColumnsView> parts;
  for (const auto* m : {&a, &b}) {
    ASSERT_OK_AND_ASSIGN(parts.emplace_back(),
                         common::VerticalColumnsView::Parse(m->SerializeAsString()));
  }
  std::string streamed;
  int pieces = 0;
  ASSERT_OK(common::JoinReleasedColumnsTo(parts, header, [&](std::string_view piece) {
    EXPECT_LE(piece.size(), (size_t{1} << 20) + 4096);
    streamed.append(piece);
    ++pieces;
    return absl::OkStatus();
  }));
  EXPECT_GT(pieces, 1);
  std::vector<std::string> x = absl::StrSplit(whole, '\n', absl::SkipEmpty());
  std::vector<std::string> y = absl::StrSplit(streamed, '\n', absl::SkipEmpty());
  ASSERT_EQ(x.size(), kRows + 1u);
  EXPECT_EQ(x[0], "job,age,id-free");
  EXPECT_EQ(y[0], x[0]);
  std::sort(x.begin() + 1, x.end());
  std::sort(y.begin() + 1, y.end());
  EXPECT_EQ(x, y);
  EXPECT_NE(std::find(x.begin(), x.end(), "job-7,7,\"row 7 of a, \"\"quoted\"\"\""), x.end());
}

}  // namespace
}  // namespace fedanon::testing
