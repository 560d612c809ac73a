// The recipient's check of a released horizontal table (common/engine/released_table_check.h):
// rows read on their own against the final cut, the privacy model and the agreed counts.
#include "common/engine/released_table_check.h"

#include <gtest/gtest.h>

#include "common/base/status_macros.h"
#include "common/engine/privacy_model.h"
#include "common/spec/job_spec_loader.h"
#include "tests/support/status_matchers.h"

namespace fedanon::engine {
namespace {

using fedanon::testing::StatusIs;

constexpr char kSpec[] = R"(name: released-check
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: s, role: sensitive, values: [flu, none]}
  - {name: note, role: other}
privacy: {model: lkc, L: 1, K: 2, C: 0.6, sensitive_values: [flu]}
)";

// The schema, the model and a cut in which ga is disclosed and gb, gc stay hidden ("*").
class ReleasedTableCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(spec_, spec::ParseJobSpecYaml(kSpec, "released.yaml"));
    ASSERT_OK_AND_ASSIGN(schema_, table::BuildPublicSchema(spec_, {}));
    ASSERT_OK_AND_ASSIGN(model_, BuildPrivacyModel(spec_, schema_));
    for (const auto& q : schema_.qids) hier_.emplace_back(&q);
    ASSERT_GT(hier_[0].CandidateCount(0), 0);
    hier_[0].Specialize(0, 0);  // discloses ga
    ASSERT_OK_AND_ASSIGN(layout_, BuildFinalCheckLayout(model_, schema_, hier_, "*"));
  }

  ReleasedTableExpectations Expect() const {
    return {.layout = &layout_,
            .schema = &schema_,
            .hier = &hier_,
            .suppression_token = "*",
            .header = {"g", "s", "note"},
            .rows = std::nullopt,
            .final_check_totals = nullptr,
            .group_totals = nullptr};
  }

  // The key of the group of cut value `label`.
  std::vector<NodeIndex> Key(const std::string& label) const {
    for (size_t n = 0; n < hier_[0].size(); ++n) {
      const auto node = static_cast<NodeIndex>(n);
      if (hier_[0].node(node).children.empty() && hier_[0].Label(node, "*") == label) {
        return {node};
      }
    }
    ADD_FAILURE() << "no cut value " << label;
    return {};
  }

  fedanon::v1::JobSpec spec_;
  table::Dataset schema_;
  PrivacyModel model_;
  std::vector<AttributeHierarchy> hier_;
  FinalCheckLayout layout_;
};

// ga: 2 records, 1 flu; *: 3 records, 1 flu.
const std::vector<std::string> kHonest = {"ga,flu,x\n", "ga,none,\"y, z\"\n", "*,flu,x\n",
                                          "*,none,x\n", "*,none,x\n"};

TEST_F(ReleasedTableCheckTest, AnHonestTablePassesWithEveryExpectation) {
  ReleasedTableExpectations e = Expect();
  EXPECT_OK(CheckReleasedTable(e, kHonest));
  e.rows = 5;
  const std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups = {{Key("ga"), {2, 1}},
                                                                          {Key("*"), {3, 1}}};
  e.group_totals = &groups;
  ASSERT_EQ(layout_.words, 4u);  // {g}: 2 groups x (size, flu), ga first in node order
  const std::vector<uint64_t> totals = {2, 1, 3, 1};
  e.final_check_totals = &totals;
  EXPECT_OK(CheckReleasedTable(e, kHonest));
}

TEST_F(ReleasedTableCheckTest, ACellOutsideTheFinalCutIsRefusedByRowAttributeAndValue) {
  // gb is hidden under "*" in this cut: a row that shows it releases a raw value.
  std::vector<std::string> rows = kHonest;
  rows[3] = "gb,none,x\n";
  EXPECT_THAT(CheckReleasedTable(Expect(), rows),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the released table's row 4: value 'gb' of attribute 'g' is not a value "
                       "of the final cut"));
  rows[3] = "*,none\n";
  EXPECT_THAT(CheckReleasedTable(Expect(), rows),
              StatusIs(absl::StatusCode::kInvalidArgument, "expected 3 fields, found 2"));
  rows[3] = "*,none,x\n*,none,x\n";  // one row that is two records
  EXPECT_THAT(CheckReleasedTable(Expect(), rows),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the released table's 5 rows hold 6 CSV records"));
}

TEST_F(ReleasedTableCheckTest, FedInBlocksItGivesTheVerdictOfTheWholeAndNumbersRowsThroughout) {
  // The recipient's streaming form: the same table in blocks of one, two and two rows.
  ReleasedTableExpectations e = Expect();
  e.rows = 5;
  const auto in_blocks = [&](const std::vector<std::string>& rows) -> absl::Status {
    ASSIGN_OR_RETURN(ReleasedTableChecker checker, ReleasedTableChecker::Create(e));
    RETURN_IF_ERROR(checker.AddRows({rows[0]}));
    RETURN_IF_ERROR(checker.AddRows({rows[1], rows[2]}));
    RETURN_IF_ERROR(checker.AddRows({rows[3], rows[4]}));
    EXPECT_EQ(checker.rows(), 5u);
    return checker.Finish();
  };
  EXPECT_OK(in_blocks(kHonest));
  std::vector<std::string> rows = kHonest;
  rows[3] = "gb,none,x\n";  // in the third block: still named as row 4
  EXPECT_THAT(in_blocks(rows), StatusIs(absl::StatusCode::kInvalidArgument,
                                        "the released table's row 4: value 'gb'"));
  // A row count other than the summed records, found when the verdict is asked for.
  e.rows = 6;
  EXPECT_THAT(in_blocks(kHonest),
              StatusIs(absl::StatusCode::kDataLoss, "holds 5 rows but the parties summed 6"));
}

TEST_F(ReleasedTableCheckTest, ARowCountOtherThanTheSummedRecordsIsRefused) {
  ReleasedTableExpectations e = Expect();
  e.rows = 6;
  EXPECT_THAT(CheckReleasedTable(e, kHonest),
              StatusIs(absl::StatusCode::kDataLoss,
                       "the released table holds 5 rows but the parties summed 6 records"));
}

TEST_F(ReleasedTableCheckTest, TheModelIsCheckedOnTheTableItself) {
  // One ga row moved into "*": ga holds 1 record, fewer than K = 2.
  std::vector<std::string> rows = kHonest;
  rows[1] = "*,none,x\n";
  EXPECT_THAT(CheckReleasedTable(Expect(), rows),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the released table itself: final check failed"));
  // Two of three flu in "*": confidence 2/3 above C = 0.6.
  rows = kHonest;
  rows[3] = "*,flu,x\n";
  EXPECT_THAT(CheckReleasedTable(Expect(), rows),
              StatusIs(absl::StatusCode::kFailedPrecondition, "infers 'flu' with confidence 2/3"));
}

TEST_F(ReleasedTableCheckTest, GroupCountsOtherThanTheAgreedOnesAreRefused) {
  // The same size per group, but a flu moved between groups: both models would still hold.
  std::vector<std::string> rows = kHonest;
  rows[0] = "ga,none,x\n";
  rows[3] = "*,flu,x\n";
  rows[4] = "*,none,x\n";
  rows[2] = "*,none,x\n";
  ReleasedTableExpectations e = Expect();
  const std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups = {{Key("ga"), {2, 1}},
                                                                          {Key("*"), {3, 1}}};
  e.group_totals = &groups;
  EXPECT_THAT(CheckReleasedTable(e, rows),
              StatusIs(absl::StatusCode::kDataLoss, "the released table's group (g=ga) holds 2"));
  e.group_totals = nullptr;
  const std::vector<uint64_t> totals = {2, 1, 3, 1};
  e.final_check_totals = &totals;
  EXPECT_THAT(CheckReleasedTable(e, rows),
              StatusIs(absl::StatusCode::kDataLoss,
                       "the released table's group (g=ga) of {g} k=2 conf(flu) <= 0.6 holds 0 "
                       "records with 'flu' but the parties' final check summed 1"));
}

}  // namespace
}  // namespace fedanon::engine
