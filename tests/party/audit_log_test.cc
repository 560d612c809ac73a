// The party's audit writer (party/audit_log.h): one JSON line per Append, file mode 0600 whatever
// the umask, symbolic links and foreign files refused, strings escaped, job ids validated (the
// readable form `fedanon party audit` prints is tested in tests/cli/party_audit_cli_test.cc).
#include "party/audit_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/audit_entries.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::testing {
namespace {

using party::AuditEntry;
using party::AuditLog;
using ::testing::HasSubstr;

constexpr char kJob[] = "job-0123456789ab";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AuditLog, AppendsOneParsableLinePerEntryInAPrivateFile) {
  TempDir dir;
  const AuditLog log(dir.path() + "/state");  // created on first use
  const mode_t old_umask = ::umask(0);        // a permissive umask must not widen the file
  AuditEntry entry = SumAuditEntry();
  entry.counts.back() = 18446744073709551615ULL;  // every uint64_t survives the round trip
  absl::Status first = log.Append(kJob, entry);
  ::umask(old_umask);
  ASSERT_OK(first);
  ASSERT_OK(log.Append(kJob, {.round = 4, .kind = party::kAuditJobEnd, .form = "plaintext"}));
  const std::string path = dir.path() + "/state/" + kJob + ".audit.jsonl";
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(log.Exists(kJob));
  EXPECT_FALSE(log.Exists("job-000000000000"));

  const std::string text = Slurp(path);
  std::istringstream in(text);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["job"], kJob);
  EXPECT_EQ(lines[0]["round"], 3);
  EXPECT_EQ(lines[0]["kind"], "secure-sum");
  EXPECT_EQ(lines[0]["form"], "masked+sealed");
  EXPECT_EQ(lines[0]["to"], nlohmann::json::array({"hospital-b"}));
  EXPECT_EQ(lines[0]["collect"], 2);
  EXPECT_EQ(lines[0]["purpose"], "statistics");
  EXPECT_EQ(lines[0]["counts"].get<std::vector<uint64_t>>(),
            (std::vector<uint64_t>{5, 0, 18446744073709551615ULL}));
  EXPECT_FALSE(lines[1].contains("counts")) << "counts only where the message carried some";
  EXPECT_EQ(lines[1]["kind"], "job-end");
  ASSERT_OK_AND_ASSIGN(const std::string read, party::ReadAuditFile(dir.path() + "/state", kJob));
  EXPECT_EQ(read, text);
}

TEST(AuditLog, EscapesStrings) {
  TempDir dir;
  const AuditLog log(dir.path());
  const std::string reason = "quote \" backslash \\ newline \n tab \t bell \x07 end";
  ASSERT_OK(log.Append(kJob, {.kind = party::kAuditJobEnd,
                              .form = "plaintext",
                              .to = {"le\"ader"},
                              .texts = {{"reason", reason}, {"ke\"y", "v"}}}));
  const std::string text = Slurp(dir.File(std::string(kJob) + ".audit.jsonl"));
  // One physical line: the newline inside the reason is escaped.
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_THAT(text, HasSubstr(R"(\"ader)"));
  EXPECT_THAT(text, HasSubstr(R"(\n tab \t bell \u0007 end)"));
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["reason"], reason);
  EXPECT_EQ(j["ke\"y"], "v");
  EXPECT_EQ(j["to"][0], "le\"ader");
}

TEST(AuditLog, RefusesASymbolicLinkAndLeavesItsTargetAlone) {
  TempDir dir;
  const std::string target = dir.File("precious.txt");
  std::ofstream(target) << "keep me\n";
  const std::string path = dir.File(std::string(kJob) + ".audit.jsonl");
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
  const AuditLog log(dir.path());
  EXPECT_FALSE(log.Append(kJob, SumAuditEntry()).ok());
  EXPECT_FALSE(log.Exists(kJob));
  EXPECT_EQ(Slurp(target), "keep me\n");
  EXPECT_FALSE(party::ReadAuditFile(dir.path(), kJob).ok()) << "the reader refuses it too";
}

TEST(AuditLog, RefusesAFileOthersCanRead) {
  TempDir dir;
  const std::string path = dir.File(std::string(kJob) + ".audit.jsonl");
  std::ofstream(path) << "{}\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  const AuditLog log(dir.path());
  EXPECT_THAT(log.Append(kJob, SumAuditEntry()),
              StatusIs(absl::StatusCode::kFailedPrecondition, "mode is not 0600"));
  EXPECT_EQ(Slurp(path), "{}\n");
}

TEST(AuditLog, ValidatesTheJobId) {
  TempDir dir;
  const AuditLog log(dir.path());
  for (const char* bad : {"../job-0123456789ab", "job-0123456789ab/x", "", "job-XYZ"}) {
    EXPECT_THAT(log.Append(bad, SumAuditEntry()), StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << bad;
    EXPECT_FALSE(party::ReadAuditFile(dir.path(), bad).ok()) << bad;
  }
  EXPECT_TRUE(dir.List().empty());
}

TEST(AuditLog, DisabledWithoutADirectory) {
  const AuditLog log("");
  EXPECT_FALSE(log.enabled());
  EXPECT_OK(log.Append(kJob, SumAuditEntry()));
  EXPECT_FALSE(log.Exists(kJob));
}

}  // namespace
}  // namespace fedanon::testing
