#include "cli/federation_up.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "app/job_assessment.h"
#include "app/provision.h"
#include "app/table_risk.h"
#include "cli/risk_command.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/hierarchies/hierarchy_builder.h"
#include "common/html_report/view_log_summary.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"
#include "crypto/certificates.h"
#include "server/admin/admin_client.h"
#include "server/runtime/command_line.h"
#include "server/runtime/signals.h"

namespace fedanon::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kCommand[] = "federation up";
constexpr char kPrefix[] = "federation up: ";
constexpr absl::Duration kConnectWait = absl::Seconds(30);
constexpr absl::Duration kStopGrace = absl::Seconds(5);
constexpr absl::Duration kPoll = absl::Milliseconds(100);

struct Options {
  std::vector<std::string> party_data;
  std::string spec;
  int port = 0;
  bool wait = false;
  std::string result;
  std::string report;
  std::string leader_view;
  std::string html;  // the job's page (app/job_assessment.h)
  bool keep = false;
  std::string dir;
  uint32_t round_timeout = 0;  // seconds a party may take per request; 0: the leader's default
};

// ---------------------------------------------------------------------------------------------
// Termination signals: SIGINT / SIGTERM are blocked in every thread (server/runtime/signals.h);
// one detached thread collects them, records the first and runs a hook (which interrupts a
// blocking watch).

class SignalWatcher {
 public:
  static SignalWatcher& Start() {
    static SignalWatcher* watcher = [] {
      auto* w = new SignalWatcher();
      std::thread([w] {
        while (true) {
          const int sig = server::WaitForTerminationSignal();
          int expected = 0;
          signal_.compare_exchange_strong(expected, sig);
          // Run under the lock, so that SetHook(nullptr) returns only once no hook is running.
          absl::MutexLock lock(&w->mu_);
          if (w->hook_) w->hook_();
        }
      }).detach();
      return w;
    }();
    return *watcher;
  }

  int signal() const { return signal_.load(); }

  void SetHook(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }

 private:
  static inline std::atomic<int> signal_{0};
  absl::Mutex mu_;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------------------------
// Child processes

struct Child {
  std::string name;  // "leader" or the party's name
  std::string log_path;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;
};

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wait_status), " (",
                        ::strsignal(WTERMSIG(wait_status)), ")");
  }
  return "ended";
}

// Starts `binary args...` with stdin from /dev/null and stdout + stderr appended to the log, in
// its own process group (a terminal's Ctrl-C reaches only us; we stop the children in order),
// with SIGTERM delivered to it should this process die.
absl::Status Spawn(Child* child, const std::string& binary, const std::vector<std::string>& args) {
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(storage.size() + 1);
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string exec_error = absl::StrCat("federation up: cannot execute ", binary, "\n");

  const int log_fd =
      ::open(child->log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return base::ErrnoStatus(errno, absl::StrCat("cannot create ", child->log_path));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    ::close(log_fd);
    return base::ErrnoStatus(errno, "cannot open /dev/null");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    ::close(null_fd);
    return base::ErrnoStatus(errno, absl::StrCat("cannot start ", child->name));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    (void)!::write(STDERR_FILENO, exec_error.data(), exec_error.size());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  child->pid = pid;
  child->running = true;
  return absl::OkStatus();
}

// Reaps the child if it has exited; true when it is still running.
bool StillRunning(Child* child) {
  if (!child->running) return false;
  int status = 0;
  const pid_t r = ::waitpid(child->pid, &status, WNOHANG);
  if (r == child->pid || (r < 0 && errno == ECHILD)) {
    child->running = false;
    child->wait_status = status;
  }
  return child->running;
}

// The last `lines` lines of a log file, each indented.
std::string LogTail(const std::string& path, size_t lines = 15) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) absl::StrAppend(&out, "    | ", l, "\n");
  if (out.empty()) out = "    | (empty)\n";
  return out;
}

absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot create a socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    absl::Status st = base::ErrnoStatus(errno, "cannot find a free port on 127.0.0.1");
    ::close(fd);
    return st;
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

// `name` next to the running executable, else in PATH.
absl::StatusOr<std::string> FindBinary(const std::string& name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path candidate = self.parent_path() / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  const char* path_env = std::getenv("PATH");
  if (path_env != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path_env, ':', absl::SkipEmpty())) {
      const fs::path candidate = fs::path(std::string(dir)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return absl::NotFoundError(absl::StrCat("cannot find ", name, " next to ",
                                          ec ? "this program" : self.parent_path().string(),
                                          " or in PATH"));
}

// Party names from the file names when they are valid, unique and not taken by the leader or
// the admin; hospital-1..N otherwise.
std::vector<std::string> PartyNames(const std::vector<std::string>& files) {
  std::vector<std::string> names;
  std::set<std::string> seen = {"leader", "admin", "ca", "logs", "readme.txt"};
  for (const std::string& f : files) {
    const std::string stem = fs::path(f).stem().string();
    if (!crypto::ValidateParticipantName(stem).ok() ||
        !seen.insert(absl::AsciiStrToLower(stem)).second) {
      names.clear();
      break;
    }
    names.push_back(stem);
  }
  if (names.size() == files.size()) return names;
  names.clear();
  for (size_t i = 0; i < files.size(); ++i) names.push_back(absl::StrCat("hospital-", i + 1));
  return names;
}

// ---------------------------------------------------------------------------------------------

class FederationUp {
 public:
  explicit FederationUp(Options options)
      : o_(std::move(options)), signals_(SignalWatcher::Start()) {}

  int Run() {
    const int code = RunInner();
    StopChildren();
    Cleanup();
    return code;
  }

 private:
  // "federation up: <why>" on stderr; returns exit code 1.
  int Fail(const absl::Status& status) { return server::ExitCode(status, kCommand); }
  int Fail(const std::string& message) { return Fail(absl::UnknownError(message)); }
  int Interrupted() {
    const int sig = signals_.signal();
    std::cerr << kPrefix << "interrupted by " << ::strsignal(sig) << "\n";
    return 128 + sig;
  }

  int RunInner() {
    if (int code = CheckInputs(); code != 0) return code;
    names_ = PartyNames(o_.party_data);

    int port = o_.port;
    if (port == 0) {
      absl::StatusOr<int> free = FreeLoopbackPort();
      if (!free.ok()) return Fail(free.status());
      port = *free;
    }
    address_ = absl::StrCat("127.0.0.1:", port);

    absl::StatusOr<std::string> leader_bin = FindBinary("fedanon-leader");
    if (!leader_bin.ok()) return Fail(leader_bin.status());
    absl::StatusOr<std::string> party_bin = FindBinary("fedanon-party");
    if (!party_bin.ok()) return Fail(party_bin.status());

    if (int code = Provision(port); code != 0) return code;
    if (int code = CopyData(); code != 0) return code;
    if (int code = StartChildren(*leader_bin, *party_bin); code != 0) return code;

    if (int code = WaitForParties(); code != 0) return code;
    std::cerr << kPrefix << "federation is up: leader " << address_ << ", parties "
              << absl::StrJoin(names_, ", ") << "\n";

    if (o_.spec.empty()) {
      std::cerr << "Administer it with fedanonctl, e.g.:\n"
                << "  fedanonctl --config " << AdminConfig() << " parties\n"
                << "  fedanonctl --config " << AdminConfig() << " submit JOB.yaml\n"
                << "  fedanonctl --config " << AdminConfig() << " watch JOB_ID\n"
                << "  fedanonctl --config " << AdminConfig() << " result JOB_ID -o out.csv\n"
                << "(taxonomies named in a job spec must be in each party's data/ directory)\n"
                << "Press Ctrl-C (or send SIGTERM) to stop the federation.\n";
      return StayUp();
    }
    return SubmitAndFollow();
  }

  // The tables exist and, with --spec, the spec loads and its taxonomies can be copied.
  int CheckInputs() {
    if (o_.party_data.size() < 2) {
      return Fail("a federation needs at least 2 tables in --party-data (one per party)");
    }
    for (const std::string& f : o_.party_data) {
      std::error_code ec;
      if (!fs::is_regular_file(f, ec)) return Fail(absl::StrCat("cannot read table '", f, "'"));
    }
    // The outputs never replace a table, the spec or a taxonomy, nor each other.
    std::vector<base::NamedPath> inputs = {{"--spec", o_.spec}};
    for (const std::string& f : o_.party_data) inputs.emplace_back("a --party-data table", f);
    const std::vector<base::NamedPath> outputs = {{"--result", o_.result},
                                                  {"--report", o_.report},
                                                  {"--leader-view", o_.leader_view},
                                                  {"--html", o_.html}};
    if (absl::Status st = base::CheckDistinctOutputs(outputs, inputs); !st.ok()) return Fail(st);
    if (o_.spec.empty()) return 0;
    absl::StatusOr<fedanon::v1::SubmitJobRequest> request =
        admin::LoadSubmitRequest(o_.spec, &taxonomy_files_);
    if (!request.ok()) return Fail(request.status());
    request_ = *std::move(request);
    request_.set_round_timeout_seconds(o_.round_timeout);
    // The spec with its paths resolved (taxonomies and values files, for the checks and the
    // page).
    absl::StatusOr<fedanon::v1::JobSpec> local_spec = spec::LoadJobSpec(o_.spec);
    if (!local_spec.ok()) return Fail(local_spec.status());
    spec_ = *std::move(local_spec);
    const std::map<std::string, std::string> shipped(request_.taxonomies().begin(),
                                                     request_.taxonomies().end());
    if (absl::Status st = hierarchies::CheckFederatedHierarchies(spec_, shipped); !st.ok()) {
      return Fail(st);
    }
    for (const admin::TaxonomyFile& t : taxonomy_files_) {
      inputs.emplace_back(absl::StrCat("the taxonomy of attribute '", t.attribute, "'"),
                          t.local_path);
    }
    if (absl::Status st = base::CheckDistinctOutputs(outputs, inputs); !st.ok()) return Fail(st);
    for (const admin::TaxonomyFile& t : taxonomy_files_) {
      const fs::path written(t.spec_path);
      if (written.is_absolute()) {
        // A party reads only files inside its data directory.
        return Fail(absl::StrCat("the taxonomy '", t.spec_path, "' of attribute '", t.attribute,
                                 "' is an absolute path; parties read only files inside their "
                                 "data directory, so use a path relative to the spec's "
                                 "directory (federation up copies it into each party's)"));
      }
      const std::string normal = written.lexically_normal().string();
      if (normal == ".." || normal.rfind("../", 0) == 0) {
        return Fail(absl::StrCat("the taxonomy '", t.spec_path, "' of attribute '", t.attribute,
                                 "' lies outside the spec's directory; federation up copies "
                                 "taxonomies into each party's data dir under the path written "
                                 "in the spec, so use a path inside the spec's directory"));
      }
    }
    return 0;
  }

  // Provisions the federation (leader on `port`) in a new temporary directory or in --dir.
  int Provision(int port) {
    if (o_.dir.empty()) {
      std::error_code ec;
      fs::path tmp = fs::temp_directory_path(ec);
      if (ec) tmp = "/tmp";
      std::string pattern = (tmp / "fedanon-federation-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) {
        return Fail(
            base::ErrnoStatus(errno, absl::StrCat("cannot create a directory in ", tmp.string())));
      }
      dir_ = pattern;
      created_dir_ = true;
      if (absl::Status st = app::ProvisionLocal(dir_.string(), names_, port); !st.ok()) {
        return Fail(absl::StrCat("cannot provision the federation: ", st.message()));
      }
    } else {
      dir_ = fs::absolute(o_.dir).lexically_normal();
      if (absl::Status st = app::ProvisionLocal(dir_.string(), names_, port); !st.ok()) {
        return Fail(
            absl::StrCat("cannot provision the federation in ", dir_.string(), ": ", st.message()));
      }
      created_dir_ = true;
    }
    return 0;
  }

  // Starts the leader and one party per table, logging to <dir>/logs, and says where they are.
  int StartChildren(const std::string& leader_bin, const std::string& party_bin) {
    const fs::path logs = dir_ / "logs";
    std::error_code ec;
    fs::create_directories(logs, ec);
    if (ec) return Fail(absl::StrCat("cannot create ", logs.string(), ": ", ec.message()));
    children_.push_back({"leader", (logs / "leader.log").string()});
    for (const std::string& name : names_) {
      children_.push_back({name, (logs / (name + ".log")).string()});
    }
    for (Child& c : children_) {
      const bool leader = c.name == "leader";
      const std::string config = (dir_ / c.name / (leader ? "leader.yaml" : "party.yaml")).string();
      if (absl::Status st = Spawn(&c, leader ? leader_bin : party_bin, {"--config", config});
          !st.ok()) {
        return Fail(st);
      }
    }
    std::cerr << kPrefix << "starting a local federation in " << dir_.string() << "\n"
              << "  leader      " << address_ << "  pid " << children_[0].pid << "  config "
              << (dir_ / "leader" / "leader.yaml").string() << "\n";
    for (size_t i = 1; i < children_.size(); ++i) {
      std::cerr << "  party       " << children_[i].name << "  pid " << children_[i].pid
                << "  table " << o_.party_data[i - 1] << "\n";
    }
    std::cerr << "  admin       " << AdminConfig() << "\n"
              << "  logs        " << logs.string() << "/<name>.log\n";
    return 0;
  }

  std::string AdminConfig() const { return (dir_ / "admin" / "admin.yaml").string(); }

  int CopyData() {
    for (size_t i = 0; i < names_.size(); ++i) {
      const fs::path data = dir_ / names_[i] / "data";
      std::error_code ec;
      fs::create_directories(data, ec);
      if (!ec) {
        fs::copy_file(o_.party_data[i], data / "table.csv", fs::copy_options::overwrite_existing,
                      ec);
      }
      if (ec) {
        return Fail(absl::StrCat("cannot copy ", o_.party_data[i], " to ",
                                 (data / "table.csv").string(), ": ", ec.message()));
      }
      for (const admin::TaxonomyFile& t : taxonomy_files_) {
        const fs::path dest = data / fs::path(t.spec_path).lexically_normal();
        fs::create_directories(dest.parent_path(), ec);
        if (!ec) fs::copy_file(t.local_path, dest, fs::copy_options::overwrite_existing, ec);
        if (ec) {
          return Fail(absl::StrCat("cannot copy taxonomy ", t.local_path, " to ", dest.string(),
                                   ": ", ec.message()));
        }
      }
    }
    return 0;
  }

  // A child that ended while it should run: fails with its log's tail.
  int CheckChildren() {
    for (Child& c : children_) {
      if (!StillRunning(&c)) {
        return Fail(absl::StrCat(c.name, " (pid ", c.pid, ") ", DescribeExit(c.wait_status),
                                 "; last lines of ", c.log_path, ":\n", LogTail(c.log_path)));
      }
    }
    return 0;
  }

  int WaitForParties() {
    absl::StatusOr<std::unique_ptr<admin::AdminClient>> client =
        admin::AdminClient::FromConfig(AdminConfig());
    if (!client.ok()) return Fail(client.status());
    client_ = *std::move(client);
    const absl::Time deadline = absl::Now() + kConnectWait;
    std::string last_problem = "the leader has not answered yet";
    while (true) {
      if (signals_.signal() != 0) return Interrupted();
      if (int code = CheckChildren(); code != 0) return code;
      absl::StatusOr<std::vector<fedanon::v1::ConnectedParty>> parties = client_->ListParties();
      std::vector<std::string> missing = names_;
      if (parties.ok()) {
        for (const auto& p : *parties) std::erase(missing, p.name());
        if (missing.empty()) return 0;
        last_problem = absl::StrCat("not connected yet: ", absl::StrJoin(missing, ", "));
      } else {
        last_problem = std::string(parties.status().message());
        // A fresh channel makes a fresh connection attempt (no reconnect backoff).
        client_ = std::make_unique<admin::AdminClient>(address_, TlsMaterialOrEmpty());
      }
      if (absl::Now() > deadline) {
        std::string tails;
        for (const Child& c : children_) {
          if (c.name == "leader" ||
              std::find(missing.begin(), missing.end(), c.name) != missing.end()) {
            absl::StrAppend(&tails, "  ", c.log_path, ":\n", LogTail(c.log_path, 8));
          }
        }
        return Fail(absl::StrCat("the federation did not come up within ",
                                 absl::FormatDuration(kConnectWait), " (", last_problem,
                                 "); last lines of the logs:\n", tails));
      }
      // Parties connect within a few hundred milliseconds of their start: ask often.
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  server::TlsMaterial TlsMaterialOrEmpty() {
    if (!admin_tls_loaded_) {
      server::TlsPaths paths;
      const fs::path admin = dir_ / "admin";
      paths.ca = (admin / "ca.crt").string();
      paths.cert = (admin / "tls.crt").string();
      paths.key = (admin / "tls.key").string();
      absl::StatusOr<server::TlsMaterial> tls = server::LoadTlsMaterial(paths);
      if (tls.ok()) admin_tls_ = *std::move(tls);
      admin_tls_loaded_ = true;
    }
    return admin_tls_;
  }

  // Until a termination signal (exit 0) or a child's unexpected end (exit 1).
  int StayUp() {
    while (signals_.signal() == 0) {
      if (int code = CheckChildren(); code != 0) return code;
      absl::SleepFor(kPoll);
    }
    std::cerr << kPrefix << "received " << ::strsignal(signals_.signal()) << "\n";
    return 0;
  }

  int SubmitAndFollow() {
    for (const std::string& name : names_) request_.add_parties(name);
    // Signed with the kit's admin key: the parties run only what an admin authorized.
    if (absl::Status signed_job = client_->AuthorizeJob(&request_); !signed_job.ok()) {
      return Fail(absl::StrCat("cannot authorize the job: ", std::string(signed_job.message())));
    }
    absl::StatusOr<fedanon::v1::JobInfo> job = client_->SubmitJob(request_);
    if (!job.ok())
      return Fail(absl::StrCat("the leader refused the job: ", job.status().message()));
    const std::string job_id = job->job_id();
    std::cerr << kPrefix << "submitted " << job_id << " (parties " << absl::StrJoin(names_, ", ")
              << "; recipient: the leader)\n";
    if (!o_.wait) {
      std::cout << job_id << "\n";
      std::cerr << "Follow it with: fedanonctl --config " << AdminConfig() << " watch " << job_id
                << "\nPress Ctrl-C (or send SIGTERM) to stop the federation.\n";
      return StayUp();
    }

    admin::AdminClient* client = client_.get();
    signals_.SetHook([client] { client->Cancel(); });
    if (signals_.signal() != 0) return Interrupted();
    std::string last_line;
    absl::StatusOr<fedanon::v1::JobInfo> last =
        client->WatchJob(job_id, [&last_line](const fedanon::v1::JobInfo& info) {
          const std::string line = admin::ProgressLine(info);
          if (line != last_line) std::cerr << "  " << line << "\n";
          last_line = line;
        });
    if (signals_.signal() != 0) return Interrupted();
    if (!last.ok()) {
      CheckChildren();  // explains a crashed daemon, if that is why
      return Fail(absl::StrCat("lost track of ", job_id, ": ", last.status().message()));
    }
    if (last->state() != fedanon::v1::JOB_STATE_DONE) {
      // What the leader decoded before the job failed is still what it learned.
      if (int code = WriteLeaderView(client, job_id); code != 0) return code;
      return Fail(absl::StrCat("job ", job_id, " ", admin::JobStateName(last->state()),
                               last->failure_reason().empty() ? "" : ": ", last->failure_reason()));
    }

    fedanon::v1::Report report = last->report();
    std::string result_path = o_.result;
    if (result_path.empty() && !o_.html.empty()) result_path = (dir_ / "result.csv").string();
    if (!result_path.empty()) {
      absl::StatusOr<std::unique_ptr<admin::AtomicFileWriter>> writer =
          admin::AtomicFileWriter::Open(result_path, /*overwrite=*/true);
      if (!writer.ok()) return Fail(writer.status());
      absl::StatusOr<uint64_t> bytes = client->GetResult(
          job_id, [&writer](std::string_view data) { return (*writer)->Write(data); });
      if (signals_.signal() != 0) return Interrupted();
      if (!bytes.ok()) {
        return Fail(
            absl::StrCat("cannot fetch the result of ", job_id, ": ", bytes.status().message()));
      }
      if (absl::Status st = (*writer)->Commit(); !st.ok()) return Fail(st);
      if (!o_.result.empty()) {
        std::cerr << kPrefix << "wrote the integrated table to " << o_.result << " (" << *bytes
                  << " bytes)\n";
      }
    }
    std::optional<html_report::ViewLogSummary> leader_view;
    if (!o_.html.empty()) {
      absl::StatusOr<html_report::ViewLogSummary> view =
          AssessJob(client, job_id, result_path, &report);
      if (signals_.signal() != 0) return Interrupted();
      if (!view.ok()) return Fail(view.status());
      leader_view = *std::move(view);
    }
    if (!o_.report.empty()) {
      absl::StatusOr<std::unique_ptr<admin::AtomicFileWriter>> writer =
          admin::AtomicFileWriter::Open(o_.report, /*overwrite=*/true);
      if (!writer.ok()) return Fail(writer.status());
      absl::StatusOr<std::string> json = spec::ProtoToJson(report);
      if (!json.ok()) return Fail(json.status());
      absl::Status st = (*writer)->Write(*json + "\n");
      if (st.ok()) st = (*writer)->Commit();
      if (!st.ok()) return Fail(st);
      std::cerr << kPrefix << "wrote the report to " << o_.report << "\n";
    }
    if (!o_.html.empty()) {
      html_report::ReportPage page;
      page.report = report;
      page.kind =
          spec_.partitioning() == fedanon::v1::PARTITIONING_VERTICAL ? "vertical" : "horizontal";
      page.job_id = job_id;
      page.parties = names_;
      page.spec = spec_;
      page.taxonomies = taxonomies_;
      page.leader_view = std::move(leader_view);
      if (absl::Status st = app::WriteReportHtml(o_.html, page); !st.ok()) return Fail(st);
      std::cerr << kPrefix << "wrote the job's page to " << o_.html << "\n";
    }
    if (int code = WriteLeaderView(client, job_id); code != 0) return code;
    std::cout << "job " << job_id << " done\n" << admin::ReportSummary(report);
    return 0;
  }

  // The steward's figures of a done job (app/job_assessment.h), each computed where its data is
  // in this local federation: the release's risk, loss and model checks on the integrated table
  // the leader (the recipient) serves; each party's risk on its own table, as `fedanon party
  // risk` computes it at that party; and a summary of the leader's view log.
  absl::StatusOr<html_report::ViewLogSummary> AssessJob(admin::AdminClient* client,
                                                        const std::string& job_id,
                                                        const std::string& result_path,
                                                        fedanon::v1::Report* report) {
    absl::StatusOr<std::map<std::string, std::shared_ptr<const table::Taxonomy>>> taxonomies =
        app::LoadSpecTaxonomies(spec_);
    if (!taxonomies.ok()) return taxonomies.status();
    taxonomies_ = *std::move(taxonomies);
    evaluation::LossContext context;
    context.taxonomies = taxonomies_;
    if (absl::Status st = app::AssessRelease(spec_, result_path, context, report); !st.ok()) {
      return st;
    }
    const bool vertical = spec_.partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
    for (size_t i = 0; i < names_.size(); ++i) {
      // A vertical party holds only its own attributes: its risk is over its own QIDs.
      fedanon::v1::JobSpec own = spec_;
      if (vertical) {
        own.clear_attributes();
        for (const auto& a : spec_.attributes()) {
          if (a.party() == names_[i]) *own.add_attributes() = a;
        }
        const bool has_qid =
            std::any_of(own.attributes().begin(), own.attributes().end(),
                        [](const auto& a) { return a.role() == fedanon::v1::ROLE_QID; });
        if (!has_qid) continue;
      }
      absl::StatusOr<fedanon::v1::RiskSummary> risk = app::AssessTableRisk(
          own, o_.party_data[i], app::EffectiveRiskOptions(spec_, {}), names_[i]);
      if (!risk.ok()) return risk.status();
      fedanon::v1::PartyRisk* p = report->add_party_risk();
      p->set_party(names_[i]);
      *p->mutable_risk() = *std::move(risk);
    }
    std::string view;
    absl::StatusOr<uint64_t> bytes = client->GetViewLog(job_id, [&view](std::string_view data) {
      view.append(data);
      return absl::OkStatus();
    });
    if (!bytes.ok()) {
      return absl::Status(
          bytes.status().code(),
          absl::StrCat("cannot fetch the view log of ", job_id, ": ", bytes.status().message()));
    }
    return html_report::SummarizeViewLog(view);
  }

  // --leader-view: the leader's view log of the ended job, written atomically (0 when done or
  // not asked for).
  int WriteLeaderView(admin::AdminClient* client, const std::string& job_id) {
    if (o_.leader_view.empty()) return 0;
    // Mode 0600 like the leader's own copy: it holds the job's global statistics.
    absl::StatusOr<std::unique_ptr<base::AtomicFileWriter>> writer = base::AtomicFileWriter::Open(
        o_.leader_view, {.mode = base::kPrivateFileMode, .replace_existing = true});
    if (!writer.ok()) return Fail(writer.status());
    absl::StatusOr<uint64_t> bytes = client->GetViewLog(
        job_id, [&writer](std::string_view data) { return (*writer)->Write(data); });
    if (signals_.signal() != 0) return Interrupted();
    if (!bytes.ok()) {
      return Fail(
          absl::StrCat("cannot fetch the view log of ", job_id, ": ", bytes.status().message()));
    }
    if (absl::Status st = (*writer)->Commit(); !st.ok()) return Fail(st);
    std::cerr << kPrefix << "wrote the leader's view log to " << o_.leader_view << " (" << *bytes
              << " bytes)\n";
    return 0;
  }

  void StopChildren() {
    signals_.SetHook(nullptr);
    // Close our connection first: the leader's shutdown waits for connected clients to go away.
    client_.reset();
    bool any = false;
    for (Child& c : children_) {
      if (StillRunning(&c)) {
        ::kill(c.pid, SIGTERM);
        any = true;
      }
    }
    if (!any) return;
    std::cerr << kPrefix << "stopping the federation\n";
    const absl::Time deadline = absl::Now() + kStopGrace;
    while (absl::Now() < deadline) {
      bool running = false;
      for (Child& c : children_) running |= StillRunning(&c);
      if (!running) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    for (Child& c : children_) {
      if (StillRunning(&c)) {
        std::cerr << kPrefix << c.name << " (pid " << c.pid << ") did not stop within "
                  << absl::FormatDuration(kStopGrace) << "; killing it\n";
        ::kill(c.pid, SIGKILL);
        int status = 0;
        ::waitpid(c.pid, &status, 0);
        c.running = false;
      }
    }
  }

  void Cleanup() {
    if (!created_dir_) return;
    if (o_.keep) {
      std::cerr << kPrefix << "kept configs and logs in " << dir_.string() << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (ec) {
      std::cerr << kPrefix << "cannot remove " << dir_.string() << ": " << ec.message() << "\n";
    }
  }

  Options o_;
  SignalWatcher& signals_;
  fedanon::v1::SubmitJobRequest request_;
  fedanon::v1::JobSpec spec_;  // the spec with its paths resolved
  std::map<std::string, std::shared_ptr<const table::Taxonomy>> taxonomies_;
  std::vector<admin::TaxonomyFile> taxonomy_files_;
  std::vector<std::string> names_;
  std::string address_;
  fs::path dir_;
  bool created_dir_ = false;
  std::vector<Child> children_;  // [0] is the leader
  std::unique_ptr<admin::AdminClient> client_;
  bool admin_tls_loaded_ = false;
  server::TlsMaterial admin_tls_;
};

constexpr char kUsage[] =
    "usage: fedanon federation up --party-data a.csv,b.csv[,...] [--spec JOB.yaml] [--port P]\n"
    "                             [--wait] [--result OUT.csv] [--report REPORT.json] [--keep]\n"
    "                             [--leader-view VIEW.jsonl] [--html PAGE.html] [--dir DIR]\n"
    "Runs a throwaway local federation (leader + one party per table) on 127.0.0.1.\n"
    "See 'fedanon federation up --help'.\n";

// `up`'s help names it "fedanon federation up" whatever path the program was started by.
class UpHelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string) const override {
    return CLI::Formatter::make_usage(app, "fedanon federation up");
  }
};

void DeclareUpOptions(CLI::App* up, Options* o) {
  up->add_option("--party-data", o->party_data,
                 "The parties' tables (CSV), comma-separated: one party per table")
      ->required()
      ->delimiter(',');
  CLI::Option* spec =
      up->add_option("--spec", o->spec, "Job spec (YAML) to submit to the federation");
  up->add_option("--port", o->port, "Leader port on 127.0.0.1 (default: a free port)")
      ->check(CLI::Range(1, 65535));
  CLI::Option* wait =
      up->add_flag("--wait", o->wait, "Follow the job, fetch its result and stop (needs --spec)")
          ->needs(spec);
  up->add_option("--result", o->result, "Write the integrated table here (CSV; needs --wait)")
      ->needs(wait);
  up->add_option("--report", o->report, "Write the job's report here (JSON; needs --wait)")
      ->needs(wait);
  up->add_option("--leader-view", o->leader_view,
                 "Write the leader's view log of the job here (JSON lines: every statistic it "
                 "decoded; needs --wait)")
      ->needs(wait);
  up->add_option("--html", o->html,
                 "Write the job's page here (HTML: the cut, utility, the release's risk, each "
                 "party's risk on its own table, what the leader decoded; also into --report; "
                 "needs --wait)")
      ->needs(wait);
  up->add_option("--round-timeout", o->round_timeout,
                 "Seconds a party may take per request (default: the leader's, 60 s; a 1M-record "
                 "local-recoding job's row union needs more)")
      ->check(CLI::Range(1, 86400));
  up->add_flag("--keep", o->keep, "Keep the federation's directory (configs, keys, logs)");
  up->add_option("--dir", o->dir,
                 "Provision into this directory (must be empty or missing; default: a new "
                 "temporary directory)");
}

}  // namespace

server::CommandAction DeclareFederationCommand(CLI::App* federation) {
  // A subcommand starts with its parent's settings, so `up` comes first and gets its own.
  CLI::App* up = federation->add_subcommand(
      "up",
      "fedanon federation up: run a throwaway local federation (a leader and one party per table "
      "on 127.0.0.1), optionally run one job on it");
  up->formatter(std::make_shared<UpHelpFormatter>());
  up->footer("");
  auto options = std::make_shared<Options>();
  DeclareUpOptions(up, options.get());
  // `federation` alone (or with anything but `up`) prints the usage; it is not listed in
  // fedanon's help, whose footer names it.
  federation->group("")->allow_extras()->formatter_fn(
      [](const CLI::App*, const std::string&, CLI::AppFormatMode) { return std::string(kUsage); });
  return [up, options] {
    if (!up->parsed()) {
      std::cerr << kUsage;
      return server::kExitUsage;
    }
    // Before any thread exists, so that every thread (gRPC's too) inherits the mask.
    server::BlockTerminationSignals();
    return FederationUp(*options).Run();
  };
}

}  // namespace fedanon::cli
