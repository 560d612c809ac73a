// The vertical steps of PartyAgent (party/party_agent.h, party/vertical_party.h) between two
// parties with small tables, the test playing the leader: private ID matching (encrypt,
// re-encrypt, align) finds the common records, one round (proposals, the winner's instruction,
// the other's verdict, commit) and the release of the joined table to the leader; and the
// error replies for steps out of order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/sealed_box.h"
#include "party/party_deviation.h"
#include "party/testing/deviating_party.h"
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

// Every party's signed proposal of `round` (ring order), as an honest leader collects them.
absl::StatusOr<std::vector<fedanon::v1::SignedProposal>> ProposeAll(PartyFixture& f,
                                                                    uint32_t round) {
  std::vector<fedanon::v1::SignedProposal> out;
  for (const auto& party : f.names) {
    VerticalStep step;
    step.mutable_propose();
    ASSIGN_OR_RETURN(VerticalStepResult reply, CallStep(f, party, round, step));
    out.emplace_back().set_party(party);
    *out.back().mutable_proposal() = reply.proposal();
  }
  return out;
}

// The round's secure comparison as an honest leader relays it between the ring's first two
// parties: the winner's index and both computing parties' signed choices.
// `first`: 1, or 3 when both computing parties keep the base OTs of an earlier round's
// comparison (protocol 4.1; a 4.0 leader always starts at 1).
struct Compared {
  size_t owner = 0;
  std::vector<fedanon::v1::SignedWinnerChoice> choices;
  std::vector<bool> base_kept;  // with each choice
};
absl::StatusOr<Compared> CompareRound(PartyFixture& f, uint32_t round,
                                      const std::vector<fedanon::v1::SignedProposal>& proposals,
                                      uint32_t first = 1) {
  Compared out;
  fedanon::v1::SealedPayload carried;
  for (uint32_t s = first; s <= 6; ++s) {
    const std::string& party = f.names[s % 2 == 1 ? 1 : 0];
    VerticalStep step;
    step.mutable_compare()->set_step(s);
    if (s <= first + 1) {
      for (const auto& p : proposals) {
        auto* relayed = step.mutable_compare()->add_proposals();
        *relayed = p;
        relayed->mutable_proposal()->clear_key_shares();
        for (const auto& share : p.proposal().key_shares()) {
          if (share.receiver() == party) *step.mutable_compare()->add_key_shares() = share;
        }
      }
    }
    if (s > first) *step.mutable_compare()->mutable_input() = carried;
    ASSIGN_OR_RETURN(VerticalStepResult reply, CallStep(f, party, round, step));
    if (reply.compared().has_choice()) {
      out.choices.push_back(reply.compared().choice());
      out.base_kept.push_back(reply.compared().base_kept());
    }
    carried = reply.compared().sealed();
  }
  if (out.choices.size() != 2 || out.choices[0].winner() != out.choices[1].winner()) {
    return absl::InternalError("the computing parties did not agree on a winner");
  }
  const auto it = std::find(f.names.begin(), f.names.end(), out.choices[0].winner());
  out.owner = static_cast<size_t>(it - f.names.begin());
  return out;
}

VerticalStep WinnerOf(const std::vector<fedanon::v1::SignedProposal>& proposals,
                      const std::vector<fedanon::v1::SignedWinnerChoice>& choices) {
  VerticalStep win;
  for (const auto& p : proposals) {
    auto* relayed = win.mutable_winner()->add_proposals();
    *relayed = p;
    relayed->mutable_proposal()->clear_key_shares();
  }
  for (const auto& c : choices) *win.mutable_winner()->add_choices() = c;
  return win;
}

// The commit of `candidate` with its owner's signed winning proposal and both choices.
VerticalStep CommitOfWon(const fedanon::v1::SignedProposal& won,
                         const std::vector<fedanon::v1::SignedWinnerChoice>& choices) {
  VerticalStep commit;
  *commit.mutable_commit()->mutable_candidate() = won.proposal().candidate();
  commit.mutable_commit()->set_accept(true);
  *commit.mutable_commit()->mutable_winner() = won;
  for (const auto& c : choices) *commit.mutable_commit()->add_choices() = c;
  return commit;
}

TEST(VerticalPartyAgent, IdMatchingOneRoundAndRelease) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("vertical_round", TwoHospitals()));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> digests, f->PrepareAll("job-00000000000f", kSpec));
  EXPECT_EQ(digests[0], digests[1]);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> common, MatchIds(*f));
  EXPECT_EQ(common, (std::vector<uint64_t>{5, 5}));

  // Round 1: each party proposes (participation only: no candidate, no score); the secure
  // comparison of the ring's first two parties names the better one.
  ASSERT_OK_AND_ASSIGN(const std::vector<fedanon::v1::SignedProposal> signed_proposals,
                       ProposeAll(*f, 1));
  for (const auto& p : signed_proposals) {
    ASSERT_TRUE(p.proposal().participate()) << p.proposal().reason();
    EXPECT_FALSE(p.proposal().has_candidate());
    EXPECT_EQ(p.proposal().key_shares_size(), 0);  // two parties: both compute
  }
  ASSERT_OK_AND_ASSIGN(const Compared compared, CompareRound(*f, 1, signed_proposals));
  const size_t owner = compared.owner;
  const std::string& winner_party = f->names[owner];
  const std::string& other_party = f->names[1 - owner];

  // Only the party both computing parties chose can build the instruction.
  const VerticalStep win = WinnerOf(signed_proposals, compared.choices);
  EXPECT_THAT(CallStep(*f, other_party, 1, win),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("as the round's winner, not '", other_party, "'")));
  ASSERT_OK_AND_ASSIGN(VerticalStepResult to_judges, CallStep(*f, winner_party, 1, win));
  // The owner reveals its candidate (its own attribute) and score, signed.
  const fedanon::v1::VerticalProposal& won = to_judges.instructions().won();
  ASSERT_TRUE(won.has_candidate());
  EXPECT_EQ(won.candidate().attribute(), owner);  // Sex is hospital-a's, Job hospital-b's
  const fedanon::v1::VerticalCandidate winner = won.candidate();
  fedanon::v1::SignedProposal signed_won;
  signed_won.set_party(winner_party);
  *signed_won.mutable_proposal() = won;
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
    EXPECT_THAT(CallStep(*f, other_party, 1, CommitOfWon(signed_won, compared.choices)),
                StatusIs(absl::StatusCode::kFailedPrecondition, "instruction never arrived"));
  }
  for (const auto& party : f->names) {
    VerticalStep commit = CommitOfWon(signed_won, compared.choices);
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
                                           party, "leader", wire::ReleasePurpose("leader")},
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
  ASSERT_OK_AND_ASSIGN(std::string csv, wire::JoinReleasedColumns(parts, {"Sex", "Job", "Class"}));
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
  // Every party's signed proposal travels with the winner (hospital-b's candidate wins here).
  ASSERT_OK_AND_ASSIGN(const std::vector<fedanon::v1::SignedProposal> round_proposals,
                       ProposeAll(*f, 1));
  ASSERT_TRUE(round_proposals[1].proposal().participate())
      << round_proposals[1].proposal().reason();
  ASSERT_OK_AND_ASSIGN(const Compared compared, CompareRound(*f, 1, round_proposals));
  ASSERT_EQ(compared.owner, 1u);
  ASSERT_OK_AND_ASSIGN(VerticalStepResult to_judges,
                       CallStep(*f, "hospital-b", 1, WinnerOf(round_proposals, compared.choices)));
  const fedanon::v1::VerticalCandidate winner = to_judges.instructions().won().candidate();
  std::vector<fedanon::v1::SignedProposal> signed_proposals = round_proposals;
  *signed_proposals[1].mutable_proposal() = to_judges.instructions().won();
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
    for (const auto& c : compared.choices) *commit.mutable_commit()->add_choices() = c;
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
  ASSERT_OK_AND_ASSIGN(const auto round1, ProposeAll(*f, 1));
  ASSERT_OK_AND_ASSIGN(const auto stale_round2, ProposeAll(*f, 2));  // before round 1's commit
  ASSERT_OK_AND_ASSIGN(const Compared compared1, CompareRound(*f, 1, round1));
  const size_t owner = compared1.owner;
  ASSERT_OK_AND_ASSIGN(VerticalStepResult won,
                       CallStep(*f, f->names[owner], 1, WinnerOf(round1, compared1.choices)));
  fedanon::v1::SignedProposal signed_won;
  signed_won.set_party(f->names[owner]);
  *signed_won.mutable_proposal() = won.instructions().won();
  VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = signed_won.proposal().candidate();
  ASSERT_OK_AND_ASSIGN(VerticalStepResult instructions, CallStep(*f, f->names[owner], 1, publish));
  for (const auto& party : f->names) {
    VerticalStep commit = CommitOfWon(signed_won, compared1.choices);
    if (party != f->names[owner]) {
      *commit.mutable_commit()->mutable_instruction() = instructions.instructions().for_parties(0);
    }
    ASSERT_OK(CallStep(*f, party, 1, commit).status());
  }
  ASSERT_OK_AND_ASSIGN(const auto fresh_round2, ProposeAll(*f, 2));
  const size_t other = 1 - owner;
  ASSERT_TRUE(fresh_round2[other].proposal().participate());
  // Round 2's comparison with the owner's proposal taken before the commit: the computing party
  // that checks it first refuses.
  EXPECT_THAT(CompareRound(*f, 2,
                           {other == 0 ? fresh_round2[0] : stale_round2[0],
                            other == 1 ? fresh_round2[1] : stale_round2[1]})
                  .status(),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("forged vertical proposal: the proposal of '", f->names[owner],
                                    "' as relayed by the leader does not carry its signature")));
  // Round 2's winner at the other party, with the owner's proposal taken before the commit (and
  // choices the leader made up: the stale proposal is refused first).
  EXPECT_THAT(CallStep(*f, f->names[other], 2,
                       WinnerOf({other == 0 ? fresh_round2[0] : stale_round2[0],
                                 other == 1 ? fresh_round2[1] : stale_round2[1]},
                                {})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("forged vertical proposal: the proposal of '", f->names[owner],
                                    "' as relayed by the leader does not carry its signature")));
  // The other party's own proposal of before the commit is refused the same way.
  EXPECT_THAT(CallStep(*f, f->names[other], 2,
                       WinnerOf({other == 0 ? stale_round2[0] : fresh_round2[0],
                                 other == 1 ? stale_round2[1] : fresh_round2[1]},
                                {})),
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
  ASSERT_OK_AND_ASSIGN(
      auto f,
      PartyFixture::Create("vertical_misbehave", TwoHospitals(), [](party::PartyAgentOptions& o) {
        if (o.name == "hospital-a") {
          o.deviation = party_testing::DeviatingParty("never-participate");
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

// The daemon's `--misbehave under-declare` (mohammed2011 §6): the party still proposes its best
// candidate, with the score 0, and says it misbehaves; the honest party's proposal is untouched.
TEST(VerticalPartyAgent, UnderDeclareModeProposesItsBestWithScoreZero) {
  ASSERT_OK_AND_ASSIGN(const party::MaliciousVerticalParty under,
                       party::MaliciousVerticalParty::Named("under-declare"));
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create(
                  "vertical_underdeclare", TwoHospitals(), [&under](party::PartyAgentOptions& o) {
                    if (o.name == "hospital-a") {
                      o.deviation = std::make_shared<party::MaliciousVerticalParty>(under);
                    }
                  }));
  ASSERT_OK(f->PrepareAll("job-00000000000f", kSpec));
  ASSERT_OK(MatchIds(*f).status());
  VerticalStep propose;
  propose.mutable_propose();
  ASSERT_OK_AND_ASSIGN(VerticalStepResult a, CallStep(*f, "hospital-a", 1, propose));
  EXPECT_TRUE(a.proposal().participate());
  EXPECT_TRUE(a.proposal().misbehaving());
  ASSERT_OK_AND_ASSIGN(VerticalStepResult b, CallStep(*f, "hospital-b", 1, propose));
  EXPECT_TRUE(b.proposal().participate());
  EXPECT_FALSE(b.proposal().misbehaving());
  // Its key carries the score 0: the honest party's candidate wins the comparison.
  std::vector<fedanon::v1::SignedProposal> proposals(2);
  proposals[0].set_party("hospital-a");
  *proposals[0].mutable_proposal() = a.proposal();
  proposals[1].set_party("hospital-b");
  *proposals[1].mutable_proposal() = b.proposal();
  ASSERT_OK_AND_ASSIGN(const Compared compared, CompareRound(*f, 1, proposals));
  EXPECT_EQ(compared.owner, 1u);
  ASSERT_OK_AND_ASSIGN(VerticalStepResult won,
                       CallStep(*f, "hospital-b", 1, WinnerOf(proposals, compared.choices)));
  EXPECT_GT(won.instructions().won().candidate().score(), 0);
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
    ASSERT_OK_AND_ASSIGN(wire::VerticalColumnsView view, wire::VerticalColumnsView::Parse(bytes));
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
    EXPECT_THAT(wire::VerticalColumnsView::Parse(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "do not parse"));
  }
  // A last row short of a cell: the join calls the columns ragged.
  message.add_cells("z");
  std::vector<wire::VerticalColumnsView> parts;
  ASSERT_OK_AND_ASSIGN(parts.emplace_back(),
                       wire::VerticalColumnsView::Parse(message.SerializeAsString()));
  EXPECT_EQ(parts[0].rows(), 3u);
  EXPECT_THAT(
      wire::JoinReleasedColumnsTo(parts, {"a"}, [](std::string_view) { return absl::OkStatus(); }),
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
  ASSERT_OK_AND_ASSIGN(const std::string whole, wire::JoinReleasedColumns({a, b}, header));
  std::vector<wire::VerticalColumnsView> parts;
  for (const auto* m : {&a, &b}) {
    ASSERT_OK_AND_ASSIGN(parts.emplace_back(),
                         wire::VerticalColumnsView::Parse(m->SerializeAsString()));
  }
  std::string streamed;
  int pieces = 0;
  ASSERT_OK(wire::JoinReleasedColumnsTo(parts, header, [&](std::string_view piece) {
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

// ---- A deviating leader's messages, each refused by name (docs/protocol.md, "(b) Checks without
// a test"). The test plays a leader that runs the honest steps up to its deviation. ----

constexpr char kJob[] = "job-00000000000f";

// The ID matching of the two parties as the honest leader drives it (PartyFixture::MatchIds),
// step by step so that a test can stop and deviate anywhere: each party's list encrypted and
// sealed for the other, re-encrypted there (its last hop), the digests for the owner delivered
// back, those for the leader opened and intersected.
struct IdWalk {
  PartyFixture* f = nullptr;
  uint32_t batch_ids = 1000;
  std::vector<fedanon::v1::SealedPayload> first_hops = std::vector<fedanon::v1::SealedPayload>(2);
  std::vector<fedanon::v1::IdListResult> last_hops = std::vector<fedanon::v1::IdListResult>(2);
  std::vector<std::string> leader_lists = std::vector<std::string>(2);

  const std::string& name(size_t i) const { return f->names[i]; }

  VerticalStep Encrypt(size_t origin) const {
    VerticalStep s;
    s.mutable_id_encrypt()->set_next(name(1 - origin));
    s.mutable_id_encrypt()->set_batch(0);
    s.mutable_id_encrypt()->set_batch_ids(batch_ids);
    return s;
  }
  // Origin's list at the other party, its last hop (two parties: no next).
  VerticalStep Reencrypt(size_t origin) const {
    VerticalStep s;
    *s.mutable_id_reencrypt()->mutable_list() = first_hops[origin];
    s.mutable_id_reencrypt()->set_origin(name(origin));
    s.mutable_id_reencrypt()->set_batch(0);
    s.mutable_id_reencrypt()->set_batches(1);
    s.mutable_id_reencrypt()->set_batch_ids(batch_ids);
    return s;
  }
  // Origin's digests, as its last hop sealed them for it, to be delivered to origin.
  VerticalStep Digests(size_t origin) const {
    VerticalStep s;
    s.mutable_id_digests()->set_origin(name(origin));
    s.mutable_id_digests()->set_batch(0);
    s.mutable_id_digests()->set_batches(1);
    s.mutable_id_digests()->set_batch_ids(batch_ids);
    *s.mutable_id_digests()->mutable_digests() = last_hops[origin].for_parties(1);
    return s;
  }
  VerticalStep Common(const std::string& digests, uint32_t batch = 0, uint32_t batches = 1) const {
    VerticalStep s;
    s.mutable_id_common()->set_batch(batch);
    s.mutable_id_common()->set_batches(batches);
    s.mutable_id_common()->set_batch_ids(batch_ids);
    s.mutable_id_common()->set_digests(digests);
    return s;
  }

  absl::Status EncryptAll() {
    for (size_t o = 0; o < 2; ++o) {
      ASSIGN_OR_RETURN(VerticalStepResult r, CallStep(*f, name(o), 0, Encrypt(o)));
      first_hops[o] = r.ids().list();
    }
    return absl::OkStatus();
  }
  absl::Status ReencryptAll() {
    ASSIGN_OR_RETURN(auto leader_keys, crypto::SealKeyPairFromPem(f->leader_seal.key_pem));
    const std::string& run = f->run_ids.at(kJob);
    for (size_t o = 0; o < 2; ++o) {
      const std::string& worker = name(1 - o);
      ASSIGN_OR_RETURN(VerticalStepResult r, CallStep(*f, worker, 0, Reencrypt(o)));
      last_hops[o] = r.ids();
      ASSIGN_OR_RETURN(auto sender, f->PartyKey(worker));
      ASSIGN_OR_RETURN(std::string bytes,
                       crypto::OpenFrom(*leader_keys, *sender,
                                        {kJob, run, 0, worker, "leader",
                                         wire::IdDigestsPurpose(run, name(o), 0, 1)},
                                        r.ids().for_parties(0).ciphertext()));
      fedanon::v1::IdList list;
      if (!list.ParseFromString(bytes)) return absl::InternalError("digests do not parse");
      leader_lists[o] = list.digests();
    }
    return absl::OkStatus();
  }
  absl::Status DeliverDigestsAll() {
    for (size_t o = 0; o < 2; ++o) RETURN_IF_ERROR(CallStep(*f, name(o), 0, Digests(o)).status());
    return absl::OkStatus();
  }
  // Every honest step before IdCommon; the common digests the honest leader hands every party.
  absl::StatusOr<std::string> UpToCommon() {
    RETURN_IF_ERROR(EncryptAll());
    RETURN_IF_ERROR(ReencryptAll());
    RETURN_IF_ERROR(DeliverDigestsAll());
    return wire::CommonDigests(leader_lists);
  }
};

// A fixture with the job prepared (kSpec unless told) and an IdWalk over it.
struct Prepared {
  std::unique_ptr<PartyFixture> f;
  IdWalk ids;
};
absl::StatusOr<Prepared> PrepareTwo(
    const std::string& name, const char* spec = kSpec,
    std::vector<std::map<std::string, std::string>> files = {},
    const std::function<void(party::PartyAgentOptions&)>& customize = nullptr) {
  Prepared p;
  ASSIGN_OR_RETURN(p.f,
                   PartyFixture::Create(name, files.empty() ? TwoHospitals() : files, customize));
  RETURN_IF_ERROR(p.f->PrepareAll(kJob, spec).status());
  p.ids.f = p.f.get();
  return p;
}

VerticalStep AlignOf(const std::vector<fedanon::v1::SignedIdCommon>& statements) {
  VerticalStep s;
  s.mutable_id_align();
  for (const auto& st : statements) *s.mutable_id_align()->add_statements() = st;
  return s;
}

// Each party's signed statement on the common ids it was handed (`digests[k]` for party k).
absl::StatusOr<std::vector<fedanon::v1::SignedIdCommon>> DeliverCommon(
    IdWalk& ids, const std::vector<std::string>& digests) {
  std::vector<fedanon::v1::SignedIdCommon> out;
  for (size_t k = 0; k < 2; ++k) {
    ASSIGN_OR_RETURN(VerticalStepResult r,
                     CallStep(*ids.f, ids.name(k), 0, ids.Common(digests[k])));
    out.emplace_back().set_party(ids.name(k));
    *out.back().mutable_statement() = r.ids().common();
  }
  return out;
}

// party/id_matching_party.cc Align: "not a data party of the job or signed twice".
TEST(VerticalIdMatchingRefusals, AnAlignmentWithAStatementTwiceOrFromANonPartyIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_align_twice"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  ASSERT_OK_AND_ASSIGN(auto st, DeliverCommon(p.ids, {common, common}));
  // hospital-a's statement twice in place of hospital-b's: as many statements as parties.
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, AlignOf({st[0], st[0]})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "a statement on the common ids from 'hospital-a', which is not a data "
                       "party of the job or signed twice"));
  // A statement "from" the leader (a participant with a sealing key, but no data party).
  fedanon::v1::SignedIdCommon from_leader = st[1];
  from_leader.set_party("leader");
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 0, AlignOf({st[0], st[1], from_leader})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "from 'leader', which is not a data party of the job or signed twice"));
  // The honest alignment still goes through.
  ASSERT_OK_AND_ASSIGN(VerticalStepResult aligned,
                       CallStep(*p.f, "hospital-a", 0, AlignOf({st[0], st[1]})));
  EXPECT_EQ(aligned.ids().common_records(), 5u);
}

// party/id_matching_party.cc Align: "does not carry its signature".
TEST(VerticalIdMatchingRefusals, AStatementOnTheCommonIdsWithoutItsPartysSignatureIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_align_signature"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  ASSERT_OK_AND_ASSIGN(auto st, DeliverCommon(p.ids, {common, common}));
  // hospital-a's statement (the same digest and count) relayed as hospital-b's.
  fedanon::v1::SignedIdCommon b_by_a = st[1];
  *b_by_a.mutable_statement() = st[0].statement();
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, AlignOf({st[0], b_by_a})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the statement on the common ids of 'hospital-b' does not carry its "
                       "signature"));
  // hospital-b's statement with another count.
  fedanon::v1::SignedIdCommon recounted = st[1];
  recounted.mutable_statement()->set_count(4);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, AlignOf({st[0], recounted})),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not carry its signature"));
}

// party/id_matching_party.cc Align: "received other common ids ... the leader handed the parties
// different intersections".
TEST(VerticalIdMatchingRefusals, DifferentCommonIdsForThePartiesAreRefusedAtTheAlignment) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_align_different"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  ASSERT_EQ(common.size(), 5 * wire::kIdDigestBytes);
  // hospital-b is handed four of the five common ids (still sorted, all in its own list): it
  // signs them, as hospital-a signs the five.
  const std::string fewer = common.substr(wire::kIdDigestBytes);
  ASSERT_OK_AND_ASSIGN(auto st, DeliverCommon(p.ids, {common, fewer}));
  EXPECT_EQ(st[1].statement().count(), 4u);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, AlignOf({st[0], st[1]})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "IdAlign: 'hospital-b' received other common ids (4) than this party (5): "
                       "the leader handed the parties different intersections"));
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 0, AlignOf({st[0], st[1]})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "'hospital-a' received other common ids (5) than this party (4)"));
}

// party/id_matching_party.cc Align: "the leader did not relay every data party's statement".
TEST(VerticalIdMatchingRefusals, AnAlignmentWithoutEveryPartysStatementIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_align_missing"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  ASSERT_OK_AND_ASSIGN(auto st, DeliverCommon(p.ids, {common, common}));
  for (const auto& only : {std::vector<fedanon::v1::SignedIdCommon>{st[0]},
                           std::vector<fedanon::v1::SignedIdCommon>{}}) {
    EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, AlignOf(only)),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "IdAlign: the leader did not relay every data party's statement on the "
                         "common ids"));
  }
}

// party/id_matching_party.cc Common: the batch range and order ("of the common ids is out of
// range", "arrived before batch").
TEST(VerticalIdMatchingRefusals, CommonIdsOutOfRangeOrOutOfOrderAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_common_range"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(common, 1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "batch 1 of 1 of the common ids is out of range"));
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(common, 0, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "batch 0 of 0 of the common ids is out of range"));
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(common, 1, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "batch 1 of the common ids arrived before batch 0"));
}

// party/id_matching_party.cc Common: "of the common ids holds N bytes".
TEST(VerticalIdMatchingRefusals, CommonIdsOfAWrongLengthAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_common_bytes"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(common + "x")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("batch 0 of 1 of the common ids holds ", common.size() + 1,
                                    " bytes; every batch but the last holds 1000")));
  // More digests than a batch holds (the batch size is 1000 ids).
  std::string too_many;
  for (int i = 0; i < 1001; ++i) too_many += common.substr(0, wire::kIdDigestBytes);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(too_many)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("holds ", too_many.size(), " bytes")));
}

// party/id_matching_party.cc Common: "the leader's common ids are refused".
TEST(VerticalIdMatchingRefusals, CommonIdsOutsideThePartysOwnListAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_common_foreign"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  // One more digest, in no party's list (sorted last).
  const std::string foreign = common + std::string(wire::kIdDigestBytes, '\xff');
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(foreign)),
              StatusIs(absl::StatusCode::kPermissionDenied, "the leader's common ids are refused"));
}

// party/id_matching_party.cc Common: "was already delivered with other content".
TEST(VerticalIdMatchingRefusals, CommonIdsDeliveredAgainWithOtherContentAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_common_again"));
  ASSERT_OK_AND_ASSIGN(std::string common, p.ids.UpToCommon());
  ASSERT_OK_AND_ASSIGN(VerticalStepResult first,
                       CallStep(*p.f, "hospital-a", 0, p.ids.Common(common)));
  EXPECT_EQ(first.ids().common().count(), 5u);
  // Four of the five afterwards: the party would sign a second intersection.
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, p.ids.Common(common.substr(wire::kIdDigestBytes))),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "one request, one answer: batch 0 of the common ids was already delivered "
                       "with other content"));
  // The same delivery again gets the same statement.
  ASSERT_OK_AND_ASSIGN(VerticalStepResult again,
                       CallStep(*p.f, "hospital-a", 0, p.ids.Common(common)));
  EXPECT_EQ(again.SerializeAsString(), first.SerializeAsString());
}

// party/id_matching_party.cc Digests: "are not for this party".
TEST(VerticalIdMatchingRefusals, DigestsOfAnotherPartysListAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_digests_other"));
  ASSERT_OK(p.ids.EncryptAll());
  ASSERT_OK(p.ids.ReencryptAll());
  // hospital-a's digests (sealed by hospital-b for hospital-a) delivered to hospital-b.
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 0, p.ids.Digests(0)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the digests of 'hospital-a''s list are not for this party"));
}

// party/id_matching_party.cc Digests: "not by its last hop".
TEST(VerticalIdMatchingRefusals, DigestsNotSealedByTheLastHopAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_digests_sender"));
  ASSERT_OK(p.ids.EncryptAll());
  ASSERT_OK(p.ids.ReencryptAll());
  // hospital-a's own first hop (sealed by hospital-a) passed off as its digests.
  VerticalStep d = p.ids.Digests(0);
  *d.mutable_id_digests()->mutable_digests() = p.ids.first_hops[0];
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, d),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "are sealed by 'hospital-a', not by its last hop 'hospital-b'"));
}

// party/id_matching_party.cc Digests: "do not open".
TEST(VerticalIdMatchingRefusals, DigestsSealedForTheLeaderAreRefusedByTheOwner) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_digests_open"));
  ASSERT_OK(p.ids.EncryptAll());
  ASSERT_OK(p.ids.ReencryptAll());
  // The copy the last hop sealed for the leader, relayed to the owner.
  VerticalStep d = p.ids.Digests(0);
  *d.mutable_id_digests()->mutable_digests() = p.ids.last_hops[0].for_parties(0);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, d),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the digests of batch 0 of 1 of this party's list do not open"));
  // And the owner's copy under another batch count.
  VerticalStep recounted = p.ids.Digests(0);
  recounted.mutable_id_digests()->set_batches(2);
  EXPECT_FALSE(CallStep(*p.f, "hospital-a", 0, recounted).ok());
}

// party/id_matching_party.cc Digests: "an ID digest list does not parse". No leader can reach it
// (the list is sealed by the last hop): here the last hop itself (its sealing key) seals bytes
// that are no digest list.
TEST(VerticalIdMatchingRefusals, ADigestListThatDoesNotParseIsRefused) {
  std::string b_key;
  ASSERT_OK_AND_ASSIGN(
      Prepared p, PrepareTwo("refuse_digests_parse", kSpec, {}, [&](party::PartyAgentOptions& o) {
        if (o.name == "hospital-b") b_key = o.seal_key_pem;
      }));
  ASSERT_OK(p.ids.EncryptAll());
  ASSERT_OK(p.ids.ReencryptAll());
  ASSERT_OK_AND_ASSIGN(auto b_keys, crypto::SealKeyPairFromPem(b_key));
  ASSERT_OK_AND_ASSIGN(auto a_key, p.f->PartyKey("hospital-a"));
  const std::string& run = p.f->run_ids.at(kJob);
  VerticalStep d = p.ids.Digests(0);
  for (const std::string& bytes :
       {std::string("\xff\xff\xff", 3), std::string("\x12\x03xyz", 5)}) {  // digests of 3 bytes
    ASSERT_OK_AND_ASSIGN(*d.mutable_id_digests()->mutable_digests()->mutable_ciphertext(),
                         crypto::SealFrom(*b_keys, *a_key,
                                          {kJob, run, 0, "hospital-b", "hospital-a",
                                           wire::IdDigestsPurpose(run, "hospital-a", 0, 1)},
                                          bytes));
    EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, d),
                StatusIs(absl::StatusCode::kInvalidArgument, "an ID digest list does not parse"))
        << absl::CEscape(bytes);
  }
}

// party/id_matching_party.cc EncryptBatch: "IdEncrypt names 'x' as next".
TEST(VerticalIdMatchingRefusals, AnIdEncryptNamingAnotherThanTheRingsSuccessorIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_encrypt_next"));
  for (const std::string next : {"leader", "hospital-a"}) {
    VerticalStep e = p.ids.Encrypt(0);
    e.mutable_id_encrypt()->set_next(next);
    EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, e),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         absl::StrCat("IdEncrypt names '", next,
                                      "' as next, not the ring's successor 'hospital-b'")));
  }
}

// party/id_matching_party.cc EncryptBatch: the batch range (CheckBatchCount).
TEST(VerticalIdMatchingRefusals, AnIdEncryptOfABatchBeyondTheListIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_encrypt_batch"));
  VerticalStep e = p.ids.Encrypt(0);
  e.mutable_id_encrypt()->set_batch(1);  // six ids in batches of 1000: one batch
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "batch 1 of 1 of 'hospital-a''s list is out of range"));
}

// party/id_matching_party.cc EncryptBatch: "was already encrypted for another request". Every
// field of an IdEncrypt is checked before, so only other bytes under the same batch reach it: an
// unknown field the leader adds.
TEST(VerticalIdMatchingRefusals, AnIdEncryptOfABatchEncryptedForAnotherRequestIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_encrypt_again"));
  const VerticalStep honest = p.ids.Encrypt(0);
  ASSERT_OK(CallStep(*p.f, "hospital-a", 0, honest));
  VerticalStep other = honest;
  ASSERT_TRUE(other.mutable_id_encrypt()->ParseFromString(
      honest.id_encrypt().SerializeAsString() + std::string("\xa0\x06\x01", 3)));  // field 100
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, other),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "one request, one answer: batch 0 of this party's list was already "
                       "encrypted for another request"));
  // The same request (even under another round) is answered again.
  EXPECT_OK(CallStep(*p.f, "hospital-a", 1, honest));
}

// party/id_matching_party.cc CheckBatchSize: "the ID batch size changed".
TEST(VerticalIdMatchingRefusals, AnIdBatchSizeThatChangesIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_batch_size"));
  ASSERT_OK(p.ids.EncryptAll());
  VerticalStep re = p.ids.Reencrypt(0);
  re.mutable_id_reencrypt()->set_batch_ids(500);
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 0, re),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the ID batch size changed from 1000 to 500 ids"));
  VerticalStep e = p.ids.Encrypt(0);
  e.mutable_id_encrypt()->set_batch_ids(2);
  EXPECT_THAT(
      CallStep(*p.f, "hospital-a", 0, e),
      StatusIs(absl::StatusCode::kInvalidArgument, "the ID batch size changed from 1000 to 2 ids"));
}

// party/id_matching_party.cc HopInWalk: "is not another data party of the job" (two parties: no
// party re-encrypts its own list) and "is not a data party of the job".
TEST(VerticalIdMatchingRefusals, AnIdReEncryptOfItsOwnOrANonPartysListIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_reencrypt_origin"));
  ASSERT_OK(p.ids.EncryptAll());
  // hospital-b's list is re-encrypted at hospital-a; named as hospital-a's own.
  VerticalStep own = p.ids.Reencrypt(1);
  own.mutable_id_reencrypt()->set_origin("hospital-a");
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 0, own),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'hospital-a' is not another data party of the job"));
  VerticalStep leaders = p.ids.Reencrypt(1);
  leaders.mutable_id_reencrypt()->set_origin("leader");
  EXPECT_THAT(
      CallStep(*p.f, "hospital-a", 0, leaders),
      StatusIs(absl::StatusCode::kInvalidArgument, "'leader' is not a data party of the job"));
}

// party/id_matching_party.cc ReencryptBatch: "names 'x' as next, not 'y' (the ring's order)".
TEST(VerticalIdMatchingRefusals, AnIdReEncryptNamingANextHopAfterTheLastIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_reencrypt_next"));
  ASSERT_OK(p.ids.EncryptAll());
  // With two parties the other party is the last hop: the list goes on to no one (the owner
  // would learn its own fully encrypted points otherwise).
  VerticalStep re = p.ids.Reencrypt(0);
  re.mutable_id_reencrypt()->set_next("hospital-a");
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 0, re),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "IdReEncrypt of 'hospital-a''s list names 'hospital-a' as next, not '' "
                       "(the ring's order)"));
  EXPECT_OK(CallStep(*p.f, "hospital-b", 0, p.ids.Reencrypt(0)));
}

// ---- Rounds ----

// One round as the honest leader drives it, in steps.
struct Round {
  uint32_t round = 1;
  std::vector<fedanon::v1::SignedProposal> proposals;  // the owner's: its winning one after Win
  size_t owner = 0;
  std::vector<fedanon::v1::SignedWinnerChoice> choices;
  fedanon::v1::VerticalCandidate candidate;  // after Win
  VerticalStepResult to_judges;              // the owner's Winner reply
  VerticalStepResult verdict;                // the judge's Deliver reply (judged jobs)
  VerticalStepResult published;              // the owner's Publish reply
  fedanon::v1::SignedVerdict signed_verdict;
  std::vector<bool> base_kept;  // the computing parties' VerticalCompared.base_kept
  bool judged() const { return to_judges.instructions().for_parties_size() > 0; }
};

// Proposals and the secure comparison of the round: the owner and both choices.
absl::StatusOr<Round> ProposeRound(PartyFixture& f, uint32_t round, uint32_t first_step = 1) {
  Round r;
  r.round = round;
  ASSIGN_OR_RETURN(r.proposals, ProposeAll(f, round));
  ASSIGN_OR_RETURN(const Compared compared, CompareRound(f, round, r.proposals, first_step));
  r.owner = compared.owner;
  r.choices = compared.choices;
  r.base_kept = compared.base_kept;
  return r;
}

absl::Status Win(PartyFixture& f, Round& r) {
  ASSIGN_OR_RETURN(r.to_judges,
                   CallStep(f, f.names[r.owner], r.round, WinnerOf(r.proposals, r.choices)));
  r.candidate = r.to_judges.instructions().won().candidate();
  *r.proposals[r.owner].mutable_proposal() = r.to_judges.instructions().won();
  return absl::OkStatus();
}

// The other party judges (it holds the sensitive values).
absl::Status Judge(PartyFixture& f, Round& r) {
  VerticalStep deliver;
  *deliver.mutable_deliver()->mutable_instruction() = r.to_judges.instructions().for_parties(0);
  ASSIGN_OR_RETURN(r.verdict, CallStep(f, f.names[1 - r.owner], r.round, deliver));
  r.signed_verdict.set_judge(f.names[1 - r.owner]);
  *r.signed_verdict.mutable_candidate() = r.candidate;
  r.signed_verdict.set_accept(r.verdict.verdict().accept());
  r.signed_verdict.set_signature(r.verdict.verdict().signature());
  return absl::OkStatus();
}

VerticalStep PublishOf(const Round& r) {
  VerticalStep publish;
  *publish.mutable_publish()->mutable_candidate() = r.candidate;
  if (r.judged()) *publish.mutable_publish()->add_verdicts() = r.verdict.verdict().for_owner();
  return publish;
}

absl::Status Publish(PartyFixture& f, Round& r) {
  ASSIGN_OR_RETURN(r.published, CallStep(f, f.names[r.owner], r.round, PublishOf(r)));
  return absl::OkStatus();
}

// The honest commit (acceptance) of the round's winner for `party`.
VerticalStep CommitOf(const PartyFixture& f, const Round& r, const std::string& party) {
  VerticalStep commit;
  *commit.mutable_commit()->mutable_candidate() = r.candidate;
  commit.mutable_commit()->set_accept(true);
  *commit.mutable_commit()->mutable_winner() = r.proposals[r.owner];
  for (const auto& c : r.choices) *commit.mutable_commit()->add_choices() = c;
  if (r.judged()) *commit.mutable_commit()->add_verdicts() = r.signed_verdict;
  if (party != f.names[r.owner] && r.published.instructions().for_parties_size() > 0) {
    *commit.mutable_commit()->mutable_instruction() = r.published.instructions().for_parties(0);
  }
  return commit;
}

absl::Status CommitAll(PartyFixture& f, const Round& r) {
  for (const auto& party : f.names) {
    RETURN_IF_ERROR(CallStep(f, party, r.round, CommitOf(f, r, party)).status());
  }
  return absl::OkStatus();
}

// A whole accepted round.
absl::StatusOr<Round> HonestRound(PartyFixture& f, uint32_t round) {
  ASSIGN_OR_RETURN(Round r, ProposeRound(f, round));
  RETURN_IF_ERROR(Win(f, r));
  if (r.judged()) RETURN_IF_ERROR(Judge(f, r));
  RETURN_IF_ERROR(Publish(f, r));
  RETURN_IF_ERROR(CommitAll(f, r));
  return r;
}

// hospital-a never proposes, so every winner is hospital-b's (Job).
void ANeverProposes(party::PartyAgentOptions& o) {
  if (o.name == "hospital-a") o.deviation = party_testing::DeviatingParty("never-participate");
}

// kJudgedSpec with a confidence bound that splitting Job breaks: White-collar holds p3 (flu) and
// p5 (hiv), a confidence of 0.5 > 0.45 (0.4 before the split).
constexpr char kVetoSpec[] = R"(name: vertical-veto
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
  - {name: Diag, role: sensitive, values: [flu, hiv], party: hospital-a}
privacy: {model: lkc, L: 2, K: 1, C: 0.45, sensitive_values: [hiv]}
partitioning: vertical
)";

// party/vertical_rounds_party.cc CheckRoundProposals: each party's proposal in its ring place.
TEST(VerticalRoundRefusals, AWinnerWithTwoProposalsOfOnePartyIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_winner_twice"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  const std::string& owner = p.f->names[r.owner];
  // The loser's proposal replaced by a second copy of the owner's: still one per party in count.
  EXPECT_THAT(
      CallStep(*p.f, owner, 1, WinnerOf({r.proposals[r.owner], r.proposals[r.owner]}, r.choices)),
      StatusIs(absl::StatusCode::kPermissionDenied, "forged vertical winner: proposal "));
  EXPECT_THAT(CallStep(*p.f, owner, 1,
                       WinnerOf({r.proposals[0], r.proposals[1], r.proposals[0]}, r.choices)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the leader did not relay every party's signed proposal"));
  EXPECT_OK(Win(*p.f, r));
}

// party/vertical_rounds_party.cc CheckRoundProposals: "the leader did not relay every party's
// signed proposal".
TEST(VerticalRoundRefusals, AWinnerWithoutEveryPartysProposalIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_winner_missing"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  EXPECT_THAT(CallStep(*p.f, p.f->names[r.owner], 1, WinnerOf({r.proposals[r.owner]}, r.choices)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "forged vertical winner: the leader did not relay every party's signed "
                       "proposal"));
}

// party/vertical_rounds_party.cc CheckWinnerChoices: the winner is the party both computing
// parties chose, signed for this round; a choice missing, twice, for another party, or from
// another round is refused, at the owner and at the commit.
TEST(VerticalRoundRefusals, AWinnerOrCommitWithoutBothComputingPartiesSignedChoiceIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_winner_choices"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  const std::string& owner = p.f->names[r.owner];
  const std::string& other = p.f->names[1 - r.owner];
  EXPECT_THAT(CallStep(*p.f, owner, 1, WinnerOf(r.proposals, {r.choices[0]})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the secure comparison's choice of both computing parties"));
  EXPECT_THAT(CallStep(*p.f, owner, 1, WinnerOf(r.proposals, {r.choices[0], r.choices[0]})),
              StatusIs(absl::StatusCode::kPermissionDenied, "two choices of"));
  // The leader names the loser the winner (its name in the choices: the signatures fail).
  std::vector<fedanon::v1::SignedWinnerChoice> renamed = r.choices;
  for (auto& c : renamed) c.set_winner(other);
  EXPECT_THAT(CallStep(*p.f, other, 1, WinnerOf(r.proposals, renamed)),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not carry its signature"));
  EXPECT_THAT(CallStep(*p.f, other, 1, WinnerOf(r.proposals, r.choices)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("as the round's winner, not '", other, "'")));
  // A choice made by a party that does not compute (a forged judge name).
  std::vector<fedanon::v1::SignedWinnerChoice> stranger = r.choices;
  stranger[0].set_judge("hospital-z");
  EXPECT_THAT(
      CallStep(*p.f, owner, 1, WinnerOf(r.proposals, stranger)),
      StatusIs(absl::StatusCode::kPermissionDenied, "'hospital-z' does not compute the winner"));
  // Another round's choices (round 2's proposals and comparison) do not verify in round 1.
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Publish(*p.f, r));
  VerticalStep commit = CommitOf(*p.f, r, other);
  commit.mutable_commit()->clear_choices();
  EXPECT_THAT(CallStep(*p.f, other, 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "forged vertical commit: the secure comparison's choice"));
  ASSERT_OK_AND_ASSIGN(Round later, ProposeRound(*p.f, 2));
  commit = CommitOf(*p.f, r, other);
  commit.mutable_commit()->clear_choices();
  for (const auto& c : later.choices) {
    auto* relayed = commit.mutable_commit()->add_choices();
    *relayed = c;
    relayed->set_winner(owner);
  }
  EXPECT_THAT(CallStep(*p.f, other, 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not carry its signature"));
  EXPECT_OK(CommitAll(*p.f, r));
}

// party/vertical_rounds_party.cc Commit: a party that feeds the secure comparison a larger key
// than its candidate's wins the round, but the party whose own proposal ranks above the revealed
// winner refuses the commit (it knows its own key; nobody sees the other's).
TEST(VerticalRoundRefusals, AWinnerThatRanksBelowAPartysOwnProposalIsRefusedByThatParty) {
  // Honest, hospital-b's Job split wins round 1 (IdMatchingOneRoundAndRelease).
  ASSERT_OK_AND_ASSIGN(Prepared honest, PrepareTwo("refuse_inflated_key_honest"));
  ASSERT_OK(MatchIds(*honest.f).status());
  ASSERT_OK_AND_ASSIGN(Round fair, ProposeRound(*honest.f, 1));
  ASSERT_EQ(fair.owner, 1u);
  ASSERT_OK_AND_ASSIGN(
      Prepared p, PrepareTwo("refuse_inflated_key", kSpec, {}, [](party::PartyAgentOptions& o) {
        if (o.name == "hospital-a") {
          o.deviation = party_testing::DeviatingParty("inflate-comparison-key");
        }
      }));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_EQ(r.owner, 0u) << "the inflated key wins the comparison";
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Publish(*p.f, r));
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, CommitOf(*p.f, r, "hospital-b")),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "refused the round's winner: this party's own proposal of round 1 ranks "
                       "above the committed candidate"));
}

// party/vertical_rounds_party.cc Compare: the comparison's refusals at a computing party.
TEST(VerticalRoundRefusals, ComparisonStepsOutOfRoleOrderOrWithForeignInputsAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_compare"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(const auto proposals, ProposeAll(*p.f, 1));
  VerticalStep first;
  first.mutable_compare()->set_step(1);
  for (const auto& pr : proposals) *first.mutable_compare()->add_proposals() = pr;
  // Step 1 is the evaluator's (the ring's second party), not the garbler's.
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 1, first),
              StatusIs(absl::StatusCode::kInvalidArgument, "step 1 is not one of this party's"));
  // A later step before the first, without the garbler's message.
  VerticalStep third;
  third.mutable_compare()->set_step(3);
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, third),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "step 3 takes a message sealed by 'hospital-a' for 'hospital-b'"));
  // The first step without every party's signed proposal.
  VerticalStep bare;
  bare.mutable_compare()->set_step(1);
  EXPECT_THAT(
      CallStep(*p.f, "hospital-b", 1, bare),
      StatusIs(absl::StatusCode::kPermissionDenied, "did not relay every party's signed proposal"));
  ASSERT_OK_AND_ASSIGN(VerticalStepResult m1, CallStep(*p.f, "hospital-b", 1, first));
  ASSERT_TRUE(m1.compared().has_sealed());
  // The garbler's step with the evaluator's message sealed for another purpose (here: sealed
  // by the evaluator for itself, i.e. not for this party) is refused.
  VerticalStep second;
  second.mutable_compare()->set_step(2);
  for (const auto& pr : proposals) *second.mutable_compare()->add_proposals() = pr;
  fedanon::v1::SealedPayload wrong = m1.compared().sealed();
  wrong.set_receiver("hospital-b");
  *second.mutable_compare()->mutable_input() = wrong;
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 1, second),
              StatusIs(absl::StatusCode::kPermissionDenied, "takes a message sealed by"));
  // Replayed into another round: it does not open.
  ASSERT_OK_AND_ASSIGN(const auto round2, ProposeAll(*p.f, 2));
  VerticalStep replayed;
  replayed.mutable_compare()->set_step(2);
  for (const auto& pr : round2) *replayed.mutable_compare()->add_proposals() = pr;
  *replayed.mutable_compare()->mutable_input() = m1.compared().sealed();
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 2, replayed),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not open"));
  // The refusals changed nothing: the comparison of round 1 goes on.
  *second.mutable_compare()->mutable_input() = m1.compared().sealed();
  ASSERT_OK_AND_ASSIGN(VerticalStepResult m2, CallStep(*p.f, "hospital-a", 1, second));
  EXPECT_TRUE(m2.compared().has_sealed());
}

// Protocol 4.1: after the first round's comparison both computing parties say they keep its base
// OTs, and a later round's comparison from step 3 (three messages) names the same winner as a
// fresh one (steps 1 to 6, as a 4.0 leader asks) in an identical federation. The evaluator's first
// step from kept base OTs takes no input.
//
// Protocol 4.1 too: a commit that asks `propose_next` is answered with the party's proposal of the
// next round instead of `committed` (signed for round 2 and the decisions after the commit: the
// comparison of round 2 takes them), the same participation as a VerticalPropose of round 2.
TEST(VerticalRounds, ALaterComparisonFromKeptBaseOtsNamesTheWinnerAFreshOneNames) {
  ASSERT_OK_AND_ASSIGN(Prepared kept, PrepareTwo("kept_base_ots"));
  ASSERT_OK_AND_ASSIGN(Prepared fresh, PrepareTwo("fresh_base_ots"));
  std::vector<fedanon::v1::SignedProposal> proposals;
  for (Prepared* p : {&kept, &fresh}) {
    ASSERT_OK(MatchIds(*p->f).status());
    ASSERT_OK_AND_ASSIGN(Round r1, ProposeRound(*p->f, 1));
    EXPECT_THAT(r1.base_kept, ::testing::ElementsAre(true, true));
    ASSERT_OK(Win(*p->f, r1));
    if (r1.judged()) ASSERT_OK(Judge(*p->f, r1));
    ASSERT_OK(Publish(*p->f, r1));
    for (const auto& party : p->f->names) {
      VerticalStep commit = CommitOf(*p->f, r1, party);
      commit.mutable_commit()->set_propose_next(p == &kept);
      ASSERT_OK_AND_ASSIGN(const VerticalStepResult reply, CallStep(*p->f, party, 1, commit));
      if (p == &kept) {
        ASSERT_TRUE(reply.has_proposal()) << party;
        proposals.emplace_back().set_party(party);
        *proposals.back().mutable_proposal() = reply.proposal();
      } else {
        EXPECT_TRUE(reply.committed()) << party;
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(const auto asked, ProposeAll(*fresh.f, 2));
  for (size_t i = 0; i < asked.size(); ++i) {
    EXPECT_EQ(proposals[i].proposal().participate(), asked[i].proposal().participate()) << i;
  }
  VerticalStep with_input;
  with_input.mutable_compare()->set_step(3);
  for (const auto& pr : proposals) *with_input.mutable_compare()->add_proposals() = pr;
  with_input.mutable_compare()->mutable_input()->set_sender("hospital-a");
  EXPECT_THAT(CallStep(*kept.f, "hospital-b", 2, with_input),
              StatusIs(absl::StatusCode::kInvalidArgument, "its first step takes no input"));
  ASSERT_OK_AND_ASSIGN(const Compared from_kept, CompareRound(*kept.f, 2, proposals, 3));
  ASSERT_OK_AND_ASSIGN(const Compared from_fresh, CompareRound(*fresh.f, 2, asked, 1));
  ASSERT_EQ(from_kept.choices.size(), 2u);
  EXPECT_EQ(from_kept.choices[0].winner(), from_fresh.choices[0].winner());
  EXPECT_EQ(from_kept.owner, from_fresh.owner);
  EXPECT_THAT(from_kept.base_kept, ::testing::ElementsAre(true, true));
  EXPECT_THAT(from_fresh.base_kept, ::testing::ElementsAre(true, true));
}

// party/vertical_rounds_party.cc CheckCommitEvidence: "did not propose the candidate the leader
// commits".
TEST(VerticalRoundRefusals, ACommitOfACandidateTheWinnerDidNotProposeIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_commit_candidate"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  const size_t other = 1 - r.owner;
  // The losing party is told to commit another candidate, with the winner's proposal as evidence.
  VerticalStep commit = CommitOf(*p.f, r, p.f->names[other]);
  commit.mutable_commit()->mutable_candidate()->set_node(r.candidate.node() + 1);
  EXPECT_THAT(CallStep(*p.f, p.f->names[other], 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("forged vertical commit: '", p.f->names[r.owner],
                                    "' did not propose the candidate the leader commits")));
  // Nor does a round's proposal (participation only, no candidate) stand for the winner's.
  {
    ASSERT_OK_AND_ASSIGN(Prepared q,
                         PrepareTwo("refuse_commit_declined", kSpec, {}, ANeverProposes));
    ASSERT_OK(MatchIds(*q.f).status());
    ASSERT_OK_AND_ASSIGN(Round s, ProposeRound(*q.f, 1));
    const fedanon::v1::SignedProposal round_proposal = s.proposals[s.owner];
    ASSERT_OK(Win(*q.f, s));
    VerticalStep c = CommitOf(*q.f, s, "hospital-a");
    *c.mutable_commit()->mutable_winner() = round_proposal;
    EXPECT_THAT(CallStep(*q.f, "hospital-a", 1, c),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "'hospital-b' did not propose the candidate the leader commits"));
  }
}

// party/vertical_rounds_party.cc CheckCommitEvidence: "is not a judge of this candidate".
TEST(VerticalRoundRefusals, ACommitWithAVerdictOfANonJudgeIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_commit_nonjudge"));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Publish(*p.f, r));
  // No party holds sensitive values here: no party judges, so no verdict belongs to a commit.
  const std::string& other = p.f->names[1 - r.owner];
  VerticalStep commit = CommitOf(*p.f, r, other);
  auto* v = commit.mutable_commit()->add_verdicts();
  v->set_judge(other);
  *v->mutable_candidate() = r.candidate;
  v->set_accept(true);
  EXPECT_THAT(CallStep(*p.f, other, 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("forged vertical verdict: '", other,
                                    "' is not a judge of this candidate")));
  EXPECT_OK(CallStep(*p.f, other, 1, CommitOf(*p.f, r, other)));
}

// party/vertical_rounds_party.cc CheckCommitEvidence: the verdict "is about another candidate".
TEST(VerticalRoundRefusals, ACommitWithAVerdictAboutAnotherCandidateIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_commit_verdict_candidate", kJudgedSpec,
                                              TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_TRUE(r.judged());
  ASSERT_OK(Judge(*p.f, r));
  ASSERT_OK(Publish(*p.f, r));
  VerticalStep commit = CommitOf(*p.f, r, "hospital-a");
  auto* v = commit.mutable_commit()->mutable_verdicts(0)->mutable_candidate();
  v->set_candidate(v->candidate() + 1);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 1, commit),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "forged vertical verdict: the verdict of 'hospital-a' is about another "
                       "candidate"));
  EXPECT_OK(CommitAll(*p.f, r));
}

// party/vertical_rounds_party.cc Publish: "which is not a judge still to be heard".
TEST(VerticalRoundRefusals, AVerdictRelayedTwiceOrFromTheOwnerIsRefusedAtPublish) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_publish_twice", kJudgedSpec,
                                              TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Judge(*p.f, r));
  VerticalStep twice = PublishOf(r);
  *twice.mutable_publish()->add_verdicts() = r.verdict.verdict().for_owner();
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, twice),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "a verdict from 'hospital-a', which is not a judge still to be heard"));
  VerticalStep own = PublishOf(r);
  own.mutable_publish()->mutable_verdicts(0)->set_sender("hospital-b");
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, own),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "a verdict from 'hospital-b', which is not a judge still to be heard"));
  EXPECT_OK(Publish(*p.f, r));
}

// party/vertical_rounds_party.cc Publish: the verdict "is not about this candidate". Parties keep
// no round counter: a leader that reuses round 1 for the next winner holds the judge's sealed
// acceptance of round 1's first candidate, which opens in round 1.
TEST(VerticalRoundRefusals, AVerdictOnAnotherCandidateOfTheRoundIsRefusedAtPublish) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_publish_other", kJudgedSpec,
                                              TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round first, HonestRound(*p.f, 1));
  ASSERT_OK_AND_ASSIGN(Round next, ProposeRound(*p.f, 1));
  ASSERT_EQ(next.owner, 1u);
  ASSERT_OK(Win(*p.f, next));
  ASSERT_NE(next.candidate.node(), first.candidate.node());
  VerticalStep publish = PublishOf(first);
  *publish.mutable_publish()->mutable_candidate() = next.candidate;
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, publish),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the verdict of 'hospital-a' is not about this candidate"));
  ASSERT_OK(Judge(*p.f, next));
  EXPECT_OK(Publish(*p.f, next));
}

// party/vertical_rounds_party.cc Publish: "rejected the candidate: nothing to publish"; Commit:
// "a rejected candidate comes with no instruction".
TEST(VerticalRoundRefusals, AVetoedCandidateIsNeitherPublishedNorCommittedWithAnInstruction) {
  ASSERT_OK_AND_ASSIGN(
      Prepared p, PrepareTwo("refuse_vetoed", kVetoSpec, TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_TRUE(r.judged());
  ASSERT_OK(Judge(*p.f, r));
  ASSERT_FALSE(r.verdict.verdict().accept());
  // The leader passes the veto off as an acceptance.
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, PublishOf(r)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "'hospital-a' rejected the candidate: nothing to publish"));
  // The drop, with the judge's instruction attached for the owner.
  VerticalStep drop = CommitOf(*p.f, r, "hospital-b");
  drop.mutable_commit()->set_accept(false);
  *drop.mutable_commit()->mutable_instruction() = r.to_judges.instructions().for_parties(0);
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, drop),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a rejected candidate comes with no instruction"));
  drop.mutable_commit()->clear_instruction();
  for (const auto& party : p.f->names) EXPECT_OK(CallStep(*p.f, party, 1, drop));
}

// party/vertical_rounds_party.cc Commit: "a judge receives the instruction before its verdict".
TEST(VerticalRoundRefusals, AnInstructionWithTheCommitForAJudgeIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_commit_judge_instruction", kJudgedSpec,
                                              TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Judge(*p.f, r));
  ASSERT_OK(Publish(*p.f, r));
  VerticalStep commit = CommitOf(*p.f, r, "hospital-a");
  *commit.mutable_commit()->mutable_instruction() = r.to_judges.instructions().for_parties(0);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 1, commit),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a judge receives the instruction before its verdict"));
  EXPECT_OK(CommitAll(*p.f, r));
}

// party/vertical_rounds_party.cc Commit: "the commit's instruction is about another candidate".
// Round 1 reused for the next winner: the instruction of round 1's first candidate opens.
TEST(VerticalRoundRefusals, ACommitWithTheInstructionOfAnotherCandidateIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p,
                       PrepareTwo("refuse_commit_other_instruction", kSpec, {}, ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round first, HonestRound(*p.f, 1));
  ASSERT_OK_AND_ASSIGN(Round next, ProposeRound(*p.f, 1));
  ASSERT_EQ(next.owner, 1u);
  ASSERT_OK(Win(*p.f, next));
  ASSERT_NE(next.candidate.node(), first.candidate.node());
  ASSERT_OK(Publish(*p.f, next));
  VerticalStep commit = CommitOf(*p.f, next, "hospital-a");
  *commit.mutable_commit()->mutable_instruction() = first.published.instructions().for_parties(0);
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 1, commit),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the commit's instruction is about another candidate"));
  EXPECT_OK(CommitAll(*p.f, next));
}

// party/vertical_rounds_party.cc Commit: "the commit of our own candidate comes without every
// judge's sealed acceptance" (the judge's signed verdict alone does not do).
TEST(VerticalRoundRefusals, TheOwnersCommitWithoutItsPublishIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_commit_unpublished", kJudgedSpec,
                                              TwoHospitalsWithDiag(), ANeverProposes));
  ASSERT_OK(MatchIds(*p.f).status());
  ASSERT_OK_AND_ASSIGN(Round r, ProposeRound(*p.f, 1));
  ASSERT_OK(Win(*p.f, r));
  ASSERT_OK(Judge(*p.f, r));
  ASSERT_TRUE(r.verdict.verdict().accept());
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 1, CommitOf(*p.f, r, "hospital-b")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the commit of our own candidate comes without every judge's sealed "
                       "acceptance"));
}

// ---- Release ----

VerticalStep ReleaseTo(const std::string& recipient) {
  VerticalStep release;
  release.mutable_release()->set_recipient(recipient);
  return release;
}

// party/vertical_release_party.cc Release: "the ring's first party draws the release order
// itself", and a seed that does not open (replayed into another round).
TEST(VerticalReleaseRefusals, AnOrderSeedForTheFirstPartyOrFromAnotherRoundIsRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_release_seed"));
  ASSERT_OK(MatchIds(*p.f).status());
  // The leader hands the first party a seed of its own choosing.
  VerticalStep seeded = ReleaseTo("leader");
  seeded.mutable_release()->mutable_order_seed()->set_sender("hospital-b");
  seeded.mutable_release()->mutable_order_seed()->set_ciphertext(std::string(32, 'k'));
  EXPECT_THAT(CallStep(*p.f, "hospital-a", 2, seeded),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the ring's first party draws the release order itself"));
  ASSERT_OK_AND_ASSIGN(VerticalStepResult first,
                       CallStep(*p.f, "hospital-a", 2, ReleaseTo("leader")));
  ASSERT_EQ(first.released().order_seeds_size(), 1);
  // The seed sealed for round 2, relayed in round 3.
  VerticalStep replayed = ReleaseTo("leader");
  *replayed.mutable_release()->mutable_order_seed() = first.released().order_seeds(0);
  EXPECT_THAT(CallStep(*p.f, "hospital-b", 3, replayed),
              StatusIs(absl::StatusCode::kPermissionDenied, "sealed box authentication failed"));
  // A seed "from" the first party that it did not seal.
  VerticalStep forged = replayed;
  forged.mutable_release()->mutable_order_seed()->set_ciphertext(std::string(80, 'k'));
  EXPECT_FALSE(CallStep(*p.f, "hospital-b", 2, forged).ok());
  EXPECT_OK(CallStep(*p.f, "hospital-b", 2, replayed));
}

// party/vertical_release_party.cc ReportPage: the page range; Assemble: "this party is not the
// recipient the admin signed".
TEST(VerticalReleaseRefusals, AReportPageOutOfRangeAndAnAssembleAtANonRecipientAreRefused) {
  ASSERT_OK_AND_ASSIGN(Prepared p, PrepareTwo("refuse_release_pages"));
  ASSERT_OK(MatchIds(*p.f).status());
  std::vector<fedanon::v1::SealedPayload> columns;
  fedanon::v1::SealedPayload seed;
  for (const auto& party : p.f->names) {
    VerticalStep release = ReleaseTo("leader");
    if (party != p.f->names[0]) *release.mutable_release()->mutable_order_seed() = seed;
    ASSERT_OK_AND_ASSIGN(VerticalStepResult released, CallStep(*p.f, party, 2, release));
    if (party == p.f->names[0]) seed = released.released().order_seeds(0);
    EXPECT_EQ(released.released().report_pages(), 0u);  // one page: the one in the reply
    columns.push_back(released.released().columns());
  }
  for (uint32_t page : {0u, 1u, 7u}) {
    VerticalStep ask;
    ask.mutable_release_report_page()->set_page(page);
    EXPECT_THAT(CallStep(*p.f, "hospital-a", 2, ask),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("page ", page,
                                      " of this party's 1 release report pages does not exist")));
  }
  // The leader (the recipient) asks a data party to write the joined table.
  VerticalStep assemble;
  for (const auto& c : columns) *assemble.mutable_assemble()->add_columns() = c;
  for (const char* h : {"Sex", "Job", "Class"}) assemble.mutable_assemble()->add_header(h);
  for (const auto& party : p.f->names) {
    EXPECT_THAT(CallStep(*p.f, party, 2, assemble),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "vertical assemble: this party is not the recipient the admin signed "
                         "('leader')"));
  }
}

// party/vertical_release_party.cc Assemble: the recipient writes the joined table once; a second
// assembly (here the same parts in another round) would replace it and is refused by name.
TEST(VerticalReleaseRefusals, ASecondAssemblyAtTheRecipientIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("refuse_assemble_twice", TwoHospitals()));
  const std::string allowed =
      std::string(kSpec) + "release: {allow_data_holding_recipient: true}\n";
  ASSERT_OK(f->PrepareAll(kJob, allowed, "hospital-b"));
  ASSERT_OK(MatchIds(*f).status());
  std::vector<fedanon::v1::SealedPayload> columns;
  fedanon::v1::SealedPayload seed;
  for (const auto& party : f->names) {
    VerticalStep release = ReleaseTo("hospital-b");
    if (party != f->names[0]) *release.mutable_release()->mutable_order_seed() = seed;
    ASSERT_OK_AND_ASSIGN(VerticalStepResult released, CallStep(*f, party, 2, release));
    if (party == f->names[0]) seed = released.released().order_seeds(0);
    columns.push_back(released.released().columns());
  }
  VerticalStep assemble;
  for (const auto& c : columns) *assemble.mutable_assemble()->add_columns() = c;
  for (const char* h : {"Sex", "Job", "Class"}) assemble.mutable_assemble()->add_header(h);
  ASSERT_OK(CallStep(*f, "hospital-b", 2, assemble));
  EXPECT_THAT(CallStep(*f, "hospital-b", 3, assemble),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "vertical assemble: the released table was assembled already (one "
                       "request, one answer)"));
}

// common/wire/released_union.cc JoinReleasedColumnsTo: "released twice", "no party released
// column", "the parties released different numbers of records".
TEST(VerticalColumnsView, AJoinOfColumnsReleasedTwiceMissingOrOfOtherLengthsIsRefused) {
  fedanon::v1::VerticalColumns a, b;
  a.add_names("Sex");
  a.add_names("Class");
  b.add_names("Job");
  for (int r = 0; r < 3; ++r) {
    a.add_cells("Male");
    a.add_cells("Y");
    b.add_cells("Lawyer");
  }
  auto views = [](const std::vector<fedanon::v1::VerticalColumns>& parts)
      -> absl::StatusOr<std::vector<wire::VerticalColumnsView>> {
    std::vector<wire::VerticalColumnsView> out;
    for (const auto& m : parts) {
      ASSIGN_OR_RETURN(out.emplace_back(), wire::VerticalColumnsView::Parse(m.SerializeAsString()));
    }
    return out;
  };
  const auto sink = [](std::string_view) { return absl::OkStatus(); };
  ASSERT_OK_AND_ASSIGN(auto honest, views({a, b}));
  ASSERT_OK(wire::JoinReleasedColumnsTo(honest, {"Sex", "Job", "Class"}, sink));
  // Class released by both parties.
  fedanon::v1::VerticalColumns b_class = b;
  b_class.add_names("Class");
  b_class.clear_cells();
  for (int r = 0; r < 3; ++r) {
    b_class.add_cells("Lawyer");
    b_class.add_cells("N");
  }
  ASSERT_OK_AND_ASSIGN(auto twice, views({a, b_class}));
  EXPECT_THAT(wire::JoinReleasedColumnsTo(twice, {"Sex", "Job", "Class"}, sink),
              StatusIs(absl::StatusCode::kInvalidArgument, "column 'Class' released twice"));
  // A header column no part holds.
  EXPECT_THAT(wire::JoinReleasedColumnsTo(honest, {"Sex", "Job", "Class", "Diag"}, sink),
              StatusIs(absl::StatusCode::kInvalidArgument, "no party released column 'Diag'"));
  // One part a record short.
  fedanon::v1::VerticalColumns b_short = b;
  b_short.mutable_cells()->RemoveLast();
  ASSERT_OK_AND_ASSIGN(auto uneven, views({a, b_short}));
  EXPECT_THAT(wire::JoinReleasedColumnsTo(uneven, {"Sex", "Job", "Class"}, sink),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the parties released different numbers of records (3 vs 2)"));
}

}  // namespace
}  // namespace fedanon::testing
