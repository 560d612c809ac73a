// The record of a durable job's calls (leader/call_recorder.h) over a real job store: requests and
// replies recorded through the recorder and through the callbacks the protocol units take read
// back in order, after reopening the store too; a conflicting request is refused.
#include "leader/call_recorder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "leader/job_store.h"
#include "tests/support/status_matchers.h"

namespace fedanon::leader {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::StatusIs;
using ::testing::SizeIs;

fedanon::v1::SubmitJobRequest Request() {
  fedanon::v1::SubmitJobRequest r;
  r.mutable_spec()->set_name("recorded");
  r.add_parties("alice");
  r.add_parties("bob");
  return r;
}

class CallRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "call_recorder_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/data";
    ASSERT_OK_AND_ASSIGN(store_, JobStore::Open(dir_));
    ASSERT_OK_AND_ASSIGN(job_, store_->Create(Request(), "alice"));
    ASSERT_OK(store_->SetState(job_, fedanon::v1::JOB_STATE_RUNNING));
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }

  std::string root_;
  std::string dir_;
  std::unique_ptr<JobStore> store_;
  std::string job_;
};

// A horizontal job's way: each request before it is sent, its reply once complete; the last call
// may still be open when the leader stops.
TEST_F(CallRecorderTest, RecordsRequestsAndTheirRepliesInOrder) {
  const CallRecorder recorder(store_.get(), job_);
  EXPECT_EQ(recorder.job_id(), job_);
  ASSERT_OK(recorder.RecordRequest(0, "digest-0"));
  ASSERT_OK(recorder.RecordReply(0, "sum-0"));
  ASSERT_OK(recorder.RecordRequest(1, "digest-1"));
  ASSERT_OK(recorder.RecordRequest(1, "digest-1"));  // the same request again: accepted
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, recorder.Load());
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].index, 0u);
  EXPECT_EQ(calls[0].digest, "digest-0");
  EXPECT_TRUE(calls[0].done);
  EXPECT_EQ(calls[0].reply, "sum-0");
  EXPECT_EQ(calls[0].masks, "");
  EXPECT_EQ(calls[1].index, 1u);
  EXPECT_EQ(calls[1].digest, "digest-1");
  EXPECT_FALSE(calls[1].done);
  EXPECT_EQ(calls[1].masks, "") << "the leader draws no masks: the ring's first party does";

  // As after a restart: a new store and recorder on the same directory see the same calls.
  store_.reset();
  ASSERT_OK_AND_ASSIGN(store_, JobStore::Open(dir_));
  const CallRecorder after_restart(store_.get(), job_);
  ASSERT_OK_AND_ASSIGN(calls, after_restart.Load());
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].reply, "sum-0");
  EXPECT_FALSE(calls[1].done);
  ASSERT_OK(after_restart.RecordReply(1, "sum-1"));
  ASSERT_OK_AND_ASSIGN(calls, after_restart.Load());
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_TRUE(calls[1].done);
  EXPECT_EQ(calls[1].reply, "sum-1");
}

// A request under an index already recorded with another digest is refused (the parties would be
// asked two things under one key), and so is any request or second reply once the call is
// complete, or a reply without a recorded request; what was recorded stays as it was.
TEST_F(CallRecorderTest, RefusesAConflictingDigestAndASecondReply) {
  const CallRecorder recorder(store_.get(), job_);
  ASSERT_OK(recorder.RecordRequest(0, "digest-0"));
  EXPECT_THAT(recorder.RecordRequest(0, "digest-other"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
  ASSERT_OK(recorder.RecordReply(0, "sum-0"));
  EXPECT_THAT(recorder.RecordRequest(0, "digest-0"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
  EXPECT_THAT(recorder.RecordReply(0, "sum-0"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
  EXPECT_THAT(recorder.RecordReply(1, "sum-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no open request"));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, recorder.Load());
  ASSERT_THAT(calls, SizeIs(1));
  EXPECT_EQ(calls[0].digest, "digest-0");
  EXPECT_EQ(calls[0].reply, "sum-0");
}

// A vertical job's way: each call complete at once, the key of its request with the reply; a
// second record at one index is refused.
TEST_F(CallRecorderTest, RecordsCallsCompleteAtOnce) {
  const CallRecorder recorder(store_.get(), job_);
  ASSERT_OK(recorder.RecordCompleteCall(0, "alice#0\nd0", "reply-0"));
  ASSERT_OK(recorder.RecordCompleteCall(1, "bob#0\nd1", std::string("r\0e", 3)));
  EXPECT_THAT(recorder.RecordCompleteCall(1, "bob#1\nd2", "other"),
              StatusIs(absl::StatusCode::kAlreadyExists, ""));
  EXPECT_THAT(recorder.RecordRequest(1, "bob#0\nd1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, recorder.Load());
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].digest, "alice#0\nd0");
  EXPECT_EQ(calls[0].reply, "reply-0");
  EXPECT_TRUE(calls[0].done);
  EXPECT_EQ(calls[1].digest, "bob#0\nd1");
  EXPECT_EQ(calls[1].reply, std::string("r\0e", 3));
  EXPECT_TRUE(calls[1].done);
}

// The callbacks handed to SecureSumCountSource::Journal and VerticalJobOptions::record_reply
// record like the recorder itself, to the job it names, and outlive the recorder they came from.
TEST_F(CallRecorderTest, CallbacksRecordToTheSameJob) {
  std::function<absl::Status(uint64_t, const std::string&)> record_request;
  std::function<absl::Status(uint64_t, const std::string&)> record_reply;
  std::function<absl::Status(uint64_t, const std::string&, const std::string&)> record_call;
  {
    const CallRecorder recorder(store_.get(), job_);
    record_request = recorder.RequestRecorder();
    record_reply = recorder.ReplyRecorder();
    record_call = recorder.CompleteCallRecorder();
  }
  ASSERT_OK(record_request(0, "digest-0"));
  EXPECT_THAT(record_request(0, "digest-other"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "another request"));
  ASSERT_OK(record_reply(0, "sum-0"));
  ASSERT_OK(record_call(1, "alice#0\nd1", "reply-1"));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordedCall> calls, store_->Calls(job_));
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].digest, "digest-0");
  EXPECT_EQ(calls[0].reply, "sum-0");
  EXPECT_EQ(calls[1].digest, "alice#0\nd1");
  EXPECT_EQ(calls[1].reply, "reply-1");

  // Another job's recorder sees none of them; an unknown job is refused.
  ASSERT_OK_AND_ASSIGN(const std::string other, store_->Create(Request(), "bob"));
  ASSERT_OK_AND_ASSIGN(calls, CallRecorder(store_.get(), other).Load());
  EXPECT_THAT(calls, SizeIs(0));
  EXPECT_THAT(CallRecorder(store_.get(), "job-000000000000").RecordRequest(0, "d"),
              StatusIs(absl::StatusCode::kNotFound, "unknown job"));
  EXPECT_THAT(CallRecorder(store_.get(), "job-000000000000").Load(),
              StatusIs(absl::StatusCode::kNotFound, "unknown job"));
}

}  // namespace
}  // namespace fedanon::leader
