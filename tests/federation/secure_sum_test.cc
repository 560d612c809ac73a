// What the leader receives from the ring before it removes the first party's mask is uniformly
// distributed and independent of the data: over many secure sums on two different data sets,
// each bit of the received words is 1 about half of the time, while the unmasked sums differ.
#include <gtest/gtest.h>

#include "common/engine/hierarchy.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "leader/secure_sum_source.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr char kSpec[] = R"(name: sum
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 1}
)";

struct Received {
  std::vector<uint64_t> first_words;  // word 0 of every masked vector the leader received
  std::vector<uint64_t> sum;          // the unmasked result
};

Received RunSums(const std::vector<std::string>& party_tables, int runs, const std::string& name) {
  Received out;
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& t : party_tables) files.push_back({{"table.csv", t}});
  auto fed = InProcessFederation::Create(name, files);
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  auto spec = spec::ParseJobSpecYaml(kSpec, "sum.yaml");
  EXPECT_TRUE(spec.ok());
  auto leader_seal = (*fed)->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
  EXPECT_TRUE(leader_seal.ok());
  auto leader_keys = crypto::SealKeyPairFromPem(leader_seal->key_pem);
  EXPECT_TRUE(leader_keys.ok());
  auto last_key =
      crypto::VerifiedSealKey((*fed)->agents.back()->seal_cert_pem(), (*fed)->ca->cert_pem(),
                              {crypto::Role::kParty, (*fed)->names.back()});
  EXPECT_TRUE(last_key.ok());
  auto first_key =
      crypto::VerifiedSealKey((*fed)->agents.front()->seal_cert_pem(), (*fed)->ca->cert_pem(),
                              {crypto::Role::kParty, (*fed)->names.front()});
  EXPECT_TRUE(first_key.ok());
  // Prepare every party for the job, as the leader would (one authorization, one run).
  std::string run_id;
  fedanon::v1::JobAuthorization authorization;
  for (size_t i = 0; i < (*fed)->names.size(); ++i) {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id("job-000000000001");
    *msg.mutable_prepare()->mutable_spec() = *spec;
    for (size_t j = 0; j < (*fed)->names.size(); ++j) {
      auto* p = msg.mutable_prepare()->add_participants();
      p->set_name((*fed)->names[j]);
      p->set_index(static_cast<uint32_t>(j));
      p->set_seal_certificate((*fed)->agents[j]->seal_cert_pem());
      msg.mutable_prepare()->add_ring((*fed)->names[j]);
    }
    auto* l = msg.mutable_prepare()->add_participants();
    l->set_name("leader");
    l->set_index(UINT32_MAX);
    l->set_seal_certificate(leader_seal->cert_pem);
    if (i == 0) {
      EXPECT_TRUE(AuthorizePrepare(&msg, (*fed)->admin,
                                   TaxonomyTexts(*spec, (*fed)->dir + "/" + (*fed)->names[i]))
                      .ok());
      authorization = msg.prepare().authorization();
      run_id = *wire::RunIdOf(authorization);
    } else {
      *msg.mutable_prepare()->mutable_authorization() = authorization;
    }
    auto reply = (*fed)->channel.Call((*fed)->names[i], msg, absl::Seconds(5));
    EXPECT_TRUE(reply.ok()) << reply.status();
  }
  // What the leader opens from the last hop (sealed for it by the ring's last party).
  (*fed)->channel.set_observer([&](const std::string&, const std::string& bytes) {
    fedanon::v1::PartyMessage m;
    if (!m.ParseFromString(bytes) || !m.has_sum_step() || !m.sum_step().has_sealed()) return;
    const auto& sealed = m.sum_step().sealed();
    if (sealed.receiver() != "leader") return;
    const crypto::SealContext context{"job-000000000001", run_id,   1,
                                      sealed.sender(),    "leader", sealed.purpose()};
    auto opened = crypto::OpenFrom(**leader_keys, **last_key, context, sealed.ciphertext());
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return;
    auto words = wire::DecodeWords(*opened);
    if (words.ok() && !words->empty()) out.first_words.push_back((*words)[0]);
  });
  auto schema = table::BuildPublicSchema(*spec, {});
  EXPECT_TRUE(schema.ok()) << schema.status();
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema->qids) hier.emplace_back(&q);
  leader::SecureSumCountSource source(
      &(*fed)->channel, "job-000000000001", (*fed)->names, absl::Seconds(5), &hier,
      schema->num_classes(), schema->tracked.size(), [] { return 1u; },
      [] { return absl::OkStatus(); });
  source.set_sealing("leader", run_id, leader_keys->get(), first_key->get(), last_key->get());
  engine::StatsRequest request;
  request.group_keys.push_back({0});
  request.node_class_counts.push_back({0, 0});
  for (int r = 0; r < runs; ++r) {
    auto sum = source.Collect(request);
    EXPECT_TRUE(sum.ok()) << sum.status();
    if (sum.ok()) out.sum = *sum;
  }
  return out;
}

std::string Table(int ga, int gb, int gc) {
  std::string t = "g,cls\n";
  for (int i = 0; i < ga; ++i) t += "ga,yes\n";
  for (int i = 0; i < gb; ++i) t += "gb,no\n";
  for (int i = 0; i < gc; ++i) t += "gc,yes\n";
  return t;
}

TEST(SecureSum, LeaderSeesUniformWordsWhateverTheData) {
  constexpr int kRuns = 400;
  const Received a = RunSums({Table(5, 1, 0), Table(2, 2, 2), Table(0, 0, 9)}, kRuns, "sum_a");
  const Received b = RunSums({Table(40, 3, 1), Table(1, 0, 0), Table(7, 7, 7)}, kRuns, "sum_b");
  ASSERT_EQ(a.first_words.size(), static_cast<size_t>(kRuns));
  ASSERT_EQ(b.first_words.size(), static_cast<size_t>(kRuns));
  // The true sums differ (21 vs 66 records) ...
  ASSERT_FALSE(a.sum.empty());
  EXPECT_EQ(a.sum[0 + 3 * 2], 21u);  // after 3 fine children x 2 classes: the group's count
  EXPECT_EQ(b.sum[0 + 3 * 2], 66u);
  // ... but the received words look alike: every bit is set in 50% +- 15% of the runs for both
  // (a 6-sigma band for 400 fair coin flips: over the 128 checks a false alarm about once in 4
  // million runs; the 4-sigma band of before failed once in a full run, 156 ones for bit 16). A
  // leader that saw the sums unmasked would see every bit above 7 at 0.
  for (int bit = 0; bit < 64; ++bit) {
    for (const Received* r : {&a, &b}) {
      int ones = 0;
      for (uint64_t w : r->first_words) ones += (w >> bit) & 1;
      EXPECT_GT(ones, kRuns * 0.35) << "bit " << bit;
      EXPECT_LT(ones, kRuns * 0.65) << "bit " << bit;
    }
  }
}

}  // namespace
}  // namespace fedanon::testing
