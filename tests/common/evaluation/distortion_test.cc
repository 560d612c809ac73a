// The thesis's distortion metric (fung2007 §6.4) on a 4-record table worked out by hand: a
// taxonomy attribute (levels generalized), a suppressed attribute (one unit per suppressed value)
// and a continuous one ((b - a) / (f2 - f1) per record), separately and per record; on the
// thesis's own Table 4.1(a) and its 4-anonymous Table 4.2; plus the errors for a release that
// does not belong to the raw table.
#include "common/evaluation/distortion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/spec/job_spec_loader.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::evaluation {
namespace {

using testing::FreshDir;
using ::testing::HasSubstr;
using testing::WriteText;

// job: ANY -> {Professional -> {Engineer, Lawyer}, Artist}: Engineer and Lawyer at depth 2,
// Artist at depth 1. age: range [0, 100). sex: no taxonomy (suppression).
struct Fixture {
  std::string dir = FreshDir("distortion");
  std::string spec_path = dir + "/job.yaml";
  std::string raw_path = dir + "/raw.csv";
  std::string anon_path = dir + "/anon.csv";
  Fixture() {
    WriteText(dir + "/job.csv", "Engineer;Professional;ANY\nLawyer;Professional;ANY\nArtist;ANY\n");
    WriteText(spec_path, R"(name: d
attributes:
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: sex, role: qid}
  - {name: age, role: qid, type: continuous, range: [0, 100]}
  - {name: ok, role: class}
privacy: {model: lkc, L: 1, K: 2}
)");
    WriteText(raw_path,
              "job,sex,age,ok\nEngineer,M,30,y\nLawyer,F,40,n\nArtist,M,50,y\nEngineer,F,60,n\n");
  }
};

TEST(DistortionTest, HandWorkedTable) {
  Fixture f;
  // job: Professional (1 level), ANY (2), ANY (1), Engineer (0) -> 4 units.
  // sex: *, F, *, * -> 3 units. age: [0-50) 0.5, [0-50) 0.5, [50-100) 0.5, 60 unchanged 0 -> 1.5.
  WriteText(f.anon_path,
            "job,sex,age,ok\nProfessional,*,[0-50),y\nANY,F,[0-50),n\nANY,*,[50-100),y\n"
            "Engineer,*,60,n\n");
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(f.spec_path));
  ASSERT_OK_AND_ASSIGN(Distortion d, MeasureDistortion(spec, f.raw_path, f.anon_path));
  EXPECT_EQ(d.records, 4u);
  EXPECT_DOUBLE_EQ(d.categorical, (4.0 + 3.0) / 4);
  EXPECT_DOUBLE_EQ(d.continuous, 1.5 / 4);
}

// Thesis Table 4.1(a) (34 records) and Table 4.2, its 4-anonymous release on {Job, Sex}, with
// Figure 4.1's Job taxonomy (ANY_Job -> Blue_Collar -> {Non_Technical -> {Janitor, Mover},
// Technical -> {Carpenter, Electrician}}, White_Collar -> {Manager, Professional -> {Engineer,
// Lawyer}}). Table 4.2 generalizes Janitor (3 records) and Mover (4) to Non_Technical and
// Engineer (4 + 3) and Lawyer (1) to Professional, one level each: 15 units over 34 records. Sex
// and Age are released as they are; the continuous Age (range [1, 99)) costs nothing.
TEST(DistortionTest, ThesisTable42) {
  const std::string dir = FreshDir("distortion_table42");
  WriteText(dir + "/job.csv",
            "Janitor;Non_Technical;Blue_Collar;ANY_Job\nMover;Non_Technical;Blue_Collar;ANY_Job\n"
            "Carpenter;Technical;Blue_Collar;ANY_Job\nElectrician;Technical;Blue_Collar;ANY_Job\n"
            "Manager;White_Collar;ANY_Job\nEngineer;Professional;White_Collar;ANY_Job\n"
            "Lawyer;Professional;White_Collar;ANY_Job\n");
  WriteText(dir + "/sex.csv", "M;ANY_Sex\nF;ANY_Sex\n");
  WriteText(dir + "/job.yaml", R"(name: table42
attributes:
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Age, role: qid, type: continuous, range: [1, 99]}
  - {name: Class, role: class}
privacy: {model: lkc, L: 2, K: 4}
)");
  // Table 4.1(a) rows: Job, Sex, Age, records; Table 4.2 releases the Job in the last column.
  struct Row {
    const char *job, *sex, *age;
    int records;
    const char* released;
  };
  const Row rows[] = {
      {"Janitor", "M", "30", 3, "Non_Technical"}, {"Mover", "M", "32", 4, "Non_Technical"},
      {"Carpenter", "M", "35", 5, "Carpenter"},   {"Electrician", "F", "37", 4, "Electrician"},
      {"Manager", "F", "42", 6, "Manager"},       {"Manager", "F", "44", 4, "Manager"},
      {"Engineer", "M", "44", 4, "Professional"}, {"Engineer", "F", "44", 3, "Professional"},
      {"Lawyer", "F", "44", 1, "Professional"}};
  std::string raw = "Job,Sex,Age,Class\n", released = raw;
  for (const Row& r : rows) {
    for (int i = 0; i < r.records; ++i) {
      raw += std::string(r.job) + "," + r.sex + "," + r.age + ",Y\n";
      released += std::string(r.released) + "," + r.sex + "," + r.age + ",Y\n";
    }
  }
  WriteText(dir + "/raw.csv", raw);
  WriteText(dir + "/table42.csv", released);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(dir + "/job.yaml"));
  ASSERT_OK_AND_ASSIGN(Distortion d,
                       MeasureDistortion(spec, dir + "/raw.csv", dir + "/table42.csv"));
  EXPECT_EQ(d.records, 34u);
  EXPECT_DOUBLE_EQ(d.categorical, 15.0 / 34);
  EXPECT_EQ(d.continuous, 0);
}

TEST(DistortionTest, TheRawTableItselfHasNone) {
  Fixture f;
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(f.spec_path));
  ASSERT_OK_AND_ASSIGN(Distortion d, MeasureDistortion(spec, f.raw_path, f.raw_path));
  EXPECT_EQ(d.categorical, 0);
  EXPECT_EQ(d.continuous, 0);
}

TEST(DistortionTest, ReleasesThatDoNotFitTheRawTable) {
  Fixture f;
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(f.spec_path));
  WriteText(f.anon_path,
            "job,sex,age,ok\nArtist,M,30,y\nLawyer,F,40,n\nArtist,M,50,y\n"
            "Engineer,F,60,n\n");
  EXPECT_THAT(MeasureDistortion(spec, f.raw_path, f.anon_path).status().message(),
              HasSubstr("anon.csv:2: attribute 'job': released 'Artist' for raw 'Engineer'"));
  WriteText(f.anon_path,
            "job,sex,age,ok\nEngineer,M,[40-50),y\nLawyer,F,40,n\nArtist,M,50,y\n"
            "Engineer,F,60,n\n");
  EXPECT_THAT(MeasureDistortion(spec, f.raw_path, f.anon_path).status().message(),
              HasSubstr("the interval does not hold the raw value"));
  WriteText(f.anon_path, "job,sex,age,ok\nEngineer,M,30,y\n");
  EXPECT_THAT(MeasureDistortion(spec, f.raw_path, f.anon_path).status().message(),
              HasSubstr("1 records, but the raw table"));
}

TEST(DistortionTest, IntervalLabels) {
  ASSERT_OK_AND_ASSIGN(auto a, ParseIntervalLabel("[19214-1484706)"));
  EXPECT_EQ(a.first, 19214);
  EXPECT_EQ(a.second, 1484706);
  ASSERT_OK_AND_ASSIGN(auto b, ParseIntervalLabel("[-5-3.5)"));
  EXPECT_EQ(b.first, -5);
  EXPECT_EQ(b.second, 3.5);
  ASSERT_OK_AND_ASSIGN(auto c, ParseIntervalLabel("[1e-05-2)"));
  EXPECT_EQ(c.first, 1e-05);
  EXPECT_FALSE(ParseIntervalLabel("ANY").ok());
  EXPECT_FALSE(ParseIntervalLabel("[5-3)").ok());
}

}  // namespace
}  // namespace fedanon::evaluation
