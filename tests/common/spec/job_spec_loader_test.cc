#include "common/spec/job_spec_loader.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <ctime>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/spec/job_digest.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::spec {
namespace {

using ::fedanon::testing::StatusIs;
using ::fedanon::v1::JobSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

constexpr char kLkcSpec[] = R"(# LKC-privacy on Adult
name: adult-lkc
attributes:
  - name: age
    role: qid
    type: continuous
    range: [0, 100]
  - {name: education, role: QID, taxonomy: hierarchies/education.csv}
  - name: sex
    role: qid
    taxonomy: /abs/sex.csv
  - {name: occupation, role: sensitive}
  - {name: income, role: class}
  - {name: id, role: id}
  - {name: zip, role: other}
privacy:
  model: lkc
  L: 2
  K: 20
  C: 0.2
  sensitive_values: [Prof-specialty, Exec-managerial]
score: infogain_privloss
missing: keep
missing_token: "NA"
beneficial: true
)";

constexpr char kTemplatesSpec[] = R"(name: adult-templates
attributes:
  - {name: age, role: qid, type: continuous}
  - {name: education, role: qid, taxonomy: education.csv}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: salary, role: sensitive}
  - {name: class, role: class}
privacy:
  model: templates
  templates:
    - {qid: [age, education], k: 10}
    - qid: [sex]
      k: 5
  confidence:
    - {qid: [age, sex], sensitive_values: [">50K"], max: 0.6}
    - qid: [education]
      attribute: salary
      sensitive_values: [">50K"]
      max: 1
score: GainRatio
partitioning: vertical
suppression_token: "-"
)";

JobSpec Parse(std::string_view yaml) {
  absl::StatusOr<JobSpec> spec = ParseJobSpecYaml(yaml, "spec.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec();
}

TEST(JobSpecLoaderTest, ParsesLkcSpec) {
  ASSERT_OK_AND_ASSIGN(JobSpec spec, ParseJobSpecYaml(kLkcSpec, "spec.yaml"));
  EXPECT_EQ(spec.name(), "adult-lkc");
  ASSERT_EQ(spec.attributes_size(), 7);
  EXPECT_EQ(spec.attributes(0).name(), "age");
  EXPECT_EQ(spec.attributes(0).role(), v1::ROLE_QID);
  EXPECT_EQ(spec.attributes(0).type(), v1::ATTRIBUTE_TYPE_CONTINUOUS);
  EXPECT_THAT(spec.attributes(0).range(), ElementsAre(0.0, 100.0));
  EXPECT_EQ(spec.attributes(1).role(), v1::ROLE_QID);  // case-insensitive
  EXPECT_EQ(spec.attributes(1).taxonomy(), "hierarchies/education.csv");
  EXPECT_EQ(spec.attributes(1).type(), v1::ATTRIBUTE_TYPE_CATEGORICAL);  // default
  EXPECT_EQ(spec.attributes(3).role(), v1::ROLE_SENSITIVE);
  EXPECT_EQ(spec.attributes(4).role(), v1::ROLE_CLASS);
  EXPECT_EQ(spec.attributes(5).role(), v1::ROLE_ID);
  EXPECT_EQ(spec.attributes(6).role(), v1::ROLE_OTHER);
  EXPECT_EQ(spec.privacy().model(), v1::PRIVACY_MODEL_LKC);
  EXPECT_EQ(spec.privacy().l(), 2u);
  EXPECT_EQ(spec.privacy().k(), 20u);
  EXPECT_DOUBLE_EQ(spec.privacy().c(), 0.2);
  EXPECT_THAT(spec.privacy().sensitive_values(), ElementsAre("Prof-specialty", "Exec-managerial"));
  EXPECT_EQ(spec.score(), v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS);
  EXPECT_EQ(spec.missing(), v1::MISSING_KEEP);
  EXPECT_EQ(spec.missing_token(), "NA");
  EXPECT_EQ(spec.suppression_token(), "*");  // default
  EXPECT_TRUE(spec.beneficial());
  EXPECT_OK(ValidateJobSpec(spec));
}

TEST(JobSpecLoaderTest, ParsesTemplatesSpec) {
  ASSERT_OK_AND_ASSIGN(JobSpec spec, ParseJobSpecYaml(kTemplatesSpec, "spec.yaml"));
  const v1::Privacy& p = spec.privacy();
  EXPECT_EQ(p.model(), v1::PRIVACY_MODEL_TEMPLATES);
  ASSERT_EQ(p.templates_size(), 2);
  EXPECT_THAT(p.templates(0).qid(), ElementsAre("age", "education"));
  EXPECT_EQ(p.templates(0).k(), 10u);
  EXPECT_THAT(p.templates(1).qid(), ElementsAre("sex"));
  EXPECT_EQ(p.templates(1).k(), 5u);
  ASSERT_EQ(p.confidence_size(), 2);
  EXPECT_THAT(p.confidence(0).sensitive_values(), ElementsAre(">50K"));
  EXPECT_DOUBLE_EQ(p.confidence(0).max(), 0.6);
  EXPECT_EQ(p.confidence(1).attribute(), "salary");
  EXPECT_DOUBLE_EQ(p.confidence(1).max(), 1.0);
  EXPECT_EQ(spec.score(), v1::SCORE_FUNCTION_GAINRATIO);
  EXPECT_EQ(spec.partitioning(), v1::PARTITIONING_VERTICAL);
  EXPECT_EQ(spec.suppression_token(), "-");
  EXPECT_OK(ValidateJobSpec(spec));
}

TEST(JobSpecLoaderTest, FillsDefaults) {
  JobSpec spec = Parse("attributes: [{name: a, role: qid}]\n");
  EXPECT_EQ(spec.score(), v1::SCORE_FUNCTION_INFOGAIN);
  EXPECT_EQ(spec.missing(), v1::MISSING_DROP);
  EXPECT_EQ(spec.missing_token(), "?");
  EXPECT_EQ(spec.suppression_token(), "*");
  EXPECT_EQ(spec.attributes(0).type(), v1::ATTRIBUTE_TYPE_CATEGORICAL);
  EXPECT_EQ(spec.privacy().model(), v1::PRIVACY_MODEL_LKC);
  EXPECT_EQ(spec.partitioning(), v1::PARTITIONING_UNSPECIFIED);
  EXPECT_FALSE(spec.beneficial());
  EXPECT_EQ(spec.numeric_split(), v1::NUMERIC_SPLIT_BINNED);
  EXPECT_EQ(spec.numeric_cells(), 32u);
  EXPECT_EQ(spec.min_split_bin(), 0u);  // the privacy model's K
}

TEST(JobSpecLoaderTest, NumericSplitKeys) {
  JobSpec spec = Parse("numeric_split: exact\n");
  EXPECT_EQ(spec.numeric_split(), v1::NUMERIC_SPLIT_EXACT);
  EXPECT_EQ(spec.numeric_cells(), 0u);  // not filled: it would not apply
  spec = Parse("numeric_split: binned\nnumeric_cells: 8\nmin_split_bin: 50\n");
  EXPECT_EQ(spec.numeric_split(), v1::NUMERIC_SPLIT_BINNED);
  EXPECT_EQ(spec.numeric_cells(), 8u);
  EXPECT_EQ(spec.min_split_bin(), 50u);
  // A sequential release searches per value unless told otherwise, and cannot be told binned.
  constexpr char kSequential[] =
      "sequential: {anonymity: [{x: [a], y: [current.@record], k: 2}]}\n";
  EXPECT_EQ(Parse(kSequential).numeric_split(), v1::NUMERIC_SPLIT_EXACT);
  EXPECT_THAT(ParseJobSpecYaml(std::string(kSequential) + "numeric_split: binned\n", "spec.yaml"),
              StatusIs(kInvalid,
                       "spec.yaml:2:16: numeric_split: binned does not apply to "
                       "sequential releases"));
}

TEST(JobSpecLoaderTest, NumericSplitErrorsNameThePosition) {
  auto error = [](std::string_view yaml) { return ParseJobSpecYaml(yaml, "spec.yaml").status(); };
  EXPECT_THAT(error("name: x\nnumeric_cells: 0\n"),
              StatusIs(kInvalid, "spec.yaml:2:16: numeric_cells = 0 must be at least 1"));
  EXPECT_THAT(error("numeric_cells: 2000000\n"),
              StatusIs(kInvalid, "spec.yaml:1:16: numeric_cells = 2000000 exceeds the limit"));
  EXPECT_THAT(error("min_split_bin: 0\n"),
              StatusIs(kInvalid,
                       "spec.yaml:1:16: min_split_bin = 0 must be at least 1 (omit it "
                       "to use the privacy model's K)"));
  EXPECT_THAT(
      error("numeric_split: exact\nmin_split_bin: 30\n"),
      StatusIs(kInvalid, "spec.yaml:2:16: min_split_bin applies to numeric_split: binned only"));
  EXPECT_THAT(
      error("numeric_cells: 4\nnumeric_split: exact\n"),
      StatusIs(kInvalid, "spec.yaml:1:16: numeric_cells applies to numeric_split: binned only"));
  EXPECT_THAT(error("numeric_split: fine\n"),
              StatusIs(kInvalid,
                       "spec.yaml:1:16: numeric_split: unknown value 'fine'; expected "
                       "one of: binned, exact"));
  EXPECT_THAT(error("numeric_cells: -3\n"), StatusIs(kInvalid, "-3 is negative"));
}

// max_records_per_party: part of the signed job, 0 refused where the YAML says it, the default
// hashing like the spelled-out value and another value not.
TEST(JobSpecLoaderTest, MaxRecordsPerPartyIsBoundedAndSigned) {
  EXPECT_THAT(ParseJobSpecYaml("name: x\nmax_records_per_party: 0\n", "spec.yaml").status(),
              StatusIs(kInvalid,
                       "spec.yaml:2:24: max_records_per_party = 0 must be at least 1 (omit it "
                       "for the default of 100000000)"));
  const JobSpec omitted = Parse("name: x\n");
  EXPECT_EQ(MaxRecordsPerParty(omitted), kDefaultMaxRecordsPerParty);
  const JobSpec spelled = Parse("name: x\nmax_records_per_party: 100000000\n");
  const JobSpec other = Parse("name: x\nmax_records_per_party: 5000\n");
  EXPECT_EQ(MaxRecordsPerParty(other), 5000u);
  EXPECT_EQ(CanonicalJobBytes(omitted, {}), CanonicalJobBytes(spelled, {}));
  EXPECT_NE(CanonicalJobBytes(omitted, {}), CanonicalJobBytes(other, {}));
}

TEST(JobSpecLoaderTest, ExplicitEmptyTokensAreKeptNullMeansDefault) {
  JobSpec spec = Parse("missing_token: \"\"\nsuppression_token: ''\n");
  EXPECT_EQ(spec.missing_token(), "");
  EXPECT_EQ(spec.suppression_token(), "");
  spec = Parse("missing_token: ~\nsuppression_token:\nname: x\n");
  EXPECT_EQ(spec.missing_token(), "?");
  EXPECT_EQ(spec.suppression_token(), "*");
}

TEST(JobSpecLoaderTest, EnumSpellings) {
  EXPECT_EQ(Parse("score: INFOGAIN_PRIVLOSS").score(), v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS);
  EXPECT_EQ(Parse("score: infogain-privloss").score(), v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS);
  EXPECT_EQ(Parse("score: InfoGain PrivLoss").score(), v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS);
  EXPECT_EQ(Parse("score: info_gain").score(), v1::SCORE_FUNCTION_INFOGAIN);
  EXPECT_EQ(Parse("score: gain-ratio").score(), v1::SCORE_FUNCTION_GAINRATIO);
  EXPECT_EQ(Parse("score: discernibility").score(), v1::SCORE_FUNCTION_DISCERNIBILITY);
  EXPECT_EQ(Parse("attributes: [{name: a, type: Continuous}]").attributes(0).type(),
            v1::ATTRIBUTE_TYPE_CONTINUOUS);
  EXPECT_EQ(Parse("score: SCORE_FUNCTION_GAINRATIO").score(), v1::SCORE_FUNCTION_GAINRATIO);
  EXPECT_EQ(Parse("partitioning: Horizontal").partitioning(), v1::PARTITIONING_HORIZONTAL);
  EXPECT_EQ(Parse("missing: DROP").missing(), v1::MISSING_DROP);
  EXPECT_EQ(Parse("privacy: {model: Templates}").privacy().model(), v1::PRIVACY_MODEL_TEMPLATES);
}

TEST(JobSpecLoaderTest, BoolSpellings) {
  EXPECT_TRUE(Parse("beneficial: yes").beneficial());
  EXPECT_TRUE(Parse("beneficial: True").beneficial());
  EXPECT_FALSE(Parse("beneficial: off").beneficial());
  EXPECT_THAT(
      ParseJobSpecYaml("beneficial: maybe", "spec.yaml"),
      StatusIs(kInvalid, "spec.yaml:1:13: beneficial: expected true or false, got 'maybe'"));
}

TEST(JobSpecLoaderTest, UnknownKeyNamesPosition) {
  EXPECT_THAT(ParseJobSpecYaml("name: x\nprivacy:\n  K: 3\n  foo: 1\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:4:3: unknown key 'foo' in privacy"));
  EXPECT_THAT(ParseJobSpecYaml("nmae: x\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:1:1: unknown key 'nmae' in job spec"));
  EXPECT_THAT(ParseJobSpecYaml("attributes:\n  - {name: a, rol: qid}\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:2:15: unknown key 'rol' in attributes"));
  // Keys are case-sensitive: the LKC fields are literally L, K, C.
  EXPECT_THAT(ParseJobSpecYaml("privacy: {k: 3}\n", "spec.yaml"),
              StatusIs(kInvalid, "unknown key 'k' in privacy"));
}

TEST(JobSpecLoaderTest, DuplicateKeyIsAnError) {
  EXPECT_THAT(ParseJobSpecYaml("name: a\nname: b\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:2:1: duplicate key 'name' in job spec"));
}

TEST(JobSpecLoaderTest, WrongTypes) {
  EXPECT_THAT(
      ParseJobSpecYaml("privacy:\n  K: abc\n", "spec.yaml"),
      StatusIs(kInvalid, "spec.yaml:2:6: privacy.K: expected a non-negative integer, got 'abc'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  K: 2.5\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.K: expected a non-negative integer, got '2.5'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  C: high\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:2:6: privacy.C: expected a number, got 'high'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy: 5\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:1:10: privacy: expected a map of keys, got a scalar"));
  EXPECT_THAT(ParseJobSpecYaml("attributes: {name: a}\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:1:13: attributes: expected a list, got a map"));
  EXPECT_THAT(ParseJobSpecYaml("name: [a, b]\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:1:7: name: expected a single value, got a list"));
  EXPECT_THAT(ParseJobSpecYaml("attributes:\n  - {name: a, range: [1, x]}\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:2:26: attributes.range: expected a number, got 'x'"));
  EXPECT_THAT(ParseJobSpecYaml("attributes:\n  -\n  - {name: a}\n", "spec.yaml"),
              StatusIs(kInvalid, "attributes: empty list entry"));
  EXPECT_THAT(ParseJobSpecYaml("- a\n- b\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:1:1: job spec: expected a map of keys, got a list"));
}

TEST(JobSpecLoaderTest, NegativeAndOutOfRangeUnsigned) {
  EXPECT_THAT(
      ParseJobSpecYaml("privacy:\n  L: -1\n", "spec.yaml"),
      StatusIs(kInvalid,
               "spec.yaml:2:6: privacy.L: -1 is negative; expected a non-negative integer"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  K: 4294967296\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.K: 4294967296 is out of range"));
}

TEST(JobSpecLoaderTest, UnknownEnumValueListsChoices) {
  EXPECT_THAT(ParseJobSpecYaml("attributes:\n  - name: a\n    role: quasi\n", "spec.yaml"),
              StatusIs(kInvalid,
                       "spec.yaml:3:11: attributes.role: unknown value 'quasi'; expected "
                       "one of: qid, class, sensitive, other, id"));
  EXPECT_THAT(ParseJobSpecYaml("score: unspecified\n", "spec.yaml"),
              StatusIs(kInvalid,
                       "score: unknown value 'unspecified'; expected one of: infogain, "
                       "gainratio, infogain_privloss, discernibility"));
  EXPECT_THAT(ParseJobSpecYaml("missing: '--'\n", "spec.yaml"),
              StatusIs(kInvalid, "missing: unknown value '--'; expected one of: drop, keep"));
}

TEST(JobSpecLoaderTest, SyntaxErrorHasPosition) {
  EXPECT_THAT(ParseJobSpecYaml("name: x\nattributes: [a, b\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:3:1: "));
  EXPECT_THAT(ParseJobSpecYaml("name: x\n  bad: indent: here\n", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml:2:"));
}

TEST(JobSpecLoaderTest, EmptyDocumentIsAnError) {
  EXPECT_THAT(ParseJobSpecYaml("", "spec.yaml"),
              StatusIs(kInvalid, "spec.yaml: the job spec is empty"));
  EXPECT_THAT(ParseJobSpecYaml("# only a comment\n", "spec.yaml"),
              StatusIs(kInvalid, "the job spec is empty"));
}

TEST(JobSpecLoaderTest, LoadJobSpecResolvesTaxonomyPaths) {
  std::string pattern = ::testing::TempDir() + "job_spec_test.XXXXXX";
  const std::string dir = ::mkdtemp(pattern.data());
  const std::string path = dir + "/spec.yaml";
  ASSERT_OK(table::WriteFileAtomically(path, kLkcSpec));
  ASSERT_OK_AND_ASSIGN(JobSpec spec, LoadJobSpec(path));
  EXPECT_EQ(spec.attributes(1).taxonomy(), dir + "/hierarchies/education.csv");
  EXPECT_EQ(spec.attributes(2).taxonomy(), "/abs/sex.csv");
  EXPECT_EQ(spec.attributes(0).taxonomy(), "");
  ASSERT_OK(table::WriteFileAtomically(path, "privacy:\n  bogus: 1\n"));
  EXPECT_THAT(LoadJobSpec(path), StatusIs(kInvalid, path + ":2:3: unknown key 'bogus' in privacy"));
  std::filesystem::remove_all(dir);
  EXPECT_THAT(LoadJobSpec(path), StatusIs(absl::StatusCode::kNotFound, "spec.yaml"));
}

// ---------------------------------------------------------------------------------------------
// ValidateJobSpec

// The LKC example with one edit applied to the YAML text.
JobSpec LkcWith(std::string_view from, std::string_view to) {
  std::string yaml = kLkcSpec;
  const size_t at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) yaml.replace(at, from.size(), to);
  return Parse(yaml);
}

JobSpec TemplatesWith(std::string_view from, std::string_view to) {
  std::string yaml = kTemplatesSpec;
  const size_t at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) yaml.replace(at, from.size(), to);
  return Parse(yaml);
}

TEST(ValidateJobSpecTest, AttributeRules) {
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: zip,", "{name: age,")),
              StatusIs(kInvalid, "attribute 'age' is listed twice"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: zip, role: other}", "{role: other}")),
              StatusIs(kInvalid, "attribute 7 has an empty name"));
  EXPECT_THAT(
      ValidateJobSpec(LkcWith("{name: zip, role: other}", "{name: zip}")),
      StatusIs(kInvalid, "attribute 'zip' has no role (role: qid|class|sensitive|other|id)"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: zip, role: other}", "{name: zip, role: class}")),
              StatusIs(kInvalid, "attributes 'income', 'zip' all have role class"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: zip, role: other}",
                                      "{name: zip, role: other, taxonomy: zip.csv}")),
              StatusIs(kInvalid,
                       "attribute 'zip' has a taxonomy but role other; taxonomies apply to QID "
                       "attributes only"));
  // A sensitive attribute's taxonomy serves t-closeness's hierarchical distance only.
  EXPECT_THAT(
      ParseJobSpecYaml(absl::StrReplaceAll(kLkcSpec, {{"{name: occupation, role: sensitive}",
                                                       "{name: occupation, role: sensitive, "
                                                       "taxonomy: occ.csv}"}}),
                       "spec.yaml"),
      StatusIs(kInvalid,
               "attribute 'occupation' has a taxonomy but role sensitive; a sensitive "
               "attribute's taxonomy is used only by privacy.model tcloseness with "
               "distance: hierarchical"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("range: [0, 100]", "range: [100, 0]")),
              StatusIs(kInvalid,
                       "attribute 'age': range must be empty or [low, high] with low < "
                       "high, got [100, 0]"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("range: [0, 100]", "range: [0, 50, 100]")),
              StatusIs(kInvalid, "got [0, 50, 100]"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("    type: continuous\n", "")),
              StatusIs(kInvalid, "attribute 'age' has a range but is not continuous"));
}

TEST(ValidateJobSpecTest, NeedsQidAndClass) {
  JobSpec spec = Parse("attributes: [{name: a, role: class}]\n");
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "the job has no QID attribute"));
  spec = Parse("attributes: [{name: a, role: qid}]\nprivacy: {L: 1, K: 2}\n");
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "score infogain needs exactly one attribute with role class"));
  spec.set_score(v1::SCORE_FUNCTION_DISCERNIBILITY);
  EXPECT_OK(ValidateJobSpec(spec));
  spec.set_score(v1::SCORE_FUNCTION_GAINRATIO);
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "score gainratio needs exactly one"));
  spec.set_score(static_cast<v1::ScoreFunction>(42));  // unknown value from the wire
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "score 42 needs exactly one"));
}

TEST(ValidateJobSpecTest, ParticipationRules) {
  JobSpec spec = Parse(
      "attributes: [{name: a, role: qid, party: x}, {name: c, role: class}]\n"
      "privacy: {L: 1, K: 2}\npartitioning: vertical\nparticipation: game_theoretic\n"
      "epsilon: 0.01\n");
  EXPECT_EQ(spec.participation(), v1::PARTICIPATION_GAME_THEORETIC);
  EXPECT_DOUBLE_EQ(spec.epsilon(), 0.01);
  EXPECT_OK(ValidateJobSpec(spec));
  spec.set_epsilon(-1);
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "epsilon must be a non-negative number"));
  spec.set_epsilon(0);
  spec.set_partitioning(v1::PARTITIONING_HORIZONTAL);
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "participation: game_theoretic applies to vertical jobs only"));
  spec.set_participation(v1::PARTICIPATION_HONEST);
  EXPECT_OK(ValidateJobSpec(spec));
  spec.set_epsilon(0.5);
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "epsilon is used only with participation: game_theoretic"));
}

TEST(ValidateJobSpecTest, ReleaseAllowDataHoldingRecipient) {
  JobSpec spec = Parse(
      "attributes: [{name: a, role: qid, party: x}, {name: c, role: class}]\n"
      "privacy: {L: 1, K: 2}\npartitioning: vertical\n"
      "release: {allow_data_holding_recipient: true}\n");
  EXPECT_TRUE(spec.release().allow_data_holding_recipient());
  EXPECT_OK(ValidateJobSpec(spec));
  EXPECT_FALSE(Parse("attributes: [{name: a, role: qid, party: x}, {name: c, role: class}]\n"
                     "privacy: {L: 1, K: 2}\npartitioning: vertical\n")
                   .release()
                   .allow_data_holding_recipient());
  spec.set_partitioning(v1::PARTITIONING_HORIZONTAL);
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "allow_data_holding_recipient applies to vertical jobs only"));
  // The job digest the parties check covers the key.
  JobSpec off = spec;
  off.mutable_release()->set_allow_data_holding_recipient(false);
  EXPECT_NE(CanonicalJobBytes(spec, {}), CanonicalJobBytes(off, {}));
}

TEST(ValidateJobSpecTest, NumericSplitRules) {
  JobSpec spec =
      Parse("attributes: [{name: a, role: qid}, {name: c, role: class}]\nprivacy: {L: 1, K: 2}\n");
  EXPECT_OK(ValidateJobSpec(spec));
  spec.set_numeric_split(v1::NUMERIC_SPLIT_EXACT);
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "numeric_cells and min_split_bin apply to numeric_split: binned"));
  spec.set_numeric_cells(0);
  EXPECT_OK(ValidateJobSpec(spec));
  spec.set_numeric_split(v1::NUMERIC_SPLIT_UNSPECIFIED);  // a message that never saw the parser
  spec.set_numeric_cells((1 << 20) + 1);
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "numeric_cells = 1048577 exceeds"));
  spec.set_numeric_cells(0);
  spec.set_numeric_split(static_cast<v1::NumericSplit>(7));
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "numeric_split has the unknown value 7"));
}

// Parties compare digests: a job whose numeric split search differs is a different job, while
// spelling out the defaults changes nothing.
TEST(JobDigestTest, CoversTheNumericSplitSearch) {
  const JobSpec spec = Parse(kLkcSpec);
  const std::string base = CanonicalJobBytes(spec, {});
  JobSpec exact = spec;
  exact.set_numeric_split(v1::NUMERIC_SPLIT_EXACT);
  exact.set_numeric_cells(0);
  EXPECT_NE(CanonicalJobBytes(exact, {}), base);
  JobSpec cells = spec;
  cells.set_numeric_cells(64);
  EXPECT_NE(CanonicalJobBytes(cells, {}), base);
  JobSpec bin = spec;
  bin.set_min_split_bin(40);
  EXPECT_NE(CanonicalJobBytes(bin, {}), base);
  JobSpec implicit = spec;
  implicit.clear_numeric_split();
  implicit.clear_numeric_cells();
  EXPECT_EQ(CanonicalJobBytes(implicit, {}), base);
}

TEST(ValidateJobSpecTest, LkcRules) {
  EXPECT_THAT(ValidateJobSpec(LkcWith("L: 2", "L: 5")),
              StatusIs(kInvalid, "privacy.L = 5 exceeds the number of QID attributes (3)"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("L: 2", "L: 0")),
              StatusIs(kInvalid, "privacy.L = 0 must be >= 1"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("K: 20", "K: 0")),
              StatusIs(kInvalid, "privacy.K = 0 must be >= 1"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("C: 0.2", "C: 1.5")),
              StatusIs(kInvalid, "privacy.C = 1.5 must be in (0, 1]"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("  C: 0.2\n", "")),
              StatusIs(kInvalid, "privacy.C = 0 must be in (0, 1]"));
  EXPECT_OK(ValidateJobSpec(LkcWith("C: 0.2", "C: 1")));
  EXPECT_THAT(
      ValidateJobSpec(LkcWith("  sensitive_values: [Prof-specialty, Exec-managerial]\n", "")),
      StatusIs(kInvalid, "privacy.C = 0.2 has no effect without privacy.sensitive_values"));
  EXPECT_OK(ValidateJobSpec(
      LkcWith("  C: 0.2\n  sensitive_values: [Prof-specialty, Exec-managerial]\n", "")));
  EXPECT_THAT(
      ValidateJobSpec(
          LkcWith("{name: occupation, role: sensitive}", "{name: occupation, role: other}")),
      StatusIs(kInvalid, "privacy.sensitive_values given but no attribute has role sensitive"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: zip, role: other}", "{name: zip, role: sensitive}")),
              StatusIs(kInvalid,
                       "privacy.sensitive_attribute is empty but there are 2 sensitive "
                       "attributes ('occupation', 'zip'); name one"));
  EXPECT_THAT(
      ValidateJobSpec(LkcWith("  model: lkc\n", "  model: lkc\n  sensitive_attribute: id\n")),
      StatusIs(kInvalid,
               "privacy.sensitive_attribute 'id' is not an attribute with role "
               "sensitive"));
  EXPECT_OK(ValidateJobSpec(
      LkcWith("  model: lkc\n", "  model: lkc\n  sensitive_attribute: occupation\n")));
  EXPECT_THAT(ValidateJobSpec(
                  LkcWith("  model: lkc\n", "  model: lkc\n  templates: [{qid: [age], k: 2}]\n")),
              StatusIs(kInvalid,
                       "privacy.templates and privacy.confidence are only used with "
                       "privacy.model: templates"));
}

TEST(ValidateJobSpecTest, SensitiveAttributeChosenAmongSeveral) {
  JobSpec spec = LkcWith("{name: zip, role: other}", "{name: zip, role: sensitive}");
  spec.mutable_privacy()->set_sensitive_attribute("zip");
  EXPECT_OK(ValidateJobSpec(spec));
}

TEST(ValidateJobSpecTest, TemplateRules) {
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("[age, education], k: 10", "[age, zip], k: 10")),
              StatusIs(kInvalid, "template 1 names unknown QID attribute 'zip'"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("qid: [sex]", "qid: [salary]")),
              StatusIs(kInvalid,
                       "template 2 names attribute 'salary', which is not a QID "
                       "attribute"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("qid: [sex]", "qid: [sex, sex]")),
              StatusIs(kInvalid, "template 2 lists 'sex' twice"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("qid: [sex]", "qid: []")),
              StatusIs(kInvalid, "template 2 has no QID attributes"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("k: 5", "k: 0")),
              StatusIs(kInvalid, "template 2: k = 0 must be >= 1"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("max: 0.6", "max: 1.2")),
              StatusIs(kInvalid, "confidence template 1: max = 1.2 must be in (0, 1]"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("attribute: salary", "attribute: class")),
              StatusIs(kInvalid,
                       "confidence template 2: attribute 'class' is not an attribute "
                       "with role sensitive"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("qid: [education]", "qid: [zip]")),
              StatusIs(kInvalid, "confidence template 2 names unknown QID attribute 'zip'"));
  EXPECT_THAT(ValidateJobSpec(TemplatesWith("sensitive_values: [\">50K\"], max: 0.6",
                                            "sensitive_values: [], max: 0.6")),
              StatusIs(kInvalid, "confidence template 1 has no sensitive_values"));
  EXPECT_THAT(ValidateJobSpec(
                  TemplatesWith("{name: salary, role: sensitive}", "{name: salary, role: other}")),
              StatusIs(kInvalid,
                       "confidence template 1: sensitive_values given but no attribute "
                       "has role sensitive"));
  EXPECT_THAT(
      ValidateJobSpec(TemplatesWith("  model: templates\n", "  model: templates\n  K: 5\n")),
      StatusIs(kInvalid, "only used with privacy.model: lkc"));
}

TEST(ValidateJobSpecTest, TemplatesModelNeedsATemplate) {
  JobSpec spec = Parse(
      "attributes: [{name: a, role: qid}, {name: c, role: class}]\nprivacy: {model: templates}\n");
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid,
                                              "privacy.model templates needs at least one entry in "
                                              "privacy.templates or privacy.confidence"));
  spec.mutable_privacy()->add_templates()->add_qid("a");
  spec.mutable_privacy()->mutable_templates(0)->set_k(3);
  EXPECT_OK(ValidateJobSpec(spec));
}

// The YAML examples of docs/job-spec.md parse and validate.
TEST(ValidateJobSpecTest, DocumentedExamplesAreValid) {
  const std::string doc_path = ::fedanon::testing::TestDataDir() + "/../../docs/job-spec.md";
  ASSERT_OK_AND_ASSIGN(const std::string doc, base::ReadFile(doc_path));
  size_t examples = 0;
  for (size_t at = doc.find("```yaml\n"); at != std::string::npos;
       at = doc.find("```yaml\n", at + 1)) {
    const size_t begin = at + 8;
    const size_t end = doc.find("```", begin);
    ASSERT_NE(end, std::string::npos);
    SCOPED_TRACE(doc.substr(begin, 40));
    ASSERT_OK_AND_ASSIGN(JobSpec spec,
                         ParseJobSpecYaml(doc.substr(begin, end - begin), "job-spec.md"));
    EXPECT_OK(ValidateJobSpec(spec));
    ++examples;
  }
  EXPECT_EQ(examples, 3u);
}

// ---------------------------------------------------------------------------------------------
// JobSpecToYaml

void ExpectRoundTrip(const JobSpec& spec) {
  const std::string yaml = JobSpecToYaml(spec);
  ASSERT_OK_AND_ASSIGN(JobSpec back, ParseJobSpecYaml(yaml, "roundtrip.yaml"));
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(spec, back)) << diff << "\nYAML:\n" << yaml;
}

TEST(JobSpecToYamlTest, RoundTripsExamples) {
  ExpectRoundTrip(Parse(kLkcSpec));
  ExpectRoundTrip(Parse(kTemplatesSpec));
  ExpectRoundTrip(Parse("attributes: [{name: a, role: qid}]\n"));
  ExpectRoundTrip(Parse("attributes: [{name: a, role: qid}]\nnumeric_split: exact\n"));
  ExpectRoundTrip(Parse("numeric_cells: 7\nmin_split_bin: 25\n"));
}

TEST(JobSpecToYamlTest, RoundTripsAwkwardStrings) {
  JobSpec spec = Parse(kLkcSpec);
  spec.set_name("job: \"quoted\" # not a comment\nsecond line");
  spec.set_missing_token("");
  spec.set_suppression_token("~");
  spec.mutable_privacy()->clear_sensitive_values();
  for (const char* value : {">50K", "null", "true", "- dash", " padded ", "[x]", "{y}", "*", "&a",
                            "!tag", "%", "@", "`", "'", "123", "1e5", "üñí"}) {
    spec.mutable_privacy()->add_sensitive_values(value);
  }
  spec.mutable_attributes(0)->clear_range();
  spec.mutable_attributes(0)->add_range(0.1);
  spec.mutable_attributes(0)->add_range(1e300);
  spec.mutable_privacy()->set_c(1.0 / 3.0);
  ExpectRoundTrip(spec);
}

TEST(JobSpecToYamlTest, WritesReadableYaml) {
  const std::string yaml = JobSpecToYaml(Parse(kTemplatesSpec));
  EXPECT_THAT(yaml, HasSubstr("score: gainratio"));
  EXPECT_THAT(yaml, HasSubstr("model: templates"));
  EXPECT_THAT(yaml, HasSubstr("{name: age, role: qid, type: continuous}"));
  EXPECT_THAT(yaml, HasSubstr("qid: [age, education]"));
  EXPECT_THAT(yaml, HasSubstr("missing_token: \"?\""));
}

// Numbers in specs: decimal only (no hex), finite, and inside what the field allows.
TEST(JobSpecLoaderTest, NumbersAreDecimalFiniteAndInRange) {
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  K: 0x10\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.K: expected a non-negative integer, got '0x10'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  C: 0x1p-1\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.C: expected a number, got '0x1p-1'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  C: 1e309\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.C: expected a number, got '1e309'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  C: nan\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.C: expected a number, got 'nan'"));
  EXPECT_THAT(ParseJobSpecYaml("privacy:\n  K: 1e308\n", "spec.yaml"),
              StatusIs(kInvalid, "privacy.K: expected a non-negative integer, got '1e308'"));
  // 1e308 is a finite double: accepted by the parser, refused where it makes no sense.
  EXPECT_THAT(ValidateJobSpec(LkcWith("C: 0.2", "C: 1e308")), StatusIs(kInvalid, "privacy.C"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("range: [0, 100]", "range: [-1e308, 1e308]")),
              StatusIs(kInvalid, "attribute 'age': range [-1e+308, 1e+308] is too wide"));
  EXPECT_THAT(ValidateJobSpec(LkcWith("range: [0, 100]", "range: [0, 100]\n    precision: -1")),
              StatusIs(kInvalid, "attribute 'age': precision must be positive, got -1"));
  EXPECT_THAT(ValidateJobSpec(
                  LkcWith("{name: zip, role: other}", "{name: zip, role: other, precision: 1}")),
              StatusIs(kInvalid, "attribute 'zip' has a precision but is not continuous"));
}

TEST(ValidateJobSpecTest, DuplicateDeclaredValueIsAnError) {
  EXPECT_THAT(ValidateJobSpec(LkcWith("{name: income, role: class}",
                                      "{name: income, role: class, values: [a, b, a]}")),
              StatusIs(kInvalid, "attribute 'income': value 'a' is listed twice in values"));
}

// Long lists cost linear time, not quadratic: 100,000 values in each of four lists (a 3.5 MB spec)
// parse and validate in seconds of CPU time, where the quadratic duplicate check of the sensitive
// values (TrackedSensitiveValues) took minutes. CPU time, not wall time: the test machine may be
// shared.
TEST(ValidateJobSpecTest, LongValueListsAreLinear) {
  std::string values;
  for (int i = 0; i < 100'000; ++i) absl::StrAppend(&values, i == 0 ? "" : ", ", "v", i);
  const std::string spec = absl::StrCat(
      "name: many\nattributes:\n  - {name: a, role: qid, values: [", values,
      "]}\n  - {name: c, role: class, values: [", values,
      "]}\n  - {name: s, role: sensitive, values: [", values,
      "]}\nprivacy: {model: lkc, L: 1, K: 2, C: 0.5, sensitive_values: [", values, "]}\n");
  const std::clock_t start = std::clock();
  ASSERT_OK_AND_ASSIGN(const JobSpec parsed, ParseJobSpecYaml(spec, "many.yaml"));
  EXPECT_OK(ValidateJobSpec(parsed));
  EXPECT_THAT(table::TrackedSensitiveValues(parsed),
              StatusIs(kInvalid, "the privacy model names 100000 sensitive values; at most 64"));
  const double cpu_seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_seconds, 30) << "quadratic behaviour?";
}

TEST(JobSpecLoaderTest, LoadJobSpecIsBounded) {
  EXPECT_THAT(LoadJobSpec("/dev/zero"),
              StatusIs(kInvalid,
                       "'/dev/zero' is larger than the limit of 16777216 bytes for a "
                       "job spec"));
}

// ldiversity and tcloseness (docs/job-spec.md): the keys, their defaults, and every mistake named
// where the YAML makes it.
constexpr char kDiversityAttributes[] = R"(name: d
attributes:
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: cls, role: class}
  - {name: disease, role: sensitive, values: [flu, hiv, cold]}
)";

TEST(DistributionModelSpecTest, ParsesBothModels) {
  JobSpec spec = Parse(std::string(kDiversityAttributes) +
                       "privacy: {model: ldiversity, variant: recursive, diversity: 2, "
                       "recursive_c: 3, K: 5}\n");
  EXPECT_EQ(spec.privacy().model(), v1::PRIVACY_MODEL_LDIVERSITY);
  EXPECT_EQ(spec.privacy().variant(), v1::DIVERSITY_VARIANT_RECURSIVE);
  EXPECT_EQ(spec.privacy().diversity(), 2);
  EXPECT_EQ(spec.privacy().recursive_c(), 3);
  EXPECT_EQ(spec.privacy().k(), 5u);
  EXPECT_OK(ValidateJobSpec(spec));
  spec = Parse(std::string(kDiversityAttributes) +
               "privacy: {model: tcloseness, t: 0.15, distance: ordered}\n");
  EXPECT_EQ(spec.privacy().model(), v1::PRIVACY_MODEL_TCLOSENESS);
  EXPECT_EQ(spec.privacy().distance(), v1::GROUND_DISTANCE_ORDERED);
  EXPECT_DOUBLE_EQ(spec.privacy().t(), 0.15);
  EXPECT_OK(ValidateJobSpec(spec));
  // The hierarchical distance takes the sensitive attribute's taxonomy.
  spec = Parse(
      "attributes:\n  - {name: job, role: qid}\n  - {name: disease, role: sensitive, values: "
      "[flu, hiv], taxonomy: disease.csv}\nprivacy: {model: tcloseness, t: 0.2, distance: "
      "hierarchical}\nscore: discernibility\n");
  EXPECT_OK(ValidateJobSpec(spec));
  // Round trip through YAML.
  EXPECT_OK(ParseJobSpecYaml(JobSpecToYaml(spec), "again.yaml"));
}

TEST(DistributionModelSpecTest, MistakesAreNamedAtTheirLineAndColumn) {
  auto error = [](std::string_view privacy) {
    return ParseJobSpecYaml(std::string(kDiversityAttributes) + std::string(privacy), "spec.yaml")
        .status();
  };
  // `privacy:` is line 6; its keys sit at the column written.
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 1\n"),
              StatusIs(kInvalid,
                       "spec.yaml:8:14: privacy.diversity = 1 must be a whole number "
                       "of at least 2"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 2.5\n"),
              StatusIs(kInvalid, "spec.yaml:8:14: privacy.diversity = 2.5 must be a whole"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  variant: entropy\n  diversity: 1\n"),
              StatusIs(kInvalid, "spec.yaml:9:14: privacy.diversity = 1 must be a number above 1"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 4\n"),
              StatusIs(kInvalid,
                       "spec.yaml:8:14: privacy.diversity = 4 exceeds the 3 declared "
                       "values of sensitive attribute 'disease'"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  variant: recursive\n  diversity: 2\n"),
              StatusIs(kInvalid, "spec.yaml:7:3: privacy.recursive_c = 0 must be positive"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 2\n  recursive_c: 3\n"),
              StatusIs(kInvalid,
                       "spec.yaml:9:16: privacy.recursive_c is used only with variant: "
                       "recursive"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 2\n  L: 2\n"),
              StatusIs(kInvalid,
                       "spec.yaml:9:6: privacy.L is not used with privacy.model: "
                       "ldiversity"));
  EXPECT_THAT(error("privacy:\n  model: ldiversity\n  diversity: 2\n  t: 0.3\n"),
              StatusIs(kInvalid,
                       "spec.yaml:9:6: privacy.t and distance are used only with "
                       "privacy.model: tcloseness"));
  EXPECT_THAT(error("privacy:\n  model: tcloseness\n  t: 1.5\n"),
              StatusIs(kInvalid, "spec.yaml:8:6: privacy.t = 1.5 must be in [0, 1]"));
  EXPECT_THAT(error("privacy:\n  model: tcloseness\n  t: 0.2\n  diversity: 2\n"),
              StatusIs(kInvalid,
                       "spec.yaml:9:14: privacy.variant, diversity and recursive_c are "
                       "used only with privacy.model: ldiversity"));
  EXPECT_THAT(error("privacy:\n  model: lkc\n  L: 1\n  K: 2\n  t: 0.2\n"),
              StatusIs(kInvalid,
                       "spec.yaml:10:6: privacy.t is used only with privacy.model: "
                       "ldiversity or tcloseness"));
  // No taxonomy for the hierarchical distance: named at the sensitive attribute (line 5).
  EXPECT_THAT(error("privacy: {model: tcloseness, t: 0.2, distance: hierarchical}\n"),
              StatusIs(kInvalid,
                       "spec.yaml:5:5: distance: hierarchical needs a taxonomy of "
                       "sensitive attribute 'disease'"));
  // A horizontal t-closeness job needs K >= 2.
  EXPECT_THAT(error("privacy: {model: tcloseness, t: 0.2, K: 1}\npartitioning: horizontal\n"),
              StatusIs(kInvalid,
                       "spec.yaml:6:41: privacy.model tcloseness in a horizontal job "
                       "needs K >= 2"));
  EXPECT_OK(error("privacy: {model: tcloseness, t: 0.2, K: 2}\npartitioning: horizontal\n"));
  EXPECT_THAT(error("privacy: {model: ldiversity, diversity: 2}\nrecoding: local\n"),
              StatusIs(kInvalid, "runs with global recoding only"));
}

TEST(DistributionModelSpecTest, TheSensitiveAttributeAndItsValues) {
  auto error = [](std::string_view yaml) { return ParseJobSpecYaml(yaml, "spec.yaml").status(); };
  // No declared values: named at the attribute.
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n  - {name: s, role: sensitive}\n"
                    "privacy: {model: ldiversity, diversity: 2}\n"),
              StatusIs(kInvalid,
                       "spec.yaml:3:5: privacy.model ldiversity needs the values of "
                       "sensitive attribute 's' listed"));
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n"
                    "privacy: {model: ldiversity, diversity: 2}\n"),
              StatusIs(kInvalid, "needs an attribute with role sensitive"));
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n  - {name: s, role: sensitive, "
                    "values: [x, y]}\n  - {name: u, role: sensitive, values: [x, y]}\n"
                    "privacy: {model: ldiversity, diversity: 2}\n"),
              StatusIs(kInvalid, "there are 2 sensitive attributes; name one"));
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n  - {name: s, role: sensitive, "
                    "values: [x, y]}\nprivacy: {model: ldiversity, diversity: 2, "
                    "sensitive_attribute: a}\n"),
              StatusIs(kInvalid,
                       "privacy.sensitive_attribute 'a' is not an attribute with role "
                       "sensitive"));
  // Ordered distance over numbers: listed ascending, named at `values`.
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n  - {name: pay, role: sensitive, "
                    "values: [10, 30, 20]}\nprivacy: {model: tcloseness, t: 0.3, distance: "
                    "ordered}\n"),
              StatusIs(kInvalid,
                       "spec.yaml:3:42: distance: ordered ranks the values of "
                       "sensitive attribute 'pay' in the order listed; these are "
                       "numbers, so list them ascending ('30' comes before '20')"));
  EXPECT_OK(
      error("attributes:\n  - {name: a, role: qid}\n  - {name: pay, role: sensitive, "
            "values: [10, 20, 30]}\nprivacy: {model: tcloseness, t: 0.3, distance: "
            "ordered}\n"));
  // A sensitive attribute's taxonomy serves the hierarchical distance only.
  EXPECT_THAT(error("attributes:\n  - {name: a, role: qid}\n  - {name: s, role: sensitive, "
                    "values: [x, y], taxonomy: s.csv}\nprivacy: {model: ldiversity, diversity: "
                    "2}\n"),
              StatusIs(kInvalid,
                       "spec.yaml:3:58: attribute 's' has a taxonomy but role "
                       "sensitive; a sensitive attribute's taxonomy is used only by "
                       "privacy.model tcloseness with distance: hierarchical"));
}

// A message that never saw the parser gets the same checks, by name.
TEST(DistributionModelSpecTest, ValidateJobSpecChecksSubmittedMessages) {
  JobSpec spec =
      Parse(std::string(kDiversityAttributes) + "privacy: {model: ldiversity, diversity: 2}\n");
  EXPECT_OK(ValidateJobSpec(spec));
  spec.mutable_privacy()->set_diversity(7);
  EXPECT_THAT(ValidateJobSpec(spec), StatusIs(kInvalid, "privacy.diversity = 7 exceeds the 3"));
  spec.mutable_privacy()->set_diversity(2);
  spec.mutable_privacy()->add_confidence()->add_qid("job");
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(kInvalid, "privacy.templates and privacy.confidence are not used"));
}

// Parties agree on the model through the job digest: every key of the section changes it, and a
// spelled-out default does not.
TEST(JobDigestTest, CoversTheDistributionModels) {
  const JobSpec l =
      Parse(std::string(kDiversityAttributes) + "privacy: {model: ldiversity, diversity: 2}\n");
  const std::string base = CanonicalJobBytes(l, {});
  auto changed = [&](auto edit) {
    JobSpec s = l;
    edit(s.mutable_privacy());
    return CanonicalJobBytes(s, {});
  };
  EXPECT_NE(changed([](v1::Privacy* p) { p->set_diversity(3); }), base);
  EXPECT_NE(changed([](v1::Privacy* p) { p->set_variant(v1::DIVERSITY_VARIANT_ENTROPY); }), base);
  EXPECT_NE(changed([](v1::Privacy* p) { p->set_k(9); }), base);
  EXPECT_EQ(changed([](v1::Privacy* p) { p->set_variant(v1::DIVERSITY_VARIANT_DISTINCT); }), base);
  const JobSpec t =
      Parse(std::string(kDiversityAttributes) + "privacy: {model: tcloseness, t: 0.2}\n");
  const std::string tbase = CanonicalJobBytes(t, {});
  JobSpec other_t = t;
  other_t.mutable_privacy()->set_t(0.25);
  EXPECT_NE(CanonicalJobBytes(other_t, {}), tbase);
  JobSpec ordered = t;
  ordered.mutable_privacy()->set_distance(v1::GROUND_DISTANCE_ORDERED);
  EXPECT_NE(CanonicalJobBytes(ordered, {}), tbase);
  JobSpec equal = t;
  equal.mutable_privacy()->set_distance(v1::GROUND_DISTANCE_EQUAL);
  EXPECT_EQ(CanonicalJobBytes(equal, {}), tbase);
  // The sensitive attribute's taxonomy text is covered, like a QID's.
  EXPECT_NE(CanonicalJobBytes(t, {{"disease", "flu;*\nhiv;*\ncold;*\n"}}),
            CanonicalJobBytes(t, {{"disease", "flu;a;*\nhiv;a;*\ncold;*\n"}}));
}

}  // namespace
}  // namespace fedanon::spec
