// `fedanon sweep` in process on a synthetic Adult-like table (gen-data, 1,500 records): the grid
// parser, one chart point per grid cell and method that produced a table (cells whose requirement
// cannot be met are listed, not drawn), a well-formed page, a CSV row per point, and the
// centralized points equal to running app::Anonymize and UtilityEvaluator by hand.
#include "cli/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "app/anonymize.h"
#include "cli/sweep_report.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"

namespace fedanon {
namespace {

using testing::FreshDir;
using ::testing::HasSubstr;
using testing::WriteText;

// Checks that `xml` is well-formed enough for an XML parser: every element closed in order,
// attribute values quoted, every '&' an entity. Returns "" or the first problem.
std::string WellFormedProblem(const std::string& xml) {
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = xml.find_first_of("<&", pos)) != std::string::npos) {
    if (xml[pos] == '&') {
      const size_t semi = xml.find(';', pos);
      if (semi == std::string::npos || semi - pos > 8) return absl::StrCat("bare & at ", pos);
      pos = semi + 1;
      continue;
    }
    const size_t end = xml.find('>', pos);
    if (end == std::string::npos) return absl::StrCat("unterminated tag at ", pos);
    const std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.rfind("!DOCTYPE", 0) == 0) continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes in <" + tag;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "unexpected </" + tag.substr(1);
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (tag.back() != '/') open.push_back(name);
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

// Counts the occurrences of `needle` in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("sweep");
    datagen::DatagenOptions gen;
    gen.rows = 1500;
    gen.seed = 5;
    gen.out_dir = dir_;
    ASSERT_OK(datagen::GenerateDataset(gen).status());
    spec_path_ = dir_ + "/job.yaml";
    raw_path_ = dir_ + "/table.csv";
    ASSERT_OK_AND_ASSIGN(spec_, spec::LoadJobSpec(spec_path_));
  }
  std::string dir_, spec_path_, raw_path_;
  fedanon::v1::JobSpec spec_;
};

TEST_F(SweepTest, ParsesGrids) {
  ASSERT_OK_AND_ASSIGN(cli::SweepGrid g, cli::ParseSweepGrid("L=2,4  K=20,40,60", spec_));
  EXPECT_EQ(g.L, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(g.K, (std::vector<uint32_t>{20, 40, 60}));
  EXPECT_EQ(g.C, (std::vector<double>{0.2}));  // the spec's
  EXPECT_EQ(g.cells(), 6u);
  ASSERT_OK_AND_ASSIGN(g, cli::ParseSweepGrid("C=0.1,0.3", spec_));
  EXPECT_EQ(g.L, (std::vector<uint32_t>{4}));
  EXPECT_EQ(g.K, (std::vector<uint32_t>{20}));
  EXPECT_EQ(g.C, (std::vector<double>{0.1, 0.3}));

  auto error = [&](const std::string& grid) {
    return std::string(cli::ParseSweepGrid(grid, spec_).status().message());
  };
  EXPECT_THAT(error("M=1"), HasSubstr("unknown key 'M'"));
  EXPECT_THAT(error("L=2 L=3"), HasSubstr("L is given twice"));
  EXPECT_THAT(error("K=20,x"), HasSubstr("K: 'x' is not a non-negative integer"));
  EXPECT_THAT(error("K=-5"), HasSubstr("'-5' is not a non-negative integer"));
  EXPECT_THAT(error("L"), HasSubstr("'L' is not KEY=v1,v2"));
  EXPECT_THAT(error("  "), HasSubstr("--grid is empty"));
  EXPECT_THAT(error("L=14"), HasSubstr("exceeds the number of QID attributes (12)"));
  EXPECT_THAT(error("C=1.5"), HasSubstr("privacy.C = 1.5 must be in (0, 1]"));
  fedanon::v1::JobSpec templates = spec_;
  templates.mutable_privacy()->set_model(fedanon::v1::PRIVACY_MODEL_TEMPLATES);
  EXPECT_THAT(std::string(cli::ParseSweepGrid("L=2", templates).status().message()),
              HasSubstr("privacy.model: lkc"));
}

TEST_F(SweepTest, OnePointPerCellInAWellFormedReport) {
  cli::SweepOptions options;
  options.spec_path = spec_path_;
  options.raw_path = raw_path_;
  options.grid = "L=1,2 K=10,40,5000";  // K = 5000 exceeds the table: no release
  options.naive_parties = 2;
  std::vector<std::string> progress;
  options.progress = [&](const std::string& line) { progress.push_back(line); };
  ASSERT_OK_AND_ASSIGN(cli::SweepResult result, cli::RunSweep(options));
  ASSERT_EQ(result.points.size(), 12u);  // 6 cells x (centralized, naive)
  EXPECT_EQ(progress.size(), 2u + 12u);
  size_t ok = 0;
  for (const cli::SweepPoint& p : result.points) {
    EXPECT_EQ(p.ok, p.K != 5000) << p.method << " L=" << p.L << " K=" << p.K << " " << p.error;
    if (!p.ok) {
      EXPECT_THAT(p.error, HasSubstr("cannot be met"));
    }
    ok += p.ok;
  }
  EXPECT_EQ(result.points[1].method, "naive");
  EXPECT_THAT(result.points[5].error, HasSubstr("party 1: "));
  EXPECT_EQ(result.baselines.records, 1500u);

  const std::string html = cli::SweepHtml(result);
  EXPECT_EQ(WellFormedProblem(html), "");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://", 0), html.find("http://www.w3.org/2000/svg"));  // no assets
  EXPECT_EQ(Count(html, "<svg "), 2u);
  EXPECT_EQ(Count(html, "<circle class=\"point\" data-chart=\"ce\""), ok);
  EXPECT_EQ(Count(html, "<circle class=\"point\" data-chart=\"dr\""), ok);
  for (const cli::SweepPoint& p : result.points) {
    if (!p.ok) continue;
    const std::string attrs = absl::StrCat("data-method=\"", p.method, "\" data-l=\"", p.L,
                                           "\" data-k=\"", p.K, "\" data-c=\"0.2\" data-value=\"");
    EXPECT_EQ(Count(html, attrs + absl::StrFormat("%.6g", p.classification_error) + "\""), 1u)
        << attrs;
    EXPECT_EQ(Count(html, attrs + absl::StrFormat("%.6g", p.discernibility_ratio) + "\""), 1u)
        << attrs;
  }
  // BE and UE as reference lines, failed cells listed in the table.
  EXPECT_EQ(Count(html, "class=\"reference\""), 2u);
  EXPECT_EQ(Count(html, "no release: "), 4u);

  const std::string csv = cli::SweepCsv(result);
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0], "method,L,K,C,status,CE,DR,groups,seconds,BE,UE,error");
  EXPECT_THAT(lines[1],
              ::testing::StartsWith(absl::StrFormat(
                  "centralized,1,10,0.2,ok,%.6f,%.6f,%d,", result.points[0].classification_error,
                  result.points[0].discernibility_ratio, result.points[0].groups)));
  EXPECT_THAT(lines[5], ::testing::StartsWith("centralized,1,5000,0.2,no release,,,,"));

  // Both files, atomically.
  ASSERT_OK(cli::WriteSweepReport(result, dir_ + "/r.html", dir_ + "/r.csv"));
  EXPECT_EQ(testing::ReadAll(dir_ + "/r.html"), html);
  EXPECT_EQ(testing::ReadAll(dir_ + "/r.csv"), csv);
}

TEST_F(SweepTest, CentralizedPointEqualsAnonymizeThenEvaluate) {
  cli::SweepOptions options;
  options.spec_path = spec_path_;
  options.raw_path = raw_path_;
  options.grid = "L=2 K=10";
  ASSERT_OK_AND_ASSIGN(cli::SweepResult result, cli::RunSweep(options));
  ASSERT_EQ(result.points.size(), 1u);
  ASSERT_TRUE(result.points[0].ok);

  fedanon::v1::JobSpec cell = spec_;
  cell.mutable_privacy()->set_l(2);
  cell.mutable_privacy()->set_k(10);
  WriteText(dir_ + "/cell.yaml", spec::JobSpecToYaml(cell));
  app::AnonymizeOptions anon;
  anon.spec_path = dir_ + "/cell.yaml";
  anon.input_path = raw_path_;
  anon.output_path = dir_ + "/cell.csv";
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, app::Anonymize(anon));
  ASSERT_OK_AND_ASSIGN(auto evaluator, evaluation::UtilityEvaluator::Create(cell, raw_path_));
  ASSERT_OK_AND_ASSIGN(evaluation::AnonymizedUtility u, evaluator->Evaluate(anon.output_path));
  EXPECT_EQ(result.points[0].classification_error, u.classification_error);
  EXPECT_EQ(result.points[0].discernibility_ratio, u.discernibility_ratio);
  EXPECT_NEAR(u.discernibility_ratio, report.discernibility_ratio(), 1e-12);  // engine's own DR
  EXPECT_EQ(result.points[0].groups, report.groups());
  EXPECT_EQ(result.baselines.baseline_error, evaluator->baselines().baseline_error);
}

// --local: every cell also with recoding: local, drawn dotted beside the global (solid) line; a
// local point equals anonymizing the cell with recoding: local by hand.
TEST_F(SweepTest, LocalRecodingBesideGlobal) {
  cli::SweepOptions options;
  options.spec_path = spec_path_;
  options.raw_path = raw_path_;
  options.grid = "L=2 K=10,40";
  options.local = true;
  ASSERT_OK_AND_ASSIGN(cli::SweepResult result, cli::RunSweep(options));
  ASSERT_EQ(result.points.size(), 4u);  // 2 cells x (centralized = global, local)
  EXPECT_EQ(result.points[0].method, "centralized");
  EXPECT_EQ(result.points[1].method, "local");
  for (const cli::SweepPoint& p : result.points) ASSERT_TRUE(p.ok) << p.method << " " << p.error;
  // Local recoding releases more, smaller groups on the same requirement.
  EXPECT_GT(result.points[1].groups, result.points[0].groups);
  EXPECT_LT(result.points[1].discernibility_ratio, result.points[0].discernibility_ratio);

  fedanon::v1::JobSpec cell = spec_;
  cell.mutable_privacy()->set_l(2);
  cell.mutable_privacy()->set_k(10);
  cell.set_recoding(fedanon::v1::RECODING_LOCAL);
  WriteText(dir_ + "/local.yaml", spec::JobSpecToYaml(cell));
  app::AnonymizeOptions anon;
  anon.spec_path = dir_ + "/local.yaml";
  anon.input_path = raw_path_;
  anon.output_path = dir_ + "/local.csv";
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report, app::Anonymize(anon));
  EXPECT_EQ(report.recoding(), fedanon::v1::RECODING_LOCAL);
  ASSERT_OK_AND_ASSIGN(auto evaluator, evaluation::UtilityEvaluator::Create(cell, raw_path_));
  ASSERT_OK_AND_ASSIGN(evaluation::AnonymizedUtility u, evaluator->Evaluate(anon.output_path));
  EXPECT_EQ(result.points[1].classification_error, u.classification_error);
  EXPECT_EQ(result.points[1].groups, report.groups());

  const std::string html = cli::SweepHtml(result);
  EXPECT_EQ(WellFormedProblem(html), "");
  EXPECT_EQ(Count(html, "data-chart=\"ce\" data-method=\"local\""), 2u);
  EXPECT_EQ(Count(html, "data-chart=\"ce\" data-method=\"centralized\""), 2u);
  EXPECT_THAT(html, HasSubstr("L=2 local recoding"));
  EXPECT_THAT(html, HasSubstr("L=2 global recoding"));
  EXPECT_THAT(html, HasSubstr("stroke-dasharray=\"2 3\""));
  const std::vector<std::string> lines =
      absl::StrSplit(cli::SweepCsv(result), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_THAT(lines[2], ::testing::StartsWith("local,2,10,0.2,ok,"));
}

TEST(SweepHtmlTest, AgainstCWhenOnlyCVaries) {
  cli::SweepResult r;
  r.baselines.baseline_error = 0.15;
  r.baselines.upper_bound_error = 0.25;
  for (double c : {0.1, 0.2, 0.3}) {
    cli::SweepPoint p;
    p.method = "centralized";
    p.L = 2;
    p.K = 100;
    p.C = c;
    p.ok = c > 0.1;
    p.error = p.ok ? "" : "cannot be met";
    p.classification_error = 0.16;
    p.discernibility_ratio = c;
    r.points.push_back(p);
  }
  const std::string html = cli::SweepHtml(r);
  EXPECT_EQ(WellFormedProblem(html), "");
  EXPECT_THAT(html, HasSubstr("Classification error CE against C"));
  EXPECT_THAT(html, HasSubstr("C (largest confidence of a sensitive value)"));
  EXPECT_EQ(Count(html, "<circle class=\"point\" data-chart=\"ce\""), 2u);
  // The axis spans the grid, 0.1 (no release, not drawn) to 0.3: x = 70 to 540.
  EXPECT_THAT(html, HasSubstr("data-c=\"0.2\" data-value=\"0.16\" cx=\"305.0\""));
  EXPECT_THAT(html, HasSubstr("data-c=\"0.3\" data-value=\"0.16\" cx=\"540.0\""));
}

TEST(SweepHtmlTest, ChartGrowsWithItsLegend) {
  cli::SweepResult r;
  for (uint32_t l = 1; l <= 30; ++l) {
    cli::SweepPoint p;
    p.method = "centralized";
    p.L = l;
    p.K = 10;
    p.ok = true;
    r.points.push_back(p);
  }
  // 2 reference lines + 30 series, 20 px each, below a 46 px top: 696 px.
  EXPECT_THAT(cli::SweepHtml(r), HasSubstr("height=\"696\""));
}

TEST_F(SweepTest, RejectsOneNaiveParty) {
  cli::SweepOptions options;
  options.spec_path = spec_path_;
  options.raw_path = raw_path_;
  options.grid = "K=10";
  options.naive_parties = 1;
  EXPECT_THAT(std::string(cli::RunSweep(options).status().message()), HasSubstr("at least 2"));
}

}  // namespace
}  // namespace fedanon
