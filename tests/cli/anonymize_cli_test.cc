// Integration tests of the `fedanon anonymize` command line: the real binary is run as a child
// process on jobs written to temporary directories. Every failure must exit with status 1 (2 for a
// usage error), say precisely what is wrong on stderr and leave no output, no report and no
// temporary file behind; a successful run writes the anonymized table (same rows, same order,
// unlisted columns dropped) and the JSON report.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// Running the binary.

std::vector<std::string> AnonymizeArgs(const Job& job, bool quiet = true) {
  std::vector<std::string> args = {"anonymize",     "--spec",       job.spec_path,
                                   "--input",       job.input_path, "--output",
                                   job.output_path, "--report",     job.report_path};
  if (quiet) args.push_back("--quiet");
  return args;
}

CliResult RunAnonymize(const Job& job, bool quiet = true) {
  return RunFedanon(AnonymizeArgs(job, quiet));
}

// The failure contract: exit status `code`, no crash, a message on stderr, and neither the output
// nor the report nor any temporary file left in their directories.
void ExpectFailedCleanly(const CliResult& r, const Job& job, int code = 1) {
  EXPECT_EQ(r.signal, 0) << "fedanon died of signal " << r.signal << "; stderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, code) << "stderr:\n" << r.err;
  EXPECT_THAT(r.err, Not(IsEmpty()));
  if (code == 1) {
    EXPECT_THAT(r.err, StartsWith("fedanon anonymize: "));
  }
  EXPECT_FALSE(fs::exists(job.output_path)) << job.output_path << " was written";
  EXPECT_FALSE(fs::exists(job.report_path)) << job.report_path << " was written";
  for (const std::string& dir : {fs::path(job.output_path).parent_path().string(),
                                 fs::path(job.report_path).parent_path().string()}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")))
          << "temporary file left behind in " << dir;
    }
  }
}

// A report field of type uint64: protobuf's JSON mapping writes 64-bit integers as strings.
uint64_t JsonU64(const nlohmann::json& j) {
  if (j.is_string()) return std::stoull(j.get<std::string>());
  return j.get<uint64_t>();
}

// ---------------------------------------------------------------------------------------------
// The test job: mohammed2010 Table I (11 records, QID {job, sex, age}) with an `rid` column that
// is passed through (to check the row order), a `name` column with role id (never released) and
// a `zip` column the spec does not list (dropped).

constexpr char kJobTaxonomy[] =
    "Janitor;Non-Technical;Blue-collar;ANY_Job\n"
    "Mover;Non-Technical;Blue-collar;ANY_Job\n"
    "Carpenter;Technical;Blue-collar;ANY_Job\n"
    "Technician;Technical;Blue-collar;ANY_Job\n"
    "Manager;White-collar;ANY_Job\n"
    "Lawyer;Professional;White-collar;ANY_Job\n"
    "Doctor;Professional;White-collar;ANY_Job\n";
constexpr char kSexTaxonomy[] = "M;ANY_Sex\nF;ANY_Sex\n";

constexpr char kDefaultPrivacy[] =
    "privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}\n";

// The spec with the given privacy line (and extra top-level lines). `sex_line` replaces the
// attribute entry of sex.
std::string Spec(
    const std::string& privacy = kDefaultPrivacy, const std::string& extra = "",
    const std::string& sex_line = "  - {name: sex, role: qid, taxonomy: tax/sex.csv}") {
  return "name: cli-test\n"
         "attributes:\n"
         "  - {name: rid, role: other}\n"
         "  - {name: name, role: id}\n"
         "  - {name: job, role: qid, taxonomy: tax/job.csv}\n" +
         sex_line +
         "\n"
         "  - {name: age, role: qid, type: continuous}\n"
         "  - {name: transfuse, role: class}\n"
         "  - {name: surgery, role: sensitive}\n" +
         privacy + "score: infogain\n" + extra;
}

Table BaseTable() {
  const std::vector<std::vector<std::string>> rows = {
      {"Janitor", "M", "34", "Y", "Transgender"}, {"Lawyer", "F", "58", "N", "Plastic"},
      {"Mover", "M", "58", "N", "Urology"},       {"Lawyer", "M", "24", "N", "Vascular"},
      {"Mover", "M", "34", "Y", "Transgender"},   {"Janitor", "M", "44", "Y", "Plastic"},
      {"Doctor", "F", "44", "N", "Vascular"},     {"Doctor", "M", "58", "N", "Plastic"},
      {"Doctor", "M", "24", "N", "Urology"},      {"Carpenter", "F", "63", "Y", "Vascular"},
      {"Technician", "F", "63", "Y", "Plastic"}};
  Table t;
  t.header = {"rid", "name", "job", "sex", "age", "zip", "transfuse", "surgery"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string id = std::to_string(i + 1);
    t.rows.push_back(
        {id, "person" + id, rows[i][0], rows[i][1], rows[i][2], "Z" + id, rows[i][3], rows[i][4]});
  }
  return t;
}

std::map<std::string, std::string> Taxonomies() {
  return {{"tax/job.csv", kJobTaxonomy}, {"tax/sex.csv", kSexTaxonomy}};
}

Job MakeJob(const std::string& name, const std::string& spec = Spec(),
            const Table& table = BaseTable(),
            const std::map<std::string, std::string>& taxonomies = Taxonomies()) {
  return WriteJob(name, spec, table, taxonomies);
}

// A job whose table file is `csv_text` verbatim (for malformed input).
Job MakeJobWithCsv(const std::string& name, const std::string& csv_text) {
  Job job = MakeJob(name);
  WriteText(job.input_path, csv_text);
  return job;
}

// ---------------------------------------------------------------------------------------------
// 1. Malformed CSV.

TEST(AnonymizeCliTest, UnterminatedQuoteReportsFileLineAndColumn) {
  std::string csv = ToCsv(BaseTable());
  // Line 3 (the second data row): open a quote at column 6 that is never closed.
  const size_t line3 = csv.find('\n', csv.find('\n') + 1) + 1;
  csv.insert(line3 + std::string("2,person2,").size(), "\"");
  const Job job = MakeJobWithCsv("unterminated", csv);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path + ":3:11: unterminated quote"));
}

TEST(AnonymizeCliTest, RowWithWrongFieldCountReportsFileLineAndCounts) {
  Table t = BaseTable();
  t.rows[2].pop_back();  // line 4: 7 fields
  const Job job = MakeJob("field_count", Spec(), t);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path + ":4: expected 8 fields"));
  EXPECT_THAT(r.err, HasSubstr("found 7"));
}

// 2. Data values that are not leaves of the taxonomy.
TEST(AnonymizeCliTest, ValueNotInTaxonomyNamesAttributeValuesAndCounts) {
  Table t = BaseTable();
  t.rows[1][2] = "Plumber";
  t.rows[4][2] = "Plumber";
  t.rows[6][2] = "Chef";
  const Job job = MakeJob("unknown_value", Spec(), t);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("attribute 'job'"), HasSubstr("not a leaf of taxonomy"),
                           HasSubstr("tax/job.csv"), HasSubstr("'Plumber' (2 records)"),
                           HasSubstr("'Chef' (1 record)")));
}

// An inner node of the taxonomy is not a valid data value either.
TEST(AnonymizeCliTest, GeneralizedValueInDataIsNotALeaf) {
  Table t = BaseTable();
  t.rows[3][2] = "Professional";
  const Job job = MakeJob("inner_value", Spec(), t);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("attribute 'job'"), HasSubstr("'Professional' (1 record)")));
}

// 3. Inconsistent taxonomy.
TEST(AnonymizeCliTest, TaxonomyValueWithTwoParentsNamesBothParentsAndLines) {
  auto taxonomies = Taxonomies();
  taxonomies["tax/job.csv"] += "Mover;Technical;Blue-collar;ANY_Job\n";  // line 8
  const Job job = MakeJob("two_parents", Spec(), BaseTable(), taxonomies);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("tax/job.csv:8: taxonomy for attribute 'job': value 'Mover' has "
                               "two parents 'Non-Technical' (line 2) and 'Technical' (line 8)"));
}

TEST(AnonymizeCliTest, MissingTaxonomyFileIsNamed) {
  auto taxonomies = Taxonomies();
  taxonomies.erase("tax/sex.csv");
  const Job job = MakeJob("no_taxonomy", Spec(), BaseTable(), taxonomies);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("taxonomy for attribute 'sex'"), HasSubstr("tax/sex.csv"),
                           HasSubstr("No such file or directory")));
}

// 4. A spec attribute that is not a column.
TEST(AnonymizeCliTest, SpecColumnNotInCsvHeaderIsNamed) {
  std::string spec = Spec();
  spec.insert(spec.find("privacy:"), "  - {name: salary, role: other}\n");
  const Job job = MakeJob("missing_column", spec);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("attribute 'salary' named in the spec is not a column of " +
                               job.input_path));
}

// 5. Unknown keys in the spec.
TEST(AnonymizeCliTest, UnknownTopLevelSpecKeyHasLineAndColumn) {
  const Job job = MakeJob("unknown_key", Spec(kDefaultPrivacy, "colour: blue\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  // name, attributes, 7 attribute lines, privacy, score: `colour` is on line 12.
  EXPECT_THAT(r.err, HasSubstr(job.spec_path + ":12:1: unknown key 'colour' in job spec"));
}

TEST(AnonymizeCliTest, UnknownNestedSpecKeyHasLineAndColumn) {
  const Job job = MakeJob("unknown_nested_key", Spec("privacy:\n"
                                                     "  model: lkc\n"
                                                     "  L: 2\n"
                                                     "  k: 2\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.spec_path + ":13:3: unknown key 'k' in privacy"));
}

// 6. K larger than the table.
TEST(AnonymizeCliTest, KLargerThanTableCannotBeMet) {
  const Job job = MakeJob("k_too_large", Spec("privacy: {model: lkc, L: 2, K: 20, C: 0.5, "
                                              "sensitive_values: [Transgender]}\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("cannot be met"), HasSubstr("at least 20 records"),
                           HasSubstr("the table has only 11 records")));
}

// 7. L larger than the number of QID attributes.
TEST(AnonymizeCliTest, LLargerThanQidCountIsRejected) {
  const Job job = MakeJob("l_too_large", Spec("privacy: {model: lkc, L: 4, K: 2, C: 0.5, "
                                              "sensitive_values: [Transgender]}\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("privacy.L = 4 exceeds the number of QID attributes (3)"));
}

// 8. C outside (0, 1].
void ExpectCRejected(const std::string& c) {
  const Job job = MakeJob("bad_c", Spec("privacy: {model: lkc, L: 2, K: 2, C: " + c +
                                        ", sensitive_values: [Transgender]}\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("privacy.C = " + c + " must be in (0, 1]"));
}

TEST(AnonymizeCliTest, CZeroIsRejected) { ExpectCRejected("0"); }
TEST(AnonymizeCliTest, CAboveOneIsRejected) { ExpectCRejected("1.5"); }
TEST(AnonymizeCliTest, CNegativeIsRejected) { ExpectCRejected("-0.2"); }

// 9. A confidence bound that even the most general table violates.
TEST(AnonymizeCliTest, UnsatisfiableConfidenceGivesBestAchievable) {
  // Transgender: 2 of 11 records = 0.181818 > 0.1.
  const Job job = MakeJob("bad_conf", Spec("privacy: {model: lkc, L: 2, K: 2, C: 0.1, "
                                           "sensitive_values: [Transgender]}\n"));
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("cannot be met"), HasSubstr("'Transgender'"),
                           HasSubstr("2/11"), HasSubstr("best achievable confidence is 0.1818")));
}

// 10. A non-number in a continuous column.
TEST(AnonymizeCliTest, NonNumericContinuousValueHasFileLineAndColumnName) {
  Table t = BaseTable();
  t.rows[3][4] = "forty";  // line 5
  const Job job = MakeJob("non_numeric", Spec(), t);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path + ":5: column 5 (age): 'forty' is not a number"));
}

TEST(AnonymizeCliTest, MissingTokenInContinuousColumnWithKeepExplainsDrop) {
  Table t = BaseTable();
  t.rows[0][4] = "?";  // line 2
  const Job job = MakeJob("continuous_missing_keep", Spec(kDefaultPrivacy, "missing: keep\n"), t);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr(job.input_path + ":2: column 5 (age): '?' is not a number"),
                           HasSubstr("missing: drop")));
}

// 11. Missing files and directories.
TEST(AnonymizeCliTest, MissingInputFile) {
  Job job = MakeJob("no_input");
  fs::remove(job.input_path);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("cannot open '" + job.input_path + "'"),
                           HasSubstr("No such file or directory")));
}

TEST(AnonymizeCliTest, MissingSpecFile) {
  Job job = MakeJob("no_spec");
  fs::remove(job.spec_path);
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr("cannot open '" + job.spec_path + "'"),
                           HasSubstr("No such file or directory")));
}

TEST(AnonymizeCliTest, EmptyInputFile) {
  const Job job = MakeJobWithCsv("empty_input", "");
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path + ": file is empty"));
}

TEST(AnonymizeCliTest, OutputDirectoryDoesNotExist) {
  Job job = MakeJob("no_output_dir");
  job.output_path = job.dir + "/missing/out.csv";
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr(job.output_path),
                           HasSubstr("directory '" + job.dir + "/missing' does not exist")));
}

TEST(AnonymizeCliTest, ReportDirectoryDoesNotExist) {
  Job job = MakeJob("no_report_dir");
  job.report_path = job.dir + "/missing/report.json";
  const CliResult r = RunAnonymize(job);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, AllOf(HasSubstr(job.report_path),
                           HasSubstr("directory '" + job.dir + "/missing' does not exist")));
}

// The report fails only at the very end (its path is a directory): the table, already written
// to a temporary file by then, must not be committed.
TEST(AnonymizeCliTest, ReportWriteFailureLeavesNoOutput) {
  Job job = MakeJob("report_is_dir");
  fs::create_directories(job.report_path);
  const CliResult r = RunAnonymize(job);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.signal, 0);
  EXPECT_THAT(r.err, AllOf(StartsWith("fedanon anonymize: "), HasSubstr(job.report_path)));
  EXPECT_FALSE(fs::exists(job.output_path)) << "output committed although the report failed";
  EXPECT_TRUE(fs::is_directory(job.report_path));
  for (const auto& entry : fs::directory_iterator(job.dir)) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
  }
}

// A failed run leaves an existing output and report as they were.
TEST(AnonymizeCliTest, FailureLeavesExistingOutputsUntouched) {
  const Job job = MakeJob("keep_old", Spec("privacy: {model: lkc, L: 2, K: 20}\n"));
  WriteText(job.output_path, "old output\n");
  WriteText(job.report_path, "{}\n");
  const CliResult r = RunAnonymize(job);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(ReadAll(job.output_path), "old output\n");
  EXPECT_EQ(ReadAll(job.report_path), "{}\n");
}

// 12. Usage.
TEST(AnonymizeCliTest, HelpExitsZero) {
  const CliResult top = RunFedanon({"--help"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_THAT(top.out, AllOf(HasSubstr("anonymize"), HasSubstr("gen-data")));
  const CliResult sub = RunFedanon({"anonymize", "--help"});
  EXPECT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_THAT(sub.out, AllOf(HasSubstr("--spec"), HasSubstr("--input"), HasSubstr("--output"),
                             HasSubstr("--report")));
}

TEST(AnonymizeCliTest, MissingRequiredOptionIsUsageError) {
  const Job job = MakeJob("usage");
  const CliResult r =
      RunFedanon({"anonymize", "--spec", job.spec_path, "--input", job.input_path, "--quiet"});
  ExpectFailedCleanly(r, job, 2);
  EXPECT_THAT(r.err, HasSubstr("--output is required"));
}

TEST(AnonymizeCliTest, UnknownOptionIsUsageError) {
  const Job job = MakeJob("usage_unknown");
  std::vector<std::string> args = AnonymizeArgs(job);
  args.push_back("--colour");
  const CliResult r = RunFedanon(args);
  ExpectFailedCleanly(r, job, 2);
  EXPECT_THAT(r.err, HasSubstr("--colour"));
}

TEST(AnonymizeCliTest, NoSubcommandIsUsageError) {
  const CliResult r = RunFedanon({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("anonymize"));
}

// 13. A successful run.
TEST(AnonymizeCliTest, SuccessfulRunKeepsRowsAndOrderAndDropsUnlistedColumns) {
  Table t = BaseTable();
  t.rows[2][2] = "?";  // rid 3: missing job -> dropped (`missing: drop` is the default)
  t.rows[4][5] = "?";  // rid 5: missing zip, which the spec does not list -> kept
  const Job job = MakeJob("success", Spec(), t);
  const CliResult r = RunAnonymize(job, /*quiet=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("fedanon anonymize: 10 records"));

  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  // Spec attributes in input column order; `name` (role id) and `zip` (unlisted) are dropped.
  EXPECT_THAT(out.header, ElementsAre("rid", "job", "sex", "age", "transfuse", "surgery"));
  ASSERT_EQ(out.rows.size(), 10u);
  size_t o = 0;
  for (const auto& in_row : t.rows) {
    if (in_row[2] == "?") continue;
    ASSERT_LT(o, out.rows.size());
    const auto& out_row = out.rows[o++];
    ASSERT_EQ(out_row.size(), 6u);
    EXPECT_EQ(out_row[0], in_row[0]) << "row order changed";
    EXPECT_EQ(out_row[4], in_row[6]);
    EXPECT_EQ(out_row[5], in_row[7]);
  }
  for (const auto& entry : fs::directory_iterator(job.dir)) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
  }

  ASSERT_TRUE(fs::exists(job.report_path));
  const nlohmann::json report = nlohmann::json::parse(ReadAll(job.report_path));
  EXPECT_EQ(report["job_name"], "cli-test");
  EXPECT_EQ(JsonU64(report["records_in"]), 11u);
  EXPECT_EQ(JsonU64(report["records_dropped"]), 1u);
  EXPECT_EQ(JsonU64(report["records_out"]), 10u);

  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
  EXPECT_EQ(JsonU64(report["smallest_group"]), check.smallest_group);
}

TEST(AnonymizeCliTest, SuccessfulRunWithoutReport) {
  const Job job = MakeJob("no_report");
  const CliResult r = RunFedanon({"anonymize", "--spec", job.spec_path, "--input", job.input_path,
                                  "--output", job.output_path, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_TRUE(fs::exists(job.output_path));
  EXPECT_FALSE(fs::exists(job.report_path));
}

// 14. Missing values in a categorical attribute without taxonomy (a suppression attribute).
Table TableWithMissingSex() {
  Table t = BaseTable();
  t.rows[1][3] = "?";
  t.rows[6][3] = "?";
  return t;
}
const char kSuppressedSex[] = "  - {name: sex, role: qid}";

TEST(AnonymizeCliTest, MissingKeepKeepsRowsWithMissingCategoricalValue) {
  const Table t = TableWithMissingSex();
  const Job job =
      MakeJob("missing_keep", Spec(kDefaultPrivacy, "missing: keep\n", kSuppressedSex), t);
  const CliResult r = RunAnonymize(job);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  ASSERT_EQ(out.rows.size(), t.rows.size());
  for (size_t i = 0; i < t.rows.size(); ++i) EXPECT_EQ(out.rows[i][0], t.rows[i][0]);
  const nlohmann::json report = nlohmann::json::parse(ReadAll(job.report_path));
  EXPECT_EQ(JsonU64(report["records_in"]), 11u);
  EXPECT_EQ(JsonU64(report["records_dropped"]), 0u);
  EXPECT_EQ(JsonU64(report["records_out"]), 11u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
}

TEST(AnonymizeCliTest, MissingDropDropsRowsWithMissingCategoricalValue) {
  const Table t = TableWithMissingSex();
  const Job job =
      MakeJob("missing_drop", Spec(kDefaultPrivacy, "missing: drop\n", kSuppressedSex), t);
  const CliResult r = RunAnonymize(job);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  std::vector<std::string> rids;
  for (const auto& row : out.rows) rids.push_back(row[0]);
  EXPECT_THAT(rids, ElementsAre("1", "3", "4", "5", "6", "8", "9", "10", "11"));
  const nlohmann::json report = nlohmann::json::parse(ReadAll(job.report_path));
  EXPECT_EQ(JsonU64(report["records_in"]), 11u);
  EXPECT_EQ(JsonU64(report["records_dropped"]), 2u);
  EXPECT_EQ(JsonU64(report["records_out"]), 9u);
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(in));
}

// ---------------------------------------------------------------------------------------------
// Files: no output replaces what the run reads, the input is read once, reads are bounded.

// Every way of naming a file the run reads as an output is refused before anything is written,
// and the file is left byte for byte as it was.
TEST(AnonymizeCliTest, OutputNamingAnInputOrAnotherOutputIsRefused) {
  const Job job = MakeJob("overwrite");
  const std::string table = ReadAll(job.input_path);
  const std::string spec = ReadAll(job.spec_path);
  const std::string taxonomy = ReadAll(job.dir + "/tax/job.csv");
  fs::create_symlink(job.input_path, job.dir + "/link.csv");
  struct Case {
    std::string output, report, expected;
  };
  const std::vector<Case> cases = {
      {job.input_path, job.report_path,
       "--output '" + job.input_path + "' is the same file as --input"},
      {job.dir + "/./table.csv", "", "is the same file as --input"},
      {job.dir + "/link.csv", "", "is the same file as --input"},
      {job.spec_path, "", "--output '" + job.spec_path + "' is the same file as --spec"},
      {job.output_path, job.input_path,
       "--report '" + job.input_path + "' is the same file as --input"},
      {job.output_path, job.spec_path, "is the same file as --spec"},
      {job.output_path, job.dir + "/x/../out.csv",
       "--report '" + job.dir + "/x/../out.csv' is the same file as --output"},
      {job.dir + "/tax/job.csv", "", "is the same file as the taxonomy of attribute 'job'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"anonymize",    "--spec",   job.spec_path, "--input",
                                     job.input_path, "--output", c.output,      "--quiet"};
    if (!c.report.empty()) {
      args.push_back("--report");
      args.push_back(c.report);
    }
    const CliResult r = RunFedanon(args);
    EXPECT_EQ(r.exit_code, 1) << c.output << " " << c.report << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.expected));
    EXPECT_THAT(r.err, HasSubstr("refusing to overwrite it"));
    EXPECT_EQ(ReadAll(job.input_path), table);
    EXPECT_EQ(ReadAll(job.spec_path), spec);
    EXPECT_EQ(ReadAll(job.dir + "/tax/job.csv"), taxonomy);
    EXPECT_FALSE(fs::exists(job.output_path));
    EXPECT_FALSE(fs::exists(job.report_path));
    for (const auto& entry : fs::recursive_directory_iterator(job.dir)) {
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
    }
  }
}

// The input is read once: a FIFO and standard input ("-") work, with the same result as the file.
TEST(AnonymizeCliTest, InputFromAFifoOrStandardInput) {
  const Job job = MakeJob("fifo");
  ASSERT_EQ(RunAnonymize(job).exit_code, 0);
  const std::string expected = ReadAll(job.output_path);
  const std::string csv = ReadAll(job.input_path);

  const std::string fifo = job.dir + "/input.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { WriteText(fifo, csv); });
  Job from_fifo = job;
  from_fifo.input_path = fifo;
  from_fifo.output_path = job.dir + "/out-fifo.csv";
  from_fifo.report_path = job.dir + "/report-fifo.json";
  const CliResult r = RunAnonymize(from_fifo);
  writer.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(from_fifo.output_path), expected);

  const std::string out_stdin = job.dir + "/out-stdin.csv";
  const CliResult piped =
      RunBinary("/bin/sh",
                {"-c", "cat '" + job.input_path + "' | '" + ::fedanon::testing::BinaryDir() +
                           "/bin/fedanon' anonymize --spec '" + job.spec_path +
                           "' --input - --output '" + out_stdin + "' --quiet"},
                FreshDir("fifo_capture"));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(ReadAll(out_stdin), expected);
}

TEST(AnonymizeCliTest, InputSizeIsBounded) {
  const Job job = MakeJob("max_input");
  std::vector<std::string> args = AnonymizeArgs(job);
  args.insert(args.end(), {"--max-input-bytes", "100"});
  const CliResult r = RunFedanon(args);
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("'" + job.input_path +
                               "' is larger than the limit of 100 bytes for a table"));
  // /dev/zero as the input fails at once on its first (endless) line, not after gigabytes.
  Job zero = job;
  zero.input_path = "/dev/zero";
  const auto start = std::chrono::steady_clock::now();
  const CliResult z = RunAnonymize(zero);
  ExpectFailedCleanly(z, zero);
  EXPECT_THAT(z.err, HasSubstr("/dev/zero:1: line longer than 1048576 bytes"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
}

TEST(AnonymizeCliTest, SensitiveValueAbsentFromTheDataIsWarnedAbout) {
  const Job job =
      MakeJob("absent_sensitive", Spec("privacy: {model: lkc, L: 2, K: 2, C: 0.5, "
                                       "sensitive_values: [Transgender, Trangender]}\n"));
  const CliResult r = RunAnonymize(job);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("fedanon anonymize: warning: sensitive value 'Trangender' of "
                               "attribute 'surgery' does not occur in " +
                               job.input_path));
  EXPECT_THAT(r.err, Not(HasSubstr("'Transgender' of")));
}

}  // namespace
}  // namespace fedanon::testing
