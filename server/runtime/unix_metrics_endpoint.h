// A party's metrics and health on a unix socket (party.yaml `metrics_listen:
// unix:/run/fedanon/party-metrics.sock`; docs/operations.md, "Metrics and health"): a minimal
// HTTP/1.1 server, one request per connection, on one thread, reachable only by processes on the
// host that may open the socket (created mode 0660: the service user and its group). Serves
//   GET /metrics  the registry in the Prometheus text format (200);
//   GET /health   200 "linked ..." when the link to the leader is up, else 503 "not linked ...";
//   GET /live     200 while the daemon answers at all.
// Anything else is 404 (405 for another method). A request must arrive within 2 s and fit in
// 8 KiB. Prometheus scrapes it through a unix-socket aware agent or proxy (e.g. `curl
// --unix-socket`, a node-exporter textfile, a socat or nginx on the host).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "server/runtime/metrics.h"

namespace fedanon::server {

// Whether the party is linked, and a one-line detail for /health.
using HealthProbe = std::function<std::pair<bool, std::string>()>;

class UnixMetricsEndpoint {
 public:
  // Listens on `path` (absolute; at most 107 bytes), mode `mode` exactly, before any connection
  // can be accepted. A stale socket file at `path` that nobody serves is replaced; a live one, or
  // a file that is not a socket, fails (FailedPrecondition). `registry` is not owned and must
  // outlive the endpoint.
  static absl::StatusOr<std::unique_ptr<UnixMetricsEndpoint>> Start(const std::string& path,
                                                                    const MetricsRegistry& registry,
                                                                    HealthProbe health,
                                                                    mode_t mode = 0660);
  ~UnixMetricsEndpoint();  // stops serving and removes the socket file
  UnixMetricsEndpoint(const UnixMetricsEndpoint&) = delete;
  UnixMetricsEndpoint& operator=(const UnixMetricsEndpoint&) = delete;

  const std::string& path() const { return path_; }

 private:
  UnixMetricsEndpoint(std::string path, const MetricsRegistry& registry, HealthProbe health,
                      int listen_fd, int wake_read, int wake_write);
  void Serve();
  void Answer(int fd);

  const std::string path_;
  const MetricsRegistry& registry_;
  const HealthProbe health_;
  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  std::thread thread_;
};

}  // namespace fedanon::server
