// ARX's per-attribute loss (common/evaluation/information_loss.h) on a four-record release worked
// out by hand: a taxonomy attribute, a continuous one with intervals and a suppression one.
#include "common/evaluation/information_loss.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

using testing::StatusIs;

constexpr char kSpec[] = R"(name: loss
attributes:
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: age, role: qid, type: continuous, range: [0, 100]}
  - {name: sex, role: qid}
  - {name: ok, role: class}
privacy: {model: lkc, L: 1, K: 2}
)";

// job: ANY -> White-collar {Manager, Clerk}, Blue-collar {Welder, Driver, Farmer}: 5 leaves.
//   Manager 0, White-collar (2 - 1)/(5 - 1) = 0.25, ANY 1, Blue-collar (3 - 1)/4 = 0.5:
//   average 1.75 / 4 = 0.4375.
// age over [0, 100): [0-50) 0.5, [50-100) 0.5, [20-30) 0.1, 37 (kept) 0: 1.1 / 4 = 0.275.
// sex (suppression): M 0, * 1, F 0, * 1: 0.5.
TEST(InformationLossTest, HandWorkedRelease) {
  const std::string dir = testing::FreshDir("information_loss");
  testing::WriteText(dir + "/r.csv",
                     "job,age,sex,ok\nManager,[0-50),M,y\nWhite-collar,[50-100),*,n\n"
                     "ANY,[20-30),F,y\nBlue-collar,37,*,n\n");
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(kSpec, "spec"));
  ASSERT_OK_AND_ASSIGN(table::Taxonomy job, table::Taxonomy::ParseArx(
                                                "Manager;White-collar;ANY\nClerk;White-collar;ANY\n"
                                                "Welder;Blue-collar;ANY\nDriver;Blue-collar;ANY\n"
                                                "Farmer;Blue-collar;ANY\n",
                                                "job.csv", "job"));
  LossContext context;
  context.taxonomies["job"] = std::make_shared<const table::Taxonomy>(std::move(job));
  ASSERT_OK_AND_ASSIGN(const auto losses, AttributeLosses(spec, dir + "/r.csv", context));
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_EQ(losses[0].attribute(), "job");
  EXPECT_DOUBLE_EQ(losses[0].loss(), 0.4375);
  EXPECT_EQ(losses[0].distinct_values(), 4u);
  EXPECT_DOUBLE_EQ(losses[1].loss(), 0.275);
  EXPECT_DOUBLE_EQ(losses[2].loss(), 0.5);

  // Without a declared range the released intervals' span is the range: [0, 100) again here.
  fedanon::v1::JobSpec no_range = spec;
  no_range.mutable_attributes(1)->clear_range();
  ASSERT_OK_AND_ASSIGN(const auto spanned, AttributeLosses(no_range, dir + "/r.csv", context));
  EXPECT_DOUBLE_EQ(spanned[1].loss(), 0.275);

  testing::WriteText(dir + "/bad.csv", "job,age,sex,ok\nPilot,[0-50),M,y\n");
  EXPECT_THAT(AttributeLosses(spec, dir + "/bad.csv", context),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value 'Pilot' of attribute 'job' is not in its taxonomy"));
}

TEST(InformationLossTest, IntervalLabels) {
  double lo = 0, hi = 0;
  EXPECT_TRUE(ParseIntervalLabel("[20-30)", &lo, &hi));
  EXPECT_EQ(lo, 20);
  EXPECT_EQ(hi, 30);
  EXPECT_TRUE(ParseIntervalLabel("[-5-2.5)", &lo, &hi));
  EXPECT_EQ(lo, -5);
  EXPECT_EQ(hi, 2.5);
  EXPECT_TRUE(ParseIntervalLabel("[-10--5)", &lo, &hi));
  EXPECT_EQ(hi, -5);
  EXPECT_FALSE(ParseIntervalLabel("20-30", &lo, &hi));
  EXPECT_FALSE(ParseIntervalLabel("[30-20)", &lo, &hi));
  EXPECT_FALSE(ParseIntervalLabel("[a-b)", &lo, &hi));
}

}  // namespace
}  // namespace fedanon::evaluation
