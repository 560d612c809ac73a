#include "server/leader/leader_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <array>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace fedanon::leader_daemon {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildHistogram;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// 1 ms .. ~17 min, ×4: a secure sum of a small job takes milliseconds, ID matching of a large
// one many minutes.
prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double s = 0.001; s < 1100; s *= 4) b.push_back(s);
  return b;
}

// 16 words .. 64 Mi words, ×4.
prometheus::Histogram::BucketBoundaries WordBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double w = 16; w <= double{1 << 26}; w *= 4) b.push_back(w);
  return b;
}

ClientMetric GaugeValue(double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

MetricFamily GaugeFamily(std::string name, std::string help) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = MetricType::Gauge;
  return f;
}

// "JOB_STATE_RUNNING" -> "running".
std::string StateLabel(fedanon::v1::JobState state) {
  return absl::AsciiStrToLower(absl::StripPrefix(fedanon::v1::JobState_Name(state), "JOB_STATE_"));
}

std::vector<MetricFamily> ScrapeTime(const LeaderMetricsSources& sources) {
  std::vector<MetricFamily> out;
  if (sources.job_counts) {
    const absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>> counts = sources.job_counts();
    MetricFamily up = GaugeFamily("fedanon_leader_job_store_up",
                                  "1 while the job store answers, 0 while it is unavailable");
    up.metric.push_back(GaugeValue(counts.ok() ? 1 : 0));
    out.push_back(std::move(up));
    if (counts.ok()) {
      MetricFamily states =
          GaugeFamily("fedanon_leader_jobs", "Jobs the job store holds, by state");
      for (int s = fedanon::v1::JOB_STATE_SUBMITTED; s <= fedanon::v1::JOB_STATE_CANCELLED; ++s) {
        const auto state = static_cast<fedanon::v1::JobState>(s);
        const auto it = counts->find(state);
        states.metric.push_back(
            GaugeValue(static_cast<double>(it == counts->end() ? 0 : it->second),
                       {{"state", StateLabel(state)}}));
      }
      out.push_back(std::move(states));
    }
  }
  if (sources.queued_jobs) {
    MetricFamily queued = GaugeFamily("fedanon_leader_queued_jobs",
                                      "Jobs submitted and waiting for a free job worker");
    queued.metric.push_back(GaugeValue(static_cast<double>(sources.queued_jobs())));
    out.push_back(std::move(queued));
  }
  if (sources.connected_parties) {
    MetricFamily parties = GaugeFamily("fedanon_leader_connected_parties",
                                       "Parties whose stream to the leader is open now");
    parties.metric.push_back(GaugeValue(static_cast<double>(sources.connected_parties())));
    out.push_back(std::move(parties));
  }
  return out;
}

}  // namespace

LeaderMetrics::LeaderMetrics(server::MetricsRegistry* registry, LeaderMetricsSources sources)
    : rounds_(BuildCounter()
                  .Name("fedanon_leader_rounds_total")
                  .Help("Specialization rounds committed (horizontal and vertical jobs)")
                  .Register(registry->registry())
                  .Add({})),
      phase_seconds_(BuildHistogram()
                         .Name("fedanon_leader_phase_seconds")
                         .Help("Latency of protocol phases: one secure sum, one vertical round "
                               "(instruction), a vertical job's ID matching")
                         .Register(registry->registry())),
      secure_sum_words_(BuildHistogram()
                            .Name("fedanon_leader_secure_sum_words")
                            .Help("Length of each secure-sum vector in 64-bit words")
                            .Register(registry->registry())
                            .Add({}, WordBuckets())),
      ids_matched_(BuildCounter()
                       .Name("fedanon_leader_ids_matched_total")
                       .Help("Records matched by ID matching (vertical jobs: common records)")
                       .Register(registry->registry())
                       .Add({})),
      id_matching_seconds_(BuildCounter()
                               .Name("fedanon_leader_id_matching_seconds_total")
                               .Help("Time spent in ID matching (divide ids_matched by it for "
                                     "the matching rate)")
                               .Register(registry->registry())
                               .Add({})),
      jobs_finished_(BuildCounter()
                         .Name("fedanon_leader_jobs_finished_total")
                         .Help("Jobs that ended since the leader started, by outcome")
                         .Register(registry->registry())),
      failures_(BuildCounter()
                    .Name("fedanon_leader_job_failures_total")
                    .Help("Failed jobs by reason category (timeout, party_unavailable, refused, "
                          "invalid_job, data_error, resource_exhausted, internal)")
                    .Register(registry->registry())),
      bytes_sent_(BuildCounter()
                      .Name("fedanon_leader_party_bytes_sent_total")
                      .Help("Bytes of requests the leader sent on each party's stream")
                      .Register(registry->registry())),
      bytes_received_(BuildCounter()
                          .Name("fedanon_leader_party_bytes_received_total")
                          .Help("Bytes of replies the leader received on each party's stream")
                          .Register(registry->registry())) {
  for (const leader::Phase phase :
       {leader::Phase::kSecureSum, leader::Phase::kInstruction, leader::Phase::kIdMatching}) {
    phase_seconds_.Add({{"phase", std::string(leader::PhaseName(phase))}}, SecondsBuckets());
  }
  for (const char* outcome : {"done", "failed", "cancelled"}) {
    jobs_finished_.Add({{"outcome", outcome}});
  }
  registry->AddScrapeTimeFamilies([sources = std::move(sources)] { return ScrapeTime(sources); });
}

void LeaderMetrics::RoundDone() { rounds_.Increment(); }

void LeaderMetrics::PhaseDone(leader::Phase phase, absl::Duration took) {
  // Family::Add returns the existing series for known labels.
  phase_seconds_.Add({{"phase", std::string(leader::PhaseName(phase))}}, SecondsBuckets())
      .Observe(absl::ToDoubleSeconds(took));
}

void LeaderMetrics::SecureSumVector(uint64_t words) {
  secure_sum_words_.Observe(static_cast<double>(words));
}

void LeaderMetrics::IdsMatched(uint64_t ids, absl::Duration took) {
  ids_matched_.Increment(static_cast<double>(ids));
  id_matching_seconds_.Increment(absl::ToDoubleSeconds(took));
}

void LeaderMetrics::JobDone() { jobs_finished_.Add({{"outcome", "done"}}).Increment(); }
void LeaderMetrics::JobCancelled() { jobs_finished_.Add({{"outcome", "cancelled"}}).Increment(); }

void LeaderMetrics::JobFailed(std::string_view category) {
  jobs_finished_.Add({{"outcome", "failed"}}).Increment();
  failures_.Add({{"reason", std::string(category)}}).Increment();
}

void LeaderMetrics::Sent(const std::string& party, uint64_t bytes) {
  bytes_sent_.Add({{"party", party}}).Increment(static_cast<double>(bytes));
}

void LeaderMetrics::Received(const std::string& party, uint64_t bytes) {
  bytes_received_.Add({{"party", party}}).Increment(static_cast<double>(bytes));
}

}  // namespace fedanon::leader_daemon
