// A data party's replica of a vertical local-recoding job (party/vertical_local.h) against a
// deviating leader: winners that are not the best of every party's (signed) proposals (a wrong
// group, an altered candidate, a lower-scoring proposal) are refused by the owner, a diverged
// replica's state digest is refused, a withheld or extra instruction is refused, and instructions
// that break the local rule (a child below k), split a group twice or split on another party's
// attribute are refused before anything is applied; an honest instruction is applied and numbers
// the children as every replica does. With a confidence bound the judge's replica vetoes a split
// that breaks it, refuses incomplete or foreign verdicts, and keeps the veto as public state.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/engine/privacy_model.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "crypto/hash.h"
#include "party/vertical_local.h"
#include "party/vertical_statement.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr char kSpec[] = R"(name: vertical-local-replica
attributes:
  - {name: q0, role: qid, taxonomy: q0.csv, party: hospital-a}
  - {name: q1, role: qid, taxonomy: q1.csv, party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy:
  model: templates
  templates:
    - {qid: [q0, q1], k: 5}
partitioning: vertical
recoding: local
)";

struct Fixture {
  table::Dataset data;
  std::unique_ptr<engine::PrivacyModel> model;
  std::unique_ptr<party::VerticalLocalReplica> replica;  // hospital-a's
};

// 40 records: q0 = r1 on 2 of them (so splitting q0 breaks k = 5), q1 balanced; the class
// follows q0 most.
void Build(Fixture* f) {
  Table t;
  t.header = {"q0", "q1", "cls"};
  for (int i = 0; i < 40; ++i) {
    t.rows.push_back({i < 12 ? "r1" : "r0", i % 2 ? "w0" : "w1", i < 20 ? "yes" : "no"});
  }
  const Job job = WriteJob("vlocal_replica", kSpec, t,
                           {{"q0.csv", "r0;ANY\nr1;ANY\n"}, {"q1.csv", "w0;ANY\nw1;ANY\n"}});
  ASSERT_OK_AND_ASSIGN(auto spec, spec::LoadJobSpec(job.spec_path));
  ASSERT_OK_AND_ASSIGN(f->data, table::LoadDataset(spec, job.input_path));
  ASSERT_OK_AND_ASSIGN(auto model, engine::BuildPrivacyModel(spec, f->data));
  f->model = std::make_unique<engine::PrivacyModel>(std::move(model));
  ASSERT_OK_AND_ASSIGN(
      f->replica, party::VerticalLocalReplica::Create(&f->data, f->model.get(), spec, "hospital-a",
                                                      {"hospital-a", "hospital-b"}));
}

// hospital-b's proposals: the information gain of a split that separates the two balanced
// classes exactly (1 bit), above any other split of the table. The replicas recompute a won
// split's score (issue 49, finding 5), so the splits these tests apply separate the class.
constexpr double kBScore = 1.0;

// hospital-b's proposals of a wave for the replica's state `mine` (same digest): group 0 on q1
// with score `score`, or none.
fedanon::v1::LocalProposals BProposals(const fedanon::v1::LocalProposals& mine, bool propose,
                                       double score = kBScore) {
  fedanon::v1::LocalProposals b;
  b.set_live_groups(mine.live_groups());
  b.set_state_digest(mine.state_digest());
  if (propose) {
    auto* p = b.add_proposals();
    p->set_group(0);
    p->set_attribute(1);
    p->set_candidate(0);
    p->set_score(score);
  }
  return b;
}

// hospital-b's split of group `group` on q1 (attribute 1) with `child` per record.
fedanon::v1::LocalInstruction SplitOnQ1(uint64_t wave, uint32_t group,
                                        const std::vector<uint32_t>& child, uint32_t attr = 1) {
  fedanon::v1::LocalInstruction ins;
  ins.set_wave(wave);
  auto* split = ins.add_splits();
  split->mutable_proposal()->set_group(group);
  split->mutable_proposal()->set_attribute(attr);
  split->mutable_proposal()->set_score(kBScore);
  // Taxonomy children of ANY: node ids 1 and 2 in file order (w0, w1 / r0, r1).
  split->add_children()->set_node(1);
  split->add_children()->set_node(2);
  for (uint32_t c : child) split->add_child_of_record(c);
  return ins;
}

TEST(VerticalLocalReplica, OwnerRefusesWinnersThatAreNotItsProposals) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(Build(&f));
  const fedanon::v1::LocalProposals mine = f.replica->Propose(1);
  ASSERT_EQ(mine.live_groups(), 1u);
  // q0 is hospital-a's; r1 has 12 records, r0 28: valid for k = 5.
  ASSERT_EQ(mine.proposals_size(), 1);
  ASSERT_EQ(mine.proposals(0).attribute(), 0u);
  ASSERT_EQ(mine.state_digest().size(), 32u);

  fedanon::v1::LocalWinners wrong_group;
  *wrong_group.add_won() = mine.proposals(0);
  wrong_group.mutable_won(0)->set_group(7);
  // Without every party's proposals of the wave, no winner is accepted.
  EXPECT_THAT(f.replica->MakeInstruction(1, wrong_group).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "without every party's signed"));
  ASSERT_OK(f.replica->CheckProposals(
      1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, /*propose=*/false)}}));
  EXPECT_THAT(f.replica->MakeInstruction(1, wrong_group).status(),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the leader's winners differ from the best signed proposals"));

  fedanon::v1::LocalWinners altered;
  *altered.add_won() = mine.proposals(0);
  altered.mutable_won(0)->set_score(1e9);
  EXPECT_THAT(f.replica->MakeInstruction(1, altered).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "differ from the best signed"));
  // Withholding the won group from its owner is refused too.
  EXPECT_THAT(f.replica->MakeInstruction(1, fedanon::v1::LocalWinners()).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "group 0 is won by 'hospital-a'"));

  EXPECT_THAT(f.replica->MakeInstruction(2, wrong_group).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, "but this party proposed in wave 1"));

  fedanon::v1::LocalWinners honest;
  *honest.add_won() = mine.proposals(0);
  ASSERT_OK_AND_ASSIGN(const auto instruction, f.replica->MakeInstruction(1, honest));
  ASSERT_EQ(instruction.splits_size(), 1);
  EXPECT_EQ(instruction.splits(0).child_of_record_size(), 40);
}

// The signed bytes of a wave's proposals bind the job, run, wave, digest and every proposal.
TEST(VerticalLocalReplica, ProposalsStatementBindsWaveDigestAndEveryProposal) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(Build(&f));
  const fedanon::v1::LocalProposals mine = f.replica->Propose(1);
  const std::string base = party::LocalProposalsStatement("job-1", "run-1", 1, mine);
  EXPECT_NE(base, party::LocalProposalsStatement("job-2", "run-1", 1, mine));
  EXPECT_NE(base, party::LocalProposalsStatement("job-1", "run-2", 1, mine));
  EXPECT_NE(base, party::LocalProposalsStatement("job-1", "run-1", 2, mine));
  fedanon::v1::LocalProposals q = mine;
  q.set_state_digest(std::string(32, 'x'));
  EXPECT_NE(base, party::LocalProposalsStatement("job-1", "run-1", 1, q));
  q = mine;
  q.mutable_proposals(0)->set_score(mine.proposals(0).score() + 1e-12);
  EXPECT_NE(base, party::LocalProposalsStatement("job-1", "run-1", 1, q));
  q = mine;
  q.set_live_groups(mine.live_groups() + 1);
  EXPECT_NE(base, party::LocalProposalsStatement("job-1", "run-1", 1, q));
  q = mine;
  q.set_signature("ignored");
  EXPECT_EQ(base, party::LocalProposalsStatement("job-1", "run-1", 1, q));
  // What is signed is the digest of the serialized list (the pages' content).
  EXPECT_EQ(base, party::LocalProposalsStatement("job-1", "run-1", 1,
                                                 crypto::Sha256(party::LocalProposalsList(mine)),
                                                 mine.live_groups(), mine.state_digest()));
}

TEST(VerticalLocalReplica, LowerScoringWinnerDivergedReplicaAndForeignEntriesAreRefused) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(Build(&f));
  const fedanon::v1::LocalProposals mine = f.replica->Propose(1);
  ASSERT_EQ(mine.proposals_size(), 1);
  // hospital-b's proposal scores higher: the leader announcing hospital-a's as the winner is
  // refused by hospital-a (it would pick a non-best proposal).
  ASSERT_OK(
      f.replica->CheckProposals(1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, true)}}));
  fedanon::v1::LocalWinners lower;
  *lower.add_won() = mine.proposals(0);
  EXPECT_THAT(f.replica->MakeInstruction(1, lower).status(),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "group 0 is won by 'hospital-b' (attribute 1, score 1)"));

  // A replica whose public state differs (another digest) is refused.
  fedanon::v1::LocalProposals diverged = BProposals(mine, true);
  diverged.set_state_digest(std::string(32, 'x'));
  EXPECT_THAT(f.replica->CheckProposals(1, {{"hospital-a", mine}, {"hospital-b", diverged}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "the replicas diverged"));
  // hospital-b cannot propose on hospital-a's attribute; this party's own entry must be its own.
  fedanon::v1::LocalProposals foreign = BProposals(mine, true);
  foreign.mutable_proposals(0)->set_attribute(0);
  EXPECT_THAT(f.replica->CheckProposals(1, {{"hospital-a", mine}, {"hospital-b", foreign}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "which it does not hold"));
  fedanon::v1::LocalProposals not_mine = mine;
  not_mine.mutable_proposals(0)->set_score(0.5);
  EXPECT_THAT(f.replica->CheckProposals(
                  1, {{"hospital-a", not_mine}, {"hospital-b", BProposals(mine, false)}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "are not the ones it made"));
  EXPECT_THAT(f.replica->CheckProposals(1, {{"hospital-b", BProposals(mine, false)}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "lack this party's own"));
  // A closing wave while a group has a valid proposal (the leader stopping early) is refused.
  ASSERT_OK(f.replica->CheckProposals(
      1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, false)}}));
  EXPECT_THAT(f.replica->CloseWaves(1),
              StatusIs(absl::StatusCode::kPermissionDenied, "1 groups have a valid signed"));
}

TEST(VerticalLocalReplica, WithheldOrExtraInstructionsAreRefused) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(Build(&f));
  const fedanon::v1::LocalProposals mine = f.replica->Propose(1);
  std::vector<uint32_t> halves(40);
  for (int i = 0; i < 40; ++i) halves[i] = i < 20 ? 0 : 1;  // by class: the gain kBScore
  // hospital-a wins group 0, yet hospital-b's instruction for it is relayed.
  ASSERT_OK(f.replica->CheckProposals(
      1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, false)}}));
  EXPECT_THAT(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 0, halves)}}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "which the signed proposal of 'hospital-a' wins"));
  // hospital-a was never asked for its instruction of the group it won.
  EXPECT_THAT(f.replica->ApplyWave(1, {}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the instruction of 'hospital-a' for group 0, which it won in wave 1, is "
                       "missing (withheld from this party)"));
  // hospital-b wins, and the leader withholds its instruction.
  ASSERT_OK(
      f.replica->CheckProposals(1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, true)}}));
  EXPECT_THAT(f.replica->ApplyWave(1, {}),
              StatusIs(absl::StatusCode::kPermissionDenied, "'hospital-b' for group 0"));
  EXPECT_EQ(f.replica->live_groups(), 1u);  // nothing applied
  const std::string before = f.replica->StateDigest();
  ASSERT_OK(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 0, halves)}}));
  EXPECT_NE(f.replica->StateDigest(), before);
  // Without a closing wave that compared the final digests, nothing is released.
  EXPECT_THAT(f.replica->CheckRelease(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "final states were not compared"));
}

TEST(VerticalLocalReplica, InstructionsThatBreakTheRuleAreRefusedBeforeAnythingApplies) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(Build(&f));
  const fedanon::v1::LocalProposals mine = f.replica->Propose(1);
  ASSERT_OK(
      f.replica->CheckProposals(1, {{"hospital-a", mine}, {"hospital-b", BProposals(mine, true)}}));
  std::vector<uint32_t> small(40, 0);  // child 1 (w1) gets 2 records: below k = 5
  small[0] = small[1] = 1;
  EXPECT_THAT(
      f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 0, small)}}),
      StatusIs(absl::StatusCode::kPermissionDenied, "leaves a group of 2 records, fewer than 5"));
  std::vector<uint32_t> halves(40);
  for (int i = 0; i < 40; ++i) halves[i] = i < 20 ? 0 : 1;  // by class: the gain kBScore
  EXPECT_THAT(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 0, halves, /*attr=*/0)}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "which it does not hold"));
  EXPECT_THAT(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 3, halves)}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a live group"));
  fedanon::v1::LocalInstruction twice = SplitOnQ1(1, 0, halves);
  *twice.add_splits() = twice.splits(0);
  EXPECT_THAT(f.replica->ApplyWave(1, {{"hospital-b", twice}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "is split twice in one wave"));
  EXPECT_THAT(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(2, 0, halves)}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "instructed wave 2"));
  EXPECT_EQ(f.replica->live_groups(), 1u);  // nothing applied

  ASSERT_OK(f.replica->ApplyWave(1, {{"hospital-b", SplitOnQ1(1, 0, halves)}}));
  EXPECT_EQ(f.replica->live_groups(), 2u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(f.replica->group_of()[i], i < 20 ? 1 : 2) << i;
}

// Confidence bounds: hospital-b holds q1 and the sensitive s (the judge). hospital-a's split of
// the root on q0 puts 10 of r1's 12 records on d0 (0.83 > C = 0.5): hospital-b's replica vetoes
// it, refuses verdicts that drop a judge or come from a non-judge, applies nothing for the vetoed
// group, and refuses hospital-a's proposal of the vetoed candidate in the next wave.
constexpr char kBoundSpec[] = R"(name: vertical-local-judge
attributes:
  - {name: q0, role: qid, taxonomy: q0.csv, party: hospital-a}
  - {name: q1, role: qid, taxonomy: q1.csv, party: hospital-b}
  - {name: s, role: sensitive, values: [d0, d1], party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy: {model: lkc, L: 1, K: 5, C: 0.5, sensitive_values: [d0]}
partitioning: vertical
recoding: local
)";

TEST(VerticalLocalReplica, JudgeVetoesASplitBreakingTheBoundAndTheVetoIsPublicState) {
  Table t;
  t.header = {"q0", "q1", "s", "cls"};
  for (int i = 0; i < 40; ++i) {
    t.rows.push_back(
        {i < 12 ? "r1" : "r0", i % 2 ? "w0" : "w1", i < 10 ? "d0" : "d1", i < 20 ? "yes" : "no"});
  }
  const Job job = WriteJob("vlocal_judge", kBoundSpec, t,
                           {{"q0.csv", "r0;ANY\nr1;ANY\n"}, {"q1.csv", "w0;ANY\nw1;ANY\n"}});
  ASSERT_OK_AND_ASSIGN(auto spec, spec::LoadJobSpec(job.spec_path));
  ASSERT_OK_AND_ASSIGN(table::Dataset data, table::LoadDataset(spec, job.input_path));
  ASSERT_OK_AND_ASSIGN(engine::PrivacyModel model, engine::BuildPrivacyModel(spec, data));
  ASSERT_OK_AND_ASSIGN(auto judge,
                       party::VerticalLocalReplica::Create(&data, &model, spec, "hospital-b",
                                                           {"hospital-a", "hospital-b"}));
  EXPECT_EQ(judge->judges(), std::vector<std::string>{"hospital-b"});
  const fedanon::v1::LocalProposals mine = judge->Propose(1);
  fedanon::v1::LocalProposals a;
  a.set_live_groups(mine.live_groups());
  a.set_state_digest(mine.state_digest());
  auto* p = a.add_proposals();
  p->set_group(0);
  p->set_attribute(0);
  p->set_candidate(0);
  p->set_score(kBScore);  // the largest information gain: hospital-a wins the root
  ASSERT_OK(judge->CheckProposals(1, {{"hospital-a", a}, {"hospital-b", mine}}));
  std::vector<uint32_t> by_q0(40);
  for (int i = 0; i < 40; ++i) by_q0[i] = i < 12 ? 1 : 0;
  const fedanon::v1::LocalInstruction split = SplitOnQ1(1, 0, by_q0, /*attr=*/0);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::LocalVerdicts verdicts,
                       judge->Judge(1, {{"hospital-a", split}}));
  ASSERT_EQ(verdicts.verdicts_size(), 1);
  EXPECT_EQ(verdicts.verdicts(0).group(), 0u);
  EXPECT_FALSE(verdicts.verdicts(0).accept());

  EXPECT_THAT(judge->CheckVerdicts(1, {}),
              StatusIs(absl::StatusCode::kPermissionDenied, "(a veto dropped)"));
  EXPECT_THAT(judge->CheckVerdicts(1, {{"hospital-a", verdicts}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "'hospital-a' is not a judge"));
  fedanon::v1::LocalVerdicts other = verdicts;
  other.mutable_verdicts(0)->set_candidate(3);
  EXPECT_THAT(judge->CheckVerdicts(1, {{"hospital-b", other}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "do not cover the winner of group 0"));
  ASSERT_OK(judge->CheckVerdicts(1, {{"hospital-b", verdicts}}));
  const std::string before = judge->StateDigest();
  ASSERT_OK(judge->ApplyWave(1, {}));
  EXPECT_EQ(judge->live_groups(), 1u);  // the vetoed split is not applied
  EXPECT_EQ(judge->vetoes(), 1u);
  EXPECT_NE(judge->StateDigest(), before);  // the veto is part of the public state

  // Wave 2: proposing the vetoed candidate again is refused, and so is any other candidate of the
  // same attribute for that group (one veto per group and attribute).
  const fedanon::v1::LocalProposals mine2 = judge->Propose(2);
  a.set_state_digest(mine2.state_digest());
  EXPECT_THAT(judge->CheckProposals(2, {{"hospital-a", a}, {"hospital-b", mine2}}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "an attribute of which a judge vetoed a candidate for this group in an "
                       "earlier wave (one veto per group and attribute)"));
  a.mutable_proposals(0)->set_candidate(1);
  EXPECT_THAT(judge->CheckProposals(2, {{"hospital-a", a}, {"hospital-b", mine2}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "one veto per group and attribute"));
}

// The signed verdicts bind the job, run, wave and every verdict.
TEST(VerticalLocalReplica, VerdictsStatementBindsWaveAndEveryVerdict) {
  fedanon::v1::LocalVerdicts v;
  auto* one = v.add_verdicts();
  one->set_group(3);
  one->set_attribute(1);
  one->set_candidate(0);
  one->set_accept(false);
  const std::string base = party::LocalVerdictsStatement("job", "run", 2, v);
  EXPECT_NE(base, party::LocalVerdictsStatement("job", "run", 3, v));
  EXPECT_NE(base, party::LocalVerdictsStatement("job2", "run", 2, v));
  fedanon::v1::LocalVerdicts flipped = v;
  flipped.mutable_verdicts(0)->set_accept(true);
  EXPECT_NE(base, party::LocalVerdictsStatement("job", "run", 2, flipped));
  fedanon::v1::LocalVerdicts moved = v;
  moved.mutable_verdicts(0)->set_group(4);
  EXPECT_NE(base, party::LocalVerdictsStatement("job", "run", 2, moved));
  fedanon::v1::LocalVerdicts signed_copy = v;
  signed_copy.set_signature("sig");
  EXPECT_EQ(base, party::LocalVerdictsStatement("job", "run", 2, signed_copy));
}

}  // namespace
}  // namespace fedanon::testing
