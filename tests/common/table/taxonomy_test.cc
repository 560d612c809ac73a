#include "common/table/taxonomy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::table {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Optional;

// Labels of the children of `label`.
std::vector<std::string> Children(const Taxonomy& t, std::string_view label) {
  std::vector<std::string> out;
  for (Taxonomy::NodeId c : t.children(*t.Find(label))) out.push_back(t.label(c));
  return out;
}

size_t CountLeaves(const Taxonomy& t) {
  size_t leaves = 0;
  for (size_t n = 0; n < t.size(); ++n) leaves += t.is_leaf(static_cast<Taxonomy::NodeId>(n));
  return leaves;
}

constexpr char kEducation[] =
    "Bachelors;Undergraduate;Higher;*\n"
    "Masters;Graduate;Higher;*\n"
    "Doctorate;Graduate;Higher;*\n"
    "11th;Secondary;*\n"
    "Some-college;Undergraduate;Higher;*\n";

TEST(TaxonomyTest, ParsesTreeWithRootFirstAndChildrenInOrder) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx(kEducation, "edu.csv", "education"));
  EXPECT_EQ(t.size(), 10u);
  EXPECT_EQ(t.root(), 0);
  EXPECT_EQ(t.label(t.root()), "*");
  EXPECT_EQ(t.parent(t.root()), Taxonomy::kNoNode);
  EXPECT_THAT(Children(t, "*"), ElementsAre("Higher", "Secondary"));
  EXPECT_THAT(Children(t, "Higher"), ElementsAre("Undergraduate", "Graduate"));
  EXPECT_THAT(Children(t, "Undergraduate"), ElementsAre("Bachelors", "Some-college"));
  EXPECT_THAT(Children(t, "Graduate"), ElementsAre("Masters", "Doctorate"));
  EXPECT_EQ(t.depth(t.root()), 0);
  EXPECT_EQ(t.depth(*t.Find("Higher")), 1);
  EXPECT_EQ(t.depth(*t.Find("Masters")), 3);
  EXPECT_EQ(t.depth(*t.Find("11th")), 2);
  EXPECT_TRUE(t.is_leaf(*t.Find("11th")));
  EXPECT_FALSE(t.is_leaf(*t.Find("Graduate")));
  EXPECT_EQ(CountLeaves(t), 5u);
}

TEST(TaxonomyTest, FindAndFindLeaf) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx(kEducation, "edu.csv", "education"));
  EXPECT_TRUE(t.Find("Graduate").has_value());
  EXPECT_EQ(t.FindLeaf("Graduate"), std::nullopt);
  EXPECT_THAT(t.FindLeaf("Masters"), Optional(*t.Find("Masters")));
  EXPECT_EQ(t.Find("nope"), std::nullopt);
  EXPECT_EQ(t.FindLeaf("nope"), std::nullopt);
}

TEST(TaxonomyTest, ChildTowardAndGeneralizes) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx(kEducation, "edu.csv", "education"));
  const auto id = [&](std::string_view label) { return *t.Find(label); };
  EXPECT_EQ(t.ChildToward(t.root(), id("Masters")), id("Higher"));
  EXPECT_EQ(t.ChildToward(id("Higher"), id("Masters")), id("Graduate"));
  EXPECT_EQ(t.ChildToward(id("Graduate"), id("Masters")), id("Masters"));
  EXPECT_EQ(t.ChildToward(id("Masters"), id("Masters")), Taxonomy::kNoNode);
  EXPECT_EQ(t.ChildToward(id("Undergraduate"), id("Masters")), Taxonomy::kNoNode);
  EXPECT_EQ(t.ChildToward(id("Masters"), id("Higher")), Taxonomy::kNoNode);
  EXPECT_EQ(t.ChildToward(id("Secondary"), id("Masters")), Taxonomy::kNoNode);

  EXPECT_TRUE(t.Generalizes(t.root(), id("Masters")));
  EXPECT_TRUE(t.Generalizes(id("Higher"), id("Masters")));
  EXPECT_TRUE(t.Generalizes(id("Masters"), id("Masters")));
  EXPECT_FALSE(t.Generalizes(id("Masters"), id("Higher")));
  EXPECT_FALSE(t.Generalizes(id("Undergraduate"), id("Masters")));
  EXPECT_FALSE(t.Generalizes(id("Secondary"), id("Graduate")));
}

TEST(TaxonomyTest, CommaSeparatorWhitespaceCrlfBlankLinesAndNoFinalNewline) {
  ASSERT_OK_AND_ASSIGN(
      Taxonomy t, Taxonomy::ParseArx("\r\n  Male , Any\r\n\r\n   \nFemale,Any", "sex.csv", "sex"));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.label(0), "Any");
  EXPECT_THAT(Children(t, "Any"), ElementsAre("Male", "Female"));
}

TEST(TaxonomyTest, IgnoresByteOrderMark) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx("\xEF\xBB\xBF"
                                                      "a;*\nb;*\n",
                                                      "b.csv", "b"));
  EXPECT_TRUE(t.FindLeaf("a").has_value());
}

TEST(TaxonomyTest, SemicolonFileMayHaveCommasInLabels) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx("Married, present;Married;*\n"
                                                      "Divorced;Single;*\n",
                                                      "m.csv", "marital"));
  EXPECT_TRUE(t.FindLeaf("Married, present").has_value());
}

TEST(TaxonomyTest, ConsecutiveEqualLabelsCollapse) {
  ASSERT_OK_AND_ASSIGN(
      Taxonomy t,
      Taxonomy::ParseArx("Male;Male;Person;*\nFemale;Person;Person;*\n", "sex.csv", "sex"));
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.depth(*t.Find("Male")), 2);
  EXPECT_THAT(Children(t, "Person"), ElementsAre("Male", "Female"));
}

TEST(TaxonomyTest, RootOnlyFileIsASingleNode) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx("*\n", "r.csv", "r"));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_TRUE(t.is_leaf(t.root()));
}

TEST(TaxonomyTest, DuplicateLinesAreHarmless) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx("a;x;*\na;x;*\n", "d.csv", "d"));
  EXPECT_EQ(t.size(), 3u);
}

TEST(TaxonomyTest, TwoParentsIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;A;*\nb;B;*\nc;C;*\nx;A;*\ny;B;*\nz;C;*\nw;C;*\nv;C;*\nx;B;*\n",
                                 "h.csv", "zip"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "h.csv:9: taxonomy for attribute 'zip': value 'x' has two parents 'A' "
                       "(line 4) and 'B' (line 9)"));
}

TEST(TaxonomyTest, InnerParentConflictIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;M;A;*\nb;M;B;*\n", "h.csv", "zip"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value 'M' has two parents 'A' (line 1) and 'B' (line 2)"));
}

TEST(TaxonomyTest, LeafOnOneLineInnerOnAnotherIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;b;*\nb;*\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "h.csv:2: taxonomy for attribute 'attr': value 'b' is a leaf on line 2 "
                       "but a generalization on line 1"));
  EXPECT_THAT(Taxonomy::ParseArx("b;*\na;b;*\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value 'b' is a leaf on line 1 but a generalization on line 2"));
}

TEST(TaxonomyTest, DifferentRootsIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;*\nb;ANY\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "h.csv:2: taxonomy for attribute 'attr': lines end in different roots '*' "
                       "(line 1) and 'ANY' (line 2)"));
}

TEST(TaxonomyTest, RootBelowAnotherValueIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;*\n*;b;*\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument, "root '*' appears below 'b'"));
}

TEST(TaxonomyTest, EmptyLabelIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("a;b;*\nc;;*\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "h.csv:2: taxonomy for attribute 'attr': empty label in column 2"));
  EXPECT_THAT(Taxonomy::ParseArx("a; ;*\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty label"));
}

TEST(TaxonomyTest, EmptyFileIsAnError) {
  EXPECT_THAT(Taxonomy::ParseArx("", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "h.csv: taxonomy for attribute 'attr' is empty"));
  EXPECT_THAT(Taxonomy::ParseArx("\r\n \n\n", "h.csv", "attr"),
              StatusIs(absl::StatusCode::kInvalidArgument, "is empty"));
}

TEST(TaxonomyTest, LoadArxMissingFileIsNotFound) {
  EXPECT_THAT(Taxonomy::LoadArx(::testing::TempDir() + "no-such-hierarchy.csv", "age"),
              StatusIs(absl::StatusCode::kNotFound, "taxonomy for attribute 'age'"));
}

TEST(TaxonomyTest, FromEdgesBuildsTree) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::FromEdges({{"Masters", "Grad"},
                                                        {"Grad", "Any"},
                                                        {"Bachelors", "Undergrad"},
                                                        {"Doctorate", "Grad"},
                                                        {"Undergrad", "Any"},
                                                        {"Masters", "Grad"}},
                                                       "education"));
  EXPECT_EQ(t.size(), 6u);
  EXPECT_EQ(t.label(t.root()), "Any");
  EXPECT_THAT(Children(t, "Any"), ElementsAre("Grad", "Undergrad"));
  EXPECT_THAT(Children(t, "Grad"), ElementsAre("Masters", "Doctorate"));
  EXPECT_EQ(t.depth(*t.Find("Doctorate")), 2);
  EXPECT_EQ(t.parent(*t.Find("Bachelors")), *t.Find("Undergrad"));
}

TEST(TaxonomyTest, FromEdgesErrors) {
  using Edges = std::vector<std::pair<std::string, std::string>>;
  EXPECT_THAT(Taxonomy::FromEdges(Edges{}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "taxonomy for attribute 'a': no edges"));
  EXPECT_THAT(Taxonomy::FromEdges(Edges{{"x", "A"}, {"y", "B"}}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than one root: 'A', 'B'"));
  EXPECT_THAT(Taxonomy::FromEdges(Edges{{"x", "y"}, {"y", "x"}}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "cycle"));
  EXPECT_THAT(Taxonomy::FromEdges(Edges{{"x", "*"}, {"p", "q"}, {"q", "p"}}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "cycle: value 'p' is not below"));
  EXPECT_THAT(Taxonomy::FromEdges(Edges{{"x", "x"}}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "cycle"));
  EXPECT_THAT(
      Taxonomy::FromEdges(Edges{{"x", "A"}, {"x", "B"}, {"A", "*"}, {"B", "*"}}, "a"),
      StatusIs(absl::StatusCode::kInvalidArgument, "value 'x' has two parents 'A' and 'B'"));
  EXPECT_THAT(Taxonomy::FromEdges(Edges{{"", "A"}}, "a"),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty label"));
}

TEST(TaxonomyTest, AddLeafUnderRoot) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx(kEducation, "edu.csv", "education"));
  ASSERT_OK_AND_ASSIGN(Taxonomy::NodeId missing, t.AddLeafUnderRoot("?"));
  EXPECT_EQ(t.parent(missing), t.root());
  EXPECT_EQ(t.depth(missing), 1);
  EXPECT_THAT(t.FindLeaf("?"), Optional(missing));
  EXPECT_EQ(t.children(t.root()).back(), missing);
  EXPECT_TRUE(t.Generalizes(t.root(), missing));
  EXPECT_THAT(t.AddLeafUnderRoot("?"), StatusIs(absl::StatusCode::kAlreadyExists, "'?'"));
  EXPECT_THAT(t.AddLeafUnderRoot("Graduate"), StatusIs(absl::StatusCode::kAlreadyExists, ""));
}

TEST(TaxonomyTest, CopiesAreIndependent) {
  ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::ParseArx(kEducation, "edu.csv", "education"));
  Taxonomy copy = t;
  ASSERT_OK(copy.AddLeafUnderRoot("?"));
  EXPECT_EQ(t.Find("?"), std::nullopt);
  EXPECT_TRUE(copy.Find("Masters").has_value());
}

// The real ARX hierarchies for UCI Adult (read-only shared data; never copied into the repo).
TEST(TaxonomyTest, LoadsAdultHierarchies) {
  const std::filesystem::path adult =
      std::filesystem::path(::fedanon::testing::SharedDir()) / "datasets/adult";
  if (!std::filesystem::is_directory(adult)) {
    GTEST_SKIP() << "shared Adult data set not found at " << adult.string()
                 << " (set -DFEDANON_SHARED_DIR to enable this test)";
  }
  struct Expected {
    std::string attribute;
    std::string file;
    size_t leaves;
    int height;
  };
  const std::vector<Expected> expected = {
      {"age", "arx-hierarchies/adult_hierarchy_age.csv", 100, 4},
      {"education", "arx-hierarchies/adult_hierarchy_education.csv", 16, 3},
      {"marital-status", "arx-hierarchies/adult_hierarchy_marital-status.csv", 7, 2},
      {"native-country", "arx-hierarchies/adult_hierarchy_native-country.csv", 41, 2},
      {"occupation", "arx-hierarchies/adult_hierarchy_occupation.csv", 14, 2},
      {"race", "arx-hierarchies/adult_hierarchy_race.csv", 5, 1},
      {"salary-class", "arx-hierarchies/adult_hierarchy_salary-class.csv", 2, 1},
      {"sex", "arx-hierarchies/adult_hierarchy_sex.csv", 2, 1},
      {"workclass", "arx-hierarchies/adult_hierarchy_workclass.csv", 8, 2},
      {"relationship", "extra-hierarchies/adult_hierarchy_relationship.csv", 6, 3},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.attribute);
    ASSERT_OK_AND_ASSIGN(Taxonomy t, Taxonomy::LoadArx((adult / e.file).string(), e.attribute));
    EXPECT_EQ(t.label(t.root()), "*");
    EXPECT_EQ(CountLeaves(t), e.leaves);
    int height = 0;
    for (size_t n = 0; n < t.size(); ++n) {
      const auto id = static_cast<Taxonomy::NodeId>(n);
      height = std::max(height, t.depth(id));
      if (t.is_leaf(id)) {
        EXPECT_EQ(t.depth(id), e.height) << t.label(id);
      }
    }
    EXPECT_EQ(height, e.height);
  }
  ASSERT_OK_AND_ASSIGN(Taxonomy age, Taxonomy::LoadArx((adult / expected[0].file).string(), "age"));
  EXPECT_TRUE(age.FindLeaf("1").has_value());
  EXPECT_TRUE(age.FindLeaf("100").has_value());
  EXPECT_TRUE(age.Generalizes(*age.Find("80-99"), *age.Find("100")));
  ASSERT_OK_AND_ASSIGN(Taxonomy country,
                       Taxonomy::LoadArx((adult / expected[3].file).string(), "native-country"));
  EXPECT_TRUE(country.FindLeaf("Holand-Netherlands").has_value());  // the line without newline
}

// A private key named as a taxonomy: with quote_labels false (what a party sends to the leader)
// the error names the file, the line and the kind of problem, never a byte of the content.
TEST(TaxonomyTest, ErrorsWithoutQuotedLabelsNeverEchoTheFile) {
  const std::string key =
      "-----BEGIN PRIVATE KEY-----\n"
      "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET\n"
      "hRANCAAEkm7c3zQ9pS8vVdXfK1fJxG2X8Wb8G5n6r+0mC7QY8q5yD8w6p3f1bJk1\n"
      "-----END PRIVATE KEY-----\n";
  const absl::StatusOr<Taxonomy> quoted = Taxonomy::ParseArx(key, "tls.key", "age");
  ASSERT_FALSE(quoted.ok());
  EXPECT_THAT(std::string(quoted.status().message()), ::testing::HasSubstr("BEGIN"));
  const absl::StatusOr<Taxonomy> plain =
      Taxonomy::ParseArx(key, "tls.key", "age", {.quote_labels = false});
  EXPECT_THAT(plain, StatusIs(absl::StatusCode::kInvalidArgument,
                              "tls.key:2: taxonomy for attribute 'age': this line ends in a "
                              "different root than line 1"));
  const std::string message(plain.status().message());
  for (const std::string secret : {"BEGIN", "PRIVATE", "MIGH", "SECRET", "hRAN", "-----"}) {
    EXPECT_THAT(message, ::testing::Not(::testing::HasSubstr(secret)));
  }
  // Every other content error of a party's file is told without labels as well.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a;P1;R\na;P2;R\n",
       "tls.key:2: taxonomy for attribute 'age': a value has a different "
       "parent than on line 1"},
      {"a;b;R\nb;R\n",
       "tls.key:2: taxonomy for attribute 'age': a value is a leaf on line 2 but "
       "a generalization on line 1"},
      {"a;R\nb;R;a;R\n", "tls.key:2: taxonomy for attribute 'age': the root appears below"},
  };
  for (const auto& [text, expected] : cases) {
    const absl::StatusOr<Taxonomy> t =
        Taxonomy::ParseArx(text, "tls.key", "age", {.quote_labels = false});
    EXPECT_THAT(t, StatusIs(absl::StatusCode::kInvalidArgument, expected)) << text;
    EXPECT_THAT(std::string(t.status().message()), ::testing::Not(::testing::HasSubstr("'a'")));
  }
}

// Every level can cost the engine a round: depth is bounded, with a clear error.
TEST(TaxonomyTest, DepthIsBounded) {
  auto chain = [](int levels) {
    std::string line = "leaf";
    for (int i = 0; i < levels; ++i) line += ";L" + std::to_string(i);
    return line + "\n";
  };
  ASSERT_OK_AND_ASSIGN(const Taxonomy ok, Taxonomy::ParseArx(chain(64), "t.csv", "age"));
  EXPECT_EQ(ok.depth(*ok.Find("leaf")), kMaxTaxonomyDepth);
  EXPECT_THAT(Taxonomy::ParseArx(chain(65), "t.csv", "age"),
              StatusIs(absl::StatusCode::kInvalidArgument, "65 levels; at most 64"));
  EXPECT_THAT(Taxonomy::ParseArx(chain(2000), "t.csv", "age"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "t.csv:1: taxonomy for attribute 'age': the path from this leaf to the root "
                       "has 2000 levels; at most 64 are supported"));
  std::vector<std::pair<std::string, std::string>> edges;
  for (int i = 0; i < 100; ++i)
    edges.emplace_back("n" + std::to_string(i + 1), "n" + std::to_string(i));
  EXPECT_THAT(Taxonomy::FromEdges(edges, "age"),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than 64 levels"));
}

TEST(TaxonomyTest, LoadArxIsBoundedInSizeAndLineLength) {
  EXPECT_THAT(
      Taxonomy::LoadArx("/dev/zero", "age"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "taxonomy for attribute 'age': /dev/zero:1: line longer than 1048576 bytes"));
}

}  // namespace
}  // namespace fedanon::table
