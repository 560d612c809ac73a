// Known answers from fung2007 thesis ch. 6 (sequential releases), for the engine and for the
// brute-force join checker alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/evaluation/distortion.h"
#include "common/spec/job_spec_loader.h"
#include "tests/common/sequential/join_checker.h"
#include "tests/common/sequential/seq_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Table 6.1. Pid is "only for discussion, not for release": it is not a column here.
Table Table61T1() {
  return {{"Name", "Job", "Class"},
          {{"Alice", "Banker", "c1"},
           {"Alice", "Banker", "c1"},
           {"Bob", "Clerk", "c2"},
           {"Bob", "Driver", "c3"},
           {"Cathy", "Engineer", "c4"}}};
}
Table Table61T2() {
  return {{"Job", "Disease"},
          {{"Banker", "Cancer"},
           {"Banker", "Cancer"},
           {"Clerk", "HIV"},
           {"Driver", "Cancer"},
           {"Engineer", "HIV"}}};
}
// The thesis gives no taxonomies for Table 6.1; these are ours.
const std::map<std::string, std::string> kTaxonomies61 = {
    {"name.csv", "Alice;ANY_Name\nBob;ANY_Name\nCathy;ANY_Name\n"},
    {"job.csv",
     "Banker;Professional;ANY_Job\nEngineer;Professional;ANY_Job\nClerk;Service;ANY_Job\n"
     "Driver;Service;ANY_Job\n"}};

std::string Spec61(int k) {
  return "name: table-6.1\n"
         "attributes:\n"
         "  - {name: Name, role: qid, taxonomy: name.csv}\n"
         "  - {name: Job, role: qid, taxonomy: job.csv}\n"
         "  - {name: Class, role: class}\n"
         "sequential:\n"
         "  anonymity:\n"
         "    - {x: [current.Name, previous.Disease], y: [current.@record, previous.@record], "
         "k: " +
         std::to_string(k) +
         "}\n"
         "  confidentiality:\n"
         "    - {x: [current.Name], attribute: previous.Disease, sensitive_values: [Cancer], "
         "max: 1}\n";
}

// Example 6.0.1 on the brute-force checker: the join on T1.Job = T2.Job has 7 records (the table
// under Table 6.1), the {Bob, HIV} group has size 1, the {Alice, Cancer} group size 4, and the
// join infers Alice -> Cancer with 100% confidence.
TEST(SequentialExamplesTest, Table61JoinAttackOnTheChecker) {
  seqcheck::Release t1{Table61T1().header, Table61T1().rows};
  seqcheck::Release t2{Table61T2().header, Table61T2().rows};
  const auto join = seqcheck::Join(t1, t2, {});
  EXPECT_EQ(join.size(), 7u);
  int bob_hiv = 0, alice_cancer = 0;
  for (const auto& [i, j] : join) {
    bob_hiv += t1.rows[i][0] == "Bob" && t2.rows[j][1] == "HIV";
    alice_cancer += t1.rows[i][0] == "Alice" && t2.rows[j][1] == "Cancer";
  }
  EXPECT_EQ(bob_hiv, 1);
  EXPECT_EQ(alice_cancer, 4);
  using seqcheck::ParseRef;
  EXPECT_EQ(
      seqcheck::Anonymity(t1, t2, join, {ParseRef("current.Name"), ParseRef("previous.Disease")},
                          {ParseRef("current.@record"), ParseRef("previous.@record")}),
      1u);
  EXPECT_DOUBLE_EQ(seqcheck::Confidence(t1, t2, join, {ParseRef("current.Name")},
                                        ParseRef("previous.Disease"), {"Cancer"}),
                   1.0);
}

// Example 6.0.1 on the engine: with k = 1 nothing is violated, T1 is specialized down to its raw
// values, and the engine's view of the join equals the thesis' join: 7 records, A = 1 (the
// {Bob, HIV} group), Alice -> Cancer with confidence 1.
TEST(SequentialExamplesTest, Table61RawJoinAsTheEngineSeesIt) {
  const SeqJob s = WriteSeqJob("seq61raw", Spec61(1), Table61T1(), Table61T2(), kTaxonomies61);
  ASSERT_OK_AND_ASSIGN(auto run, StartDirect(s));
  ASSERT_OK(run->engine->Run());
  EXPECT_EQ(run->engine->steps().size(), 4u);  // Name, Job, Professional, Service
  EXPECT_EQ(run->engine->join_records(), 7u);
  EXPECT_THAT(run->engine->template_values(), ElementsAre(1.0, 1.0));
}

// Example 6.0.1, "a lossy join can be used to combat the join attack", worked by hand with our
// taxonomies for <{Name, Disease}, {T1 record, T2 record}, 2> (Y a key of the join, case 4):
//  * most general T1: 5 x 5 = 25 join records; InfoGain on Class prefers Name (1.52 bits) over
//    Job (0.97 bits), and Name -> {Alice, Bob, Cathy} keeps every group >= 2 (Cathy, HIV: 1 x 2);
//  * Job -> {Professional, Service} then leaves {Cathy, HIV} with 1 x 1 = 1 join record: invalid,
//    so Job stays ANY_Job (X has a T2 attribute, so the candidate is re-checked every round rather
//    than pruned, and stays invalid).
TEST(SequentialExamplesTest, Table61LossyJoinDefeatsTheAttack) {
  const SeqJob s = WriteSeqJob("seq61k2", Spec61(2), Table61T1(), Table61T2(), kTaxonomies61);
  ASSERT_OK_AND_ASSIGN(auto run, StartDirect(s));
  EXPECT_EQ(run->engine->join_records(), 25u);
  ASSERT_OK_AND_ASSIGN(std::string stop, run->engine->Run());
  EXPECT_EQ(stop, "no valid candidate left");
  ASSERT_EQ(run->engine->steps().size(), 1u);
  EXPECT_EQ(run->engine->steps()[0].attribute(), "Name");
  EXPECT_THAT(run->engine->steps()[0].children(), ElementsAre("Alice", "Bob", "Cathy"));
  EXPECT_EQ(run->engine->join_records(), 25u);
  EXPECT_DOUBLE_EQ(run->engine->template_values()[0], 2.0);

  // The same job through `fedanon anonymize --previous-release`, confirmed by the checker.
  ASSERT_OK_AND_ASSIGN(auto report, RunSeqJob(s));
  EXPECT_EQ(report.smallest_group(), 2u);
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  seqcheck::Release t1{out.header, out.rows};
  seqcheck::Release t2{Table61T2().header, Table61T2().rows};
  seqcheck::Taxonomies tax = {
      {"Job", seqcheck::ParseParents("Banker;Professional;ANY_Job\nEngineer;Professional;"
                                     "ANY_Job\nClerk;Service;ANY_Job\nDriver;Service;ANY_Job")}};
  const auto join = seqcheck::Join(t1, t2, tax);
  EXPECT_EQ(join.size(), 25u);
  using seqcheck::ParseRef;
  EXPECT_EQ(
      seqcheck::Anonymity(t1, t2, join, {ParseRef("current.Name"), ParseRef("previous.Disease")},
                          {ParseRef("current.@record"), ParseRef("previous.@record")}),
      2u);
}

// Table 6.2 (Example 6.1.2): medical test data T1 and patient data T2, joined on PoB and Sex.
Table Table62T1() {
  return {{"Test", "Job", "PoB", "Sex", "Class"},
          {{"HIV", "Banker", "UK", "M", "Yes"},
           {"HIV", "Banker", "UK", "M", "Yes"},
           {"Eye", "Banker", "UK", "F", "Yes"},
           {"Eye", "Clerk", "FR", "F", "Yes"},
           {"Allergy", "Driver", "US", "M", "No"},
           {"Allergy", "Engineer", "US", "M", "No"},
           {"Allergy", "Engineer", "FR", "M", "Yes"},
           {"Allergy", "Engineer", "FR", "M", "Yes"}}};
}
Table Table62T2() {
  return {{"PoB", "Sex", "Zip"},
          {{"UK", "M", "Z3"},
           {"UK", "M", "Z3"},
           {"UK", "F", "Z5"},
           {"FR", "F", "Z5"},
           {"FR", "M", "Z3"},
           {"FR", "M", "Z3"},
           {"FR", "M", "Z3"},
           {"US", "M", "Z3"}}};
}
// ANY_PoB -> {Europe, US} is the specialization of Example 6.3.1; the Job taxonomy is ours.
const std::map<std::string, std::string> kTaxonomies62 = {
    {"pob.csv", "UK;Europe;ANY_PoB\nFR;Europe;ANY_PoB\nUS;ANY_PoB\n"},
    {"job.csv",
     "Banker;White-collar;ANY_Job\nClerk;White-collar;ANY_Job\nDriver;Blue-collar;ANY_Job\n"
     "Engineer;Blue-collar;ANY_Job\n"}};

// X = {Job, PoB, Zip} with PoB meaning both T1.PoB and T2.PoB (bare names), Y = {HIV}; Sex is a
// join attribute released unchanged (not in X, as in the thesis).
std::string Spec62(double max) {
  return "name: table-6.2\n"
         "attributes:\n"
         "  - {name: Test, role: sensitive}\n"
         "  - {name: Job, role: qid, taxonomy: job.csv}\n"
         "  - {name: PoB, role: qid, taxonomy: pob.csv}\n"
         "  - {name: Sex, role: other}\n"
         "  - {name: Class, role: class}\n"
         "sequential:\n"
         "  confidentiality:\n"
         "    - {x: [Job, PoB, Zip], attribute: Test, sensitive_values: [HIV], max: " +
         std::to_string(max) + "}\n";
}

// Example 6.1.2 on the checker: in the raw join all 4 records with {Banker, UK, Z3} hold HIV, so
// C_y(X) = 100%.
TEST(SequentialExamplesTest, Table62RawJoinInfersHivWithCertainty) {
  seqcheck::Release t1{Table62T1().header, Table62T1().rows};
  seqcheck::Release t2{Table62T2().header, Table62T2().rows};
  const auto join = seqcheck::Join(t1, t2, {});
  int banker_uk_z3 = 0, with_hiv = 0;
  for (const auto& [i, j] : join) {
    if (t1.rows[i][1] == "Banker" && t1.rows[i][2] == "UK" && t2.rows[j][2] == "Z3") {
      ++banker_uk_z3;
      with_hiv += t1.rows[i][0] == "HIV";
    }
  }
  EXPECT_EQ(banker_uk_z3, 4);
  EXPECT_EQ(with_hiv, 4);
  using seqcheck::ParseRef;
  EXPECT_DOUBLE_EQ(seqcheck::Confidence(t1, t2, join,
                                        {ParseRef("current.Job"), ParseRef("current.PoB"),
                                         ParseRef("previous.PoB"), ParseRef("previous.Zip")},
                                        ParseRef("current.Test"), {"HIV"}),
                   1.0);
}

// Example 6.3.1: in the initial CTree a(ANY_Job, ANY_PoB, UK, Z3) = 6 x 2 = 12 with 2 x 2 = 4
// HIV records, C_y(X) = 33%; after ANY_PoB -> {Europe, US} (the first winner: PoB separates the
// class perfectly) C_y(X) = 4/8 = 50%.
TEST(SequentialExamplesTest, Example631CTreeBeforeAndAfterPoB) {
  const SeqJob s = WriteSeqJob("seq631", Spec62(0.9), Table62T1(), Table62T2(), kTaxonomies62);
  ASSERT_OK_AND_ASSIGN(auto run, StartDirect(s, /*max_rounds=*/1));
  EXPECT_DOUBLE_EQ(run->engine->template_values()[0], 4.0 / 12.0);
  // Tree1 {ANY, ANY, M} (6 records) x Tree2 M records (6) + {ANY, ANY, F} (2) x F records (2).
  EXPECT_EQ(run->engine->join_records(), 6u * 6u + 2u * 2u);
  ASSERT_OK_AND_ASSIGN(std::string stop, run->engine->Run());
  EXPECT_EQ(stop, "reached max_rounds");
  ASSERT_EQ(run->engine->steps().size(), 1u);
  EXPECT_EQ(run->engine->steps()[0].attribute(), "PoB");
  EXPECT_EQ(run->engine->steps()[0].value(), "ANY_PoB");
  EXPECT_THAT(run->engine->steps()[0].children(), ElementsAre("Europe", "US"));
  EXPECT_DOUBLE_EQ(run->engine->template_values()[0], 0.5);
}

// Example 6.1.2: "if the data publisher can tolerate at most 90% confidence, T1 without
// modification is not safe for release". The full run stops short of the raw T1 and the checker
// confirms C_y(X) <= 0.9 on the join of the released T1.
TEST(SequentialExamplesTest, Table62AtMost90PercentConfidence) {
  const SeqJob s = WriteSeqJob("seq62", Spec62(0.9), Table62T1(), Table62T2(), kTaxonomies62);
  ASSERT_OK_AND_ASSIGN(auto report, RunSeqJob(s));
  EXPECT_LE(report.largest_confidence(), 0.9);
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  EXPECT_NE(out.rows, Table62T1().rows);
  seqcheck::Release t1{out.header, out.rows};
  seqcheck::Release t2{Table62T2().header, Table62T2().rows};
  seqcheck::Taxonomies tax = {{"PoB", seqcheck::ParseParents(kTaxonomies62.at("pob.csv"))}};
  const auto join = seqcheck::Join(t1, t2, tax);
  using seqcheck::ParseRef;
  const double c = seqcheck::Confidence(t1, t2, join,
                                        {ParseRef("current.Job"), ParseRef("current.PoB"),
                                         ParseRef("previous.PoB"), ParseRef("previous.Zip")},
                                        ParseRef("current.Test"), {"HIV"});
  EXPECT_LE(c, 0.9);
  EXPECT_DOUBLE_EQ(c, report.largest_confidence());
}

// XYD, the distortion of a sequential release (§6.4), on Example 6.1.2 under ch. 6's own
// minimal-distortion score (Eq. 6.1, InfoGain(v) = |T1[v]|) and the 90% template, worked by hand:
//  * ANY_Job and ANY_PoB both score |T1| = 8; Job ranks first but is invalid: White-collar puts
//    the two HIV records (Banker, UK, M) in {White-collar, ANY_PoB, UK, Z3} with the two UK male
//    T2 records: 2 x 2 = 4 join records, all HIV (100% > 90%);
//  * ANY_PoB -> {Europe, US} (Example 6.3.1: C_y(X) = 50%);
//  * Europe -> {UK, FR} (6 records) is invalid: {ANY_Job, UK, UK, Z3} holds 2 x 2 = 4 join
//    records, all HIV; ANY_Job stays invalid.
// Released T1: every Job as ANY_Job (2 levels: 16 units), UK and FR as Europe (1 level: 6
// units), US as it is: XYD = 22 / 8 = 2.75 units per record.
TEST(SequentialExamplesTest, Table62DistortionScoreAndXyd) {
  std::string spec = Spec62(0.9);
  spec.replace(spec.find("sequential:"), 0, "score: distortion\n");
  const SeqJob s = WriteSeqJob("seq62_distortion", spec, Table62T1(), Table62T2(), kTaxonomies62);
  ASSERT_OK_AND_ASSIGN(auto report, RunSeqJob(s));
  ASSERT_EQ(report.steps_size(), 1);
  EXPECT_EQ(report.steps(0).value(), "ANY_PoB");
  EXPECT_DOUBLE_EQ(report.steps(0).score(), 8);
  EXPECT_DOUBLE_EQ(report.largest_confidence(), 0.5);
  ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
  const std::vector<std::string> pob = {"Europe", "Europe", "Europe", "Europe",
                                        "US",     "US",     "Europe", "Europe"};
  ASSERT_EQ(out.rows.size(), pob.size());
  for (size_t r = 0; r < pob.size(); ++r) {
    EXPECT_EQ(out.rows[r][1], "ANY_Job") << "record " << r + 1;
    EXPECT_EQ(out.rows[r][2], pob[r]) << "record " << r + 1;
  }
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec loaded, spec::LoadJobSpec(s.job.spec_path));
  ASSERT_OK_AND_ASSIGN(evaluation::Distortion d,
                       evaluation::MeasureDistortion(loaded, s.job.input_path, s.job.output_path));
  EXPECT_EQ(d.records, 8u);
  EXPECT_DOUBLE_EQ(d.categorical, 22.0 / 8);
  EXPECT_EQ(d.continuous, 0);
}

// §6.2.2: T1(C, D) = {c1 d3, c2 d2} and T2(D, Y) = {d3 y3, d3 y2, d1 y1} — the record c2 d2
// matches nothing (it is "dangling"), which breaks anti-monotonicity; such releases are refused.
TEST(SequentialExamplesTest, DanglingRecordIsRefusedWithItsLine) {
  const std::string spec =
      "attributes:\n"
      "  - {name: C, role: qid, taxonomy: c.csv}\n"
      "  - {name: D, role: qid, taxonomy: d.csv}\n"
      "  - {name: K, role: class}\n"
      "sequential:\n"
      "  anonymity:\n"
      "    - {x: [C, D], y: [previous.Y], k: 1}\n";
  const SeqJob s =
      WriteSeqJob("seqdangling", spec, {{"C", "D", "K"}, {{"c1", "d3", "a"}, {"c2", "d2", "b"}}},
                  {{"D", "Y"}, {{"d3", "y3"}, {"d3", "y2"}, {"d1", "y1"}}},
                  {{"c.csv", "c1;ANY\nc2;ANY\n"}, {"d.csv", "d1;d;ANY\nd2;d;ANY\nd3;ANY\n"}});
  const auto report = RunSeqJob(s);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("table.csv:3: this record (D=d2)"));
  EXPECT_THAT(report.status().message(), HasSubstr("population-related"));
  EXPECT_FALSE(std::filesystem::exists(s.job.output_path));
}

// Not from the thesis: a worked counterexample to pruning when X has a T2 attribute. With
// X = {current.A, previous.J}, Y = the join's records, k = 3, T1(A, J) = {a1 j1, a1 j1, a3 j3,
// a3 j3, a1 j5} and T2(J) = {j1, j1, j3, j3, j5} (J: J1 = {j1, j2, j5}, J2 = {j3, j4}):
//  * most general T1: every record matches every T2 record; A -> {A1, A2} gives (A2, j5) with
//    2 x 1 = 2 < 3 join records: invalid;
//  * J -> {J1, J2} is valid ((ANY, j5): 3 x 1 = 3); after it the A2 records (J2) no longer match
//    j5, the value (A2, j5) disappears from the join and A -> {A1, A2} becomes valid.
// Pruning A in round 1 (Cor. 6.2.1) would lose it; the engine re-checks it and applies it. Final
// join values: (a1, j1) 3 x 2 = 6, (a1, j5) 3 x 1 = 3, (a3, j3) 2 x 2 = 4, so A = 3.
TEST(SequentialExamplesTest, InvalidCandidateBecomesValidWhenXHasAPreviousAttribute) {
  const std::string spec =
      "attributes:\n"
      "  - {name: A, role: qid, taxonomy: a.csv}\n"
      "  - {name: J, role: qid, taxonomy: j.csv}\n"
      "  - {name: K, role: class}\n"
      "sequential:\n"
      "  anonymity:\n"
      "    - {x: [current.A, previous.J], y: [current.@record, previous.@record], k: 3}\n";
  const SeqJob s =
      WriteSeqJob("seqnonmono", spec,
                  {{"A", "J", "K"},
                   {{"a1", "j1", "Y"},
                    {"a1", "j1", "Y"},
                    {"a3", "j3", "N"},
                    {"a3", "j3", "N"},
                    {"a1", "j5", "Y"}}},
                  {{"J"}, {{"j1"}, {"j1"}, {"j3"}, {"j3"}, {"j5"}}},
                  {{"a.csv", "a1;A1;ANY_A\na2;A1;ANY_A\na3;A2;ANY_A\na4;A2;ANY_A\n"},
                   {"j.csv", "j1;J1;ANY_J\nj2;J1;ANY_J\nj5;J1;ANY_J\nj3;J2;ANY_J\nj4;J2;ANY_J\n"}});
  ASSERT_OK_AND_ASSIGN(auto run, StartDirect(s));
  EXPECT_FALSE(run->engine->prunable());
  ASSERT_OK(run->engine->Run());
  const auto& steps = run->engine->steps();
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[0].attribute(), "J");
  EXPECT_EQ(steps[0].value(), "ANY_J");
  std::vector<std::string> values;
  for (const auto& st : steps) values.push_back(st.value());
  EXPECT_THAT(values, ::testing::UnorderedElementsAre("ANY_J", "ANY_A", "J2", "A1", "A2"));
  EXPECT_DOUBLE_EQ(run->engine->template_values()[0], 3.0);
}

// §6.1.3, inconsistency predicate: "Male and Pregnant are semantically inconsistent, so are
// Married_Male and 6_Month_Pregnant" — a rule on a value covers its specializations. T1(Job, Sex),
// T2(Job, Condition), joined on Job, with the rule (Sex = Male, Condition = Pregnant):
//  * most general T1 (ANY_Job, ANY_Sex): ANY_Sex may be Female, so all 4 x 4 = 16 pairs match;
//  * raw T1: Married_Male / Single_Male lie below Male and never match the Pregnant records, so
//    each Banker / Clerk pair of records gives 1 (male) + 2 (female) = 3 matches: 6 in all, where
//    the consistency predicate alone gives 8.
TEST(SequentialExamplesTest, InconsistencyRuleCoversSpecializedValues) {
  const std::string spec =
      "attributes:\n"
      "  - {name: Job, role: qid, taxonomy: job.csv}\n"
      "  - {name: Sex, role: qid, taxonomy: sex.csv}\n"
      "  - {name: Class, role: class}\n"
      "sequential:\n"
      "  inconsistent:\n"
      "    - {current: Sex, current_value: Male, previous: Condition, previous_value: Pregnant}\n"
      "  anonymity:\n"
      "    - {x: [current.Sex, previous.Condition], y: [current.@record, previous.@record], "
      "k: 1}\n";
  const Table t1 = {{"Job", "Sex", "Class"},
                    {{"Banker", "Married_Male", "Y"},
                     {"Banker", "Female", "N"},
                     {"Clerk", "Single_Male", "Y"},
                     {"Clerk", "Female", "N"}}};
  const Table t2 = {
      {"Job", "Condition"},
      {{"Banker", "Flu"}, {"Banker", "Pregnant"}, {"Clerk", "Flu"}, {"Clerk", "Pregnant"}}};
  const std::string sex_tax =
      "Married_Male;Male;ANY_Sex\nSingle_Male;Male;ANY_Sex\nFemale;ANY_Sex\n";
  const std::string job_tax = "Banker;ANY_Job\nClerk;ANY_Job\n";
  const SeqJob s =
      WriteSeqJob("seqrule", spec, t1, t2, {{"job.csv", job_tax}, {"sex.csv", sex_tax}});
  ASSERT_OK_AND_ASSIGN(auto run, StartDirect(s));
  EXPECT_EQ(run->engine->join_records(), 16u);
  ASSERT_OK(run->engine->Run());
  EXPECT_EQ(run->engine->join_records(), 6u);

  seqcheck::Release r1{t1.header, t1.rows}, r2{t2.header, t2.rows};
  const seqcheck::Taxonomies tax = {{"Sex", seqcheck::ParseParents(sex_tax)},
                                    {"Job", seqcheck::ParseParents(job_tax)}};
  EXPECT_EQ(seqcheck::Join(r1, r2, tax).size(), 8u);
  EXPECT_EQ(seqcheck::Join(r1, r2, tax, {{"Sex", "Male", "Condition", "Pregnant"}}).size(), 6u);
}

}  // namespace
}  // namespace fedanon::testing
