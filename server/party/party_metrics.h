// The party daemon's Prometheus metrics (names and labels in docs/operations.md, "Metrics and
// health"), fed by the link to the leader (PartyLinkObserver): link up, sessions, requests
// answered by kind, requests refused by status code, rounds answered, bytes to and from the
// leader. Served only on loopback (server/runtime/config.h). Labels are bounded: a request kind, a
// status code name or a link-failure category — never data or free text. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/party/party_client.h"
#include "server/runtime/metrics.h"

namespace prometheus {
class Counter;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace fedanon::party_daemon {

class PartyMetrics final : public PartyLinkObserver {
 public:
  // Registers every family in `registry` (not owned; must outlive this object).
  explicit PartyMetrics(server::MetricsRegistry* registry);

  void LinkUp(const std::string& leader) override;
  void LinkDown(const absl::Status& why, absl::Duration retry_in) override;
  void Answered(const fedanon::v1::LeaderMessage& request,
                const fedanon::v1::PartyMessage& reply) override;

 private:
  prometheus::Gauge& link_up_;
  prometheus::Counter& sessions_;
  prometheus::Family<prometheus::Counter>& link_failures_;
  prometheus::Family<prometheus::Counter>& answered_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Counter& rounds_;
  prometheus::Counter& bytes_received_;
  prometheus::Counter& bytes_sent_;

  absl::Mutex mu_;
  std::string last_job_ ABSL_GUARDED_BY(mu_);  // of the last round counted
  uint32_t last_round_ ABSL_GUARDED_BY(mu_) = 0;
};

// The `kind` label of a request: its body's field name ("sum_step", "vertical", ...).
std::string RequestKind(const fedanon::v1::LeaderMessage& request);

}  // namespace fedanon::party_daemon
