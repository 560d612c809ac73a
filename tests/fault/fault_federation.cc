#include "tests/fault/fault_federation.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "app/provision.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool IsFinal(fedanon::v1::JobState s) { return admin::IsFinalState(s); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// ChildProcess

absl::Status ChildProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                 const std::string& log) {
  Kill();
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) return absl::InternalError("cannot open " + log);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // Async-signal-safe calls only. The child dies with the test process, whatever happens.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  pid_ = pid;
  return absl::OkStatus();
}

bool ChildProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ChildProcess::Kill() {
  if (!Running()) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

int ChildProcess::Stop(absl::Duration grace) {
  if (!Running()) return -1;
  ::kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  while (absl::Now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  Kill();
  return 128 + SIGKILL;
}

// ---------------------------------------------------------------------------------------------
// FaultFederation

FaultFederation::FaultFederation(FaultFederationOptions options) : options_(options) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string pattern = (fs::temp_directory_path() /
                         absl::StrCat("fedanon_fault_", info ? info->name() : "x", "_XXXXXX"))
                            .string();
  if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
  for (int i = 0; i < options_.parties; ++i) {
    parties_.push_back("hospital-" + std::string(1, static_cast<char>('a' + i)));
    party_procs_.push_back(std::make_unique<ChildProcess>());
  }
}

FaultFederation::~FaultFederation() {
  admin_.reset();
  for (auto& p : party_procs_) p->Kill();
  leader_.Kill();
  proxies_.clear();
  const bool failed = ::testing::Test::HasFailure();
  if (failed || std::getenv("FEDANON_KEEP_TEST_DIR") != nullptr) {
    std::cout << "[ fault ] kept " << dir_ << " (logs in " << dir_ << "/logs)" << std::endl;
    if (failed) {
      // Every daemon's tail: a party that did not answer is seldom the one a test names.
      std::vector<std::string> names = parties_;
      names.push_back("leader");
      for (const std::string& name : names) {
        std::cout << "---- " << log_of(name) << " (tail)\n";
        const std::string log = Log(name);
        std::cout << log.substr(log.size() > 4000 ? log.size() - 4000 : 0) << std::endl;
      }
    }
  } else if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string FaultFederation::leader_data_dir() const { return dir_ + "/kit/leader/data"; }
std::string FaultFederation::party_dir(int i) const {
  return dir_ + "/kit/" + parties_[static_cast<size_t>(i)];
}
std::string FaultFederation::party_output_dir(int i) const { return party_dir(i) + "/output"; }
std::string FaultFederation::party_data_dir(int i) const { return party_dir(i) + "/data"; }
std::string FaultFederation::admin_config(const std::string& admin) const {
  return dir_ + "/kit/" + admin + "/admin.yaml";
}
std::string FaultFederation::log_of(const std::string& name) const {
  return dir_ + "/logs/" + name + ".log";
}
std::string FaultFederation::Log(const std::string& name) const { return ReadFile(log_of(name)); }

absl::Status FaultFederation::Start() {
  if (dir_.empty()) return absl::InternalError("cannot create the test directory");
  fs::create_directories(dir_ + "/logs");
  fs::create_directories(dir_ + "/capture");
  leader_port_ = FreePort();
  if (options_.admins == std::vector<std::string>{"admin"}) {
    if (absl::Status st = app::ProvisionLocal(dir_ + "/kit", parties_, leader_port_); !st.ok()) {
      return st;
    }
  } else {
    // ProvisionLocal's federation with other admins.
    app::FederationSpec spec;
    spec.federation = "local";
    spec.leader.name = "leader";
    spec.leader.address = absl::StrCat("127.0.0.1:", leader_port_);
    spec.leader.hosts = {"localhost"};
    spec.leader.listen_host = "127.0.0.1";
    spec.parties = parties_;
    spec.admins = options_.admins;
    spec.validity_days = 30;
    if (absl::StatusOr<std::string> kit = app::ProvisionFederation(spec, dir_ + "/kit");
        !kit.ok()) {
      return kit.status();
    }
  }
  if (!options_.leader_yaml_extra.empty()) {
    std::ofstream(dir_ + "/kit/leader/leader.yaml", std::ios::app) << "\n"
                                                                   << options_.leader_yaml_extra;
  }
  const std::string gen = gen_dir();
  const CliResult data =
      RunBinary(BinaryDir() + "/bin/fedanon",
                {"gen-data", "--rows", std::to_string(options_.rows), "--seed",
                 std::to_string(options_.data_seed), "--parties", std::to_string(options_.parties),
                 "--out", gen, "--partition", options_.vertical ? "vertical" : "horizontal"},
                dir_ + "/capture");
  if (data.exit_code != 0) return absl::InternalError("fedanon gen-data failed: " + data.err);
  spec_path_ = gen + "/horizontal.yaml";
  if (options_.vertical || !options_.spec.empty()) {
    std::string spec = options_.spec.empty() ? ReadFile(gen + "/vertical.yaml") : options_.spec;
    if (options_.vertical) {
      // The attributes' owners by this federation's names (gen-data names them party1, ...).
      for (int i = options_.parties; i >= 1; --i) {
        spec = absl::StrReplaceAll(
            spec, {{absl::StrCat("party: party", i),
                    absl::StrCat("party: ", parties_[static_cast<size_t>(i - 1)])}});
      }
    }
    spec_path_ = gen + (options_.spec.empty() ? "/vertical-federation.yaml" : "/fault-job.yaml");
    std::ofstream(spec_path_) << spec;
  }
  if (!options_.spec_suffix.empty()) {
    const std::string spec = ReadFile(spec_path_) + "\n" + options_.spec_suffix;
    spec_path_ = gen + "/fault-job-suffixed.yaml";
    std::ofstream(spec_path_) << spec;
  }
  for (int i = 0; i < options_.parties; ++i) {
    const fs::path data_dir = party_data_dir(i);
    fs::create_directories(data_dir / "tax");
    fs::copy_file(gen + "/party" + std::to_string(i + 1) + ".csv", data_dir / "table.csv",
                  fs::copy_options::overwrite_existing);
    fs::copy(gen + "/tax", data_dir / "tax",
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
  if (options_.before_daemons) {
    if (absl::Status st = options_.before_daemons(*this); !st.ok()) return st;
  }
  if (absl::Status st = StartLeader(); !st.ok()) return st;
  for (int i = 0; i < options_.parties; ++i) {
    proxies_.push_back(std::make_unique<TcpProxy>(leader_port_));
    if (proxies_.back()->port() == 0) return absl::InternalError("proxy: cannot listen");
    if (options_.external.contains(i)) continue;
    if (absl::Status st = StartParty(i, options_.direct); !st.ok()) return st;
  }
  std::vector<std::string> daemons;
  for (int i = 0; i < options_.parties; ++i) {
    if (!options_.external.contains(i)) daemons.push_back(parties_[static_cast<size_t>(i)]);
  }
  if (!WaitForParties(daemons)) {
    return absl::DeadlineExceededError("not every party connected within 30 s");
  }
  return absl::OkStatus();
}

absl::Status FaultFederation::StartLeader() {
  // The same data dir across restarts: the job store survives, as on a real host.
  return leader_.Start(
      BinaryDir() + "/bin/fedanon-leader",
      {"--config", dir_ + "/kit/leader/leader.yaml", "--data-dir", leader_data_dir()},
      log_of("leader"));
}

absl::Status FaultFederation::StartParty(int i, bool direct) {
  // Through its proxy: the leader's certificate names 127.0.0.1, whatever the port.
  return party_procs_[static_cast<size_t>(i)]->Start(
      BinaryDir() + "/bin/fedanon-party",
      {"--config", party_dir(i) + "/party.yaml", "--leader",
       direct ? "127.0.0.1:" + std::to_string(leader_port_) : proxy(i).address()},
      log_of(parties_[static_cast<size_t>(i)]));
}

void FaultFederation::ResetAdmin() { admin_.reset(); }

namespace {
absl::StatusOr<admin::AdminClient*> Admin(const std::string& admin_yaml,
                                          std::unique_ptr<admin::AdminClient>* admin) {
  if (*admin == nullptr) {
    absl::StatusOr<std::unique_ptr<admin::AdminClient>> client =
        admin::AdminClient::FromConfig(admin_yaml);
    if (!client.ok()) return client.status();
    *admin = *std::move(client);
  }
  return admin->get();
}
}  // namespace

bool FaultFederation::WaitForParties(const std::vector<std::string>& names,
                                     absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
    if (admin.ok()) {
      auto listed = (*admin)->ListParties();
      if (listed.ok()) {
        size_t found = 0;
        for (const std::string& n : names) {
          for (const auto& p : *listed) found += p.name() == n ? 1 : 0;
        }
        if (found == names.size()) return true;
      } else {
        admin_.reset();  // a fresh channel retries at once
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

bool FaultFederation::WaitForPartyGone(const std::string& name, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
    if (admin.ok()) {
      auto listed = (*admin)->ListParties();
      if (listed.ok()) {
        bool present = false;
        for (const auto& p : *listed) present |= p.name() == name;
        if (!present) return true;
      } else {
        admin_.reset();
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

absl::StatusOr<std::string> FaultFederation::Submit(const std::vector<std::string>& ring,
                                                    uint32_t round_timeout_seconds,
                                                    const std::string& recipient,
                                                    const std::string& spec_path) {
  absl::StatusOr<fedanon::v1::SubmitJobRequest> request =
      admin::LoadSubmitRequest(spec_path.empty() ? spec_path_ : spec_path);
  if (!request.ok()) return request.status();
  for (const std::string& p : ring.empty() ? parties_ : ring) request->add_parties(p);
  request->set_round_timeout_seconds(round_timeout_seconds);
  request->set_recipient(recipient);
  absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
  if (!admin.ok()) return admin.status();
  if (absl::Status st = (*admin)->AuthorizeJob(&*request); !st.ok()) return st;
  absl::StatusOr<fedanon::v1::JobInfo> job = (*admin)->SubmitJob(*request);
  if (!job.ok()) return job.status();
  return job->job_id();
}

absl::StatusOr<fedanon::v1::JobInfo> FaultFederation::Cancel(const std::string& job_id,
                                                             const std::string& reason) {
  absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
  if (!admin.ok()) return admin.status();
  absl::StatusOr<fedanon::v1::JobInfo> info = (*admin)->CancelJob(job_id, reason);
  if (!info.ok() && info.status().code() == absl::StatusCode::kUnavailable) admin_.reset();
  return info;
}

absl::StatusOr<fedanon::v1::JobInfo> FaultFederation::Get(const std::string& job_id) {
  absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
  if (!admin.ok()) return admin.status();
  absl::StatusOr<fedanon::v1::JobInfo> info = (*admin)->GetJob(job_id);
  if (!info.ok() && info.status().code() == absl::StatusCode::kUnavailable) admin_.reset();
  return info;
}

absl::StatusOr<fedanon::v1::JobInfo> FaultFederation::WaitForEnd(const std::string& job_id,
                                                                 absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<fedanon::v1::JobInfo> info = absl::UnknownError("not asked yet");
  while (absl::Now() < deadline) {
    info = Get(job_id);
    if (info.ok() && IsFinal(info->state())) return info;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(job_id, " did not end within ", absl::FormatDuration(timeout),
                   "; last: ", info.ok() ? info->ShortDebugString() : info.status().ToString()));
}

absl::StatusOr<fedanon::v1::JobInfo> FaultFederation::WaitForRound(const std::string& job_id,
                                                                   uint32_t round,
                                                                   absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<fedanon::v1::JobInfo> info = absl::UnknownError("not asked yet");
  while (absl::Now() < deadline) {
    info = Get(job_id);
    if (info.ok() && (IsFinal(info->state()) || (info->state() == fedanon::v1::JOB_STATE_RUNNING &&
                                                 info->round() >= round))) {
      return info;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      job_id, " did not reach round ", round, " within ", absl::FormatDuration(timeout),
      "; last: ", info.ok() ? info->ShortDebugString() : info.status().ToString()));
}

absl::StatusOr<std::string> FaultFederation::Result(const std::string& job_id) {
  absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
  if (!admin.ok()) return admin.status();
  std::string csv;
  absl::StatusOr<uint64_t> bytes = (*admin)->GetResult(job_id, [&csv](std::string_view data) {
    csv.append(data);
    return absl::OkStatus();
  });
  if (!bytes.ok()) return bytes.status();
  return csv;
}

absl::Status FaultFederation::Health() {
  absl::StatusOr<admin::AdminClient*> admin = Admin(OwnAdminYaml(), &admin_);
  if (!admin.ok()) return admin.status();
  absl::Status st = (*admin)->CheckHealth("");
  if (!st.ok()) admin_.reset();
  return st;
}

void FaultFederation::ExpectNothingReleased(const std::string& job_id) {
  EXPECT_FALSE(fs::exists(leader_data_dir() + "/results/" + job_id + ".csv"))
      << "the leader stored a result for the failed job " << job_id;
  absl::StatusOr<std::string> result = Result(job_id);
  EXPECT_FALSE(result.ok()) << "GetResult served " << result->size() << " bytes for " << job_id;
  std::vector<std::string> dirs = {leader_data_dir(), leader_data_dir() + "/results"};
  for (int i = 0; i < options_.parties; ++i) {
    dirs.push_back(party_output_dir(i));
    EXPECT_FALSE(fs::exists(party_output_dir(i) + "/" + job_id + ".csv"))
        << parties_[static_cast<size_t>(i)] << " received a table of the failed job " << job_id;
  }
  // Temporary files of atomic writes: a table's (`job-….csv.tmp.XXXXXX`) must never be there; a
  // ledger being rewritten this instant (`runs.ledger.tmp.XXXXXX`, the party closing a run) may
  // be, but must be gone a moment later.
  const auto temporary_files = [&dirs] {
    std::vector<fs::path> found;
    for (const std::string& d : dirs) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(d, ec)) {
        if (absl::StrContains(entry.path().filename().string(), ".tmp.")) {
          found.push_back(entry.path());
        }
      }
    }
    return found;
  };
  std::vector<fs::path> temporary = temporary_files();
  for (const fs::path& p : temporary) {
    EXPECT_FALSE(absl::StartsWith(p.filename().string(), "job-")) << "partial table " << p;
  }
  if (!temporary.empty()) {
    absl::SleepFor(absl::Milliseconds(500));
    for (const fs::path& p : temporary_files()) {
      EXPECT_FALSE(std::find(temporary.begin(), temporary.end(), p) != temporary.end())
          << "temporary file left behind " << p;
    }
  }
}

std::vector<std::string> FaultFederation::AuditKinds(int i, const std::string& job_id) const {
  std::vector<std::string> kinds;
  std::ifstream in(party_output_dir(i) + "/" + job_id + ".audit.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    kinds.push_back(j.is_object() ? j.value("kind", "?") : "<unparsable>");
  }
  return kinds;
}

std::string FaultFederation::AuditEnd(int i, const std::string& job_id) const {
  std::string end;
  std::ifstream in(party_output_dir(i) + "/" + job_id + ".audit.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.value("kind", "") == "job-end") {
      end = absl::StrCat("success=", j.value("success", "?"), " reason=", j.value("reason", "?"));
    }
  }
  return end;
}

void PrintFigures(const std::string& line) { std::cout << "[ fault ] " << line << std::endl; }

uint64_t FaultSeed() {
  if (const char* env = std::getenv("FEDANON_FAULT_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 10);
  }
  return std::random_device{}() % 1000000;
}

double PeakRssMiB(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  double kb = 0;
  while (std::getline(status, line)) {
    if (std::sscanf(line.c_str(), "VmHWM: %lf kB", &kb) == 1) return kb / 1024;
  }
  return 0;
}

}  // namespace fedanon::testing
