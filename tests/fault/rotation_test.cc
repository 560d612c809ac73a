// Rotation of certificates without stopping the federation (issue #28, docs/operations.md
// "Rotating keys and certificates"), with real daemons on loopback mTLS (the fault suite's
// harness, tests/fault/fault_federation.h):
//   * the leader's TLS certificate and key are replaced on disk and picked up without a restart
//     (leader.yaml tls_reload_seconds): new handshakes present the new certificate while a job
//     that was running continues to the end;
//   * a party's certificate is revoked (leader.yaml crl:): its stream keeps working until its next
//     handshake, which is refused; a party whose certificate was renewed on disk reconnects with
//     the new one without a restart;
//   * a CA rotation's overlap: every ca.crt holds the old and the new CA, parties with old and new
//     certificates take part in one job; once the old CA leaves the leader's bundle, a party with
//     an old certificate is refused at its next handshake and one with a new certificate is not.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/tls.h"
#include "server/transport.h"
#include "tests/fault/fault_federation.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using ::fedanon::v1::JOB_STATE_DONE;
using ::fedanon::v1::JOB_STATE_FAILED;
using ::fedanon::v1::JobInfo;
using ::testing::HasSubstr;

constexpr uint32_t kRoundTimeoutSeconds = 10;
constexpr absl::Duration kJobBound = absl::Seconds(90);

std::string ReadText(const std::string& path) {
  absl::StatusOr<std::string> text = common::ReadFile(path, /*follow_symlinks=*/true);
  return text.ok() ? *text : "";
}

// Replaces `path` atomically (a new file renamed over it), mode 0600 for keys.
void Replace(const std::string& path, const std::string& contents, bool private_key) {
  ASSERT_TRUE(common::WriteFileAtomically(
                  path, contents,
                  {.mode = private_key ? common::kPrivateFileMode : common::kSharedFileMode})
                  .ok())
      << path;
}

// The certificate the leader presents to a new connection now (PEM), dialling with the admin's
// bundle in `bundle_dir` (ca.crt, tls.crt, tls.key); "" when no handshake succeeds.
std::string LeaderCertificateNow(int port, const std::string& bundle_dir) {
  absl::StatusOr<server::TlsMaterial> tls = server::LoadTlsMaterial(
      {bundle_dir + "/ca.crt", bundle_dir + "/tls.crt", bundle_dir + "/tls.key"});
  if (!tls.ok()) return "";
  // A fresh channel (its own subchannel pool): a new TCP connection and TLS handshake.
  const auto channel = server::DialLeader(absl::StrCat("127.0.0.1:", port), *tls);
  const auto stub = fedanon::v1::Admin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  fedanon::v1::ListPartiesRequest request;
  fedanon::v1::ListPartiesResponse response;
  const grpc::Status st = stub->ListParties(&context, request, &response);
  if (!st.ok()) return "";
  return server::ServerCertificatePem(context);
}

bool Listed(FaultFederation& fed, const std::string& name) {
  return fed.WaitForParties({name}, absl::Milliseconds(200));
}

class RotationTest : public ::testing::Test {
 protected:
  const char* Name() const {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void StartFederation(FaultFederationOptions options) {
    fed_ = std::make_unique<FaultFederation>(std::move(options));
    const absl::Status st = fed_->Start();
    ASSERT_TRUE(st.ok()) << st << "\n" << fed_->Log("leader");
    absl::StatusOr<std::unique_ptr<crypto::CertificateAuthority>> ca =
        crypto::CertificateAuthority::Load(ReadText(Kit("ca/ca.crt")), ReadText(Kit("ca/ca.key")));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
  }
  std::string Kit(const std::string& rel) const { return fed_->dir() + "/kit/" + rel; }
  // Runs a job over `ring` to its end.
  absl::StatusOr<JobInfo> RunJob(const std::vector<std::string>& ring) {
    absl::StatusOr<std::string> job = fed_->Submit(ring, kRoundTimeoutSeconds);
    if (!job.ok()) return job.status();
    return fed_->WaitForEnd(*job, kJobBound);
  }
  // A TLS certificate for `identity` from `ca`, written over the bundle's tls.crt / tls.key.
  void RenewTls(const crypto::CertificateAuthority& ca, const crypto::Identity& identity,
                const std::string& bundle, std::string* cert_out = nullptr) {
    const std::vector<std::string> hosts = identity.role == crypto::Role::kLeader
                                               ? std::vector<std::string>{"127.0.0.1", "localhost"}
                                               : std::vector<std::string>{};
    absl::StatusOr<crypto::IssuedCertificate> issued =
        ca.IssueTls(identity, hosts, absl::Hours(24));
    ASSERT_TRUE(issued.ok()) << issued.status();
    Replace(bundle + "/tls.key", issued->key_pem, true);
    Replace(bundle + "/tls.crt", issued->cert_pem, false);
    if (cert_out != nullptr) *cert_out = issued->cert_pem;
  }

  std::unique_ptr<FaultFederation> fed_;
  std::unique_ptr<crypto::CertificateAuthority> ca_;
};

TEST_F(RotationTest, LeaderCertificateIsReloadedWithoutARestartWhileAJobRuns) {
  spdlog::set_level(spdlog::level::warn);
  FaultFederationOptions options;
  options.leader_yaml_extra = "tls_reload_seconds: 1\n";
  StartFederation(options);
  if (HasFatalFailure()) return;
  const std::string before = LeaderCertificateNow(fed_->leader_port(), Kit("admin"));
  ASSERT_EQ(before, ReadText(Kit("leader/tls.crt")));
  const pid_t leader_pid = fed_->leader_pid();

  // A job that lasts a few seconds: every chunk to and from hospital-a is delayed.
  fed_->proxy(0).SetDelay(absl::Milliseconds(100));
  absl::StatusOr<std::string> job = fed_->Submit({}, kRoundTimeoutSeconds);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<JobInfo> running = fed_->WaitForRound(*job, 1, kJobBound);
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->state(), fedanon::v1::JOB_STATE_RUNNING) << running->failure_reason();

  std::string renewed;
  RenewTls(*ca_, {crypto::Role::kLeader, "leader"}, Kit("leader"), &renewed);
  if (HasFatalFailure()) return;
  const absl::Time swapped = absl::Now();
  std::string now_presented;
  while (absl::Now() - swapped < absl::Seconds(15)) {
    now_presented = LeaderCertificateNow(fed_->leader_port(), Kit("admin"));
    if (now_presented == renewed) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  const double picked_up_s = absl::ToDoubleSeconds(absl::Now() - swapped);
  EXPECT_EQ(now_presented, renewed) << "new handshakes still get the old certificate";
  EXPECT_NE(renewed, before);
  // The job was still running when new handshakes got the new certificate.
  absl::StatusOr<JobInfo> during = fed_->Get(*job);
  ASSERT_TRUE(during.ok()) << during.status();
  EXPECT_EQ(during->state(), fedanon::v1::JOB_STATE_RUNNING) << during->failure_reason();

  // The job that ran across the swap ends done, with every row; nobody reconnected.
  absl::StatusOr<JobInfo> end = fed_->WaitForEnd(*job, kJobBound);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), JOB_STATE_DONE) << end->failure_reason();
  EXPECT_EQ(fed_->leader_pid(), leader_pid);
  EXPECT_TRUE(fed_->LeaderRunning());
  EXPECT_THAT(fed_->Log("leader"), ::testing::Not(HasSubstr("disconnected from")));
  fed_->proxy(0).SetDelay(absl::ZeroDuration());
  // The parties' next handshakes verify the new certificate: a cut link reconnects.
  fed_->proxy(1).Cut();
  EXPECT_TRUE(fed_->WaitForPartyGone(fed_->parties()[1], absl::Seconds(10)));
  EXPECT_TRUE(fed_->WaitForParties(fed_->parties()));
  absl::StatusOr<JobInfo> again = RunJob({});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->state(), JOB_STATE_DONE) << again->failure_reason();
  PrintFigures(absl::StrFormat("%s new_cert_presented_after_s=%.2f job_across_swap=%s", Name(),
                               picked_up_s, fedanon::v1::JobState_Name(end->state())));
}

TEST_F(RotationTest, ARevokedCertificateStopsAtItsNextHandshakeAndARenewedOneWorks) {
  spdlog::set_level(spdlog::level::warn);
  StartFederation({});
  if (HasFatalFailure()) return;
  // Revocation on: an empty list first (a listed `crl:` file must exist, or the leader refuses
  // everyone), then the leader restarted once to read the new key of leader.yaml.
  absl::StatusOr<std::string> empty_crl = ca_->IssueCrl({}, absl::Hours(24));
  ASSERT_TRUE(empty_crl.ok()) << empty_crl.status();
  Replace(Kit("leader/crl.pem"), *empty_crl, false);
  std::ofstream(Kit("leader/leader.yaml"), std::ios::app) << "\ncrl: crl.pem\n";
  fed_->KillLeader();
  ASSERT_TRUE(fed_->StartLeader().ok());
  fed_->ResetAdmin();
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  const std::string a = fed_->parties()[0];
  const std::string b = fed_->parties()[1];

  // hospital-a gets a new certificate on disk (its daemon keeps running); the old certificates of
  // hospital-a and hospital-b are revoked.
  const std::string a_old = ReadText(fed_->party_dir(0) + "/tls.crt");
  const std::string b_old = ReadText(fed_->party_dir(1) + "/tls.crt");
  RenewTls(*ca_, {crypto::Role::kParty, a}, fed_->party_dir(0));
  if (HasFatalFailure()) return;
  absl::StatusOr<std::string> crl = ca_->IssueCrl({a_old, b_old}, absl::Hours(24));
  ASSERT_TRUE(crl.ok()) << crl.status();
  Replace(Kit("leader/crl.pem"), *crl, false);

  // Established streams are not re-checked: both parties are still linked.
  EXPECT_TRUE(Listed(*fed_, a));
  EXPECT_TRUE(Listed(*fed_, b));
  // Their next handshake: hospital-a dials with its renewed certificate and is accepted,
  // hospital-b's revoked certificate is refused.
  const absl::Time cut = absl::Now();
  fed_->proxy(0).Cut();
  fed_->proxy(1).Cut();
  EXPECT_TRUE(fed_->WaitForPartyGone(a, absl::Seconds(10)));  // reconnects after >= 0.4 s
  EXPECT_TRUE(fed_->WaitForPartyGone(b, absl::Seconds(10)));
  EXPECT_TRUE(fed_->WaitForParties({a}, absl::Seconds(20)));
  const double a_back_s = absl::ToDoubleSeconds(absl::Now() - cut);
  absl::SleepFor(absl::Seconds(2));  // hospital-b retries (0.5 s backoff, doubling)
  EXPECT_FALSE(Listed(*fed_, b));
  EXPECT_THAT(fed_->Log("leader"), HasSubstr("rejected party '" + b + "'"));
  EXPECT_THAT(fed_->Log("leader"), HasSubstr("certificate revoked"));
  EXPECT_THAT(fed_->Log(a), HasSubstr("TLS certificate or CA bundle changed on disk"));

  // hospital-b cannot take part; a job over the others is done.
  absl::StatusOr<JobInfo> refused = RunJob({});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->state(), JOB_STATE_FAILED);
  EXPECT_THAT(refused->failure_reason(), HasSubstr("party '" + b + "'"));
  absl::StatusOr<JobInfo> done = RunJob({a, fed_->parties()[2]});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), JOB_STATE_DONE) << done->failure_reason();
  PrintFigures(absl::StrFormat("%s renewed_party_back_after_cut_s=%.2f revoked_party_refused=%d",
                               Name(), a_back_s, Listed(*fed_, b) ? 0 : 1));
}

TEST_F(RotationTest, CaOverlapOldAndNewCertificatesWorkUntilTheOldCaIsRemoved) {
  spdlog::set_level(spdlog::level::warn);
  FaultFederationOptions options;
  options.leader_yaml_extra = "tls_reload_seconds: 1\n";
  StartFederation(options);
  if (HasFatalFailure()) return;
  // The new CA (another name, so that the two can be told apart by subject).
  absl::StatusOr<std::unique_ptr<crypto::CertificateAuthority>> next =
      crypto::CertificateAuthority::Create("local-next", absl::Hours(24 * 30));
  ASSERT_TRUE(next.ok()) << next.status();
  const std::string old_ca = ca_->cert_pem();
  const std::string bundle = old_ca + (*next)->cert_pem();

  // Step 1: every participant trusts both CAs. The TLS layers re-read the bundles by themselves
  // (the leader every tls_reload_seconds, a party at each connection), but the checks of sealing
  // certificates and admin signatures read the CA at start: each daemon is restarted once, while
  // it is idle (docs/operations.md).
  for (const char* who : {"leader", "admin"}) Replace(Kit(who) + "/ca.crt", bundle, false);
  for (int i = 0; i < 3; ++i) Replace(fed_->party_dir(i) + "/ca.crt", bundle, false);
  // Step 2 (in part): the leader, the admin and hospital-c get certificates of the new CA;
  // hospital-a and hospital-b keep the old CA's.
  RenewTls(**next, {crypto::Role::kLeader, "leader"}, Kit("leader"));
  RenewTls(**next, {crypto::Role::kAdmin, "admin"}, Kit("admin"));
  const std::string c = fed_->parties()[2];
  RenewTls(**next, {crypto::Role::kParty, c}, fed_->party_dir(2));
  absl::StatusOr<crypto::IssuedCertificate> c_seal =
      (*next)->IssueSeal({crypto::Role::kParty, c}, absl::Hours(24));
  ASSERT_TRUE(c_seal.ok()) << c_seal.status();
  Replace(fed_->party_dir(2) + "/seal.key", c_seal->key_pem, true);
  Replace(fed_->party_dir(2) + "/seal.crt", c_seal->cert_pem, false);
  if (HasFatalFailure()) return;
  fed_->KillLeader();
  ASSERT_TRUE(fed_->StartLeader().ok());
  for (int i = 0; i < 3; ++i) {
    fed_->KillParty(i);
    ASSERT_TRUE(fed_->StartParty(i).ok());
  }
  fed_->ResetAdmin();
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties())) << fed_->Log("leader");

  // The overlap: parties with old and new certificates in one job.
  absl::StatusOr<JobInfo> mixed = RunJob({});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->state(), JOB_STATE_DONE) << mixed->failure_reason();

  // Step 3: the old CA leaves the leader's bundle (no restart). Next handshakes: hospital-c (new
  // CA) is accepted, hospital-a (old CA) is refused by the TLS layer.
  Replace(Kit("leader/ca.crt"), (*next)->cert_pem(), false);
  absl::SleepFor(absl::Seconds(3));  // > tls_reload_seconds
  const absl::Time cut = absl::Now();
  fed_->proxy(0).Cut();
  fed_->proxy(2).Cut();
  EXPECT_TRUE(fed_->WaitForPartyGone(c, absl::Seconds(10)));  // reconnects after >= 0.4 s
  EXPECT_TRUE(fed_->WaitForPartyGone(fed_->parties()[0], absl::Seconds(10)));
  EXPECT_TRUE(fed_->WaitForParties({c}, absl::Seconds(20)));
  const double c_back_s = absl::ToDoubleSeconds(absl::Now() - cut);
  absl::SleepFor(absl::Seconds(2));
  EXPECT_FALSE(Listed(*fed_, fed_->parties()[0]));
  PrintFigures(
      absl::StrFormat("%s mixed_ca_job=%s new_ca_party_back_s=%.2f old_ca_party_refused=%d", Name(),
                      fedanon::v1::JobState_Name(mixed->state()), c_back_s,
                      Listed(*fed_, fed_->parties()[0]) ? 0 : 1));
}

}  // namespace
}  // namespace fedanon::testing
