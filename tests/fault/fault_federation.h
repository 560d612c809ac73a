// A federation of real daemons on loopback for fault tests (tests only): a provisioned mTLS kit
// (app/provision.h ProvisionLocal, as `fedanonctl provision` writes it), `fedanon gen-data` tables
// split over the parties, fedanon-leader and one fedanon-party per party as child processes,
// each party dialling the leader through its own TcpProxy (tests/fault/tcp_proxy.h), and an
// admin client (server/admin/admin_client.h) to submit and follow jobs.
//
// Every wait is bounded. Children die with the test process (PR_SET_DEATHSIG SIGKILL), and the
// destructor kill -9s and reaps every child still running, on success or failure, so no daemon
// outlives a test. The directory is removed unless the test failed or FEDANON_KEEP_TEST_DIR is
// set (then its path is printed: kit, data, logs/<name>.log of every daemon).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"
#include "server/admin/admin_client.h"
#include "tests/fault/tcp_proxy.h"

namespace fedanon::testing {

class FaultFederation;

// A child process whose stdout and stderr are appended to `log`.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  absl::Status Start(const std::string& binary, const std::vector<std::string>& args,
                     const std::string& log);
  bool Running();
  // kill -9 and reap (no-op when not running).
  void Kill();
  // SIGTERM, then kill -9 after `grace`; the exit code (128+signal when killed), -1 if none.
  int Stop(absl::Duration grace = absl::Seconds(5));
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

struct FaultFederationOptions {
  int parties = 3;         // hospital-a, hospital-b, ...
  int rows = 300;          // gen-data rows in all, split over the parties
  uint64_t data_seed = 7;  // gen-data --seed
  // Parties Start() neither launches nor waits for: the test plays them itself (a fake party
  // with the party's real bundle, dialling proxy(i)).
  std::set<int> external;
  // The kit's admins (each gets kit/<name>/admin.yaml); the first one is the harness's own
  // (Submit, Get, Result, ...). Only {"admin"} is ProvisionLocal's kit exactly.
  std::vector<std::string> admins = {"admin"};
  // Appended to the provisioned leader.yaml (top-level keys, e.g. "all_jobs_admins: [x]\n").
  std::string leader_yaml_extra;
  // Parties dial the leader directly instead of through their proxies (no relay in the test
  // process: the load test measures the daemons, not the proxy).
  bool direct = false;
  // A vertical job (gen-data --partition vertical): each party holds some columns of every
  // record; spec_path() is gen-data's vertical.yaml with its `party:` keys naming this
  // federation's parties (party1 -> the first party, ...). Submit signs that job.
  bool vertical = false;
  // The job's spec instead of gen-data's (e.g. one with `recoding: local`), written to
  // gen_dir()/fault-job.yaml beside gen-data's tax/; with `vertical`, its `party: partyN` keys
  // are renamed to this federation's parties as gen-data's are. Empty: gen-data's spec.
  std::string spec;
  // Appended to the job's spec, whichever it is (e.g. "recoding: local\n").
  std::string spec_suffix;
  // Called by Start() once the kit and the parties' data are in place, before any daemon starts
  // (e.g. to put a daemon's directory on a disk of the test's own); its error ends Start().
  std::function<absl::Status(const FaultFederation&)> before_daemons;
};

class FaultFederation {
 public:
  // The test's name names the directory.
  explicit FaultFederation(FaultFederationOptions options = {});
  ~FaultFederation();

  // Provisions, generates the data, starts the leader and every party (each through its proxy)
  // and waits until every party is connected.
  absl::Status Start();

  const std::vector<std::string>& parties() const { return parties_; }
  int leader_port() const { return leader_port_; }
  std::string dir() const { return dir_; }
  std::string leader_data_dir() const;
  std::string party_dir(int i) const;         // its bundle (party.yaml, tls, seal keys)
  std::string party_output_dir(int i) const;  // runs.ledger, audit files, received tables
  std::string party_data_dir(int i) const;
  std::string gen_dir() const { return dir_ + "/gen"; }      // gen-data output: specs, tax/, CSVs
  std::string spec_path() const { return spec_path_; }       // the job's spec (see options' spec)
  std::string admin_config(const std::string& admin) const;  // kit/<admin>/admin.yaml
  std::string log_of(const std::string& name) const;         // "leader" or a party's name
  std::string Log(const std::string& name) const;            // its content
  TcpProxy& proxy(int i) { return *proxies_[static_cast<size_t>(i)]; }

  absl::Status StartLeader();
  void KillLeader() { leader_.Kill(); }
  pid_t leader_pid() const { return leader_.pid(); }
  pid_t party_pid(int i) const { return party_procs_[static_cast<size_t>(i)]->pid(); }
  bool LeaderRunning() { return leader_.Running(); }
  // Starts party `i` (connected through its proxy, or to the leader directly) / kill -9s it.
  absl::Status StartParty(int i, bool direct = false);
  void KillParty(int i) { party_procs_[static_cast<size_t>(i)]->Kill(); }
  // True once every party in `names` is connected to the leader.
  bool WaitForParties(const std::vector<std::string>& names,
                      absl::Duration timeout = absl::Seconds(30));
  // Like WaitForParties, until `name` is no longer listed.
  bool WaitForPartyGone(const std::string& name, absl::Duration timeout = absl::Seconds(30));

  // Signs and submits the generated horizontal job over `ring` (every party when empty) with a
  // round timeout and recipient (empty: the leader); returns the job id.
  absl::StatusOr<std::string> Submit(const std::vector<std::string>& ring,
                                     uint32_t round_timeout_seconds,
                                     const std::string& recipient = "",
                                     const std::string& spec_path = "");  // "": spec_path()
  // An admin's cancellation of the job (with `reason`); the job's state after it.
  absl::StatusOr<fedanon::v1::JobInfo> Cancel(const std::string& job_id, const std::string& reason);
  absl::StatusOr<fedanon::v1::JobInfo> Get(const std::string& job_id);
  // Polls until the job is final (bounded by `timeout`: DeadlineExceeded with its last state).
  absl::StatusOr<fedanon::v1::JobInfo> WaitForEnd(const std::string& job_id,
                                                  absl::Duration timeout);
  // Polls (every 5 ms) until the job is RUNNING with round >= `round`, or final.
  absl::StatusOr<fedanon::v1::JobInfo> WaitForRound(const std::string& job_id, uint32_t round,
                                                    absl::Duration timeout);
  // The leader's integrated table of a done job.
  absl::StatusOr<std::string> Result(const std::string& job_id);
  absl::Status Health();
  // After a leader restart: a fresh admin channel (no reconnect backoff).
  void ResetAdmin();

  // Gtest expectations that nothing of `job_id` was released anywhere: no result at the leader
  // (file or GetResult), no table at any party's output dir, no `*.tmp.*` file in any of them.
  void ExpectNothingReleased(const std::string& job_id);
  // The kinds of the party's audit entries for the job (party/audit_log.h), in order.
  std::vector<std::string> AuditKinds(int i, const std::string& job_id) const;
  // "success=<true|false> reason=<the leader's words>" of the party's last `job-end` entry for
  // the job, or "" when it has none (the party was never told that the job ended).
  std::string AuditEnd(int i, const std::string& job_id) const;

  int total_rows() const { return options_.rows; }

 private:
  std::string OwnAdminYaml() const { return admin_config(options_.admins.front()); }

  FaultFederationOptions options_;
  std::string dir_;
  int leader_port_ = 0;
  std::vector<std::string> parties_;
  std::string spec_path_;
  ChildProcess leader_;
  std::vector<std::unique_ptr<ChildProcess>> party_procs_;
  std::vector<std::unique_ptr<TcpProxy>> proxies_;
  std::unique_ptr<admin::AdminClient> admin_;
};

// "[ fault ] name key=value ..." on stdout: one line per test with its measured figures.
void PrintFigures(const std::string& line);

// FEDANON_FAULT_SEED when set (to replay a failure), else a fresh seed; printed by the caller.
uint64_t FaultSeed();

// The peak resident memory (VmHWM) of process `pid` in MiB; 0 when unreadable.
double PeakRssMiB(pid_t pid);

}  // namespace fedanon::testing
