// Whole jobs over real mTLS streams: a LeaderServer with a leader::Leader and three PartyClients
// each answering with a party::PartyAgent, as the daemons run them. Two jobs at once over the
// same three parties release what each releases alone (and take less wall time than one after
// the other).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/wire/job_authorization.h"
#include "leader/leader.h"
#include "party/party_agent.h"
#include "party/testing/observing_party.h"
#include "server/leader/leader_admin_backend.h"
#include "server/leader/leader_server.h"
#include "server/leader/party_connections.h"
#include "server/party/party_client.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/server/test_pki.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

using fedanon::testing::ExampleA;
using fedanon::testing::Scenario;
using fedanon::v1::JobInfo;
using testing::TestPki;

// Lets the first `want` requests that reach hospital-b's secure-sum step wait until they are all
// inside at once (or the test lets them go).
class Gate {
 public:
  explicit Gate(int want) : want_(want) {}
  void Enter() {
    absl::MutexLock lock(&mu_);
    if (open_) return;
    ++inside_;
    if (inside_ >= want_) open_ = true;
    mu_.AwaitWithTimeout(absl::Condition(&open_), absl::Seconds(60));
  }
  bool reached() {
    absl::MutexLock lock(&mu_);
    return inside_ >= want_;
  }

 private:
  const int want_;
  absl::Mutex mu_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

Scenario ExampleAWithK3() {
  Scenario s = ExampleA();
  s.spec_yaml = absl::StrReplaceAll(s.spec_yaml,
                                    {{"name: example-a", "name: example-a-k3"}, {"K: 2", "K: 3"}});
  return s;
}

class FederationLinkTest : public ::testing::Test {
 protected:
  // hospital-b's sum-step openings pass through `gate`.
  void Start(Gate* gate = nullptr) {
    dir_ = fedanon::testing::FreshDir("federation_link");
    const crypto::IssuedCertificate leader_seal = pki_.SealIssued(crypto::Role::kLeader, "leader");
    leader::LeaderOptions lo;
    lo.data_dir = dir_ + "/leader";
    lo.round_timeout = absl::Seconds(30);
    lo.ca_pem = pki_.ca_pem();
    lo.seal_cert_pem = leader_seal.cert_pem;
    lo.seal_key_pem = leader_seal.key_pem;
    ASSERT_OK_AND_ASSIGN(leader_, leader::Leader::Create(lo, &connections_));
    backend_ = leader_daemon::NewLeaderAdminBackend(leader_.get());
    leader_daemon::LeaderServerOptions so;
    so.listen = "127.0.0.1:0";
    so.tls = pki_.Leader();
    ASSERT_OK_AND_ASSIGN(server_,
                         leader_daemon::LeaderServer::Start(so, &connections_, backend_.get()));
    const TlsMaterial admin_tls = pki_.Admin("admin");
    admin_ = wire::AdminSigner{admin_tls.cert_pem, admin_tls.key_pem};

    const auto files = fedanon::testing::PartyFiles(ExampleA());
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string name = std::string("hospital-") + static_cast<char>('a' + i);
      names_.push_back(name);
      const crypto::IssuedCertificate seal = pki_.SealIssued(name);
      party::PartyAgentOptions po;
      po.name = name;
      po.data_dir = dir_ + "/" + name;
      po.default_data_path = "table.csv";
      po.output_dir = po.data_dir + "/output";
      po.ca_pem = pki_.ca_pem();
      po.seal_cert_pem = seal.cert_pem;
      po.seal_key_pem = seal.key_pem;
      if (gate != nullptr && name == "hospital-b") {
        po.observer = party_testing::ObservingParty(
            [gate](const std::string&, const std::string&, const std::string&) { gate->Enter(); });
      }
      for (const auto& [file, text] : files[i]) {
        fedanon::testing::WriteText(po.data_dir + "/" + file, text);
      }
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<party::PartyAgent> agent, party::PartyAgent::Create(po));
      party_daemon::PartyClientOptions co;
      co.name = name;
      co.leader_address = "127.0.0.1:" + std::to_string(server_->port());
      co.tls = pki_.Party(name);
      co.seal_cert_pem = seal.cert_pem;
      co.initial_backoff = absl::Milliseconds(50);
      party::PartyAgent* handler = agent.get();
      auto client = std::make_unique<party_daemon::PartyClient>(
          co, [handler](const fedanon::v1::LeaderMessage& m) { return handler->Handle(m); });
      client->Start();
      ASSERT_TRUE(client->WaitUntilConnected(absl::Seconds(20))) << name;
      agents_.push_back(std::move(agent));
      clients_.push_back(std::move(client));
    }
    for (const auto& name : names_) {
      for (int i = 0; i < 2000 && !connections_.IsConnected(name); ++i) {
        absl::SleepFor(absl::Milliseconds(10));
      }
    }
  }

  void TearDown() override {
    for (auto& c : clients_) c->Stop();
    if (server_) server_->Shutdown(absl::Seconds(2));
    server_.reset();
    backend_.reset();
    leader_.reset();
  }

  absl::StatusOr<JobInfo> Submit(const Scenario& s) {
    ASSIGN_OR_RETURN(fedanon::v1::SubmitJobRequest request,
                     fedanon::testing::MakeRequest(s, names_));
    std::map<std::string, std::string> texts(request.taxonomies().begin(),
                                             request.taxonomies().end());
    ASSIGN_OR_RETURN(
        *request.mutable_authorization(),
        wire::AuthorizeSubmission(request, spec::CanonicalJobBytes(request.spec(), texts), admin_));
    return leader_->Submit(request, "admin");
  }

  JobInfo Wait(const std::string& job_id) {
    JobInfo info;
    for (int i = 0; i < 1200; ++i) {
      auto got = leader_->WaitForChange(job_id, info, absl::Milliseconds(100));
      if (got.ok()) info = *got;
      if (info.state() >= fedanon::v1::JOB_STATE_DONE) break;
    }
    return info;
  }

  // The released rows of a done job, sorted.
  std::vector<std::string> Released(const JobInfo& info) {
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
    auto csv = leader_->Result(info.job_id());
    EXPECT_TRUE(csv.ok()) << csv.status();
    if (!csv.ok()) return {};
    auto table = fedanon::testing::ParseCsvText(*csv, dir_);
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? fedanon::testing::RowsByColumns(*table, table->header)
                      : std::vector<std::string>{};
  }

  TestPki pki_{"federation-link"};
  std::string dir_;
  leader_daemon::PartyConnections connections_;
  std::unique_ptr<leader::Leader> leader_;
  std::unique_ptr<admin::AdminBackend> backend_;
  std::unique_ptr<leader_daemon::LeaderServer> server_;
  wire::AdminSigner admin_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<party::PartyAgent>> agents_;
  std::vector<std::unique_ptr<party_daemon::PartyClient>> clients_;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST_F(FederationLinkTest, TwoJobsAtOnceOverRealStreamsReleaseWhatEachReleasesAlone) {
  Gate gate(2);
  Start(&gate);
  // One after the other (the gate lets a lone request through only when the test says so:
  // it opens by itself once two requests are inside, so alone runs are not gated).
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(const JobInfo k2_submitted, Submit(ExampleA()));
  // The first sum-step opening waits for a second one: submit the other job now.
  ASSERT_OK_AND_ASSIGN(const JobInfo k3_submitted, Submit(ExampleAWithK3()));
  const JobInfo k2 = Wait(k2_submitted.job_id());
  const JobInfo k3 = Wait(k3_submitted.job_id());
  const double together = Seconds(t0);
  EXPECT_TRUE(gate.reached()) << "hospital-b never handled requests of both jobs at once";

  t0 = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(const JobInfo k2_alone_submitted, Submit(ExampleA()));
  const JobInfo k2_alone = Wait(k2_alone_submitted.job_id());
  ASSERT_OK_AND_ASSIGN(const JobInfo k3_alone_submitted, Submit(ExampleAWithK3()));
  const JobInfo k3_alone = Wait(k3_alone_submitted.job_id());
  const double one_after_the_other = Seconds(t0);
  std::printf(
      "example A (k=2) and (k=3) over mTLS loopback: together %.3f s, one after the other "
      "%.3f s\n",
      together, one_after_the_other);

  EXPECT_EQ(Released(k2), Released(k2_alone));
  EXPECT_EQ(Released(k3), Released(k3_alone));
  EXPECT_NE(Released(k2), Released(k3));
  for (const auto& agent : agents_) EXPECT_EQ(agent->held_jobs(), 0u) << agent->name();
}

}  // namespace
}  // namespace fedanon::server
