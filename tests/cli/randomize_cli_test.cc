// Integration tests of `fedanon randomize` (random anonymization, yang2010): the real binary on
// jobs written to temporary directories. A successful run keeps the rows, their order and every
// non-QID value, changes at most k QID values per row, and reports Pa(D'); a seeded run is
// reproducible, an unseeded one (OpenSSL CSPRNG) is not. Failures exit 1 (2 for usage errors)
// with a message and leave no output, report or temporary file behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/common/engine/engine_test_util.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

std::vector<std::string> RandomizeArgs(const Job& job, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"randomize",     "--spec",       job.spec_path,
                                   "--input",       job.input_path, "--output",
                                   job.output_path, "--report",     job.report_path};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// QID {job, sex, age}; `rid` passed through (row order), `name` an id (never released), `zip`
// unlisted (dropped).
constexpr char kSpec[] =
    "name: ra-test\n"
    "attributes:\n"
    "  - {name: rid, role: other}\n"
    "  - {name: name, role: id}\n"
    "  - {name: job, role: qid}\n"
    "  - {name: sex, role: qid}\n"
    "  - {name: age, role: qid, type: continuous}\n"
    "  - {name: transfuse, role: class}\n"
    "  - {name: surgery, role: sensitive}\n"
    "privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}\n";

// mohammed2010 Table I repeated `copies` times.
Table BaseTable(int copies = 1) {
  const std::vector<std::vector<std::string>> rows = {
      {"Janitor", "M", "34", "Y", "Transgender"}, {"Lawyer", "F", "58", "N", "Plastic"},
      {"Mover", "M", "58", "N", "Urology"},       {"Lawyer", "M", "24", "N", "Vascular"},
      {"Mover", "M", "34", "Y", "Transgender"},   {"Janitor", "M", "44", "Y", "Plastic"},
      {"Doctor", "F", "44", "N", "Vascular"},     {"Doctor", "M", "58", "N", "Plastic"},
      {"Doctor", "M", "24", "N", "Urology"},      {"Carpenter", "F", "63", "Y", "Vascular"},
      {"Technician", "F", "63", "Y", "Plastic"}};
  Table t;
  t.header = {"rid", "name", "job", "sex", "age", "zip", "transfuse", "surgery"};
  for (int c = 0; c < copies; ++c) {
    for (const auto& row : rows) {
      const std::string id = std::to_string(t.rows.size() + 1);
      t.rows.push_back({id, "person" + id, row[0], row[1], row[2], "Z" + id, row[3], row[4]});
    }
  }
  return t;
}

Job MakeJob(const std::string& name, int copies = 1) {
  return WriteJob(name, kSpec, BaseTable(copies));
}

void ExpectFailedCleanly(const CliResult& r, const Job& job, int code = 1) {
  EXPECT_EQ(r.signal, 0) << "fedanon died of signal " << r.signal << "; stderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, code) << "stderr:\n" << r.err;
  EXPECT_THAT(r.err, Not(IsEmpty()));
  if (code == 1) {
    EXPECT_THAT(r.err, StartsWith("fedanon randomize: "));
  }
  EXPECT_FALSE(fs::exists(job.output_path)) << job.output_path << " was written";
  EXPECT_FALSE(fs::exists(job.report_path)) << job.report_path << " was written";
  for (const auto& entry : fs::directory_iterator(job.dir)) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
  }
}

nlohmann::json ReadReport(const Job& job) {
  return nlohmann::json::parse(ReadAll(job.report_path));
}

// Output columns in input order, without the id and the unlisted column.
constexpr int kRid = 0, kJob = 1, kSex = 2, kAge = 3, kTransfuse = 4, kSurgery = 5;

// Rows and order kept, non-QID values verbatim, at most `k` QID values changed per row, every
// QID value one of the column's input values.
void ExpectRandomizedFrom(const Table& out, const Table& in, int k) {
  ASSERT_THAT(out.header, ElementsAre("rid", "job", "sex", "age", "transfuse", "surgery"));
  ASSERT_EQ(out.rows.size(), in.rows.size());
  std::set<std::string> jobs, sexes, ages;
  for (const auto& row : in.rows) {
    jobs.insert(row[2]);
    sexes.insert(row[3]);
    ages.insert(row[4]);
  }
  for (size_t r = 0; r < in.rows.size(); ++r) {
    const auto& o = out.rows[r];
    const auto& i = in.rows[r];
    EXPECT_EQ(o[kRid], i[0]);
    EXPECT_EQ(o[kTransfuse], i[6]);
    EXPECT_EQ(o[kSurgery], i[7]);
    EXPECT_EQ((o[kJob] != i[2]) + (o[kSex] != i[3]) + (o[kAge] != i[4]) <= k, true) << "row " << r;
    EXPECT_TRUE(jobs.count(o[kJob]) && sexes.count(o[kSex]) && ages.count(o[kAge])) << "row " << r;
  }
}

TEST(RandomizeCliTest, SeededRunKeepsRowsAndReportsProbabilisticAnonymity) {
  const Job job = MakeJob("ra_seeded", 20);
  const CliResult r = RunFedanon(RandomizeArgs(job, {"--seed", "7"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("do not publish"));
  EXPECT_THAT(r.err, HasSubstr("probabilistic anonymity Pa(D') = "));
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  ExpectRandomizedFrom(out, BaseTable(20), 1);
  const nlohmann::json report = ReadReport(job);
  EXPECT_EQ(report["records_out"], 220);
  EXPECT_EQ(report["attributes_per_record"], 1);
  EXPECT_EQ(report["selection"], "entropy");
  EXPECT_EQ(report["reproducible"], true);
  EXPECT_EQ(report["qid"].size(), 3u);
  EXPECT_EQ(report["qid"][0]["name"], "job");
  EXPECT_EQ(report["qid"][0]["distinct_values"], 6);
  // Entropy weights: Pa = sum of e^Entropy (Proposition 7), above each attribute's diversity.
  double sum = 0;
  for (const auto& q : report["qid"]) sum += std::exp(q["entropy"].get<double>());
  EXPECT_NEAR(report["probabilistic_anonymity"].get<double>(), sum, 1e-9);
  EXPECT_FALSE(report.contains("seed"));
}

TEST(RandomizeCliTest, SameSeedSameOutputOtherSeedOtherOutput) {
  const Job a = MakeJob("ra_seed_a", 20), b = MakeJob("ra_seed_b", 20),
            c = MakeJob("ra_seed_c", 20);
  ASSERT_EQ(RunFedanon(RandomizeArgs(a, {"--seed", "42", "--quiet"})).exit_code, 0);
  ASSERT_EQ(RunFedanon(RandomizeArgs(b, {"--seed", "42", "--quiet"})).exit_code, 0);
  ASSERT_EQ(RunFedanon(RandomizeArgs(c, {"--seed", "43", "--quiet"})).exit_code, 0);
  EXPECT_EQ(ReadAll(a.output_path), ReadAll(b.output_path));
  EXPECT_NE(ReadAll(a.output_path), ReadAll(c.output_path));
}

// Without a seed the randomness comes from the CSPRNG: two runs differ (220 rows, so equal
// outputs would be a coincidence of probability far below 1e-20) and nothing says "reproducible".
TEST(RandomizeCliTest, UnseededRunsDiffer) {
  const Job a = MakeJob("ra_csprng_a", 20), b = MakeJob("ra_csprng_b", 20);
  const CliResult ra = RunFedanon(RandomizeArgs(a));
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(RunFedanon(RandomizeArgs(b, {"--quiet"})).exit_code, 0);
  EXPECT_NE(ReadAll(a.output_path), ReadAll(b.output_path));
  EXPECT_THAT(ra.err, Not(HasSubstr("do not publish")));
  EXPECT_EQ(ReadReport(a)["reproducible"], false);
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(a.output_path));
  ExpectRandomizedFrom(out, BaseTable(20), 1);
}

TEST(RandomizeCliTest, Algorithm2ChangesAtMostKValues) {
  const Job job = MakeJob("ra_k2", 20);
  const CliResult r =
      RunFedanon(RandomizeArgs(job, {"--attributes-per-record", "2", "--seed", "1", "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(job.output_path));
  ExpectRandomizedFrom(out, BaseTable(20), 2);
  const nlohmann::json report = ReadReport(job);
  EXPECT_EQ(report["attributes_per_record"], 2);
  EXPECT_EQ(report["selection"], "uniform");
  EXPECT_NEAR(report["qid"][1]["selection_probability"].get<double>(), 2.0 / 3, 1e-12);
}

TEST(RandomizeCliTest, BoundAndRelativeBiasWhenAsked) {
  const Job job = MakeJob("ra_reports", 20);
  const CliResult r = RunFedanon(
      RandomizeArgs(job, {"--seed", "3", "--selection", "uniform", "--prior-knowledge-bound",
                          "--bias-length", "1", "--bias-length", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Proposition 10 bound"));
  EXPECT_THAT(r.err, HasSubstr("relative bias of support, length 3"));
  const nlohmann::json report = ReadReport(job);
  EXPECT_EQ(report["selection"], "uniform");
  const double max = report["prior_knowledge_bound"]["max"].get<double>();
  const double mean = report["prior_knowledge_bound"]["mean"].get<double>();
  EXPECT_GT(mean, 0.0);
  EXPECT_LE(mean, max);
  EXPECT_LE(max, 1.0);
  ASSERT_EQ(report["relative_bias"].size(), 2u);
  EXPECT_EQ(report["relative_bias"][0]["length"], 1);
  EXPECT_NEAR(report["relative_bias"][0]["predicted"].get<double>(), 0.0, 1e-12);
  EXPECT_EQ(report["relative_bias"][1]["attribute_sets"], 1);
  EXPECT_EQ(report["relative_bias"][1]["combinations"], 11);  // Table I's 11 distinct QID rows
  EXPECT_GT(report["relative_bias"][1]["predicted"].get<double>(), 0.0);
}

// --c-amplification and --variance-length on yang2010's own example (§3, Fig. 1: the printed
// distributions of Age, Job and Country over 10 records, p_i = 1/3). The length-1 variances do
// not depend on the draw: Eq. (11) as printed is 11/27 and the exact variance 11/54 (worked in
// tests/common/randomization/random_anonymization_metrics_test.cc); the measured one is within
// 0.05 of the exact over 2,000 seeded runs. c(q') = max / min of P(Q_i = q'_i) lies between 1
// and .6 / .1 = 6 for any released record, whatever the draw.
TEST(RandomizeCliTest, AmplificationAndVarianceOnThePapersFig1) {
  Table t;
  t.header = {"Age", "Job", "Country", "Disease"};
  const std::vector<std::string> age = {"[20-30]", "[30-40]", "[30-40]", "[30-40]", "[30-40]",
                                        "[40-50]", "[50-60]", "[50-60]", "[50-60]", "[60-70]"};
  const std::vector<std::string> job = {"Doctor", "Clerk",  "Clerk",    "Clerk",  "Clerk",
                                        "Trader", "Trader", "Engineer", "Banker", "Banker"};
  const std::vector<std::string> country = {"USA", "USA",     "USA", "USA", "USA",
                                            "USA", "Germany", "UK",  "UK",  "India"};
  for (size_t i = 0; i < 10; ++i) t.rows.push_back({age[i], job[i], country[i], "Flu"});
  const Job j = WriteJob("ra_fig1",
                         "name: fig1\nattributes:\n"
                         "  - {name: Age, role: qid}\n"
                         "  - {name: Job, role: qid}\n"
                         "  - {name: Country, role: qid}\n"
                         "  - {name: Disease, role: sensitive}\n"
                         "privacy: {model: lkc, L: 1, K: 1}\n"
                         "score: distortion\n",  // no class attribute
                         t);
  const CliResult r =
      RunFedanon(RandomizeArgs(j, {"--seed", "9", "--selection", "uniform", "--c-amplification",
                                   "--variance-length", "1", "--variance-runs", "2000"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("c-amplification (Definition 8)"));
  const nlohmann::json report = ReadReport(j);
  ASSERT_EQ(report["relative_variance"].size(), 1u);
  const nlohmann::json& v = report["relative_variance"][0];
  EXPECT_EQ(v["combinations"], 14);
  EXPECT_NEAR(v["eq11"].get<double>(), 11.0 / 27, 1e-12);
  EXPECT_NEAR(v["independent"].get<double>(), 11.0 / 54, 1e-12);
  EXPECT_NEAR(v["measured"].get<double>(), 11.0 / 54, 0.05);
  const double max = report["c_amplification"]["max"].get<double>();
  const double mean = report["c_amplification"]["mean"].get<double>();
  EXPECT_GE(mean, 1.0);
  EXPECT_LE(mean, max);
  EXPECT_LE(max, 6.0 + 1e-12);
}

TEST(RandomizeCliTest, MoreAttributesPerRecordThanQidAttributes) {
  const Job job = MakeJob("ra_k_too_big");
  const CliResult r = RunFedanon(RandomizeArgs(job, {"--attributes-per-record", "4"}));
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("number of QID attributes (3), not 4"));
}

TEST(RandomizeCliTest, BiasLengthAboveQidCount) {
  const Job job = MakeJob("ra_length_too_big");
  const CliResult r = RunFedanon(RandomizeArgs(job, {"--bias-length", "4"}));
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("(3), not 4"));
}

TEST(RandomizeCliTest, EntropySelectionWithAlgorithm2IsUsageError) {
  const Job job = MakeJob("ra_entropy_k2");
  const CliResult r =
      RunFedanon(RandomizeArgs(job, {"--attributes-per-record", "2", "--selection", "entropy"}));
  ExpectFailedCleanly(r, job, 2);
  EXPECT_THAT(r.err, HasSubstr("Algorithm 2"));
}

TEST(RandomizeCliTest, BoundWithAlgorithm2IsUsageError) {
  const Job job = MakeJob("ra_bound_k2");
  const CliResult r =
      RunFedanon(RandomizeArgs(job, {"--attributes-per-record", "2", "--prior-knowledge-bound"}));
  ExpectFailedCleanly(r, job, 2);
  EXPECT_THAT(r.err, HasSubstr("one attribute per record"));
}

TEST(RandomizeCliTest, BadOptionValuesAreUsageErrors) {
  const Job job = MakeJob("ra_bad_values");
  ExpectFailedCleanly(RunFedanon(RandomizeArgs(job, {"--attributes-per-record", "0"})), job, 2);
  ExpectFailedCleanly(RunFedanon(RandomizeArgs(job, {"--selection", "random"})), job, 2);
  ExpectFailedCleanly(RunFedanon(RandomizeArgs(job, {"--seed", "x"})), job, 2);
  ExpectFailedCleanly(
      RunFedanon({"randomize", "--input", job.input_path, "--output", job.output_path}), job, 2);
}

TEST(RandomizeCliTest, MalformedCsvReportsFileLineAndColumn) {
  const Job job = MakeJob("ra_bad_csv");
  std::string csv = ToCsv(BaseTable());
  const size_t line3 = csv.find('\n', csv.find('\n') + 1) + 1;
  csv.insert(line3 + std::string("2,person2,").size(), "\"");
  WriteText(job.input_path, csv);
  const CliResult r = RunFedanon(RandomizeArgs(job));
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path + ":3:11: unterminated quote"));
}

TEST(RandomizeCliTest, MissingInputFile) {
  const Job job = MakeJob("ra_no_input");
  fs::remove(job.input_path);
  const CliResult r = RunFedanon(RandomizeArgs(job));
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr(job.input_path));
}

TEST(RandomizeCliTest, OutputDirectoryDoesNotExist) {
  Job job = MakeJob("ra_no_out_dir");
  job.output_path = job.dir + "/missing/out.csv";
  const CliResult r = RunFedanon(RandomizeArgs(job));
  ExpectFailedCleanly(r, job);
  EXPECT_THAT(r.err, HasSubstr("missing"));
}

TEST(RandomizeCliTest, ReportDirectoryDoesNotExistLeavesNoOutput) {
  Job job = MakeJob("ra_no_report_dir");
  job.report_path = job.dir + "/missing/report.json";
  const CliResult r = RunFedanon(RandomizeArgs(job));
  ExpectFailedCleanly(r, job);
}

// The output never replaces the input, the spec or the report (checked before anything is read).
TEST(RandomizeCliTest, OutputNamingAnInputIsRefused) {
  const Job job = MakeJob("ra_overwrite", 20);
  const std::string table = ReadAll(job.input_path);
  Job onto_input = job;
  onto_input.output_path = job.input_path;
  CliResult r = RunFedanon(RandomizeArgs(onto_input, {"--seed", "1"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--output '" + job.input_path +
                               "' is the same file as --input; refusing to overwrite it"));
  EXPECT_EQ(ReadAll(job.input_path), table);
  Job report_onto_spec = job;
  report_onto_spec.report_path = job.spec_path;
  r = RunFedanon(RandomizeArgs(report_onto_spec, {"--seed", "1"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--report '" + job.spec_path + "' is the same file as --spec"));
  ExpectFailedCleanly(r, job);
}

}  // namespace
}  // namespace fedanon::testing
