// The record of one durable job's calls to its parties (docs/operations.md "Durable jobs"), kept in
// the job store (table `calls`) so that a leader restarted mid-job can resume the job. Both
// protocol drivers record through it: the horizontal one each secure sum (its request's digest
// before the first hop leaves, the unmasked sum once complete, leader/secure_sum_source.h), the
// vertical one each reply a party sent, with the key of its request, before the leader uses it
// (leader/vertical_job.h). After a restart Load() hands back what was recorded, in order, for the
// driver to replay without the network. One recorder per job; a copy records to the same job (the
// store is not owned and outlives every copy). Thread-safe as the store is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "leader/job_store.h"

namespace fedanon::leader {

class CallRecorder {
 public:
  CallRecorder(JobStore* store, std::string job_id);

  // Before call `index`'s request is sent: its digest, which the request a restarted leader
  // rebuilds must have. The same again is accepted (a re-send); another one, or any once the call
  // has its reply, is refused (FailedPrecondition).
  absl::Status RecordRequest(uint64_t index, const std::string& digest) const;
  // Before call `index`'s reply is used: the reply, completing the request recorded for it.
  // FailedPrecondition unless that request is open (a reply is recorded once).
  absl::Status RecordReply(uint64_t index, const std::string& reply) const;
  // Before the reply of a call whose request was not recorded is used (a vertical job: each of its
  // requests follows from the replies before it): the call complete at once, the key of its
  // request with the reply. A second record at `index` is refused (AlreadyExists).
  absl::Status RecordCompleteCall(uint64_t index, const std::string& key,
                                  const std::string& reply) const;

  // The calls recorded so far, in index order (the last may be open): what a restarted leader
  // replays.
  absl::StatusOr<std::vector<RecordedCall>> Load() const;

  // The recording above as the callbacks that the protocol units take in their options
  // (SecureSumCountSource::Journal, VerticalJobOptions::record_reply); each holds a copy of this
  // recorder.
  std::function<absl::Status(uint64_t index, const std::string& digest)> RequestRecorder() const;
  std::function<absl::Status(uint64_t index, const std::string& reply)> ReplyRecorder() const;
  std::function<absl::Status(uint64_t index, const std::string& key, const std::string& reply)>
  CompleteCallRecorder() const;

  const std::string& job_id() const { return job_id_; }

 private:
  JobStore* store_;
  std::string job_id_;
};

}  // namespace fedanon::leader
