// The real daemons (fedanon-leader, fedanon-party) as separate processes on loopback, with a kit
// from ProvisionLocal: start, connect, stop on SIGTERM with exit code 0; startup errors exit 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "app/provision.h"
#include "tests/support/test_paths.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;
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

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child process with stderr (and stdout) captured in a file.
class Daemon {
 public:
  // `max_descriptors` > 0: the child's RLIMIT_NOFILE (soft and hard).
  Daemon(const std::string& binary, const std::vector<std::string>& args, fs::path log,
         rlim_t max_descriptors = 0)
      : log_(std::move(log)) {
    pid_ = fork();
    if (pid_ == 0) {
      if (max_descriptors > 0) {
        const rlimit limit{max_descriptors, max_descriptors};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      std::FILE* f = std::fopen(log_.c_str(), "w");
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
      std::vector<char*> argv{const_cast<char*>(binary.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Daemon() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  std::string log() const { return ReadAll(log_); }
  bool WaitForLog(const std::string& text, absl::Duration timeout = absl::Seconds(15)) const {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (log().find(text) != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }
  // The exit code, or -1 if it did not exit within `timeout`.
  int WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return -1;
  }
  void Signal(int sig) { kill(pid_, sig); }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

class DaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leader_bin_ = ::fedanon::testing::BinaryDir() + "/bin/fedanon-leader";
    party_bin_ = ::fedanon::testing::BinaryDir() + "/bin/fedanon-party";
    if (!fs::exists(leader_bin_) || !fs::exists(party_bin_)) {
      GTEST_SKIP() << "build fedanon-leader and fedanon-party first";
    }
    dir_ = fs::temp_directory_path() /
           ("fedanon_daemons_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = FreePort();
    const absl::Status st = app::ProvisionLocal((dir_ / "kit").string(), {"hospital-a"}, port_);
    ASSERT_TRUE(st.ok()) << st;
  }
  void TearDown() override {
    if (std::getenv("FEDANON_KEEP_TEST_DIR") == nullptr) fs::remove_all(dir_);
  }

  std::string LeaderConfig() const { return (dir_ / "kit" / "leader" / "leader.yaml").string(); }
  std::string PartyConfig() const { return (dir_ / "kit" / "hospital-a" / "party.yaml").string(); }

  std::string leader_bin_, party_bin_;
  fs::path dir_;
  int port_ = 0;
};

TEST_F(DaemonsTest, LeaderAndPartyConnectAndStopCleanlyOnSigterm) {
  Daemon leader(leader_bin_, {"--config", LeaderConfig(), "--log-format", "json"},
                dir_ / "leader.log");
  ASSERT_TRUE(leader.WaitForLog("listening on")) << leader.log();
  Daemon party(party_bin_, {"--config", PartyConfig()}, dir_ / "party.log");
  ASSERT_TRUE(leader.WaitForLog("party 'hospital-a' connected")) << leader.log() << party.log();
  ASSERT_TRUE(party.WaitForLog("connected to leader 'leader'")) << party.log();

  party.Signal(SIGTERM);
  EXPECT_EQ(party.WaitForExit(absl::Seconds(5)), 0) << party.log();
  EXPECT_TRUE(leader.WaitForLog("party 'hospital-a' disconnected")) << leader.log();
  leader.Signal(SIGINT);
  EXPECT_EQ(leader.WaitForExit(absl::Seconds(5)), 0) << leader.log();

  std::istringstream lines(leader.log());
  std::string line;
  int json_lines = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == 'E' || line[0] == 'I' || line[0] == 'W') continue;  // gRPC's own
    EXPECT_THAT(line, ::testing::StartsWith("{\"ts\":\"")) << line;
    EXPECT_THAT(line, HasSubstr("\"program\":\"fedanon-leader\""));
    ++json_lines;
  }
  EXPECT_GE(json_lines, 4);
}

TEST_F(DaemonsTest, PartyWaitsForTheLeaderAndConnectsWhenItComesUp) {
  Daemon party(party_bin_, {"--config", PartyConfig()}, dir_ / "party.log");
  ASSERT_TRUE(party.WaitForLog("cannot reach leader at 127.0.0.1:" + std::to_string(port_)))
      << party.log();
  Daemon leader(leader_bin_, {"--config", LeaderConfig()}, dir_ / "leader.log");
  ASSERT_TRUE(leader.WaitForLog("party 'hospital-a' connected", absl::Seconds(20)))
      << leader.log() << party.log();
  leader.Signal(SIGTERM);
  EXPECT_EQ(leader.WaitForExit(absl::Seconds(5)), 0) << leader.log();
  party.Signal(SIGTERM);
  EXPECT_EQ(party.WaitForExit(absl::Seconds(5)), 0) << party.log();
}

// A flood of idle TCP connections beyond the leader's descriptor limit: the leader sheds what it
// cannot hold, and once the flood is gone it accepts and authenticates parties again (gRPC's own
// listener stopped accepting for good after one EMFILE: every later TLS handshake failed).
TEST_F(DaemonsTest, LeaderKeepsAcceptingAfterADescriptorFlood) {
  rlimit own{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &own), 0);
  if (own.rlim_max < 512) GTEST_SKIP() << "this process may not open 400 sockets";
  if (own.rlim_cur < 512) {
    own.rlim_cur = own.rlim_max;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &own), 0);
  }
  Daemon leader(leader_bin_, {"--config", LeaderConfig()}, dir_ / "leader.log",
                /*max_descriptors=*/128);
  ASSERT_TRUE(leader.WaitForLog("listening on")) << leader.log();
  {
    Daemon party(party_bin_, {"--config", PartyConfig()}, dir_ / "party1.log");
    ASSERT_TRUE(leader.WaitForLog("party 'hospital-a' connected")) << leader.log();
    party.Signal(SIGTERM);
    ASSERT_EQ(party.WaitForExit(absl::Seconds(5)), 0) << party.log();
  }
  std::vector<int> flood;
  for (int i = 0; i < 400; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      break;
    }
    flood.push_back(fd);
  }
  EXPECT_GT(flood.size(), 128u);
  EXPECT_TRUE(leader.WaitForLog("connections shed")) << leader.log();
  for (int fd : flood) close(fd);
  // After the flood a party connects, with its mTLS handshake, as before.
  Daemon party(party_bin_, {"--config", PartyConfig()}, dir_ / "party2.log");
  ASSERT_TRUE(party.WaitForLog("connected to leader 'leader'", absl::Seconds(30)))
      << party.log() << leader.log();
  EXPECT_THAT(leader.log(), ::testing::Not(HasSubstr("Failed accept4")));
  party.Signal(SIGTERM);
  EXPECT_EQ(party.WaitForExit(absl::Seconds(5)), 0) << party.log();
  leader.Signal(SIGTERM);
  EXPECT_EQ(leader.WaitForExit(absl::Seconds(5)), 0) << leader.log();
}

TEST_F(DaemonsTest, StartupErrorsExitWithOneAndSayWhy) {
  {
    Daemon leader(leader_bin_, {"--config", LeaderConfig()}, dir_ / "leader.log");
    ASSERT_TRUE(leader.WaitForLog("listening on")) << leader.log();
    Daemon second(leader_bin_, {"--config", LeaderConfig(), "--data-dir", (dir_ / "d2").string()},
                  dir_ / "second.log");
    EXPECT_EQ(second.WaitForExit(absl::Seconds(10)), 1);
    EXPECT_THAT(second.log(), HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port_)));
    leader.Signal(SIGTERM);
    EXPECT_EQ(leader.WaitForExit(absl::Seconds(5)), 0);
  }
  {
    std::ofstream(PartyConfig(), std::ios::app) << "colour: blue\n";
    Daemon party(party_bin_, {"--config", PartyConfig()}, dir_ / "bad.log");
    EXPECT_EQ(party.WaitForExit(absl::Seconds(10)), 1);
    EXPECT_THAT(party.log(), HasSubstr("party.yaml:"));
    EXPECT_THAT(party.log(), HasSubstr("unknown key 'colour'"));
  }
  {
    fs::remove(dir_ / "kit" / "leader" / "tls.crt");
    Daemon leader(leader_bin_, {"--config", LeaderConfig()}, dir_ / "nocert.log");
    EXPECT_EQ(leader.WaitForExit(absl::Seconds(10)), 1);
    EXPECT_THAT(leader.log(), HasSubstr("cannot read TLS certificate"));
  }
  {
    Daemon usage(leader_bin_, {}, dir_ / "usage.log");
    EXPECT_EQ(usage.WaitForExit(absl::Seconds(10)), 2);
    EXPECT_THAT(usage.log(), HasSubstr("--config is required"));
  }
}

}  // namespace
}  // namespace fedanon::server
