// A leader that deviates from the protocol (docs/threat-model.md) against honest in-process
// parties: zero masks, a rerouted or shortened ring, a replayed collect with another request, a
// forged sender, out-of-range chunks. Each test asserts that the parties refuse with a named
// reason AND, independently of the parties' bookkeeping, that nothing the leader receives depends
// on one party's data alone: every scenario runs on two federations whose first party's table
// differs (the second party's compensates, so the sum is the same), and everything the leader
// can decode — error messages, the plaintext of every box sealed for it — must be identical.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>

#include "absl/strings/str_join.h"
#include "common/engine/hierarchy.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/secure_sum_source.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

constexpr char kJob[] = "job-00000000bad1";
constexpr char kSpec[] = R"(name: malicious
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 1}
)";

std::string Table(int ga, int gb, int gc) {
  std::string t = "g,cls\n";
  for (int i = 0; i < ga; ++i) t += "ga,yes\n";
  for (int i = 0; i < gb; ++i) t += "gb,no\n";
  for (int i = 0; i < gc; ++i) t += "gc,yes\n";
  return t;
}

// Variant 0 and 1 differ in hospital-a's table only through a transfer to hospital-b: the sum of
// all three is the same, hospital-a's own counts are not.
std::vector<std::string> Tables(int variant) {
  if (variant == 0) return {Table(5, 1, 0), Table(2, 2, 2), Table(0, 0, 9)};
  return {Table(1, 3, 2), Table(6, 0, 0), Table(0, 0, 9)};
}

// A deviating leader with its own sealing key, talking to three honest parties directly.
class MaliciousLeader {
 public:
  static std::unique_ptr<MaliciousLeader> Create(const std::string& name, int variant) {
    auto m = std::unique_ptr<MaliciousLeader>(new MaliciousLeader());
    std::vector<std::map<std::string, std::string>> files;
    for (const auto& t : Tables(variant)) files.push_back({{"table.csv", t}});
    auto fed = InProcessFederation::Create(absl::StrCat(name, "_", variant), files);
    EXPECT_TRUE(fed.ok()) << fed.status();
    if (!fed.ok()) return nullptr;
    m->fed_ = *std::move(fed);
    auto seal = m->fed_->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
    EXPECT_TRUE(seal.ok());
    m->leader_cert_ = seal->cert_pem;
    m->leader_keys_ = *crypto::SealKeyPairFromPem(seal->key_pem);
    auto spec = common::ParseJobSpecYaml(kSpec, "malicious.yaml");
    EXPECT_TRUE(spec.ok());
    m->spec_ = *spec;
    auto schema = common::BuildPublicSchema(*spec, {});
    EXPECT_TRUE(schema.ok());
    m->schema_ = std::make_unique<common::Dataset>(*std::move(schema));
    for (const auto& q : m->schema_->qids) m->hier_.emplace_back(&q);
    return m;
  }

  const std::vector<std::string>& names() const { return fed_->names; }
  const common::AdminSigner& admin() const { return fed_->admin; }
  const crypto::CertificateAuthority& ca() const { return *fed_->ca; }
  const fedanon::v1::JobSpec& spec() const { return spec_; }

  // PrepareJob announcing every party, the leader, and `ring`, authorized by the federation's
  // admin exactly as it stands (the deviations these tests make come after the admin's signature).
  LeaderMessage Prepare(const std::vector<std::string>& ring,
                        const std::vector<std::string>& participants = {},
                        const std::string& leader_party = "") const {
    LeaderMessage msg = Unsigned(ring, participants, leader_party);
    EXPECT_OK(AuthorizePrepare(&msg, fed_->admin));
    return msg;
  }

  // The same without any authorization.
  LeaderMessage Unsigned(const std::vector<std::string>& ring,
                         const std::vector<std::string>& participants = {},
                         const std::string& leader_party = "") const {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    auto* prepare = msg.mutable_prepare();
    *prepare->mutable_spec() = spec_;
    const auto& who = participants.empty() ? fed_->names : participants;
    for (size_t j = 0; j < who.size(); ++j) {
      auto* p = prepare->add_participants();
      p->set_name(who[j]);
      p->set_index(static_cast<uint32_t>(j));
      const size_t agent =
          std::find(fed_->names.begin(), fed_->names.end(), who[j]) - fed_->names.begin();
      p->set_seal_certificate(fed_->agents[agent]->seal_cert_pem());
    }
    auto* l = prepare->add_participants();
    l->set_name("leader");
    l->set_index(UINT32_MAX);
    l->set_seal_certificate(leader_cert_);
    for (const auto& r : ring) prepare->add_ring(r);
    prepare->set_leader_party(leader_party);
    prepare->set_data_holding_leader(!leader_party.empty());
    return msg;
  }

  absl::Status PrepareAll(const std::vector<std::string>& ring) {
    for (const auto& n : fed_->names) {
      absl::StatusOr<PartyMessage> r = Send(n, Prepare(ring));
      if (!r.ok()) return r.status();
    }
    return absl::OkStatus();
  }

  common::StatsRequest Request(int variant_of_request = 0) const {
    common::StatsRequest request;
    request.group_keys.push_back({0});
    if (variant_of_request == 0) request.node_class_counts.push_back({0, 0});
    return request;
  }
  size_t Words(const common::StatsRequest& request) const {
    return common::StatsLength(hier_, schema_->num_classes(), schema_->tracked.size(), request);
  }

  // One secure-sum hop as an honest leader would build it (then tampered with by the tests).
  LeaderMessage Step(uint64_t collect, const std::string& next, const common::StatsRequest& request,
                     uint32_t round = 1) const {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(round);
    auto* step = msg.mutable_sum_step();
    *step->mutable_request() = common::ToProto(request);
    step->set_collect(collect);
    step->set_chunk(0);
    step->set_chunks(1);
    step->set_chunk_offset(0);
    step->set_total_words(Words(request));
    step->set_next(next);
    return msg;
  }

  // Sends a request and records what the leader can decode from the answer.
  absl::StatusOr<PartyMessage> Send(const std::string& party, const LeaderMessage& msg) {
    absl::StatusOr<PartyMessage> reply = fed_->channel.Call(party, msg, absl::Seconds(10));
    if (!reply.ok()) {
      seen_.push_back(absl::StrCat("error: ", reply.status().message()));
    } else if (reply->has_sum_step() && reply->sum_step().has_sealed()) {
      const auto& sealed = reply->sum_step().sealed();
      if (sealed.receiver() == "leader") {
        // Opened as the leader would: this is what it learns.
        seen_.push_back(absl::StrCat("sum for leader: ", OpenAtLeader(msg, sealed)));
      } else {
        seen_.push_back(absl::StrCat("sealed for ", sealed.receiver()));
        // The leader cannot open a box meant for a party, whatever sender or purpose it tries.
        for (const std::string& sender : fed_->names) {
          for (const std::string& receiver : {std::string("leader"), sealed.receiver()}) {
            const crypto::SealContext c{kJob, msg.round(), sender, receiver, sealed.purpose()};
            EXPECT_FALSE(
                crypto::OpenFrom(*leader_keys_, *PartyKey(sender), c, sealed.ciphertext()).ok());
          }
        }
      }
    } else if (reply->has_sum_step()) {
      seen_.push_back(absl::StrCat("plaintext: ", crypto::ToHex(reply->sum_step().masked())));
    }
    return reply;
  }

  // A party's certified sealing key, as the leader knows it.
  std::unique_ptr<crypto::SealPublicKey> PartyKey(const std::string& party) const {
    const size_t i = std::find(fed_->names.begin(), fed_->names.end(), party) - fed_->names.begin();
    auto key = crypto::VerifiedSealKey(fed_->agents[i]->seal_cert_pem(), fed_->ca->cert_pem(),
                                       {crypto::Role::kParty, party});
    EXPECT_TRUE(key.ok()) << key.status();
    return *std::move(key);
  }

  // The words of a last hop, decoded with the leader's key and the ring's last party as sender.
  std::string OpenAtLeader(const LeaderMessage& msg, const fedanon::v1::SealedPayload& sealed) {
    const crypto::SealContext c{kJob, msg.round(), sealed.sender(), "leader", sealed.purpose()};
    auto opened =
        crypto::OpenFrom(*leader_keys_, *PartyKey(sealed.sender()), c, sealed.ciphertext());
    if (!opened.ok()) return absl::StrCat("unopenable: ", opened.status().message());
    auto words = common::DecodeWords(*opened);
    if (!words.ok()) return "bad words";
    return absl::StrJoin(*words, ",");
  }

  // Seals `plaintext` with the leader's own key pair, claiming `sender` — the forgery of issue 26.
  fedanon::v1::SealedPayload Forge(const std::string& sender, const std::string& receiver,
                                   const std::string& purpose, uint32_t round,
                                   const std::string& plaintext, bool anonymous) const {
    const std::unique_ptr<crypto::SealPublicKey> key = PartyKey(receiver);
    const crypto::SealContext c{kJob, round, sender, receiver, purpose};
    auto box = anonymous ? crypto::Seal(*key, c, plaintext)
                         : crypto::SealFrom(*leader_keys_, *key, c, plaintext);
    EXPECT_TRUE(box.ok());
    fedanon::v1::SealedPayload p;
    p.set_sender(sender);
    p.set_receiver(receiver);
    p.set_purpose(purpose);
    p.set_ciphertext(*box);
    return p;
  }

  const std::vector<std::string>& seen() const { return seen_; }
  const crypto::SealKeyPair& leader_keys() const { return *leader_keys_; }

 private:
  MaliciousLeader() = default;
  std::unique_ptr<InProcessFederation> fed_;
  std::string leader_cert_;
  std::unique_ptr<crypto::SealKeyPair> leader_keys_;
  fedanon::v1::JobSpec spec_;
  std::unique_ptr<common::Dataset> schema_;
  std::vector<common::AttributeHierarchy> hier_;
  std::vector<std::string> seen_;
};

using Scenario = std::function<void(MaliciousLeader&)>;

// Runs `scenario` against both table variants and compares everything the leader decoded.
void ExpectNothingDependsOnOneParty(const std::string& name, const Scenario& scenario) {
  std::vector<std::vector<std::string>> seen;
  for (int variant : {0, 1}) {
    auto m = MaliciousLeader::Create(name, variant);
    ASSERT_NE(m, nullptr);
    ASSERT_OK(m->PrepareAll(m->names()));
    scenario(*m);
    seen.push_back(m->seen());
  }
  EXPECT_EQ(seen[0], seen[1]) << "the leader learned something that depends on hospital-a alone";
}

std::string Zeros(size_t words) { return common::EncodeWords(std::vector<uint64_t>(words, 0)); }

TEST(MaliciousLeader, ZeroMasksGiveOnlyTheSumOfTheWholeRing) {
  ExpectNothingDependsOnOneParty("zero_masks", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request();
    // Zero masks to the first party: accepted (it cannot tell), but its output is sealed for b.
    LeaderMessage first = m.Step(0, n[1], req);
    first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m.Send(n[0], first));
    EXPECT_EQ(a.sum_step().sealed().receiver(), n[1]);
    // Zero masks straight to a later party, or to the last one with an empty next: refused.
    LeaderMessage to_b = m.Step(0, n[2], req);
    to_b.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[1], to_b),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "input must be sealed by 'hospital-a' (the predecessor agreed at "
                         "Prepare) for 'hospital-b', got plaintext"));
    LeaderMessage to_c = m.Step(0, "", req);
    to_c.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[2], to_c), StatusIs(absl::StatusCode::kPermissionDenied,
                                             "input must be sealed by 'hospital-b'"));
    // Completing the ring honestly yields the unmasked total of all three — the sum it may learn.
    LeaderMessage second = m.Step(0, n[2], req);
    *second.mutable_sum_step()->mutable_sealed() = a.sum_step().sealed();
    ASSERT_OK_AND_ASSIGN(PartyMessage b, m.Send(n[1], second));
    LeaderMessage third = m.Step(0, "", req);
    *third.mutable_sum_step()->mutable_sealed() = b.sum_step().sealed();
    ASSERT_OK_AND_ASSIGN(PartyMessage c, m.Send(n[2], third));
    EXPECT_EQ(c.sum_step().sealed().receiver(), "leader");
  });
}

TEST(MaliciousLeader, ReroutedRingIsRefused) {
  ExpectNothingDependsOnOneParty("reroute", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request();
    // Skip hospital-b: a's output for c instead.
    LeaderMessage skip = m.Step(0, n[2], req);
    skip.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[0], skip),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "next is 'hospital-c' but this party's successor in the ring agreed at "
                         "Prepare is 'hospital-b'"));
    // Another order: start at hospital-b (which takes masks only from... nobody but a's box).
    LeaderMessage b_first = m.Step(0, n[0], req);
    b_first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[1], b_first), StatusIs(absl::StatusCode::kPermissionDenied,
                                                "successor in the ring agreed at Prepare"));
    // a's genuine output delivered to c (skipping b): c accepts only b's.
    LeaderMessage first = m.Step(0, n[1], req);
    first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m.Send(n[0], first));
    LeaderMessage to_c = m.Step(0, "", req);
    *to_c.mutable_sum_step()->mutable_sealed() = a.sum_step().sealed();
    EXPECT_THAT(m.Send(n[2], to_c),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "input must be sealed by 'hospital-b' (the predecessor agreed at "
                         "Prepare) for 'hospital-c', got one from 'hospital-a'"));
  });
}

TEST(MaliciousLeader, ShortenedRingIsRefused) {
  ExpectNothingDependsOnOneParty("shortened", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request();
    LeaderMessage first = m.Step(0, n[1], req);
    first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m.Send(n[0], first));
    // Empty next to the middle party: it would answer the leader with a + b only.
    LeaderMessage middle_last = m.Step(0, "", req);
    *middle_last.mutable_sum_step()->mutable_sealed() = a.sum_step().sealed();
    EXPECT_THAT(m.Send(n[1], middle_last),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "next is '' but this party's successor in the ring agreed at Prepare is "
                         "'hospital-c'"));
    // Empty next to the first party: refused too.
    LeaderMessage only_a = m.Step(0, "", req);
    only_a.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[0], only_a), StatusIs(absl::StatusCode::kPermissionDenied,
                                               "successor in the ring agreed at Prepare"));
  });
}

TEST(MaliciousLeader, PrepareWithAShortOrWrongRingIsRefused) {
  auto m = MaliciousLeader::Create("bad_prepare", 0);
  ASSERT_NE(m, nullptr);
  const auto& n = m->names();
  // A ring that leaves out a participant, or names one twice.
  EXPECT_THAT(m->Send(n[0], m->Prepare({n[0], n[1]})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the ring must list exactly the job's data-holding participants"));
  EXPECT_THAT(m->Send(n[0], m->Prepare({n[0], n[1], n[1]})),
              StatusIs(absl::StatusCode::kInvalidArgument, "each once"));
  EXPECT_THAT(m->Send(n[0], m->Prepare({})),
              StatusIs(absl::StatusCode::kInvalidArgument, "Prepare carries no ring"));
  // A one-party job: its "sum" would be that party's counts.
  EXPECT_THAT(m->Send(n[0], m->Prepare({n[0]}, {n[0]})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a horizontal ring needs at least 2 data parties"));
  // A data-holding leader placed second would learn the first party's counts.
  EXPECT_THAT(m->Send(n[0], m->Prepare({n[0], n[1], n[2]}, {}, n[1])),
              StatusIs(absl::StatusCode::kInvalidArgument, "must come first in the ring"));
  // With a data-holding leader, two data parties are not enough.
  EXPECT_THAT(m->Send(n[0], m->Prepare({n[1], n[0]}, {n[0], n[1]}, n[1])),
              StatusIs(absl::StatusCode::kInvalidArgument, "at least 3 data parties"));
  // A sum step without a prepared job.
  LeaderMessage step = m->Step(0, n[1], m->Request());
  step.mutable_sum_step()->set_masked(Zeros(m->Words(m->Request())));
  EXPECT_THAT(m->Send(n[0], step),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
}

TEST(MaliciousLeader, ReplayedCollectWithAnotherRequestIsRefused) {
  ExpectNothingDependsOnOneParty("replay", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request(0);
    const common::StatsRequest other = m.Request(1);
    LeaderMessage first = m.Step(0, n[1], req);
    first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK_AND_ASSIGN(PartyMessage a1, m.Send(n[0], first));
    // The same request again: the same answer, byte for byte (nothing new to combine).
    LeaderMessage again = first;
    again.mutable_sum_step()->set_masked(common::EncodeWords(std::vector<uint64_t>(
        m.Words(req), 12345)));  // other masks do not produce a fresh answer either
    ASSERT_OK_AND_ASSIGN(PartyMessage a2, m.Send(n[0], again));
    EXPECT_EQ(a1.SerializeAsString(), a2.SerializeAsString());
    // Another request under the same collect: refused.
    LeaderMessage replay = m.Step(0, n[1], other);
    replay.mutable_sum_step()->set_masked(Zeros(m.Words(other)));
    EXPECT_THAT(m.Send(n[0], replay),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "collect 0 was already answered for a different request"));
    // hospital-b handed the other request under a fresh collect cannot open a's hop (bound to
    // the first request), so no sum mixes a's counts for one request with b's for another.
    LeaderMessage mixed = m.Step(0, n[2], other);
    *mixed.mutable_sum_step()->mutable_sealed() = a1.sum_step().sealed();
    EXPECT_THAT(m.Send(n[1], mixed),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "the input does not open as sealed by 'hospital-a' for this request"));
    // An older collect after a newer one: refused.
    LeaderMessage newer = m.Step(1, n[1], req);
    newer.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK(m.Send(n[0], newer).status());
    EXPECT_THAT(m.Send(n[0], first),
                StatusIs(absl::StatusCode::kPermissionDenied, "collect 0 is older than collect 1"));
    // The same collect in another round is another request.
    LeaderMessage other_round = m.Step(1, n[1], req, /*round=*/2);
    other_round.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    EXPECT_THAT(m.Send(n[0], other_round),
                StatusIs(absl::StatusCode::kPermissionDenied, "already answered"));
  });
}

TEST(MaliciousLeader, ForgedSenderIsRefused) {
  ExpectNothingDependsOnOneParty("forged", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request();
    // What an honest hop's purpose is, read off a genuine first hop.
    LeaderMessage first = m.Step(0, n[1], req);
    first.mutable_sum_step()->set_masked(Zeros(m.Words(req)));
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m.Send(n[0], first));
    const std::string purpose = a.sum_step().sealed().purpose();
    // Zeros "from hospital-a" into hospital-b, sealed with the leader's key or anonymously:
    // with them the leader would read b + c, and a's counts by difference.
    for (bool anonymous : {false, true}) {
      LeaderMessage forged = m.Step(0, n[2], req);
      *forged.mutable_sum_step()->mutable_sealed() =
          m.Forge(n[0], n[1], purpose, 1, Zeros(m.Words(req)), anonymous);
      EXPECT_THAT(m.Send(n[1], forged),
                  StatusIs(absl::StatusCode::kPermissionDenied,
                           "the input does not open as sealed by 'hospital-a'"));
    }
  });
}

TEST(MaliciousLeader, OutOfRangeChunksAreRefused) {
  ExpectNothingDependsOnOneParty("chunks", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const common::StatsRequest req = m.Request();
    const size_t words = m.Words(req);
    auto step = [&](uint64_t collect) {
      LeaderMessage s = m.Step(collect, n[1], req);
      s.mutable_sum_step()->set_masked(Zeros(words));
      return s;
    };
    LeaderMessage offset = step(0);
    offset.mutable_sum_step()->set_chunk_offset(words);
    EXPECT_THAT(m.Send(n[0], offset), StatusIs(absl::StatusCode::kInvalidArgument,
                                               "secure-sum chunk lies outside the vector"));
    LeaderMessage huge_offset = step(1);
    huge_offset.mutable_sum_step()->set_chunk_offset(UINT64_MAX);
    EXPECT_THAT(m.Send(n[0], huge_offset), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    "secure-sum chunk lies outside the vector"));
    LeaderMessage too_long = step(2);
    too_long.mutable_sum_step()->set_masked(Zeros(words + 1));
    EXPECT_THAT(m.Send(n[0], too_long), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 "secure-sum chunk lies outside the vector"));
    LeaderMessage total = step(3);
    total.mutable_sum_step()->set_total_words(words + 1);
    EXPECT_THAT(m.Send(n[0], total),
                StatusIs(absl::StatusCode::kInvalidArgument, "words but this request needs"));
    LeaderMessage no_chunk = step(4);
    no_chunk.mutable_sum_step()->set_chunk(2);
    EXPECT_THAT(m.Send(n[0], no_chunk),
                StatusIs(absl::StatusCode::kInvalidArgument, "chunk 2 of 1 does not exist"));
    LeaderMessage zero_chunks = step(5);
    zero_chunks.mutable_sum_step()->set_chunks(0);
    EXPECT_THAT(m.Send(n[0], zero_chunks),
                StatusIs(absl::StatusCode::kInvalidArgument, "chunk 0 of 0 does not exist"));
    LeaderMessage late_chunk = step(6);
    late_chunk.mutable_sum_step()->set_chunks(2);
    late_chunk.mutable_sum_step()->set_chunk(1);
    EXPECT_THAT(m.Send(n[0], late_chunk),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "chunk 1 of collect 6 arrived before its first chunk"));
  });
}

// The leader sends the job an admin signed but names another recipient: the integrated table
// would go to someone the admin did not choose (issue 26 §1, "today it can change
// release.recipient").
TEST(MaliciousLeader, NamesADifferentRecipientIsRefused) {
  auto m = MaliciousLeader::Create("recipient", 0);
  ASSERT_NE(m, nullptr);
  const auto& n = m->names();
  // The admin signed "the leader receives"; the leader redirects the result to hospital-c.
  LeaderMessage msg = m->Prepare(n);
  msg.mutable_prepare()->set_recipient(n[2]);
  EXPECT_THAT(m->Send(n[0], msg),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "job not authorized: recipient differs from the admin's signed job"));
  // The admin chose hospital-b; the leader names itself.
  LeaderMessage to_b = m->Unsigned(n);
  to_b.mutable_prepare()->set_recipient(n[1]);
  ASSERT_OK(AuthorizePrepare(&to_b, m->admin()));
  to_b.mutable_prepare()->set_recipient("leader");
  EXPECT_THAT(m->Send(n[1], to_b),
              StatusIs(absl::StatusCode::kPermissionDenied, "recipient differs"));
  // Unchanged, the admin's job is accepted.
  to_b.mutable_prepare()->set_recipient(n[1]);
  EXPECT_OK(m->Send(n[1], to_b));
}

// The leader alters what the admin signed: the spec (a weaker K, another QID), the ring, a
// party's table; or it starts the same run again under a new job id, or signs a job itself.
TEST(MaliciousLeader, ChangesTheJobAfterAuthorizationIsRefused) {
  auto m = MaliciousLeader::Create("altered", 0);
  ASSERT_NE(m, nullptr);
  const auto& n = m->names();
  const LeaderMessage authorized = m->Prepare(n);

  LeaderMessage weaker = authorized;
  weaker.mutable_prepare()->mutable_spec()->mutable_privacy()->set_k(1000);
  EXPECT_THAT(m->Send(n[0], weaker),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "job not authorized: the job (spec or taxonomies, as this party loaded "
                       "them) differs from the admin's signed job"));
  LeaderMessage renamed = authorized;
  renamed.mutable_prepare()->mutable_spec()->mutable_attributes(0)->set_role(
      fedanon::v1::ROLE_OTHER);
  EXPECT_THAT(m->Send(n[0], renamed),
              StatusIs(absl::StatusCode::kPermissionDenied, "differs from the admin's signed job"));
  LeaderMessage reordered = authorized;
  reordered.mutable_prepare()->clear_ring();
  for (const std::string& p : {n[1], n[0], n[2]}) reordered.mutable_prepare()->add_ring(p);
  EXPECT_THAT(m->Send(n[0], reordered),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "job not authorized: ring differs from the admin's signed job"));
  LeaderMessage other_table = authorized;
  other_table.mutable_prepare()->set_data_path("other.csv");
  EXPECT_THAT(m->Send(n[0], other_table),
              StatusIs(absl::StatusCode::kPermissionDenied, "data path differs"));
  // The body tampered with (the ring inside the signed bytes): the signature no longer verifies.
  LeaderMessage tampered = reordered;
  fedanon::v1::AuthorizedJob body;
  ASSERT_TRUE(body.ParseFromString(authorized.prepare().authorization().body()));
  body.clear_ring();
  for (const std::string& p : {n[1], n[0], n[2]}) body.add_ring(p);
  tampered.mutable_prepare()->mutable_authorization()->set_body(body.SerializeAsString());
  EXPECT_THAT(m->Send(n[0], tampered),
              StatusIs(absl::StatusCode::kPermissionDenied, "the signature does not verify"));
  // No authorization at all, or one the leader made with its own (leader) certificate.
  EXPECT_THAT(m->Send(n[0], m->Unsigned(n)),
              StatusIs(absl::StatusCode::kPermissionDenied, "carries no admin authorization"));
  ASSERT_OK_AND_ASSIGN(crypto::IssuedCertificate leader_tls,
                       m->ca().IssueTls({crypto::Role::kLeader, "leader"}, {}, absl::Hours(1)));
  LeaderMessage self_signed = m->Unsigned(n);
  ASSERT_OK(AuthorizePrepare(&self_signed, {leader_tls.cert_pem, leader_tls.key_pem}));
  EXPECT_THAT(m->Send(n[0], self_signed),
              StatusIs(absl::StatusCode::kPermissionDenied, "is leader, not admin"));
  // The admin's job as signed is accepted once; the same run again under a new job id (a restart
  // from round 0 on the leader's say-so) is refused.
  EXPECT_OK(m->Send(n[0], authorized));
  LeaderMessage restarted = authorized;
  restarted.set_job_id("job-00000000bad2");
  EXPECT_THAT(m->Send(n[0], restarted),
              StatusIs(absl::StatusCode::kPermissionDenied, "run id already used"));
}

// ---- Vertical jobs: the leader relays the parties' signed proposals and verdicts. ----

// Two parties: hospital-a holds q0 and the sensitive attribute (it judges hospital-b's
// candidates), hospital-b holds q1. `tamper` alters the leader's requests in flight; returns the
// job's final state.
fedanon::v1::JobInfo RunTamperedVertical(
    const std::string& name,
    const std::function<void(const std::string&, LeaderMessage*)>& tamper) {
  constexpr char kVSpec[] = R"(name: signed-statements
attributes:
  - {name: ID, role: id}
  - {name: q0, role: qid, values: [a0, a1, a2, a3], party: hospital-a}
  - {name: q1, role: qid, values: [b0, b1, b2, b3], party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
  - {name: sens, role: sensitive, values: [d0, d1, d2], party: hospital-a}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [d0]}
score: infogain
partitioning: vertical
)";
  std::string a = "ID,cls,q0,sens\n", b = "ID,cls,q1\n";
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state](int n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<int>(state % static_cast<uint64_t>(n));
  };
  for (int r = 0; r < 120; ++r) {
    const int q0 = next(4), q1 = next(4);
    const std::string cls = (q1 % 2 == 0) == (next(10) < 8) ? "yes" : "no";
    absl::StrAppend(&a, "id-", r, ",", cls, ",a", q0, ",d", next(3), "\n");
    absl::StrAppend(&b, "id-", r, ",", cls, ",b", q1, "\n");
  }
  auto fed = InProcessFederation::Create(name, {{{"table.csv", a}}, {{"table.csv", b}}});
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return {};
  (*fed)->channel.set_tamper(tamper);
  auto spec = common::ParseJobSpecYaml(kVSpec, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return {};
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& p : (*fed)->names) req.add_parties(p);
  auto info = (*fed)->Submit(req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return {};
  return (*fed)->Wait(info->job_id());
}

// Without tampering the job runs, and candidates of both parties are applied (so the scenarios
// below exercise winners with and without a judge's verdict).
TEST(MaliciousLeader, VerticalSignedStatementsHonestRun) {
  std::atomic<int> commits_with_verdicts{0};
  const auto info = RunTamperedVertical("vsig_honest", [&](const std::string&, LeaderMessage* m) {
    if (m->has_vertical() && m->vertical().has_commit() &&
        m->vertical().commit().verdicts_size() > 0) {
      ++commits_with_verdicts;
    }
  });
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  EXPECT_GT(commits_with_verdicts.load(), 0);
  std::set<std::string> applied;
  for (const auto& step : info.report().steps()) applied.insert(step.attribute());
  EXPECT_EQ(applied, (std::set<std::string>{"q0", "q1"}));
}

// The leader alters another party's proposal on its way to the owner (a better score, or a
// Not-participate for a party that took part): the owner refuses.
TEST(MaliciousLeader, VerticalAlteredProposalIsRefused) {
  std::atomic<int> tampered{0};
  const auto info =
      RunTamperedVertical("vsig_proposal", [&](const std::string& to, LeaderMessage* m) {
        if (!m->has_vertical() || !m->vertical().has_winner()) return;
        for (auto& p : *m->mutable_vertical()->mutable_winner()->mutable_proposals()) {
          if (p.party() == to || !p.proposal().participate()) continue;
          p.mutable_proposal()->set_participate(false);
          p.mutable_proposal()->set_reason("no valid candidate");
          ++tampered;
          return;
        }
      });
  ASSERT_GT(tampered.load(), 0);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("forged vertical proposal: the proposal of '"));
}

// The leader announces as winner a proposal that is not the best one (it drops the best party's
// proposal from what it relays, or relays a candidate the owner did not propose).
TEST(MaliciousLeader, VerticalWinnerThatDidNotWinIsRefused) {
  std::atomic<int> tampered{0};
  const auto info = RunTamperedVertical("vsig_winner", [&](const std::string&, LeaderMessage* m) {
    if (!m->has_vertical() || !m->vertical().has_winner()) return;
    auto* winner = m->mutable_vertical()->mutable_winner();
    winner->mutable_candidate()->set_node(winner->candidate().node() + 1);
    ++tampered;
  });
  ASSERT_GT(tampered.load(), 0);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("forged vertical winner: the candidate is not the best signed "
                                   "proposal of the round"));
}

// The leader turns a judge's veto into an acceptance, or an acceptance into a veto, or commits
// without the judge's verdict: every party refuses the commit.
TEST(MaliciousLeader, VerticalForgedOrMissingVerdictIsRefused) {
  struct Case {
    std::string name;
    std::function<bool(fedanon::v1::VerticalCommit*)> alter;  // false: left unchanged
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"flip",
       [](fedanon::v1::VerticalCommit* c) {
         auto* v = c->mutable_verdicts(0);
         v->set_accept(!v->accept());
         c->set_accept(v->accept());
         return true;
       },
       "forged vertical verdict: the verdict of 'hospital-a' as relayed by the leader does not "
       "carry its signature"},
      {"drop",
       [](fedanon::v1::VerticalCommit* c) {
         c->clear_verdicts();
         c->set_accept(true);
         return true;
       },
       "forged vertical commit: no signed acceptance from judge 'hospital-a'"},
      {"veto",
       [](fedanon::v1::VerticalCommit* c) {
         if (!c->verdicts(0).accept()) return false;
         c->set_accept(false);
         return true;
       },
       "forged vertical commit: the leader drops a candidate no judge vetoed"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    std::atomic<int> tampered{0};
    const auto info =
        RunTamperedVertical("vsig_" + tc.name, [&](const std::string&, LeaderMessage* m) {
          if (!m->has_vertical() || !m->vertical().has_commit()) return;
          auto* commit = m->mutable_vertical()->mutable_commit();
          if (commit->verdicts_size() == 0) return;
          if (tc.alter(commit)) ++tampered;
        });
    ASSERT_GT(tampered.load(), 0);
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
    EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr(tc.reason));
  }
}

// ---- A cheating party: released counts that do not add up to the job's records. ----

// The released table is rebuilt by the leader from summed counts per (group, values). A party
// that adds one record that does not exist (modelled here by one more on the first hop's input,
// which the first party adds its counts to) makes the sum exceed the job's records: the leader
// refuses to write any row (leader/leader.cc ReleasedTableFromCounts) and the job fails with the
// named reason. An honest run of the same job releases every record.
TEST(CheatingParty, ReleasedCountsThatDoNotSumToTheRecordsAreRefused) {
  for (const bool cheat : {false, true}) {
    SCOPED_TRACE(cheat ? "cheating" : "honest");
    std::vector<std::map<std::string, std::string>> files;
    for (const auto& t : Tables(0)) files.push_back({{"table.csv", t}});
    ASSERT_OK_AND_ASSIGN(
        auto fed, InProcessFederation::Create(cheat ? "released_cheat" : "released_ok", files));
    std::atomic<int> altered{0};
    fed->channel.set_tamper([&](const std::string&, LeaderMessage* m) {
      if (!cheat || !m->has_sum_step()) return;
      auto* step = m->mutable_sum_step();
      if (step->request().released_groups_size() == 0 || !step->has_masked() ||
          step->chunk_offset() != 0 || step->masked().size() < 8) {
        return;
      }
      std::string words = step->masked();
      uint64_t w = 0;
      for (int i = 7; i >= 0; --i) w = (w << 8) | static_cast<uint8_t>(words[i]);
      ++w;
      for (int i = 0; i < 8; ++i) words[i] = static_cast<char>((w >> (8 * i)) & 0xff);
      step->set_masked(words);
      ++altered;
    });
    ASSERT_OK_AND_ASSIGN(auto spec, common::ParseJobSpecYaml(kSpec, "malicious.yaml"));
    fedanon::v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    for (const auto& p : fed->names) req.add_parties(p);
    ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo submitted, fed->Submit(req));
    const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
    if (!cheat) {
      ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
      ASSERT_OK_AND_ASSIGN(const std::string csv, fed->leader->Result(submitted.job_id()));
      // 6 + 6 + 9 records and a header line.
      EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 22);
      continue;
    }
    ASSERT_EQ(altered.load(), 1) << "the job did not release through counts";
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
    EXPECT_THAT(info.failure_reason(),
                ::testing::HasSubstr("the released counts add up to more than the job's 21 "
                                     "records (a party answered inconsistently); nothing was "
                                     "released"));
    EXPECT_FALSE(fed->leader->Result(submitted.job_id()).ok());
  }
}
}  // namespace
}  // namespace fedanon::testing
