// Health and readiness of the real daemons (separate processes on loopback, a kit from
// ProvisionLocal): a party tells systemd READY=1 (to a test NOTIFY_SOCKET) before any leader
// exists, reports its link in STATUS= and in party.status, which `fedanon party status` judges
// (exit 3 running but unlinked, 0 linked, 1 stopped); its metrics are served on loopback; and
// the leader's health turns NOT_SERVING while its job store is gone, SERVING again once back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "app/provision.h"
#include "tests/support/http_get.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::HttpGet;
using ::fedanon::testing::MetricValue;
using ::fedanon::testing::RunBinary;
using ::testing::HasSubstr;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A daemon as a child process, its output in a file, with extra environment variables.
class Child {
 public:
  Child(const std::string& binary, const std::vector<std::string>& args, const fs::path& log,
        const std::vector<std::string>& env = {})
      : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::FILE* f = std::fopen(log.c_str(), "w");
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
      std::vector<char*> argv{const_cast<char*>(binary.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string log() const { return fedanon::testing::ReadAll(log_.string()); }
  bool WaitForLog(const std::string& text, absl::Duration timeout = absl::Seconds(15)) const {
    for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
      if (log().find(text) != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }
  int Stop() {
    kill(pid_, SIGTERM);
    return WaitForExit(absl::Seconds(10));
  }
  // The exit code, or -1 if it did not exit within `timeout`.
  int WaitForExit(absl::Duration timeout) {
    for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return -1;
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

class ObservabilityDaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = fedanon::testing::BinaryDir() + "/bin/";
    for (const char* b : {"fedanon-leader", "fedanon-party", "fedanon", "fedanonctl"}) {
      if (!fs::exists(bin_ + b)) GTEST_SKIP() << "build " << b << " first";
    }
    dir_ = fs::temp_directory_path() /
           ("fedanon_obs_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    port_ = FreePort();
    const absl::Status st = app::ProvisionLocal((dir_ / "kit").string(), {"hospital-a"}, port_);
    ASSERT_TRUE(st.ok()) << st;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Kit(const std::string& rest) const { return (dir_ / "kit" / rest).string(); }
  void Append(const std::string& file, const std::string& text) const {
    std::ofstream(Kit(file), std::ios::app) << text;
  }
  // `fedanon party status --config party.yaml ARGS...`
  fedanon::testing::CliResult PartyStatus(std::vector<std::string> args = {}) const {
    args.insert(args.begin(), {"party", "status", "--config", Kit("hospital-a/party.yaml")});
    return RunBinary(bin_ + "fedanon", args, (dir_ / "run").string());
  }
  fedanon::testing::CliResult Health() const {
    return RunBinary(
        bin_ + "fedanonctl",
        {"health", "--bundle", Kit("leader"), "--leader", "127.0.0.1:" + std::to_string(port_)},
        (dir_ / "run").string());
  }

  std::string bin_;
  fs::path dir_;
  int port_ = 0;
};

// Waits for a datagram containing `text` on `fd`; returns everything received meanwhile.
std::string AwaitDatagram(int fd, const std::string& text, absl::Duration timeout) {
  std::string all;
  for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      all += std::string(buf, n) + "\n--\n";
      if (all.find(text) != std::string::npos) return all;
    } else {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  return all;
}

TEST_F(ObservabilityDaemonsTest, PartyIsReadyWithoutALeaderAndReportsItsLink) {
  const int metrics_port = FreePort();
  Append("hospital-a/party.yaml",
         "metrics_listen: 127.0.0.1:" + std::to_string(metrics_port) + "\n");
  const std::string socket_path = (dir_ / "notify").string();
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  // No leader anywhere: the party is ready all the same, and says it is not linked.
  Child party(bin_ + "fedanon-party", {"--config", Kit("hospital-a/party.yaml")},
              dir_ / "party.log", {"NOTIFY_SOCKET=" + socket_path});
  const std::string ready = AwaitDatagram(fd, "READY=1", absl::Seconds(15));
  ASSERT_THAT(ready, HasSubstr("READY=1")) << party.log();
  EXPECT_THAT(AwaitDatagram(fd, "STATUS=reconnecting", absl::Seconds(15)),
              HasSubstr("STATUS=reconnecting to the leader at 127.0.0.1:" + std::to_string(port_)));
  fedanon::testing::CliResult status = PartyStatus();
  EXPECT_EQ(status.exit_code, 3) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("running, not linked: party 'hospital-a'"));
  EXPECT_EQ(PartyStatus({"--allow-unlinked"}).exit_code, 0);
  std::string scrape = HttpGet(metrics_port, "/metrics");
  EXPECT_EQ(MetricValue(scrape, "fedanon_party_link_up"), 0) << scrape;

  // The leader comes up: linked.
  Child leader(bin_ + "fedanon-leader", {"--config", Kit("leader/leader.yaml")},
               dir_ / "leader.log");
  EXPECT_THAT(AwaitDatagram(fd, "STATUS=connected", absl::Seconds(40)),
              HasSubstr("STATUS=connected to leader 'leader'"))
      << party.log();
  status = PartyStatus();
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_THAT(status.out, HasSubstr("linked: party 'hospital-a'"));
  scrape = HttpGet(metrics_port, "/metrics");
  EXPECT_EQ(MetricValue(scrape, "fedanon_party_link_up"), 1) << scrape;
  EXPECT_EQ(MetricValue(scrape, "fedanon_party_link_sessions_total"), 1) << scrape;

  EXPECT_EQ(party.Stop(), 0) << party.log();
  EXPECT_THAT(AwaitDatagram(fd, "STOPPING=1", absl::Seconds(5)), HasSubstr("STOPPING=1"));
  status = PartyStatus();
  EXPECT_EQ(status.exit_code, 1) << status.out;
  EXPECT_THAT(status.out, HasSubstr("not running"));
  EXPECT_EQ(leader.Stop(), 0) << leader.log();
  close(fd);
}

TEST_F(ObservabilityDaemonsTest, PartyRefusesANonLoopbackMetricsAddress) {
  Append("hospital-a/party.yaml", "metrics_listen: 0.0.0.0:9464\n");
  Child party(bin_ + "fedanon-party", {"--config", Kit("hospital-a/party.yaml")},
              dir_ / "party.log");
  EXPECT_EQ(party.WaitForExit(absl::Seconds(10)), 1);
  EXPECT_THAT(party.log(), HasSubstr("'0.0.0.0:9464' is not a loopback address"));
  const fedanon::testing::CliResult status = PartyStatus();
  EXPECT_EQ(status.exit_code, 1);  // also a config error for the status command
}

TEST_F(ObservabilityDaemonsTest, LeaderHealthIsNotServingWhileItsJobStoreIsGone) {
  const int metrics_port = FreePort();
  Append("leader/leader.yaml", "metrics_listen: 127.0.0.1:" + std::to_string(metrics_port) + "\n");
  Child leader(bin_ + "fedanon-leader", {"--config", Kit("leader/leader.yaml")},
               dir_ / "leader.log");
  ASSERT_TRUE(leader.WaitForLog("ready")) << leader.log();
  fedanon::testing::CliResult health = Health();
  ASSERT_EQ(health.exit_code, 0) << health.out << health.err;
  EXPECT_EQ(MetricValue(HttpGet(metrics_port, "/metrics"), "fedanon_leader_job_store_up"), 1);

  // The job store's file disappears (a lost volume): within a check interval (5 s) the leader
  // reports NOT_SERVING.
  const std::string db = Kit("leader/data/jobs.db");
  ASSERT_TRUE(fs::exists(db)) << db;
  fs::rename(db, db + ".away");
  ASSERT_TRUE(leader.WaitForLog("job store unavailable", absl::Seconds(15))) << leader.log();
  health = Health();
  EXPECT_EQ(health.exit_code, 1);
  EXPECT_THAT(health.err, HasSubstr("NOT_SERVING"));
  EXPECT_EQ(MetricValue(HttpGet(metrics_port, "/metrics"), "fedanon_leader_job_store_up"), 0);

  fs::rename(db + ".away", db);
  ASSERT_TRUE(leader.WaitForLog("job store available again", absl::Seconds(15))) << leader.log();
  health = Health();
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_EQ(leader.Stop(), 0) << leader.log();
}

}  // namespace
}  // namespace fedanon::server
