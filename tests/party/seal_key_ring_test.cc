// The party's sealing keys across rotations (party/seal_key_ring.h): which pair a job being
// prepared gets for the certificate its Prepare names, how long a replaced pair still serves,
// and that a pair whose key and certificate do not belong together is refused.
#include "party/seal_key_ring.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crypto/certificates.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using party::SealKeyRing;

class SealKeyRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(ca_, crypto::CertificateAuthority::Create("test", absl::Hours(24)));
  }
  std::shared_ptr<const SealKeyRing::Entry> NewPair() {
    auto issued = ca_->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
    EXPECT_TRUE(issued.ok()) << issued.status();
    auto entry = SealKeyRing::MakeEntry(issued->cert_pem, issued->key_pem);
    EXPECT_TRUE(entry.ok()) << entry.status();
    return *entry;
  }
  std::unique_ptr<crypto::CertificateAuthority> ca_;
};

TEST_F(SealKeyRingTest, NewJobsGetTheCurrentPairAndTheOldOneOnlyWithinItsGrace) {
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  const auto old_pair = NewPair();
  const auto new_pair = NewPair();
  SealKeyRing ring(old_pair, absl::Minutes(2));
  ASSERT_OK_AND_ASSIGN(auto got, ring.ForNewJob(old_pair->point(), t0));
  EXPECT_EQ(got, old_pair);
  EXPECT_TRUE(ring.Rotate(new_pair, t0));
  EXPECT_FALSE(ring.Rotate(new_pair, t0));  // the same pair again: nothing changes
  EXPECT_EQ(ring.current(), new_pair);
  ASSERT_OK_AND_ASSIGN(got, ring.ForNewJob(new_pair->point(), t0 + absl::Hours(5)));
  EXPECT_EQ(got, new_pair);
  // A Prepare the leader sent before it learned the new certificate: served within the grace.
  ASSERT_OK_AND_ASSIGN(got, ring.ForNewJob(old_pair->point(), t0 + absl::Minutes(1)));
  EXPECT_EQ(got, old_pair);
  EXPECT_THAT(ring.ForNewJob(old_pair->point(), t0 + absl::Minutes(3)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "was replaced at"));
  // A job reloaded after a restart finds any pair still held, whatever its age.
  EXPECT_EQ(ring.Find(old_pair->point()), old_pair);
  const auto stranger = NewPair();
  EXPECT_THAT(ring.ForNewJob(stranger->point(), t0),
              StatusIs(absl::StatusCode::kFailedPrecondition, "that it does not hold"));
  EXPECT_EQ(ring.Find(stranger->point()), nullptr);
}

TEST_F(SealKeyRingTest, KeepsABoundedNumberOfRetiredPairs) {
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  const auto first = NewPair();
  SealKeyRing ring(first);
  for (size_t i = 0; i < SealKeyRing::kMaxRetired + 1; ++i) ring.Rotate(NewPair(), t0);
  EXPECT_EQ(ring.Find(first->point()), nullptr);
  // A pair that comes back is current, not also retired.
  const auto again = NewPair();
  ring.Rotate(again, t0);
  const auto latest = NewPair();
  ring.Rotate(latest, t0);
  ring.Rotate(again, t0);
  EXPECT_EQ(ring.current(), again);
  EXPECT_EQ(ring.Find(latest->point()), latest);
}

TEST_F(SealKeyRingTest, AKeyThatIsNotTheCertificatesIsRefused) {
  auto a = ca_->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
  auto b = ca_->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(SealKeyRing::MakeEntry(a->cert_pem, b->key_pem),
              StatusIs(absl::StatusCode::kInvalidArgument, "does not belong"));
  EXPECT_OK(SealKeyRing::MakeEntry(a->cert_pem, a->key_pem).status());
}

// The statement-signing pair goes with the sealing pair: both or neither, each key its own
// certificate's; a rotation that changes only the statement-signing pair is a rotation.
TEST_F(SealKeyRingTest, TheStatementSigningPairIsCheckedAndRotatesWithTheSealingPair) {
  auto seal = ca_->IssueSeal({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
  auto sign = ca_->IssueStatementSigner({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
  auto other = ca_->IssueStatementSigner({crypto::Role::kParty, "hospital-a"}, absl::Hours(1));
  ASSERT_TRUE(seal.ok() && sign.ok() && other.ok());
  EXPECT_THAT(SealKeyRing::MakeEntry(seal->cert_pem, seal->key_pem, sign->cert_pem, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, "go together"));
  EXPECT_THAT(SealKeyRing::MakeEntry(seal->cert_pem, seal->key_pem, sign->cert_pem, other->key_pem),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the statement-signing key does not belong to the statement-signing "
                       "certificate"));
  ASSERT_OK_AND_ASSIGN(auto entry, SealKeyRing::MakeEntry(seal->cert_pem, seal->key_pem,
                                                          sign->cert_pem, sign->key_pem));
  EXPECT_EQ(entry->sign_cert_pem, sign->cert_pem);
  ASSERT_OK_AND_ASSIGN(auto public_sign,
                       crypto::VerifiedStatementKey(sign->cert_pem, ca_->cert_pem(),
                                                    {crypto::Role::kParty, "hospital-a"}));
  EXPECT_EQ(entry->sign_point, public_sign->UncompressedPoint());
  EXPECT_NE(entry->sign_point, entry->point());
  SealKeyRing ring(entry);
  ASSERT_OK_AND_ASSIGN(auto renewed, SealKeyRing::MakeEntry(seal->cert_pem, seal->key_pem,
                                                            other->cert_pem, other->key_pem));
  EXPECT_FALSE(ring.Rotate(entry, absl::Now()));
  EXPECT_TRUE(ring.Rotate(renewed, absl::Now()));
  EXPECT_EQ(ring.current()->sign_cert_pem, other->cert_pem);
}

}  // namespace
}  // namespace fedanon::testing
