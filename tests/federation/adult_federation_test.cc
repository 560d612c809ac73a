// UCI Adult split over 3 and over 5 hospitals (when ../shared/datasets/adult is present): the
// horizontal federation must reproduce the centralized run on the union exactly — the same
// specialization sequence and the same integrated table as a multiset of rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/adult_data.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

class AdultFederation : public ::testing::TestWithParam<int> {};

TEST_P(AdultFederation, EqualsCentralizedOnTheUnion) {
  const std::string adult = AdultDir() + "/adult_clean.csv";
  if (!std::filesystem::exists(adult)) {
    GTEST_SKIP() << "UCI Adult not found at " << adult << " (../shared/datasets/adult)";
  }
  const int parties = GetParam();
  const std::map<std::string, std::string> taxonomies = AdultTaxonomies();
  ASSERT_OK_AND_ASSIGN(Table table, ReadCsvTable(adult));

  // Centralized on the union.
  const Job job =
      WriteJob(absl::StrCat("adult_central_", parties), kAdultHorizontalSpec, table, taxonomies);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));

  // Federated: round-robin split into `parties` hospitals.
  std::vector<std::map<std::string, std::string>> files(parties, taxonomies);
  std::vector<Table> parts(parties);
  for (auto& p : parts) p.header = table.header;
  for (size_t r = 0; r < table.rows.size(); ++r) parts[r % parties].rows.push_back(table.rows[r]);
  for (int p = 0; p < parties; ++p) files[p]["table.csv"] = ToCsv(parts[p]);
  ASSERT_OK_AND_ASSIGN(auto fed,
                       InProcessFederation::Create(absl::StrCat("adult_fed_", parties), files));
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml(kAdultHorizontalSpec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : fed->names) req.add_parties(n);
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) (*req.mutable_taxonomies())[a.name()] = taxonomies.at(a.taxonomy());
  }
  ASSERT_OK_AND_ASSIGN(auto info, fed->Submit(req));
  const auto done = fed->Wait(info.job_id());
  ASSERT_EQ(done.state(), fedanon::v1::JOB_STATE_DONE) << done.failure_reason();
  ASSERT_EQ(done.report().steps_size(), central.steps_size());
  for (int i = 0; i < central.steps_size(); ++i) {
    EXPECT_EQ(done.report().steps(i).attribute(), central.steps(i).attribute());
    EXPECT_EQ(done.report().steps(i).value(), central.steps(i).value());
    EXPECT_DOUBLE_EQ(done.report().steps(i).score(), central.steps(i).score());
  }
  ASSERT_OK_AND_ASSIGN(std::string csv, fed->leader->Result(info.job_id()));
  ASSERT_OK_AND_ASSIGN(Table fed_out, ParseCsvText(csv, fed->dir));
  EXPECT_EQ(fed_out.rows.size(), table.rows.size());
  EXPECT_EQ(RowsByColumns(fed_out, central_out.header),
            RowsByColumns(central_out, central_out.header));
}

INSTANTIATE_TEST_SUITE_P(Parties, AdultFederation, ::testing::Values(3, 5));

}  // namespace
}  // namespace fedanon::testing
