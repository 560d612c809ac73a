// One job's run at the leader as its protocol drivers see it: what the run fixed when it started
// (JobRun) and what the job service lends a driver (JobHost): the federation's channel and the
// leader's options, the job store, cancellation, progress and the end of the job at the parties.
// The job service (leader.h) owns the queue and the workers; the drivers (horizontal_driver.h,
// vertical_driver.h) run one job each on a worker's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/job_store.h"
#include "leader/leader_observer.h"
#include "leader/leader_options.h"
#include "leader/view_log.h"

namespace fedanon::leader {

// What every step of one job's run needs, read once from the stored request.
struct JobRun {
  std::string job_id;
  fedanon::v1::SubmitJobRequest request;
  std::string run_id;                 // the admin's run (bound into every sealed box of the job)
  std::vector<std::string> ring;      // the data parties in ring order
  std::string recipient;              // a party, or the leader's own name
  absl::Duration timeout;             // for every call to a party
  std::function<double()> elapsed;    // seconds since the run started
  std::unique_ptr<ViewLog> view_log;  // every statistic the leader decodes for this job
  bool resume = false;                // resumed after a leader restart (durable jobs)
  int resumes = 0;                    // how often this job was resumed so far
};

// What the job service lends a driver. Not owned: the leader outlives every driver it starts.
struct JobHost {
  const LeaderOptions* options = nullptr;
  LeaderObserver* observer = nullptr;
  wire::PartyChannel* channel = nullptr;
  JobStore* store = nullptr;
  // Cancelled when an admin cancelled the job or the leader shuts down.
  std::function<absl::Status(const std::string& job_id)> check_cancelled;
  // Wakes whoever watches the jobs (WatchJob, the queue).
  std::function<void()> notify;
  // The job waits (true) or no longer waits (false) for `party` to connect: shown to admins in
  // the job's JobInfo.waiting_for_parties.
  std::function<void(const std::string& job_id, const std::string& party, bool waiting)> waiting;
  // Parties of the job that could not be told that it ended (away): told when they connect.
  std::function<void(const std::string& job_id, const std::vector<std::string>& parties,
                     bool success, const std::string& reason)>
      tell_later;

  // check_cancelled bound to one job, for the helpers that poll between messages.
  std::function<absl::Status()> CancelCheck(const std::string& job_id) const;
  // `waiting` bound to one job (a RejoiningChannel's observer); a no-op when `waiting` is unset.
  std::function<void(const std::string& party, bool waiting)> WaitingObserver(
      const std::string& job_id) const;
  // A round (or a local wave) is done: its progress `what` recorded in the job store (a failure
  // is logged, never the job's), the observer told, the watchers woken.
  void RoundDone(const JobRun& job, uint32_t round, const std::string& what) const;
  // Stores the released table written in pieces by `produce` (never held whole in memory), unless
  // the job has one already (a resumed job releases once).
  absl::Status StoreResultOnce(
      const std::string& job_id,
      const std::function<absl::Status(const JobStore::ResultWriter&)>& produce) const;
  // The sealing key of a connected data party, verified against the federation CA.
  absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> PartySealKey(
      const std::string& party) const;
  // Tells every party of the ring that the job ended (failures logged); `success` false with the
  // failure or cancellation `reason` for a job that did not end done, so that each party closes
  // its run (audit `job-end`, run ledger: a run that released nothing is freed, state file
  // deleted). A party not reached (not connected, or no answer in time) is handed to
  // `tell_later`.
  void EndJobAtParties(const JobRun& job, bool success = true,
                       const std::string& reason = "done") const;
};

// Tells one party that the job ended; the answer's status (Unavailable: not connected).
absl::Status TellJobEnded(wire::PartyChannel* channel, const std::string& party,
                          const std::string& job_id, bool success, const std::string& reason,
                          absl::Duration timeout);

// For bookkeeping whose failure must not change the job's outcome: logs it with the job id.
void WarnIfError(const absl::Status& status, const std::string& job_id, std::string_view what);

}  // namespace fedanon::leader
