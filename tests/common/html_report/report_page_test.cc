// The job page (common/html_report): self-contained (no script, no fetch), every figure marked
// with its report path and shown at its stated precision, labels escaped, the cut drawn on the
// taxonomy with the cut's nodes marked, and the view-log summary counted.
#include "common/html_report/report_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "common/html_report/cut_tree.h"
#include "common/html_report/view_log_summary.h"
#include "tests/support/status_matchers.h"

namespace fedanon::html_report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

fedanon::v1::Report SampleReport() {
  fedanon::v1::Report r;
  r.set_job_name("ward <7> & co");
  r.set_version("fedanon test");
  r.set_records_in(100);
  r.set_records_out(98);
  r.set_records_dropped(2);
  r.set_groups(7);
  r.set_smallest_group(12);
  r.set_discernibility_ratio(0.066188);
  auto* cut = r.add_cut();
  cut->set_attribute("job");
  cut->add_values("White-collar");
  cut->add_values("Welder");
  cut->add_values("Driver");
  auto* step = r.add_steps();
  step->set_attribute("job");
  step->set_value("ANY");
  step->add_children("White-collar");
  step->add_children("Blue-collar");
  auto* after = r.mutable_risk_after();
  after->set_records(98);
  after->set_threshold(0.2);
  after->mutable_prosecutor()->set_highest(1.0 / 12);
  after->mutable_prosecutor()->set_records_at_risk(0.12346);
  after->mutable_marketer()->set_average(7.0 / 98);
  auto* pitman = after->add_uniqueness();
  pitman->set_model("pitman");
  pitman->set_available(true);
  pitman->set_uniques(1234.56);
  pitman->set_fraction(1.23456e-6);
  after->set_population_size(1e9);
  auto* loss = r.mutable_utility()->add_attribute_loss();
  loss->set_attribute("job");
  loss->set_loss(0.25);
  r.mutable_utility()->set_average_loss(0.25);
  auto* check = r.add_model_checks();
  check->set_requirement("every combination of values of 1 QIDs has >= 10 records");
  check->set_measured("smallest class 12");
  check->set_passed(true);
  return r;
}

std::shared_ptr<const table::Taxonomy> JobTaxonomy() {
  return std::make_shared<const table::Taxonomy>(*table::Taxonomy::ParseArx(
      "Manager;White-collar;ANY\nClerk;White-collar;ANY\n"
      "Welder;Blue-collar;ANY\nDriver;Blue-collar;ANY\nFarmer;Blue-collar;ANY\n",
      "job.csv", "job"));
}

TEST(ReportPageTest, FiguresCarryTheirReportPaths) {
  ReportPage page;
  page.report = SampleReport();
  page.taxonomies["job"] = JobTaxonomy();
  const std::string html = RenderReportHtml(page);
  EXPECT_THAT(html, HasSubstr("data-check=\"records_in\">100<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"discernibility_ratio\">0.066188<"));  // 6 decimals
  EXPECT_THAT(html, HasSubstr("data-check=\"risk_after.prosecutor.highest\">0.0833<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"risk_after.prosecutor.records_at_risk\">12.35%<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"risk_after.uniqueness.0.uniques\">1234.6<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"risk_after.uniqueness.0.fraction\">1.235e-06<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"utility.attribute_loss.0.loss\">0.2500<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"cut.0.values.1\">Welder<"));
  EXPECT_THAT(html, HasSubstr("data-check=\"model_checks.0.passed\">yes<"));
  EXPECT_THAT(html, HasSubstr("ward &lt;7&gt; &amp; co"));
  EXPECT_THAT(html, Not(HasSubstr("ward <7>")));
  // Every data-check key once.
  std::set<std::string> keys;
  const std::regex key("data-check=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), key); it != std::sregex_iterator();
       ++it) {
    EXPECT_TRUE(keys.insert((*it)[1].str()).second) << (*it)[1].str();
  }
  EXPECT_GT(keys.size(), 20u);
}

TEST(ReportPageTest, SelfContained) {
  ReportPage page;
  page.report = SampleReport();
  page.kind = "horizontal";
  page.parties = {"a", "b"};
  const std::string html = RenderReportHtml(page);
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("<style>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(html, HasSubstr("horizontal federation of 2 parties"));
  EXPECT_THAT(html, HasSubstr("The view log was not given"));
}

// The cut {White-collar, Welder, Driver} on job's taxonomy: the root, Blue-collar (not in the
// cut, drawn as the way down) and the three cut nodes; White-collar stands for 2 values.
TEST(CutTreeTest, FromTheTaxonomy) {
  const fedanon::v1::Report r = SampleReport();
  const std::shared_ptr<const table::Taxonomy> t = JobTaxonomy();
  const CutTree tree = BuildCutTree(r.cut(0), {}, t.get());
  ASSERT_TRUE(tree.from_taxonomy);
  ASSERT_EQ(tree.nodes.size(), 5u);
  EXPECT_EQ(tree.nodes[0].label, "ANY");
  EXPECT_FALSE(tree.nodes[0].cut);
  int cut = 0;
  for (const auto& n : tree.nodes) {
    cut += n.cut;
    if (n.label == "White-collar") {
      EXPECT_EQ(n.values_below, 2u);
    }
    if (n.label == "Blue-collar") {
      EXPECT_FALSE(n.cut);
    }
  }
  EXPECT_EQ(cut, 3);
  const std::string svg = CutTreeSvg(tree);
  EXPECT_THAT(svg, HasSubstr("<title>White-collar</title>"));
  EXPECT_THAT(svg, HasSubstr("White-collar (2)"));
  EXPECT_EQ(CutTreeSvg(tree, 2), "");  // three rows do not fit in two
}

// Without the taxonomy the steps give the explored part: ANY -> White-collar, Blue-collar; cut
// values the steps do not reach hang under the root.
TEST(CutTreeTest, FromTheSteps) {
  const fedanon::v1::Report r = SampleReport();
  const CutTree tree = BuildCutTree(r.cut(0), {&r.steps(0)}, nullptr);
  EXPECT_FALSE(tree.from_taxonomy);
  EXPECT_EQ(tree.nodes[0].label, "ANY");
  std::set<std::string> labels;
  for (const auto& n : tree.nodes) labels.insert(n.label);
  EXPECT_EQ(labels,
            (std::set<std::string>{"ANY", "White-collar", "Blue-collar", "Welder", "Driver"}));
}

TEST(ViewLogSummaryTest, CountsPerKind) {
  const std::string log =
      R"({"round":1,"kind":"candidate_counts","attribute":"job","labelled":true,"counts":[3,0,5]})"
      "\n"
      R"({"round":2,"kind":"candidate_counts","attribute":"age","labelled":false,"counts":[2]})"
      "\n"
      R"({"round":2,"kind":"released_counts","attribute":"","labelled":false,"counts":[7,1]})"
      "\n";
  ASSERT_OK_AND_ASSIGN(const ViewLogSummary s, SummarizeViewLog(log));
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.integers, 6u);
  EXPECT_EQ(s.last_round, 2u);
  ASSERT_EQ(s.kinds.size(), 2u);
  EXPECT_EQ(s.kinds[0].kind, "candidate_counts");
  EXPECT_EQ(s.kinds[0].entries, 2u);
  EXPECT_EQ(s.kinds[0].labelled_entries, 1u);
  EXPECT_EQ(s.kinds[0].smallest_nonzero, 2u);
  EXPECT_EQ(s.kinds[0].attributes, (std::set<std::string>{"age", "job"}));
  EXPECT_EQ(s.kinds[1].smallest_nonzero, 1u);
  EXPECT_THAT(SummarizeViewLog("{\"round\":1}\n"),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, "line 1"));
}

}  // namespace
}  // namespace fedanon::html_report
