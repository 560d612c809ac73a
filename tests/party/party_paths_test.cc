// The party's prepare step reads only files inside its data directory, never echoes their content
// to the leader, and uses only well-formed job ids; and a hostile stats request cannot make the
// party overflow a size or write out of bounds. The checks look at the reply the leader would see
// (the captured ErrorReply), not at the party's own bookkeeping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "crypto/certificates.h"
#include "party/party_agent.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/job_authorization_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kJobId[] = "job-0123456789ab";

// A private key as an attacker would like to read it (made up, never a real key).
constexpr char kPem[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTOPSECRETTOPSECRET\n"
    "hRANCAAEkm7c3zQ9pS8vVdXfK1fJxG2X8Wb8G5n6r+0mC7QY8q5yD8w6p3f1bJk1\n"
    "-----END PRIVATE KEY-----\n";

constexpr char kTable[] = "age,income\nyoung,a\nold,b\nyoung,b\n";
constexpr char kAgeTaxonomy[] = "young;ANY\nold;ANY\n";

class PartyPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::FreshDir("party_paths");
    data_dir_ = root_ + "/hospital-a";
    testing::WriteText(data_dir_ + "/table.csv", kTable);
    testing::WriteText(data_dir_ + "/age.csv", kAgeTaxonomy);
    testing::WriteText(data_dir_ + "/key-as-taxonomy.csv", kPem);
    testing::WriteText(root_ + "/hospital-b/tls.key", kPem);
    testing::WriteText(root_ + "/outside.csv", kTable);
    auto ca = crypto::CertificateAuthority::Create("test", absl::Hours(1));
    ASSERT_TRUE(ca.ok()) << ca.status();
    auto seal = (*ca)->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
    ASSERT_TRUE(seal.ok()) << seal.status();
    // The other participants a Prepare must announce (the ring of a horizontal job).
    auto seal_b = (*ca)->IssueSeal({crypto::Role::kParty, "hospital-b"}, absl::Hours(1));
    ASSERT_TRUE(seal_b.ok()) << seal_b.status();
    auto seal_leader = (*ca)->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
    ASSERT_TRUE(seal_leader.ok()) << seal_leader.status();
    auto admin = testing::IssueTestAdmin(**ca);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
    participants_ = {{"hospital-a", 0, seal->cert_pem},
                     {"hospital-b", 1, seal_b->cert_pem},
                     {"leader", UINT32_MAX, seal_leader->cert_pem}};
    PartyAgentOptions o;
    o.name = "hospital-a";
    o.data_dir = data_dir_;
    o.default_data_path = "table.csv";
    o.output_dir = data_dir_ + "/output";
    o.ca_pem = (*ca)->cert_pem();
    o.seal_cert_pem = seal->cert_pem;
    o.seal_key_pem = seal->key_pem;
    auto agent = PartyAgent::Create(o);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
  }

  // Sends a prepare request for a job whose `age` taxonomy is `taxonomy` and whose table is
  // `data_path` ("" for the party's default); returns the reply the leader gets.
  fedanon::v1::PartyMessage Prepare(const std::string& taxonomy, const std::string& data_path = "",
                                    const std::string& job_id = kJobId) {
    return agent_->Handle(SignedPrepare(taxonomy, data_path, job_id));
  }

  // The prepare request Prepare sends, signed by an admin for exactly what it names.
  fedanon::v1::LeaderMessage SignedPrepare(const std::string& taxonomy,
                                           const std::string& data_path = "",
                                           const std::string& job_id = kJobId) {
    auto spec = spec::ParseJobSpecYaml(
        "name: t\n"
        "attributes:\n"
        "  - {name: age, role: qid, taxonomy: \"" +
            taxonomy +
            "\"}\n"
            "  - {name: income, role: class, values: [a, b]}\n"
            "privacy: {model: lkc, L: 1, K: 1}\n",
        "spec.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    fedanon::v1::LeaderMessage request;
    request.set_job_id(job_id);
    request.set_request_id(1);
    *request.mutable_prepare()->mutable_spec() = *spec;
    request.mutable_prepare()->set_data_path(data_path);
    for (const Participant& p : participants_) {
      auto* announced = request.mutable_prepare()->add_participants();
      announced->set_name(p.name);
      announced->set_index(p.index);
      announced->set_seal_certificate(p.seal_cert_pem);
      if (p.index != UINT32_MAX) request.mutable_prepare()->add_ring(p.name);
    }
    // An admin authorized this job (as the party would load it where the files are readable).
    EXPECT_TRUE(
        testing::AuthorizePrepare(&request, admin_, testing::TaxonomyTexts(*spec, data_dir_)).ok());
    return request;
  }

  struct Participant {
    std::string name;
    uint32_t index;
    std::string seal_cert_pem;
  };
  std::vector<Participant> participants_;
  wire::AdminSigner admin_;

  std::string root_;
  std::string data_dir_;
  std::unique_ptr<PartyAgent> agent_;
};

TEST_F(PartyPathsTest, FilesInsideTheDataDirectoryAreRead) {
  const fedanon::v1::PartyMessage reply = Prepare("age.csv");
  EXPECT_TRUE(reply.has_prepared()) << reply.error().message();
  EXPECT_TRUE(Prepare(data_dir_ + "/age.csv", "./table.csv", "job-0123456789ac").has_prepared());
}

TEST_F(PartyPathsTest, TaxonomyOutsideTheDataDirectoryIsRefused) {
  for (const std::string& path :
       {std::string("/etc/passwd"), std::string("../hospital-b/tls.key"),
        std::string("sub/../../hospital-b/tls.key"), root_ + "/hospital-b/tls.key"}) {
    const fedanon::v1::PartyMessage reply = Prepare(path);
    ASSERT_TRUE(reply.has_error()) << path;
    EXPECT_EQ(reply.error().code(), static_cast<int>(absl::StatusCode::kPermissionDenied));
    EXPECT_EQ(reply.error().message(),
              "party 'hospital-a': taxonomy of attribute 'age' is outside the party's data "
              "directory");
  }
}

// The admin signed `age.csv`; the leader names another path in the Prepare's spec. Whether that
// path is outside the data directory, missing, or a readable file that is no taxonomy, the party
// gives one refusal before it opens any file, so the leader cannot probe the data directory with
// an authorization it holds (docs/protocol.md, "taxonomy").
TEST_F(PartyPathsTest, ATaxonomyPathTheAdminDidNotSignIsRefusedBeforeAnyFileIsRead) {
  const fedanon::v1::LeaderMessage signed_prepare = SignedPrepare("age.csv");
  for (const std::string path : {"/etc/passwd", "../hospital-b/tls.key", "missing.csv",
                                 "key-as-taxonomy.csv", "table.csv", "./age.csv"}) {
    fedanon::v1::LeaderMessage request = signed_prepare;
    for (auto& a : *request.mutable_prepare()->mutable_spec()->mutable_attributes()) {
      if (a.name() == "age") a.set_taxonomy(path);
    }
    const fedanon::v1::PartyMessage reply = agent_->Handle(request);
    ASSERT_TRUE(reply.has_error()) << path;
    EXPECT_EQ(reply.error().code(), static_cast<int>(absl::StatusCode::kPermissionDenied)) << path;
    EXPECT_EQ(reply.error().message(),
              "job not authorized: the taxonomy path of attribute 'age' differs from the admin's "
              "signed job")
        << path;
  }
  // A taxonomy dropped from the spec (the attribute then needs values) is refused the same way
  // by the signed map; the Prepare the admin signed is accepted.
  fedanon::v1::LeaderMessage dropped = signed_prepare;
  for (auto& a : *dropped.mutable_prepare()->mutable_spec()->mutable_attributes()) {
    if (a.name() == "age") {
      a.clear_taxonomy();
      a.add_values("young");
      a.add_values("old");
    }
  }
  const fedanon::v1::PartyMessage reply = agent_->Handle(dropped);
  ASSERT_TRUE(reply.has_error());
  EXPECT_THAT(
      reply.error().message(),
      HasSubstr("job not authorized: the admin signed a taxonomy path for attribute 'age'"));
  EXPECT_TRUE(agent_->Handle(signed_prepare).has_prepared());
}

TEST_F(PartyPathsTest, SymbolicLinkOutOfTheDataDirectoryIsRefused) {
  fs::create_symlink(root_ + "/hospital-b/tls.key", data_dir_ + "/innocent.csv");
  fs::create_directory_symlink(root_ + "/hospital-b", data_dir_ + "/b");
  for (const std::string path : {"innocent.csv", "b/tls.key"}) {
    const fedanon::v1::PartyMessage reply = Prepare(path);
    ASSERT_TRUE(reply.has_error()) << path;
    EXPECT_THAT(reply.error().message(), HasSubstr("is outside the party's data directory"));
    EXPECT_THAT(reply.error().message(), Not(HasSubstr("BEGIN")));
  }
}

TEST_F(PartyPathsTest, TableOutsideTheDataDirectoryIsRefused) {
  for (const std::string path : {"../outside.csv", "/etc/passwd", "../hospital-b/tls.key"}) {
    const fedanon::v1::PartyMessage reply = Prepare("age.csv", path);
    ASSERT_TRUE(reply.has_error()) << path;
    EXPECT_EQ(reply.error().message(),
              "party 'hospital-a': table '" + path + "' is outside the party's data directory");
  }
}

// A file inside the data directory that is not a taxonomy (here a key): the reply names the
// attribute, the file, the line and the problem, and carries no byte of the file.
TEST_F(PartyPathsTest, TaxonomyContentIsNeverEchoedToTheLeader) {
  const fedanon::v1::PartyMessage reply = Prepare("key-as-taxonomy.csv");
  ASSERT_TRUE(reply.has_error());
  const std::string& message = reply.error().message();
  EXPECT_THAT(message,
              AllOf(HasSubstr("key-as-taxonomy.csv:2"), HasSubstr("taxonomy for attribute 'age'"),
                    HasSubstr("different root than line 1")));
  for (const std::string secret : {"BEGIN", "PRIVATE", "MIGH", "TOPSECRET", "hRAN", "-----"}) {
    EXPECT_THAT(message, Not(HasSubstr(secret)));
  }
}

TEST_F(PartyPathsTest, MalformedJobIdIsRefusedBeforeItCanNameAFile) {
  for (const std::string id : {"../../etc/cron.d/x", "job-0123456789ab/../../x", "", "job-1"}) {
    const fedanon::v1::PartyMessage reply = Prepare("age.csv", "", id);
    ASSERT_TRUE(reply.has_error()) << id;
    EXPECT_THAT(reply.error().message(), HasSubstr("invalid job id"));
  }
}

// Released counts over value columns whose product of sizes overflows 64 bits: the party's
// ValueCombinations() saturates, and a request claiming such a product (or any product beyond the
// bound) gets no counts at all instead of a wrapped-around allocation and an out-of-bounds write.
TEST(ReleasedCountsTest, OverflowingDomainProductIsRefusedNotWrapped) {
  table::Dataset data;
  data.num_records = 1;
  table::QidColumn qid;
  qid.name = "q";
  qid.kind = table::QidKind::kSuppression;
  qid.values = {"x"};
  qid.codes = {0};
  data.qids.push_back(qid);
  data.sensitive_bits = {0};
  for (int c = 0; c < 5; ++c) {  // 10,000^5 = 1e20 > 2^64
    table::Dataset::ValueColumn vc;
    vc.name = "v" + std::to_string(c);
    for (int v = 0; v < 10'000; ++v) vc.values.push_back(std::to_string(v));
    vc.codes = {9'999};
    data.value_columns.push_back(std::move(vc));
  }
  data.all_values_declared = true;
  EXPECT_EQ(data.ValueCombinations(), table::Dataset::kTooManyCombinations);
  std::vector<engine::AttributeHierarchy> hier;
  hier.emplace_back(&data.qids[0]);
  engine::Tips tips(&data, &hier);
  // 1e20 mod 2^64: what an unchecked product would have claimed.
  const uint64_t wrapped = uint64_t{100'000'000'000'000'000} * 1000;
  for (uint64_t claimed : {wrapped, table::Dataset::kTooManyCombinations, uint64_t{1} << 40}) {
    engine::StatsRequest request;
    request.released_groups = {{0}};
    request.released_combinations = claimed;
    std::vector<uint64_t> out;
    engine::AppendLocalStats(tips, request, &out);
    EXPECT_NE(out.size(), engine::StatsLength(hier, 0, 0, request)) << claimed;
    EXPECT_LT(out.size(), 50'000'001u) << claimed;
  }
  // The length a hostile request claims saturates instead of wrapping to a small number.
  engine::StatsRequest huge;
  huge.released_groups = std::vector<std::vector<engine::NodeIndex>>(4, {0});
  huge.released_combinations = uint64_t{1} << 62;
  EXPECT_EQ(engine::StatsLength(hier, 0, 0, huge), SIZE_MAX);
}

}  // namespace
}  // namespace fedanon::party
