// PartyAgent (party/party_agent.h) driven through the in-process channel with small in-memory
// tables, the test playing the leader: prepare and its digest, a ring secure sum over two
// parties (sealed hop to hop), instructions riding along a secure sum (in order, once), the
// secure set union, and the error replies for bad options, requests out of order and unknown
// jobs.
#include "party/party_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/file_io.h"
#include "common/engine/hierarchy.h"
#include "common/spec/job_digest.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "crypto/secure_sum_masks.h"
#include "crypto/signature.h"
#include "party/job_journal.h"
#include "party/testing/observing_party.h"
#include "party/vertical_statement.h"
#include "tests/party/party_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSpec[] = R"(name: party-unit
attributes:
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 1, K: 1}
partitioning: horizontal
)";
constexpr char kSexTaxonomy[] = "M;ANY_Sex\nF;ANY_Sex\n";
constexpr char kJobTaxonomy[] = "Janitor;Blue;ANY_Job\nLawyer;White;ANY_Job\n";

// hospital-a: (M, Janitor, Y), (M, Lawyer, N), (F, Janitor, Y); hospital-b: (F, Lawyer, N),
// (M, Janitor, N).
std::vector<std::map<std::string, std::string>> TwoHospitals() {
  return {{{"table.csv", "Sex,Job,Class\nM,Janitor,Y\nM,Lawyer,N\nF,Janitor,Y\n"},
           {"sex.csv", kSexTaxonomy},
           {"job.csv", kJobTaxonomy}},
          {{"table.csv", "Sex,Job,Class\nF,Lawyer,N\nM,Janitor,N\n"},
           {"sex.csv", kSexTaxonomy},
           {"job.csv", kJobTaxonomy}}};
}

// The leader's copy of the public hierarchies of kSpec (to name nodes and size requests).
struct PublicState {
  table::Dataset schema;
  std::vector<engine::AttributeHierarchy> hier;
};

std::unique_ptr<PublicState> MakePublicState() {
  auto spec = spec::ParseJobSpecYaml(kSpec, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto schema = table::BuildPublicSchema(*spec, {{"Sex", kSexTaxonomy}, {"Job", kJobTaxonomy}});
  EXPECT_TRUE(schema.ok()) << schema.status();
  auto state = std::make_unique<PublicState>();
  state->schema = *std::move(schema);
  for (const auto& q : state->schema.qids) state->hier.emplace_back(&q);
  return state;
}

// A secure-sum hop: class counts per fine child of the root of Sex (M/F x Y/N, 4 words).
LeaderMessage SexClassCountsStep(const std::string& job_id, const std::string& next,
                                 uint64_t total_words = 4) {
  LeaderMessage msg;
  msg.set_job_id(job_id);
  msg.set_round(1);
  auto* step = msg.mutable_sum_step();
  step->set_collect(0);
  auto* ref = step->mutable_request()->add_node_class_counts();
  ref->set_attribute(0);
  ref->set_node(0);
  step->set_next(next);
  step->set_chunks(1);
  step->set_total_words(total_words);
  step->set_chunk_words(total_words);
  return msg;
}

LeaderMessage EndJob(const std::string& job_id) {
  LeaderMessage msg;
  msg.set_job_id(job_id);
  msg.mutable_end_job()->set_reason("done");
  msg.mutable_end_job()->set_success(true);
  return msg;
}

TEST(PartyAgentCreate, RejectsBadOptions) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("create", {}));
  ASSERT_OK_AND_ASSIGN(crypto::IssuedCertificate seal,
                       f->ca->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1)));
  party::PartyAgentOptions o;
  o.name = "hospital-a";
  o.ca_pem = f->ca->cert_pem();
  o.seal_cert_pem = seal.cert_pem;
  o.seal_key_pem = seal.key_pem;
  EXPECT_OK(party::PartyAgent::Create(o));

  // The daemon's --misbehave names one of mohammed2011 §6's two malicious vertical parties.
  EXPECT_THAT(party::MaliciousVerticalParty::Named("sometimes").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown misbehaviour 'sometimes'"));
  ASSERT_OK_AND_ASSIGN(const party::MaliciousVerticalParty under,
                       party::MaliciousVerticalParty::Named("under-declare"));
  EXPECT_EQ(under.Name(), "under-declare");
  ASSERT_OK_AND_ASSIGN(const party::MaliciousVerticalParty never,
                       party::MaliciousVerticalParty::Named("never-participate"));
  EXPECT_EQ(never.Name(), "never-participate");
  party::PartyAgentOptions keyless = o;
  keyless.seal_key_pem.clear();
  EXPECT_THAT(party::PartyAgent::Create(keyless),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a party needs the CA certificate and its sealing key pair"));
  party::PartyAgentOptions bad_name = o;
  bad_name.name = "no spaces allowed";
  EXPECT_FALSE(party::PartyAgent::Create(bad_name).ok());
}

TEST(PartyAgent, PingEchoesAndUnknownRequestIsAnError) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("ping", TwoHospitals()));
  LeaderMessage ping;
  ping.mutable_ping()->set_sent_unix_nanos(1234);
  ASSERT_OK_AND_ASSIGN(PartyMessage pong, f->Call("hospital-a", ping));
  EXPECT_EQ(pong.pong().echoed_unix_nanos(), 1234);

  LeaderMessage empty;
  empty.set_job_id("job-000000000001");
  EXPECT_THAT(f->Call("hospital-a", empty),
              StatusIs(absl::StatusCode::kInvalidArgument, "party 'hospital-a': unknown request"));
}

TEST(PartyAgent, PrepareReportsTheDigestOfTheSubmittedJob) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare", TwoHospitals()));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> digests, f->PrepareAll("job-000000000001", kSpec));
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(kSpec, "job.yaml"));
  const std::string expected =
      crypto::Sha256(spec::CanonicalJobBytes(spec, {{"Sex", kSexTaxonomy}, {"Job", kJobTaxonomy}}));
  ASSERT_EQ(digests.size(), 2u);
  EXPECT_EQ(digests[0], expected);
  EXPECT_EQ(digests[1], expected);
}

TEST(PartyAgent, PrepareWithADifferentTaxonomyIsRefused) {
  auto files = TwoHospitals();
  files[1]["job.csv"] = "Janitor;Blue;ANY_Job\nLawyer;Blue;ANY_Job\n";
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_differs", files));
  // The admin signed the job with hospital-a's taxonomies; hospital-b's tree gives another
  // digest, so hospital-b refuses before it reads its table.
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare("job-000000000001", kSpec));
  ASSERT_OK_AND_ASSIGN(PartyMessage a, f->Call("hospital-a", prepare));
  EXPECT_EQ(a.prepared().digest().size(), 32u);
  EXPECT_THAT(f->Call("hospital-b", prepare),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "party 'hospital-b': job not authorized: the job (spec or taxonomies, as "
                       "this party loaded them) differs from the admin's signed job"));
}

TEST(PartyAgent, PrepareErrorsNameTheProblemButNoRawValue) {
  auto files = TwoHospitals();
  files[0].erase("job.csv");
  files[1]["table.csv"] = "Sex,Job,Class\nSecretValue,Lawyer,N\n";
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_errors", files));
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare("job-000000000001", kSpec));
  EXPECT_THAT(f->Call("hospital-a", prepare),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "party 'hospital-a': party 'hospital-a' cannot read the taxonomy of "
                       "attribute 'Job' (details in the party's log)"));
  const auto table_error = f->Call("hospital-b", prepare);
  EXPECT_THAT(table_error, StatusIs(absl::StatusCode::kFailedPrecondition,
                                    "its table does not match the job's schema"));
  EXPECT_THAT(std::string(table_error.status().message()), Not(HasSubstr("SecretValue")));
}

TEST(PartyAgent, PrepareRejectsASealCertificateIssuedToSomeoneElse) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_foreign_seal", TwoHospitals()));
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare("job-000000000001", kSpec));
  // The leader substitutes hospital-a's certificate for hospital-b's.
  prepare.mutable_prepare()->mutable_participants(1)->set_seal_certificate(
      f->agents[0]->seal_cert_pem());
  EXPECT_FALSE(f->Call("hospital-a", prepare).ok());
  // Nothing was prepared.
  EXPECT_THAT(f->Call("hospital-a", SexClassCountsStep("job-000000000001", "")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
}

// The bytes a party signs for a vertical proposal or verdict bind the job, run, round, the
// replica's decisions so far and the kind, and every content field: changing any one changes
// the statement.
TEST(VerticalStatement, BindsJobRunRoundKindAndContent) {
  fedanon::v1::VerticalProposal p;
  p.set_participate(true);
  p.mutable_candidate()->set_attribute(1);
  p.mutable_candidate()->set_node(2);
  p.mutable_candidate()->set_candidate(3);
  p.mutable_candidate()->set_score(0.5);
  const std::string base = party::ProposalStatement("job-1", "run-1", 4, 7, p);
  EXPECT_NE(base, party::ProposalStatement("job-2", "run-1", 4, 7, p));
  EXPECT_NE(base, party::ProposalStatement("job-1", "run-2", 4, 7, p));
  EXPECT_NE(base, party::ProposalStatement("job-1", "run-1", 5, 7, p));
  // The replica's decisions so far: one signed before a commit is not the one after it.
  EXPECT_NE(base, party::ProposalStatement("job-1", "run-1", 4, 8, p));
  fedanon::v1::VerticalProposal q = p;
  q.mutable_candidate()->set_score(0.25);
  EXPECT_NE(base, party::ProposalStatement("job-1", "run-1", 4, 7, q));
  q = p;
  q.set_participate(false);
  EXPECT_NE(base, party::ProposalStatement("job-1", "run-1", 4, 7, q));
  q = p;
  q.set_signature("ignored");  // the signature is not part of what is signed
  EXPECT_EQ(base, party::ProposalStatement("job-1", "run-1", 4, 7, q));
  const std::string accept = party::VerdictStatement("job-1", "run-1", 4, 7, p.candidate(), true);
  EXPECT_NE(accept, party::VerdictStatement("job-1", "run-1", 4, 7, p.candidate(), false));
  EXPECT_NE(accept, party::VerdictStatement("job-1", "run-1", 4, 8, p.candidate(), true));
  EXPECT_NE(accept, base);
  // Length-prefixed: moving bytes between job id and run id changes the statement.
  EXPECT_NE(party::VerdictStatement("ab", "c", 4, 7, p.candidate(), true),
            party::VerdictStatement("a", "bc", 4, 7, p.candidate(), true));
}

// Issue 26 §4: with a revocation list (party.yaml `crl:`), a party refuses a job whose
// participants include a revoked sealing certificate — another party's or the leader's — and a
// list it cannot use refuses every job (fails closed).
TEST(PartyAgent, PrepareRefusesSealCertificatesItsRevocationListRevokes) {
  auto crl = std::make_shared<std::string>();
  auto ca_pem = std::make_shared<std::string>();
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("prepare_revoked", TwoHospitals(),
                                   [crl, ca_pem](party::PartyAgentOptions& o) {
                                     o.revocation_check = [crl, ca_pem](const std::string& pem) {
                                       return crypto::CheckNotRevoked(pem, *crl, *ca_pem);
                                     };
                                   }));
  *ca_pem = f->ca->cert_pem();
  // A list that revokes none of them: the job is prepared.
  ASSERT_OK_AND_ASSIGN(*crl, f->ca->IssueCrl({}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage ok, f->Prepare("job-000000000001", kSpec));
  EXPECT_OK(f->Call("hospital-a", ok));
  // hospital-b's sealing certificate revoked.
  ASSERT_OK_AND_ASSIGN(*crl, f->ca->IssueCrl({f->agents[1]->seal_cert_pem()}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage peer, f->Prepare("job-000000000002", kSpec));
  EXPECT_THAT(f->Call("hospital-a", peer),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the sealing certificate of participant 'hospital-b' is refused by this "
                       "party's revocation list: certificate revoked"));
  EXPECT_THAT(f->Call("hospital-a", SexClassCountsStep("job-000000000002", "")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
  // The leader's sealing certificate revoked.
  ASSERT_OK_AND_ASSIGN(*crl, f->ca->IssueCrl({f->leader_seal.cert_pem}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage leader, f->Prepare("job-000000000003", kSpec));
  EXPECT_THAT(f->Call("hospital-b", leader),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the sealing certificate of participant 'leader' is refused"));
  // A list that does not parse: refused.
  *crl = "not a CRL";
  ASSERT_OK_AND_ASSIGN(LeaderMessage garbled, f->Prepare("job-000000000004", kSpec));
  EXPECT_THAT(f->Call("hospital-b", garbled),
              StatusIs(absl::StatusCode::kPermissionDenied, "revocation list"));
}

constexpr char kVerticalSpec[] = R"(name: party-vertical
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

std::vector<std::map<std::string, std::string>> TwoVerticalHospitals() {
  return {{{"table.csv", "ID,Class,Sex\np1,Y,M\np2,N,F\n"},
           {"sex.csv", kSexTaxonomy},
           {"job.csv", kJobTaxonomy}},
          {{"table.csv", "ID,Class,Job\np2,N,Lawyer\np1,Y,Janitor\n"},
           {"sex.csv", kSexTaxonomy},
           {"job.csv", kJobTaxonomy}}};
}

// A vertical job's statements (ID matching, proposals, verdicts) are signed with each data
// party's statement-signing key, never its sealing key: a Prepare must name, for every data
// party, a statement-signing certificate the CA issued to that party — not none, not its
// sealing certificate, not another party's — and, for the party itself, the one it holds. A
// horizontal job, whose parties make no statements, needs none.
TEST(PartyAgent, AVerticalPrepareNamesEachDataPartysOwnStatementSigningCertificate) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_sign", TwoVerticalHospitals()));
  auto participant_b = [](LeaderMessage& m) {
    return m.mutable_prepare()->mutable_participants(1);
  };
  ASSERT_OK_AND_ASSIGN(LeaderMessage none, f->Prepare("job-000000000001", kVerticalSpec));
  participant_b(none)->clear_sign_certificate();
  EXPECT_THAT(f->Call("hospital-a", none),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "participant 'hospital-b' comes without a statement-signing certificate"));
  ASSERT_OK_AND_ASSIGN(LeaderMessage seal, f->Prepare("job-000000000002", kVerticalSpec));
  participant_b(seal)->set_sign_certificate(f->agents[1]->seal_cert_pem());
  EXPECT_THAT(f->Call("hospital-a", seal),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the statement-signing certificate of participant 'hospital-b' is "
                       "refused: not a statement-signing certificate"));
  ASSERT_OK_AND_ASSIGN(LeaderMessage swapped, f->Prepare("job-000000000003", kVerticalSpec));
  participant_b(swapped)->set_sign_certificate(f->agents[0]->sign_cert_pem());
  EXPECT_THAT(f->Call("hospital-a", swapped),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "belongs to fedanon-sign://party/hospital-a, want "
                       "fedanon-sign://party/hospital-b"));
  // A valid certificate of hospital-b's name that hospital-b does not hold (the leader had one
  // issued, or kept a replaced one): hospital-a accepts it, hospital-b refuses.
  ASSERT_OK_AND_ASSIGN(
      const crypto::IssuedCertificate foreign,
      f->ca->IssueStatementSigner({crypto::Role::kParty, "hospital-b"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage not_held, f->Prepare("job-000000000004", kVerticalSpec));
  participant_b(not_held)->set_sign_certificate(foreign.cert_pem);
  EXPECT_THAT(f->Call("hospital-b", not_held),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the Prepare names a statement-signing certificate for this party that "
                       "is not the one it holds"));
  // The honest Prepare is taken by both.
  ASSERT_OK_AND_ASSIGN(LeaderMessage honest, f->Prepare("job-000000000005", kVerticalSpec));
  EXPECT_OK(f->Call("hospital-a", honest));
  EXPECT_OK(f->Call("hospital-b", honest));
  // A horizontal job without any statement-signing certificate is prepared.
  ASSERT_OK_AND_ASSIGN(auto h, PartyFixture::Create("prepare_sign_h", TwoHospitals()));
  ASSERT_OK_AND_ASSIGN(LeaderMessage horizontal, h->Prepare("job-000000000006", kSpec));
  for (auto& p : *horizontal.mutable_prepare()->mutable_participants()) p.clear_sign_certificate();
  EXPECT_OK(h->Call("hospital-a", horizontal));
}

// A Prepare sent to a party outside the ring its admin signed (the leader names the party's job
// to it although the ring is the other parties'): refused by name, nothing prepared.
TEST(PartyAgent, APrepareForARingWithoutThisPartyIsRefused) {
  std::vector<std::map<std::string, std::string>> files = TwoHospitals();
  files.push_back(files[0]);
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_not_in_ring", files));
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare("job-000000000001", kSpec));
  // hospital-c left out of the ring and the participants, and the job signed for that ring.
  auto* p = prepare.mutable_prepare();
  p->mutable_ring()->RemoveLast();
  for (int i = 0; i < p->participants_size(); ++i) {
    if (p->participants(i).name() == "hospital-c") {
      p->mutable_participants()->DeleteSubrange(i, 1);
      break;
    }
  }
  ASSERT_OK(AuthorizePrepare(&prepare, f->admin,
                             TaxonomyTexts(prepare.prepare().spec(), f->dir + "/hospital-a")));
  EXPECT_OK(f->Call("hospital-a", prepare));
  EXPECT_THAT(
      f->Call("hospital-c", prepare),
      StatusIs(absl::StatusCode::kInvalidArgument, "party 'hospital-c' is not in the job's ring"));
  EXPECT_THAT(f->Call("hospital-c", SexClassCountsStep("job-000000000001", "")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
}

// A party configured without a statement-signing pair (a kit made before them) refuses a
// vertical job by name, and still takes part in horizontal ones.
TEST(PartyAgent, APartyWithoutAStatementSigningKeyRefusesVerticalJobsOnly) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_unsigned", TwoVerticalHospitals(),
                                                    [](party::PartyAgentOptions& o) {
                                                      if (o.name != "hospital-b") return;
                                                      o.sign_cert_pem.clear();
                                                      o.sign_key_pem.clear();
                                                    }));
  EXPECT_EQ(f->agents[1]->sign_cert_pem(), "");
  // The leader would name some certificate for it: one the CA issued but hospital-b lacks.
  ASSERT_OK_AND_ASSIGN(
      const crypto::IssuedCertificate issued,
      f->ca->IssueStatementSigner({crypto::Role::kParty, "hospital-b"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare("job-000000000001", kVerticalSpec));
  prepare.mutable_prepare()->mutable_participants(1)->set_sign_certificate(issued.cert_pem);
  EXPECT_THAT(f->Call("hospital-b", prepare),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "this party holds no statement-signing key (party.yaml `sign:`), which a "
                       "vertical job needs"));
  // Any party given no certificate for it refuses too (as above).
  ASSERT_OK_AND_ASSIGN(LeaderMessage unnamed, f->Prepare("job-000000000002", kVerticalSpec));
  EXPECT_THAT(f->Call("hospital-a", unnamed),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "participant 'hospital-b' comes without a statement-signing certificate"));
  ASSERT_OK_AND_ASSIGN(auto h, PartyFixture::Create("prepare_unsigned_h", TwoHospitals(),
                                                    [](party::PartyAgentOptions& o) {
                                                      o.sign_cert_pem.clear();
                                                      o.sign_key_pem.clear();
                                                    }));
  EXPECT_OK(h->PrepareAll("job-000000000003", kSpec).status());
}

TEST(PartyAgent, SecureSumHopAddsLocalCountsAndSealsForTheNextParty) {
  absl::Mutex mu;
  std::map<std::string, std::vector<std::string>> opened;  // receiver -> plaintexts
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("sum", TwoHospitals(), [&](party::PartyAgentOptions& o) {
        o.observer = party_testing::ObservingParty(
            [&mu, &opened, receiver = o.name](const std::string&, const std::string&,
                                              const std::string& plain) {
              absl::MutexLock lock(&mu);
              opened[receiver].push_back(plain);
            });
      }));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec));

  // First hop: hospital-a masks its counts with its own mask, output sealed for hospital-b.
  LeaderMessage first = SexClassCountsStep("job-000000000001", "hospital-b");
  ASSERT_OK_AND_ASSIGN(PartyMessage a_reply, f->Call("hospital-a", first));
  ASSERT_TRUE(a_reply.sum_step().has_sealed());
  const fedanon::v1::SealedPayload& sealed = a_reply.sum_step().sealed();
  EXPECT_EQ(sealed.sender(), "hospital-a");
  EXPECT_EQ(sealed.receiver(), "hospital-b");
  EXPECT_TRUE(absl::StartsWith(sealed.purpose(), wire::SumPurpose(first.sum_step()) + "/"));

  // Last hop: hospital-b opens it, adds its counts and seals the result for the leader.
  LeaderMessage last = SexClassCountsStep("job-000000000001", "");
  *last.mutable_sum_step()->mutable_sealed() = sealed;
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply, f->Call("hospital-b", last));
  ASSERT_EQ(b_reply.sum_step().sealed().receiver(), "leader");
  ASSERT_OK_AND_ASSIGN(const std::string total,
                       f->OpenForLeader(1, "job-000000000001", b_reply.sum_step().sealed()));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> sum, wire::DecodeWords(total));
  // The leader removes hospital-a's mask, which it asks for once the ring is done.
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask,
                       f->FirstPartyMask("job-000000000001", 1, 0, sum.size()));
  ASSERT_EQ(sum.size(), mask.size());
  std::vector<uint64_t> counts(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) counts[i] = sum[i] - mask[i];
  // (M, Y), (M, N), (F, Y), (F, N) over both tables.
  EXPECT_EQ(counts, (std::vector<uint64_t>{1, 2, 1, 1}));

  // hospital-b saw only hospital-a's counts under hospital-a's mask (which it never sees).
  absl::MutexLock lock(&mu);
  ASSERT_EQ(opened["hospital-b"].size(), 1u);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> partial, wire::DecodeWords(opened["hospital-b"][0]));
  ASSERT_EQ(partial.size(), 4u);
  const std::vector<uint64_t> a_counts = {1, 1, 1, 0};
  for (size_t i = 0; i < partial.size(); ++i) {
    EXPECT_EQ(partial[i] - mask[i], a_counts[i]);
    EXPECT_NE(partial[i], a_counts[i]);  // a zero mask word: probability 2^-64
  }
  EXPECT_TRUE(opened["hospital-a"].empty());
}

TEST(PartyAgent, SecureSumErrors) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("sum_errors", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec));
  LeaderMessage wrong_length =
      SexClassCountsStep("job-000000000001", "hospital-b", /*total_words=*/5);
  EXPECT_THAT(f->Call("hospital-a", wrong_length),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the secure sum has 5 words but this request needs 4"));

  LeaderMessage stranger = SexClassCountsStep("job-000000000001", "hospital-z");
  EXPECT_THAT(f->Call("hospital-a", stranger),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "next is 'hospital-z' but this party's successor in the ring agreed at "
                       "Prepare is 'hospital-b'"));

  LeaderMessage outside = SexClassCountsStep("job-000000000001", "hospital-b");
  outside.mutable_sum_step()->set_collect(1);
  outside.mutable_sum_step()->set_chunk_offset(2);
  EXPECT_THAT(f->Call("hospital-a", outside),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "secure sum: chunk 0 of 1 at word 2 (4 words each, 4 in all) does not "
                       "exist"));
  // The ring's first party starts from its own mask: an input from the leader is refused.
  LeaderMessage input = SexClassCountsStep("job-000000000001", "hospital-b");
  input.mutable_sum_step()->set_collect(2);
  input.mutable_sum_step()->mutable_sealed()->set_sender("hospital-b");
  EXPECT_THAT(f->Call("hospital-a", input),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the ring's first party starts from its own mask"));
}

// ldiversity / tcloseness: a party answers a sensitive histogram query (the counts of each
// declared value of the sensitive attribute per child of a candidate of the current cut) and
// refuses one that names no such candidate, a key of the wrong width, or a job without the model.
constexpr char kLDiversitySpec[] = R"(name: party-ldiversity
attributes:
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Class, role: class, values: [Y, N]}
  - {name: Disease, role: sensitive, values: [flu, hiv]}
privacy: {model: ldiversity, diversity: 2}
partitioning: horizontal
)";

// hospital-a: (M, Janitor, flu), (M, Lawyer, hiv), (F, Janitor, flu); hospital-b: (F, Lawyer,
// hiv), (M, Janitor, flu).
std::vector<std::map<std::string, std::string>> TwoHospitalsWithDisease() {
  return {
      {{"table.csv", "Sex,Job,Class,Disease\nM,Janitor,Y,flu\nM,Lawyer,N,hiv\nF,Janitor,Y,flu\n"},
       {"sex.csv", kSexTaxonomy},
       {"job.csv", kJobTaxonomy}},
      {{"table.csv", "Sex,Job,Class,Disease\nF,Lawyer,N,hiv\nM,Janitor,N,flu\n"},
       {"sex.csv", kSexTaxonomy},
       {"job.csv", kJobTaxonomy}}};
}

// A hop asking the histograms of the children of candidate `candidate` of key[attribute] in the
// root group (`width` nodes in the key).
LeaderMessage HistogramStep(const std::string& job_id, const std::string& next, int attribute,
                            int candidate, int width, uint64_t total_words) {
  LeaderMessage msg;
  msg.set_job_id(job_id);
  msg.set_round(1);
  auto* step = msg.mutable_sum_step();
  fedanon::v1::SensitiveHistogramRequest h;
  h.set_domain(2);
  auto* q = h.add_queries();
  for (int a = 0; a < width; ++a) q->add_key(0);
  q->set_attribute(attribute);
  q->set_candidate(candidate);
  wire::SetSensitiveHistograms(h, step->mutable_request());
  step->set_next(next);
  step->set_chunks(1);
  step->set_total_words(total_words);
  step->set_chunk_words(total_words);
  return msg;
}

TEST(PartyAgent, SensitiveHistogramsAreSummedAndCheckedByEachParty) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("histograms", TwoHospitalsWithDisease()));
  ASSERT_OK(f->PrepareAll("job-000000000001", kLDiversitySpec));
  // Sex's candidate at the root: children M, F; per child (flu, hiv).
  LeaderMessage first = HistogramStep("job-000000000001", "hospital-b", 0, 0, 2, 4);
  ASSERT_OK_AND_ASSIGN(PartyMessage a_reply, f->Call("hospital-a", first));
  LeaderMessage last = HistogramStep("job-000000000001", "", 0, 0, 2, 4);
  *last.mutable_sum_step()->mutable_sealed() = a_reply.sum_step().sealed();
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply, f->Call("hospital-b", last));
  ASSERT_OK_AND_ASSIGN(const std::string total,
                       f->OpenForLeader(1, "job-000000000001", b_reply.sum_step().sealed()));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> sum, wire::DecodeWords(total));
  // The leader removes hospital-a's own mask, handed over once the ring is done.
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask,
                       f->FirstPartyMask("job-000000000001", 1, 0, sum.size()));
  ASSERT_EQ(sum.size(), mask.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] -= mask[i];
  // M: flu 2 (a, b), hiv 1 (a); F: flu 1 (a), hiv 1 (b).
  EXPECT_EQ(sum, (std::vector<uint64_t>{2, 1, 1, 1}));

  // Sex's root has one candidate; a second is no candidate of the cut.
  LeaderMessage no_candidate = HistogramStep("job-000000000001", "hospital-b", 0, 1, 2, 4);
  no_candidate.mutable_sum_step()->set_collect(1);
  EXPECT_THAT(f->Call("hospital-a", no_candidate),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sensitive histogram split by no candidate of the current cut"));
  LeaderMessage narrow = HistogramStep("job-000000000001", "hospital-b", 0, 0, 1, 4);
  narrow.mutable_sum_step()->set_collect(1);
  EXPECT_THAT(f->Call("hospital-a", narrow),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sensitive histogram of a group key of the wrong width"));

  // A job without the model has no sensitive histogram to give: its answer has no words for
  // it, and the hop is refused.
  ASSERT_OK_AND_ASSIGN(auto lkc, PartyFixture::Create("histograms_lkc", TwoHospitals()));
  ASSERT_OK(lkc->PrepareAll("job-000000000002", kSpec));
  EXPECT_THAT(lkc->Call("hospital-a", HistogramStep("job-000000000002", "hospital-b", 0, 0, 2, 4)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the secure sum has 4 words but this request needs 0"));
}

// The statistics of group (Sex = M, ANY_Job) after the instruction that specializes ANY_Sex.
TEST(PartyAgent, InstructionsApplyInOrderAndOnce) {
  // hospital-a's statistics: what hospital-b opens, less hospital-a's mask (the leader's view).
  absl::Mutex mu;
  std::vector<std::string> opened_by_b;
  ASSERT_OK_AND_ASSIGN(
      auto f,
      PartyFixture::Create("instructions", TwoHospitals(), [&](party::PartyAgentOptions& o) {
        if (o.name != "hospital-b") return;
        o.observer = party_testing::ObservingParty(
            [&](const std::string&, const std::string&, const std::string& plain) {
              absl::MutexLock lock(&mu);
              opened_by_b.push_back(plain);
            });
      }));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec));
  std::unique_ptr<PublicState> pub = MakePublicState();
  const std::vector<engine::NodeIndex> sex_children = pub->hier[0].Specialize(0, 0);
  ASSERT_EQ(sex_children.size(), 2u);
  const engine::NodeIndex male = sex_children[0];
  ASSERT_EQ(pub->hier[0].Label(male, "*"), "M");
  engine::StatsRequest group;
  group.group_keys = {{male, 0}};
  const size_t words = engine::StatsLength(pub->hier, 2, 0, group);

  auto group_step = [&](uint64_t collect) {
    LeaderMessage msg;
    msg.set_job_id("job-000000000001");
    msg.set_round(2);
    auto* step = msg.mutable_sum_step();
    step->set_collect(collect);
    *step->mutable_request() = wire::ToProto(group);
    step->set_chunks(1);
    step->set_total_words(words);
    step->set_chunk_words(words);
    step->set_next("hospital-b");
    return msg;
  };
  // Relays hospital-a's hop to hospital-b (the last party) and returns what b opened.
  auto stats_of_a = [&](const LeaderMessage& sent,
                        const PartyMessage& a_reply) -> absl::StatusOr<std::vector<uint64_t>> {
    LeaderMessage hop = sent;
    hop.mutable_sum_step()->set_next("");
    *hop.mutable_sum_step()->mutable_sealed() = a_reply.sum_step().sealed();
    auto b_reply = f->Call("hospital-b", hop);
    if (!b_reply.ok()) return b_reply.status();
    auto mask = f->FirstPartyMask("job-000000000001", 2, sent.sum_step().collect(), words);
    if (!mask.ok()) return mask.status();
    absl::MutexLock lock(&mu);
    auto words_b_opened = wire::DecodeWords(opened_by_b.back());
    if (!words_b_opened.ok()) return words_b_opened.status();
    for (size_t i = 0; i < words_b_opened->size(); ++i) (*words_b_opened)[i] -= (*mask)[i];
    return words_b_opened;
  };
  auto instruction = [](uint64_t sequence, uint32_t attribute) {
    fedanon::v1::StateUpdate u;
    u.set_sequence(sequence);
    u.mutable_instruction()->set_attribute(attribute);
    u.mutable_instruction()->set_node(0);
    u.mutable_instruction()->set_candidate(0);
    return u;
  };

  // Before the instruction the group names a node that does not exist yet.
  EXPECT_FALSE(f->Call("hospital-a", group_step(0)).ok());
  // An update that skips one is refused.
  LeaderMessage early = group_step(0);
  *early.mutable_sum_step()->add_updates() = instruction(1, 0);
  EXPECT_THAT(f->Call("hospital-a", early),
              StatusIs(absl::StatusCode::kFailedPrecondition, "state update 1 arrived before 0"));
  // An instruction for an attribute the job does not have is refused.
  LeaderMessage bogus = group_step(0);
  *bogus.mutable_sum_step()->add_updates() = instruction(0, 7);
  EXPECT_THAT(f->Call("hospital-a", bogus),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "instruction names no candidate of the current cut"));

  LeaderMessage with_update = group_step(0);
  *with_update.mutable_sum_step()->add_updates() = instruction(0, 0);
  ASSERT_OK_AND_ASSIGN(PartyMessage reply, f->Call("hospital-a", with_update));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> stats, stats_of_a(with_update, reply));
  ASSERT_EQ(stats.size(), words);
  EXPECT_EQ(stats[0], 2u);  // hospital-a holds two male records

  // The same update again (a resent request) is skipped: the cut is specialized once.
  LeaderMessage again = group_step(1);
  *again.mutable_sum_step()->add_updates() = instruction(0, 0);
  ASSERT_OK_AND_ASSIGN(reply, f->Call("hospital-a", again));
  ASSERT_OK_AND_ASSIGN(stats, stats_of_a(again, reply));
  EXPECT_EQ(stats[0], 2u);
}

TEST(PartyAgent, SecureUnionSealsGeneralizedRowsForTheRecipient) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("union", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec));
  // Nothing specialized: {Sex} and {Job}, one group each.
  ASSERT_OK(f->PassTwoPartyFinalCheck("job-000000000001", 1, 2));
  auto union_step = [](const std::string& next, const fedanon::v1::SealedPayload& list) {
    LeaderMessage msg;
    msg.set_job_id("job-000000000001");
    msg.set_round(1);
    auto* step = msg.mutable_union_step();
    *step->mutable_list() = list;
    step->set_recipient("leader");
    step->set_next(next);
    return msg;
  };
  ASSERT_OK_AND_ASSIGN(PartyMessage a_reply, f->Call("hospital-a", union_step("hospital-b", {})));
  EXPECT_EQ(a_reply.union_step().list().receiver(), "hospital-b");
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply,
                       f->Call("hospital-b", union_step("leader", a_reply.union_step().list())));
  EXPECT_EQ(b_reply.union_step().list().receiver(), "leader");

  ASSERT_OK_AND_ASSIGN(auto keys, crypto::SealKeyPairFromPem(f->leader_seal.key_pem));
  ASSERT_OK_AND_ASSIGN(auto b_key, f->PartyKey("hospital-b"));
  const std::string& run = f->run_ids.at("job-000000000001");
  ASSERT_OK_AND_ASSIGN(fedanon::v1::UnionList list,
                       wire::OpenUnionList(*keys, "job-000000000001", run, 1, "leader",
                                           "hospital-b", *b_key, b_reply.union_step().list()));
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> rows,
      wire::OpenUnionRows(*keys, "job-000000000001", run, 1, "leader", list.rows()));
  ASSERT_EQ(rows.size(), 5u);
  // Every sealed row has one length, whatever its content: the relaying leader cannot tell rows
  // (or the parties they come from) apart by length.
  for (const auto& sealed : list.rows()) {
    EXPECT_EQ(sealed.size(), wire::kUnionRowFloorBytes + crypto::kSealOverhead);
  }
  // Nothing is specialized yet: every row is generalized to the root of Sex and Job.
  for (const auto& row : rows) EXPECT_TRUE(absl::StartsWith(row, "ANY_Sex,ANY_Job,")) << row;

  // A union routed anywhere but to the agreed successor is refused.
  EXPECT_THAT(f->Call("hospital-a", union_step("hospital-z", {})),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "secure union: next is 'hospital-z' but this party's successor agreed at "
                       "Prepare is 'hospital-b'"));
}

TEST(PartyAgent, RecipientPartyWritesTheIntegratedTable) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("union_deliver", TwoHospitals()));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec, "hospital-b"));
  ASSERT_OK(f->PassTwoPartyFinalCheck("job-000000000001", 1, 2));
  LeaderMessage hop;
  hop.set_job_id("job-000000000001");
  hop.set_round(1);
  hop.mutable_union_step()->set_recipient("hospital-b");
  hop.mutable_union_step()->set_next("hospital-b");
  ASSERT_OK_AND_ASSIGN(PartyMessage a_reply, f->Call("hospital-a", hop));
  // The recipient goes last: it adds its own rows, sealing the list for itself.
  *hop.mutable_union_step()->mutable_list() = a_reply.union_step().list();
  ASSERT_OK_AND_ASSIGN(PartyMessage b_hop, f->Call("hospital-b", hop));

  LeaderMessage deliver;
  deliver.set_job_id("job-000000000001");
  deliver.set_round(1);
  auto* step = deliver.mutable_union_step();
  *step->mutable_list() = b_hop.union_step().list();
  step->set_recipient("hospital-b");
  step->set_deliver(true);
  for (const char* h : {"Sex", "Job", "Class"}) step->add_header(h);
  // Only the recipient may deliver.
  LeaderMessage misdirected = deliver;
  misdirected.mutable_union_step()->clear_list();
  EXPECT_THAT(f->Call("hospital-a", misdirected),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "asked to deliver a union meant for another party"));
  // A list that skips the recipient's own hop (straight from hospital-a) is refused.
  LeaderMessage skipped = deliver;
  *skipped.mutable_union_step()->mutable_list() = a_reply.union_step().list();
  EXPECT_THAT(f->Call("hospital-b", skipped),
              StatusIs(absl::StatusCode::kPermissionDenied, "the agreed predecessor"));
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply, f->Call("hospital-b", deliver));
  EXPECT_EQ(b_reply.union_step().rows_written(), 5u);
  const std::string csv = ReadText(f->dir + "/hospital-b/output/job-000000000001.csv");
  EXPECT_TRUE(absl::StartsWith(csv, "Sex,Job,Class\n")) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
}

TEST(PartyAgent, RequestsForAnUnknownOrEndedJobAreRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("unknown_job", TwoHospitals()));
  // Before any PrepareJob.
  EXPECT_THAT(f->Call("hospital-a", SexClassCountsStep("job-000000000001", "")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
  ASSERT_OK(f->PrepareAll("job-000000000001", kSpec));
  // Another job's id.
  EXPECT_THAT(f->Call("hospital-a", SexClassCountsStep("job-000000000002", "")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
  LeaderMessage union_step;
  union_step.set_job_id("job-000000000002");
  union_step.mutable_union_step()->set_recipient("leader");
  EXPECT_THAT(f->Call("hospital-a", union_step),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
  LeaderMessage vertical;
  vertical.set_job_id("job-000000000001");
  vertical.mutable_vertical()->mutable_propose();
  EXPECT_THAT(f->Call("hospital-a", vertical), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                        "no prepared vertical job with this id"));

  // EndJob of another job keeps this one; EndJob of this one drops it.
  LeaderMessage sum = SexClassCountsStep("job-000000000001", "hospital-b");
  ASSERT_OK(f->Call("hospital-a", EndJob("job-000000000002")));
  EXPECT_OK(f->Call("hospital-a", sum));
  ASSERT_OK_AND_ASSIGN(PartyMessage ended, f->Call("hospital-a", EndJob("job-000000000001")));
  EXPECT_TRUE(ended.has_pong());
  EXPECT_THAT(f->Call("hospital-a", sum),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
}

// ---------------------------------------------------------------------------------------------
// Boxes and jobs bound to their run: a box of an earlier run of the same job id never opens in a
// later run, and a Prepare (signed or not) never replaces a job a party holds.

TEST(PartyAgent, ABoxOfAnEarlierRunOfTheSameJobDoesNotOpen) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("run_bound", TwoHospitals()));
  const std::string job = "job-000000000001";
  ASSERT_OK(f->PrepareAll(job, kSpec));
  ASSERT_OK_AND_ASSIGN(PartyMessage old_hop,
                       f->Call("hospital-a", SexClassCountsStep(job, "hospital-b")));
  for (const auto& name : f->names) ASSERT_OK(f->Call(name, EndJob(job)));
  // The admin signs the same job again: a new run under the same job id.
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare(job, kSpec));
  ASSERT_OK(SignInto(
      &prepare,
      AuthorizedJobOf(prepare, TaxonomyTexts(prepare.prepare().spec(), f->dir + "/hospital-a")),
      f->admin));
  for (const auto& name : f->names) ASSERT_OK(f->Call(name, prepare));
  // The leader hands hospital-b the earlier run's hop (same job, round, collect, purpose).
  LeaderMessage replay = SexClassCountsStep(job, "");
  *replay.mutable_sum_step()->mutable_sealed() = old_hop.sum_step().sealed();
  EXPECT_THAT(f->Call("hospital-b", replay),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the input does not open as sealed by 'hospital-a'"));
}

TEST(PartyAgent, APrepareNeverReplacesAJobThePartyHolds) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("prepare_twice", TwoHospitals()));
  const std::string job = "job-000000000001";
  ASSERT_OK(f->PrepareAll(job, kSpec));
  // Unsigned, with the running job's id: refused before anything is touched.
  ASSERT_OK_AND_ASSIGN(LeaderMessage unsigned_prepare, f->Prepare(job, kSpec));
  unsigned_prepare.mutable_prepare()->clear_authorization();
  EXPECT_THAT(f->Call("hospital-a", unsigned_prepare),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "is already prepared at this party; a Prepare does not replace a job"));
  // The job goes on as prepared.
  EXPECT_OK(f->Call("hospital-a", SexClassCountsStep(job, "hospital-b")));
}

// A party restarted during a job reads its table again: a table that changed meanwhile (here the
// same rows re-sorted, so every count is the same) is refused by name instead of answering a
// repeated request differently or attaching later answers to other records.
TEST(PartyDurableState, ATableChangedWhileThePartyWasDownIsRefused) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_changed", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000005";
  ASSERT_OK(f->PrepareAll(job, kSpec));
  LeaderMessage first = SexClassCountsStep(job, "hospital-b");
  ASSERT_OK(f->Call("hospital-a", first));
  WriteText(options["hospital-a"].data_dir + "/table.csv",
            "Sex,Job,Class\nF,Janitor,Y\nM,Lawyer,N\nM,Janitor,Y\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(options["hospital-a"]));
  const PartyMessage again = restarted->Handle(first);
  ASSERT_TRUE(again.has_error());
  EXPECT_THAT(again.error().message(),
              HasSubstr("table 'table.csv' changed while the party was down (its fingerprint "
                        "differs from the one taken at prepare: its bytes are not those the job "
                        "was prepared on"));
}

// The released rows copy non-QID columns from the file, read again at the union: a file changed
// since Prepare is refused there too.
TEST(PartyAgent, ATableChangedBeforeTheUnionIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("union_changed", TwoHospitals()));
  const std::string job = "job-000000000006";
  ASSERT_OK(f->PrepareAll(job, kSpec));
  ASSERT_OK(f->PassTwoPartyFinalCheck(job, 1, 2));
  WriteText(f->dir + "/hospital-a/table.csv",
            "Sex,Job,Class\nM,Janitor,N\nM,Lawyer,N\nF,Janitor,Y\n");
  LeaderMessage msg;
  msg.set_job_id(job);
  msg.set_round(1);
  msg.mutable_union_step()->set_recipient("leader");
  msg.mutable_union_step()->set_next("hospital-b");
  EXPECT_THAT(f->Call("hospital-a", msg), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                   "its table changed since the job was prepared"));
}

// ---------------------------------------------------------------------------------------------
// Durable state (party/job_journal.h): what a party needs to go on with a horizontal job after
// its own restart, written before each reply leaves.

// A vertical job resumed after its party restarted with a rotated statement-signing pair (the
// sealing pair unchanged) goes on with the statement key it was prepared with, kept in its
// durable state: the other parties verify its statements against the certificate the Prepare
// named.
TEST(PartyDurableState, AVerticalJobResumesWithTheStatementKeyItWasPreparedWith) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_sign_rotated", TwoVerticalHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000001";
  ASSERT_OK_AND_ASSIGN(LeaderMessage prepare, f->Prepare(job, kVerticalSpec));
  prepare.set_request_id(7);
  ASSERT_OK_AND_ASSIGN(const PartyMessage first, f->Call("hospital-a", prepare));
  party::PartyAgentOptions rotated = options["hospital-a"];
  ASSERT_OK_AND_ASSIGN(
      const crypto::IssuedCertificate sign,
      f->ca->IssueStatementSigner({crypto::Role::kParty, "hospital-a"}, absl::Hours(1)));
  rotated.sign_cert_pem = sign.cert_pem;
  rotated.sign_key_pem = sign.key_pem;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(rotated));
  EXPECT_EQ(restarted->sign_cert_pem(), sign.cert_pem);
  // The job's next request reloads it from its state file; its proposal is signed with the
  // statement key of the certificate the Prepare named, which the new certificate's does not
  // verify.
  LeaderMessage propose;
  propose.set_job_id(job);
  propose.set_round(1);
  propose.mutable_vertical()->mutable_propose();
  const PartyMessage proposed = restarted->Handle(propose);
  ASSERT_FALSE(proposed.has_error()) << proposed.error().message();
  const fedanon::v1::VerticalProposal& proposal = proposed.vertical().proposal();
  EXPECT_EQ(proposal.reason(), "the job has not started");
  const std::string statement =
      party::ProposalStatement(job, f->run_ids.at(job), 1, /*decisions=*/0, proposal);
  ASSERT_OK_AND_ASSIGN(auto prepared_key, crypto::VerifiedStatementKey(
                                              f->agents[0]->sign_cert_pem(), f->ca->cert_pem(),
                                              {crypto::Role::kParty, "hospital-a"}));
  ASSERT_OK_AND_ASSIGN(auto new_key,
                       crypto::VerifiedStatementKey(sign.cert_pem, f->ca->cert_pem(),
                                                    {crypto::Role::kParty, "hospital-a"}));
  EXPECT_OK(crypto::VerifyStatement(*prepared_key, statement, proposal.signature()));
  EXPECT_FALSE(crypto::VerifyStatement(*new_key, statement, proposal.signature()).ok());
  EXPECT_TRUE(first.has_prepared());
}

// Prepares `job_id` at every party with one signed Prepare, returned (to send it again).
LeaderMessage PrepareEveryParty(PartyFixture& f, const std::string& job_id) {
  absl::StatusOr<LeaderMessage> prepare = f.Prepare(job_id, kSpec);
  EXPECT_TRUE(prepare.ok()) << prepare.status();
  for (const std::string& name : f.names) EXPECT_OK(f.Call(name, *prepare));
  return *prepare;
}

TEST(PartyDurableState, RestartedPartyAnswersARepeatedRequestWithTheStoredBytes) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_repeat", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000001";
  const LeaderMessage prepare = PrepareEveryParty(*f, job);
  // The state file lives beside the run ledger, private to the party.
  const std::string state = options["hospital-a"].output_dir + "/" + job + ".state";
  ASSERT_TRUE(std::filesystem::exists(state));
  EXPECT_EQ(std::filesystem::status(state).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  LeaderMessage first = SexClassCountsStep(job, "hospital-b");
  ASSERT_OK_AND_ASSIGN(PartyMessage before, f->Call("hospital-a", first));

  // kill -9 and restart: a new process over the same directories, nothing in memory.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(options["hospital-a"]));
  PartyMessage again = restarted->Handle(first);
  ASSERT_FALSE(again.has_error()) << again.error().message();
  before.clear_request_id();
  again.clear_request_id();
  EXPECT_EQ(again.SerializeAsString(), before.SerializeAsString())
      << "the same request must get the same reply, byte for byte";
  // Another request under the same key (collect 0, chunk 0) is refused by name.
  LeaderMessage other = first;
  other.mutable_sum_step()->mutable_request()->mutable_node_class_counts(0)->set_attribute(1);
  const PartyMessage refused = restarted->Handle(other);
  ASSERT_TRUE(refused.has_error());
  EXPECT_THAT(refused.error().message(),
              HasSubstr("already answered for a different request (one request, one answer)"));
  // The run goes on: hospital-b takes the (identical) hop and seals the total for the leader.
  LeaderMessage last = SexClassCountsStep(job, "");
  *last.mutable_sum_step()->mutable_sealed() = again.sum_step().sealed();
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply, f->Call("hospital-b", last));
  ASSERT_OK_AND_ASSIGN(const std::string total,
                       f->OpenForLeader(1, job, b_reply.sum_step().sealed()));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> sum, wire::DecodeWords(total));
  // The restarted party hands over the mask it drew before the restart: the sum comes out right.
  const PartyMessage unmask = [&] {
    LeaderMessage msg;
    msg.set_job_id(job);
    msg.set_round(1);
    msg.mutable_sum_unmask()->set_collect(0);
    return restarted->Handle(msg);
  }();
  ASSERT_FALSE(unmask.has_error()) << unmask.error().message();
  ASSERT_OK_AND_ASSIGN(const std::string seed, f->OpenForLeader(1, job, unmask.sum_mask().seed()));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask, crypto::MaskWordsFromSeed(seed, 0, 4));
  for (size_t i = 0; i < sum.size(); ++i) sum[i] -= mask[i];
  EXPECT_EQ(sum, (std::vector<uint64_t>{1, 2, 1, 1}));
  // Never a fresh second Prepare of the job it holds, not even after the restart; the refusal
  // keeps the durable state, and the next request of the run is answered from it.
  const PartyMessage second_prepare = restarted->Handle(prepare);
  ASSERT_TRUE(second_prepare.has_error());
  EXPECT_THAT(second_prepare.error().message(), HasSubstr("already prepared at this party"));
  // Another process that has not reloaded the job yet refuses the used run id.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> fresh,
                       party::PartyAgent::Create(options["hospital-a"]));
  const PartyMessage used_run = fresh->Handle(prepare);
  ASSERT_TRUE(used_run.has_error());
  EXPECT_THAT(used_run.error().message(), HasSubstr("run id already used"));
  EXPECT_TRUE(std::filesystem::exists(state));
  again = restarted->Handle(first);
  ASSERT_FALSE(again.has_error()) << again.error().message();
  again.clear_request_id();
  EXPECT_EQ(again.SerializeAsString(), before.SerializeAsString());
  // The job's end deletes it.
  const PartyMessage ended = restarted->Handle(EndJob(job));
  ASSERT_FALSE(ended.has_error()) << ended.error().message();
  EXPECT_FALSE(std::filesystem::exists(state));
  const PartyMessage after_end = restarted->Handle(first);
  ASSERT_TRUE(after_end.has_error());
  EXPECT_THAT(after_end.error().message(), HasSubstr("no prepared job with this id"));
}

constexpr char kBinnedAgeSpec[] = R"(name: binned-age
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: cls, role: class, values: [Y, N]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 3}
numeric_split: binned
numeric_cells: 4
)";

// A bin check (numeric_split: binned) goes on after either comparing party restarted in the
// middle of it: the restarted party answers its answered steps with the bytes that left, runs its
// next steps from the seed it kept (the other party, which never restarted, accepts them), and the
// first party hands over the mask it drew before its restart: the bins' class counts come out.
TEST(PartyDurableState, ABinCheckGoesOnAfterEitherComparingPartyRestarts) {
  std::map<std::string, party::PartyAgentOptions> options;
  const std::vector<std::map<std::string, std::string>> files = {
      {{"table.csv", "age,cls\n10,Y\n12,N\n30,Y\n60,N\n61,N\n"}},
      {{"table.csv", "age,cls\n11,Y\n31,N\n32,N\n62,Y\n90,N\n"}}};
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_bins", files,
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000001";
  ASSERT_OK(f->PrepareAll(job, kBinnedAgeSpec).status());
  // The bins [0, 25), [25, 50), [50, 100): 3, 3 and 4 records, two classes each.
  LeaderMessage hop;
  hop.set_job_id(job);
  hop.set_round(1);
  auto* step = hop.mutable_sum_step();
  auto* range = step->mutable_request()->add_range_counts();
  range->set_attribute(0);
  for (int32_t b : {0, 25, 50, 100}) range->add_bounds(b);
  range->set_labelled(true);
  step->set_next("hospital-b");
  step->set_chunks(1);
  step->set_total_words(6);
  step->set_chunk_words(6);
  ASSERT_OK_AND_ASSIGN(const PartyMessage first_hop, f->Call("hospital-a", hop));
  EXPECT_FALSE(first_hop.sum_step().has_mask_seed());
  LeaderMessage last = hop;
  last.mutable_sum_step()->set_next("");
  *last.mutable_sum_step()->mutable_sealed() = first_hop.sum_step().sealed();
  ASSERT_OK_AND_ASSIGN(const PartyMessage last_hop, f->Call("hospital-b", last));
  ASSERT_OK_AND_ASSIGN(const std::string total,
                       f->OpenForLeader(1, job, last_hop.sum_step().sealed()));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> sum, wire::DecodeWords(total));

  auto check = [&](uint32_t s, const fedanon::v1::SealedPayload* input) {
    LeaderMessage msg;
    msg.set_job_id(job);
    msg.set_round(1);
    msg.mutable_sum_bin_check()->set_collect(0);
    msg.mutable_sum_bin_check()->set_step(s);
    if (input != nullptr) *msg.mutable_sum_bin_check()->mutable_input() = *input;
    return msg;
  };
  ASSERT_OK_AND_ASSIGN(const PartyMessage s1, f->Call("hospital-b", check(1, nullptr)));
  ASSERT_OK_AND_ASSIGN(const PartyMessage s2,
                       f->Call("hospital-a", check(2, &s1.sum_bin_checked().sealed())));
  // The garbler restarts (kill -9): its step 2 again gets the bytes that left; its step 4 is
  // computed from the seed it kept.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> a,
                       party::PartyAgent::Create(options["hospital-a"]));
  PartyMessage s2_again = a->Handle(check(2, &s1.sum_bin_checked().sealed()));
  ASSERT_FALSE(s2_again.has_error()) << s2_again.error().message();
  s2_again.clear_request_id();
  EXPECT_EQ(s2_again.SerializeAsString(), s2.SerializeAsString());
  ASSERT_OK_AND_ASSIGN(const PartyMessage s3,
                       f->Call("hospital-b", check(3, &s2.sum_bin_checked().sealed())));
  const PartyMessage s4 = a->Handle(check(4, &s3.sum_bin_checked().sealed()));
  ASSERT_FALSE(s4.has_error()) << s4.error().message();
  // The evaluator restarts before its step 5.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> b,
                       party::PartyAgent::Create(options["hospital-b"]));
  const PartyMessage s5 = b->Handle(check(5, &s4.sum_bin_checked().sealed()));
  ASSERT_FALSE(s5.has_error()) << s5.error().message();
  const PartyMessage s6 = a->Handle(check(6, &s5.sum_bin_checked().sealed()));
  ASSERT_FALSE(s6.has_error()) << s6.error().message();
  ASSERT_OK_AND_ASSIGN(
      const std::vector<uint64_t> mask,
      f->FirstPartyMask(job, 1, 0, 6, [&](const std::string&, const LeaderMessage& msg) {
        return HandledBy(*a, msg);
      }));
  for (size_t i = 0; i < sum.size(); ++i) sum[i] -= mask[i];
  EXPECT_EQ(sum, (std::vector<uint64_t>{2, 1, 1, 2, 1, 3}));
}

// The two-party final check's comparisons go on after a party restarted in the middle of one
// (each instance's randomness comes from a seed kept with its first step): the restarted garbler
// answers its answered step with the bytes that left and computes its next from the seed; the
// restarted evaluator likewise; both then confirm the check.
TEST(PartyDurableState, ATwoPartyFinalCheckGoesOnAfterAPartyRestartsMidComparison) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_final_compare", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000001";
  ASSERT_OK(f->PrepareAll(job, kSpec));
  std::map<std::string, std::unique_ptr<party::PartyAgent>> restarted;
  auto reach = [&](const std::string& party, const LeaderMessage& msg) {
    return restarted.contains(party) ? HandledBy(*restarted[party], msg) : f->Call(party, msg);
  };
  // The leader's calls; the garbler's step 2 and the evaluator's step 3 of comparison 0 are
  // answered, then the party is killed (-9) and restarted, and the same step comes again.
  auto call = [&](const std::string& party,
                  const LeaderMessage& msg) -> absl::StatusOr<PartyMessage> {
    absl::StatusOr<PartyMessage> reply = reach(party, msg);
    const auto& step = msg.final_check();
    if (reply.ok() && step.phase() == fedanon::v1::FinalCheckStep::PHASE_COMPARE &&
        step.comparison() == 0 && (step.comparison_step() == 2 || step.comparison_step() == 3)) {
      auto agent = party::PartyAgent::Create(options[party]);
      if (!agent.ok()) return agent.status();
      restarted[party] = *std::move(agent);
      absl::StatusOr<PartyMessage> again = reach(party, msg);
      if (!again.ok()) return again.status();
      again->clear_request_id();
      reply->clear_request_id();
      EXPECT_EQ(again->SerializeAsString(), reply->SerializeAsString())
          << "step " << step.comparison_step();
    }
    return reply;
  };
  EXPECT_OK(f->PassTwoPartyFinalCheck(job, 1, 2, call));
  EXPECT_EQ(restarted.size(), 2u);
}

// A party whose sealing key pair was replaced on disk before it restarted mid-job: the job goes on
// with the key it was prepared with (kept in its durable state), so what it seals still verifies
// against the certificate the job recorded for it. The new pair serves jobs prepared afterwards.
TEST(PartyDurableState, AJobResumedAfterARestartKeepsTheSealingKeyItWasPreparedWith) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_rotated", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000004";
  PrepareEveryParty(*f, job);
  LeaderMessage c0 = SexClassCountsStep(job, "hospital-b");
  ASSERT_OK(f->Call("hospital-a", c0));
  // seal.key / seal.crt replaced, then the restart.
  party::PartyAgentOptions rotated = options["hospital-a"];
  ASSERT_OK_AND_ASSIGN(auto seal,
                       f->ca->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1)));
  rotated.seal_cert_pem = seal.cert_pem;
  rotated.seal_key_pem = seal.key_pem;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(rotated));
  EXPECT_EQ(restarted->seal_cert_pem(), seal.cert_pem);
  // A fresh answer (collect 1) after the reload, sealed for hospital-b with the job's own key.
  LeaderMessage c1 = c0;
  c1.set_round(2);
  c1.mutable_sum_step()->set_collect(1);
  const PartyMessage a_reply = restarted->Handle(c1);
  ASSERT_FALSE(a_reply.has_error()) << a_reply.error().message();
  LeaderMessage last = SexClassCountsStep(job, "");
  last.set_round(2);
  last.mutable_sum_step()->set_collect(1);
  *last.mutable_sum_step()->mutable_sealed() = a_reply.sum_step().sealed();
  ASSERT_OK_AND_ASSIGN(PartyMessage b_reply, f->Call("hospital-b", last));
  ASSERT_OK_AND_ASSIGN(const std::string total,
                       f->OpenForLeader(2, job, b_reply.sum_step().sealed()));
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> sum, wire::DecodeWords(total));
  LeaderMessage unmask;
  unmask.set_job_id(job);
  unmask.set_round(2);
  unmask.mutable_sum_unmask()->set_collect(1);
  const PartyMessage mask_reply = restarted->Handle(unmask);
  ASSERT_FALSE(mask_reply.has_error()) << mask_reply.error().message();
  ASSERT_OK_AND_ASSIGN(const std::string seed,
                       f->OpenForLeader(2, job, mask_reply.sum_mask().seed()));
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> mask, crypto::MaskWordsFromSeed(seed, 0, 4));
  for (size_t i = 0; i < sum.size(); ++i) sum[i] -= mask[i];
  EXPECT_EQ(sum, (std::vector<uint64_t>{1, 2, 1, 1}));
  // The state file keeps the job's key until the job ends (0600, deleted with it).
  const std::string state = rotated.output_dir + "/" + job + ".state";
  ASSERT_FALSE(restarted->Handle(EndJob(job)).has_error());
  EXPECT_FALSE(std::filesystem::exists(state));
}

TEST(PartyDurableState, StateUpdatesAreReappliedAfterARestart) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_updates", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000002";
  PrepareEveryParty(*f, job);
  // Collect 0 at hospital-a; collect 1 carries the instruction that specializes ANY_Sex and asks
  // for the statistics of group (Sex = M), which exists only once the instruction is applied.
  LeaderMessage c0 = SexClassCountsStep(job, "hospital-b");
  ASSERT_OK(f->Call("hospital-a", c0));
  std::unique_ptr<PublicState> pub = MakePublicState();
  const std::vector<engine::NodeIndex> sex_children = pub->hier[0].Specialize(0, 0);
  engine::StatsRequest group;
  group.group_keys = {{sex_children[0], 0}};
  const size_t words = engine::StatsLength(pub->hier, 2, 0, group);
  LeaderMessage c1;
  c1.set_job_id(job);
  c1.set_round(2);
  auto* step = c1.mutable_sum_step();
  step->set_collect(1);
  *step->mutable_request() = wire::ToProto(group);
  step->set_chunks(1);
  step->set_total_words(words);
  step->set_chunk_words(words);
  step->set_next("hospital-b");
  auto* u = step->add_updates();
  u->set_sequence(0);
  u->mutable_instruction()->set_attribute(0);
  u->mutable_instruction()->set_node(0);
  u->mutable_instruction()->set_candidate(0);
  ASSERT_OK_AND_ASSIGN(PartyMessage before, f->Call("hospital-a", c1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(options["hospital-a"]));
  PartyMessage again = restarted->Handle(c1);
  ASSERT_FALSE(again.has_error()) << again.error().message();
  before.clear_request_id();
  again.clear_request_id();
  EXPECT_EQ(again.SerializeAsString(), before.SerializeAsString());
  // The reloaded cut goes on: collect 2 over the same group (no new update) is answered.
  LeaderMessage c2 = c1;
  c2.mutable_sum_step()->set_collect(2);
  c2.mutable_sum_step()->clear_updates();
  const PartyMessage next = restarted->Handle(c2);
  EXPECT_FALSE(next.has_error()) << next.error().message();
  // An older collect is refused after the restart as before it (one request, one answer).
  const PartyMessage old = restarted->Handle(c0);
  ASSERT_TRUE(old.has_error());
  EXPECT_THAT(old.error().message(), HasSubstr("is older than collect"));
}

TEST(PartyDurableState, APartyThatLostItsStateFileCannotResume) {
  std::map<std::string, party::PartyAgentOptions> options;
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("durable_lost", TwoHospitals(),
                                   [&](party::PartyAgentOptions& o) { options[o.name] = o; }));
  const std::string job = "job-000000000003";
  PrepareEveryParty(*f, job);
  LeaderMessage first = SexClassCountsStep(job, "hospital-b");
  ASSERT_OK(f->Call("hospital-a", first));
  std::filesystem::remove(options["hospital-a"].output_dir + "/" + job + ".state");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> restarted,
                       party::PartyAgent::Create(options["hospital-a"]));
  const PartyMessage reply = restarted->Handle(first);
  ASSERT_TRUE(reply.has_error());
  EXPECT_THAT(reply.error().message(),
              HasSubstr("the party restarted without its durable state, so the job cannot resume"));
}

TEST(JobJournal, KeepsCompleteRecordsIgnoresATornTailAndRefusesLooseModes) {
  const std::string dir = FreshDir("job_journal");
  const std::string job = "job-0000000000aa";
  ASSERT_OK_AND_ASSIGN(auto journal, party::JobJournal::Start(dir, job, {"prepare", "", ""}));
  ASSERT_OK(journal->Append({"request", "reply", std::string("extra\0bytes", 11)}));
  journal.reset();
  const std::string path = dir + "/" + job + ".state";
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // A crash in the middle of an append leaves a torn record: that reply never left.
  {
    std::ofstream torn(path, std::ios::app | std::ios::binary);
    torn << std::string("\x07\0\0\0\0\0\0\0req", 11);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<party::JournalRecord> records,
                       party::JobJournal::Read(dir, job));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].request, "prepare");
  EXPECT_EQ(records[1].reply, "reply");
  EXPECT_EQ(records[1].extra, std::string("extra\0bytes", 11));
  // Readable by others: refused, never trusted.
  std::filesystem::permissions(path, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  EXPECT_THAT(party::JobJournal::Read(dir, job),
              StatusIs(absl::StatusCode::kFailedPrecondition, "mode is not 0600"));
  ASSERT_OK(party::JobJournal::Remove(dir, job));
  EXPECT_FALSE(party::JobJournal::Exists(dir, job));
  EXPECT_THAT(party::JobJournal::Read(dir, job),
              StatusIs(absl::StatusCode::kNotFound, "no state file"));
  EXPECT_THAT(party::JobJournal::PathFor(dir, "../etc/passwd"),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

// The push-down snapshot's fingerprint is kept in the file's header (version 2); a version-1
// file, written by an older build, is still read, with no fingerprint.
TEST(JobJournal, KeepsTheSnapshotFingerprintAndReadsVersionOneFiles) {
  const std::string dir = FreshDir("job_journal_v2");
  const std::string job = "job-0000000000ab";
  ASSERT_OK_AND_ASSIGN(auto journal,
                       party::JobJournal::Start(dir, job, {"prepare", "", "key"}, "0123abcd"));
  ASSERT_OK(journal->Append({"request", "reply", ""}));
  journal.reset();
  std::string snapshot = "stale";
  ASSERT_OK_AND_ASSIGN(std::vector<party::JournalRecord> records,
                       party::JobJournal::Read(dir, job, &snapshot));
  EXPECT_EQ(snapshot, "0123abcd");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].request, "prepare");
  EXPECT_EQ(records[0].extra, "key");
  EXPECT_EQ(records[1].reply, "reply");

  // Version 1: "FDJS1\n", then records of three length-prefixed fields and "\n".
  const std::string path = dir + "/" + job + ".state";
  auto field = [](const std::string& f) {
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((f.size() >> (8 * i)) & 0xff));
    return out + f;
  };
  const std::string v1 = "FDJS1\n" + field("prepare") + field("") + field("key") + "\n" +
                         field("request") + field("reply") + field("x") + "\n";
  ASSERT_OK(base::WriteFileAtomically(path, v1, {.mode = base::kPrivateFileMode}));
  snapshot = "stale";
  ASSERT_OK_AND_ASSIGN(records, party::JobJournal::Read(dir, job, &snapshot));
  EXPECT_EQ(snapshot, "");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].request, "prepare");
  EXPECT_EQ(records[0].extra, "key");
  EXPECT_EQ(records[1].request, "request");
  EXPECT_EQ(records[1].extra, "x");
  // Appending to it keeps its records readable (an older job going on after an upgrade).
  ASSERT_OK_AND_ASSIGN(journal, party::JobJournal::Reopen(dir, job));
  ASSERT_OK(journal->Append({"request2", "reply2", ""}));
  journal.reset();
  ASSERT_OK_AND_ASSIGN(records, party::JobJournal::Read(dir, job));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].request, "request2");
}

}  // namespace
}  // namespace fedanon::testing
