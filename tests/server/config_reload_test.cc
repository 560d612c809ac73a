// Re-reading a running daemon's settings (server/runtime/config_reload.h) and the thread that runs
// it (server/runtime/periodic_reloader.h): what a reload returns, that a file which does not load
// or fit is an error (the daemon then keeps what it uses), and which changed keys wait for a
// restart.
#include "server/runtime/config_reload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/base/file_io.h"
#include "server/runtime/periodic_reloader.h"
#include "tests/server/test_pki.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::server {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPartyYaml[] = R"(name: hospital-a
leader: 127.0.0.1:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)";

class ConfigReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WritePair(pki_.SealIssued("hospital-a"));
    Write("ca.crt", pki_.ca_pem());
    Write("party.yaml", std::string(kPartyYaml) + "admins: [alice]\n");
    absl::StatusOr<PartyConfig> config = LoadPartyConfig(dir_.File("party.yaml"));
    ASSERT_TRUE(config.ok()) << config.status();
    at_start_ = *config;
  }
  void Write(const std::string& name, const std::string& text, bool private_key = false) {
    ASSERT_TRUE(base::WriteFileAtomically(
                    dir_.File(name), text,
                    {.mode = private_key ? base::kPrivateFileMode : base::kSharedFileMode})
                    .ok());
  }
  void WritePair(const crypto::IssuedCertificate& seal) {
    Write("seal.key", seal.key_pem, true);
    Write("seal.crt", seal.cert_pem);
  }

  fedanon::testing::TempDir dir_{"config_reload"};
  testing::TestPki pki_{"reload"};
  PartyConfig at_start_;
};

TEST_F(ConfigReloadTest, PartyReloadReturnsTheAdminsCaAndSealingPairAsTheyAreNow) {
  ASSERT_OK_AND_ASSIGN(PartyReload r, ReloadPartySettings(at_start_));
  EXPECT_EQ(r.settings.admins, std::vector<std::string>{"alice"});
  EXPECT_EQ(r.settings.ca_pem, pki_.ca_pem());
  EXPECT_TRUE(r.restart_needed.empty());
  // Edited: a new admins list, a new sealing pair, and a key that waits for a restart.
  const crypto::IssuedCertificate next = pki_.SealIssued("hospital-a");
  WritePair(next);
  Write("party.yaml", std::string(kPartyYaml) + "admins: [bob]\nmax_input_bytes: 1000\n");
  ASSERT_OK_AND_ASSIGN(r, ReloadPartySettings(at_start_));
  EXPECT_EQ(r.settings.admins, std::vector<std::string>{"bob"});
  EXPECT_EQ(r.settings.seal_cert_pem, next.cert_pem);
  EXPECT_EQ(r.settings.seal_key_pem, next.key_pem);
  EXPECT_THAT(r.restart_needed, ElementsAre("max_input_bytes"));
  // `admins:` removed: every admin the CA certified (the file says so; never a fallback).
  Write("party.yaml", kPartyYaml);
  ASSERT_OK_AND_ASSIGN(r, ReloadPartySettings(at_start_));
  EXPECT_FALSE(r.settings.admins.has_value());
  EXPECT_EQ(r.settings.sign_cert_pem, "");  // no `sign:`
}

// `sign:` is re-read with the sealing pair: a statement-signing pair of this party under the CA
// is taken; another party's certificate, a sealing certificate in its place or a key of another
// certificate is an error naming the file.
TEST_F(ConfigReloadTest, TheStatementSigningPairIsReadAndCheckedWithTheSealingPair) {
  const std::string with_sign = std::string(kPartyYaml) + "sign: {cert: sign.crt, key: sign.key}\n";
  Write("party.yaml", with_sign);
  const crypto::IssuedCertificate sign = pki_.SignIssued("hospital-a");
  Write("sign.key", sign.key_pem, true);
  Write("sign.crt", sign.cert_pem);
  ASSERT_OK_AND_ASSIGN(PartyReload r, ReloadPartySettings(at_start_));
  EXPECT_EQ(r.settings.sign_cert_pem, sign.cert_pem);
  EXPECT_EQ(r.settings.sign_key_pem, sign.key_pem);
  Write("sign.crt", pki_.SignIssued("hospital-b").cert_pem);
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "is not this party's under the CA bundle: statement-signing certificate "
                       "belongs to fedanon-sign://party/hospital-b"));
  Write("sign.crt", pki_.SealIssued("hospital-a").cert_pem);
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kPermissionDenied, "not a statement-signing certificate"));
  Write("sign.crt", pki_.SignIssued("hospital-a").cert_pem);
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not belong to sign certificate"));
}

TEST_F(ConfigReloadTest, AFileThatDoesNotLoadOrFitIsAnError) {
  Write("party.yaml", std::string(kPartyYaml) + "admins: [bob\n");
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "party.yaml"));
  Write("party.yaml", std::string(kPartyYaml) + "admns: [bob]\n");
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown key 'admns'"));
  Write("party.yaml", kPartyYaml);
  // A key that is not the certificate's (the key replaced, the certificate not yet).
  Write("seal.key", pki_.SealIssued("hospital-a").key_pem, true);
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not belong"));
  // Another party's sealing certificate.
  WritePair(pki_.SealIssued("hospital-b"));
  EXPECT_THAT(ReloadPartySettings(at_start_).status().message(), HasSubstr("is not this party's"));
  // A CA bundle that is not the one the certificate chains to.
  WritePair(pki_.SealIssued("hospital-a"));
  testing::TestPki other("other");
  Write("ca.crt", other.ca_pem());
  EXPECT_THAT(ReloadPartySettings(at_start_).status().message(), HasSubstr("is not this party's"));
  Write("ca.crt", "not a certificate");
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "CA certificate"));
  // A name change is not a reload.
  Write("ca.crt", pki_.ca_pem());
  std::string renamed = kPartyYaml;
  renamed.replace(renamed.find("hospital-a"), 10, "hospital-z");
  Write("party.yaml", renamed);
  EXPECT_THAT(ReloadPartySettings(at_start_),
              StatusIs(absl::StatusCode::kInvalidArgument, "changes only with a restart"));
}

TEST_F(ConfigReloadTest, LeaderReloadReturnsAllJobsAdminsAndTheCaBundle) {
  Write("leader.yaml", R"(name: leader
listen: 127.0.0.1:7443
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
all_jobs_admins: [alice]
)");
  ASSERT_OK_AND_ASSIGN(const LeaderConfig at_start, LoadLeaderConfig(dir_.File("leader.yaml")));
  ASSERT_OK_AND_ASSIGN(LeaderReload r, ReloadLeaderSettings(at_start));
  EXPECT_THAT(r.all_jobs_admins, ElementsAre("alice"));
  EXPECT_EQ(r.ca_pem, pki_.ca_pem());
  Write("leader.yaml", R"(name: leader
listen: 127.0.0.1:7444
data_dir: data
tls: {ca: ca.crt, cert: tls.crt, key: tls.key}
seal: {cert: seal.crt, key: seal.key}
)");
  ASSERT_OK_AND_ASSIGN(r, ReloadLeaderSettings(at_start));
  EXPECT_TRUE(r.all_jobs_admins.empty());
  EXPECT_THAT(r.restart_needed, ElementsAre("listen"));
  Write("leader.yaml", "name: leader\nlisten: [\n");
  EXPECT_FALSE(ReloadLeaderSettings(at_start).ok());
}

// The reload thread: a trigger runs it now (told why), a period runs it again, the destructor
// stops it.
TEST(PeriodicReloaderTest, RunsOnTriggerAndPeriodically) {
  std::vector<std::string> whys;  // written by the reload thread before `ran` is notified
  {
    absl::Notification ran;
    PeriodicReloader reloader(absl::InfiniteDuration(), [&](const std::string& why) {
      whys.push_back(why);
      ran.Notify();
    });
    reloader.Trigger("SIGHUP");
    ran.WaitForNotification();
  }
  EXPECT_THAT(whys, ElementsAre("SIGHUP"));
  std::atomic<int> periodic{0};
  {
    PeriodicReloader reloader(absl::Milliseconds(1), [&](const std::string& why) {
      if (why == "periodic check") ++periodic;
    });
    while (periodic.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_GE(periodic.load(), 2);
}

}  // namespace
}  // namespace fedanon::server
