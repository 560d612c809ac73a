// The participation strategy's epsilon (mohammed2011 §6-7) in a job spec: a fraction of the total
// contribution, written as a number (0.01) or a percentage ("1%"), between 0 and 100%.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/spec/job_spec_loader.h"
#include "tests/support/status_matchers.h"

namespace fedanon::spec {
namespace {

using ::fedanon::testing::StatusIs;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

std::string Spec(const std::string& epsilon) {
  return "attributes: [{name: a, role: qid, party: x}, {name: c, role: class}]\n"
         "privacy: {L: 1, K: 2}\npartitioning: vertical\nparticipation: game_theoretic\n"
         "epsilon: " +
         epsilon + "\n";
}

absl::Status Load(const std::string& epsilon) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = ParseJobSpecYaml(Spec(epsilon), "job.yaml");
  if (!spec.ok()) return spec.status();
  return ValidateJobSpec(*spec);
}

TEST(EpsilonSpecTest, APercentageIsTheSameFraction) {
  for (const auto& [text, value] : std::vector<std::pair<std::string, double>>{
           {"1%", 0.01}, {"0.01", 0.01}, {"0%", 0}, {"100%", 1}, {"2.5%", 0.025}, {"1", 1}}) {
    ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, ParseJobSpecYaml(Spec(text), "job.yaml"));
    EXPECT_DOUBLE_EQ(spec.epsilon(), value) << text;
    EXPECT_OK(ValidateJobSpec(spec)) << text;
  }
}

TEST(EpsilonSpecTest, AnythingElseIsAClearError) {
  EXPECT_THAT(Load("-1%"),
              StatusIs(kInvalid, "epsilon must be a non-negative number of at most 1"));
  EXPECT_THAT(Load("-0.01"), StatusIs(kInvalid, "epsilon must be a non-negative number"));
  EXPECT_THAT(Load("150%"), StatusIs(kInvalid, "at most 100%), got 1.5"));
  EXPECT_THAT(Load("2"), StatusIs(kInvalid, "epsilon must be a non-negative number of at most 1"));
  EXPECT_THAT(Load("one%"),
              StatusIs(kInvalid, "epsilon: expected a number or a percentage like 1%, got 'one%'"));
  EXPECT_THAT(Load("1%%"), StatusIs(kInvalid, "expected a number or a percentage like 1%"));
  EXPECT_THAT(Load("\"%\""), StatusIs(kInvalid, "expected a number or a percentage like 1%"));
}

TEST(EpsilonSpecTest, OtherNumbersDoNotTakePercentages) {
  const std::string yaml =
      "attributes: [{name: a, role: qid}, {name: c, role: class}]\n"
      "privacy: {model: templates, confidence: [{max: 50%}]}\n";
  EXPECT_THAT(ParseJobSpecYaml(yaml, "job.yaml").status(),
              StatusIs(kInvalid, "expected a number, got '50%'"));
}

}  // namespace
}  // namespace fedanon::spec
