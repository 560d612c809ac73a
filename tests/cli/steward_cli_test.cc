// The steward's commands through the real `fedanon` binary (docs/steward-guide.md): `risk` on a
// table, `party risk` on a party's own table, `hierarchy` (each kind, the spec form, refusals by
// line and value, the federated refusal of a table), `anonymize --html` with the risk before and
// after in its report, and `evaluate`'s risk figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/common/engine/engine_test_util.h"
#include "tests/support/config_dir.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 10 records on (age, zip): classes (30, 47677) x3, (30, 47602) x2, (40, 47677) x1,
// (40, 47602) x4, and one row dropped for a missing class.
constexpr char kTable[] =
    "age,zip,ok\n30,47677,y\n30,47677,n\n30,47677,y\n30,47602,n\n30,47602,y\n40,47677,n\n"
    "40,47602,y\n40,47602,y\n40,47602,n\n40,47602,y\n35,47677,?\n";
constexpr char kSpec[] = R"(name: steward
attributes:
  - {name: age, role: qid, taxonomy: age.csv}
  - {name: zip, role: qid, taxonomy: zip.csv}
  - {name: ok, role: class}
privacy: {model: lkc, L: 2, K: 2}
hierarchy:
  - {attribute: age, interval: {min: 0, max: 100, width: 10, fanout: [2, 5], step: 1}}
  - {attribute: zip, masking: {length: 5}, values: zips.txt}
)";

struct Fixture {
  TempDir dir{"steward_cli"};
  Fixture() {
    WriteText(dir.File("t.csv"), kTable);
    WriteText(dir.File("job.yaml"), kSpec);
    WriteText(dir.File("zips.txt"), "47677\n47602\n");
  }
};

nlohmann::json Json(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

TEST(RiskCliTest, SummaryOfATable) {
  Fixture f;
  const CliResult text = RunFedanon({"risk", "--spec", f.dir.File("job.yaml"), "--input",
                                     f.dir.File("t.csv"), "--threshold", "0.3"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("10 records (1 rows with a missing value left out)"));
  EXPECT_THAT(text.out, HasSubstr("equivalence classes        4 (smallest 1"));
  EXPECT_THAT(text.out, HasSubstr("Population uniqueness: not computed"));
  const CliResult json =
      RunFedanon({"risk", "--spec", f.dir.File("job.yaml"), "--input", f.dir.File("t.csv"),
                  "--threshold", "0.3", "--population-size", "1000", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = Json(json.out);
  ASSERT_TRUE(j.is_object()) << json.out;
  EXPECT_EQ(j["classes"], "4");
  EXPECT_DOUBLE_EQ(j["prosecutor"]["records_at_risk"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(j["prosecutor"]["highest"].get<double>(), 1);
  EXPECT_EQ(j["uniqueness"].size(), 4u);
  EXPECT_EQ(j["uniqueness"][3]["model"], "dankar");
  const CliResult small = RunFedanon({"risk", "--spec", f.dir.File("job.yaml"), "--input",
                                      f.dir.File("t.csv"), "--population-size", "5"});
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_THAT(small.err, HasSubstr("smaller than the table"));
  const CliResult both =
      RunFedanon({"risk", "--spec", f.dir.File("job.yaml"), "--input", f.dir.File("t.csv"),
                  "--population-size", "50", "--sampling-fraction", "0.2"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

// A party assesses its own table, found through its party.yaml (data_dir, data).
TEST(RiskCliTest, PartyRiskOnItsOwnTable) {
  Fixture f;
  ConfigDir config("party_risk");
  std::filesystem::create_directories(config.File("data"));
  WriteText(config.File("data/table.csv"), kTable);
  const std::string yaml = config.Party("party.yaml", "data: table.csv\n");
  const CliResult r =
      RunFedanon({"party", "risk", "--config", yaml, "--spec", f.dir.File("job.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Json(r.out);
  EXPECT_EQ(j["table"], "hospital-a: table.csv");
  EXPECT_EQ(j["records"], "10");
  const CliResult outside = RunFedanon({"party", "risk", "--config", yaml, "--spec",
                                        f.dir.File("job.yaml"), "--table", "../job.yaml"});
  EXPECT_EQ(outside.exit_code, 1);
}

TEST(HierarchyCliTest, KindsFromATableRefuseWhatTheyCannotCover) {
  Fixture f;
  // Line 12 holds 150, outside [0, 100).
  WriteText(f.dir.File("wide.csv"), std::string(kTable) + "150,47677,y\n");
  const CliResult outside =
      RunFedanon({"hierarchy", "interval", "--min", "0", "--max", "100", "--width", "10", "--input",
                  f.dir.File("wide.csv"), "--column", "age", "--out", f.dir.File("age.csv")});
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_THAT(outside.err, HasSubstr("wide.csv:13 (age): value '150' lies outside every interval "
                                     "[0, 100)"));
  EXPECT_FALSE(std::filesystem::exists(f.dir.File("age.csv")));

  WriteText(f.dir.File("short.csv"), std::string(kTable) + "30,4767,y\n");
  const CliResult length =
      RunFedanon({"hierarchy", "masking", "--length", "5", "--input", f.dir.File("short.csv"),
                  "--column", "zip", "--out", f.dir.File("zip.csv")});
  EXPECT_EQ(length.exit_code, 1);
  EXPECT_THAT(length.err, HasSubstr("short.csv:13 (zip): code '4767' has 4 characters, not 5"));

  const CliResult ok =
      RunFedanon({"hierarchy", "masking", "--length", "5", "--input", f.dir.File("t.csv"),
                  "--column", "zip", "--out", f.dir.File("zip.csv")});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("2 values, 5 levels above them (written)"));
  EXPECT_THAT(ok.err, HasSubstr("centralized jobs only"));
  EXPECT_EQ(ReadAll(f.dir.File("zip.csv")),
            "47602;4760*;476**;47***;4****;*****\n47677;4767*;476**;47***;4****;*****\n");
  const CliResult again =
      RunFedanon({"hierarchy", "masking", "--length", "5", "--input", f.dir.File("t.csv"),
                  "--column", "zip", "--out", f.dir.File("zip.csv")});
  EXPECT_THAT(again.out, HasSubstr("(unchanged)"));
  const CliResult differs =
      RunFedanon({"hierarchy", "masking", "--length", "5", "--masked", "2,5", "--input",
                  f.dir.File("t.csv"), "--column", "zip", "--out", f.dir.File("zip.csv")});
  EXPECT_EQ(differs.exit_code, 1);
  EXPECT_THAT(differs.err, HasSubstr("use --force"));

  const CliResult dates =
      RunFedanon({"hierarchy", "date", "--levels", "month,year,decade", "--from", "2019-12-31",
                  "--to", "2020-01-01", "--out", f.dir.File("d.csv")});
  ASSERT_EQ(dates.exit_code, 0) << dates.err;
  EXPECT_EQ(ReadAll(f.dir.File("d.csv")),
            "2019-12-31;2019-12;2019;2010-2019;*\n2020-01-01;2020-01;2020;2020-2029;*\n");
  const CliResult ordered = RunFedanon({"hierarchy", "ordered", "--order", "low,mid,high",
                                        "--fanout", "2", "--out", f.dir.File("o.csv")});
  ASSERT_EQ(ordered.exit_code, 0) << ordered.err;
  EXPECT_EQ(ReadAll(f.dir.File("o.csv")), "low;low..mid;*\nmid;low..mid;*\nhigh;high;*\n");
  const CliResult level =
      RunFedanon({"hierarchy", "date", "--levels", "week", "--from", "2020-01-01", "--to",
                  "2020-01-02", "--out", f.dir.File("w.csv")});
  EXPECT_EQ(level.exit_code, 2);
  EXPECT_THAT(level.err, HasSubstr("unknown date level 'week'"));
}

TEST(HierarchyCliTest, SpecSectionWritesEachTaxonomy) {
  Fixture f;
  const CliResult r = RunFedanon({"hierarchy", "spec", "--spec", f.dir.File("job.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("age.csv: 100 values, 4 levels above them (written)"));
  EXPECT_THAT(ReadAll(f.dir.File("age.csv")), HasSubstr("\n37;[30-40);[20-40);[0-100);*\n"));
  const CliResult check =
      RunFedanon({"hierarchy", "spec", "--spec", f.dir.File("job.yaml"), "--check"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  WriteText(f.dir.File("zip.csv"), "47677;*\n47602;*\n");
  const CliResult stale =
      RunFedanon({"hierarchy", "spec", "--spec", f.dir.File("job.yaml"), "--check"});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_THAT(stale.err, HasSubstr("differs from what the spec's definition builds"));

  // A federated spec never takes its hierarchies from a table.
  WriteText(f.dir.File("fed.yaml"), std::string(kSpec) + "partitioning: horizontal\n");
  const CliResult federated = RunFedanon(
      {"hierarchy", "spec", "--spec", f.dir.File("fed.yaml"), "--input", f.dir.File("t.csv")});
  EXPECT_EQ(federated.exit_code, 1);
  EXPECT_THAT(federated.err, HasSubstr("federated job"));
}

// anonymize --html: the report holds the risk before and after, the loss and the model checks;
// the page shows them with their report paths.
TEST(AnonymizeHtmlTest, ReportAndPageCarryTheStewardsFigures) {
  Fixture f;
  ASSERT_EQ(RunFedanon({"hierarchy", "spec", "--spec", f.dir.File("job.yaml")}).exit_code, 0);
  const CliResult r =
      RunFedanon({"anonymize", "--spec", f.dir.File("job.yaml"), "--input", f.dir.File("t.csv"),
                  "--output", f.dir.File("out.csv"), "--report", f.dir.File("report.json"),
                  "--html", f.dir.File("report.html"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Json(ReadAll(f.dir.File("report.json")));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["risk_before"]["records"], "10");
  EXPECT_EQ(j["risk_before"]["classes"], "4");
  EXPECT_EQ(j["risk_after"]["records"], j["records_out"]);
  ASSERT_EQ(j["model_checks"].size(), 1u);
  EXPECT_EQ(j["model_checks"][0]["passed"], true);
  EXPECT_EQ(j["utility"]["attribute_loss"].size(), 2u);
  EXPECT_EQ(j["utility"]["classification"], true);
  const std::string html = ReadAll(f.dir.File("report.html"));
  EXPECT_THAT(html, HasSubstr("data-check=\"risk_before.classes\">4<"));
  EXPECT_THAT(html, HasSubstr("<svg class=\"tree\""));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  // An output named twice is refused before anything runs.
  const CliResult same =
      RunFedanon({"anonymize", "--spec", f.dir.File("job.yaml"), "--input", f.dir.File("t.csv"),
                  "--output", f.dir.File("out2.csv"), "--html", f.dir.File("out2.csv")});
  EXPECT_EQ(same.exit_code, 1);
}

TEST(EvaluateRiskTest, RawAndAnonymizedRisk) {
  Fixture f;
  ASSERT_EQ(RunFedanon({"hierarchy", "spec", "--spec", f.dir.File("job.yaml")}).exit_code, 0);
  ASSERT_EQ(RunFedanon({"anonymize", "--spec", f.dir.File("job.yaml"), "--input",
                        f.dir.File("t.csv"), "--output", f.dir.File("out.csv"), "--quiet"})
                .exit_code,
            0);
  const CliResult r =
      RunFedanon({"evaluate", "--spec", f.dir.File("job.yaml"), "--raw", f.dir.File("t.csv"),
                  "--anonymized", f.dir.File("out.csv"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Json(r.out);
  EXPECT_EQ(j["risk_before"]["classes"], "4");
  EXPECT_TRUE(j.contains("risk_after"));
  const CliResult text = RunFedanon({"evaluate", "--spec", f.dir.File("job.yaml"), "--raw",
                                     f.dir.File("t.csv"), "--anonymized", f.dir.File("out.csv")});
  EXPECT_THAT(text.out, HasSubstr("prosecutor: records at risk"));
}

}  // namespace
}  // namespace fedanon::testing
