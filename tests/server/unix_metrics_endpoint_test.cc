// Operations settings of issue #28 beyond the first metrics: a party's metrics and health on a
// unix socket (server/runtime/unix_metrics_endpoint.h, party.yaml `metrics_listen: unix:...`), the
// leader's `retention` and `tls_reload_seconds` keys, and the leader's scrape-time job gauges
// computed from the job store's count by state over many jobs.
#include "server/runtime/unix_metrics_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/time/clock.h"
#include "leader/job_store.h"
#include "server/leader/leader_metrics.h"
#include "server/party/party_metrics.h"
#include "server/runtime/config.h"
#include "tests/support/config_dir.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::server {
namespace {

using ::fedanon::testing::ConfigDir;
using ::fedanon::testing::MetricValue;
using ::fedanon::testing::StatusIs;
using ::fedanon::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// One HTTP request over the unix socket at `path`; the whole response ("" if it cannot connect).
std::string UnixHttp(const std::string& path, const std::string& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  (void)!::write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
  ::close(fd);
  return response;
}

std::string Get(const std::string& path, const std::string& target) {
  return UnixHttp(path, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

TEST(UnixMetricsEndpoint, ServesMetricsAndHealthOnASocketOfMode0660) {
  TempDir dir("unix_metrics");
  const std::string path = dir.File("party-metrics.sock");
  MetricsRegistry registry;
  party_daemon::PartyMetrics metrics(&registry);
  metrics.LinkUp("leader");
  fedanon::v1::LeaderMessage request;
  request.mutable_ping();
  fedanon::v1::PartyMessage reply;
  reply.mutable_pong();
  metrics.Answered(request, reply);
  std::atomic<bool> linked{true};
  ASSERT_OK_AND_ASSIGN(auto endpoint, UnixMetricsEndpoint::Start(path, registry, [&linked] {
                         return std::make_pair(linked.load(),
                                               std::string(linked ? "linked" : "not linked"));
                       }));
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);

  const std::string scrape = Get(path, "/metrics");
  EXPECT_THAT(scrape, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(scrape, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  const std::string body = Body(scrape);
  EXPECT_EQ(body, registry.Text());
  EXPECT_EQ(MetricValue(body, "fedanon_party_link_up"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_party_requests_answered_total{kind=\"ping\"}"), 1) << body;

  EXPECT_THAT(Get(path, "/health"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_EQ(Body(Get(path, "/health")), "linked\n");
  linked = false;
  EXPECT_THAT(Get(path, "/health"), StartsWith("HTTP/1.1 503 Service Unavailable"));
  EXPECT_EQ(Body(Get(path, "/health")), "not linked\n");
  EXPECT_THAT(Get(path, "/live"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(Get(path, "/metrics?x=1"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(Get(path, "/other"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(UnixHttp(path, "POST /metrics HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(UnixHttp(path, "garbage\r\n\r\n"), StartsWith("HTTP/1.1 400"));

  // A second daemon on the same socket is refused; after the first stops, the file is gone.
  EXPECT_THAT(UnixMetricsEndpoint::Start(path, registry, nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition, "served by another process"));
  endpoint.reset();
  EXPECT_NE(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(Get(path, "/metrics"), "");
}

TEST(UnixMetricsEndpoint, ReplacesAStaleSocketButNoOtherFile) {
  TempDir dir("unix_metrics");
  const std::string path = dir.File("m.sock");
  MetricsRegistry registry;
  {
    // A socket file left by a daemon that was killed: bound, nobody listening.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  ASSERT_OK_AND_ASSIGN(auto endpoint, UnixMetricsEndpoint::Start(path, registry, nullptr));
  EXPECT_THAT(Get(path, "/live"), StartsWith("HTTP/1.1 200 OK"));
  endpoint.reset();
  const std::string regular = dir.File("not-a-socket");
  std::ofstream(regular) << "data";
  EXPECT_THAT(UnixMetricsEndpoint::Start(regular, registry, nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition, "is not a socket"));
  EXPECT_THAT(UnixMetricsEndpoint::Start("relative.sock", registry, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, "absolute path"));
}

TEST(UnixMetricsEndpoint, PartyConfigTakesAUnixSocketButStillNoNetworkAddress) {
  ConfigDir dir("unix_metrics_config");
  ASSERT_OK_AND_ASSIGN(PartyConfig absolute,
                       LoadPartyConfig(dir.Party(
                           "a.yaml", "metrics_listen: unix:/run/fedanon/party-metrics.sock\n")));
  EXPECT_EQ(absolute.metrics_listen, "unix:/run/fedanon/party-metrics.sock");
  EXPECT_EQ(UnixSocketPath(absolute.metrics_listen), "/run/fedanon/party-metrics.sock");
  ASSERT_OK_AND_ASSIGN(PartyConfig relative,
                       LoadPartyConfig(dir.Party("r.yaml", "metrics_listen: unix:m.sock\n")));
  EXPECT_EQ(relative.metrics_listen, "unix:" + dir.File("m.sock"));
  EXPECT_EQ(UnixSocketPath("127.0.0.1:9"), "");
  EXPECT_THAT(LoadPartyConfig(dir.Party("e.yaml", "metrics_listen: 'unix:'\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "needs a socket path"));
  EXPECT_THAT(LoadPartyConfig(dir.Party("n.yaml", "metrics_listen: 0.0.0.0:9\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "not a loopback address"));
  // The leader's metrics stay TCP (loopback unless opted out).
  EXPECT_THAT(LoadLeaderConfig(dir.Leader("l.yaml", "metrics_listen: unix:/x.sock\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "metrics_listen"));
}

TEST(LeaderConfigOperations, RetentionAndTlsReload) {
  ConfigDir dir("ops_config");
  ASSERT_OK_AND_ASSIGN(LeaderConfig off, LoadLeaderConfig(dir.Leader("off.yaml")));
  EXPECT_EQ(off.retention_seconds, 0);  // off unless set
  EXPECT_EQ(off.tls_reload_seconds, 60);
  ASSERT_OK_AND_ASSIGN(LeaderConfig on, LoadLeaderConfig(dir.Leader(
                                            "on.yaml", "retention: 30d\ntls_reload_seconds: 0\n")));
  EXPECT_EQ(on.retention_seconds, 30 * 86400);
  EXPECT_EQ(on.tls_reload_seconds, 0);
  EXPECT_EQ(*ParseRetentionPeriod("90m", "r"), 5400);
  EXPECT_EQ(*ParseRetentionPeriod("12h", "r"), 12 * 3600);
  EXPECT_EQ(*ParseRetentionPeriod("2w", "r"), 14 * 86400);
  EXPECT_EQ(*ParseRetentionPeriod("45s", "r"), 45);
  for (const char* bad : {"30", "d", "0d", "-1d", "30x", "1.5d", "99999999999d"}) {
    EXPECT_THAT(ParseRetentionPeriod(bad, "key 'retention'"),
                StatusIs(absl::StatusCode::kInvalidArgument, "key 'retention' must be"))
        << bad;
  }
  EXPECT_THAT(LoadLeaderConfig(dir.Leader("bad.yaml", "retention: 30 days\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "bad.yaml:6:12: key 'retention'"));
  EXPECT_THAT(LoadLeaderConfig(dir.Leader("bad2.yaml", "tls_reload_seconds: -1\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "tls_reload_seconds"));
}

TEST(LeaderMetricsScrape, JobGaugesComeFromTheStoresCountByState) {
  TempDir dir("leader_scrape");
  ASSERT_OK_AND_ASSIGN(auto store, leader::JobStore::Open(dir.File("data")));
  fedanon::v1::SubmitJobRequest request;
  request.mutable_spec()->set_name("many");
  request.add_parties("a");
  constexpr int kFinished = 1200;
  for (int i = 0; i < kFinished; ++i) {
    ASSERT_OK_AND_ASSIGN(const std::string id, store->Create(request, "admin/alice"));
    ASSERT_OK(store->SetState(id, i % 3 == 0   ? fedanon::v1::JOB_STATE_FAILED
                                  : i % 3 == 1 ? fedanon::v1::JOB_STATE_DONE
                                               : fedanon::v1::JOB_STATE_CANCELLED));
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(const std::string id, store->Create(request, "admin/alice"));
    ASSERT_OK(store->SetState(id, fedanon::v1::JOB_STATE_RUNNING));
  }
  for (int i = 0; i < 5; ++i) ASSERT_OK(store->Create(request, "admin/alice").status());
  MetricsRegistry registry;
  leader_daemon::LeaderMetrics metrics(&registry,
                                       {.job_counts = [&store] { return store->CountByState(); },
                                        .queued_jobs = [] { return 5; },
                                        .connected_parties = [] { return size_t{3}; }});
  const std::string text = registry.Text();
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"failed\"}"), kFinished / 3) << text;
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"done\"}"), kFinished / 3);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"cancelled\"}"), kFinished / 3);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"running\"}"), 4);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"validating\"}"), 0);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_jobs{state=\"submitted\"}"), 5);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_queued_jobs"), 5);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_job_store_up"), 1);
  EXPECT_EQ(MetricValue(text, "fedanon_leader_connected_parties"), 3);
  // 100 scrapes over the 1209 jobs: each is one GROUP BY query, not a read of every job.
  const absl::Time start = absl::Now();
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(registry.Text().empty());
  const absl::Duration per_scrape = (absl::Now() - start) / 100;
  std::printf("[ metrics ] scrape over %d jobs: %.2f ms\n", kFinished + 9,
              absl::ToDoubleMilliseconds(per_scrape));

  // A store that fails: store up 0, no job gauges, the queue still told.
  MetricsRegistry broken_registry;
  leader_daemon::LeaderMetrics broken(
      &broken_registry,
      {.job_counts = []() -> absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>> {
         return absl::UnavailableError("gone");
       },
       .queued_jobs = [] { return 2; },
       .connected_parties = {}});
  const std::string broken_text = broken_registry.Text();
  EXPECT_EQ(MetricValue(broken_text, "fedanon_leader_job_store_up"), 0);
  EXPECT_EQ(MetricValue(broken_text, "fedanon_leader_queued_jobs"), 2);
  EXPECT_THAT(broken_text, ::testing::Not(HasSubstr("fedanon_leader_jobs{")));
}

}  // namespace
}  // namespace fedanon::server
