// How the party daemon reports its state locally, never over the network: to systemd
// (sd_notify: READY=1 once the local start-up has passed — config, keys, data directory — and
// before the leader is dialled, so a leader that is down never makes systemd restart the party;
// then STATUS= "linked to leader ..." / "reconnecting to the leader at ...: <why>"; STOPPING=1)
// and to the status file server/party/party_status.h, rewritten at every change and every
// heartbeat, which `fedanon party status` reads. Thread-safe.
#pragma once

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/party/party_client.h"
#include "server/party/party_status.h"

namespace fedanon::party_daemon {

struct PartyLinkReporterOptions {
  std::string output_dir;  // where party.status goes (the party's state directory)
  std::string name;        // the party
  std::string leader;      // the configured leader address
  absl::Duration heartbeat = absl::Seconds(10);
};

class PartyLinkReporter final : public PartyLinkObserver {
 public:
  explicit PartyLinkReporter(PartyLinkReporterOptions options);
  ~PartyLinkReporter() override;  // Stop()
  PartyLinkReporter(const PartyLinkReporter&) = delete;
  PartyLinkReporter& operator=(const PartyLinkReporter&) = delete;

  // The local start-up passed: writes the status file (link=starting; creating output_dir if
  // needed), tells systemd READY=1 and starts the heartbeat. Fails when the file cannot be
  // written (a start-up error: the state directory is not usable).
  absl::Status Ready();
  // Writes link=stopped, tells systemd STOPPING=1, ends the heartbeat. Idempotent.
  void Stop();

  void LinkUp(const std::string& leader) override;
  void LinkDown(const absl::Status& why, absl::Duration retry_in) override;

 private:
  // Rewrites the file and, when `notify`, sends `status_line` as STATUS=. Under mu_.
  void PublishLocked(bool notify) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `state` to systemd; a failure is logged once per failure streak.
  void NotifyLocked(const std::string& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Heartbeat();

  const PartyLinkReporterOptions options_;
  absl::Mutex mu_;
  PartyStatus status_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failing_ ABSL_GUARDED_BY(mu_) = false;  // logged once per failure streak
  bool notify_failing_ ABSL_GUARDED_BY(mu_) = false;
  std::thread heartbeat_;
};

}  // namespace fedanon::party_daemon
