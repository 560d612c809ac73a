// The daemons' Prometheus metrics: one registry per process, its text exposition, and the
// optional plain-HTTP endpoint (GET /metrics, prometheus-cpp's civetweb exposer) that serves it
// on a configured address. Which address a daemon may use is the config's decision
// (server/runtime/config.h: loopback only for a party; the leader needs an explicit opt-in for
// more). Metric names, meanings and labels: docs/operations.md, "Metrics and health".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace prometheus {
class Collectable;
class Exposer;
class Registry;
struct MetricFamily;
}  // namespace prometheus

namespace fedanon::server {

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Where the metric units (leader_metrics.h, party_metrics.h) build their families.
  prometheus::Registry& registry() { return *registry_; }
  // Families computed at every scrape (e.g. jobs by state read from the job store). `collect`
  // must be thread-safe and cheap; it runs on the endpoint's threads. Add them before Serve.
  void AddScrapeTimeFamilies(std::function<std::vector<prometheus::MetricFamily>()> collect);

  // Everything in the Prometheus text format (what GET /metrics answers).
  std::string Text() const;

  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> scrape_time_;
};

// Serves a registry over plain HTTP until destroyed.
class MetricsEndpoint {
 public:
  // Binds `address` (host:port with a literal IP, [v6]:port; port 0 picks a free one) and serves
  // `registry` (not owned; must outlive the endpoint) at /metrics. InvalidArgument for a
  // malformed address, Unavailable when it cannot listen.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& address,
                                                                const MetricsRegistry& registry);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

// True when `address` (host:port) names a loopback IP literal: 127.0.0.0/8 or [::1]. Names
// (e.g. "localhost") are not resolved and count as not loopback.
bool IsLoopbackAddress(const std::string& address);

}  // namespace fedanon::server
