// Job authorization and the party's own policy (party/job_authorization.h, party/party_policy.h,
// party/run_ledger.h): the checks on their own, then through PartyAgent with the test playing
// the leader (tests/party/party_test_util.h).
#include "party/job_authorization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "crypto/hash.h"
#include "crypto/signature.h"
#include "party/party_policy.h"
#include "party/run_ledger.h"
#include "tests/party/party_test_util.h"
#include "tests/support/job_authorization_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::AuthorizedJob;
using fedanon::v1::LeaderMessage;
using party::AuthorizationOptions;
using party::CheckPartyPolicy;
using party::JobAuthorizer;
using party::PartyPolicy;
using party::RunLedger;

constexpr auto kDenied = absl::StatusCode::kPermissionDenied;

constexpr char kSpec[] = R"(name: authz
attributes:
  - {name: Sex, role: qid, values: [M, F]}
  - {name: Job, role: qid, values: [Janitor, Lawyer]}
  - {name: Disease, role: sensitive, values: [flu, hiv]}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 5, C: 0.5, sensitive_values: [hiv]}
partitioning: horizontal
)";
constexpr char kTable[] =
    "Sex,Job,Disease,Class\nM,Janitor,flu,Y\nF,Lawyer,hiv,N\nM,Lawyer,flu,N\nF,Janitor,flu,Y\n";

fedanon::v1::JobSpec Spec(const std::string& yaml = kSpec) {
  auto spec = spec::ParseJobSpecYaml(yaml, "job.yaml");
  EXPECT_OK(spec);
  return *spec;
}

// A CA, an admin "alice", and a Prepare for hospital-a of a three-party ring signed by her.
class JobAuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(ca_, crypto::CertificateAuthority::Create("test", absl::Hours(24)));
    ASSERT_OK_AND_ASSIGN(alice_, IssueTestAdmin(*ca_, "alice"));
    msg_.set_job_id("job-000000000001");
    auto* prepare = msg_.mutable_prepare();
    *prepare->mutable_spec() = Spec();
    for (const char* p : {"hospital-a", "hospital-b", "hospital-c"}) prepare->add_ring(p);
    prepare->set_recipient("hospital-b");
    prepare->set_data_path("2024.csv");
    job_ = AuthorizedJobOf(msg_);
    ASSERT_OK(SignInto(&msg_, job_, alice_));
  }

  JobAuthorizer Authorizer(std::optional<std::vector<std::string>> admins = std::nullopt) const {
    return JobAuthorizer(
        AuthorizationOptions{"hospital-a", ca_->cert_pem(), std::move(admins), {}});
  }
  absl::StatusOr<AuthorizedJob> Verify(const LeaderMessage& msg,
                                       absl::Time now = absl::Now()) const {
    return Authorizer().Verify(msg.prepare(), "leader", now);
  }

  std::unique_ptr<crypto::CertificateAuthority> ca_;
  wire::AdminSigner alice_;
  LeaderMessage msg_;
  AuthorizedJob job_;
};

TEST_F(JobAuthorizerTest, AcceptsTheSignedJob) {
  ASSERT_OK_AND_ASSIGN(AuthorizedJob got, Verify(msg_));
  EXPECT_EQ(got.run_id(), job_.run_id());
  EXPECT_OK(JobAuthorizer::CheckDigest(got, job_.job_digest()));
  EXPECT_OK(Authorizer({{"bob", "alice"}}).Verify(msg_.prepare(), "leader", absl::Now()));
}

// An admin's valid signature over bytes that are no authorized job (not a protobuf, a run id
// that is not 32 hex digits, a digest that is not 32 bytes) authorizes nothing.
TEST_F(JobAuthorizerTest, ASignedBodyThatIsNoAuthorizedJobIsRefused) {
  AuthorizedJob bad_run = job_;
  bad_run.set_run_id("not-a-run-id");
  AuthorizedJob bad_digest = job_;
  bad_digest.set_job_digest("short");
  for (const std::string& body : {std::string("\xff\xff not a protobuf"),
                                  bad_run.SerializeAsString(), bad_digest.SerializeAsString()}) {
    LeaderMessage msg = msg_;
    auto* auth = msg.mutable_prepare()->mutable_authorization();
    auth->set_body(body);
    ASSERT_OK_AND_ASSIGN(*auth->mutable_signature(), crypto::Sign(alice_.key_pem, body));
    EXPECT_THAT(Verify(msg),
                StatusIs(kDenied, "job not authorized: the signed job does not parse"));
  }
  EXPECT_OK(Verify(msg_));
}

TEST_F(JobAuthorizerTest, TamperedSpecIsRefused) {
  // The party computes the digest of the spec it loaded; a weaker K gives another digest.
  fedanon::v1::JobSpec weaker = msg_.prepare().spec();
  weaker.mutable_privacy()->set_k(2);
  const std::string digest = crypto::Sha256(spec::CanonicalJobBytes(weaker, {}));
  EXPECT_THAT(JobAuthorizer::CheckDigest(job_, digest),
              StatusIs(kDenied, "job not authorized: the job (spec or taxonomies"));
  // So do other taxonomy contents.
  EXPECT_THAT(
      JobAuthorizer::CheckDigest(job_, crypto::Sha256(spec::CanonicalJobBytes(
                                           msg_.prepare().spec(), {{"Sex", "M;ANY\nF;ANY\n"}}))),
      StatusIs(kDenied, "differs from the admin's signed job"));
}

TEST_F(JobAuthorizerTest, OtherRingIsRefused) {
  LeaderMessage other = msg_;
  other.mutable_prepare()->mutable_ring()->SwapElements(1, 2);
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "job not authorized: ring differs"));
  other = msg_;
  other.mutable_prepare()->mutable_ring()->RemoveLast();
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "ring differs"));
}

TEST_F(JobAuthorizerTest, OtherRecipientLeaderPartyOrDataPathIsRefused) {
  LeaderMessage other = msg_;
  other.mutable_prepare()->set_recipient("hospital-c");
  EXPECT_THAT(Verify(other), StatusIs(kDenied,
                                      "job not authorized: recipient differs from the "
                                      "admin's signed job"));
  other.mutable_prepare()->set_recipient("");  // the leader
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "recipient differs"));
  other = msg_;
  other.mutable_prepare()->set_leader_party("hospital-a");
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "leader_party differs"));
  other = msg_;
  other.mutable_prepare()->set_data_path("2023.csv");
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "data path differs"));
  // Signed "the leader": the announced leader is accepted under its name, nobody else.
  LeaderMessage to_leader = msg_;
  to_leader.mutable_prepare()->set_recipient("");
  AuthorizedJob job = AuthorizedJobOf(to_leader);
  ASSERT_OK(SignInto(&to_leader, job, alice_));
  EXPECT_OK(Verify(to_leader));
  to_leader.mutable_prepare()->set_recipient("leader");
  EXPECT_OK(Verify(to_leader));
  to_leader.mutable_prepare()->set_recipient("hospital-b");
  EXPECT_THAT(Verify(to_leader), StatusIs(kDenied, "recipient differs"));
}

// The taxonomy paths the spec names are the signed ones, attribute by attribute, and no more.
TEST_F(JobAuthorizerTest, ATaxonomyPathOtherThanTheSignedOneIsRefused) {
  LeaderMessage with_taxonomy = msg_;
  auto* sex = with_taxonomy.mutable_prepare()->mutable_spec()->mutable_attributes(0);
  sex->clear_values();
  sex->set_taxonomy("sex.csv");
  AuthorizedJob job = AuthorizedJobOf(with_taxonomy);
  EXPECT_EQ(job.taxonomy_paths().size(), 1u);
  EXPECT_EQ(job.taxonomy_paths().at("Sex"), "sex.csv");
  ASSERT_OK(SignInto(&with_taxonomy, job, alice_));
  EXPECT_OK(Verify(with_taxonomy));
  LeaderMessage other = with_taxonomy;
  other.mutable_prepare()->mutable_spec()->mutable_attributes(0)->set_taxonomy("other.csv");
  EXPECT_THAT(Verify(other), StatusIs(kDenied,
                                      "job not authorized: the taxonomy path of attribute 'Sex' "
                                      "differs from the admin's signed job"));
  other = with_taxonomy;
  other.mutable_prepare()->mutable_spec()->mutable_attributes(1)->set_taxonomy("sex.csv");
  EXPECT_THAT(Verify(other), StatusIs(kDenied, "taxonomy path of attribute 'Job' differs"));
  other = with_taxonomy;
  other.mutable_prepare()->mutable_spec()->mutable_attributes(0)->clear_taxonomy();
  EXPECT_THAT(Verify(other),
              StatusIs(kDenied,
                       "the admin signed a taxonomy path for attribute 'Sex', which the "
                       "Prepare's spec does not name"));
  // An authorization from before taxonomy paths were signed names none: refused too.
  job.clear_taxonomy_paths();
  ASSERT_OK(SignInto(&with_taxonomy, job, alice_));
  EXPECT_THAT(Verify(with_taxonomy), StatusIs(kDenied, "taxonomy path of attribute 'Sex'"));
}

TEST_F(JobAuthorizerTest, ExpiredAuthorizationIsRefused) {
  EXPECT_THAT(Verify(msg_, absl::Now() + absl::Hours(2)),
              StatusIs(kDenied, "job not authorized: the admin's authorization expired"));
  AuthorizedJob future = job_;
  future.set_issued_unix(absl::ToUnixSeconds(absl::Now() + absl::Hours(1)));
  future.set_expires_unix(absl::ToUnixSeconds(absl::Now() + absl::Hours(2)));
  LeaderMessage msg = msg_;
  ASSERT_OK(SignInto(&msg, future, alice_));
  EXPECT_THAT(Verify(msg), StatusIs(kDenied, "issued in the future"));
}

TEST_F(JobAuthorizerTest, NonAdminCertificateIsRefused) {
  for (crypto::Role role : {crypto::Role::kLeader, crypto::Role::kParty}) {
    ASSERT_OK_AND_ASSIGN(auto tls, ca_->IssueTls({role, "hospital-b"}, {}, absl::Hours(1)));
    LeaderMessage msg = msg_;
    ASSERT_OK(SignInto(&msg, job_, {tls.cert_pem, tls.key_pem}));
    EXPECT_THAT(Verify(msg), StatusIs(kDenied, "not admin"));
  }
  // An admin of another CA.
  ASSERT_OK_AND_ASSIGN(auto other, crypto::CertificateAuthority::Create("other", absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(auto mallory, IssueTestAdmin(*other, "alice"));
  LeaderMessage msg = msg_;
  ASSERT_OK(SignInto(&msg, job_, mallory));
  EXPECT_THAT(Verify(msg), StatusIs(kDenied, "certificate verification failed"));
  // Alice's certificate with another signature, or a body changed after signing.
  msg = msg_;
  msg.mutable_prepare()->mutable_authorization()->set_admin_certificate(mallory.cert_pem);
  EXPECT_FALSE(Verify(msg).ok());
  msg = msg_;
  AuthorizedJob changed = job_;
  changed.set_recipient("hospital-c");
  msg.mutable_prepare()->mutable_authorization()->set_body(changed.SerializeAsString());
  EXPECT_THAT(Verify(msg), StatusIs(kDenied, "the signature does not verify"));
  // None at all.
  msg.mutable_prepare()->clear_authorization();
  EXPECT_THAT(Verify(msg), StatusIs(kDenied, "carries no admin authorization"));
}

TEST_F(JobAuthorizerTest, AdminNotInTheAllowListIsRefused) {
  EXPECT_THAT(Authorizer({{"bob"}}).Verify(msg_.prepare(), "leader", absl::Now()),
              StatusIs(kDenied, "job not authorized: admin 'alice' is not one this party accepts"));
  EXPECT_THAT(Authorizer(std::vector<std::string>{}).Verify(msg_.prepare(), "leader", absl::Now()),
              StatusIs(kDenied, "admin 'alice'"));
}

// The admins list and the CA bundle replaced while the party runs (a reloaded party.yaml):
// the next Verify uses the new ones; nothing else changes.
TEST_F(JobAuthorizerTest, UpdatedAdminsListAppliesToTheNextVerify) {
  JobAuthorizer authorizer(AuthorizationOptions{"hospital-a", ca_->cert_pem(), {{"alice"}}, {}});
  ASSERT_OK(authorizer.Verify(msg_.prepare(), "leader", absl::Now()).status());
  authorizer.Update(ca_->cert_pem(), std::vector<std::string>{"bob"});
  EXPECT_THAT(authorizer.Verify(msg_.prepare(), "leader", absl::Now()),
              StatusIs(kDenied, "admin 'alice' is not one this party accepts (admins)"));
  authorizer.Update(ca_->cert_pem(), std::nullopt);  // `admins:` removed: every certified admin
  EXPECT_OK(authorizer.Verify(msg_.prepare(), "leader", absl::Now()).status());
  // A CA bundle without the admin's CA: the signature no longer verifies.
  ASSERT_OK_AND_ASSIGN(auto other, crypto::CertificateAuthority::Create("other", absl::Hours(24)));
  authorizer.Update(other->cert_pem(), std::nullopt);
  EXPECT_EQ(authorizer.ca_pem(), other->cert_pem());
  EXPECT_THAT(authorizer.Verify(msg_.prepare(), "leader", absl::Now()),
              StatusIs(kDenied, "job not authorized"));
}

// The party's revocation list is asked about the admin's certificate at every Verify.
TEST_F(JobAuthorizerTest, RevokedAdminCertificateIsRefused) {
  bool revoked = false;
  std::string asked;
  JobAuthorizer authorizer(AuthorizationOptions{
      "hospital-a", ca_->cert_pem(), std::nullopt, [&](const std::string& pem) {
        asked = pem;
        return revoked ? absl::PermissionDeniedError("certificate revoked") : absl::OkStatus();
      }});
  ASSERT_OK(authorizer.Verify(msg_.prepare(), "leader", absl::Now()).status());
  EXPECT_EQ(asked, msg_.prepare().authorization().admin_certificate());
  revoked = true;
  EXPECT_THAT(authorizer.Verify(msg_.prepare(), "leader", absl::Now()),
              StatusIs(kDenied,
                       "job not authorized: the certificate of admin 'alice' is refused "
                       "by this party's revocation list: certificate revoked"));
}

// ---- The run ledger ----

TEST(RunLedger, RefusesAReusedRunIdDurably) {
  const std::string dir = FreshDir("ledger");
  const std::string path = dir + "/runs.ledger";
  {
    ASSERT_OK_AND_ASSIGN(auto ledger, RunLedger::Open(path));
    ASSERT_OK(ledger->Reserve("00ff", "job-000000000001", "/d/t.csv", std::nullopt));
    EXPECT_THAT(ledger->Reserve("00ff", "job-000000000002", "/d/t.csv", std::nullopt),
                StatusIs(kDenied, "run id already used (by job job-000000000001)"));
    EXPECT_TRUE(ledger->Used("00ff"));
    EXPECT_FALSE(ledger->Used("00fe"));
  }
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // After a restart.
  ASSERT_OK_AND_ASSIGN(auto reopened, RunLedger::Open(path));
  EXPECT_THAT(reopened->Reserve("00ff", "job-000000000003", "/d/t.csv", std::nullopt),
              StatusIs(kDenied, "run id already used"));
  EXPECT_EQ(reopened->Releases("/d/t.csv"), 1u);
}

TEST(RunLedger, CountsReleasesOfATableUntilTheLimit) {
  const std::string path = FreshDir("ledger_count") + "/runs.ledger";
  ASSERT_OK_AND_ASSIGN(auto ledger, RunLedger::Open(path));
  ASSERT_OK(ledger->Reserve("r1", "job-000000000001", "/d/t.csv", 2));
  ASSERT_OK(ledger->Reserve("r2", "job-000000000002", "/d/other.csv", 2));
  ASSERT_OK(ledger->Reserve("r3", "job-000000000003", "/d/t.csv", 2));
  EXPECT_THAT(ledger->Reserve("r4", "job-000000000004", "/d/t.csv", 2),
              StatusIs(kDenied,
                       "party policy: table 't.csv' was released 2 times; the party "
                       "allows at most 2"));
  // A failed run frees its release; a finished one keeps it.
  ASSERT_OK(ledger->Finish("job-000000000001", /*success=*/false));
  ASSERT_OK(ledger->Finish("job-000000000003", /*success=*/true));
  EXPECT_EQ(ledger->Releases("/d/t.csv"), 1u);
  ASSERT_OK(ledger->Reserve("r4", "job-000000000004", "/d/t.csv", 2));
  ASSERT_OK_AND_ASSIGN(auto reopened, RunLedger::Open(path));
  EXPECT_EQ(reopened->Releases("/d/t.csv"), 2u);
  EXPECT_TRUE(reopened->Used("r1"));  // a failed run's id stays used
}

TEST(RunLedger, ConcurrentReservationsNeverExceedTheLimit) {
  const std::string path = FreshDir("ledger_race") + "/runs.ledger";
  ASSERT_OK_AND_ASSIGN(auto ledger, RunLedger::Open(path));
  std::vector<std::thread> threads;
  std::atomic<int> accepted{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (ledger->Reserve(absl::StrCat("run", i), "job-000000000001", "/d/t.csv", 3).ok()) {
        ++accepted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 3);
  ASSERT_OK_AND_ASSIGN(auto reopened, RunLedger::Open(path));
  EXPECT_EQ(reopened->Releases("/d/t.csv"), 3u);
}

TEST(RunLedger, CorruptFileIsAnError) {
  const std::string path = FreshDir("ledger_bad") + "/runs.ledger";
  WriteText(path, "something else\n");
  EXPECT_THAT(RunLedger::Open(path),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not a run ledger"));
}

// ---- The party's policy, rule by rule ----

PartyPolicy With(const std::function<void(PartyPolicy&)>& set) {
  PartyPolicy policy;
  set(policy);
  return policy;
}

TEST(PartyPolicy, EmptyPolicyAcceptsAnything) {
  EXPECT_OK(CheckPartyPolicy(PartyPolicy{}, Spec(), "hospital-a", "leader"));
}

TEST(PartyPolicy, MinimumK) {
  EXPECT_OK(
      CheckPartyPolicy(With([&](PartyPolicy& p) { p.min_k = 5; }), Spec(), "hospital-a", "leader"));
  EXPECT_THAT(
      CheckPartyPolicy(With([&](PartyPolicy& p) { p.min_k = 10; }), Spec(), "hospital-a", "leader"),
      StatusIs(kDenied, "party policy: K=5 below the party's minimum K=10"));
  const auto templates = Spec(R"(attributes:
  - {name: Sex, role: qid, values: [M, F]}
  - {name: Class, role: class, values: [Y, N]}
privacy:
  model: templates
  templates: [{qid: [Sex], k: 20}, {qid: [Sex], k: 3}]
)");
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.min_k = 10; }), templates, "hospital-a",
                               "leader"),
              StatusIs(kDenied, "anonymity template k=3 below the party's minimum K=10"));
}

TEST(PartyPolicy, MinimumL) {
  EXPECT_OK(
      CheckPartyPolicy(With([&](PartyPolicy& p) { p.min_l = 2; }), Spec(), "hospital-a", "leader"));
  EXPECT_THAT(
      CheckPartyPolicy(With([&](PartyPolicy& p) { p.min_l = 3; }), Spec(), "hospital-a", "leader"),
      StatusIs(kDenied, "party policy: L=2 below the party's minimum L=3"));
}

TEST(PartyPolicy, MaximumC) {
  EXPECT_OK(CheckPartyPolicy(With([&](PartyPolicy& p) { p.max_c = 0.5; }), Spec(), "hospital-a",
                             "leader"));
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.max_c = 0.4; }), Spec(), "hospital-a",
                               "leader"),
              StatusIs(kDenied, "party policy: C=0.5 above the party's maximum C=0.4"));
  // A job that bounds no confidence counts as C = 1.
  fedanon::v1::JobSpec unbounded = Spec();
  unbounded.mutable_privacy()->clear_sensitive_values();
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.max_c = 0.9; }), unbounded,
                               "hospital-a", "leader"),
              StatusIs(kDenied, "C=1 above"));
}

TEST(PartyPolicy, QidAndReleasedAttributes) {
  const std::vector<std::string> both = {"Sex", "Job"};
  EXPECT_OK(CheckPartyPolicy(With([&](PartyPolicy& p) { p.qid_attributes = both; }), Spec(),
                             "hospital-a", "leader"));
  EXPECT_THAT(CheckPartyPolicy(With([](PartyPolicy& p) { p.qid_attributes = {{"Sex"}}; }), Spec(),
                               "hospital-a", "leader"),
              StatusIs(kDenied, "party policy: attribute 'Job' may not be a QID (qid_attributes)"));
  const std::vector<std::string> released = {"Sex", "Job", "Class"};
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.released_attributes = released; }),
                               Spec(), "hospital-a", "leader"),
              StatusIs(kDenied, "attribute 'Disease' may not be released (released_attributes)"));
  // In a vertical job only this party's own attributes (and the shared class) are its concern.
  const auto vertical = Spec(R"(attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, values: [M, F], party: hospital-a}
  - {name: Job, role: qid, values: [Janitor, Lawyer], party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
partitioning: vertical
privacy: {model: lkc, L: 1, K: 2}
)");
  const std::vector<std::string> mine = {"Sex", "Class"};
  EXPECT_OK(CheckPartyPolicy(With([&](PartyPolicy& p) {
                               p.qid_attributes = mine;
                               p.released_attributes = mine;
                             }),
                             vertical, "hospital-a", "leader"));
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.released_attributes = mine; }),
                               vertical, "hospital-b", "leader"),
              StatusIs(kDenied, "attribute 'Job' may not be released"));
}

TEST(PartyPolicy, Recipients) {
  const std::vector<std::string> accepted = {"hospital-a", "leader"};
  EXPECT_OK(CheckPartyPolicy(With([&](PartyPolicy& p) { p.recipients = accepted; }), Spec(),
                             "hospital-a", "leader"));
  EXPECT_THAT(CheckPartyPolicy(With([&](PartyPolicy& p) { p.recipients = accepted; }), Spec(),
                               "hospital-a", "hospital-c"),
              StatusIs(kDenied,
                       "party policy: recipient 'hospital-c' is not one the party "
                       "accepts"));
}

// ---- Through the agent ----

std::vector<std::map<std::string, std::string>> Tables(int n) {
  return std::vector<std::map<std::string, std::string>>(n, {{"table.csv", kTable}});
}

TEST(PartyAgentAuthorization, PolicyRefusalReachesTheLeaderByName) {
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("agent_policy", Tables(2), [](party::PartyAgentOptions& o) {
        if (o.name == "hospital-a") o.policy.min_k = 10;
      }));
  ASSERT_OK_AND_ASSIGN(LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  EXPECT_THAT(f->Call("hospital-a", msg),
              StatusIs(kDenied, "party policy: K=5 below the party's minimum K=10"));
  EXPECT_OK(f->Call("hospital-b", msg));
}

// A Prepare announces the leader the party's link is connected to (its TLS certificate's name,
// PartyAgent::SetLinkedLeader): with an empty signed recipient the released data is sealed for the
// announced leader, which must not be any other leader-role certificate of the CA.
TEST(PartyAgentAuthorization, APrepareAnnouncingAnotherLeaderThanTheLinkedOneIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_linked_leader", Tables(2)));
  for (auto& agent : f->agents) agent->SetLinkedLeader("leader");
  ASSERT_OK_AND_ASSIGN(const crypto::IssuedCertificate other_seal,
                       f->ca->IssueSeal({crypto::Role::kLeader, "leader-b"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(const LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  LeaderMessage other = msg;
  for (auto& p : *other.mutable_prepare()->mutable_participants()) {
    if (p.index() != UINT32_MAX) continue;
    p.set_name("leader-b");
    p.set_seal_certificate(other_seal.cert_pem);
  }
  EXPECT_THAT(f->Call("hospital-a", other),
              StatusIs(kDenied, std::string(party::kAnnouncedLeaderNotLinked) +
                                    ": Prepare announces leader 'leader-b', but this party is "
                                    "linked to leader 'leader'"));
  // The job as the linked leader announces it prepares (the refusal used up nothing).
  EXPECT_OK(f->Call("hospital-a", msg));
  EXPECT_OK(f->Call("hospital-b", msg));
}

// The ring and participants a Prepare announces, beyond what the admin signed (CheckRing): each
// deviation refused by name, and the unchanged Prepare accepted by the same party.
TEST(PartyAgentAuthorization, APrepareNamingTwoLeadersIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_two_leaders", Tables(2)));
  ASSERT_OK_AND_ASSIGN(const crypto::IssuedCertificate other_seal,
                       f->ca->IssueSeal({crypto::Role::kLeader, "leader-b"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(const LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  LeaderMessage two = msg;
  auto* second = two.mutable_prepare()->add_participants();
  second->set_name("leader-b");
  second->set_index(UINT32_MAX);
  second->set_seal_certificate(other_seal.cert_pem);
  EXPECT_THAT(f->Call("hospital-a", two),
              StatusIs(absl::StatusCode::kInvalidArgument, "Prepare names two leaders"));
  EXPECT_OK(f->Call("hospital-a", msg));
}

TEST(PartyAgentAuthorization, AnUnsignedDataHoldingLeaderFlagIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_dhl_flag", Tables(2)));
  ASSERT_OK_AND_ASSIGN(const LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  LeaderMessage flagged = msg;
  flagged.mutable_prepare()->set_data_holding_leader(true);  // with no leader_party signed
  EXPECT_THAT(f->Call("hospital-a", flagged),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data_holding_leader and leader_party disagree"));
  EXPECT_OK(f->Call("hospital-a", msg));
}

TEST(PartyAgentAuthorization, AHorizontalPrepareWithoutTheLeadersCertificateIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_no_leader", Tables(2)));
  // A party recipient, so that the admin's signature does not need the leader's name.
  ASSERT_OK_AND_ASSIGN(const LeaderMessage msg,
                       f->Prepare("job-000000000001", kSpec, "hospital-b"));
  LeaderMessage bare = msg;
  auto* participants = bare.mutable_prepare()->mutable_participants();
  participants->erase(std::remove_if(participants->begin(), participants->end(),
                                     [](const auto& p) { return p.index() == UINT32_MAX; }),
                      participants->end());
  EXPECT_THAT(f->Call("hospital-a", bare),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Prepare does not announce the leader's sealing certificate"));
  EXPECT_OK(f->Call("hospital-a", msg));
}

TEST(PartyAgentAuthorization, ARecipientThatIsNoParticipantIsRefusedEvenWhenSigned) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_outsider", Tables(2)));
  ASSERT_OK_AND_ASSIGN(const LeaderMessage msg, f->Prepare("job-000000000001", kSpec, "outsider"));
  EXPECT_THAT(f->Call("hospital-a", msg), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   "recipient 'outsider' is not a participant"));
}

TEST(PartyAgentAuthorization, AdminAllowListFromTheConfig) {
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("agent_admins", Tables(2), [](party::PartyAgentOptions& o) {
        o.admins = std::vector<std::string>{"bob"};
      }));
  ASSERT_OK_AND_ASSIGN(LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  EXPECT_THAT(f->Call("hospital-a", msg),
              StatusIs(kDenied, "admin 'admin' is not one this party accepts"));
  ASSERT_OK_AND_ASSIGN(f->admin, IssueTestAdmin(*f->ca, "bob"));
  ASSERT_OK_AND_ASSIGN(msg, f->Prepare("job-000000000001", kSpec));
  EXPECT_OK(f->Call("hospital-a", msg));
}

TEST(PartyAgentAuthorization, RunIdIsUsedOnceAcrossRestarts) {
  ASSERT_OK_AND_ASSIGN(auto f, PartyFixture::Create("agent_runs", Tables(2)));
  ASSERT_OK_AND_ASSIGN(LeaderMessage msg, f->Prepare("job-000000000001", kSpec));
  ASSERT_OK(f->Call("hospital-a", msg));
  LeaderMessage again = msg;
  again.set_job_id("job-000000000002");
  EXPECT_THAT(f->Call("hospital-a", again), StatusIs(kDenied, "run id already used"));
  // The same party restarted (a new agent on the same output directory) remembers.
  party::PartyAgentOptions o;
  o.name = "hospital-a";
  o.data_dir = f->dir + "/hospital-a";
  o.default_data_path = "table.csv";
  o.output_dir = f->dir + "/hospital-a/output";
  o.ca_pem = f->ca->cert_pem();
  ASSERT_OK_AND_ASSIGN(auto seal,
                       f->ca->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1)));
  o.seal_cert_pem = seal.cert_pem;
  o.seal_key_pem = seal.key_pem;
  ASSERT_OK_AND_ASSIGN(auto restarted, party::PartyAgent::Create(o));
  const fedanon::v1::PartyMessage reply = restarted->Handle(again);
  ASSERT_TRUE(reply.has_error());
  EXPECT_THAT(reply.error().message(), ::testing::HasSubstr("run id already used"));
  // Nor does it take a fresh Prepare of the run it took part in before the restart; it may only
  // go on with that run from its durable state (party/job_journal.h, PartyDurableState.*).
  const fedanon::v1::PartyMessage reprepared = restarted->Handle(msg);
  ASSERT_TRUE(reprepared.has_error());
  EXPECT_THAT(reprepared.error().message(), ::testing::HasSubstr("run id already used"));
  // Without that state (the file lost) it answers nothing more of the run: one request, one
  // answer holds across restarts, at the cost of the job.
  std::filesystem::remove(o.output_dir + "/" + msg.job_id() + ".state");
  ASSERT_OK_AND_ASSIGN(auto without_state, party::PartyAgent::Create(o));
  LeaderMessage sum;
  sum.set_request_id(7);
  sum.set_job_id(msg.job_id());
  sum.set_round(1);
  sum.mutable_sum_step()->set_chunks(1);
  const fedanon::v1::PartyMessage after = without_state->Handle(sum);
  ASSERT_TRUE(after.has_error());
  EXPECT_THAT(after.error().message(), ::testing::HasSubstr("no prepared job with this id"));
  EXPECT_THAT(without_state->Handle(msg).error().message(),
              ::testing::HasSubstr("run id already used"));
}

TEST(PartyAgentAuthorization, MaxReleasesCountsPreparedJobsAndFreesFailedOnes) {
  ASSERT_OK_AND_ASSIGN(
      auto f, PartyFixture::Create("agent_releases", Tables(2),
                                   [](party::PartyAgentOptions& o) { o.policy.max_releases = 1; }));
  ASSERT_OK_AND_ASSIGN(LeaderMessage first, f->Prepare("job-000000000001", kSpec));
  ASSERT_OK(f->Call("hospital-a", first));
  ASSERT_OK_AND_ASSIGN(LeaderMessage second, f->Prepare("job-000000000002", kSpec));
  EXPECT_THAT(f->Call("hospital-a", second),
              StatusIs(kDenied,
                       "party policy: table 'table.csv' was released 1 times; the "
                       "party allows at most 1 (max_releases)"));
  // The first job failed before this party answered anything from its data: its release is
  // freed.
  LeaderMessage end;
  end.set_job_id("job-000000000001");
  end.mutable_end_job()->set_success(false);
  ASSERT_OK(f->Call("hospital-a", end));
  ASSERT_OK_AND_ASSIGN(second, f->Prepare("job-000000000002", kSpec));
  ASSERT_OK(f->Call("hospital-a", second));
  // The second job gets a secure-sum request (any answer counts, even an error); a failure
  // reported afterwards no longer frees the table.
  LeaderMessage step;
  step.set_job_id("job-000000000002");
  step.mutable_sum_step()->set_next("hospital-b");
  EXPECT_FALSE(f->Call("hospital-a", step).ok());
  end.set_job_id("job-000000000002");
  ASSERT_OK(f->Call("hospital-a", end));
  ASSERT_OK_AND_ASSIGN(LeaderMessage third, f->Prepare("job-000000000003", kSpec));
  EXPECT_THAT(f->Call("hospital-a", third), StatusIs(kDenied, "max_releases"));
}

}  // namespace
}  // namespace fedanon::testing
