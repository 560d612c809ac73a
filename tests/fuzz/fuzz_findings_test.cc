// What the fuzz targets of tests/fuzz found, as named tests of the fixed behaviour (the crashing
// inputs themselves are replayed from tests/fuzz/crashes/ by the fuzz_replay_* tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/wire/federation_wire.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.pb.h"
#include "party/party_agent.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

// fuzz_job_spec: text that is not UTF-8 loaded into proto string fields, and JobSpecToYaml then
// silently dropped the entries holding it (yaml-cpp's emitter stops at invalid UTF-8). Protobuf
// strings must be UTF-8, so the loader now rejects such text where it stands.
TEST(FuzzFindings, JobSpecTextMustBeUtf8) {
  EXPECT_THAT(spec::ParseJobSpecYaml("name: ok\nattributes:\n  - {name: \"a\xff\", role: qid}\n",
                                     "spec.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.yaml:3:12: attributes.name: text is not valid UTF-8"));
  EXPECT_THAT(spec::ParseJobSpecYaml("name: \"\xc3\x28\"\n", "spec.yaml"),
              StatusIs(absl::StatusCode::kInvalidArgument, "spec.yaml:1:7: name: text is not"));
  // Multi-byte UTF-8 is fine, and survives the round trip.
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml("name: \"Gr\xc3\xbc\xc3\x9f \xe2\x82\xac\"\n"
                                              "attributes:\n  - {name: a, role: qid}\n",
                                              "spec.yaml"));
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec again,
                       spec::ParseJobSpecYaml(spec::JobSpecToYaml(spec), "again.yaml"));
  EXPECT_EQ(again.name(), "Gr\xc3\xbc\xc3\x9f \xe2\x82\xac");
}

// fuzz_wire: CsvLine wrote a record of one empty field as a blank line, which CSV readers skip,
// so a joined or integrated table of one column lost the records whose value was empty.
TEST(FuzzFindings, CsvLineOfOneEmptyFieldReadsBack) {
  const std::string csv = table::CsvLine(std::vector<std::string_view>{"a"}) +
                          table::CsvLine(std::vector<std::string_view>{""}) +
                          table::CsvLine(std::vector<std::string_view>{"x"});
  EXPECT_EQ(csv, "a\n\"\"\nx\n");
  ASSERT_OK_AND_ASSIGN(auto reader, table::CsvReader::FromString(csv, "t.csv"));
  std::vector<std::string_view> fields;
  for (const char* expected : {"a", "", "x"}) {
    ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&fields));
    ASSERT_TRUE(more);
    EXPECT_THAT(fields, ::testing::ElementsAre(expected));
  }
  // Two empty fields are not a blank line and stay unquoted.
  EXPECT_EQ(table::CsvLine(std::vector<std::string_view>{"", ""}), ",\n");
}

// fuzz_party_agent: the party took any job id from its leader and, as the recipient, wrote
// <output_dir>/<job id>.csv, so "../../x" or "/x" put a file anywhere it may write. A job id must
// now be a plain name.
class PartyJobIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("fedanon_fuzz_findings_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "table.csv") << "g,cls\nga,yes\ngb,no\n";
    ASSERT_OK_AND_ASSIGN(auto ca, crypto::CertificateAuthority::Create("t", absl::Hours(1)));
    ASSERT_OK_AND_ASSIGN(auto seal, ca->IssueSeal({crypto::Role::kParty, "p"}, absl::Hours(1)));
    party::PartyAgentOptions options;
    options.name = "p";
    options.data_dir = dir_.string();
    options.default_data_path = "table.csv";
    options.output_dir = (dir_ / "output").string();
    options.ca_pem = ca->cert_pem();
    options.seal_cert_pem = seal.cert_pem;
    options.seal_key_pem = seal.key_pem;
    ASSERT_OK_AND_ASSIGN(agent_, party::PartyAgent::Create(options));
    ASSERT_OK_AND_ASSIGN(spec_,
                         spec::ParseJobSpecYaml("attributes:\n"
                                                "  - {name: g, role: qid, values: [ga, gb]}\n"
                                                "  - {name: cls, role: class, values: [yes, no]}\n"
                                                "partitioning: horizontal\n"
                                                "privacy: {model: lkc, L: 1, K: 1}\n",
                                                "spec.yaml"));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  fedanon::v1::PartyMessage Prepare(const std::string& job_id) {
    fedanon::v1::LeaderMessage msg;
    msg.set_request_id(7);
    msg.set_job_id(job_id);
    *msg.mutable_prepare()->mutable_spec() = spec_;
    return agent_->Handle(msg);
  }

  std::filesystem::path dir_;
  std::unique_ptr<party::PartyAgent> agent_;
  fedanon::v1::JobSpec spec_;
};

TEST_F(PartyJobIdTest, PassesTheJobIdCheckWithTheLeadersForm) {
  // This Prepare carries no admin authorization, so it fails later; the job id itself must pass.
  const fedanon::v1::PartyMessage reply = Prepare("job-0123456789ab");
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().message().find("invalid job id"), std::string::npos)
      << reply.error().message();
  EXPECT_NE(reply.error().message().find("job not authorized"), std::string::npos)
      << reply.error().message();
}

TEST_F(PartyJobIdTest, RefusesIdsThatAreNotPlainNames) {
  const std::vector<std::string> ids = {"../../../tmp/escape",
                                        "/tmp/escape",
                                        "a/b",
                                        "",
                                        ".",
                                        "..",
                                        ".hidden",
                                        std::string("nul\0byte", 8),
                                        "sp ace",
                                        "job-1",
                                        "Job_2.retry",
                                        "job-0123456789AB",
                                        std::string(129, 'j')};
  for (const std::string& id : ids) {
    const fedanon::v1::PartyMessage reply = Prepare(id);
    ASSERT_TRUE(reply.has_error()) << id;
    EXPECT_EQ(reply.request_id(), 7u);
    EXPECT_EQ(reply.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument)) << id;
    EXPECT_NE(reply.error().message().find("invalid job id"), std::string::npos)
        << reply.error().message();
  }
}

}  // namespace
}  // namespace fedanon::testing
