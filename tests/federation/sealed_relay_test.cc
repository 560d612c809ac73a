// Sealed payloads relayed by the leader: a hop of the secure sum replayed into another round or
// another secure sum, delivered to a party it was not sealed for, or opened with the leader's own
// key, is rejected.
#include <gtest/gtest.h>

#include "common/spec/job_spec_loader.h"
#include "common/wire/federation_wire.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr char kSpec[] = R"(name: relay
attributes:
  - {name: g, role: qid, values: [ga, gb]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 1}
)";

class SealedRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::map<std::string, std::string>> files(
        3, {{"table.csv", "g,cls\nga,yes\ngb,no\nga,no\n"}});
    auto fed = InProcessFederation::Create("relay", files);
    ASSERT_OK(fed);
    fed_ = std::move(*fed);
    ASSERT_OK_AND_ASSIGN(spec_, spec::ParseJobSpecYaml(kSpec, "relay.yaml"));
    for (size_t i = 0; i < fed_->names.size(); ++i) {
      fedanon::v1::LeaderMessage msg;
      msg.set_job_id(kJob);
      *msg.mutable_prepare()->mutable_spec() = spec_;
      for (size_t j = 0; j < fed_->names.size(); ++j) {
        auto* p = msg.mutable_prepare()->add_participants();
        p->set_name(fed_->names[j]);
        p->set_index(static_cast<uint32_t>(j));
        p->set_seal_certificate(fed_->agents[j]->seal_cert_pem());
        p->set_sign_certificate(fed_->agents[j]->sign_cert_pem());
        msg.mutable_prepare()->add_ring(fed_->names[j]);
      }
      ASSERT_OK_AND_ASSIGN(auto leader_seal,
                           fed_->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1)));
      auto* l = msg.mutable_prepare()->add_participants();
      l->set_name("leader");
      l->set_index(UINT32_MAX);
      l->set_seal_certificate(leader_seal.cert_pem);
      ASSERT_OK(AuthorizePrepare(&msg, fed_->admin));
      ASSERT_OK_AND_ASSIGN(run_id_, wire::RunIdOf(msg.prepare().authorization()));
      ASSERT_OK(fed_->channel.Call(fed_->names[i], msg, absl::Seconds(5)));
    }
  }

  // A first hop at hospital-a whose output is sealed for hospital-b.
  fedanon::v1::LeaderMessage FirstHop(uint32_t round, uint64_t collect) {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(round);
    auto* step = msg.mutable_sum_step();
    step->set_collect(collect);
    step->mutable_request()->add_groups()->add_nodes(0);
    step->set_total_words(3);  // [count, then the 2 fine children of the root of g]
    step->set_chunks(1);
    step->set_chunk_words(3);
    step->set_next(fed_->names[1]);  // the first party starts from its own mask
    return msg;
  }

  fedanon::v1::LeaderMessage SecondHop(const fedanon::v1::SealedPayload& sealed, uint32_t round,
                                       uint64_t collect) {
    fedanon::v1::LeaderMessage msg = FirstHop(round, collect);
    *msg.mutable_sum_step()->mutable_sealed() = sealed;
    msg.mutable_sum_step()->set_next(fed_->names[2]);
    return msg;
  }

  static constexpr char kJob[] = "job-0000000000aa";
  std::unique_ptr<InProcessFederation> fed_;
  fedanon::v1::JobSpec spec_;
  std::string run_id_;
};

TEST_F(SealedRelayTest, HonestRelayWorksAndReplaysAreRejected) {
  ASSERT_OK_AND_ASSIGN(auto first,
                       fed_->channel.Call(fed_->names[0], FirstHop(1, 0), absl::Seconds(5)));
  ASSERT_TRUE(first.sum_step().has_sealed());
  const auto sealed = first.sum_step().sealed();
  EXPECT_EQ(sealed.receiver(), fed_->names[1]);

  // Delivered as sealed: accepted.
  EXPECT_TRUE(fed_->channel.Call(fed_->names[1], SecondHop(sealed, 1, 0), absl::Seconds(5)).ok());
  // Replayed into another round or another secure sum: rejected by the AEAD context.
  EXPECT_THAT(fed_->channel.Call(fed_->names[1], SecondHop(sealed, 2, 0), absl::Seconds(5)),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_THAT(fed_->channel.Call(fed_->names[1], SecondHop(sealed, 1, 7), absl::Seconds(5)),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  // A different claimed sender: rejected.
  auto forged = sealed;
  forged.set_sender(fed_->names[2]);
  EXPECT_THAT(fed_->channel.Call(fed_->names[1], SecondHop(forged, 1, 0), absl::Seconds(5)),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  // Delivered to the wrong party: it cannot open it.
  EXPECT_THAT(fed_->channel.Call(fed_->names[2], SecondHop(sealed, 1, 0), absl::Seconds(5)),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
}

TEST_F(SealedRelayTest, TheLeaderCannotOpenAHop) {
  ASSERT_OK_AND_ASSIGN(auto first,
                       fed_->channel.Call(fed_->names[0], FirstHop(1, 0), absl::Seconds(5)));
  const auto& sealed = first.sum_step().sealed();
  // The leader's own sealing key (it holds no party's key).
  ASSERT_OK_AND_ASSIGN(auto leader_seal,
                       fed_->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(auto leader_keys, crypto::SealKeyPairFromPem(leader_seal.key_pem));
  ASSERT_OK_AND_ASSIGN(auto sender_key, crypto::VerifiedSealKey(
                                            fed_->agents[0]->seal_cert_pem(), fed_->ca->cert_pem(),
                                            {crypto::Role::kParty, fed_->names[0]}));
  for (const std::string& receiver : {std::string("leader"), fed_->names[1]}) {
    const crypto::SealContext context{kJob, run_id_, 1, fed_->names[0], receiver, sealed.purpose()};
    EXPECT_FALSE(crypto::OpenFrom(*leader_keys, *sender_key, context, sealed.ciphertext()).ok())
        << receiver;
  }
}

}  // namespace
}  // namespace fedanon::testing
