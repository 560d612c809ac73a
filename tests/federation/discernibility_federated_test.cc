// The discernibility known answer (mohammed2009 Table 1 / Example 3) in a horizontal in-process
// federation: three hospitals holding parts of Table 1 rank by the discernibility cost removed
// (the leader's engine sees the secure sums only), start with ANY_Job at score 121 − 61 = 60, and
// release exactly the centralized table.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr char kSpec[] = R"(name: example-3
attributes:
  - {name: Age, role: qid, taxonomy: age.csv}
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Transfuse, role: class, values: [Y, N]}
  - {name: Surgery, role: sensitive}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}
score: discernibility
partitioning: horizontal
)";

const std::map<std::string, std::string>& Taxonomies() {
  static const auto* t = new std::map<std::string, std::string>{
      {"job.csv",
       "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;ANY_Job\n"
       "Carpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-collar;ANY_Job\n"
       "Manager;White-collar;ANY_Job\nLawyer;Professional;White-collar;ANY_Job\n"
       "Doctor;Professional;White-collar;ANY_Job\n"},
      {"sex.csv", "M;ANY_Sex\nF;ANY_Sex\n"},
      {"age.csv",
       "24;[1-30);[1-60);[1-99)\n34;[30-60);[1-60);[1-99)\n44;[30-60);[1-60);[1-99)\n"
       "58;[30-60);[1-60);[1-99)\n63;[60-99);[1-99)\n"}};
  return *t;
}

Table Table1() {
  Table t;
  t.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  t.rows = {{"1", "Janitor", "M", "34", "Y", "Transgender"},
            {"2", "Doctor", "M", "58", "N", "Plastic"},
            {"3", "Mover", "M", "34", "Y", "Transgender"},
            {"4", "Lawyer", "M", "24", "N", "Vascular"},
            {"5", "Mover", "M", "58", "N", "Urology"},
            {"6", "Janitor", "M", "44", "Y", "Plastic"},
            {"7", "Doctor", "M", "24", "N", "Urology"},
            {"8", "Lawyer", "F", "58", "N", "Plastic"},
            {"9", "Doctor", "F", "44", "N", "Vascular"},
            {"10", "Carpenter", "F", "63", "Y", "Vascular"},
            {"11", "Technician", "F", "63", "Y", "Plastic"}};
  return t;
}

TEST(DiscernibilityExample3Federated, ThreeHospitalsRankLikeThePaperAndTheCentralizedRun) {
  // Centralized on the whole table.
  std::map<std::string, std::string> tax;
  for (const auto& [file, text] : Taxonomies()) tax[file] = text;
  const Job job = WriteJob("disc_fed_central", kSpec, Table1(), tax);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));

  // Hospitals {1-3}, {4-7}, {8-11}.
  const Table all = Table1();
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{0, 3}, {3, 7}, {7, 11}}) {
    Table part;
    part.header = all.header;
    for (int r = lo; r < hi; ++r) part.rows.push_back(all.rows[r]);
    std::map<std::string, std::string> f = Taxonomies();
    f["table.csv"] = ToCsv(part);
    files.push_back(std::move(f));
  }
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create("disc_fed", files));
  ASSERT_OK_AND_ASSIGN(auto spec, spec::ParseJobSpecYaml(kSpec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& p : fed->names) req.add_parties(p);
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty())
      (*req.mutable_taxonomies())[a.name()] = Taxonomies().at(a.taxonomy());
  }
  ASSERT_OK_AND_ASSIGN(auto submitted, fed->Submit(req));
  const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  const fedanon::v1::Report& report = info.report();

  // Example 3: ANY_Job first (Age is attribute 0, so this is the score's choice), score 60.
  ASSERT_GT(report.steps_size(), 0);
  EXPECT_EQ(report.steps(0).value(), "ANY_Job");
  EXPECT_DOUBLE_EQ(report.steps(0).score(), 60);
  ASSERT_EQ(report.steps_size(), central.steps_size());
  for (int i = 0; i < central.steps_size(); ++i) {
    EXPECT_EQ(report.steps(i).value(), central.steps(i).value()) << "step " << i;
    EXPECT_DOUBLE_EQ(report.steps(i).score(), central.steps(i).score()) << "step " << i;
  }
  ASSERT_OK_AND_ASSIGN(std::string csv, fed->leader->Result(submitted.job_id()));
  ASSERT_OK_AND_ASSIGN(Table fed_out, ParseCsvText(csv, fed->dir));
  EXPECT_EQ(RowsByColumns(fed_out, central_out.header),
            RowsByColumns(central_out, central_out.header));
}

}  // namespace
}  // namespace fedanon::testing
