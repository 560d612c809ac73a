// The transport over real sockets: a LeaderServer on 127.0.0.1 (port picked by the kernel) with
// certificates from a CA generated in the test, PartyClients and raw gRPC clients.
#include <gmock/gmock.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "fedanon/v1/federation.grpc.pb.h"
#include "server/admin/admin_client.h"
#include "server/admin/admin_service.h"
#include "server/leader/leader_server.h"
#include "server/leader/party_connections.h"
#include "server/party/party_client.h"
#include "server/runtime/transport.h"
#include "tests/server/test_pki.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

using ::fedanon::testing::StatusIs;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TestPki;

using RawStream = grpc::ClientReaderWriter<PartyMessage, LeaderMessage>;

constexpr size_t kOverLimit = 64 * 1024 * 1024 + 1024;

LeaderMessage Ping(int64_t t) {
  LeaderMessage m;
  m.mutable_ping()->set_sent_unix_nanos(t);
  return m;
}

// The fake party logic: echoes pings and sum-step payloads.
PartyMessage Echo(const LeaderMessage& m) {
  PartyMessage r;
  if (m.has_ping()) {
    r.mutable_pong()->set_echoed_unix_nanos(m.ping().sent_unix_nanos());
  } else if (m.has_sum_step()) {
    r.mutable_sum_step()->mutable_sealed()->set_ciphertext(m.sum_step().sealed().ciphertext());
  } else if (m.has_end_job() && m.end_job().reason() == "oversize") {
    r.mutable_sum_step()->mutable_sealed()->set_ciphertext(std::string(kOverLimit, 'r'));
  } else {
    r.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
    r.mutable_error()->set_message("unsupported request");
  }
  return r;
}

// Scripted leader for the Admin service.
class FakeAdminBackend final : public admin::AdminBackend {
 public:
  explicit FakeAdminBackend(leader_daemon::PartyConnections* connections)
      : connections_(connections) {}

  absl::StatusOr<fedanon::v1::JobInfo> Submit(const fedanon::v1::SubmitJobRequest& request,
                                              const std::string& admin) override {
    fedanon::v1::JobInfo job;
    job.set_job_id("job-1");
    job.set_state(fedanon::v1::JOB_STATE_SUBMITTED);
    job.set_submitted_by(admin);
    for (const std::string& p : request.parties()) job.add_parties(p);
    return job;
  }
  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id) override {
    if (job_id != "job-1") return absl::NotFoundError("no job " + job_id);
    fedanon::v1::JobInfo job;
    job.set_job_id(job_id);
    job.set_state(fedanon::v1::JOB_STATE_SUBMITTED);
    job.set_submitted_by("alice");
    return job;
  }
  absl::StatusOr<std::vector<fedanon::v1::JobInfo>> List() override {
    return std::vector<fedanon::v1::JobInfo>{*Get("job-1")};
  }
  absl::StatusOr<fedanon::v1::JobInfo> Cancel(const std::string& job_id, const std::string&,
                                              const std::string&) override {
    return Get(job_id);
  }
  // Each call moves the job one step: running round 1, round 2, done.
  absl::StatusOr<fedanon::v1::JobInfo> WaitForChange(const std::string& job_id,
                                                     const fedanon::v1::JobInfo&,
                                                     absl::Duration) override {
    absl::MutexLock lock(&mu_);
    fedanon::v1::JobInfo job = *Get(job_id);
    ++step_;
    job.set_state(step_ >= 3 ? fedanon::v1::JOB_STATE_DONE : fedanon::v1::JOB_STATE_RUNNING);
    job.set_round(std::min(step_, 2));
    return job;
  }
  // Job 1's result: two and a half chunks of the alphabet.
  static std::string Job1Result() {
    std::string result(2 * admin::kResultChunkBytes + admin::kResultChunkBytes / 2, 'a');
    for (size_t i = 0; i < result.size(); ++i) result[i] = static_cast<char>('a' + i % 26);
    return result;
  }
  absl::Status StreamResult(const std::string& job_id, size_t piece_bytes,
                            const std::function<absl::Status(std::string_view)>& sink) override {
    if (job_id != "job-1") return absl::NotFoundError("no result");
    const std::string result = Job1Result();
    for (size_t at = 0; at < result.size(); at += piece_bytes) {
      RETURN_IF_ERROR(sink(std::string_view(result).substr(at, piece_bytes)));
    }
    return absl::OkStatus();
  }
  std::vector<wire::ConnectedParty> Parties() override { return connections_->Parties(); }

 private:
  leader_daemon::PartyConnections* connections_;
  absl::Mutex mu_;
  int step_ ABSL_GUARDED_BY(mu_) = 0;
};

class MtlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new TestPki("hospitals");
    other_ = new TestPki("impostors");
  }
  static void TearDownTestSuite() {
    delete pki_;
    delete other_;
  }

  void SetUp() override { StartServer("127.0.0.1:0"); }

  void StartServer(const std::string& listen, const std::string& crl_path = "",
                   const std::vector<std::string>& all_jobs_admins = {}) {
    leader_daemon::LeaderServerOptions options;
    options.listen = listen;
    options.crl_path = crl_path;
    options.all_jobs_admins = all_jobs_admins;
    leader_tls_ = pki_->Leader();
    options.tls = leader_tls_;
    auto server = leader_daemon::LeaderServer::Start(options, &connections_, &backend_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  std::unique_ptr<party_daemon::PartyClient> StartParty(
      const std::string& name, party_daemon::PartyHandler handler = Echo,
      const RevocationCheck* revocation = nullptr,
      wire::ProtocolVersion protocol = wire::kProtocolVersion) {
    party_daemon::PartyClientOptions options;
    options.protocol_version = protocol;
    options.revocation = revocation;
    options.name = name;
    options.leader_address = address_;
    options.tls = pki_->Party(name);
    options.seal_cert_pem = pki_->SealCert(name);
    options.initial_backoff = absl::Milliseconds(100);
    options.max_backoff = absl::Seconds(1);
    auto client =
        std::make_unique<party_daemon::PartyClient>(std::move(options), std::move(handler));
    client->Start();
    return client;
  }

  bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (condition()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return condition();
  }
  bool WaitForParty(const std::string& name) {
    return WaitFor([&] { return connections_.IsConnected(name); });
  }

  // A hand-driven party stream (no PartyClient), to misbehave on purpose.
  struct Raw {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<fedanon::v1::PartyLink::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<RawStream> stream;
  };
  std::unique_ptr<Raw> OpenRaw(const TlsMaterial& tls) {
    auto raw = std::make_unique<Raw>();
    raw->channel = DialLeader(address_, tls);
    raw->stub = fedanon::v1::PartyLink::NewStub(raw->channel);
    raw->stream = raw->stub->Connect(&raw->context);
    return raw;
  }
  // A hello of this build's protocol version (`versioned`), or one without a version (1.0).
  static bool Hello(Raw& raw, const std::string& seal_cert, bool versioned = true) {
    PartyMessage hello;
    hello.mutable_hello()->set_version("test");
    hello.mutable_hello()->set_seal_certificate(seal_cert);
    if (versioned) {
      *hello.mutable_hello()->mutable_protocol_version() = wire::ToProto(wire::kProtocolVersion);
    }
    LeaderMessage ack;
    return raw.stream->Write(hello) && raw.stream->Read(&ack) && ack.has_hello_ack();
  }

  static std::unique_ptr<fedanon::v1::Admin::Stub> AdminStub(const std::string& address,
                                                             const TlsMaterial& tls) {
    return fedanon::v1::Admin::NewStub(DialLeader(address, tls));
  }
  static grpc::Status ListParties(fedanon::v1::Admin::Stub& stub,
                                  fedanon::v1::ListPartiesResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub.ListParties(&context, fedanon::v1::ListPartiesRequest(), response);
  }

  static TestPki* pki_;
  static TestPki* other_;
  leader_daemon::PartyConnections connections_;
  FakeAdminBackend backend_{&connections_};
  TlsMaterial leader_tls_;  // the running server's certificate
  std::unique_ptr<leader_daemon::LeaderServer> server_;
  std::string address_;
};

TestPki* MtlsTest::pki_ = nullptr;
TestPki* MtlsTest::other_ = nullptr;

TEST_F(MtlsTest, PartyConnectsAndIsRegisteredUnderItsCertificateName) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(party->WaitUntilConnected(absl::Seconds(10)));
  ASSERT_TRUE(WaitForParty("hospital-a"));
  const auto parties = connections_.Parties();
  ASSERT_EQ(parties.size(), 1u);
  EXPECT_EQ(parties[0].name, "hospital-a");
  EXPECT_THAT(parties[0].peer, StartsWith("ipv4:127.0.0.1:"));
  EXPECT_THAT(parties[0].seal_cert_pem, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_EQ(party->sessions(), 1);
}

// The handshake checks validity once; a party's stream lasts for weeks. It ends when the
// party's certificate expires, and the party cannot come back with it.
TEST_F(MtlsTest, AStreamEndsWhenThePartysCertificateExpires) {
  party_daemon::PartyClientOptions options;
  options.name = "hospital-a";
  options.leader_address = address_;
  options.tls = pki_->Tls(crypto::Role::kParty, "hospital-a", {}, absl::Seconds(4));
  options.seal_cert_pem = pki_->SealCert("hospital-a");
  options.initial_backoff = absl::Milliseconds(100);
  options.max_backoff = absl::Seconds(1);
  party_daemon::PartyClient party(std::move(options), Echo);
  party.Start();
  ASSERT_TRUE(WaitForParty("hospital-a"));
  EXPECT_TRUE(WaitFor([&] { return !connections_.IsConnected("hospital-a"); }, absl::Seconds(20)));
  absl::SleepFor(absl::Seconds(2));  // reconnect attempts with the expired certificate fail
  EXPECT_FALSE(connections_.IsConnected("hospital-a"));
  EXPECT_EQ(party.sessions(), 1);
}

TEST(CertificateNotAfterTest, IsTheEndOfTheValidity) {
  ASSERT_OK_AND_ASSIGN(auto ca, crypto::CertificateAuthority::Create("t", absl::Hours(48)));
  const absl::Time before = absl::Now();
  ASSERT_OK_AND_ASSIGN(auto issued, ca->IssueTls({crypto::Role::kParty, "p"}, {}, absl::Hours(5)));
  ASSERT_OK_AND_ASSIGN(absl::Time not_after, crypto::CertificateNotAfter(issued.cert_pem));
  EXPECT_GE(not_after, before + absl::Hours(5) - absl::Seconds(2));
  EXPECT_LE(not_after, absl::Now() + absl::Hours(5) + absl::Seconds(1));
  EXPECT_FALSE(crypto::CertificateNotAfter("not a certificate").ok());
}

// With a revocation list (leader.yaml `crl:`), revoked party and admin certificates are refused,
// the others served; a list the leader cannot use refuses everyone.
TEST_F(MtlsTest, RevokedCertificatesAreRefused) {
  const TlsMaterial revoked_party = pki_->Party("hospital-b");
  const TlsMaterial revoked_admin = pki_->Admin("mallory");
  const std::string crl_path =
      ::testing::TempDir() + "/fedanon_mtls_crl_" + std::to_string(getpid()) + ".pem";
  { std::ofstream(crl_path) << pki_->Crl({revoked_party.cert_pem, revoked_admin.cert_pem}); }
  server_->Shutdown(absl::ZeroDuration());
  server_.reset();
  StartServer("127.0.0.1:0", crl_path);

  auto good = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  auto raw = OpenRaw(revoked_party);
  EXPECT_FALSE(Hello(*raw, pki_->SealCert("hospital-b")));
  EXPECT_FALSE(connections_.IsConnected("hospital-b"));

  fedanon::v1::ListPartiesResponse response;
  auto alice = AdminStub(address_, pki_->Admin("alice"));
  EXPECT_TRUE(ListParties(*alice, &response).ok());
  auto mallory = AdminStub(address_, revoked_admin);
  const grpc::Status refused = ListParties(*mallory, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(refused.error_message(), HasSubstr("certificate revoked"));

  { std::ofstream(crl_path) << "not a CRL"; }
  const grpc::Status closed = ListParties(*alice, &response);
  EXPECT_EQ(closed.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(closed.error_message(), HasSubstr("revocation list"));
  std::remove(crl_path.c_str());
}

// Issue 26 §4: a party with a revocation list (party.yaml `crl:`) refuses a leader whose TLS
// certificate is on it, after the hello, and connects once the list no longer revokes it; a list
// it cannot use refuses the leader too (fails closed).
TEST_F(MtlsTest, PartyRefusesALeaderItsRevocationListRevokes) {
  const std::string crl_path =
      ::testing::TempDir() + "/fedanon_party_crl_" + std::to_string(getpid()) + ".pem";
  { std::ofstream(crl_path) << pki_->Crl({leader_tls_.cert_pem}); }
  const RevocationCheck revocation(crl_path, pki_->ca_pem(), "the party");
  EXPECT_THAT(revocation.Check(leader_tls_.cert_pem).message(), HasSubstr("certificate revoked"));
  auto party = StartParty("hospital-a", Echo, &revocation);
  absl::SleepFor(absl::Milliseconds(800));  // several connection attempts (backoff 100 ms)
  EXPECT_EQ(party->sessions(), 0);
  EXPECT_FALSE(party->connected());

  { std::ofstream(crl_path) << pki_->Crl({pki_->Party("someone-else").cert_pem}); }
  EXPECT_TRUE(WaitFor([&] { return party->connected(); }));
  party->Stop();

  { std::ofstream(crl_path) << "not a CRL"; }
  EXPECT_THAT(revocation.Check(leader_tls_.cert_pem).message(),
              HasSubstr("the party's certificate revocation list is unusable"));
  auto closed = StartParty("hospital-c", Echo, &revocation);
  absl::SleepFor(absl::Milliseconds(800));
  EXPECT_EQ(closed->sessions(), 0);
  std::remove(crl_path.c_str());
}

// The protocol version of the hello (common/wire/protocol_version.h): within a major version one
// minor version of skew is served, an old party (the previous minor version) against a newer
// leader works; anything else is refused with both versions named.
TEST(ProtocolVersionTest, TheLeaderServesItsMinorVersionAndTheOneBefore) {
  EXPECT_OK(wire::CheckPartyProtocol("p", {2, 1}, {2, 1}));
  EXPECT_OK(wire::CheckPartyProtocol("p", {2, 0}, {2, 1}));
  EXPECT_THAT(wire::CheckPartyProtocol("p", {2, 2}, {2, 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "party 'p' speaks protocol 2.2; this leader supports 2.0-2.1"));
  EXPECT_THAT(wire::CheckPartyProtocol("p", {2, 0}, {2, 2}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "party 'p' speaks protocol 2.0; this leader supports 2.1-2.2"));
  EXPECT_THAT(wire::CheckPartyProtocol("p", {3, 1}, {2, 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "speaks protocol 3.1"));
  EXPECT_OK(wire::CheckLeaderProtocol({2, 0}, {2, 1}));
  EXPECT_OK(wire::CheckLeaderProtocol({2, 2}, {2, 1}));
  EXPECT_THAT(wire::CheckLeaderProtocol({3, 0}, {2, 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the leader speaks protocol 3.0; this party speaks 2.1"));
}

// This build speaks 5.0 (the first minor version of major version 5): a peer of any 1.x to 4.x
// version is refused both ways (a 2.x party sends vertical scores and skips the secure
// comparisons; a 3.x party hands over the mask of binned class counts without the bin check; a
// 4.x party hands over the mask of a local job's within-group bins without it), and so is a hello
// or hello_ack without a version (a build older than the exchange of versions: 1.0).
TEST(ProtocolVersionTest, ThisBuildRefusesEveryOlderMajorPeerAndAPeerWithoutAVersion) {
  ASSERT_EQ(wire::kProtocolVersion, (wire::ProtocolVersion{5, 0}));
  EXPECT_OK(wire::CheckPartyProtocol("p", wire::kProtocolVersion));
  EXPECT_OK(wire::CheckLeaderProtocol(wire::kProtocolVersion));
  for (const uint32_t major : {1u, 2u, 3u, 4u}) {
    for (const uint32_t minor : {0u, 1u, 2u, 3u, 4u, 9u}) {
      const wire::ProtocolVersion old{major, minor};
      EXPECT_THAT(wire::CheckPartyProtocol("p", old),
                  StatusIs(absl::StatusCode::kFailedPrecondition,
                           absl::StrCat("party 'p' speaks protocol ", major, ".", minor,
                                        "; this leader supports 5.0-5.0")));
      EXPECT_THAT(wire::CheckLeaderProtocol(old),
                  StatusIs(absl::StatusCode::kFailedPrecondition,
                           absl::StrCat("the leader speaks protocol ", major, ".", minor,
                                        "; this party speaks 5.0")));
    }
  }
  const fedanon::v1::PartyHello unversioned_hello;
  EXPECT_EQ(wire::ProtocolVersionOf(unversioned_hello), (wire::ProtocolVersion{1, 0}));
  EXPECT_THAT(wire::CheckPartyProtocol("p", wire::ProtocolVersionOf(unversioned_hello)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "party 'p' speaks protocol 1.0; this leader supports 5.0-5.0"));
  const fedanon::v1::HelloAck unversioned_ack;
  EXPECT_EQ(wire::ProtocolVersionOf(unversioned_ack), (wire::ProtocolVersion{1, 0}));
  EXPECT_THAT(wire::CheckLeaderProtocol(wire::ProtocolVersionOf(unversioned_ack)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the leader speaks protocol 1.0; this party speaks 5.0"));
}

// 5.0 is a major version: a party of the last 4.x version never gets in (it backs off), and a
// hello without a version (a party from before versions were exchanged) speaks 1.0: both are
// refused naming both versions.
TEST_F(MtlsTest, APartyOfTheLastMajorVersionOrWithoutVersionIsRefused) {
  ASSERT_EQ(wire::kProtocolVersion, (wire::ProtocolVersion{5, 0}));
  auto old = StartParty("hospital-a", Echo, nullptr, wire::ProtocolVersion{4, 1});
  EXPECT_FALSE(old->WaitUntilConnected(absl::Seconds(1)));
  EXPECT_EQ(old->sessions(), 0);
  EXPECT_FALSE(connections_.IsConnected("hospital-a"));
  auto raw = OpenRaw(pki_->Party("hospital-b"));
  EXPECT_FALSE(Hello(*raw, pki_->SealCert("hospital-b"), /*versioned=*/false));
  const grpc::Status status = raw->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(),
            "party 'hospital-b' speaks protocol 1.0; this leader supports 5.0-5.0");
  EXPECT_FALSE(connections_.IsConnected("hospital-b"));
}

TEST_F(MtlsTest, APartyOfTheNextMajorVersionIsRefusedWithBothVersionsNamed) {
  auto raw = OpenRaw(pki_->Party("hospital-a"));
  PartyMessage hello;
  hello.mutable_hello()->set_version("future");
  hello.mutable_hello()->set_seal_certificate(pki_->SealCert("hospital-a"));
  hello.mutable_hello()->mutable_protocol_version()->set_major(wire::kProtocolVersion.major + 1);
  hello.mutable_hello()->mutable_protocol_version()->set_minor(0);
  LeaderMessage ack;
  EXPECT_TRUE(raw->stream->Write(hello));
  EXPECT_FALSE(raw->stream->Read(&ack));
  const grpc::Status status = raw->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(),
            "party 'hospital-a' speaks protocol 6.0; this leader supports 5.0-5.0");
  // A PartyClient advertising it never gets in, and backs off (no reconnect loop).
  auto future = StartParty("hospital-c", Echo, nullptr, wire::ProtocolVersion{6, 0});
  EXPECT_FALSE(future->WaitUntilConnected(absl::Seconds(1)));
  EXPECT_EQ(future->sessions(), 0);
  EXPECT_FALSE(connections_.IsConnected("hospital-a"));
  EXPECT_FALSE(connections_.IsConnected("hospital-c"));
}

TEST_F(MtlsTest, CallRoundTripAndErrorReply) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  ASSERT_OK_AND_ASSIGN(PartyMessage reply,
                       connections_.Call("hospital-a", Ping(1234), absl::Seconds(10)));
  EXPECT_EQ(reply.pong().echoed_unix_nanos(), 1234);
  LeaderMessage prepare;
  prepare.mutable_prepare();
  EXPECT_THAT(
      connections_.Call("hospital-a", prepare, absl::Seconds(10)),
      StatusIs(absl::StatusCode::kInvalidArgument, "party 'hospital-a': unsupported request"));
}

TEST_F(MtlsTest, SeveralPartiesAreCalledConcurrently) {
  auto a = StartParty("hospital-a");
  auto b = StartParty("hospital-b");
  auto c = StartParty("hospital-c");
  for (const char* name : {"hospital-a", "hospital-b", "hospital-c"})
    ASSERT_TRUE(WaitForParty(name));
  std::vector<std::future<absl::StatusOr<PartyMessage>>> calls;
  for (int i = 0; i < 30; ++i) {
    const std::string party = i % 3 == 0 ? "hospital-a" : i % 3 == 1 ? "hospital-b" : "hospital-c";
    calls.push_back(std::async(std::launch::async, [this, party, i] {
      return connections_.Call(party, Ping(i), absl::Seconds(10));
    }));
  }
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK_AND_ASSIGN(PartyMessage r, calls[i].get());
    EXPECT_EQ(r.pong().echoed_unix_nanos(), i);
  }
}

TEST_F(MtlsTest, ClientWithoutCertificateIsRejected) {
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = pki_->ca_pem();
  auto stub = fedanon::v1::Admin::NewStub(
      grpc::CreateCustomChannel(address_, grpc::SslCredentials(no_cert), ClientChannelArguments()));
  fedanon::v1::ListPartiesResponse response;
  EXPECT_EQ(ListParties(*stub, &response).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(MtlsTest, ClientWithCertificateFromAnotherCaIsRejected) {
  const TlsMaterial foreign = other_->Party("hospital-a");
  // Trusts our CA (so the client accepts the leader), but presents a certificate of another CA.
  auto raw = OpenRaw(TlsMaterial{pki_->ca_pem(), foreign.cert_pem, foreign.key_pem});
  EXPECT_FALSE(Hello(*raw, pki_->SealCert("hospital-a")));
  EXPECT_EQ(raw->stream->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(connections_.Parties().empty());

  const TlsMaterial foreign_admin = other_->Admin("alice");
  auto stub = AdminStub(address_,
                        TlsMaterial{pki_->ca_pem(), foreign_admin.cert_pem, foreign_admin.key_pem});
  fedanon::v1::ListPartiesResponse response;
  EXPECT_EQ(ListParties(*stub, &response).error_code(), grpc::StatusCode::UNAVAILABLE);

  // The real client keeps retrying (and logging why) but never gets through.
  party_daemon::PartyClientOptions options;
  options.name = "hospital-a";
  options.leader_address = address_;
  options.tls = TlsMaterial{pki_->ca_pem(), foreign.cert_pem, foreign.key_pem};
  options.seal_cert_pem = pki_->SealCert("hospital-a");
  options.initial_backoff = absl::Milliseconds(100);
  party_daemon::PartyClient client(std::move(options), Echo);
  client.Start();
  EXPECT_FALSE(client.WaitUntilConnected(absl::Milliseconds(500)));
  client.Stop();
  EXPECT_EQ(client.sessions(), 0);
  EXPECT_TRUE(connections_.Parties().empty());
}

TEST_F(MtlsTest, AdminCertificateCannotConnectToPartyLink) {
  auto raw = OpenRaw(pki_->Admin("alice"));
  EXPECT_FALSE(Hello(*raw, pki_->SealCert("alice")));
  const grpc::Status status = raw->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(status.error_message(), "only parties may connect to PartyLink");
  EXPECT_TRUE(connections_.Parties().empty());
}

TEST_F(MtlsTest, PartyCertificateCannotCallAdmin) {
  auto stub = AdminStub(address_, pki_->Party("hospital-a"));
  fedanon::v1::ListPartiesResponse response;
  const grpc::Status status = ListParties(*stub, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("only admins"));
  grpc::ClientContext context;
  fedanon::v1::JobInfo job;
  EXPECT_EQ(stub->SubmitJob(&context, fedanon::v1::SubmitJobRequest(), &job).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(MtlsTest, AdminCallsUseTheCertificateIdentity) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  auto stub = AdminStub(address_, pki_->Admin("alice"));
  fedanon::v1::ListPartiesResponse parties;
  ASSERT_TRUE(ListParties(*stub, &parties).ok());
  ASSERT_EQ(parties.parties_size(), 1);
  EXPECT_EQ(parties.parties(0).name(), "hospital-a");

  grpc::ClientContext context;
  fedanon::v1::SubmitJobRequest request;
  request.add_parties("hospital-a");
  fedanon::v1::JobInfo job;
  ASSERT_TRUE(stub->SubmitJob(&context, request, &job).ok());
  EXPECT_EQ(job.submitted_by(), "alice");

  grpc::ClientContext get_context;
  fedanon::v1::GetJobRequest get;
  get.set_job_id("job-404");
  EXPECT_EQ(stub->GetJob(&get_context, get, &job).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Issue 26 §4: an admin acts only on the jobs it submitted (job-1 is alice's), unless the
// leader's config names it in all_jobs_admins. Two admin certificates of the same CA: bob is
// refused on every per-job call and sees no job in the list; alice and, once allowed, carol get
// through.
TEST_F(MtlsTest, AdminsActOnlyOnTheirOwnJobsUnlessAllowedAll) {
  auto bob = AdminStub(address_, pki_->Admin("bob"));
  auto expect_denied = [&](const grpc::Status& st, const std::string& method) {
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << method;
    EXPECT_THAT(st.error_message(),
                ::testing::HasSubstr(absl::StrCat("admin 'bob' may call Admin.", method,
                                                  " only for the jobs it submitted itself")));
  };
  {
    grpc::ClientContext c;
    fedanon::v1::GetJobRequest get;
    get.set_job_id("job-1");
    fedanon::v1::JobInfo job;
    expect_denied(bob->GetJob(&c, get, &job), "GetJob");
  }
  {
    grpc::ClientContext c;
    fedanon::v1::CancelJobRequest cancel;
    cancel.set_job_id("job-1");
    fedanon::v1::JobInfo job;
    expect_denied(bob->CancelJob(&c, cancel, &job), "CancelJob");
  }
  {
    grpc::ClientContext c;
    fedanon::v1::GetResultRequest result;
    result.set_job_id("job-1");
    auto reader = bob->GetResult(&c, result);
    fedanon::v1::ResultChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    expect_denied(reader->Finish(), "GetResult");
  }
  {
    grpc::ClientContext c;
    fedanon::v1::GetResultRequest log;
    log.set_job_id("job-1");
    auto reader = bob->GetViewLog(&c, log);
    fedanon::v1::ResultChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    expect_denied(reader->Finish(), "GetViewLog");
  }
  {
    grpc::ClientContext c;
    fedanon::v1::GetJobRequest watch;
    watch.set_job_id("job-1");
    auto reader = bob->WatchJob(&c, watch);
    fedanon::v1::JobInfo info;
    EXPECT_FALSE(reader->Read(&info));
    expect_denied(reader->Finish(), "WatchJob");
  }
  {
    grpc::ClientContext c;
    fedanon::v1::ListJobsResponse jobs;
    ASSERT_TRUE(bob->ListJobs(&c, fedanon::v1::ListJobsRequest(), &jobs).ok());
    EXPECT_EQ(jobs.jobs_size(), 0);
  }
  // An unknown job stays NotFound (no ownership to check).
  {
    grpc::ClientContext c;
    fedanon::v1::GetJobRequest get;
    get.set_job_id("job-404");
    fedanon::v1::JobInfo job;
    EXPECT_EQ(bob->GetJob(&c, get, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // The submitter itself.
  auto alice = AdminStub(address_, pki_->Admin("alice"));
  {
    grpc::ClientContext c;
    fedanon::v1::CancelJobRequest cancel;
    cancel.set_job_id("job-1");
    fedanon::v1::JobInfo job;
    EXPECT_TRUE(alice->CancelJob(&c, cancel, &job).ok());
    grpc::ClientContext lc;
    fedanon::v1::ListJobsResponse jobs;
    ASSERT_TRUE(alice->ListJobs(&lc, fedanon::v1::ListJobsRequest(), &jobs).ok());
    EXPECT_EQ(jobs.jobs_size(), 1);
  }
  // A leader whose config lets carol act on every job.
  server_->Shutdown(absl::ZeroDuration());
  server_.reset();
  StartServer("127.0.0.1:0", "", {"carol"});
  auto carol = AdminStub(address_, pki_->Admin("carol"));
  bob = AdminStub(address_, pki_->Admin("bob"));
  {
    grpc::ClientContext c;
    fedanon::v1::GetJobRequest get;
    get.set_job_id("job-1");
    fedanon::v1::JobInfo job;
    EXPECT_TRUE(carol->GetJob(&c, get, &job).ok());
    EXPECT_EQ(job.submitted_by(), "alice");
    grpc::ClientContext bc;
    expect_denied(bob->GetJob(&bc, get, &job), "GetJob");
  }
}

TEST_F(MtlsTest, WatchJobStreamsChangesUntilFinal) {
  auto stub = AdminStub(address_, pki_->Admin("alice"));
  grpc::ClientContext context;
  fedanon::v1::GetJobRequest request;
  request.set_job_id("job-1");
  auto reader = stub->WatchJob(&context, request);
  std::vector<fedanon::v1::JobInfo> seen;
  fedanon::v1::JobInfo info;
  while (reader->Read(&info)) seen.push_back(info);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].state(), fedanon::v1::JOB_STATE_SUBMITTED);
  EXPECT_EQ(seen[1].round(), 1u);
  EXPECT_EQ(seen[2].round(), 2u);
  EXPECT_EQ(seen[3].state(), fedanon::v1::JOB_STATE_DONE);
}

TEST_F(MtlsTest, GetResultStreamsOneMebibyteChunks) {
  auto stub = AdminStub(address_, pki_->Admin("alice"));
  grpc::ClientContext context;
  fedanon::v1::GetResultRequest request;
  request.set_job_id("job-1");
  auto reader = stub->GetResult(&context, request);
  std::string all;
  std::vector<size_t> sizes;
  fedanon::v1::ResultChunk chunk;
  while (reader->Read(&chunk)) {
    sizes.push_back(chunk.data().size());
    all += chunk.data();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_THAT(sizes, ::testing::ElementsAre(admin::kResultChunkBytes, admin::kResultChunkBytes,
                                            admin::kResultChunkBytes / 2));
  EXPECT_EQ(all, FakeAdminBackend::Job1Result());
}

TEST_F(MtlsTest, FirstMessageMustBeHelloWithTheirOwnSealCertificate) {
  auto raw = OpenRaw(pki_->Party("hospital-a"));
  PartyMessage pong;
  pong.mutable_pong();
  ASSERT_TRUE(raw->stream->Write(pong));
  LeaderMessage ignored;
  EXPECT_FALSE(raw->stream->Read(&ignored));
  grpc::Status status = raw->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("must be a hello"));

  auto borrowed = OpenRaw(pki_->Party("hospital-a"));
  EXPECT_FALSE(Hello(*borrowed, pki_->SealCert("hospital-b")));
  status = borrowed->stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("seal certificate"));
  EXPECT_TRUE(connections_.Parties().empty());
}

TEST_F(MtlsTest, PartyDisconnectingMidCallFailsTheCall) {
  auto raw = OpenRaw(pki_->Party("hospital-b"));
  ASSERT_TRUE(Hello(*raw, pki_->SealCert("hospital-b")));
  ASSERT_TRUE(WaitForParty("hospital-b"));
  auto call = std::async(std::launch::async, [this] {
    return connections_.Call("hospital-b", Ping(1), absl::Seconds(30));
  });
  LeaderMessage request;
  ASSERT_TRUE(raw->stream->Read(&request));
  EXPECT_TRUE(request.has_ping());
  raw->context.TryCancel();
  EXPECT_THAT(call.get(),
              StatusIs(absl::StatusCode::kUnavailable, "party 'hospital-b' disconnected"));
  EXPECT_TRUE(WaitFor([&] { return !connections_.IsConnected("hospital-b"); }));
}

TEST_F(MtlsTest, CallTimesOutWhenThePartyDoesNotAnswer) {
  auto raw = OpenRaw(pki_->Party("hospital-b"));
  ASSERT_TRUE(Hello(*raw, pki_->SealCert("hospital-b")));
  ASSERT_TRUE(WaitForParty("hospital-b"));
  EXPECT_THAT(connections_.Call("hospital-b", Ping(1), absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "party 'hospital-b' did not answer within 300ms"));
  // A late answer is dropped; the stream stays usable.
  LeaderMessage late;
  ASSERT_TRUE(raw->stream->Read(&late));
  PartyMessage pong;
  pong.set_request_id(late.request_id());
  pong.mutable_pong();
  ASSERT_TRUE(raw->stream->Write(pong));
  auto call = std::async(std::launch::async, [this] {
    return connections_.Call("hospital-b", Ping(2), absl::Seconds(10));
  });
  LeaderMessage next;
  ASSERT_TRUE(raw->stream->Read(&next));
  pong.set_request_id(next.request_id());
  pong.mutable_pong()->set_echoed_unix_nanos(2);
  ASSERT_TRUE(raw->stream->Write(pong));
  ASSERT_OK_AND_ASSIGN(PartyMessage r, call.get());
  EXPECT_EQ(r.pong().echoed_unix_nanos(), 2);
  raw->context.TryCancel();
}

TEST_F(MtlsTest, SecondConnectionOfAPartyReplacesTheFirst) {
  auto first = OpenRaw(pki_->Party("hospital-c"));
  ASSERT_TRUE(Hello(*first, pki_->SealCert("hospital-c")));
  ASSERT_TRUE(WaitForParty("hospital-c"));
  const std::string first_peer = connections_.Parties()[0].peer;
  auto second = OpenRaw(pki_->Party("hospital-c"));
  ASSERT_TRUE(Hello(*second, pki_->SealCert("hospital-c")));
  LeaderMessage ignored;
  EXPECT_FALSE(first->stream->Read(&ignored));  // cancelled by the leader
  first->stream->Finish();
  ASSERT_EQ(connections_.Parties().size(), 1u);
  EXPECT_NE(connections_.Parties()[0].peer, first_peer);
  auto call = std::async(std::launch::async, [this] {
    return connections_.Call("hospital-c", Ping(3), absl::Seconds(10));
  });
  LeaderMessage request;
  ASSERT_TRUE(second->stream->Read(&request));
  PartyMessage pong;
  pong.set_request_id(request.request_id());
  pong.mutable_pong()->set_echoed_unix_nanos(3);
  ASSERT_TRUE(second->stream->Write(pong));
  ASSERT_OK(call.get());
  second->context.TryCancel();
}

TEST_F(MtlsTest, OversizeMessagesAreRejectedCleanly) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  // Leader -> party: refused before sending.
  LeaderMessage big;
  big.mutable_sum_step()->mutable_sealed()->set_ciphertext(std::string(kOverLimit, 'x'));
  EXPECT_THAT(connections_.Call("hospital-a", big, absl::Seconds(10)),
              StatusIs(absl::StatusCode::kResourceExhausted, "64 MiB message limit"));
  // Party -> leader: the party answers with an error instead of breaking its stream.
  LeaderMessage oversize_reply;
  oversize_reply.mutable_end_job()->set_reason("oversize");
  EXPECT_THAT(connections_.Call("hospital-a", oversize_reply, absl::Seconds(30)),
              StatusIs(absl::StatusCode::kResourceExhausted, "party 'hospital-a': reply of"));
  ASSERT_OK(connections_.Call("hospital-a", Ping(1), absl::Seconds(10)));
  EXPECT_EQ(party->sessions(), 1);
  // A client that ignores the limit: the server refuses the message.
  grpc::ChannelArguments args = ClientChannelArguments();
  args.SetMaxSendMessageSize(128 * 1024 * 1024);
  auto stub = fedanon::v1::Admin::NewStub(
      grpc::CreateCustomChannel(address_, MakeChannelCredentials(pki_->Admin("alice")), args));
  grpc::ClientContext context;
  fedanon::v1::SubmitJobRequest request;
  (*request.mutable_taxonomies())["age"] = std::string(kOverLimit, 't');
  fedanon::v1::JobInfo job;
  EXPECT_EQ(stub->SubmitJob(&context, request, &job).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(MtlsTest, PartyReconnectsAfterTheLeaderRestarts) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  const std::string listen = address_;
  server_->Shutdown(absl::Seconds(1));
  server_.reset();
  ASSERT_TRUE(WaitFor([&] { return !party->connected(); }));
  EXPECT_FALSE(connections_.IsConnected("hospital-a"));
  absl::SleepFor(absl::Milliseconds(300));  // a few failed attempts with backoff
  StartServer(listen);
  ASSERT_TRUE(WaitForParty("hospital-a"));
  // The leader registers the stream before the party's client counts its session: wait for both.
  EXPECT_TRUE(WaitFor([&] { return party->sessions() == 2; })) << party->sessions();
  ASSERT_OK_AND_ASSIGN(PartyMessage reply,
                       connections_.Call("hospital-a", Ping(7), absl::Seconds(10)));
  EXPECT_EQ(reply.pong().echoed_unix_nanos(), 7);
}

TEST_F(MtlsTest, StopEndsTheLinkPromptly) {
  auto party = StartParty("hospital-a");
  ASSERT_TRUE(WaitForParty("hospital-a"));
  const absl::Time start = absl::Now();
  party->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(WaitFor([&] { return !connections_.IsConnected("hospital-a"); }));
}

TEST_F(MtlsTest, PartyRefusesAServerThatIsNotTheLeader) {
  leader_daemon::PartyConnections impostor_connections;
  leader_daemon::LeaderServerOptions options;
  options.listen = "127.0.0.1:0";
  options.tls = pki_->Tls(crypto::Role::kParty, "mallory", {"127.0.0.1"});
  ASSERT_OK_AND_ASSIGN(auto impostor,
                       leader_daemon::LeaderServer::Start(options, &impostor_connections, nullptr));
  address_ = "127.0.0.1:" + std::to_string(impostor->port());
  auto party = StartParty("hospital-a");
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(party->sessions(), 0);
  EXPECT_FALSE(party->connected());
}

TEST_F(MtlsTest, SecondServerOnTheSamePortFailsToStart) {
  leader_daemon::PartyConnections other;
  leader_daemon::LeaderServerOptions options;
  options.listen = address_;
  options.tls = pki_->Leader();
  EXPECT_THAT(leader_daemon::LeaderServer::Start(options, &other, nullptr),
              StatusIs(absl::StatusCode::kUnavailable, "cannot listen on " + address_));
}

TEST_F(MtlsTest, HealthServiceReportsServing) {
  grpc::GenericStub stub(DialLeader(address_, pki_->Admin("alice")));
  for (const std::string service : {"", "fedanon.v1.PartyLink", "fedanon.v1.Admin"}) {
    // grpc.health.v1.HealthCheckRequest{service}, encoded by hand (field 1, length-delimited).
    std::string encoded = "\x0a" + std::string(1, static_cast<char>(service.size())) + service;
    if (service.empty()) encoded.clear();
    grpc::Slice slice(encoded);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                   &response, [&done](grpc::Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok()) << service;
    grpc::Slice out;
    ASSERT_TRUE(response.DumpToSingleSlice(&out).ok());
    // HealthCheckResponse{status: SERVING (1)}.
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.begin()), out.size()),
              std::string("\x08\x01", 2))
        << service;
  }
}

// `fedanonctl health`: AdminClient::CheckHealth with the certificate of any role (the health
// service needs no admin), refused for another CA's certificate, NOT_FOUND for an unknown service.
TEST_F(MtlsTest, CheckHealthAcceptsEveryRoleOfTheFederation) {
  for (const TlsMaterial& tls : {pki_->Admin("alice"), pki_->Party("hospital-a"), pki_->Leader()}) {
    admin::AdminClient client(address_, tls);
    EXPECT_THAT(client.CheckHealth(""), ::fedanon::testing::IsOk());
    EXPECT_THAT(client.CheckHealth("fedanon.v1.PartyLink"), ::fedanon::testing::IsOk());
    EXPECT_THAT(client.CheckHealth("fedanon.v1.Admin"), ::fedanon::testing::IsOk());
    EXPECT_THAT(client.CheckHealth("no.such.Service"), StatusIs(absl::StatusCode::kNotFound, ""));
  }
  const TlsMaterial foreign = other_->Party("hospital-a");
  admin::AdminClient impostor(address_,
                              TlsMaterial{pki_->ca_pem(), foreign.cert_pem, foreign.key_pem});
  // (TLS 1.3: the leader's refusal reaches the client after its side of the handshake, as a
  // closed socket.)
  EXPECT_THAT(impostor.CheckHealth(""), StatusIs(absl::StatusCode::kUnavailable, ""));

  server_->Shutdown(absl::ZeroDuration());
  admin::AdminClient late(address_, pki_->Admin("alice"));
  EXPECT_THAT(late.CheckHealth(""),
              StatusIs(absl::StatusCode::kUnavailable, "cannot reach the leader"));
}

}  // namespace
}  // namespace fedanon::server
