// What the leader reports about its own work to whoever watches it: rounds, phase latencies,
// secure-sum sizes, ID-matching throughput and why jobs fail. The leader calls it from its job
// worker; server/leader/leader_metrics.h exports it as Prometheus metrics. The default does
// nothing, so the protocol logic needs no metrics library. Calls carry sizes, durations and bounded
// categories only: never record data, party data values or free text.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace fedanon::leader {

// The timed phases of a job (the `phase` label of the round-latency histogram).
enum class Phase {
  kSecureSum,    // one horizontal secure sum (every chunk around the ring)
  kInstruction,  // one vertical round: proposals, instruction, verdicts, commit
  kIdMatching,   // a vertical job's ID matching
};
std::string_view PhaseName(Phase phase);  // "secure_sum", "instruction", "id_matching"

// A bounded category for why a job failed, derived from the status code only (a metric label,
// never the message): "timeout", "party_unavailable", "refused", "invalid_job", "data_error",
// "resource_exhausted", "internal".
std::string_view FailureCategory(const absl::Status& status);

class LeaderObserver {
 public:
  virtual ~LeaderObserver() = default;
  // A specialization round was committed (horizontal or vertical).
  virtual void RoundDone() {}
  virtual void PhaseDone(Phase /*phase*/, absl::Duration /*took*/) {}
  // A secure sum's vector length in 64-bit words (all chunks).
  virtual void SecureSumVector(uint64_t /*words*/) {}
  // A vertical job matched `ids` identifiers (the sum of the parties' list sizes) in `took`.
  virtual void IdsMatched(uint64_t /*ids*/, absl::Duration /*took*/) {}
  // A job ended: done, cancelled, or failed with FailureCategory(status).
  virtual void JobDone() {}
  virtual void JobCancelled() {}
  virtual void JobFailed(std::string_view /*category*/) {}
};

// The observer that ignores everything (the default when none is given).
LeaderObserver& NoLeaderObserver();

}  // namespace fedanon::leader
