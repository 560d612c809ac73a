// The leader's Prometheus metrics after real jobs over the in-process federation: the leader
// reports to leader_daemon::LeaderMetrics, whose endpoint is scraped over loopback HTTP with a
// plain socket. The counters must match the jobs' reports, and the exposition must carry no table
// value or job id (labels are bounded categories only).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "server/leader/leader_metrics.h"
#include "server/runtime/metrics.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/http_get.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Generated Adult-like data for `parties` parties (hospital-a, ...): the spec and each party's
// files (its table and the taxonomies).
struct Generated {
  std::string spec;
  std::map<std::string, std::string> taxonomies;
  std::vector<std::map<std::string, std::string>> files;
};

Generated Generate(const std::string& name, int parties, bool vertical) {
  Generated g;
  const std::string dir = FreshDir(name + "_gen");
  datagen::DatagenOptions o;
  o.rows = vertical ? 300 : 600;
  o.seed = 3;
  o.out_dir = dir;
  o.parties = parties;
  if (vertical) o.partition = datagen::DatagenOptions::Partition::kVertical;
  EXPECT_TRUE(datagen::GenerateDataset(o).ok());
  g.spec = Slurp(dir + (vertical ? "/vertical.yaml" : "/horizontal.yaml"));
  for (int p = parties - 1; p >= 0; --p) {  // party10 before party1
    g.spec = std::regex_replace(g.spec, std::regex(absl::StrCat("party: party", p + 1, "\\b")),
                                absl::StrCat("party: hospital-", std::string(1, 'a' + p)));
  }
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tax")) {
    g.taxonomies["tax/" + e.path().filename().string()] = Slurp(e.path().string());
  }
  for (int p = 1; p <= parties; ++p) {
    auto f = g.taxonomies;
    f["table.csv"] = Slurp(absl::StrCat(dir, "/party", p, ".csv"));
    g.files.push_back(std::move(f));
  }
  return g;
}

// A federation whose leader reports to metrics served on a loopback port.
struct MeteredFederation {
  std::unique_ptr<InProcessFederation> fed;
  server::MetricsRegistry registry;
  std::unique_ptr<leader_daemon::LeaderMetrics> metrics;
  std::unique_ptr<server::MetricsEndpoint> endpoint;

  ~MeteredFederation() {
    if (fed != nullptr) fed->leader.reset();  // before the metrics it reports to
  }

  absl::Status Start(const std::string& name, const Generated& g) {
    ASSIGN_OR_RETURN(fed, InProcessFederation::Create(name, g.files));
    leader_daemon::LeaderMetricsSources sources;
    sources.job_counts = [this]() -> absl::StatusOr<std::map<fedanon::v1::JobState, int64_t>> {
      RETURN_IF_ERROR(fed->leader->CheckStore());
      return fed->leader->store()->CountByState();
    };
    sources.queued_jobs = [this] { return fed->leader->Queue().queued; };
    sources.connected_parties = [this] { return fed->names.size(); };
    metrics = std::make_unique<leader_daemon::LeaderMetrics>(&registry, std::move(sources));
    // The leader again, now reporting to the metrics (as fedanon-leader wires it).
    ASSIGN_OR_RETURN(auto seal,
                     fed->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24)));
    leader::LeaderOptions lo;
    lo.name = "leader";
    lo.data_dir = fed->dir + "/metrics-leader";
    lo.round_timeout = absl::Seconds(60);
    lo.ca_pem = fed->ca->cert_pem();
    lo.seal_cert_pem = seal.cert_pem;
    lo.seal_key_pem = seal.key_pem;
    lo.observer = metrics.get();
    ASSIGN_OR_RETURN(fed->leader, leader::Leader::Create(lo, &fed->channel));
    ASSIGN_OR_RETURN(endpoint, server::MetricsEndpoint::Start("127.0.0.1:0", registry));
    return absl::OkStatus();
  }

  // Submits the generated job to every party and waits for it; its final info.
  absl::StatusOr<fedanon::v1::JobInfo> Run(const Generated& g) {
    ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(g.spec, "job.yaml"));
    fedanon::v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    for (const auto& n : fed->names) req.add_parties(n);
    for (const auto& a : spec.attributes()) {
      if (!a.taxonomy().empty()) {
        (*req.mutable_taxonomies())[a.name()] = g.taxonomies.at(a.taxonomy());
      }
    }
    ASSIGN_OR_RETURN(auto submitted, fed->Submit(req));
    fed->Wait(submitted.job_id());
    return fed->leader->Get(submitted.job_id());
  }

  // The body of GET /metrics.
  std::string Scrape() const {
    const std::string response = HttpGet(endpoint->port(), "/metrics");
    EXPECT_THAT(response, HasSubstr("200 OK"));
    const size_t body = response.find("\r\n\r\n");
    return body == std::string::npos ? "" : response.substr(body + 4);
  }
};

void ExpectNoDataOrIds(const std::string& body) {
  for (const char* value : {"Bachelors", "Private", "Male", "United-States", "job-", "person"}) {
    EXPECT_THAT(body, Not(HasSubstr(value)));
  }
}

TEST(LeaderMetricsFederation, HorizontalJobIsCountedAndExposedOverHttp) {
  const Generated g = Generate("metrics_horizontal", 3, /*vertical=*/false);
  MeteredFederation m;
  ASSERT_OK(m.Start("metrics_horizontal", g));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo done, m.Run(g));
  ASSERT_EQ(done.state(), fedanon::v1::JOB_STATE_DONE) << done.failure_reason();

  const std::string body = m.Scrape();
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs{state=\"done\"}"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs{state=\"failed\"}"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_queued_jobs"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_job_store_up"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_connected_parties"), 3) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs_finished_total{outcome=\"done\"}"), 1) << body;
  // One round per specialization of the report, one secure-sum observation per secure sum.
  EXPECT_GT(done.report().steps_size(), 0);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_rounds_total"), done.report().steps_size()) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"secure_sum\"}"),
            static_cast<double>(done.report().secure_sums()))
      << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_secure_sum_words_count"),
            static_cast<double>(done.report().secure_sums()))
      << body;
  EXPECT_GT(MetricValue(body, "fedanon_leader_secure_sum_words_sum"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"id_matching\"}"), 0);
  ExpectNoDataOrIds(body);
}

TEST(LeaderMetricsFederation, VerticalJobCountsIdMatchingAndRounds) {
  const Generated g = Generate("metrics_vertical", 2, /*vertical=*/true);
  MeteredFederation m;
  ASSERT_OK(m.Start("metrics_vertical", g));
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo done, m.Run(g));
  ASSERT_EQ(done.state(), fedanon::v1::JOB_STATE_DONE) << done.failure_reason();

  const std::string body = m.Scrape();
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs{state=\"done\"}"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"id_matching\"}"), 1)
      << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_ids_matched_total"),
            static_cast<double>(done.report().records_in()))
      << body;
  EXPECT_GT(MetricValue(body, "fedanon_leader_id_matching_seconds_total"), 0) << body;
  // Every committed specialization is a round; each vertical round (also the last, in which
  // every party declines) is one instruction phase.
  EXPECT_EQ(MetricValue(body, "fedanon_leader_rounds_total"), done.report().steps_size()) << body;
  EXPECT_GT(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"instruction\"}"),
            MetricValue(body, "fedanon_leader_rounds_total"))
      << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"secure_sum\"}"), 0);
  ExpectNoDataOrIds(body);
}

}  // namespace
}  // namespace fedanon::testing
