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
//     an old certificate is refused at its next handshake and one with a new certificate is not;
//   * a party's sealing key pair is replaced on disk while a job runs and picked up on SIGHUP,
//     without a restart: the running job finishes with the old key, the leader learns the new
//     certificate from the party's announcement and the next job uses it, and the recipient opens
//     both;
//   * an admin removed from a party's `admins:` is refused at that party from its next job (the
//     party re-reads party.yaml every reload_seconds), and a party.yaml that becomes invalid keeps
//     the list in use;
//   * an admin certificate revoked in the party's CRL: its next job is refused at that party.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/admin/admin_client.h"
#include "server/runtime/tls.h"
#include "server/runtime/transport.h"
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
  absl::StatusOr<std::string> text = base::ReadFile(path, /*follow_symlinks=*/true);
  return text.ok() ? *text : "";
}

// Replaces `path` atomically (a new file renamed over it), mode 0600 for keys.
void Replace(const std::string& path, const std::string& contents, bool private_key) {
  ASSERT_TRUE(
      base::WriteFileAtomically(
          path, contents, {.mode = private_key ? base::kPrivateFileMode : base::kSharedFileMode})
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

// Polls until `name`'s log holds `text` (true) or `timeout` passes (false).
bool WaitForLog(FaultFederation& fed, const std::string& name, const std::string& text,
                absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (fed.Log(name).find(text) != std::string::npos) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

// How often `text` occurs in `name`'s log.
int CountInLog(FaultFederation& fed, const std::string& name, const std::string& text) {
  const std::string log = fed.Log(name);
  int n = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
  return n;
}

// party.yaml of party `i` without its top-level `key:` lines, plus `extra`.
void RewritePartyYaml(FaultFederation& fed, int i, const std::vector<std::string>& keys,
                      const std::string& extra) {
  const std::string path = fed.party_dir(i) + "/party.yaml";
  std::string yaml;
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) {
    bool drop = false;
    for (const std::string& k : keys) drop |= line.rfind(k + ":", 0) == 0;
    if (!drop) yaml += line + "\n";
  }
  Replace(path, yaml + extra, false);
}

// The number of data rows in a released CSV table (its header excluded); -1 when unreadable.
int Rows(const std::string& path) {
  const std::string csv = ReadText(path);
  if (csv.empty()) return -1;
  return static_cast<int>(std::count(csv.begin(), csv.end(), '\n')) - 1;
}

bool Listed(FaultFederation& fed, const std::string& name) {
  return fed.WaitForParties({name}, absl::Milliseconds(200));
}

class RotationTest : public ::testing::Test {
 protected:
  const char* Name() const {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  // A new job waits this long for a party that is not connected (leader.yaml party_wait_seconds,
  // 60 s by default): a revoked party never comes back.
  static constexpr int kPartyWaitSeconds = 3;
  void StartFederation(FaultFederationOptions options) {
    options.leader_yaml_extra += absl::StrCat("party_wait_seconds: ", kPartyWaitSeconds, "\n");
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
  EXPECT_THAT(refused->failure_reason(),
              HasSubstr(absl::StrCat("party '", b, "' did not connect within ", kPartyWaitSeconds,
                                     " s (party_wait_seconds)")));
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

namespace fedanon::testing {
namespace {

TEST_F(RotationTest, SealingKeyRotatedWhileAJobRunsOldJobKeepsItNextJobUsesTheNewOne) {
  spdlog::set_level(spdlog::level::warn);
  StartFederation({});
  if (HasFatalFailure()) return;
  const std::string a = fed_->parties()[0];
  const pid_t a_pid = fed_->party_pid(0);
  const std::string old_cert = ReadText(fed_->party_dir(0) + "/seal.crt");

  // A job whose recipient is hospital-a, slowed down so that it runs across the rotation: every
  // row is sealed to hospital-a's sealing certificate as the job recorded it at Prepare.
  fed_->proxy(0).SetDelay(absl::Milliseconds(100));
  absl::StatusOr<std::string> first = fed_->Submit({}, kRoundTimeoutSeconds, a);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<JobInfo> running = fed_->WaitForRound(*first, 1, kJobBound);
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->state(), fedanon::v1::JOB_STATE_RUNNING) << running->failure_reason();

  // The new pair replaces the old on disk (key first), then SIGHUP: no restart.
  absl::StatusOr<crypto::IssuedCertificate> seal =
      ca_->IssueSeal({crypto::Role::kParty, a}, absl::Hours(24));
  ASSERT_TRUE(seal.ok()) << seal.status();
  Replace(fed_->party_dir(0) + "/seal.key", seal->key_pem, true);
  Replace(fed_->party_dir(0) + "/seal.crt", seal->cert_pem, false);
  if (HasFatalFailure()) return;
  const absl::Time rotated = absl::Now();
  ASSERT_EQ(::kill(a_pid, SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(*fed_, a, "sealing key rotated")) << fed_->Log(a);
  ASSERT_TRUE(WaitForLog(*fed_, "leader", "party '" + a + "' from")) << fed_->Log("leader");
  ASSERT_TRUE(WaitForLog(*fed_, "leader", "announced a new sealing certificate"))
      << fed_->Log("leader");
  const double announced_s = absl::ToDoubleSeconds(absl::Now() - rotated);
  absl::StatusOr<JobInfo> during = fed_->Get(*first);
  ASSERT_TRUE(during.ok()) << during.status();
  EXPECT_EQ(during->state(), fedanon::v1::JOB_STATE_RUNNING)
      << "the job ended before the rotation: slow it down more";

  // The running job ends done with the key it was prepared with: the recipient opened every row.
  absl::StatusOr<JobInfo> first_end = fed_->WaitForEnd(*first, kJobBound);
  ASSERT_TRUE(first_end.ok()) << first_end.status();
  EXPECT_EQ(first_end->state(), JOB_STATE_DONE) << first_end->failure_reason();
  fed_->proxy(0).SetDelay(absl::ZeroDuration());
  EXPECT_EQ(Rows(fed_->party_output_dir(0) + "/" + *first + ".csv"), fed_->total_rows());

  // The next job records the new certificate (it is prepared with the current key, not the
  // retired one) and the recipient opens it with the new key.
  absl::StatusOr<std::string> second = fed_->Submit({}, kRoundTimeoutSeconds, a);
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<JobInfo> second_end = fed_->WaitForEnd(*second, kJobBound);
  ASSERT_TRUE(second_end.ok()) << second_end.status();
  EXPECT_EQ(second_end->state(), JOB_STATE_DONE) << second_end->failure_reason();
  EXPECT_EQ(Rows(fed_->party_output_dir(0) + "/" + *second + ".csv"), fed_->total_rows());
  EXPECT_EQ(CountInLog(*fed_, a, "prepared with this party's previous sealing key"), 0);
  // No restart, no reconnect.
  EXPECT_EQ(fed_->party_pid(0), a_pid);
  EXPECT_THAT(fed_->Log("leader"), ::testing::Not(HasSubstr("party '" + a + "' disconnected")));
  EXPECT_NE(old_cert, seal->cert_pem);
  PrintFigures(absl::StrFormat(
      "%s leader_learned_new_seal_cert_after_s=%.2f job_across_rotation=%s next_job=%s", Name(),
      announced_s, fedanon::v1::JobState_Name(first_end->state()),
      fedanon::v1::JobState_Name(second_end->state())));
}

TEST_F(RotationTest, AdminRemovedFromAPartysAdminsIsRefusedThereWithoutARestart) {
  spdlog::set_level(spdlog::level::warn);
  StartFederation({});
  if (HasFatalFailure()) return;
  const std::string b = fed_->parties()[1];
  // Set-up (not the point): hospital-b with an admins list and a 1 s reload period, restarted
  // once to read the new keys.
  fed_->KillParty(1);
  // Until the leader drops the old stream it still lists the party: a job submitted then fails
  // ("not connected") once that stream turns out dead.
  ASSERT_TRUE(fed_->WaitForPartyGone(b, absl::Seconds(10)));
  RewritePartyYaml(*fed_, 1, {"admins", "reload_seconds"},
                   "admins: [admin, bob]\nreload_seconds: 1\n");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(fed_->StartParty(1).ok());
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  const pid_t b_pid = fed_->party_pid(1);
  absl::StatusOr<JobInfo> allowed = RunJob({});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->state(), JOB_STATE_DONE) << allowed->failure_reason();

  // `admin` leaves hospital-b's list: within reload_seconds its next job is refused there.
  RewritePartyYaml(*fed_, 1, {"admins"}, "admins: [bob]\n");
  const absl::Time edited = absl::Now();
  ASSERT_TRUE(WaitForLog(*fed_, b, "admins now [bob]")) << fed_->Log(b);
  const double picked_up_s = absl::ToDoubleSeconds(absl::Now() - edited);
  absl::StatusOr<JobInfo> refused = RunJob({});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->state(), JOB_STATE_FAILED);
  EXPECT_THAT(refused->failure_reason(), HasSubstr("party '" + b + "'"));
  EXPECT_THAT(refused->failure_reason(),
              HasSubstr("admin 'admin' is not one this party accepts (admins)"));

  // A party.yaml that no longer loads keeps the list in use (never "every admin"): loud error,
  // still refused; SIGHUP says it again.
  RewritePartyYaml(*fed_, 1, {"admins"}, "admins: [bob\n");
  ASSERT_TRUE(WaitForLog(*fed_, b, "RELOAD FAILED (periodic check)")) << fed_->Log(b);
  ASSERT_EQ(::kill(b_pid, SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(*fed_, b, "RELOAD FAILED (SIGHUP)")) << fed_->Log(b);
  absl::StatusOr<JobInfo> still_refused = RunJob({});
  ASSERT_TRUE(still_refused.ok()) << still_refused.status();
  EXPECT_EQ(still_refused->state(), JOB_STATE_FAILED);
  EXPECT_THAT(still_refused->failure_reason(), HasSubstr("is not one this party accepts"));
  // Fixed again, with `admin` back: accepted.
  RewritePartyYaml(*fed_, 1, {"admins"}, "admins: [admin]\n");
  ASSERT_TRUE(WaitForLog(*fed_, b, "admins now [admin]")) << fed_->Log(b);
  absl::StatusOr<JobInfo> back = RunJob({});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->state(), JOB_STATE_DONE) << back->failure_reason();
  EXPECT_EQ(fed_->party_pid(1), b_pid);
  EXPECT_TRUE(fed_->WaitForParties(fed_->parties(), absl::Milliseconds(200)));
  PrintFigures(absl::StrFormat("%s admins_change_picked_up_s=%.2f refused=%d kept_on_invalid=%d",
                               Name(), picked_up_s, refused->state() == JOB_STATE_FAILED ? 1 : 0,
                               still_refused->state() == JOB_STATE_FAILED ? 1 : 0));
}

// leader.yaml's all_jobs_admins re-read on SIGHUP, without a restart: bob may then see the job
// another admin submitted; an invalid leader.yaml keeps the list in use.
TEST_F(RotationTest, LeaderAllJobsAdminsIsReloadedOnSighup) {
  spdlog::set_level(spdlog::level::warn);
  FaultFederationOptions options;
  options.admins = {"admin", "bob"};
  StartFederation(options);
  if (HasFatalFailure()) return;
  absl::StatusOr<JobInfo> job = RunJob({});
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<admin::AdminClient>> bob =
      admin::AdminClient::FromConfig(fed_->admin_config("bob"));
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_EQ((*bob)->GetJob(job->job_id()).status().code(), absl::StatusCode::kPermissionDenied);
  const pid_t leader_pid = fed_->leader_pid();
  const std::string yaml = ReadText(Kit("leader/leader.yaml"));
  Replace(Kit("leader/leader.yaml"), yaml + "\nall_jobs_admins: [bob]\n", false);
  ASSERT_EQ(::kill(leader_pid, SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(*fed_, "leader", "reload (SIGHUP): all_jobs_admins [bob]"))
      << fed_->Log("leader");
  absl::StatusOr<JobInfo> seen = (*bob)->GetJob(job->job_id());
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->job_id(), job->job_id());
  Replace(Kit("leader/leader.yaml"), yaml + "\nall_jobs_admins: [bob\n", false);
  ASSERT_EQ(::kill(leader_pid, SIGHUP), 0);
  ASSERT_TRUE(WaitForLog(*fed_, "leader", "RELOAD FAILED (SIGHUP)")) << fed_->Log("leader");
  EXPECT_TRUE((*bob)->GetJob(job->job_id()).ok());
  EXPECT_EQ(fed_->leader_pid(), leader_pid);
  EXPECT_TRUE(fed_->LeaderRunning());
}

TEST_F(RotationTest, AdminCertificateRevokedInAPartysCrlIsRefusedAtItsNextJob) {
  spdlog::set_level(spdlog::level::warn);
  StartFederation({});
  if (HasFatalFailure()) return;
  const std::string a = fed_->parties()[0];
  // Set-up: hospital-a checks a CRL (an empty one first), restarted once to read the new key.
  absl::StatusOr<std::string> empty_crl = ca_->IssueCrl({}, absl::Hours(24));
  ASSERT_TRUE(empty_crl.ok()) << empty_crl.status();
  fed_->KillParty(0);
  ASSERT_TRUE(fed_->WaitForPartyGone(a, absl::Seconds(10)));  // the leader dropped its stream
  Replace(fed_->party_dir(0) + "/crl.pem", *empty_crl, false);
  RewritePartyYaml(*fed_, 0, {"crl"}, "crl: crl.pem\n");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(fed_->StartParty(0).ok());
  ASSERT_TRUE(fed_->WaitForParties(fed_->parties()));
  const pid_t a_pid = fed_->party_pid(0);
  absl::StatusOr<JobInfo> before = RunJob({});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->state(), JOB_STATE_DONE) << before->failure_reason();

  // The admin's certificate (its signing key is its TLS key) is revoked; the new list reaches
  // hospital-a (the leader's own list is not updated: the party refuses by itself).
  absl::StatusOr<std::string> crl =
      ca_->IssueCrl({ReadText(Kit("admin/tls.crt"))}, absl::Hours(24));
  ASSERT_TRUE(crl.ok()) << crl.status();
  Replace(fed_->party_dir(0) + "/crl.pem", *crl, false);
  absl::StatusOr<JobInfo> refused = RunJob({});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->state(), JOB_STATE_FAILED);
  EXPECT_THAT(refused->failure_reason(), HasSubstr("party '" + a + "'"));
  EXPECT_THAT(refused->failure_reason(),
              HasSubstr("the certificate of admin 'admin' is refused by this party's revocation "
                        "list: certificate revoked"));
  EXPECT_EQ(fed_->party_pid(0), a_pid);
  PrintFigures(absl::StrFormat("%s revoked_admin_job=%s", Name(),
                               fedanon::v1::JobState_Name(refused->state())));
}

}  // namespace
}  // namespace fedanon::testing
