// Observability units of the daemons: the metrics addresses the configs accept (a party:
// loopback only), the registry's exposition over the loopback HTTP endpoint, the leader's and
// party's metric families, the sd_notify datagram, the party status file and the verdicts of
// `fedanon party status`, and the job store's availability check behind the leader's health.
#include "server/runtime/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "leader/job_store.h"
#include "server/leader/leader_metrics.h"
#include "server/party/party_metrics.h"
#include "server/party/party_status.h"
#include "server/runtime/config.h"
#include "server/runtime/sd_notify.h"
#include "tests/support/config_dir.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::ConfigDir;
using ::fedanon::testing::HttpGet;
using ::fedanon::testing::MetricValue;
using ::fedanon::testing::StatusIs;
using ::fedanon::testing::TempDir;
using ::testing::HasSubstr;

TEST(MetricsAddress, LoopbackLiteralsOnly) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:9464"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3:0"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:9464"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:9464"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1:9464"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:9464"));
  EXPECT_FALSE(IsLoopbackAddress("localhost:9464"));  // names are not resolved
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1:9464"));
}

TEST(MetricsAddress, PartyConfigAcceptsOnlyLoopback) {
  ConfigDir dir;
  ASSERT_OK_AND_ASSIGN(PartyConfig off, LoadPartyConfig(dir.Party("off.yaml")));
  EXPECT_EQ(off.metrics_listen, "");  // off by default
  ASSERT_OK_AND_ASSIGN(PartyConfig v4,
                       LoadPartyConfig(dir.Party("v4.yaml", "metrics_listen: 127.0.0.1:9464\n")));
  EXPECT_EQ(v4.metrics_listen, "127.0.0.1:9464");
  ASSERT_OK_AND_ASSIGN(PartyConfig v6,
                       LoadPartyConfig(dir.Party("v6.yaml", "metrics_listen: '[::1]:9'\n")));
  EXPECT_EQ(v6.metrics_listen, "[::1]:9");
  for (const char* bad : {"0.0.0.0:9464", "10.0.0.7:9464", "'[::]:9464'", "localhost:9464"}) {
    const absl::StatusOr<PartyConfig> c =
        LoadPartyConfig(dir.Party("bad.yaml", std::string("metrics_listen: ") + bad + "\n"));
    EXPECT_THAT(c.status(), StatusIs(absl::StatusCode::kInvalidArgument, "")) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("bad.yaml:6:")) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("is not a loopback address")) << bad;
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr("a party listens on nothing on its network side"))
        << bad;
  }
  // A party has no opt-in.
  EXPECT_THAT(LoadPartyConfig(dir.Party("optin.yaml",
                                        "metrics_listen: 0.0.0.0:9\n"
                                        "metrics_allow_non_loopback: true\n"))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(MetricsAddress, LeaderNeedsAnExplicitOptInForOtherAddresses) {
  ConfigDir dir;
  ASSERT_OK_AND_ASSIGN(LeaderConfig off, LoadLeaderConfig(dir.Leader("off.yaml")));
  EXPECT_EQ(off.metrics_listen, "");
  EXPECT_FALSE(off.metrics_allow_non_loopback);
  const absl::StatusOr<LeaderConfig> refused =
      LoadLeaderConfig(dir.Leader("refused.yaml", "metrics_listen: 0.0.0.0:9464\n"));
  EXPECT_THAT(refused.status(), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("metrics_allow_non_loopback: true"));
  ASSERT_OK_AND_ASSIGN(LeaderConfig opted,
                       LoadLeaderConfig(dir.Leader("opted.yaml",
                                                   "metrics_listen: 0.0.0.0:9464\n"
                                                   "metrics_allow_non_loopback: true\n")));
  EXPECT_EQ(opted.metrics_listen, "0.0.0.0:9464");
  EXPECT_THAT(
      LoadLeaderConfig(dir.Leader("notbool.yaml", "metrics_allow_non_loopback: yes\n")).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(MetricsEndpoint, ServesTheRegistryOnLoopbackHttp) {
  MetricsRegistry registry;
  leader_daemon::LeaderMetrics metrics(
      &registry,
      {.job_counts = {}, .queued_jobs = {}, .connected_parties = [] { return size_t{2}; }});
  metrics.RoundDone();
  metrics.RoundDone();
  metrics.PhaseDone(leader::Phase::kSecureSum, absl::Milliseconds(3));
  metrics.SecureSumVector(1000);
  metrics.IdsMatched(500, absl::Seconds(2));
  metrics.JobFailed(leader::FailureCategory(absl::DeadlineExceededError("party 'x' ...")));
  metrics.Sent("hospital-a", 100);
  metrics.Received("hospital-a", 40);
  ASSERT_OK_AND_ASSIGN(auto endpoint, MetricsEndpoint::Start("127.0.0.1:0", registry));
  const std::string response = HttpGet(endpoint->port(), "/metrics");
  ASSERT_THAT(response, HasSubstr("200 OK"));
  const std::string body = response.substr(response.find("\r\n\r\n") + 4);
  EXPECT_THAT(body, HasSubstr(registry.Text()));  // after the exposer's own exposer_* metrics
  EXPECT_EQ(MetricValue(body, "fedanon_leader_rounds_total"), 2) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"secure_sum\"}"), 1);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"instruction\"}"), 0);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_secure_sum_words_sum"), 1000);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_ids_matched_total"), 500);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_id_matching_seconds_total"), 2);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_job_failures_total{reason=\"timeout\"}"), 1);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs_finished_total{outcome=\"failed\"}"), 1);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_party_bytes_sent_total{party=\"hospital-a\"}"), 100);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_party_bytes_received_total{party=\"hospital-a\"}"),
            40);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_connected_parties"), 2);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_job_store_up"), -1);  // no job source given
  EXPECT_THAT(body, ::testing::Not(HasSubstr("party 'x'")));        // the message never
  EXPECT_THAT(HttpGet(endpoint->port(), "/other"), ::testing::Not(HasSubstr("200 OK")));
}

TEST(MetricsEndpoint, AnAddressInUseIsAStartupError) {
  MetricsRegistry registry;
  ASSERT_OK_AND_ASSIGN(auto first, MetricsEndpoint::Start("127.0.0.1:0", registry));
  const absl::StatusOr<std::unique_ptr<MetricsEndpoint>> second =
      MetricsEndpoint::Start("127.0.0.1:" + std::to_string(first->port()), registry);
  EXPECT_THAT(second.status(), StatusIs(absl::StatusCode::kUnavailable, ""));
  EXPECT_THAT(MetricsEndpoint::Start("nonsense", registry).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(PartyMetrics, CountsTheLinkRequestsRefusalsRoundsAndBytes) {
  MetricsRegistry registry;
  party_daemon::PartyMetrics metrics(&registry);
  metrics.LinkDown(absl::UnavailableError("connection refused"), absl::Seconds(1));
  metrics.LinkUp("leader");
  fedanon::v1::LeaderMessage request;
  request.set_job_id("job-0123456789ab");
  request.set_round(1);
  request.mutable_sum_step();
  fedanon::v1::PartyMessage reply;
  reply.mutable_sum_step();
  metrics.Answered(request, reply);
  metrics.Answered(request, reply);  // same round
  request.set_round(2);
  reply.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kPermissionDenied));
  reply.mutable_error()->set_message("party policy: K=5 below the party's minimum K=10");
  metrics.Answered(request, reply);
  const std::string text = registry.Text();
  EXPECT_EQ(MetricValue(text, "fedanon_party_link_up"), 1) << text;
  EXPECT_EQ(MetricValue(text, "fedanon_party_link_sessions_total"), 1);
  EXPECT_EQ(MetricValue(text, "fedanon_party_link_failures_total{reason=\"unavailable\"}"), 1);
  EXPECT_EQ(MetricValue(text, "fedanon_party_requests_answered_total{kind=\"sum_step\"}"), 3);
  EXPECT_EQ(MetricValue(text, "fedanon_party_requests_refused_total{reason=\"permission_denied\"}"),
            1);
  EXPECT_EQ(MetricValue(text, "fedanon_party_rounds_answered_total"), 2);
  EXPECT_GT(MetricValue(text, "fedanon_party_bytes_sent_total"), 0);
  EXPECT_GT(MetricValue(text, "fedanon_party_bytes_received_total"), 0);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("policy")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("job-0123456789ab")));
}

// A datagram socket bound to `name` ("/path" or "@abstract"); -1 on failure.
int BindDatagram(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + name.size();
  if (name[0] == '@') {
    addr.sun_path[0] = '\0';
  } else {
    len += 1;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string Receive(int fd) {
  char buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  return n < 0 ? "" : std::string(buf, n);
}

TEST(SdNotify, SendsOneDatagramToAPathOrAnAbstractSocket) {
  TempDir dir;
  const std::string path = dir.path() + "/notify";
  const int fd = BindDatagram(path);
  ASSERT_GE(fd, 0);
  ASSERT_OK(SdNotifyTo(path, "READY=1\nSTATUS=hello"));
  EXPECT_EQ(Receive(fd), "READY=1\nSTATUS=hello");
  ::close(fd);

  const std::string abstract = "@fedanon-sd-notify-test-" + std::to_string(::getpid());
  const int afd = BindDatagram(abstract);
  ASSERT_GE(afd, 0);
  ::setenv("NOTIFY_SOCKET", abstract.c_str(), 1);
  ASSERT_OK(SdNotify("STATUS=abstract"));
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(Receive(afd), "STATUS=abstract");
  ::close(afd);

  EXPECT_OK(SdNotify("READY=1"));  // no NOTIFY_SOCKET: nothing to do
  EXPECT_THAT(SdNotifyTo("relative", "READY=1"), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_FALSE(SdNotifyTo(dir.path() + "/nobody", "READY=1").ok());
}

TEST(PartyStatusFile, RoundTripsPrivateAndReplacesASymlinkInsteadOfFollowingIt) {
  TempDir dir;
  party_daemon::PartyStatus s;
  s.pid = 4242;
  s.name = "hospital-a";
  s.link = party_daemon::PartyLinkState::kDown;
  s.leader = "leader:7443";
  s.since_unix = 100;
  s.updated_unix = 110;
  s.detail = "reconnecting\nin 1s";  // one line in the file
  const std::string victim = dir.path() + "/victim";
  std::ofstream(victim) << "keep me";
  fs::create_symlink(victim, party_daemon::PartyStatusPath(dir.path()));
  EXPECT_THAT(party_daemon::ReadPartyStatus(dir.path()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  ASSERT_OK(party_daemon::WritePartyStatus(dir.path(), s));
  std::ifstream in(victim);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "keep me");
  struct stat st {};
  ASSERT_EQ(::lstat(party_daemon::PartyStatusPath(dir.path()).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK_AND_ASSIGN(const party_daemon::PartyStatus back,
                       party_daemon::ReadPartyStatus(dir.path()));
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.name, "hospital-a");
  EXPECT_EQ(back.link, party_daemon::PartyLinkState::kDown);
  EXPECT_EQ(back.leader, "leader:7443");
  EXPECT_EQ(back.since_unix, 100);
  EXPECT_EQ(back.updated_unix, 110);
  EXPECT_EQ(back.detail.find('\n'), std::string::npos);
  EXPECT_THAT(party_daemon::ParsePartyStatus("pid=1\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(party_daemon::ParsePartyStatus("pid=1\nlink=sideways\nupdated=1\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(party_daemon::ReadPartyStatus(dir.path() + "/none").status(),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST(JobStoreHealth, UnavailableWhileTheDatabaseFileIsGoneOrReplaced) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, leader::JobStore::Open(dir.path()));
  EXPECT_OK(store->CheckAvailable());
  const std::string db = dir.path() + "/jobs.db";
  ASSERT_EQ(std::rename(db.c_str(), (db + ".away").c_str()), 0);
  EXPECT_THAT(store->CheckAvailable(), StatusIs(absl::StatusCode::kUnavailable, ""));
  std::ofstream(db) << "";  // another file under the name
  EXPECT_THAT(store->CheckAvailable(), StatusIs(absl::StatusCode::kUnavailable, ""));
  ASSERT_EQ(std::rename((db + ".away").c_str(), db.c_str()), 0);
  EXPECT_OK(store->CheckAvailable());
}

}  // namespace
}  // namespace fedanon::server
