// The hierarchy builders (common/hierarchies): each kind's rows on small definitions worked by
// hand, values it cannot cover refused by file:line and value, definitions that make no
// hierarchy refused by parameter, and every text read back by the engine's taxonomy parser.
#include "common/hierarchies/hierarchy_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>

#include "common/spec/job_spec_loader.h"
#include "common/table/taxonomy.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::hierarchies {
namespace {

using fedanon::v1::HierarchyDefinition;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::StatusIs;

// The line of `text` whose first label is `leaf`.
std::string LineOf(const std::string& text, const std::string& leaf) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    if (line.substr(0, line.find(';')) == leaf) return line;
    pos = end + 1;
  }
  return "";
}

// A list of values read from `file`, one per line; kept alive for the whole test program.
const ValueList* Values(const std::vector<std::string>& values, const std::string& file = "v.txt") {
  static std::deque<ValueList> lists;
  ValueList& list = lists.emplace_back();
  for (size_t i = 0; i < values.size(); ++i) {
    list.values.emplace_back(values[i], file + ":" + std::to_string(i + 1));
  }
  return &list;
}

HierarchyDefinition Interval(double min, double max, double width, std::vector<uint32_t> fanout,
                             double step = 0) {
  HierarchyDefinition d;
  d.set_attribute("age");
  d.mutable_interval()->set_min(min);
  d.mutable_interval()->set_max(max);
  d.mutable_interval()->set_width(width);
  for (uint32_t f : fanout) d.mutable_interval()->add_fanout(f);
  d.mutable_interval()->set_step(step);
  return d;
}

// [0, 20) in intervals of 5, pairs of them at level 2; leaves 0, 1, ..., 19.
TEST(IntervalHierarchyTest, GridLeaves) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       BuildHierarchyText(Interval(0, 20, 5, {2}, 1), nullptr));
  EXPECT_EQ(LineOf(text, "0"), "0;[0-5);[0-10);*");
  EXPECT_EQ(LineOf(text, "7"), "7;[5-10);[0-10);*");
  EXPECT_EQ(LineOf(text, "19"), "19;[15-20);[10-20);*");
  EXPECT_EQ(ShapeOf(text).leaves, 20u);
  EXPECT_EQ(ShapeOf(text).levels, 3u);
  ASSERT_OK_AND_ASSIGN(const table::Taxonomy t, table::Taxonomy::ParseArx(text, "built", "age"));
  EXPECT_EQ(t.label(t.parent(*t.FindLeaf("7"))), "[5-10)");
}

// The last interval ends at max; a value on a boundary of decimal widths lands above it.
TEST(IntervalHierarchyTest, ClippedLastIntervalAndDecimalBoundaries) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       BuildHierarchyText(Interval(0, 18, 5, {}), Values({"17", "3", "15"})));
  EXPECT_EQ(text, "3;[0-5);*\n15;[15-18);*\n17;[15-18);*\n");  // sorted by value
  ASSERT_OK_AND_ASSIGN(const std::string decimals,
                       BuildHierarchyText(Interval(0, 1, 0.1, {}), Values({"0.3", "0.7"})));
  EXPECT_EQ(LineOf(decimals, "0.3"), "0.3;[0.3-0.4);*");
  EXPECT_EQ(LineOf(decimals, "0.7"), "0.7;[0.7-0.8);*");
}

TEST(IntervalHierarchyTest, RefusesValuesItCannotCover) {
  EXPECT_THAT(BuildHierarchyText(Interval(0, 20, 5, {2}), Values({"4", "25", "x"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "v.txt:2: value '25' lies outside every interval [0, 20)"));
  EXPECT_THAT(BuildHierarchyText(Interval(0, 20, 5, {2}), Values({"4", "x"})),
              StatusIs(absl::StatusCode::kInvalidArgument, "v.txt:2: 'x' is not a number"));
  EXPECT_THAT(BuildHierarchyText(Interval(0, 20, 5, {2}, 1), Values({"4", "7.5"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "v.txt:2: value '7.5' is not one of the leaves 0 + i * 1"));
  EXPECT_THAT(BuildHierarchyText(Interval(0, 20, 5, {2}, 1), Values({"04"})),
              StatusIs(absl::StatusCode::kInvalidArgument, "nearest: '4'"));
  // With a grid, listed values that are on it are accepted and the leaves are the whole grid.
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       BuildHierarchyText(Interval(0, 20, 5, {2}, 1), Values({"4", "19"})));
  EXPECT_EQ(ShapeOf(text).leaves, 20u);
}

TEST(IntervalHierarchyTest, RefusesDefinitionsThatMakeNoHierarchy) {
  EXPECT_THAT(ValidateHierarchyDefinition(Interval(5, 5, 1, {})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "hierarchy for 'age': interval needs min < max"));
  EXPECT_THAT(ValidateHierarchyDefinition(Interval(0, 5, 0, {})),
              StatusIs(absl::StatusCode::kInvalidArgument, "width > 0"));
  EXPECT_THAT(ValidateHierarchyDefinition(Interval(0, 5, 1, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument, "at least 2"));
  EXPECT_THAT(ValidateHierarchyDefinition(Interval(0, 1e9, 1, {})),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than 1000000 intervals"));
  EXPECT_THAT(BuildHierarchyText(Interval(0, 5, 1, {}), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, "no leaves"));
}

HierarchyDefinition Masking(uint32_t length, std::vector<uint32_t> masked = {},
                            std::string alphabet = "") {
  HierarchyDefinition d;
  d.set_attribute("zip");
  d.mutable_masking()->set_length(length);
  for (uint32_t m : masked) d.mutable_masking()->add_masked(m);
  d.mutable_masking()->set_alphabet(alphabet);
  return d;
}

// ZIP 47677 -> 4767* -> 476** -> 47*** -> 4**** -> *****.
TEST(MaskingHierarchyTest, MasksFromTheRight) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       BuildHierarchyText(Masking(5), Values({"47677", "47602", "12345"})));
  EXPECT_EQ(text,
            "12345;1234*;123**;12***;1****;*****\n"
            "47602;4760*;476**;47***;4****;*****\n"
            "47677;4767*;476**;47***;4****;*****\n");
  ASSERT_OK_AND_ASSIGN(const std::string coarse,
                       BuildHierarchyText(Masking(5, {2, 4}), Values({"47677"})));
  EXPECT_EQ(coarse, "47677;476**;4****;*****\n");
  ASSERT_OK_AND_ASSIGN(const std::string all, BuildHierarchyText(Masking(3, {}, "01"), nullptr));
  EXPECT_EQ(ShapeOf(all).leaves, 8u);
  EXPECT_EQ(LineOf(all, "101"), "101;10*;1**;***");
  ASSERT_OK(table::Taxonomy::ParseArx(all, "built", "zip").status());
}

TEST(MaskingHierarchyTest, RefusesCodesOfTheWrongLength) {
  EXPECT_THAT(
      BuildHierarchyText(Masking(5), Values({"47677", "4767"}, "t.csv")),
      StatusIs(absl::StatusCode::kInvalidArgument, "t.csv:2: code '4767' has 4 characters, not 5"));
  EXPECT_THAT(BuildHierarchyText(Masking(5), Values({"476*7"})),
              StatusIs(absl::StatusCode::kInvalidArgument, "v.txt:1: code '476*7' contains '*'"));
  EXPECT_THAT(BuildHierarchyText(Masking(3, {}, "01"), Values({"012"})),
              StatusIs(absl::StatusCode::kInvalidArgument, "not in the alphabet"));
  EXPECT_THAT(ValidateHierarchyDefinition(Masking(5, {3, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument, "increasing"));
  EXPECT_THAT(ValidateHierarchyDefinition(Masking(7, {}, "0123456789")),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than 1000000 codes"));
}

HierarchyDefinition Dates(std::vector<fedanon::v1::DateLevel> levels, std::string from = "",
                          std::string to = "", std::string format = "") {
  HierarchyDefinition d;
  d.set_attribute("admitted");
  for (auto l : levels) d.mutable_date()->add_levels(l);
  d.mutable_date()->set_from(from);
  d.mutable_date()->set_to(to);
  d.mutable_date()->set_format(format);
  return d;
}

// Day -> month -> year -> decade, across a year's end; every day from..to is a leaf.
TEST(DateHierarchyTest, DayMonthYearDecade) {
  using fedanon::v1::DATE_LEVEL_DECADE;
  using fedanon::v1::DATE_LEVEL_MONTH;
  using fedanon::v1::DATE_LEVEL_YEAR;
  ASSERT_OK_AND_ASSIGN(
      const std::string text,
      BuildHierarchyText(
          Dates({DATE_LEVEL_MONTH, DATE_LEVEL_YEAR, DATE_LEVEL_DECADE}, "2019-12-30", "2020-01-02"),
          nullptr));
  EXPECT_EQ(text,
            "2019-12-30;2019-12;2019;2010-2019;*\n"
            "2019-12-31;2019-12;2019;2010-2019;*\n"
            "2020-01-01;2020-01;2020;2020-2029;*\n"
            "2020-01-02;2020-01;2020;2020-2029;*\n");
  // Another format; quarters and centuries; a leap day.
  ASSERT_OK_AND_ASSIGN(
      const std::string dotted,
      BuildHierarchyText(Dates({fedanon::v1::DATE_LEVEL_QUARTER, fedanon::v1::DATE_LEVEL_CENTURY},
                               "", "", "%d.%m.%Y"),
                         Values({"29.02.2020", "01.10.1999"})));
  EXPECT_EQ(dotted, "01.10.1999;1999-Q4;1900-1999;*\n29.02.2020;2020-Q1;2000-2099;*\n");
}

TEST(DateHierarchyTest, RefusesWhatIsNoDay) {
  using fedanon::v1::DATE_LEVEL_YEAR;
  EXPECT_THAT(BuildHierarchyText(Dates({DATE_LEVEL_YEAR}), Values({"2020-01-01", "2019-02-29"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "v.txt:2: '2019-02-29' is not a date written as '%Y-%m-%d'"));
  EXPECT_THAT(
      BuildHierarchyText(Dates({DATE_LEVEL_YEAR}, "2020-01-01", "2020-12-31"),
                         Values({"2021-01-01"})),
      StatusIs(absl::StatusCode::kInvalidArgument, "v.txt:1: date '2021-01-01' lies outside"));
  EXPECT_THAT(ValidateHierarchyDefinition(Dates({DATE_LEVEL_YEAR, fedanon::v1::DATE_LEVEL_MONTH})),
              StatusIs(absl::StatusCode::kInvalidArgument, "from fine to coarse"));
  EXPECT_THAT(ValidateHierarchyDefinition(Dates({DATE_LEVEL_YEAR}, "", "", "%Y-%m")),
              StatusIs(absl::StatusCode::kInvalidArgument, "must contain %Y, %m and %d"));
}

HierarchyDefinition Ordered(std::vector<std::string> order, std::vector<uint32_t> fanout) {
  HierarchyDefinition d;
  d.set_attribute("education");
  for (const auto& v : order) d.mutable_ordered()->add_order(v);
  for (uint32_t f : fanout) d.mutable_ordered()->add_fanout(f);
  return d;
}

// a..e in pairs, then pairs of pairs: e stays alone up to the root.
TEST(OrderedHierarchyTest, RunsOfFanout) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       BuildHierarchyText(Ordered({"a", "b", "c", "d", "e"}, {2, 2}), nullptr));
  EXPECT_EQ(text, "a;a..b;a..d;*\nb;a..b;a..d;*\nc;c..d;a..d;*\nd;c..d;a..d;*\ne;e;e;*\n");
  ASSERT_OK_AND_ASSIGN(const table::Taxonomy t,
                       table::Taxonomy::ParseArx(text, "built", "education"));
  EXPECT_EQ(t.parent(*t.FindLeaf("e")), t.root());
  EXPECT_THAT(BuildHierarchyText(Ordered({"a", "b"}, {2}), Values({"a", "z"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "v.txt:2: value 'z' is not in the ordered list of 'education'"));
  EXPECT_THAT(ValidateHierarchyDefinition(Ordered({"a", "a"}, {2})),
              StatusIs(absl::StatusCode::kInvalidArgument, "appears twice"));
  // A group's label equal to a value would turn that value into an inner node.
  EXPECT_THAT(BuildHierarchyText(Ordered({"a", "b", "a..b"}, {2}), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

TEST(HierarchyValuesTest, FilesAndColumns) {
  const std::string dir = testing::FreshDir("hierarchy_values");
  testing::WriteText(dir + "/v.txt", "47677\r\n\n  47602 \n47677\n");
  ASSERT_OK_AND_ASSIGN(const ValueList v, ReadValuesFile(dir + "/v.txt"));
  ASSERT_EQ(v.values.size(), 2u);
  EXPECT_EQ(v.values[1].first, "47602");
  EXPECT_EQ(v.values[1].second, dir + "/v.txt:3");
  testing::WriteText(dir + "/t.csv", "zip,age\n47677,30\n?,31\n4767,32\n47677,33\n");
  ASSERT_OK_AND_ASSIGN(const ValueList c, ReadColumnValues(dir + "/t.csv", "zip", "?"));
  ASSERT_EQ(c.values.size(), 2u);
  EXPECT_THAT(BuildHierarchyText(Masking(5), &c),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       dir + "/t.csv:4 (zip): code '4767' has 4 characters, not 5"));
  EXPECT_THAT(ReadColumnValues(dir + "/t.csv", "zop", "?"),
              StatusIs(absl::StatusCode::kInvalidArgument, "column 'zop' is not in"));
}

// From definitions only: the definition's own leaves or its values file; else refused.
TEST(HierarchyDefinitionTest, BuildFromDefinition) {
  EXPECT_THAT(BuildFromDefinition(Interval(0, 20, 5, {2})),
              StatusIs(absl::StatusCode::kFailedPrecondition, "can only be built from a table"));
  const std::string dir = testing::FreshDir("hierarchy_definition");
  testing::WriteText(dir + "/zips.txt", "47677\n47602\n");
  HierarchyDefinition d = Masking(5);
  d.set_values(dir + "/zips.txt");
  ASSERT_OK_AND_ASSIGN(const std::string text, BuildFromDefinition(d));
  EXPECT_THAT(text, StartsWith("47602;4760*"));
}

// The spec's `hierarchy` section: YAML into the definitions, values paths resolved against the
// spec's directory, structure checked by ValidateJobSpec.
TEST(HierarchySpecTest, SectionLoadsAndValidates) {
  const std::string dir = testing::FreshDir("hierarchy_spec");
  testing::WriteText(dir + "/job.yaml", R"(name: h
attributes:
  - {name: age, role: qid, taxonomy: age.csv}
  - {name: zip, role: qid, taxonomy: zip.csv}
  - {name: admitted, role: qid, taxonomy: admitted.csv}
  - {name: ok, role: class}
privacy: {model: lkc, L: 2, K: 2}
risk: {population_size: 1000000, threshold: 0.1}
hierarchy:
  - {attribute: age, interval: {min: 0, max: 100, width: 5, fanout: [2, 2], step: 1}}
  - {attribute: zip, masking: {length: 5}, values: zips.txt}
  - {attribute: admitted, date: {levels: [month, year], from: 2020-01-01, to: 2020-12-31}}
)");
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobSpec spec, spec::LoadJobSpec(dir + "/job.yaml"));
  ASSERT_OK(spec::ValidateJobSpec(spec));
  ASSERT_EQ(spec.hierarchy_size(), 3);
  EXPECT_EQ(spec.hierarchy(1).values(), dir + "/zips.txt");
  EXPECT_EQ(spec.hierarchy(2).date().levels(1), fedanon::v1::DATE_LEVEL_YEAR);
  EXPECT_EQ(spec.risk().population_size(), 1000000u);
  ASSERT_OK_AND_ASSIGN(const std::string age, BuildFromDefinition(spec.hierarchy(0)));
  EXPECT_EQ(LineOf(age, "37"), "37;[35-40);[30-40);[20-40);*");

  auto invalid = [&](const std::string& extra) {
    return spec::ValidateJobSpec(*spec::ParseJobSpecYaml(std::string(R"(name: h
attributes:
  - {name: age, role: qid, taxonomy: age.csv}
  - {name: sex, role: qid}
  - {name: ok, role: class}
privacy: {model: lkc, L: 2, K: 2}
)") + extra,
                                                         "job.yaml"));
  };
  EXPECT_THAT(invalid("hierarchy: [{attribute: ok, ordered: {order: [a], fanout: [2]}}]"),
              StatusIs(absl::StatusCode::kInvalidArgument, "'ok' is not a QID"));
  EXPECT_THAT(invalid("hierarchy: [{attribute: sex, ordered: {order: [a], fanout: [2]}}]"),
              StatusIs(absl::StatusCode::kInvalidArgument, "no taxonomy path"));
  EXPECT_THAT(invalid("hierarchy: [{attribute: age}]"),
              StatusIs(absl::StatusCode::kInvalidArgument, "give one of"));
  EXPECT_THAT(invalid("risk: {population_size: 10, sampling_fraction: 0.1}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "not both"));
  EXPECT_THAT(invalid("risk: {sampling_fraction: 2}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "(0, 1]"));
}

}  // namespace
}  // namespace fedanon::hierarchies
