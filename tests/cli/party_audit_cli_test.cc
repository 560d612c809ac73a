// `fedanon party audit JOB_ID` (cli/party_audit.h) as the privacy officer runs it: the state
// directory found from party.yaml (output_dir, or <data_dir>/output when absent) or given with
// --state-dir; readable lines or the raw JSON lines; clear failures for a job the party never
// took part in, a malformed job id and conflicting flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/party_audit.h"
#include "party/audit_log.h"
#include "tests/support/audit_entries.h"
#include "tests/support/run_binary.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kJob[] = "job-00000000abcd";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class PartyAuditCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const party::AuditLog log(dir_.File("conf/state"));
    ASSERT_OK(log.Append(kJob, {.round = 0,
                                .kind = party::kAuditJobStart,
                                .form = party::kAuditPlaintext,
                                .to = {"leader"},
                                .numbers = {{"records", 200}},
                                .texts = {{"admin", "alice"}, {"ring", "a,b,c"}}}));
    ASSERT_OK(log.Append(kJob, {.round = 2,
                                .kind = party::kAuditSecureSum,
                                .form = party::kAuditMaskedSealed,
                                .to = {"hospital-b"},
                                .numbers = {{"collect", 1}, {"chunk", 0}},
                                .has_counts = true,
                                .counts = {3, 4, 5}}));
    ASSERT_OK(log.Append(kJob, {.round = 7,
                                .kind = party::kAuditJobEnd,
                                .form = party::kAuditPlaintext,
                                .to = {"leader"},
                                .texts = {{"success", "true"}, {"reason", "done"}}}));
    WriteConfig("party.yaml", "output_dir: state\n");
  }
  void WriteConfig(const std::string& name, const std::string& extra) {
    std::filesystem::create_directories(dir_.File("conf"));
    std::ofstream(dir_.File("conf/" + name))
        << "name: hospital-a\nleader: 127.0.0.1:7443\ndata_dir: data\n"
           "tls: {ca: ca.crt, cert: tls.crt, key: tls.key}\n"
           "seal: {cert: seal.crt, key: seal.key}\n"
        << extra;
  }
  TempDir dir_{"party_audit_cli"};
};

TEST_F(PartyAuditCliTest, PrintsOneReadableLinePerEntryFromTheConfiguredStateDir) {
  const CliResult r =
      RunFedanon({"party", "audit", kJob, "--config", dir_.File("conf/party.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], HasSubstr("round 0"));
  EXPECT_THAT(lines[0], HasSubstr("job-start"));
  EXPECT_THAT(lines[0], HasSubstr("admin=alice"));
  EXPECT_THAT(lines[1], HasSubstr("round 2"));
  EXPECT_THAT(lines[1], HasSubstr("secure-sum"));
  EXPECT_THAT(lines[1], HasSubstr("masked+sealed"));
  EXPECT_THAT(lines[1], HasSubstr("to hospital-b"));
  EXPECT_THAT(lines[1], HasSubstr("own counts: 3 words, sum 12"));
  EXPECT_THAT(lines[2], HasSubstr("job-end"));
  EXPECT_THAT(lines[2], HasSubstr("reason=done"));
}

TEST_F(PartyAuditCliTest, JsonPrintsTheRawLines) {
  const CliResult r =
      RunFedanon({"party", "audit", kJob, "--state-dir", dir_.File("conf/state"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(const std::string raw, party::ReadAuditFile(dir_.File("conf/state"), kJob));
  EXPECT_EQ(r.out, raw);
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["counts"], nlohmann::json::array({3, 4, 5}));
}

TEST_F(PartyAuditCliTest, WithoutOutputDirTheStateDirIsDataDirOutput) {
  WriteConfig("bare.yaml", "");
  const party::AuditLog log(dir_.File("conf/data/output"));
  ASSERT_OK(log.Append(kJob, {.round = 1, .kind = party::kAuditProposal, .form = "plaintext"}));
  const CliResult r = RunFedanon({"party", "audit", kJob, "--config", dir_.File("conf/bare.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_THAT(r.out, HasSubstr("proposal"));
}

TEST_F(PartyAuditCliTest, FailsClearly) {
  const std::string state = dir_.File("conf/state");
  const CliResult missing =
      RunFedanon({"party", "audit", "job-ffffffffffff", "--state-dir", state});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no audit file for job-ffffffffffff"));
  const CliResult bad = RunFedanon({"party", "audit", "../etc/passwd", "--state-dir", state});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("job id"));
  const CliResult both = RunFedanon(
      {"party", "audit", kJob, "--state-dir", state, "--config", dir_.File("conf/party.yaml")});
  EXPECT_EQ(both.exit_code, 2);
  const CliResult neither = RunFedanon({"party", "audit", kJob});
  EXPECT_EQ(neither.exit_code, 2);
  const CliResult no_job = RunFedanon({"party", "audit", "--state-dir", state});
  EXPECT_EQ(no_job.exit_code, 2);
}

// The readable form of the audit lines (cli/party_audit.h).
constexpr char kAuditJob[] = "job-0123456789ab";

TEST(AuditLog, ReadableFormHasOneLinePerEntry) {
  const std::string text = party::FormatAuditLine(kAuditJob, 0, SumAuditEntry()) +
                           party::FormatAuditLine(kAuditJob, 0,
                                                  {.round = 9,
                                                   .kind = party::kAuditUnionRows,
                                                   .form = party::kAuditSealed,
                                                   .to = {"hospital-c"},
                                                   .numbers = {{"rows", 300}},
                                                   .texts = {{"rows_sealed_for", "leader"}}});
  ASSERT_OK_AND_ASSIGN(const std::string readable, cli::FormatAuditText(text));
  std::istringstream in(readable);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u) << readable;
  EXPECT_THAT(lines[0], HasSubstr("1970-01-01T00:00:00.000Z"));
  EXPECT_THAT(lines[0], HasSubstr("round 3"));
  EXPECT_THAT(lines[0], HasSubstr("secure-sum"));
  EXPECT_THAT(lines[0], HasSubstr("masked+sealed"));
  EXPECT_THAT(lines[0], HasSubstr("to hospital-b"));
  EXPECT_THAT(lines[0], HasSubstr("collect=2"));
  EXPECT_THAT(lines[0], HasSubstr("own counts: 3 words, sum 12"));
  EXPECT_THAT(lines[1], HasSubstr("union-rows"));
  EXPECT_THAT(lines[1], HasSubstr("rows=300"));
  EXPECT_THAT(lines[1], HasSubstr("rows_sealed_for=leader"));
  EXPECT_THAT(cli::FormatAuditText("{\"round\":1}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "line 1"));
}

}  // namespace
}  // namespace fedanon::testing
