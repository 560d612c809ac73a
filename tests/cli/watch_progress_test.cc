#include "cli/watch_progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fedanon::server {
namespace {

using ::testing::HasSubstr;

fedanon::v1::JobInfo Running(uint32_t round, double elapsed) {
  fedanon::v1::JobInfo job;
  job.set_state(fedanon::v1::JOB_STATE_RUNNING);
  job.set_round(round);
  job.set_elapsed_seconds(elapsed);
  return job;
}

TEST(WatchProgress, RateFromRoundTimingsAndAnEtaWhenRoundsAreExpected) {
  cli::WatchProgress progress(/*expected_rounds=*/10);
  EXPECT_EQ(progress.Update(Running(1, 1.0)), "[##------------------] 1/10");
  EXPECT_EQ(progress.Update(Running(1, 1.2)), "[##------------------] 1/10");  // same round
  EXPECT_EQ(progress.Update(Running(3, 2.0)),
            "[######--------------] 3/10, 0.50 s/round, ETA 3.5 s");
  EXPECT_EQ(progress.Update(Running(5, 3.0)),
            "[##########----------] 5/10, 0.50 s/round, ETA 2.5 s");
  EXPECT_THAT(progress.Update(Running(12, 6.5)), HasSubstr("beyond the 10 expected rounds"));
  fedanon::v1::JobInfo done = Running(12, 7.0);
  done.set_state(fedanon::v1::JOB_STATE_DONE);
  EXPECT_EQ(progress.Update(done), "");
}

TEST(WatchProgress, WithoutExpectedRoundsOnlyTheRate) {
  cli::WatchProgress progress;
  EXPECT_EQ(progress.Update(Running(0, 0.1)), "");  // validating
  EXPECT_EQ(progress.Update(Running(1, 1.0)), "");
  EXPECT_EQ(progress.Update(Running(2, 1.25)), "0.25 s/round");
  EXPECT_EQ(cli::ProgressBar(3, 0, 4), "[----]");
  EXPECT_EQ(cli::ProgressBar(9, 4, 4), "[####]");
}

}  // namespace
}  // namespace fedanon::server
