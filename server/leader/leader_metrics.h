// The leader daemon's Prometheus metrics (names and labels in docs/operations.md, "Metrics and
// health"): leader::LeaderObserver for rounds, phases, secure-sum sizes, ID matching and job
// outcomes; PartyTraffic for the bytes on each party's stream; and families computed at scrape
// time from the job store (jobs by state, store up), the leader's queue and the connected parties.
// Labels are bounded: a phase, a failure category, a job state, or a party's certificate name
// (a participant the federation CA provisioned) — never data or free text. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/leader_observer.h"
#include "server/leader/party_connections.h"
#include "server/runtime/metrics.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace fedanon::leader_daemon {

// Where the scrape-time families come from (each may be empty: the family is then left out).
struct LeaderMetricsSources {
  // Jobs by state from the job store (leader::JobStore::CountByState: one GROUP BY query, not
  // the job list); an error means the store is unavailable.
  std::function<absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>>()> job_counts;
  std::function<int()> queued_jobs;  // the leader's queue length (leader::Leader::Queue)
  std::function<size_t()> connected_parties;
};

class LeaderMetrics final : public leader::LeaderObserver, public PartyTraffic {
 public:
  // Registers every family in `registry` (not owned; must outlive this object).
  LeaderMetrics(server::MetricsRegistry* registry, LeaderMetricsSources sources);

  // leader::LeaderObserver
  void RoundDone() override;
  void PhaseDone(leader::Phase phase, absl::Duration took) override;
  void SecureSumVector(uint64_t words) override;
  void IdsMatched(uint64_t ids, absl::Duration took) override;
  void JobDone() override;
  void JobCancelled() override;
  void JobFailed(std::string_view category) override;

  // PartyTraffic
  void Sent(const std::string& party, uint64_t bytes) override;
  void Received(const std::string& party, uint64_t bytes) override;

 private:
  prometheus::Counter& rounds_;
  prometheus::Family<prometheus::Histogram>& phase_seconds_;
  prometheus::Histogram& secure_sum_words_;
  prometheus::Counter& ids_matched_;
  prometheus::Counter& id_matching_seconds_;
  prometheus::Family<prometheus::Counter>& jobs_finished_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Counter>& bytes_sent_;
  prometheus::Family<prometheus::Counter>& bytes_received_;
};

}  // namespace fedanon::leader_daemon
