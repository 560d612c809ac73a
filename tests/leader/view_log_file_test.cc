// leader::ViewLog on its own: the JSON line of an entry (escaping, optional fields), the file
// (path from a validated job id, mode 0600, appended across reopenings, a resumed job's replayed
// lines written once), and the split of a
// decoded secure sum into its parts (checked against a captured run in
// tests/federation/view_log_test.cc).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "common/table/dataset.h"
#include "leader/view_log.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::leader {
namespace {

constexpr char kJob[] = "job-0123456789ab";

TEST(ViewLogTest, EntryIsOneLineOfJsonWithTheRequiredFields) {
  ViewEntry e;
  e.round = 3;
  e.kind = "candidate_counts";
  e.attribute = "job \"title\"\n";
  e.labelled = true;
  e.counts = {0, 7, 18446744073709551615ull};
  EXPECT_EQ(ViewEntryToJson(e),
            "{\"round\":3,\"kind\":\"candidate_counts\",\"attribute\":\"job \\\"title\\\"\\n\","
            "\"labelled\":true,\"counts\":[0,7,18446744073709551615]}");
  e.node = "ANY\\x";
  e.bounds = {0, 5};
  e.party = "hospital-a";
  e.score = 0.5;
  e.detail = std::string("a\x01", 2);
  EXPECT_EQ(ViewEntryToJson(e),
            "{\"round\":3,\"kind\":\"candidate_counts\",\"attribute\":\"job \\\"title\\\"\\n\","
            "\"labelled\":true,\"counts\":[0,7,18446744073709551615],\"node\":\"ANY\\\\x\","
            "\"bounds\":[0,5],\"party\":\"hospital-a\",\"score\":0.5,\"detail\":\"a\\u0001\"}");
}

TEST(ViewLogTest, FileIsPrivateAndAppended) {
  testing::TempDir dir("view_log");
  ::umask(022);
  {
    ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
    EXPECT_EQ(log->path(), dir.File(std::string(kJob) + ".view.jsonl"));
    ASSERT_OK(log->Append(1, "group_counts", "", false, {5}));
    ASSERT_OK(log->Sync());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
    ASSERT_OK(log->Append(2, "group_counts", "", true, {6, 1}));
  }
  struct stat st {};
  ASSERT_EQ(::stat(dir.File(std::string(kJob) + ".view.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK_AND_ASSIGN(std::string text, ViewLog::Read(dir.path(), kJob));
  EXPECT_EQ(text,
            "{\"round\":1,\"kind\":\"group_counts\",\"attribute\":\"\",\"labelled\":false,"
            "\"counts\":[5]}\n"
            "{\"round\":2,\"kind\":\"group_counts\",\"attribute\":\"\",\"labelled\":true,"
            "\"counts\":[6,1]}\n");
  // Streamed (GetViewLog) in pieces of 50 bytes: the same text, no piece larger.
  std::string streamed;
  size_t largest = 0;
  ASSERT_OK(ViewLog::Stream(dir.path(), kJob, 50, [&](std::string_view piece) {
    streamed.append(piece);
    largest = std::max(largest, piece.size());
    return absl::OkStatus();
  }));
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(largest, 50u);
  // A job that decoded nothing yet has an empty log.
  ASSERT_OK_AND_ASSIGN(std::string none, ViewLog::Read(dir.path(), "job-000000000000"));
  EXPECT_EQ(none, "");
  int pieces = 0;
  ASSERT_OK(ViewLog::Stream(dir.path(), "job-000000000000", 50, [&](std::string_view) {
    ++pieces;
    return absl::OkStatus();
  }));
  EXPECT_EQ(pieces, 0);
}

// A job resumed after a leader restart logs again what it replays: the lines already in the file
// are not written twice; from the first entry that differs on, everything is appended (also an
// entry equal to an earlier line).
TEST(ViewLogTest, AResumedJobLogsItsReplayedPrefixOnce) {
  testing::TempDir dir("view_log_resume");
  {
    ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
    ASSERT_OK(log->Append(1, "group_counts", "", false, {5}));
    ASSERT_OK(log->Append(2, "group_counts", "", false, {6}));
  }
  ASSERT_OK_AND_ASSIGN(const std::string before, ViewLog::Read(dir.path(), kJob));
  {
    ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
    ASSERT_OK(log->ExpectReplayOfItsLines());
    ASSERT_OK(log->Append(1, "group_counts", "", false, {5}));  // replayed
    ASSERT_OK(log->Append(2, "group_counts", "", false, {6}));  // replayed
    ASSERT_OK_AND_ASSIGN(const std::string replayed, ViewLog::Read(dir.path(), kJob));
    EXPECT_EQ(replayed, before);
    ASSERT_OK(log->Append(3, "group_counts", "", false, {7}));  // new
    ASSERT_OK(log->Append(1, "group_counts", "", false, {5}));  // new, though equal to line 1
  }
  ASSERT_OK_AND_ASSIGN(const std::string after, ViewLog::Read(dir.path(), kJob));
  EXPECT_EQ(after,
            before +
                "{\"round\":3,\"kind\":\"group_counts\",\"attribute\":\"\",\"labelled\":false,"
                "\"counts\":[7]}\n"
                "{\"round\":1,\"kind\":\"group_counts\",\"attribute\":\"\",\"labelled\":false,"
                "\"counts\":[5]}\n");
  // A replay that differs at once appends everything.
  {
    ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
    ASSERT_OK(log->ExpectReplayOfItsLines());
    ASSERT_OK(log->Append(2, "group_counts", "", false, {6}));
  }
  ASSERT_OK_AND_ASSIGN(const std::string differing, ViewLog::Read(dir.path(), kJob));
  EXPECT_EQ(differing,
            after +
                "{\"round\":2,\"kind\":\"group_counts\",\"attribute\":\"\",\"labelled\":false,"
                "\"counts\":[6]}\n");
}

TEST(ViewLogTest, JobIdsThatAreNotTheLeadersFormNeverFormAPath) {
  testing::TempDir dir("view_log_ids");
  for (const char* bad : {"../x", "job-0123456789AB", "", "job-0123456789ab/..", "jobs"}) {
    EXPECT_EQ(ViewLog::Open(dir.path(), bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_EQ(ViewLog::Read(dir.path(), bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_EQ(
        ViewLog::Stream(dir.path(), bad, 50, [](std::string_view) { return absl::OkStatus(); })
            .code(),
        absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(dir.List().empty());
}

TEST(ViewLogTest, StatsOfTheWrongLengthAreRefused) {
  testing::TempDir dir("view_log_len");
  ASSERT_OK_AND_ASSIGN(auto log, ViewLog::Open(dir.path(), kJob));
  std::vector<engine::AttributeHierarchy> hier;  // no attributes: only released groups
  engine::StatsRequest request;
  request.released_groups = {{}, {}};
  request.released_combinations = 3;
  ASSERT_OK(log->AppendStats(4, hier, 2, 0, request, {1, 0, 2, 0, 0, 5}));
  EXPECT_FALSE(log->AppendStats(4, hier, 2, 0, request, {1, 0, 2}).ok());
  EXPECT_FALSE(log->AppendStats(4, hier, 2, 0, request, {1, 0, 2, 0, 0, 5, 9}).ok());
  // Only the vector of the right length is logged, one line per released group.
  ASSERT_OK_AND_ASSIGN(std::string text, ViewLog::Read(dir.path(), kJob));
  EXPECT_EQ(text,
            "{\"round\":4,\"kind\":\"released_counts\",\"attribute\":\"\",\"labelled\":true,"
            "\"counts\":[1,0,2]}\n"
            "{\"round\":4,\"kind\":\"released_counts\",\"attribute\":\"\",\"labelled\":true,"
            "\"counts\":[0,0,5]}\n");
}

}  // namespace
}  // namespace fedanon::leader
