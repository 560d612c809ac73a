#include "server/runtime/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/file_io.h"
#include "server/runtime/logging.h"
#include "server/runtime/tls.h"
#include "tests/server/test_pki.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fedanon_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "conf");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const fs::path path = dir_ / "conf" / name;
    std::ofstream(path) << content;
    return path.string();
  }

  fs::path dir_;
};

constexpr char kLeaderYaml[] = R"(name: leader
listen: 0.0.0.0:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: /etc/fedanon/seal.key}
round_timeout_seconds: 90
log_format: json
)";

TEST_F(ConfigTest, LeaderConfigParsesAndResolvesPathsAgainstTheFileDirectory) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig c, LoadLeaderConfig(Write("leader.yaml", kLeaderYaml)));
  const std::string conf = (dir_ / "conf").string();
  EXPECT_EQ(c.name, "leader");
  EXPECT_EQ(c.listen, "0.0.0.0:7443");
  EXPECT_EQ(c.data_dir, conf + "/data");
  EXPECT_EQ(c.tls.ca, conf + "/ca.crt");
  EXPECT_EQ(c.tls.cert, conf + "/tls.crt");
  EXPECT_EQ(c.tls.key, conf + "/tls.key");
  EXPECT_EQ(c.seal.cert, conf + "/seal.crt");
  EXPECT_EQ(c.seal.key, "/etc/fedanon/seal.key");
  EXPECT_EQ(c.round_timeout_seconds, 90);
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  EXPECT_EQ(c.path, conf + "/leader.yaml");
}

TEST_F(ConfigTest, RelativeConfigPathIsMadeAbsolute) {
  Write("leader.yaml", kLeaderYaml);
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  auto c = LoadLeaderConfig("conf/leader.yaml");
  fs::current_path(cwd);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data_dir, (dir_ / "conf" / "data").string());
}

TEST_F(ConfigTest, LeaderDefaults) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig c, LoadLeaderConfig(Write("leader.yaml", R"(name: leader
listen: 127.0.0.1:0
data_dir: ../d
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)")));
  EXPECT_EQ(c.round_timeout_seconds, 60);
  EXPECT_EQ(c.log_format, LogFormat::kText);
  EXPECT_EQ(c.data_dir, (dir_ / "d").string());
  EXPECT_TRUE(c.all_jobs_admins.empty());  // every admin acts on its own jobs only
  ASSERT_OK_AND_ASSIGN(const LeaderConfig all,
                       LoadLeaderConfig(Write("leader2.yaml", std::string(kLeaderYaml) +
                                                                  "all_jobs_admins: [carol]\n")));
  EXPECT_EQ(all.all_jobs_admins, std::vector<std::string>{"carol"});
  EXPECT_EQ(c.max_concurrent_jobs, 4);
  EXPECT_EQ(c.max_queued_jobs, 64);
}

TEST_F(ConfigTest, JobLimitsAreBounded) {
  ASSERT_OK_AND_ASSIGN(
      const LeaderConfig c,
      LoadLeaderConfig(Write("leader.yaml", std::string(kLeaderYaml) +
                                                "max_concurrent_jobs: 8\nmax_queued_jobs: 0\n")));
  EXPECT_EQ(c.max_concurrent_jobs, 8);
  EXPECT_EQ(c.max_queued_jobs, 0);  // no queue: a submission beyond 8 running jobs is refused
  EXPECT_THAT(
      LoadLeaderConfig(Write("a.yaml", std::string(kLeaderYaml) + "max_concurrent_jobs: 0\n")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "a.yaml:8:22: key 'max_concurrent_jobs' must be a whole number in 1..64, "
               "not '0'"));
  EXPECT_THAT(
      LoadLeaderConfig(Write("b.yaml", std::string(kLeaderYaml) + "max_concurrent_jobs: 65\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, "in 1..64, not '65'"));
  EXPECT_THAT(
      LoadLeaderConfig(Write("c.yaml", std::string(kLeaderYaml) + "max_queued_jobs: many\n")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "c.yaml:8:18: key 'max_queued_jobs' must be a whole number in 0..100000"));
}

TEST_F(ConfigTest, IdBatchIdsIsBoundedAndZeroMeansWholeLists) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig d,
                       LoadLeaderConfig(Write("leader.yaml", std::string(kLeaderYaml))));
  EXPECT_EQ(d.id_batch_ids, 65536);
  ASSERT_OK_AND_ASSIGN(
      const LeaderConfig c,
      LoadLeaderConfig(Write("leader2.yaml", std::string(kLeaderYaml) + "id_batch_ids: 4096\n")));
  EXPECT_EQ(c.id_batch_ids, 4096);
  ASSERT_OK_AND_ASSIGN(
      const LeaderConfig whole,
      LoadLeaderConfig(Write("leader3.yaml", std::string(kLeaderYaml) + "id_batch_ids: 0\n")));
  EXPECT_EQ(whole.id_batch_ids, 0);
  EXPECT_THAT(
      LoadLeaderConfig(Write("a.yaml", std::string(kLeaderYaml) + "id_batch_ids: 16777217\n")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "a.yaml:8:15: key 'id_batch_ids' must be a whole number in 0..16777216, not "
               "'16777217'"));
  EXPECT_THAT(LoadLeaderConfig(Write("b.yaml", std::string(kLeaderYaml) + "id_batch_ids: -1\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "in 0..16777216, not '-1'"));
}

TEST_F(ConfigTest, MaxResumesIsBounded) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig d,
                       LoadLeaderConfig(Write("leader.yaml", std::string(kLeaderYaml))));
  EXPECT_EQ(d.max_resumes, 5);
  ASSERT_OK_AND_ASSIGN(
      const LeaderConfig c,
      LoadLeaderConfig(Write("leader2.yaml", std::string(kLeaderYaml) + "max_resumes: 0\n")));
  EXPECT_EQ(c.max_resumes, 0);
  EXPECT_THAT(LoadLeaderConfig(Write("a.yaml", std::string(kLeaderYaml) + "max_resumes: 1001\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a.yaml:8:14: key 'max_resumes' must be a whole number in 0..1000"));
}

TEST_F(ConfigTest, PartyWaitIsBoundedAndMayBeZero) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig d,
                       LoadLeaderConfig(Write("leader.yaml", std::string(kLeaderYaml))));
  EXPECT_EQ(d.party_wait_seconds, 60);
  ASSERT_OK_AND_ASSIGN(const LeaderConfig c,
                       LoadLeaderConfig(Write(
                           "leader2.yaml", std::string(kLeaderYaml) + "party_wait_seconds: 0\n")));
  EXPECT_EQ(c.party_wait_seconds, 0);
  EXPECT_THAT(
      LoadLeaderConfig(Write("a.yaml", std::string(kLeaderYaml) + "party_wait_seconds: 86401\n")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "a.yaml:8:21: key 'party_wait_seconds' must be a whole number in 0..86400"));
}

TEST_F(ConfigTest, MessageLimitIsBoundedByTheSmallestChunkAndTheTransport) {
  ASSERT_OK_AND_ASSIGN(const LeaderConfig d,
                       LoadLeaderConfig(Write("leader.yaml", std::string(kLeaderYaml))));
  EXPECT_EQ(d.max_message_bytes, 64 << 20);
  ASSERT_OK_AND_ASSIGN(const LeaderConfig c,
                       LoadLeaderConfig(Write("leader2.yaml", std::string(kLeaderYaml) +
                                                                  "max_message_bytes: 4096\n")));
  EXPECT_EQ(c.max_message_bytes, 4096);
  EXPECT_THAT(
      LoadLeaderConfig(Write("a.yaml", std::string(kLeaderYaml) + "max_message_bytes: 4095\n")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "a.yaml:8:20: key 'max_message_bytes' must be a whole number in 4096..67108864"));
  EXPECT_THAT(
      LoadLeaderConfig(Write("b.yaml", std::string(kLeaderYaml) + "max_message_bytes: 67108865\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, "in 4096..67108864"));
}

TEST_F(ConfigTest, PartyConfigParses) {
  ASSERT_OK_AND_ASSIGN(const PartyConfig c, LoadPartyConfig(Write("party.yaml", R"(
name: hospital-a
leader: 127.0.0.1:7443
data_dir: data
data: table.csv
output_dir: output
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)")));
  const std::string conf = (dir_ / "conf").string();
  EXPECT_EQ(c.name, "hospital-a");
  EXPECT_EQ(c.leader, "127.0.0.1:7443");
  EXPECT_EQ(c.data_dir, conf + "/data");
  EXPECT_EQ(c.data, "table.csv");  // relative to data_dir, resolved by the party agent
  EXPECT_EQ(c.output_dir, conf + "/output");
  EXPECT_EQ(c.seal.key, conf + "/seal.key");
  EXPECT_EQ(c.sign.cert, "");  // no `sign:`: horizontal jobs only (the daemon warns)
}

// `sign: {cert, key}`, the statement-signing pair: both paths resolved like `seal:`'s, both keys
// required inside it, nothing else allowed.
TEST_F(ConfigTest, PartySignPairIsOptionalAndCheckedLikeTheSealPair) {
  const std::string base = R"(name: hospital-a
leader: 127.0.0.1:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)";
  ASSERT_OK_AND_ASSIGN(
      const PartyConfig c,
      LoadPartyConfig(Write("p.yaml", base + "sign: {cert: sign.crt, key: sign.key}\n")));
  const std::string conf = (dir_ / "conf").string();
  EXPECT_EQ(c.sign.cert, conf + "/sign.crt");
  EXPECT_EQ(c.sign.key, conf + "/sign.key");
  EXPECT_THAT(LoadPartyConfig(Write("q.yaml", base + "sign: {cert: sign.crt}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing required key 'sign.key'"));
  EXPECT_THAT(LoadPartyConfig(Write("r.yaml", base + "sign: {cert: a, key: b, seal: c}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'sign.seal'"));
  EXPECT_THAT(LoadPartyConfig(Write("s.yaml", base + "sign: sign.crt\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "key 'sign' must be a mapping"));
}

TEST_F(ConfigTest, PartyDataAndOutputAreOptional) {
  ASSERT_OK_AND_ASSIGN(const PartyConfig c, LoadPartyConfig(Write("party.yaml", R"(
name: hospital-a
leader: "[::1]:7443"
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)")));
  EXPECT_EQ(c.data, "");
  EXPECT_EQ(c.output_dir, "");
  EXPECT_EQ(c.leader, "[::1]:7443");
}

TEST_F(ConfigTest, AdminConfigParsesAndRejectsSeal) {
  const std::string good = R"(name: alice
leader: 127.0.0.1:7443
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
)";
  ASSERT_OK_AND_ASSIGN(const AdminConfig c, LoadAdminConfig(Write("admin.yaml", good)));
  EXPECT_EQ(c.name, "alice");
  EXPECT_EQ(c.tls.cert, (dir_ / "conf" / "tls.crt").string());
  EXPECT_THAT(LoadAdminConfig(Write("admin2.yaml", good + "seal: {cert: a, key: b}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "admin2.yaml:4:1: unknown key 'seal'"));
}

TEST_F(ConfigTest, UnknownKeyNamesFileLineAndColumn) {
  const std::string path = Write("party.yaml", R"(name: hospital-a
leader: 127.0.0.1:7443
dta_dir: data
)");
  auto c = LoadPartyConfig(path);
  EXPECT_THAT(c,
              StatusIs(absl::StatusCode::kInvalidArgument, path + ":3:1: unknown key 'dta_dir'"));
}

TEST_F(ConfigTest, UnknownNestedKeyNamesItsPath) {
  const std::string path = Write("leader.yaml", R"(name: leader
listen: 0.0.0.0:7443
data_dir: data
tls:
  ca: ca.crt
  cert: tls.crt
  key: tls.key
  pasword: x
seal: {cert: seal.crt, key: seal.key}
)");
  EXPECT_THAT(LoadLeaderConfig(path),
              StatusIs(absl::StatusCode::kInvalidArgument, ":8:3: unknown key 'tls.pasword'"));
}

TEST_F(ConfigTest, MissingKeysAndBadValues) {
  EXPECT_THAT(LoadLeaderConfig(Write("a.yaml", "name: leader\nlisten: 0.0.0.0:1\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing required key 'data_dir'"));
  EXPECT_THAT(LoadLeaderConfig(Write("b.yaml", R"(name: leader
listen: 0.0.0.0:1
data_dir: d
tls: {ca: ca.crt, cert: tls.crt}
seal: {cert: seal.crt, key: seal.key}
)")),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing required key 'tls.key'"));
  EXPECT_THAT(LoadLeaderConfig(Write("c.yaml", R"(name: leader
listen: 7443
data_dir: d
tls: {ca: ca.crt, cert: tls.crt, key: k}
seal: {cert: seal.crt, key: seal.key}
)")),
              StatusIs(absl::StatusCode::kInvalidArgument, "c.yaml:2:9: key 'listen'"));
  EXPECT_THAT(
      LoadLeaderConfig(Write("d.yaml", R"(name: leader
listen: 0.0.0.0:1
data_dir: d
tls: {ca: ca.crt, cert: tls.crt, key: k}
seal: {cert: seal.crt, key: seal.key}
round_timeout_seconds: soon
)")),
      StatusIs(absl::StatusCode::kInvalidArgument, "d.yaml:6:24: key 'round_timeout_seconds'"));
  EXPECT_THAT(LoadAdminConfig(Write("e.yaml", R"(name: alice
leader: h:1
tls: {ca: a, cert: b, key: c}
log_format: xml
)")),
              StatusIs(absl::StatusCode::kInvalidArgument, "e.yaml:4:13: key 'log_format'"));
  EXPECT_THAT(LoadAdminConfig(Write("f.yaml", R"(name: "bad name"
leader: h:1
tls: {ca: a, cert: b, key: c}
)")),
              StatusIs(absl::StatusCode::kInvalidArgument, "f.yaml:1:7: key 'name'"));
}

TEST_F(ConfigTest, SyntaxErrorAndMissingFile) {
  EXPECT_THAT(LoadAdminConfig(Write("bad.yaml", "name: [unclosed\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "YAML syntax error"));
  EXPECT_THAT(LoadAdminConfig((dir_ / "nope.yaml").string()),
              StatusIs(absl::StatusCode::kNotFound, "cannot read config file"));
  EXPECT_THAT(LoadAdminConfig(Write("list.yaml", "- a\n- b\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "expected a mapping"));
}

// Issue 26 §3: a daemon config is read with a size bound — a config file padded past 1 MiB, or
// /dev/zero named as the config, fails fast with an error naming the limit, not by exhausting
// memory.
TEST_F(ConfigTest, OversizedConfigIsRefusedWithAClearError) {
  const std::string padded = std::string(kLeaderYaml) + "# " +
                             std::string(static_cast<size_t>(base::kMaxConfigBytes), 'x') + "\n";
  EXPECT_THAT(LoadLeaderConfig(Write("leader.yaml", padded)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "is larger than the limit of 1048576 bytes for a config file"));
  EXPECT_THAT(LoadPartyConfig(Write("party.yaml", padded)),
              StatusIs(absl::StatusCode::kInvalidArgument, "config file"));
  if (fs::exists("/dev/zero")) {
    EXPECT_THAT(LoadPartyConfig("/dev/zero"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "'/dev/zero' is larger than the limit of 1048576 bytes"));
  }
  // The same config without the padding loads.
  ASSERT_OK(LoadLeaderConfig(Write("leader2.yaml", kLeaderYaml)).status());
}

// The TLS material a config names: read with messages that name the file, and checked at startup
// (chain, identity, key) by crypto/certificates.h.
TEST_F(ConfigTest, TlsMaterialIsReadAndChecked) {
  const testing::TestPki pki("tls-test");
  const TlsMaterial party = pki.Party("hospital-a");
  TlsPaths paths{Write("ca.crt", party.ca_pem), Write("tls.crt", party.cert_pem),
                 Write("tls.key", party.key_pem)};
  // A private key must be private to its owner (see LooseKeyModesAreRefused).
  fs::permissions(paths.key, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_OK_AND_ASSIGN(const TlsMaterial tls, LoadTlsMaterial(paths));
  EXPECT_EQ(tls.key_pem, party.key_pem);
  const crypto::Identity identity{crypto::Role::kParty, "hospital-a"};
  EXPECT_OK(CheckOwnCertificate(tls, identity));
  EXPECT_THAT(CheckOwnCertificate(tls, {crypto::Role::kParty, "hospital-b"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "our TLS certificate is for party/hospital-a, but the config says "
                       "party/hospital-b"));

  TlsMaterial foreign_key = tls;
  foreign_key.key_pem = pki.Party("hospital-a").key_pem;
  EXPECT_THAT(CheckOwnCertificate(foreign_key, identity),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "our TLS key does not belong to our TLS certificate"));
  TlsMaterial garbled_key = tls;
  garbled_key.key_pem = "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n";
  EXPECT_THAT(CheckOwnCertificate(garbled_key, identity),
              StatusIs(absl::StatusCode::kInvalidArgument, "our TLS key"));
  TlsMaterial other_ca = tls;
  other_ca.ca_pem = testing::TestPki("other").ca_pem();
  EXPECT_THAT(CheckOwnCertificate(other_ca, identity),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "our TLS certificate does not verify against the CA"));

  paths.cert = (dir_ / "conf" / "missing.crt").string();
  EXPECT_THAT(LoadTlsMaterial(paths),
              StatusIs(absl::StatusCode::kNotFound, "cannot read TLS certificate '" + paths.cert +
                                                        "': No such file or directory"));
  paths.cert = Write("not.crt", "hello\n");
  EXPECT_THAT(LoadTlsMaterial(paths),
              StatusIs(absl::StatusCode::kInvalidArgument, "TLS certificate '" + paths.cert +
                                                               "' is not a PEM file holding a "
                                                               "CERTIFICATE"));
}

// A key that group or others may read is refused with a message that says how to fix it; the
// same file with mode 0600 (or 0400) is accepted.
TEST_F(ConfigTest, LooseKeyModesAreRefused) {
  const testing::TestPki pki("tls-test");
  const TlsMaterial party = pki.Party("hospital-a");
  TlsPaths paths{Write("ca.crt", party.ca_pem), Write("tls.crt", party.cert_pem),
                 Write("tls.key", party.key_pem)};
  for (const fs::perms loose : {fs::perms::group_read, fs::perms::others_read}) {
    fs::permissions(paths.key, fs::perms::owner_read | fs::perms::owner_write | loose);
    EXPECT_THAT(LoadTlsMaterial(paths),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "TLS key '" + paths.key + "' is readable by group or others"));
    EXPECT_THAT(ReadPrivateKeyFile(paths.key, "seal key"),
                StatusIs(absl::StatusCode::kPermissionDenied, "chmod 600 '" + paths.key + "'"));
  }
  fs::permissions(paths.key, fs::perms::owner_read);
  EXPECT_OK(LoadTlsMaterial(paths).status());
  // Certificates are public: their mode does not matter.
  fs::permissions(paths.cert, fs::perms::all);
  EXPECT_OK(LoadTlsMaterial(paths).status());
}

TEST_F(ConfigTest, PartyMaxInputBytes) {
  const std::string base =
      "name: hospital-a\nleader: 127.0.0.1:7443\ndata_dir: data\n"
      "tls: {ca: ca.crt, cert: tls.crt, key: tls.key}\nseal: {cert: seal.crt, key: seal.key}\n";
  ASSERT_OK_AND_ASSIGN(const PartyConfig defaults, LoadPartyConfig(Write("p.yaml", base)));
  EXPECT_EQ(defaults.max_input_bytes, uint64_t{64} << 30);
  ASSERT_OK_AND_ASSIGN(const PartyConfig set,
                       LoadPartyConfig(Write("p.yaml", base + "max_input_bytes: 1000000\n")));
  EXPECT_EQ(set.max_input_bytes, 1000000u);
  for (const std::string bad : {"0", "-5", "lots", "0x10"}) {
    EXPECT_THAT(LoadPartyConfig(Write("p.yaml", base + "max_input_bytes: " + bad + "\n")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "key 'max_input_bytes' must be a positive whole number of bytes"))
        << bad;
  }
}

TEST_F(ConfigTest, PartyAdminsAndPolicy) {
  const std::string base =
      "name: hospital-a\nleader: 127.0.0.1:7443\ndata_dir: data\n"
      "tls: {ca: ca.crt, cert: tls.crt, key: tls.key}\nseal: {cert: seal.crt, key: seal.key}\n";
  // Absent: every admin of the CA, no policy.
  ASSERT_OK_AND_ASSIGN(const PartyConfig open, LoadPartyConfig(Write("p.yaml", base)));
  EXPECT_FALSE(open.admins.has_value());
  EXPECT_TRUE(open.policy.empty());
  ASSERT_OK_AND_ASSIGN(
      const PartyConfig c,
      LoadPartyConfig(Write("p.yaml", base + "admins: [alice, bob]\n"
                                             "policy:\n"
                                             "  min_k: 10\n"
                                             "  min_l: 2\n"
                                             "  max_c: 0.8\n"
                                             "  qid_attributes: [age, zip]\n"
                                             "  released_attributes: [age, zip, disease]\n"
                                             "  recipients: [hospital-a]\n"
                                             "  max_releases: 3\n")));
  EXPECT_EQ(c.admins, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(c.policy.min_k, 10u);
  EXPECT_EQ(c.policy.min_l, 2u);
  EXPECT_EQ(c.policy.max_c, 0.8);
  EXPECT_EQ(c.policy.qid_attributes, (std::vector<std::string>{"age", "zip"}));
  EXPECT_EQ(c.policy.released_attributes, (std::vector<std::string>{"age", "zip", "disease"}));
  EXPECT_EQ(c.policy.recipients, (std::vector<std::string>{"hospital-a"}));
  EXPECT_EQ(c.policy.max_releases, 3u);
  // An empty list is a list: nobody / nothing.
  ASSERT_OK_AND_ASSIGN(const PartyConfig none,
                       LoadPartyConfig(Write("p.yaml", base + "admins: []\n")));
  ASSERT_TRUE(none.admins.has_value());
  EXPECT_TRUE(none.admins->empty());
  EXPECT_THAT(LoadPartyConfig(Write("p.yaml", base + "policy: {min_k: 0}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "key 'policy.min_k' must be a whole"));
  EXPECT_THAT(LoadPartyConfig(Write("p.yaml", base + "policy: {max_c: 1.5}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "key 'policy.max_c' must be a number"));
  EXPECT_THAT(LoadPartyConfig(Write("p.yaml", base + "policy: {min_K: 5}\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'policy.min_K'"));
  EXPECT_THAT(LoadPartyConfig(Write("p.yaml", base + "admins: alice\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, "key 'admins' must be a list"));
}

TEST(HostPortTest, Validates) {
  EXPECT_TRUE(ValidateHostPort("127.0.0.1:7443", "x").ok());
  EXPECT_TRUE(ValidateHostPort("leader.example.org:0", "x").ok());
  EXPECT_TRUE(ValidateHostPort("[::]:7443", "x").ok());
  EXPECT_FALSE(ValidateHostPort("7443", "x").ok());
  EXPECT_FALSE(ValidateHostPort(":7443", "x").ok());
  EXPECT_FALSE(ValidateHostPort("h:70000", "x").ok());
  EXPECT_FALSE(ValidateHostPort("::1:7443", "x").ok());
  EXPECT_FALSE(ValidateHostPort("h:port", "x").ok());
}

TEST(LoggingTest, JsonLineEscapes) {
  EXPECT_EQ(
      FormatJsonLogLine("2024-01-01T00:00:00.000Z", "info", "fedanon-leader",
                        "job=j round=2 \"quoted\"\n\x01"),
      "{\"ts\":\"2024-01-01T00:00:00.000Z\",\"level\":\"info\",\"program\":\"fedanon-leader\","
      "\"role\":\"leader\",\"job\":\"j\",\"round\":2,"
      "\"msg\":\"job=j round=2 \\\"quoted\\\"\\n\\u0001\"}");
  EXPECT_EQ(FormatJsonLogLine("t", "info", "fedanon-party", "job=job-0123456789ab prepared"),
            "{\"ts\":\"t\",\"level\":\"info\",\"program\":\"fedanon-party\",\"role\":\"party\","
            "\"job\":\"job-0123456789ab\",\"msg\":\"job=job-0123456789ab prepared\"}");
  EXPECT_EQ(FormatJsonLogLine("t", "info", "fedanon-leader", "job=\"x\" round=1 odd"),
            "{\"ts\":\"t\",\"level\":\"info\",\"program\":\"fedanon-leader\",\"role\":\"leader\","
            "\"msg\":\"job=\\\"x\\\" round=1 odd\"}");
  EXPECT_EQ(ParseJobPrefix("job=job-1 round=12 x").round, 12u);
  EXPECT_FALSE(ParseJobPrefix("job=job-1 round=x").round.has_value());
  EXPECT_EQ(ParseJobPrefix("party 'a' connected").job_id, "");
  EXPECT_EQ(LogJob("job-abc", 7), "job=job-abc round=7");
  EXPECT_THAT(ParseLogFormat("xml"), StatusIs(absl::StatusCode::kInvalidArgument, "'xml'"));
}

}  // namespace
}  // namespace fedanon::server
