// The leader's Prometheus metrics after a real horizontal job over the in-process federation:
// the leader reports to server::LeaderMetrics, whose endpoint is scraped over loopback HTTP with a
// plain socket. The counters must match the job's report, and the exposition must carry no table
// value (labels are bounded categories only).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "server/leader_metrics.h"
#include "server/metrics.h"
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

TEST(LeaderMetricsFederation, HorizontalJobIsCountedAndExposedOverHttp) {
  const std::string gen = FreshDir("metrics_federation_gen");
  common::DatagenOptions o;
  o.rows = 600;
  o.seed = 3;
  o.out_dir = gen;
  o.parties = 3;
  ASSERT_OK(common::GenerateDataset(o).status());
  std::map<std::string, std::string> tax;
  for (const auto& e : std::filesystem::directory_iterator(gen + "/tax")) {
    tax["tax/" + e.path().filename().string()] = Slurp(e.path().string());
  }
  std::vector<std::map<std::string, std::string>> files;
  for (int p = 1; p <= 3; ++p) {
    auto f = tax;
    f["table.csv"] = Slurp(gen + "/party" + std::to_string(p) + ".csv");
    files.push_back(std::move(f));
  }
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create("metrics_federation", files));

  // The leader again, now reporting to the metrics (as fedanon-leader wires it).
  server::MetricsRegistry registry;
  leader::Leader* current = nullptr;
  server::LeaderMetricsSources sources;
  sources.jobs = [&current]() -> absl::StatusOr<std::vector<fedanon::v1::JobInfo>> {
    if (absl::Status st = current->CheckStore(); !st.ok()) return st;
    return current->List();
  };
  sources.connected_parties = [&fed] { return fed->names.size(); };
  server::LeaderMetrics metrics(&registry, std::move(sources));
  ASSERT_OK_AND_ASSIGN(auto seal,
                       fed->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24)));
  leader::LeaderOptions lo;
  lo.name = "leader";
  lo.data_dir = fed->dir + "/metrics-leader";
  lo.round_timeout = absl::Seconds(60);
  lo.ca_pem = fed->ca->cert_pem();
  lo.seal_cert_pem = seal.cert_pem;
  lo.seal_key_pem = seal.key_pem;
  lo.observer = &metrics;
  ASSERT_OK_AND_ASSIGN(fed->leader, leader::Leader::Create(lo, &fed->channel));
  current = fed->leader.get();
  ASSERT_OK_AND_ASSIGN(auto endpoint, server::MetricsEndpoint::Start("127.0.0.1:0", registry));
  ASSERT_GT(endpoint->port(), 0);

  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       common::ParseJobSpecYaml(Slurp(gen + "/horizontal.yaml"), "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : fed->names) req.add_parties(n);
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) (*req.mutable_taxonomies())[a.name()] = tax.at(a.taxonomy());
  }
  ASSERT_OK_AND_ASSIGN(auto submitted, fed->Submit(req));
  const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo done, fed->leader->Get(submitted.job_id()));

  const std::string response = HttpGet(endpoint->port(), "/metrics");
  ASSERT_THAT(response, HasSubstr("200 OK"));
  const std::string body = response.substr(response.find("\r\n\r\n") + 4);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs{state=\"done\"}"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs{state=\"failed\"}"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_queued_jobs"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_job_store_up"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_connected_parties"), 3) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_jobs_finished_total{outcome=\"done\"}"), 1) << body;
  // One round per specialization of the report, one secure-sum observation per secure sum.
  EXPECT_EQ(MetricValue(body, "fedanon_leader_rounds_total"), done.report().steps_size()) << body;
  EXPECT_GT(done.report().steps_size(), 0);
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"secure_sum\"}"),
            static_cast<double>(done.report().secure_sums()))
      << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_secure_sum_words_count"),
            static_cast<double>(done.report().secure_sums()))
      << body;
  EXPECT_GT(MetricValue(body, "fedanon_leader_secure_sum_words_sum"), 0) << body;
  EXPECT_EQ(MetricValue(body, "fedanon_leader_phase_seconds_count{phase=\"id_matching\"}"), 0);
  // No table value, job id or spec name reaches the exposition.
  for (const char* value : {"Bachelors", "Private", "Male", "United-States", "job-"}) {
    EXPECT_THAT(body, Not(HasSubstr(value)));
  }
  if (!spec.name().empty()) {
    EXPECT_THAT(body, Not(HasSubstr(spec.name())));
  }
  fed->leader.reset();
}

}  // namespace
}  // namespace fedanon::testing
