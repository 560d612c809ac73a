#include "app/provision.h"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "crypto/signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/runtime/config.h"
#include "tests/support/status_matchers.h"

namespace fedanon::server {
namespace {

namespace fs = std::filesystem;
using crypto::Identity;
using crypto::Role;
using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

constexpr char kFederationYaml[] = R"(federation: hospitals            # name
leader: {name: leader, address: leader.example.org:7443, hosts: [leader.example.org, 127.0.0.1]}
parties: [hospital-a, hospital-b, hospital-c]
admins: [alice]
validity_days: 365               # optional, default 365
)";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

mode_t ModeOf(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::set<std::string> Entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::set<std::string> KeysOf(const YAML::Node& map) {
  std::set<std::string> out;
  for (const auto& kv : map) out.insert(kv.first.as<std::string>());
  return out;
}

class ProvisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "provision_test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    tmp_ = pattern;
    yaml_ = tmp_ / "federation.yaml";
    WriteFile(yaml_, kFederationYaml);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  absl::StatusOr<std::string> ProvisionText(const std::string& text, const std::string& out) {
    const fs::path path = tmp_ / "in.yaml";
    fs::remove(path);
    WriteFile(path, text);
    return app::Provision(path.string(), (tmp_ / out).string());
  }

  fs::path tmp_;
  fs::path yaml_;
};

TEST_F(ProvisionTest, WritesAVerifiableKit) {
  const fs::path out = tmp_ / "kit";
  ASSERT_OK_AND_ASSIGN(const std::string summary, app::Provision(yaml_.string(), out.string()));
  EXPECT_THAT(summary, HasSubstr("hospitals"));
  EXPECT_THAT(summary, HasSubstr("hospital-b/"));
  EXPECT_THAT(summary, HasSubstr("README.txt"));

  EXPECT_EQ(ModeOf(out), 0700u);
  EXPECT_EQ(Entries(out), (std::set<std::string>{"README.txt", "ca", "leader", "hospital-a",
                                                 "hospital-b", "hospital-c", "alice"}));
  EXPECT_EQ(Entries(out / "ca"), (std::set<std::string>{"ca.crt", "ca.key"}));
  EXPECT_EQ(ModeOf(out / "ca" / "ca.key"), 0600u);
  EXPECT_EQ(ModeOf(out / "ca"), 0700u);
  const std::string ca_pem = ReadFile(out / "ca" / "ca.crt");
  ASSERT_OK_AND_ASSIGN(auto ca,
                       crypto::CertificateAuthority::Load(ca_pem, ReadFile(out / "ca" / "ca.key")));

  const std::string readme = ReadFile(out / "README.txt");
  EXPECT_THAT(readme, HasSubstr("offline"));
  for (const char* name : {"leader", "hospital-a", "hospital-b", "hospital-c", "alice"}) {
    EXPECT_THAT(readme, HasSubstr(std::string(name) + "/")) << name;
  }
  // No private key ever appears in the summary or README.
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("PRIVATE KEY")));
  EXPECT_THAT(readme, ::testing::Not(HasSubstr("PRIVATE KEY")));

  const std::map<std::string, std::pair<Role, std::string>> bundles = {
      {"leader", {Role::kLeader, "leader.yaml"}},   {"hospital-a", {Role::kParty, "party.yaml"}},
      {"hospital-b", {Role::kParty, "party.yaml"}}, {"hospital-c", {Role::kParty, "party.yaml"}},
      {"alice", {Role::kAdmin, "admin.yaml"}},
  };
  for (const auto& [name, role_config] : bundles) {
    SCOPED_TRACE(name);
    const auto& [role, config] = role_config;
    const fs::path dir = out / name;
    EXPECT_EQ(ModeOf(dir), 0700u);
    std::set<std::string> files = {"ca.crt", "tls.crt", "tls.key", "seal.crt", "seal.key", config};
    if (role == Role::kParty) files.insert({"sign.crt", "sign.key"});
    EXPECT_EQ(Entries(dir), files);
    EXPECT_EQ(ModeOf(dir / "tls.key"), 0600u);
    EXPECT_EQ(ModeOf(dir / "seal.key"), 0600u);
    EXPECT_EQ(ReadFile(dir / "ca.crt"), ca_pem);

    const Identity who{.role = role, .name = name};
    ASSERT_OK_AND_ASSIGN(Identity tls_id,
                         crypto::VerifiedTlsIdentity(ReadFile(dir / "tls.crt"), ca_pem));
    EXPECT_EQ(tls_id, who);
    // The sealing certificate verifies, and its key opens what is sealed to it.
    ASSERT_OK_AND_ASSIGN(auto pub,
                         crypto::VerifiedSealKey(ReadFile(dir / "seal.crt"), ca_pem, who));
    ASSERT_OK_AND_ASSIGN(auto pair, crypto::SealKeyPairFromPem(ReadFile(dir / "seal.key")));
    const crypto::SealContext ctx{
        .job_id = "j", .run_id = "r", .round = 1, .sender = "x", .receiver = name, .purpose = "t"};
    ASSERT_OK_AND_ASSIGN(const std::string box, crypto::Seal(*pub, ctx, "hello"));
    ASSERT_OK_AND_ASSIGN(const std::string opened, crypto::Open(*pair, ctx, box));
    EXPECT_EQ(opened, "hello");
    if (role == Role::kParty) {
      // A party's statement-signing certificate verifies as one (and its key signs for it).
      EXPECT_EQ(ModeOf(dir / "sign.key"), 0600u);
      ASSERT_OK_AND_ASSIGN(auto sign_pub,
                           crypto::VerifiedStatementKey(ReadFile(dir / "sign.crt"), ca_pem, who));
      ASSERT_OK_AND_ASSIGN(const std::string sig,
                           crypto::SignStatement(ReadFile(dir / "sign.key"), "statement"));
      EXPECT_OK(crypto::VerifyStatement(*sign_pub, "statement", sig));
    }
    // The TLS key file holds a PKCS#8 key.
    EXPECT_THAT(ReadFile(dir / "tls.key"), ::testing::StartsWith("-----BEGIN PRIVATE KEY-----"));

    const YAML::Node cfg = YAML::LoadFile((dir / config).string());
    EXPECT_EQ(cfg["name"].as<std::string>(), name);
    const YAML::Node tls = cfg["tls"];
    EXPECT_EQ(tls["ca"].as<std::string>(), "ca.crt");
    EXPECT_EQ(tls["cert"].as<std::string>(), "tls.crt");
    EXPECT_EQ(tls["key"].as<std::string>(), "tls.key");
    EXPECT_EQ(KeysOf(tls), (std::set<std::string>{"ca", "cert", "key"}));
    if (role == Role::kLeader) {
      EXPECT_EQ(KeysOf(cfg), (std::set<std::string>{"name", "listen", "data_dir", "tls", "seal",
                                                    "round_timeout_seconds"}));
      EXPECT_EQ(cfg["listen"].as<std::string>(), "0.0.0.0:7443");
      EXPECT_EQ(cfg["data_dir"].as<std::string>(), "data");
      EXPECT_EQ(cfg["round_timeout_seconds"].as<int>(), 60);
    } else if (role == Role::kParty) {
      EXPECT_EQ(KeysOf(cfg), (std::set<std::string>{"name", "leader", "data_dir", "data",
                                                    "output_dir", "tls", "seal", "sign"}));
      EXPECT_EQ(cfg["sign"]["cert"].as<std::string>(), "sign.crt");
      EXPECT_EQ(cfg["sign"]["key"].as<std::string>(), "sign.key");
      EXPECT_EQ(cfg["leader"].as<std::string>(), "leader.example.org:7443");
      EXPECT_EQ(cfg["data_dir"].as<std::string>(), "data");
      EXPECT_EQ(cfg["data"].as<std::string>(), "table.csv");
      EXPECT_EQ(cfg["output_dir"].as<std::string>(), "output");
    } else {
      EXPECT_EQ(KeysOf(cfg), (std::set<std::string>{"name", "leader", "tls"}));
      EXPECT_EQ(cfg["leader"].as<std::string>(), "leader.example.org:7443");
    }
    if (role != Role::kAdmin) {
      EXPECT_EQ(cfg["seal"]["cert"].as<std::string>(), "seal.crt");
      EXPECT_EQ(cfg["seal"]["key"].as<std::string>(), "seal.key");
      EXPECT_EQ(KeysOf(cfg["seal"]), (std::set<std::string>{"cert", "key"}));
    }
  }
  // A party's TLS certificate is not the leader's and vice versa; another CA's kit is foreign.
  const fs::path out2 = tmp_ / "kit2";
  ASSERT_OK(app::Provision(yaml_.string(), out2.string()));
  EXPECT_THAT(crypto::VerifiedTlsIdentity(ReadFile(out2 / "hospital-a" / "tls.crt"), ca_pem),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
}

TEST_F(ProvisionTest, ConfigsLoadWithTheDaemonLoaders) {
  const fs::path out = tmp_ / "kit";
  ASSERT_OK(app::Provision(yaml_.string(), out.string()));
  ASSERT_OK_AND_ASSIGN(LeaderConfig leader, LoadLeaderConfig((out / "leader" / "leader.yaml")));
  EXPECT_EQ(leader.name, "leader");
  EXPECT_EQ(ReadFile(leader.tls.cert), ReadFile(out / "leader" / "tls.crt"));
  ASSERT_OK_AND_ASSIGN(PartyConfig party, LoadPartyConfig(out / "hospital-a" / "party.yaml"));
  EXPECT_EQ(party.name, "hospital-a");
  EXPECT_EQ(party.leader, "leader.example.org:7443");
  EXPECT_EQ(ReadFile(party.sign.cert), ReadFile(out / "hospital-a" / "sign.crt"));
  EXPECT_EQ(ReadFile(party.sign.key), ReadFile(out / "hospital-a" / "sign.key"));
  ASSERT_OK_AND_ASSIGN(AdminConfig admin, LoadAdminConfig(out / "alice" / "admin.yaml"));
  EXPECT_EQ(admin.name, "alice");
}

TEST_F(ProvisionTest, LeaderCertificateNamesItsAddresses) {
  const fs::path out = tmp_ / "kit";
  ASSERT_OK(ProvisionText(R"(federation: f
leader: {name: hub, address: "[::1]:9000", hosts: [hub.internal]}
parties: [p1]
admins: [root]
)",
                          "kit"));
  ASSERT_OK_AND_ASSIGN(Identity id, crypto::VerifiedTlsIdentity(ReadFile(out / "hub" / "tls.crt"),
                                                                ReadFile(out / "ca" / "ca.crt")));
  EXPECT_EQ(id, (Identity{.role = Role::kLeader, .name = "hub"}));
  const YAML::Node cfg = YAML::LoadFile((out / "hub" / "leader.yaml").string());
  EXPECT_EQ(cfg["listen"].as<std::string>(), "0.0.0.0:9000");
  const std::string party_yaml = ReadFile(out / "p1" / "party.yaml");
  EXPECT_EQ(YAML::Load(party_yaml)["leader"].as<std::string>(), "[::1]:9000");
  // validity_days defaulted to 365: the summary of a second run says so.
  ASSERT_OK_AND_ASSIGN(std::string summary, app::Provision(yaml_.string(), (tmp_ / "k2").string()));
  EXPECT_THAT(summary, HasSubstr("365 days"));
}

TEST_F(ProvisionTest, NumericLookingNamesStayStrings) {
  const fs::path out = tmp_ / "kit";
  ASSERT_OK(ProvisionText(
      "federation: f\nleader: {name: leader, address: 'h:1'}\nparties: ['123', 'yes', '1e5']\n"
      "admins: [a]\n",
      "kit"));
  for (const char* name : {"123", "yes", "1e5"}) {
    const YAML::Node cfg = YAML::LoadFile((out / name / "party.yaml").string());
    EXPECT_EQ(cfg["name"].as<std::string>(), name);
    EXPECT_EQ(cfg["name"].Tag(), "!") << name;  // quoted: a non-plain scalar
  }
}

TEST_F(ProvisionTest, RefusesNonEmptyOutDir) {
  const fs::path out = tmp_ / "busy";
  fs::create_directories(out);
  WriteFile(out / "keep.txt", "precious");
  EXPECT_THAT(app::Provision(yaml_.string(), out.string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not empty"));
  EXPECT_EQ(ReadFile(out / "keep.txt"), "precious");
  EXPECT_EQ(Entries(out), (std::set<std::string>{"keep.txt"}));
  // A file in the way is refused too; an existing empty directory is used (and locked down).
  WriteFile(tmp_ / "file", "x");
  EXPECT_THAT(app::Provision(yaml_.string(), (tmp_ / "file").string()),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not a directory"));
  fs::create_directories(tmp_ / "empty");
  fs::permissions(tmp_ / "empty",
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  ASSERT_OK(app::Provision(yaml_.string(), (tmp_ / "empty").string() + "/"));
  EXPECT_EQ(ModeOf(tmp_ / "empty"), 0700u);
  EXPECT_TRUE(fs::exists(tmp_ / "empty" / "leader" / "leader.yaml"));
  // No staging directories are left behind.
  for (const std::string& e : Entries(tmp_)) EXPECT_THAT(e, ::testing::Not(HasSubstr("partial")));
}

TEST_F(ProvisionTest, CreatesParentDirectories) {
  ASSERT_OK(app::Provision(yaml_.string(), (tmp_ / "a" / "b" / "kit").string()));
  EXPECT_EQ(ModeOf(tmp_ / "a" / "b" / "kit"), 0700u);
}

TEST_F(ProvisionTest, DuplicateAndInvalidNames) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  const std::string leader = "leader: {name: leader, address: 'h:1'}\n";
  for (const Case& c : std::vector<Case>{
           {"federation: f\n" + leader + "parties: [a, b, a]\nadmins: [x]\n",
            "duplicate name \"a\""},
           {"federation: f\n" + leader + "parties: [a, leader]\nadmins: [x]\n",
            "duplicate name \"leader\""},
           {"federation: f\n" + leader + "parties: [a, b]\nadmins: [b]\n", "duplicate name \"b\""},
           {"federation: f\n" + leader + "parties: [a, A]\nadmins: [x]\n", "duplicate name \"A\""},
           {"federation: f\n" + leader + "parties: [a, ca]\nadmins: [x]\n", "reserved"},
           {"federation: f\n" + leader + "parties: [a, 'b c']\nadmins: [x]\n", "3:14: parties"},
           {"federation: f\n" + leader + "parties: [a, ../etc]\nadmins: [x]\n", "invalid name"},
           {"federation: 'my fed'\n" + leader + "parties: [a]\nadmins: [x]\n", "1:13: federation"},
           {"federation: f\nleader: {name: -l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n",
            "leader.name"},
           {"federation: f\n" + leader + "parties: []\nadmins: [x]\n", "at least one party"},
           {"federation: f\n" + leader + "parties: [a]\nadmins: []\n", "at least one admin"},
           {"federation: f\n" + leader + "parties: [a, [b]]\nadmins: [x]\n", "list of names"},
       }) {
    EXPECT_THAT(ProvisionText(c.yaml, "kit"), StatusIs(kInvalid, c.error)) << c.yaml;
    EXPECT_FALSE(fs::exists(tmp_ / "kit")) << c.yaml;
  }
}

TEST_F(ProvisionTest, MissingAndBadKeys) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"leader: {name: l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n",
            "missing key 'federation'"},
           {"federation: f\nparties: [a]\nadmins: [x]\n", "missing key 'leader'"},
           {"federation: f\nleader: {name: l}\nparties: [a]\nadmins: [x]\n",
            "missing key 'leader.address'"},
           {"federation: f\nleader: {address: 'h:1'}\nparties: [a]\nadmins: [x]\n",
            "missing key 'leader.name'"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nadmins: [x]\n",
            "missing key 'parties'"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: [a]\n",
            "missing key 'admins'"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n"
            "partys: [b]\n",
            "5:1: unknown key 'partys'"},
           {"federation: f\nleader: {name: l, address: 'h:1', port: 3}\nparties: [a]\nadmins: "
            "[x]\n",
            "unknown key 'leader.port'"},
           {"federation: f\nleader: l\nparties: [a]\nadmins: [x]\n", "2:9: leader: want a mapping"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: a\nadmins: [x]\n",
            "3:10: parties: want a list"},
           {"federation: f\nleader: {name: l, address: h}\nparties: [a]\nadmins: [x]\n",
            "want host:port"},
           {"federation: f\nleader: {name: l, address: 'h:0'}\nparties: [a]\nadmins: [x]\n",
            "want host:port"},
           {"federation: f\nleader: {name: l, address: 'h:70000'}\nparties: [a]\nadmins: [x]\n",
            "want host:port"},
           {"federation: f\nleader: {name: l, address: '::1:80'}\nparties: [a]\nadmins: [x]\n",
            "want host:port"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n"
            "validity_days: soon\n",
            "5:16: validity_days"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n"
            "validity_days: 0\n",
            "out of range"},
           {"federation: f\nleader: {name: l, address: 'h:1'}\nparties: [a]\nadmins: [x]\n"
            "validity_days: 100000\n",
            "out of range"},
           {"- just\n- a list\n", "want a mapping"},
           {"", "want a mapping"},
       }) {
    EXPECT_THAT(ProvisionText(c.yaml, "kit"), StatusIs(kInvalid, c.error)) << c.yaml;
    EXPECT_FALSE(fs::exists(tmp_ / "kit")) << c.yaml;
  }
}

TEST_F(ProvisionTest, BadHostFailsWithoutLeavingFiles) {
  EXPECT_THAT(ProvisionText("federation: f\nleader: {name: l, address: 'h:1', hosts: ['a b']}\n"
                            "parties: [a]\nadmins: [x]\n",
                            "kit"),
              StatusIs(kInvalid, "invalid host"));
  EXPECT_EQ(Entries(tmp_), (std::set<std::string>{"federation.yaml", "in.yaml"}));
}

TEST_F(ProvisionTest, BadYamlReportsLineAndColumn) {
  const fs::path path = tmp_ / "broken.yaml";
  WriteFile(path, "federation: f\nleader: {name: l, address: 'h:1'\nparties: [a]\n");
  const absl::StatusOr<std::string> result = app::Provision(path.string(), (tmp_ / "kit").string());
  EXPECT_THAT(result, StatusIs(kInvalid, path.string() + ":3:"));
  EXPECT_THAT(result, StatusIs(kInvalid, "invalid YAML"));
  WriteFile(tmp_ / "tabs.yaml", "federation: f\nparties:\n  - a\n - b\n");
  EXPECT_THAT(app::Provision((tmp_ / "tabs.yaml").string(), (tmp_ / "kit").string()),
              StatusIs(kInvalid, "tabs.yaml:4:"));
}

TEST_F(ProvisionTest, UnreadableFile) {
  EXPECT_THAT(app::Provision((tmp_ / "nope.yaml").string(), (tmp_ / "kit").string()),
              StatusIs(absl::StatusCode::kNotFound, "nope.yaml"));
}

TEST_F(ProvisionTest, LocalFederation) {
  const fs::path out = tmp_ / "local";
  ASSERT_OK(app::ProvisionLocal(out.string(), {"p1", "p2"}, 17443));
  EXPECT_EQ(Entries(out),
            (std::set<std::string>{"README.txt", "ca", "leader", "p1", "p2", "admin"}));
  const std::string ca_pem = ReadFile(out / "ca" / "ca.crt");
  const YAML::Node leader = YAML::LoadFile((out / "leader" / "leader.yaml").string());
  EXPECT_EQ(leader["listen"].as<std::string>(), "127.0.0.1:17443");
  const YAML::Node party = YAML::LoadFile((out / "p2" / "party.yaml").string());
  EXPECT_EQ(party["leader"].as<std::string>(), "127.0.0.1:17443");
  const YAML::Node admin = YAML::LoadFile((out / "admin" / "admin.yaml").string());
  EXPECT_EQ(admin["name"].as<std::string>(), "admin");
  ASSERT_OK_AND_ASSIGN(Identity id,
                       crypto::VerifiedTlsIdentity(ReadFile(out / "admin" / "tls.crt"), ca_pem));
  EXPECT_EQ(id, (Identity{.role = Role::kAdmin, .name = "admin"}));
  ASSERT_OK_AND_ASSIGN(id, crypto::VerifiedTlsIdentity(ReadFile(out / "p1" / "tls.crt"), ca_pem));
  EXPECT_EQ(id, (Identity{.role = Role::kParty, .name = "p1"}));

  EXPECT_THAT(app::ProvisionLocal((tmp_ / "l2").string(), {"p1", "leader"}, 17443),
              StatusIs(kInvalid, "duplicate"));
  EXPECT_THAT(app::ProvisionLocal((tmp_ / "l3").string(), {"p1"}, 0), StatusIs(kInvalid, "port"));
  EXPECT_THAT(app::ProvisionLocal((tmp_ / "l4").string(), {}, 17443), StatusIs(kInvalid, "party"));
  EXPECT_THAT(app::ProvisionLocal(out.string(), {"p1"}, 17443),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not empty"));
}

}  // namespace
}  // namespace fedanon::server
