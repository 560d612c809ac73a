#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/checker/brute_force_checker.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;
using Rows = std::vector<std::vector<std::string>>;

fedanon::v1::JobSpec Spec(const std::string& text) {
  fedanon::v1::JobSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

// ---------------------------------------------------------------------------------------------
// mohammed2010 Table I and its anonymizations (Tables II and III).

constexpr char kTableAttributes[] = R"pb(
  attributes { name: "ID" role: ROLE_ID }
  attributes { name: "Job" role: ROLE_QID type: ATTRIBUTE_TYPE_CATEGORICAL }
  attributes { name: "Sex" role: ROLE_QID type: ATTRIBUTE_TYPE_CATEGORICAL }
  attributes { name: "Age" role: ROLE_QID type: ATTRIBUTE_TYPE_CONTINUOUS }
  attributes { name: "Transfuse" role: ROLE_CLASS }
  attributes { name: "Surgery" role: ROLE_SENSITIVE }
)pb";

std::string Lkc(int l, int k, double c) {
  return std::string(kTableAttributes) +
         "privacy { model: PRIVACY_MODEL_LKC L: " + std::to_string(l) + " K: " + std::to_string(k) +
         " C: " + std::to_string(c) + " sensitive_values: \"Transgender\" }";
}

const Rows kTableI = {
    {"1", "Janitor", "M", "34", "Y", "Transgender"},
    {"2", "Lawyer", "F", "58", "N", "Plastic"},
    {"3", "Mover", "M", "58", "N", "Urology"},
    {"4", "Lawyer", "M", "24", "N", "Vascular"},
    {"5", "Mover", "M", "34", "Y", "Transgender"},
    {"6", "Janitor", "M", "44", "Y", "Plastic"},
    {"7", "Doctor", "F", "44", "N", "Vascular"},
    {"8", "Doctor", "M", "58", "N", "Plastic"},
    {"9", "Doctor", "M", "24", "N", "Urology"},
    {"10", "Carpenter", "F", "63", "Y", "Vascular"},
    {"11", "Technician", "F", "63", "Y", "Plastic"},
};

// Table II: generalizes Job, Sex and Age of each record of Table I (other columns unchanged).
std::vector<std::vector<std::string>> Generalize(
    const std::vector<std::vector<std::string>>& qids) {
  Rows out = kTableI;
  for (size_t r = 0; r < out.size(); ++r) {
    out[r][1] = qids[r][0];
    out[r][2] = qids[r][1];
    out[r][3] = qids[r][2];
  }
  return out;
}

const Rows kTableII = Generalize({
    {"Non-Technical", "M", "[30-60)"},
    {"Professional", "F", "[30-60)"},
    {"Non-Technical", "M", "[30-60)"},
    {"Professional", "M", "[1-30)"},
    {"Non-Technical", "M", "[30-60)"},
    {"Non-Technical", "M", "[30-60)"},
    {"Professional", "F", "[30-60)"},
    {"Professional", "M", "[30-60)"},
    {"Professional", "M", "[1-30)"},
    {"Technical", "F", "[60-99)"},
    {"Technical", "F", "[60-99)"},
});

const Rows kTableIII = Generalize({
    {"ANY_Job", "ANY_Sex", "[30-60)"},
    {"ANY_Job", "ANY_Sex", "[30-60)"},
    {"ANY_Job", "ANY_Sex", "[30-60)"},
    {"Professional", "ANY_Sex", "[1-60)"},
    {"Non-Technical", "M", "[30-60)"},
    {"Non-Technical", "M", "[30-60)"},
    {"Professional", "ANY_Sex", "[1-60)"},
    {"Professional", "M", "[1-60)"},
    {"Professional", "M", "[1-60)"},
    {"Technical", "F", "[60-99)"},
    {"Technical", "F", "[60-99)"},
});

using Paths = std::map<std::string, std::vector<std::string>>;

const Paths kJobPaths = {
    {"Janitor", {"Janitor", "Non-Technical", "Blue-collar", "ANY_Job"}},
    {"Mover", {"Mover", "Non-Technical", "Blue-collar", "ANY_Job"}},
    {"Carpenter", {"Carpenter", "Technical", "Blue-collar", "ANY_Job"}},
    {"Technician", {"Technician", "Technical", "Blue-collar", "ANY_Job"}},
    {"Manager", {"Manager", "White-collar", "ANY_Job"}},
    {"Lawyer", {"Lawyer", "Professional", "White-collar", "ANY_Job"}},
    {"Doctor", {"Doctor", "Professional", "White-collar", "ANY_Job"}},
};
const Paths kSexPaths = {{"M", {"M", "ANY_Sex"}}, {"F", {"F", "ANY_Sex"}}};
// mohammed2010 Fig. 2's Age tree as a fixed taxonomy over the ages that occur.
const Paths kAgePaths = {
    {"24", {"24", "[1-30)", "[1-60)", "[1-99)"}},  {"34", {"34", "[30-60)", "[1-60)", "[1-99)"}},
    {"44", {"44", "[30-60)", "[1-60)", "[1-99)"}}, {"58", {"58", "[30-60)", "[1-60)", "[1-99)"}},
    {"63", {"63", "[60-99)", "[1-99)"}},
};

// Age as a fixed taxonomy (`age_taxonomy`) or as a continuous attribute with dynamic splits.
CheckerInput PatientInput(const std::string& spec, const Rows& anonymized,
                          bool age_taxonomy = true) {
  CheckerInput in;
  in.spec = Spec(spec);
  in.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  in.raw = kTableI;
  in.anonymized = anonymized;
  in.taxonomy_paths["Job"] = kJobPaths;
  in.taxonomy_paths["Sex"] = kSexPaths;
  if (age_taxonomy) in.taxonomy_paths["Age"] = kAgePaths;
  return in;
}

TEST(CheckerTableTest, TableIISatisfiesLkc225) {
  const CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII);
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.violation, "");
  EXPECT_EQ(check.smallest_group, 2u);
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.5));
  EXPECT_EQ(check.subsets_checked, 6u);  // 3 pairs + 3 singletons (cross-check)
  EXPECT_OK(CheckTruthful(in));
  // Also with Age as a continuous attribute (intervals checked numerically).
  EXPECT_OK(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), kTableII, /*age_taxonomy=*/false)));
}

TEST(CheckerTableTest, TableIIViolatesL3) {
  // mohammed2010 §1.1: <Professional, M, [30-60)> is not 2-anonymous (record 8 only).
  const PrivacyCheck check = CheckPrivacy(PatientInput(Lkc(3, 2, 0.5), kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("{Job, Sex, Age}"));
  EXPECT_THAT(check.violation, HasSubstr("<Professional, M, [30-60)> has 1 record(s) < K=2"));
  EXPECT_EQ(check.smallest_group, 1u);
  EXPECT_EQ(check.subsets_checked, 7u);
}

TEST(CheckerTableTest, TableIIISatisfiesLkc225) {
  const CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableIII);
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.smallest_group, 2u);
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.5));
  EXPECT_OK(CheckTruthful(in));
}

TEST(CheckerTableTest, RawTableViolatesK) {
  const PrivacyCheck check = CheckPrivacy(PatientInput(Lkc(2, 2, 0.5), kTableI));
  EXPECT_FALSE(check.satisfied);
  // Pairs are checked first, in spec order; groups in sorted order.
  EXPECT_THAT(check.violation, HasSubstr("subset {Job, Sex}"));
  EXPECT_THAT(check.violation, HasSubstr("group <Carpenter, F> has 1 record(s) < K=2"));
  EXPECT_EQ(check.smallest_group, 1u);
  EXPECT_THAT(check.largest_confidence, DoubleEq(1.0));  // <M, 34> -> Transgender (Example 1)
}

TEST(CheckerTableTest, ConfidenceViolationDetected) {
  const PrivacyCheck check = CheckPrivacy(PatientInput(Lkc(2, 2, 0.4), kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation,
              HasSubstr("P(Surgery=Transgender | <Non-Technical, M>) = 2/4 = 0.5 > C=0.4"));
  EXPECT_EQ(check.smallest_group, 2u);
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.5));
}

TEST(CheckerTableTest, ConfidenceUsesTheNamedSensitiveAttribute) {
  // P(Transfuse=Y | Technical) = 1: bounded by 0.9 when Transfuse is the sensitive attribute.
  std::string spec = std::string(kTableAttributes) +
                     R"pb(privacy {
                            model: PRIVACY_MODEL_LKC
                            L: 1
                            K: 2
                            C: 0.9
                            sensitive_values: "Y"
                            sensitive_attribute: "Transfuse"
                          })pb";
  const PrivacyCheck check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("P(Transfuse=Y | <Technical>) = 2/2 = 1 > C=0.9"));
}

TEST(CheckerLkcTest, L1PassesButL2Fails) {
  CheckerInput in;
  in.header = {"A", "B"};
  in.raw = {{"a1", "b1"}, {"a1", "b2"}, {"a2", "b1"}, {"a2", "b2"}};
  in.anonymized = in.raw;
  const std::string attrs = R"pb(
    attributes { name: "A" role: ROLE_QID }
    attributes { name: "B" role: ROLE_QID }
  )pb";
  in.spec = Spec(attrs + "privacy { model: PRIVACY_MODEL_LKC L: 1 K: 2 }");
  PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.subsets_checked, 2u);
  EXPECT_EQ(check.largest_confidence, 0.0);

  in.spec = Spec(attrs + "privacy { model: PRIVACY_MODEL_LKC L: 2 K: 2 }");
  check = CheckPrivacy(in);
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("group <a1, b1> has 1 record(s) < K=2"));
  EXPECT_EQ(check.subsets_checked, 3u);

  // L larger than |QID| checks the whole QID.
  in.spec = Spec(attrs + "privacy { model: PRIVACY_MODEL_LKC L: 5 K: 1 }");
  check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.smallest_group, 1u);
  EXPECT_EQ(check.subsets_checked, 3u);
}

TEST(CheckerLkcTest, NoQidAttributeChecksTheWholeTable) {
  CheckerInput in;
  in.header = {"S"};
  in.raw = {{"x"}, {"y"}, {"x"}};
  in.anonymized = in.raw;
  const std::string attrs = R"pb(attributes { name: "S" role: ROLE_SENSITIVE })pb";
  in.spec =
      Spec(attrs + "privacy { model: PRIVACY_MODEL_LKC L: 2 K: 3 C: 0.7 sensitive_values: 'x' }");
  PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.subsets_checked, 1u);
  EXPECT_EQ(check.smallest_group, 3u);
  EXPECT_THAT(check.largest_confidence, DoubleEq(2.0 / 3));
  EXPECT_OK(CheckMaximal(in));  // nothing to refine
  in.spec = Spec(attrs + "privacy { model: PRIVACY_MODEL_LKC L: 2 K: 4 }");
  check = CheckPrivacy(in);
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("subset {}: group <> has 3 record(s) < K=4"));
}

TEST(CheckerLkcTest, ManyQidAttributesCheckOnlySizeL) {
  CheckerInput in;
  std::string spec;
  for (int i = 0; i < 9; ++i) {
    in.header.push_back("Q" + std::to_string(i));
    spec += "attributes { name: \"Q" + std::to_string(i) + "\" role: ROLE_QID }\n";
  }
  in.raw = {std::vector<std::string>(9, "x"), std::vector<std::string>(9, "x")};
  in.anonymized = in.raw;
  in.spec = Spec(spec + "privacy { model: PRIVACY_MODEL_LKC L: 2 K: 2 }");
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.subsets_checked, 36u);  // C(9, 2), no cross-check above 8 QID attributes
}

TEST(CheckerTemplatesTest, AnonymityTemplates) {
  std::string spec = std::string(kTableAttributes) + R"pb(privacy {
                                                            model: PRIVACY_MODEL_TEMPLATES
                                                            templates { qid: "Job" qid: "Sex" k: 2 }
                                                            templates { qid: "Age" k: 2 }
                                                          })pb";
  PrivacyCheck check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.subsets_checked, 2u);
  EXPECT_EQ(check.smallest_group, 2u);
  EXPECT_EQ(check.largest_confidence, 0.0);

  spec = std::string(kTableAttributes) + R"pb(privacy {
                                                model: PRIVACY_MODEL_TEMPLATES
                                                templates { qid: "Job" qid: "Sex" k: 3 }
                                              })pb";
  check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("anonymity template #1 {Job, Sex} k=3"));
  EXPECT_THAT(check.violation, HasSubstr("<Professional, F> has 2 record(s) < K=3"));

  spec = std::string(kTableAttributes) + R"pb(privacy {
                                                model: PRIVACY_MODEL_TEMPLATES
                                                templates { qid: "Job" qid: "Sex" qid: "Age" k: 2 }
                                              })pb";
  check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("<Professional, M, [30-60)> has 1 record(s)"));
}

TEST(CheckerTemplatesTest, ConfidenceTemplates) {
  // <{Sex, Age}, Transgender, 0.4>: <M, [30-60)> gives 2/5; <{Job}, ...>: Non-Technical 2/4.
  std::string spec =
      std::string(kTableAttributes) +
      R"pb(privacy {
             model: PRIVACY_MODEL_TEMPLATES
             confidence { qid: "Sex" qid: "Age" sensitive_values: "Transgender" max: 0.4 }
           })pb";
  PrivacyCheck check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.4));
  EXPECT_EQ(check.subsets_checked, 1u);

  spec = std::string(kTableAttributes) +
         R"pb(privacy {
                model: PRIVACY_MODEL_TEMPLATES
                templates { qid: "Job" k: 2 }
                confidence { qid: "Sex" qid: "Age" sensitive_values: "Transgender" max: 0.4 }
                confidence {
                  qid: "Job"
                  attribute: "Surgery"
                  sensitive_values: "Plastic"
                  sensitive_values: "Transgender"
                  max: 0.4
                }
              })pb";
  check = CheckPrivacy(PatientInput(spec, kTableII));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("confidence template #2 {Job} -> Surgery max=0.4"));
  EXPECT_THAT(check.violation, HasSubstr("P(Surgery=Transgender | <Non-Technical>) = 2/4"));
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.5));  // Plastic | Technical = 1/2 as well
  EXPECT_EQ(check.subsets_checked, 3u);
}

// ---------------------------------------------------------------------------------------------
// Truthfulness.

TEST(CheckerTruthfulTest, TaxonomyValueOffThePath) {
  Rows out = kTableII;
  out[0][1] = "Technical";  // Janitor is Non-Technical
  EXPECT_THAT(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "row 1, attribute \"Job\": output \"Technical\" does not generalize"));
  out = kTableII;
  out[0][1] = "Janitor";  // the leaf itself
  out[1][1] = "ANY_Job";  // the root
  out[2][3] = "[1-99)";
  EXPECT_OK(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)));
  out[3][3] = "[30-60)";  // 24
  EXPECT_THAT(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "row 4, attribute \"Age\""));
}

TEST(CheckerTruthfulTest, SuppressedValues) {
  CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII);
  in.taxonomy_paths.erase("Sex");  // Sex becomes a suppression attribute
  in.anonymized[0][2] = "*";
  EXPECT_OK(CheckTruthful(in));
  in.anonymized[1][2] = "M";  // raw F
  EXPECT_THAT(CheckTruthful(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "row 2, attribute \"Sex\": output \"M\" is neither the raw value \"F\""));
  in.anonymized[1][2] = "F";
  in.spec.set_suppression_token("#");
  EXPECT_THAT(CheckTruthful(in), StatusIs(absl::StatusCode::kFailedPrecondition, "row 1"));
  in.anonymized[0][2] = "#";
  EXPECT_OK(CheckTruthful(in));
}

TEST(CheckerTruthfulTest, ContinuousIntervals) {
  CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII, /*age_taxonomy=*/false);
  in.anonymized[1][3] = "58";  // the raw value itself
  in.anonymized[2][3] = "[57.5-58.5)";
  in.anonymized[3][3] = "[-3.5-24.000001)";
  EXPECT_OK(CheckTruthful(in));
  in.anonymized[2][3] = "[30-58)";  // hi is exclusive
  EXPECT_THAT(CheckTruthful(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "row 3, attribute \"Age\": interval \"[30-58)\" does not contain raw "
                       "value \"58\""));
  in.anonymized[2][3] = "[58-60)";  // lo is inclusive
  EXPECT_OK(CheckTruthful(in));
  in.anonymized[2][3] = "58.0";  // not byte-identical and not an interval
  EXPECT_THAT(CheckTruthful(in), StatusIs(absl::StatusCode::kFailedPrecondition, "row 3"));
  in.anonymized[2][3] = "[30-60]";
  EXPECT_THAT(CheckTruthful(in), StatusIs(absl::StatusCode::kFailedPrecondition, "row 3"));
}

TEST(CheckerTruthfulTest, NonQidColumnsMustBeUnchanged) {
  Rows out = kTableII;
  out[4][4] = "N";
  EXPECT_THAT(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "row 5, attribute \"Transfuse\" is not a QID attribute but its value "
                       "changed from \"Y\" to \"N\""));
  out = kTableII;
  out[6][5] = "Vascular ";
  EXPECT_THAT(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "row 7, attribute \"Surgery\""));
  out = kTableII;
  out[0][0] = "01";  // the ID column, when released, must be unchanged too
  EXPECT_THAT(CheckTruthful(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "attribute \"ID\""));
}

// ---------------------------------------------------------------------------------------------
// Interval parsing.

TEST(CheckerIntervalTest, ParsesNegativesDecimalsAndExponents) {
  struct Case {
    const char* text;
    double lo, hi;
    const char* lo_text;
    const char* hi_text;
  };
  for (const Case& c : std::vector<Case>{
           {"[1-99)", 1, 99, "1", "99"},
           {"[-3.5-10)", -3.5, 10, "-3.5", "10"},
           {"[-10--3.5)", -10, -3.5, "-10", "-3.5"},
           {"[0-0.25)", 0, 0.25, "0", "0.25"},
           {"[1e-05-2)", 1e-05, 2, "1e-05", "2"},
           {"[-1E-3--1e-4)", -1e-3, -1e-4, "-1E-3", "-1e-4"},
           {"[.5-1.)", 0.5, 1, ".5", "1."},
           {"[+1-+2)", 1, 2, "+1", "+2"},
       }) {
    SCOPED_TRACE(c.text);
    ASSERT_OK_AND_ASSIGN(Interval i, ParseInterval(c.text));
    EXPECT_EQ(i.lo, c.lo);
    EXPECT_EQ(i.hi, c.hi);
    EXPECT_EQ(i.lo_text, c.lo_text);
    EXPECT_EQ(i.hi_text, c.hi_text);
  }
  for (const char* bad :
       {"", "[", "[)", "[-)", "[1-)", "[-1)", "1-99", "[1-99]", "(1-99)", "[1,99)", "[a-b)",
        "[1 - 99)", "[1--)", "[inf-1)", "[1-2-3)", "[e-5-1)"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ParseInterval(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "not an interval"));
  }
}

// ---------------------------------------------------------------------------------------------
// Maximality.

TEST(CheckerMaximalTest, TableIIIsNotMaximal) {
  // With Age continuous, Non-Technical -> {Janitor, Mover} keeps (2, 2, 50%)-privacy: Janitor
  // {#1, #6} and Mover {#3, #5} each hold one Transgender record out of two.
  const CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII, /*age_taxonomy=*/false);
  EXPECT_THAT(CheckMaximal(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "not maximal: the refinement specialize Job: \"Non-Technical\" -> {Janitor, "
                       "Mover} on 4 row(s) keeps the privacy model satisfied"));
}

Rows TableIIRefined() {
  Rows out = kTableII;
  for (size_t r = 0; r < out.size(); ++r) {
    if (out[r][1] == "Non-Technical") out[r][1] = kTableI[r][1];
  }
  return out;
}

TEST(CheckerMaximalTest, TableIIWithNonTechnicalSpecializedIsMaximal) {
  // Remaining refinements: Professional (<Lawyer, F> = {#2}), Technical (single records), and
  // [30-60) split at 58 by information gain (<Mover, [30-58)> = {#5}): all invalid.
  const CheckerInput in = PatientInput(Lkc(2, 2, 0.5), TableIIRefined(), /*age_taxonomy=*/false);
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckMaximal(in));
}

TEST(CheckerMaximalTest, TaxonomyAgeSpecializationOfSingleValueIntervalIsARefinement) {
  // With Age as the fixed tree of Fig. 2, [1-30) -> 24 changes no group, so it stays valid.
  const CheckerInput in = PatientInput(Lkc(2, 2, 0.5), TableIIRefined(), /*age_taxonomy=*/true);
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         "specialize Age: \"[1-30)\" -> {24} on 2 row(s)"));
}

TEST(CheckerMaximalTest, BeneficialSkipsSingleClassRefinements) {
  // Make every Non-Technical record class Y: Non-Technical -> {Janitor, Mover} is then valid but
  // not beneficial. [30-60) then splits at 44 ({#1, #5} both Transgender), which is invalid.
  CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII, /*age_taxonomy=*/false);
  in.raw[2][4] = "Y";
  in.anonymized[2][4] = "Y";
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kFailedPrecondition, "Non-Technical"));
  in.spec.set_beneficial(true);
  EXPECT_OK(CheckMaximal(in));
}

TEST(CheckerMaximalTest, TableThatViolatesPrivacyIsRejected) {
  EXPECT_THAT(CheckMaximal(PatientInput(Lkc(3, 2, 0.5), kTableII)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "itself violates privacy"));
  Rows out = kTableII;
  out[0][1] = "Technical";
  EXPECT_THAT(CheckMaximal(PatientInput(Lkc(2, 2, 0.5), out)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "needs a truthful table"));
}

CheckerInput ColorInput(const Rows& anonymized) {
  CheckerInput in;
  in.spec = Spec(R"pb(
    attributes { name: "Color" role: ROLE_QID }
    attributes { name: "Class" role: ROLE_CLASS }
    privacy {
      model: PRIVACY_MODEL_TEMPLATES
      templates { qid: "Color" k: 2 }
    }
  )pb");
  in.header = {"Color", "Class"};
  in.raw = {{"red", "Y"}, {"red", "N"}, {"blue", "Y"}, {"blue", "N"}, {"green", "Y"}};
  in.anonymized = anonymized;
  return in;
}

TEST(CheckerMaximalTest, TwoAnonymousSuppressedTableNotMaximal) {
  // Everything suppressed is 2-anonymous, but disclosing blue (or red) keeps it 2-anonymous.
  const CheckerInput in = ColorInput({{"*", "Y"}, {"*", "N"}, {"*", "Y"}, {"*", "N"}, {"*", "Y"}});
  EXPECT_TRUE(CheckPrivacy(in).satisfied);
  EXPECT_OK(CheckTruthful(in));
  EXPECT_THAT(CheckMaximal(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "disclose Color: \"blue\" from \"*\" on 2 of 5 suppressed row(s)"));
}

TEST(CheckerMaximalTest, TwoAnonymousSuppressedTableMaximal) {
  // Disclosing blue or green would leave a single record behind "*" or under green.
  const CheckerInput in =
      ColorInput({{"red", "Y"}, {"red", "N"}, {"*", "Y"}, {"*", "N"}, {"*", "Y"}});
  const PrivacyCheck check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.smallest_group, 2u);
  EXPECT_OK(CheckTruthful(in));
  EXPECT_OK(CheckMaximal(in));
}

// One continuous QID X in [-2-5) with the exact (per-value) threshold search.
CheckerInput NumberInput(bool with_class, const std::vector<std::string>& classes, int k) {
  CheckerInput in;
  std::string spec =
      R"pb(numeric_split: NUMERIC_SPLIT_EXACT
           attributes { name: "X" role: ROLE_QID type: ATTRIBUTE_TYPE_CONTINUOUS })pb";
  if (with_class) spec += R"pb(attributes { name: "C" role: ROLE_CLASS })pb";
  spec +=
      "privacy { model: PRIVACY_MODEL_TEMPLATES templates { qid: \"X\" k: " + std::to_string(k) +
      " } }";
  in.spec = Spec(spec);
  in.header = {"X", "C"};
  const std::vector<std::string> xs = {"4", "1.5", "3", "-2"};
  for (size_t i = 0; i < xs.size(); ++i) {
    in.raw.push_back({xs[i], classes[i]});
    in.anonymized.push_back({"[-2-5)", classes[i]});
  }
  return in;
}

TEST(CheckerMaximalTest, IntervalSplitWithoutClassBalancesTheHalves) {
  // Candidates 1.5, 3, 4: |#left - #right| = 2, 0, 2.
  EXPECT_THAT(CheckMaximal(NumberInput(false, {"a", "b", "c", "d"}, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "split X: \"[-2-5)\" at 3 -> \"[-2-3)\" (2 row(s)), \"[3-5)\" (2 row(s))"));
  EXPECT_OK(CheckMaximal(NumberInput(false, {"a", "b", "c", "d"}, 3)));
}

TEST(CheckerMaximalTest, IntervalSplitMaximizesInfoGainSmallestOnTies) {
  // Sorted: -2 Y, 1.5 Y, 3 N, 4 N: split at 3 is pure.
  EXPECT_THAT(CheckMaximal(NumberInput(true, {"N", "Y", "N", "Y"}, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "at 3 -> \"[-2-3)\""));
  // Sorted: -2 Y, 1.5 N, 3 Y, 4 N: 1.5 and 4 tie (gain 0.311), 3 gains 0: the smallest (1.5)
  // wins, leaving a single record on the left, so k=2 makes the table maximal.
  EXPECT_THAT(CheckMaximal(NumberInput(true, {"N", "N", "Y", "Y"}, 1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "at 1.5 -> \"[-2-1.5)\" (1 row(s))"));
  EXPECT_OK(CheckMaximal(NumberInput(true, {"N", "N", "Y", "Y"}, 2)));
  // Beneficial: a single class is never refined.
  CheckerInput in = NumberInput(true, {"Y", "Y", "Y", "Y"}, 1);
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kFailedPrecondition, "split X"));
  in.spec.set_beneficial(true);
  EXPECT_OK(CheckMaximal(in));
}

TEST(CheckerMaximalTest, BinnedSearchSplitsOnlyAtBinBoundaries) {
  // Binned (the default): with k = 2, -2 and 1.5 fill the first bin and 3 and 4 the second (no
  // range: 32 cells over [-2, 4]); the one candidate is the boundary 3 (Y Y | N N).
  CheckerInput in = NumberInput(true, {"N", "Y", "N", "Y"}, 2);
  in.spec.clear_numeric_split();
  EXPECT_THAT(CheckMaximal(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "at bin boundary 3 -> \"[-2-3)\" (2 row(s)), \"[3-5)\" (2 row(s))"));
  // k = 1 is no anonymity threshold: bins need 20 records by default and 4 make none, so the
  // per-value split at 1.5 that the exact search would take is not a candidate.
  in = NumberInput(true, {"N", "N", "Y", "Y"}, 1);
  in.spec.clear_numeric_split();
  EXPECT_OK(CheckMaximal(in));
  in.spec.set_min_split_bin(1);  // every value its own bin: the exact choice again
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         "at bin boundary 1.5 -> \"[-2-1.5)\" (1 row(s))"));
  // On a grid the threshold is the public cell boundary: [0, 8) with precision 1 in 4 cells of 2
  // values; k = 2 makes the bins [0, 4) and [4, 8). The exact search would cut at 5.
  in = CheckerInput();
  in.spec = Spec(R"pb(numeric_cells: 4
                      attributes {
                        name: "X"
                        role: ROLE_QID
                        type: ATTRIBUTE_TYPE_CONTINUOUS
                        range: [ 0, 8 ]
                        precision: 1
                      }
                      attributes { name: "C" role: ROLE_CLASS }
                      privacy {
                        model: PRIVACY_MODEL_TEMPLATES
                        templates { qid: "X" k: 2 }
                      })pb");
  in.header = {"X", "C"};
  for (const auto& [x, c] : std::vector<std::pair<std::string, std::string>>{
           {"1", "Y"}, {"2", "Y"}, {"5", "N"}, {"7", "N"}}) {
    in.raw.push_back({x, c});
    in.anonymized.push_back({"[0-8)", c});
  }
  EXPECT_THAT(CheckMaximal(in),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "at bin boundary 4 -> \"[0-4)\" (2 row(s)), \"[4-8)\" (2 row(s))"));
}

// ---------------------------------------------------------------------------------------------
// Bad inputs.

TEST(CheckerInputTest, MalformedInputsAreErrors) {
  const CheckerInput good = PatientInput(Lkc(2, 2, 0.5), kTableII);
  // `table_error`: an error of the tables (also reported by CheckTruthful), not of the privacy
  // model (which CheckTruthful does not read).
  auto expect_invalid = [](const CheckerInput& in, const std::string& message,
                           bool table_error = true) {
    SCOPED_TRACE(message);
    const PrivacyCheck check = CheckPrivacy(in);
    EXPECT_FALSE(check.satisfied);
    EXPECT_THAT(check.violation, HasSubstr("invalid input: "));
    EXPECT_THAT(check.violation, HasSubstr(message));
    if (table_error) {
      EXPECT_THAT(CheckTruthful(in), StatusIs(absl::StatusCode::kInvalidArgument, message));
    } else {
      EXPECT_OK(CheckTruthful(in));
    }
    EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kInvalidArgument, message));
  };
  CheckerInput in = good;
  in.raw[3].pop_back();
  expect_invalid(in, "raw row 4 has 5 field(s) but the header has 6");
  in = good;
  in.anonymized[10].push_back("extra");
  expect_invalid(in, "anonymized row 11 has 7 field(s)");
  in = good;
  in.anonymized.pop_back();
  expect_invalid(in, "the raw table has 11 row(s) but the anonymized table has 10");
  in = good;
  in.header[5] = "Operation";
  expect_invalid(in, "spec attribute \"Surgery\" is not in the header");
  in = good;
  in.header[4] = "Job";
  expect_invalid(in, "header names column \"Job\" twice");
  in = good;
  in.taxonomy_paths["Transfuse"] = {{"Y", {"Y", "ANY"}}};
  expect_invalid(in, "taxonomy_paths names \"Transfuse\", which is not a QID attribute");
  in = good;
  in.taxonomy_paths["Job"]["Janitor"] = {"Janitor", "Non-Technical", "White-collar", "ANY_Job"};
  expect_invalid(in, "label \"Non-Technical\" has two parents");
  in = good;
  in.taxonomy_paths["Job"]["Cook"] = {"Cook", "Janitor", "Non-Technical", "Blue-collar", "ANY_Job"};
  expect_invalid(in, "label \"Janitor\" is both a leaf and an inner node");
  in = good;
  in.taxonomy_paths["Sex"]["F"] = {"F", "Person"};
  expect_invalid(in, "ends in root");
  in = good;
  in.taxonomy_paths["Sex"]["X"] = {"Y", "ANY_Sex"};
  expect_invalid(in, "starts with \"Y\"");
  in = good;
  in.spec.mutable_privacy()->set_l(0);
  expect_invalid(in, "L must be at least 1", /*table_error=*/false);
  in = good;
  in.spec.mutable_attributes(5)->set_role(fedanon::v1::ROLE_OTHER);
  expect_invalid(in, "attribute(s) with role sensitive", /*table_error=*/false);
  in = good;
  in.spec.mutable_privacy()->set_model(fedanon::v1::PRIVACY_MODEL_TEMPLATES);
  in.spec.mutable_privacy()->add_templates()->add_qid("Weight");
  expect_invalid(in, "anonymity template #1 names attribute \"Weight\"", /*table_error=*/false);
  in = good;
  in.spec.mutable_privacy()->set_model(fedanon::v1::PRIVACY_MODEL_UNSPECIFIED);
  expect_invalid(in, "unsupported privacy model", /*table_error=*/false);
}

TEST(CheckerInputTest, RawValueMissingFromTaxonomy) {
  CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII);
  in.taxonomy_paths["Job"].erase("Mover");
  EXPECT_THAT(CheckTruthful(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "row 3, attribute \"Job\": raw value \"Mover\" is missing from "
                       "taxonomy_paths"));
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kInvalidArgument, "Mover"));
  in = PatientInput(Lkc(2, 2, 0.5), kTableII, /*age_taxonomy=*/false);
  in.raw[0][3] = "thirty-four";
  in.anonymized[0][3] = "[30-60)";
  EXPECT_THAT(CheckTruthful(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                          "raw value \"thirty-four\" is not a "
                                          "number"));
}

TEST(CheckerInputTest, IdAttributeMayBeAbsentAndArxDuplicatesCollapse) {
  CheckerInput in = PatientInput(Lkc(2, 2, 0.5), kTableII);
  in.header.erase(in.header.begin());
  for (auto& row : in.raw) row.erase(row.begin());
  for (auto& row : in.anonymized) row.erase(row.begin());
  in.taxonomy_paths["Sex"] = {{"M", {"M", "M", "ANY_Sex"}}, {"F", {"F", "F", "ANY_Sex"}}};
  EXPECT_TRUE(CheckPrivacy(in).satisfied);
  EXPECT_OK(CheckTruthful(in));
}

TEST(CheckerInputTest, BeneficialNeedsAClass) {
  CheckerInput in = NumberInput(false, {"a", "b", "c", "d"}, 3);
  in.spec.set_beneficial(true);
  EXPECT_THAT(CheckMaximal(in), StatusIs(absl::StatusCode::kInvalidArgument, "beneficial"));
}

// ---------------------------------------------------------------------------------------------
// Local recoding: released values overlap ([0-50) covers what [0-30) and [30-50) cover).

constexpr char kLocalSpec[] = R"pb(
  attributes { name: "Age" role: ROLE_QID type: ATTRIBUTE_TYPE_CONTINUOUS }
  attributes { name: "Sex" role: ROLE_QID type: ATTRIBUTE_TYPE_CATEGORICAL }
  attributes { name: "S" role: ROLE_SENSITIVE }
  privacy { model: PRIVACY_MODEL_LKC L: 2 K: 2 C: 0.6 sensitive_values: "x" }
)pb";

const Rows kLocalRaw = {
    {"20", "M", "x"}, {"25", "M", "y"}, {"30", "F", "y"},
    {"35", "F", "x"}, {"40", "M", "y"}, {"45", "F", "y"},
};

CheckerInput LocalInput(const Rows& anonymized) {
  CheckerInput in;
  in.spec = Spec(kLocalSpec);
  in.header = {"Age", "Sex", "S"};
  in.raw = kLocalRaw;
  in.anonymized = anonymized;
  return in;
}

// Three groups of two generalized to overlapping intervals and different levels of Sex.
const Rows kLocalGood = {
    {"[0-30)", "M", "x"}, {"[0-30)", "M", "y"},  {"[0-50)", "F", "y"},
    {"[0-50)", "F", "x"}, {"[30-50)", "*", "y"}, {"[30-50)", "*", "y"},
};

TEST(CheckerLocalTest, OverlappingGroupsOfTwoSatisfyLkc) {
  const CheckerInput in = LocalInput(kLocalGood);
  EXPECT_OK(CheckTruthful(in));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.smallest_group, 2u);
  // Literal classes: {Age, Sex}, {Age}, {Sex}; covering: the same three subsets.
  EXPECT_EQ(check.subsets_checked, 6u);
  // A victim (45, F) is consistent with [0-50) F and [30-50) *: 4 records, one of them x.
  EXPECT_THAT(check.largest_confidence, DoubleEq(0.5));
}

TEST(CheckerLocalTest, ClassBelowKFailsEvenWhenEveryVictimHasKConsistentRecords) {
  Rows out = kLocalGood;
  out[1][0] = "[20-30)";  // (25, M) alone in its class; (20, M) and (25, M) still match 2 records
  const PrivacyCheck check = CheckLocalPrivacy(LocalInput(out));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("has 1 record(s) < K=2"));
}

TEST(CheckerLocalTest, CoveringConfidenceAboveCFails) {
  Rows out = kLocalGood;
  // Rows 1 and 4 (both x) form a class of two; the victim (20, M) matches only it.
  out[0] = {"[0-50)", "*", "x"};
  out[3] = {"[0-50)", "*", "x"};
  out[1] = {"[0-50)", "M", "y"};
  out[2] = {"[0-50)", "M", "y"};
  const PrivacyCheck check = CheckLocalPrivacy(LocalInput(out));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("P(S=x"));
}

TEST(CheckerLocalTest, VictimMatchingFewerThanKRecordsFails) {
  Rows out = kLocalGood;
  // (20, M) released as itself: only one released record covers (20, M).
  out[0] = {"20", "M", "x"};
  out[1] = {"[21-30)", "M", "y"};
  const PrivacyCheck check = CheckLocalPrivacy(LocalInput(out));
  EXPECT_FALSE(check.satisfied);
  // The literal class check finds it first; the covering part alone fails too.
  EXPECT_THAT(check.violation, HasSubstr("< K=2"));
  EXPECT_EQ(check.smallest_group, 1u);
}

// ---------------------------------------------------------------------------------------------
// ldiversity and tcloseness: the checker's own count of each group's sensitive distribution.
//
// Four records (Job, Disease): (A, Flu), (A, HIV), (B, Flu), (B, Flu). Released as they are, the
// groups are A = {Flu, HIV} and B = {Flu, Flu}; with Job suppressed, one group {Flu 3, HIV 1}.
// The table: Flu 3/4, HIV 1/4, Cold 0.

CheckerInput DiseaseInput(const std::string& privacy, bool suppressed) {
  CheckerInput in;
  in.spec = Spec(std::string(R"pb(
                   attributes { name: "Job" role: ROLE_QID }
                   attributes {
                     name: "Disease"
                     role: ROLE_SENSITIVE
                     values: "Flu"
                     values: "HIV"
                     values: "Cold"
                   }
                 )pb") +
                 privacy);
  in.header = {"Job", "Disease"};
  in.raw = {{"A", "Flu"}, {"A", "HIV"}, {"B", "Flu"}, {"B", "Flu"}};
  in.anonymized = in.raw;
  if (suppressed) {
    for (auto& row : in.anonymized) row[0] = "*";
  }
  return in;
}

TEST(CheckerDistributionModels, DistinctDiversityFindsTheHomogeneousGroup) {
  const std::string l2 = "privacy { model: PRIVACY_MODEL_LDIVERSITY diversity: 2 }";
  PrivacyCheck check = CheckPrivacy(DiseaseInput(l2, false));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("group <B> of 2 record(s) fails: it has 1 distinct"));
  check = CheckPrivacy(DiseaseInput(l2, true));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.smallest_diversity, 2);
  // l = 3 raises k to 3: the two groups of 2 fail on size first.
  check =
      CheckPrivacy(DiseaseInput("privacy { model: PRIVACY_MODEL_LDIVERSITY diversity: 3 }", false));
  EXPECT_THAT(check.violation, HasSubstr("record(s) < K=3"));
}

TEST(CheckerDistributionModels, EntropyAndRecursiveDiversity) {
  // One group {3, 1}: H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.562 < ln 2.
  PrivacyCheck check = CheckPrivacy(DiseaseInput(
      "privacy { model: PRIVACY_MODEL_LDIVERSITY variant: DIVERSITY_VARIANT_ENTROPY diversity: 2 }",
      true));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("its entropy 0.562"));
  EXPECT_NEAR(check.smallest_diversity, std::exp(0.5623351446188083), 1e-9);
  // Recursive (c, 2): r_1 = 3, tail = 1: c = 3 fails (3 < 3 is false), c = 4 holds.
  const std::string recursive =
      "privacy { model: PRIVACY_MODEL_LDIVERSITY variant: DIVERSITY_VARIANT_RECURSIVE "
      "diversity: 2 recursive_c: ";
  EXPECT_FALSE(CheckPrivacy(DiseaseInput(recursive + "3 }", true)).satisfied);
  check = CheckPrivacy(DiseaseInput(recursive + "4 }", true));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_EQ(check.largest_recursive_ratio, 3);
}

TEST(CheckerDistributionModels, TClosenessEveryGroundDistance) {
  // Equal: A (1/2, 1/2, 0) against (3/4, 1/4, 0): 1/2 (1/4 + 1/4) = 1/4; B (1, 0, 0): 1/4.
  PrivacyCheck check =
      CheckPrivacy(DiseaseInput("privacy { model: PRIVACY_MODEL_TCLOSENESS t: 0.2 }", false));
  EXPECT_FALSE(check.satisfied);
  EXPECT_THAT(check.violation, HasSubstr("distance to the table's distribution is 0.25 > t=0.2"));
  check = CheckPrivacy(DiseaseInput("privacy { model: PRIVACY_MODEL_TCLOSENESS t: 0.25 }", false));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_NEAR(check.largest_closeness, 0.25, 1e-12);
  // Ordered (Flu, HIV, Cold): A - Q = (-1/4, 1/4, 0), prefix sums -1/4, 0, 0, over m - 1 = 2.
  check = CheckPrivacy(DiseaseInput(
      "privacy { model: PRIVACY_MODEL_TCLOSENESS t: 0.2 distance: GROUND_DISTANCE_ORDERED }",
      false));
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_NEAR(check.largest_closeness, 0.125, 1e-12);
  // Hierarchical, * -> {Infection -> {Flu, HIV}, Cold}: d(Flu, HIV) = 1/2; A moves 1/4 from HIV
  // to Flu: 1/8.
  CheckerInput in = DiseaseInput(
      "privacy { model: PRIVACY_MODEL_TCLOSENESS t: 0.2 distance: GROUND_DISTANCE_HIERARCHICAL }",
      false);
  in.sensitive_taxonomy = {{"Flu", {"Flu", "Infection", "*"}},
                           {"HIV", {"HIV", "Infection", "*"}},
                           {"Cold", {"Cold", "*"}}};
  check = CheckPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_NEAR(check.largest_closeness, 0.125, 1e-12);
  // A value the taxonomy lacks is an input error, not a pass.
  in.sensitive_taxonomy.erase("Cold");
  EXPECT_THAT(CheckPrivacy(in).violation, HasSubstr("sensitive_taxonomy lacks value \"Cold\""));
}

TEST(CheckerDistributionModels, MaximalityTriesTheRefinements) {
  // Suppressed Job, l = 2: disclosing A leaves A = {Flu, HIV} and the rest {Flu, Flu}, which
  // fails; disclosing B gives B = {Flu, Flu}, which fails: the table is maximal. For t = 0.25
  // disclosing A keeps both groups at distance 1/4: not maximal.
  EXPECT_OK(
      CheckMaximal(DiseaseInput("privacy { model: PRIVACY_MODEL_LDIVERSITY diversity: 2 }", true)));
  EXPECT_THAT(
      CheckMaximal(DiseaseInput("privacy { model: PRIVACY_MODEL_TCLOSENESS t: 0.25 }", true)),
      StatusIs(absl::StatusCode::kFailedPrecondition, "not maximal"));
}

}  // namespace
}  // namespace fedanon::testing
