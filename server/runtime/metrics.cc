#include "server/runtime/metrics.h"

#include <arpa/inet.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/runtime/config.h"

namespace fedanon::server {
namespace {

// Families produced by a function at scrape time.
class FunctionCollectable final : public prometheus::Collectable {
 public:
  explicit FunctionCollectable(std::function<std::vector<prometheus::MetricFamily>()> collect)
      : collect_(std::move(collect)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return collect_(); }

 private:
  const std::function<std::vector<prometheus::MetricFamily>()> collect_;
};

// The host part of host:port without IPv6 brackets.
std::string HostOf(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

MetricsRegistry::MetricsRegistry() : registry_(std::make_shared<prometheus::Registry>()) {}
MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::AddScrapeTimeFamilies(
    std::function<std::vector<prometheus::MetricFamily>()> collect) {
  scrape_time_.push_back(std::make_shared<FunctionCollectable>(std::move(collect)));
}

std::vector<std::shared_ptr<prometheus::Collectable>> MetricsRegistry::collectables() const {
  std::vector<std::shared_ptr<prometheus::Collectable>> all = {registry_};
  all.insert(all.end(), scrape_time_.begin(), scrape_time_.end());
  return all;
}

std::string MetricsRegistry::Text() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& c : collectables()) {
    std::vector<prometheus::MetricFamily> some = c->Collect();
    families.insert(families.end(), std::make_move_iterator(some.begin()),
                    std::make_move_iterator(some.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, const MetricsRegistry& registry) {
  if (absl::Status st = ValidateHostPort(address, "metrics address"); !st.ok()) return st;
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  try {
    // civetweb's listening_ports syntax is host:port / [v6]:port, as ours. Two threads: a
    // scrape every few seconds needs no more.
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(address, 2);
    for (const auto& c : registry.collectables()) endpoint->exposer_->RegisterCollectable(c);
    const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
    if (ports.empty()) return absl::UnavailableError(absl::StrCat("metrics: no port on ", address));
    endpoint->port_ = ports.front();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", address,
                                               " (address in use or not local?): ", e.what()));
  }
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

bool IsLoopbackAddress(const std::string& address) {
  const std::string host = HostOf(address);
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace fedanon::server
