// A leader that deviates from the protocol (docs/threat-model.md) against honest in-process
// parties: zero masks, a rerouted or shortened ring, a replayed collect with another request, a
// forged sender, out-of-range chunks. Each test asserts that the parties refuse with a named
// reason AND, independently of the parties' bookkeeping, that nothing the leader receives depends
// on one party's data alone: every scenario runs on two federations whose first party's table
// differs (the second party's compensates, so the sum is the same), and everything the leader
// can decode — error messages, the plaintext of every box sealed for it — must be identical.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/engine/final_check.h"
#include "common/engine/hierarchy.h"
#include "common/engine/local_recoding.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "crypto/secure_sum_masks.h"
#include "leader/final_check_ring.h"
#include "leader/secure_sum_source.h"
#include "party/testing/deviating_party.h"
#include "party/testing/observing_party.h"
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
  // `spec_yaml` and `tables` (one per party) default to kSpec and Tables(variant).
  static std::unique_ptr<MaliciousLeader> Create(
      const std::string& name, int variant, const char* spec_yaml = kSpec,
      std::vector<std::string> tables = {},
      const std::function<void(party::PartyAgentOptions&)>& customize = nullptr) {
    auto m = std::unique_ptr<MaliciousLeader>(new MaliciousLeader());
    std::vector<std::map<std::string, std::string>> files;
    if (tables.empty()) tables = Tables(variant);
    for (const auto& t : tables) files.push_back({{"table.csv", t}});
    auto fed = InProcessFederation::Create(absl::StrCat(name, "_", variant), files, customize);
    EXPECT_TRUE(fed.ok()) << fed.status();
    if (!fed.ok()) return nullptr;
    m->fed_ = *std::move(fed);
    auto seal = m->fed_->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
    EXPECT_TRUE(seal.ok());
    m->leader_cert_ = seal->cert_pem;
    m->leader_keys_ = *crypto::SealKeyPairFromPem(seal->key_pem);
    auto spec = spec::ParseJobSpecYaml(spec_yaml, "malicious.yaml");
    EXPECT_TRUE(spec.ok());
    m->spec_ = *spec;
    auto schema = table::BuildPublicSchema(*spec, {});
    EXPECT_TRUE(schema.ok());
    m->schema_ = std::make_unique<table::Dataset>(*std::move(schema));
    for (const auto& q : m->schema_->qids) m->hier_.emplace_back(&q);
    return m;
  }

  const std::vector<std::string>& names() const { return fed_->names; }
  const wire::AdminSigner& admin() const { return fed_->admin; }
  const crypto::CertificateAuthority& ca() const { return *fed_->ca; }
  const fedanon::v1::JobSpec& spec() const { return spec_; }
  const table::Dataset& schema() const { return *schema_; }
  wire::PartyChannel* channel() const { return &fed_->channel; }
  // Where a party writes the table it receives as recipient.
  std::string OutputDir(size_t party) const {
    return absl::StrCat(fed_->dir, "/", fed_->names[party], "/output");
  }

  // PrepareJob announcing every party, the leader, and `ring`, authorized by the federation's
  // admin exactly as it stands (the deviations these tests make come after the admin's signature).
  LeaderMessage Prepare(const std::vector<std::string>& ring,
                        const std::vector<std::string>& participants = {},
                        const std::string& leader_party = "") {
    LeaderMessage msg = Unsigned(ring, participants, leader_party);
    EXPECT_OK(AuthorizePrepare(&msg, fed_->admin));
    run_id_ = wire::RunIdOf(msg.prepare().authorization()).value_or("");
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
      p->set_sign_certificate(fed_->agents[agent]->sign_cert_pem());
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

  engine::StatsRequest Request(int variant_of_request = 0) const {
    engine::StatsRequest request;
    request.group_keys.push_back({0});
    if (variant_of_request == 0) request.node_class_counts.push_back({0, 0});
    return request;
  }
  size_t Words(const engine::StatsRequest& request) const {
    return engine::StatsLength(hier_, schema_->num_classes(), schema_->tracked.size(), request);
  }

  // One secure-sum hop as an honest leader would build it (then tampered with by the tests).
  LeaderMessage Step(uint64_t collect, const std::string& next, const engine::StatsRequest& request,
                     uint32_t round = 1) const {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(round);
    auto* step = msg.mutable_sum_step();
    *step->mutable_request() = wire::ToProto(request);
    step->set_collect(collect);
    step->set_chunk(0);
    step->set_chunks(1);
    step->set_chunk_offset(0);
    step->set_total_words(Words(request));
    step->set_chunk_words(Words(request));
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
        // Opened as the leader would: still under the first party's mask (Unmask removes it).
        const std::string opened = OpenAtLeader(msg, sealed);
        auto words = wire::DecodeWords(opened);
        if (words.ok()) masked_totals_[msg.sum_step().collect()] = *words;
        seen_.push_back(words.ok() ? "masked sum for leader" : opened);
      } else {
        seen_.push_back(absl::StrCat("sealed for ", sealed.receiver()));
        // The leader cannot open a box meant for a party, whatever sender or purpose it tries.
        for (const std::string& sender : fed_->names) {
          for (const std::string& receiver : {std::string("leader"), sealed.receiver()}) {
            const crypto::SealContext c{kJob,   run_id_,  msg.round(),
                                        sender, receiver, sealed.purpose()};
            EXPECT_FALSE(
                crypto::OpenFrom(*leader_keys_, *PartyKey(sender), c, sealed.ciphertext()).ok());
          }
        }
      }
    }
    return reply;
  }

  // Asks the ring's first party for its mask of `collect` and records the unmasked total the
  // leader then learns (the last hop of the collect must have come back through Send).
  absl::Status Unmask(uint64_t collect, uint32_t round = 1) {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(round);
    msg.mutable_sum_unmask()->set_collect(collect);
    absl::StatusOr<PartyMessage> reply = Send(fed_->names[0], msg);
    if (!reply.ok()) return reply.status();
    const auto& sealed = reply->sum_mask().seed();
    const crypto::SealContext c{kJob, run_id_, round, sealed.sender(), "leader", sealed.purpose()};
    auto seed = crypto::OpenFrom(*leader_keys_, *PartyKey(sealed.sender()), c, sealed.ciphertext());
    if (!seed.ok()) return seed.status();
    std::vector<uint64_t> total = masked_totals_[collect];
    auto mask = crypto::MaskWordsFromSeed(*seed, 0, total.size());
    if (!mask.ok()) return mask.status();
    for (size_t i = 0; i < total.size(); ++i) total[i] -= (*mask)[i];
    seen_.push_back(absl::StrCat("sum for leader: ", absl::StrJoin(total, ",")));
    return absl::OkStatus();
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
    const crypto::SealContext c{kJob,     run_id_,         msg.round(), sealed.sender(),
                                "leader", sealed.purpose()};
    auto opened =
        crypto::OpenFrom(*leader_keys_, *PartyKey(sealed.sender()), c, sealed.ciphertext());
    if (!opened.ok()) return absl::StrCat("unopenable: ", opened.status().message());
    return *opened;
  }

  // Seals `plaintext` with the leader's own key pair, claiming `sender` — the forgery of issue 26.
  fedanon::v1::SealedPayload Forge(const std::string& sender, const std::string& receiver,
                                   const std::string& purpose, uint32_t round,
                                   const std::string& plaintext, bool anonymous) const {
    const std::unique_ptr<crypto::SealPublicKey> key = PartyKey(receiver);
    const crypto::SealContext c{kJob, run_id_, round, sender, receiver, purpose};
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

  // The leader's own secure-sum source over `ring` (after PrepareAll(ring)), searching numbers
  // as `numeric` says, on the public hierarchies.
  std::unique_ptr<leader::SecureSumCountSource> SumSource(const std::vector<std::string>& ring,
                                                          engine::NumericSplitConfig numeric) {
    source_keys_.push_back(PartyKey(ring.front()));
    const crypto::SealPublicKey* first = source_keys_.back().get();
    source_keys_.push_back(PartyKey(ring.back()));
    const crypto::SealPublicKey* last = source_keys_.back().get();
    auto source = std::make_unique<leader::SecureSumCountSource>(
        &fed_->channel, kJob, ring, absl::Seconds(10), &hier_, schema_->num_classes(),
        schema_->tracked.size(), [] { return 1u; }, [] { return absl::OkStatus(); });
    source->set_numeric_split(numeric);
    source->set_sealing("leader", run_id_, leader_keys_.get(), first, last);
    return source;
  }

  const std::vector<std::string>& seen() const { return seen_; }
  const std::string& run_id() const { return run_id_; }
  const crypto::SealKeyPair& leader_keys() const { return *leader_keys_; }

 private:
  MaliciousLeader() = default;
  std::unique_ptr<InProcessFederation> fed_;
  std::string leader_cert_;
  std::unique_ptr<crypto::SealKeyPair> leader_keys_;
  fedanon::v1::JobSpec spec_;
  std::unique_ptr<table::Dataset> schema_;
  std::vector<engine::AttributeHierarchy> hier_;
  std::vector<std::string> seen_;
  std::string run_id_;                                       // of the job as the admin signed it
  std::map<uint64_t, std::vector<uint64_t>> masked_totals_;  // collect -> the last hop's words
  std::vector<std::unique_ptr<crypto::SealPublicKey>> source_keys_;  // SumSource's
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

std::string Zeros(size_t words) { return wire::EncodeWords(std::vector<uint64_t>(words, 0)); }

// The first party of the ring masks with a mask it draws itself: the leader has no mask to choose
// (zero masks once exposed hospital-a's counts to hospital-b), a later party takes no input but
// its predecessor's box, and what the leader learns is the sum of the whole ring only, once it
// holds the first party's mask (which comes with the first party's last hop since protocol 2.1).
TEST(MaliciousLeader, LeaderChosenMasksCannotExposeThePartiesToEachOther) {
  ExpectNothingDependsOnOneParty("own_masks", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const engine::StatsRequest req = m.Request();
    // A box "for hospital-a" as the first hop's input (the leader's zeros, sealed under its own
    // key, claiming hospital-c): refused, the first party starts from its own mask.
    LeaderMessage forced = m.Step(0, n[1], req);
    *forced.mutable_sum_step()->mutable_sealed() =
        m.Forge(n[2], n[0], "secure-sum", 1, Zeros(m.Words(req)), false);
    EXPECT_THAT(m.Send(n[0], forced),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "the ring's first party starts from its own mask, not from an input"));
    LeaderMessage first = m.Step(0, n[1], req);
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m.Send(n[0], first));
    EXPECT_EQ(a.sum_step().sealed().receiver(), n[1]);
    // No input straight to a later party, or to the last one with an empty next: refused.
    LeaderMessage to_b = m.Step(0, n[2], req);
    EXPECT_THAT(m.Send(n[1], to_b),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "input must be sealed by 'hospital-a' (the predecessor agreed at "
                         "Prepare) for 'hospital-b', got none"));
    LeaderMessage to_c = m.Step(0, "", req);
    EXPECT_THAT(m.Send(n[2], to_c), StatusIs(absl::StatusCode::kPermissionDenied,
                                             "input must be sealed by 'hospital-b'"));
    // The first party's mask went with its answer to the last chunk of collect 0 (protocol 2.1):
    // one mask per collect, none for collect 1.
    EXPECT_TRUE(a.sum_step().has_mask_seed());
    EXPECT_THAT(m.Unmask(1), StatusIs(absl::StatusCode::kPermissionDenied,
                                      "the mask of collect 1 is not held, or was handed over "
                                      "already for another request"));
    // Completing the ring honestly yields the unmasked total of all three — the sum it may learn.
    LeaderMessage second = m.Step(0, n[2], req);
    *second.mutable_sum_step()->mutable_sealed() = a.sum_step().sealed();
    ASSERT_OK_AND_ASSIGN(PartyMessage b, m.Send(n[1], second));
    LeaderMessage third = m.Step(0, "", req);
    *third.mutable_sum_step()->mutable_sealed() = b.sum_step().sealed();
    ASSERT_OK_AND_ASSIGN(PartyMessage c, m.Send(n[2], third));
    EXPECT_EQ(c.sum_step().sealed().receiver(), "leader");
    ASSERT_OK(m.Unmask(0));
    // The same request again: the same mask, sealed once (one request, one answer); only the
    // ring's first party holds one.
    ASSERT_OK(m.Unmask(0));
    LeaderMessage not_first;
    not_first.set_job_id(kJob);
    not_first.set_round(1);
    not_first.mutable_sum_unmask()->set_collect(0);
    EXPECT_THAT(m.Send(n[1], not_first),
                StatusIs(absl::StatusCode::kPermissionDenied, "this party holds no mask"));
  });
}

// What hospital-b opens of hospital-a's hop, whatever the leader does, is hospital-a's counts
// under hospital-a's own mask: over several collects, b's words are never a's counts and differ
// from run to run.
TEST(MaliciousLeader, TheSecondPartyNeverOpensTheFirstPartysCounts) {
  absl::Mutex mu;
  std::vector<std::string> opened_by_b;
  auto m = MaliciousLeader::Create("b_view", 0, kSpec, {}, [&](party::PartyAgentOptions& o) {
    if (o.name != "hospital-b") return;
    o.observer = party_testing::ObservingParty(
        [&](const std::string& sender, const std::string&, const std::string& plain) {
          absl::MutexLock lock(&mu);
          if (sender == "hospital-a") opened_by_b.push_back(plain);
        });
  });
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  const engine::StatsRequest req = m->Request();
  for (uint64_t collect = 0; collect < 8; ++collect) {
    ASSERT_OK_AND_ASSIGN(PartyMessage a, m->Send(n[0], m->Step(collect, n[1], req)));
    LeaderMessage second = m->Step(collect, n[2], req);
    *second.mutable_sum_step()->mutable_sealed() = a.sum_step().sealed();
    ASSERT_OK(m->Send(n[1], second));
  }
  absl::MutexLock lock(&mu);
  ASSERT_EQ(opened_by_b.size(), 8u);
  // hospital-a's table of variant 0: 5 x (ga, yes), 1 x (gb, no); group size first.
  std::set<std::string> distinct(opened_by_b.begin(), opened_by_b.end());
  EXPECT_EQ(distinct.size(), opened_by_b.size()) << "a mask was used twice";
  for (const std::string& plain : opened_by_b) {
    ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> words, wire::DecodeWords(plain));
    ASSERT_FALSE(words.empty());
    EXPECT_NE(words[0], 6u) << "hospital-b opened hospital-a's group size";
  }
}

TEST(MaliciousLeader, ReroutedRingIsRefused) {
  ExpectNothingDependsOnOneParty("reroute", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const engine::StatsRequest req = m.Request();
    // Skip hospital-b: a's output for c instead.
    LeaderMessage skip = m.Step(0, n[2], req);
    EXPECT_THAT(m.Send(n[0], skip),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "next is 'hospital-c' but this party's successor in the ring agreed at "
                         "Prepare is 'hospital-b'"));
    // Another order: start at hospital-b.
    LeaderMessage b_first = m.Step(0, n[0], req);
    EXPECT_THAT(m.Send(n[1], b_first), StatusIs(absl::StatusCode::kPermissionDenied,
                                                "successor in the ring agreed at Prepare"));
    // a's genuine output delivered to c (skipping b): c accepts only b's.
    LeaderMessage first = m.Step(0, n[1], req);
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
    const engine::StatsRequest req = m.Request();
    LeaderMessage first = m.Step(0, n[1], req);
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
  EXPECT_THAT(m->Send(n[0], step),
              StatusIs(absl::StatusCode::kFailedPrecondition, "no prepared job with this id"));
}

TEST(MaliciousLeader, ReplayedCollectWithAnotherRequestIsRefused) {
  ExpectNothingDependsOnOneParty("replay", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const engine::StatsRequest req = m.Request(0);
    const engine::StatsRequest other = m.Request(1);
    LeaderMessage first = m.Step(0, n[1], req);
    ASSERT_OK_AND_ASSIGN(PartyMessage a1, m.Send(n[0], first));
    // The same request again: the same answer, byte for byte (nothing new to combine).
    ASSERT_OK_AND_ASSIGN(PartyMessage a2, m.Send(n[0], first));
    EXPECT_EQ(a1.SerializeAsString(), a2.SerializeAsString());
    // Another request under the same collect: refused.
    LeaderMessage replay = m.Step(0, n[1], other);
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
    ASSERT_OK(m.Send(n[0], newer).status());
    EXPECT_THAT(m.Send(n[0], first),
                StatusIs(absl::StatusCode::kPermissionDenied, "collect 0 is older than collect 1"));
    // The same collect in another round is another request.
    LeaderMessage other_round = m.Step(1, n[1], req, /*round=*/2);
    EXPECT_THAT(m.Send(n[0], other_round),
                StatusIs(absl::StatusCode::kPermissionDenied, "already answered"));
  });
}

TEST(MaliciousLeader, ForgedSenderIsRefused) {
  ExpectNothingDependsOnOneParty("forged", [](MaliciousLeader& m) {
    const auto& n = m.names();
    const engine::StatsRequest req = m.Request();
    // What an honest hop's purpose is, read off a genuine first hop.
    LeaderMessage first = m.Step(0, n[1], req);
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
    const engine::StatsRequest req = m.Request();
    const size_t words = m.Words(req);
    auto step = [&](uint64_t collect) { return m.Step(collect, n[1], req); };
    LeaderMessage offset = step(0);
    offset.mutable_sum_step()->set_chunk_offset(words);
    EXPECT_THAT(m.Send(n[0], offset), StatusIs(absl::StatusCode::kInvalidArgument,
                                               absl::StrCat("chunk 0 of 1 at word ", words)));
    LeaderMessage huge_offset = step(1);
    huge_offset.mutable_sum_step()->set_chunk_offset(UINT64_MAX);
    EXPECT_THAT(m.Send(n[0], huge_offset),
                StatusIs(absl::StatusCode::kInvalidArgument, "does not exist"));
    LeaderMessage no_chunk_words = step(2);
    no_chunk_words.mutable_sum_step()->set_chunk_words(0);
    EXPECT_THAT(m.Send(n[0], no_chunk_words),
                StatusIs(absl::StatusCode::kInvalidArgument, "(0 words each"));
    LeaderMessage total = step(3);
    total.mutable_sum_step()->set_total_words(words + 1);
    total.mutable_sum_step()->set_chunk_words(words + 1);
    EXPECT_THAT(m.Send(n[0], total),
                StatusIs(absl::StatusCode::kInvalidArgument, "words but this request needs"));
    LeaderMessage no_chunk = step(4);
    no_chunk.mutable_sum_step()->set_chunk(2);
    EXPECT_THAT(m.Send(n[0], no_chunk),
                StatusIs(absl::StatusCode::kInvalidArgument, "chunk 2 of 1 at word 0"));
    LeaderMessage zero_chunks = step(5);
    zero_chunks.mutable_sum_step()->set_chunks(0);
    EXPECT_THAT(m.Send(n[0], zero_chunks),
                StatusIs(absl::StatusCode::kInvalidArgument, "chunk 0 of 0 at word 0"));
    LeaderMessage late_chunk = step(6);
    late_chunk.mutable_sum_step()->set_chunks(2);
    late_chunk.mutable_sum_step()->set_chunk(1);
    late_chunk.mutable_sum_step()->set_chunk_words((words + 1) / 2);
    late_chunk.mutable_sum_step()->set_chunk_offset((words + 1) / 2);
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

// Vertical jobs (issue 26, "parties re-check what they apply"): a leader that drives the rounds
// through a channel it controls. `tamper` may rewrite each request before it reaches a party and
// each reply before the leader reads it (the leader's own choices: which candidate wins, what it
// commits).
class TamperingChannel : public wire::PartyChannel {
 public:
  using Tamper = std::function<void(const std::string& party, LeaderMessage* request)>;
  using TamperReply = std::function<void(const std::string& party, PartyMessage* reply)>;
  TamperingChannel(wire::PartyChannel* inner, Tamper tamper, TamperReply tamper_reply)
      : inner_(inner), tamper_(std::move(tamper)), tamper_reply_(std::move(tamper_reply)) {}
  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration timeout) override {
    LeaderMessage sent = request;
    if (tamper_) {
      absl::MutexLock lock(&mu_);  // the leader prepares its parties in parallel
      tamper_(party, &sent);
    }
    absl::StatusOr<PartyMessage> reply = inner_->Call(party, sent, timeout);
    if (reply.ok() && tamper_reply_) {
      absl::MutexLock lock(&mu_);
      tamper_reply_(party, &*reply);
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

 private:
  wire::PartyChannel* inner_;
  Tamper tamper_;
  TamperReply tamper_reply_;
  absl::Mutex mu_;  // the tamper callbacks run one at a time
};

struct VerticalAttack {
  fedanon::v1::JobInfo info;
  std::vector<std::string> replies;  // every serialized party reply
  bool leader_has_result = false;
  bool party_wrote_output = false;
};

// Runs a vertical job between honest parties holding `tables` (party -> CSV) under a leader whose
// traffic passes through `tamper` / `tamper_reply`.
VerticalAttack RunVerticalAttack(
    const std::string& name, const std::string& spec_yaml, const std::vector<std::string>& tables,
    const std::map<std::string, std::string>& taxonomies, TamperingChannel::Tamper tamper,
    TamperingChannel::TamperReply tamper_reply = nullptr, const std::string& recipient = "",
    const std::function<void(party::PartyAgentOptions&)>& customize = nullptr) {
  VerticalAttack out;
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& t : tables) {
    std::map<std::string, std::string> f = taxonomies;
    f["table.csv"] = t;
    files.push_back(std::move(f));
  }
  auto fed = InProcessFederation::Create(name, files, customize);
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  auto mu = std::make_shared<absl::Mutex>();
  (*fed)->channel.set_observer([&out, mu](const std::string&, const std::string& bytes) {
    absl::MutexLock lock(mu.get());
    out.replies.push_back(bytes);
  });
  TamperingChannel channel(&(*fed)->channel, std::move(tamper), std::move(tamper_reply));
  auto seal = (*fed)->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(1));
  EXPECT_TRUE(seal.ok()) << seal.status();
  leader::LeaderOptions lo;
  lo.name = "leader";
  lo.data_dir = (*fed)->dir + "/deviating-leader";
  lo.round_timeout = absl::Seconds(20);
  lo.ca_pem = (*fed)->ca->cert_pem();
  lo.seal_cert_pem = seal->cert_pem;
  lo.seal_key_pem = seal->key_pem;
  auto leader = leader::Leader::Create(lo, &channel);
  EXPECT_TRUE(leader.ok()) << leader.status();
  if (!leader.ok()) return out;
  auto spec = spec::ParseJobSpecYaml(spec_yaml, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return out;
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& p : (*fed)->names) req.add_parties(p);
  req.set_recipient(recipient);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) (*req.mutable_taxonomies())[a.name()] = taxonomies.at(a.taxonomy());
  }
  std::map<std::string, std::string> texts(req.taxonomies().begin(), req.taxonomies().end());
  auto auth =
      wire::AuthorizeSubmission(req, spec::CanonicalJobBytes(req.spec(), texts), (*fed)->admin);
  EXPECT_TRUE(auth.ok()) << auth.status();
  if (!auth.ok()) return out;
  *req.mutable_authorization() = *auth;
  auto info = (*leader)->Submit(req, "admin");
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  for (int i = 0; i < 600; ++i) {
    auto got = (*leader)->WaitForChange(info->job_id(), out.info, absl::Milliseconds(100));
    if (got.ok()) out.info = *got;
    const auto state = out.info.state();
    if (state == fedanon::v1::JOB_STATE_DONE || state == fedanon::v1::JOB_STATE_FAILED ||
        state == fedanon::v1::JOB_STATE_CANCELLED) {
      break;
    }
  }
  out.leader_has_result = (*leader)->Result(info->job_id()).ok();
  for (const auto& p : (*fed)->names) {
    std::error_code ec;
    const std::string output = (*fed)->dir + "/" + p + "/output";
    if (!std::filesystem::exists(output, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(output, ec)) {
      // The released table would be <job id>.csv (the run ledger lives here too).
      out.party_wrote_output = out.party_wrote_output || entry.path().extension() == ".csv";
    }
  }
  return out;
}

// Nothing was released: the job failed, no party sent released columns (sealed or not), the
// leader holds no result and no party wrote one.
void ExpectNothingReleased(const VerticalAttack& a) {
  EXPECT_EQ(a.info.state(), fedanon::v1::JOB_STATE_FAILED) << a.info.DebugString();
  EXPECT_FALSE(a.leader_has_result);
  EXPECT_FALSE(a.party_wrote_output);
  ASSERT_FALSE(a.replies.empty());
  for (const auto& bytes : a.replies) {
    PartyMessage m;
    ASSERT_TRUE(m.ParseFromString(bytes));
    EXPECT_FALSE(m.has_vertical() && m.vertical().has_released()) << "a party released columns";
  }
}

// hospital-a holds only the sensitive attribute (the judge), hospital-b the QID q, whose
// specialization would let q=v0 infer d0 with confidence 0.8 > C = 0.5.
constexpr char kVetoSpec[] = R"(name: vertical-veto
attributes:
  - {name: id, role: id}
  - {name: q, role: qid, taxonomy: q.csv, party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
  - {name: s, role: sensitive, values: [d0, d1], party: hospital-a}
privacy: {model: lkc, L: 1, K: 2, C: 0.5, sensitive_values: [d0]}
partitioning: vertical
)";

std::vector<std::string> VetoTables() {
  std::string a = "id,cls,s\n", b = "id,cls,q\n";
  for (int i = 0; i < 80; ++i) {
    const bool v0 = i < 40;
    const bool d0 = v0 ? i < 32 : i < 46;  // 32 of 40 under v0, 6 of 40 under v1
    const char* cls = v0 ? "yes" : "no";
    absl::StrAppend(&a, "id", i, ",", cls, ",", d0 ? "d0" : "d1", "\n");
    absl::StrAppend(&b, "id", i, ",", cls, ",", v0 ? "v0" : "v1", "\n");
  }
  return {a, b};
}

// A vertical release goes only to the recipient the admin signed. The leader names a data party
// (which knows the release order, and would link every released row to its own records) in place
// of the leader the admin signed; or, when the admin signed hospital-b with the opt-in, names
// itself. Every party refuses to seal its columns by name; no party opens a column, the leader
// holds no result and no party writes one.
TEST(MaliciousLeader, AVerticalReleaseForARecipientTheAdminDidNotSignIsRefused) {
  const std::map<std::string, std::string> tax = {{"q.csv", "v0;ANY\nv1;ANY\n"}};
  struct Case {
    std::string name, signed_recipient, named;
    const char* spec;
  };
  const std::string with_opt_in =
      absl::StrCat(kVetoSpec, "release: {allow_data_holding_recipient: true}\n");
  for (const Case& c : {Case{"to_b", "", "hospital-b", kVetoSpec},
                        Case{"to_leader", "hospital-b", "leader", with_opt_in.c_str()}}) {
    SCOPED_TRACE(c.name);
    auto mu = std::make_shared<absl::Mutex>();
    auto opened = std::make_shared<std::vector<std::string>>();  // "receiver: purpose"
    std::atomic<int> renamed{0};
    const VerticalAttack attack = RunVerticalAttack(
        "vrecipient_" + c.name, c.spec, VetoTables(), tax,
        [&](const std::string&, LeaderMessage* msg) {
          if (msg->has_vertical() && msg->vertical().has_release()) {
            msg->mutable_vertical()->mutable_release()->set_recipient(c.named);
            ++renamed;
          }
        },
        nullptr, c.signed_recipient,
        [mu, opened](party::PartyAgentOptions& o) {
          o.observer = party_testing::ObservingParty(
              [mu, opened, receiver = o.name](const std::string&, const std::string& purpose,
                                              const std::string&) {
                absl::MutexLock lock(mu.get());
                opened->push_back(absl::StrCat(receiver, ": ", purpose));
              });
        });
    ASSERT_GT(renamed.load(), 0) << "the job never reached its release";
    ExpectNothingReleased(attack);
    EXPECT_THAT(attack.info.failure_reason(),
                ::testing::HasSubstr(absl::StrCat(
                    "vertical release: the leader names '", c.named,
                    "' as recipient, not the one the admin signed ('",
                    c.signed_recipient.empty() ? "leader" : c.signed_recipient, "')")));
    absl::MutexLock lock(mu.get());
    for (const std::string& o : *opened) {
      EXPECT_EQ(o.find("columns"), std::string::npos) << "a party opened released columns: " << o;
    }
  }
}

// The released counts (the released table as a multiset) go only to a leader the admin signed as
// the recipient: with a party as the signed recipient every party refuses them by name, before
// and after the final check.
TEST(MaliciousLeader, ReleasedCountsForAPartyRecipientAreRefused) {
  auto m = MaliciousLeader::Create("released_recipient", 0);
  ASSERT_NE(m, nullptr);
  const auto& n = m->names();
  LeaderMessage prepare = m->Unsigned(n);
  prepare.mutable_prepare()->set_recipient(n[2]);
  ASSERT_OK(AuthorizePrepare(&prepare, m->admin()));
  for (const auto& p : n) ASSERT_OK(m->Send(p, prepare));
  engine::StatsRequest released;
  released.released_groups.push_back({0});
  released.released_combinations = 2;
  for (size_t i = 0; i < n.size(); ++i) {
    EXPECT_THAT(m->Send(n[i], m->Step(0, i + 1 < n.size() ? n[i + 1] : "", released)),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "released counts: the admin signed 'hospital-c' as the recipient, not "
                         "the leader"));
  }
}

// numeric_split: binned. A leader that sets a threshold off the public cells, or a second
// threshold for an interval already split, would read the class counts of the interval's sides
// at a finer granularity than the cells — bisecting down to single values. Refused by name; a
// threshold on a cell boundary, once, is taken.
constexpr char kBinnedSpec[] = R"(name: binned
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 1}
numeric_split: binned
numeric_cells: 4
)";

std::vector<std::string> AgeTables() {
  std::vector<std::string> out;
  for (int p = 0; p < 3; ++p) {
    std::string t = "age,cls\n";
    for (int i = 0; i < 20; ++i)
      absl::StrAppend(&t, (p * 31 + i * 5) % 100, ",", i % 2 ? "yes" : "no", "\n");
    out.push_back(t);
  }
  return out;
}

fedanon::v1::StateUpdate SplitAt(uint64_t sequence, int32_t node, int32_t rank) {
  fedanon::v1::StateUpdate u;
  u.set_sequence(sequence);
  u.mutable_split()->set_attribute(0);
  u.mutable_split()->set_node(node);
  u.mutable_split()->set_split(rank);
  return u;
}

TEST(MaliciousLeader, ABinnedThresholdOffTheCellsOrASecondOneIsRefused) {
  auto m = MaliciousLeader::Create("binned_walk", 0, kBinnedSpec, AgeTables());
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  const std::vector<int32_t> cells =
      engine::PublicCellBounds(m->schema().qids[0], 4);  // 0, 26, 52, 78, 101 (ranks)
  ASSERT_EQ(cells.size(), 5u);
  // The attribute's bins, [0, 52) and [52, 101), asked once (collect 0; not summed to the end).
  engine::StatsRequest bins;
  bins.range_counts.push_back({0, {cells[0], cells[2], cells[4]}, true});
  ASSERT_OK(m->Send(n[0], m->Step(0, n[1], bins)));
  engine::StatsRequest req;
  req.group_keys.push_back({0});
  // Off the cells: one rank past a boundary.
  LeaderMessage off = m->Step(1, n[1], req);
  *off.mutable_sum_step()->add_updates() = SplitAt(0, 0, cells[1] + 1);
  EXPECT_THAT(m->Send(n[0], off),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("split threshold ", cells[1] + 1,
                                    " of attribute 0 is not a public-cell boundary")));
  // On a cell boundary inside a bin: its sides would difference the bin below K.
  LeaderMessage inside = m->Step(1, n[1], req);
  *inside.mutable_sum_step()->add_updates() = SplitAt(0, 0, cells[1]);
  EXPECT_THAT(m->Send(n[0], inside),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       absl::StrCat("split threshold ", cells[1],
                                    " of attribute 0 is not a boundary of its bins")));
  // On a bin boundary: taken; the same node again with another threshold: refused.
  LeaderMessage on = m->Step(1, n[1], req);
  *on.mutable_sum_step()->add_updates() = SplitAt(0, 0, cells[2]);
  {
    // The request's length follows the split it carries (the node gains its two candidates).
    std::vector<engine::AttributeHierarchy> hier;
    for (const auto& q : m->schema().qids) hier.emplace_back(&q);
    hier[0].SetSplit(0, cells[2]);
    const uint64_t words =
        engine::StatsLength(hier, m->schema().num_classes(), m->schema().tracked.size(), req);
    on.mutable_sum_step()->set_total_words(words);
    on.mutable_sum_step()->set_chunk_words(words);
  }
  ASSERT_OK(m->Send(n[0], on));
  LeaderMessage again = m->Step(2, n[1], req);
  *again.mutable_sum_step()->add_updates() = SplitAt(0, 0, cells[2]);
  *again.mutable_sum_step()->add_updates() = SplitAt(1, 0, cells[1]);
  EXPECT_THAT(m->Send(n[0], again),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the split of interval 0 of attribute 0 was decided already"));
}

constexpr char kBinnedKSpec[] = R"(name: binned-k
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 10}
numeric_split: binned
numeric_cells: 4
)";

// The union's records per public cell (ranks [0, 25), [25, 50), [50, 75), [75, 100)): 12, 5, 12
// and 11, dealt round-robin to `parties` parties. With K = 10 the bins are [0, 25), [25, 75) and
// [75, 100); the cell [25, 50) alone holds 5 records.
std::vector<std::string> BinTables(int parties) {
  std::vector<std::string> out(static_cast<size_t>(parties), "age,cls\n");
  int row = 0;
  auto add = [&](int age, int count) {
    for (int i = 0; i < count; ++i, ++row) {
      absl::StrAppend(&out[static_cast<size_t>(row % parties)], age + i % 3, ",",
                      row % 3 == 0 ? "yes" : "no", "\n");
    }
  };
  add(10, 12);
  add(30, 5);
  add(60, 12);
  add(85, 11);
  return out;
}

// issue 44: class counts over a bin of fewer than K records are never opened. An honest leader's
// bins (merged from the public cells' totals) pass the parties' bin check, and their class counts
// are the union's; a leader that asks for class counts over the bare cells, one of them holding 5
// records, is refused by name by the ring's last party (the comparison's evaluator) and then by
// the first, which keeps its mask: the leader never unmasks those class counts. With two and three
// data parties (with three the middle one takes no part in the comparison). A second set of bins
// for the same attribute is refused too.
TEST(MaliciousLeader, ClassCountsOverABinBelowKStayMaskedAndAreRefusedByName) {
  for (int parties : {2, 3}) {
    SCOPED_TRACE(absl::StrCat(parties, " data parties"));
    const engine::NumericSplitConfig numeric{
        .mode = fedanon::v1::NUMERIC_SPLIT_BINNED, .cells = 4, .min_split_bin = 0};
    auto m = MaliciousLeader::Create(absl::StrCat("bins_below_k_", parties), 0, kBinnedKSpec,
                                     BinTables(parties));
    ASSERT_NE(m, nullptr);
    ASSERT_OK(m->PrepareAll(m->names()));
    const std::vector<int32_t> cells = engine::PublicCellBounds(m->schema().qids[0], 4);
    ASSERT_EQ(cells, (std::vector<int32_t>{0, 25, 50, 75, 100}));
    auto source = m->SumSource(m->names(), numeric);
    engine::StatsRequest totals;
    totals.range_counts.push_back({0, cells, false});
    absl::StatusOr<std::vector<uint64_t>> cell_counts = source->Collect(totals);
    ASSERT_OK(cell_counts.status());
    EXPECT_EQ(*cell_counts, (std::vector<uint64_t>{12, 5, 12, 11}));

    // The deviating leader: class counts per cell (collect 1).
    engine::StatsRequest per_cell;
    per_cell.range_counts.push_back({0, cells, true});
    EXPECT_THAT(source->Collect(per_cell).status(),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "failed: a bin whose class counts the leader asked for holds fewer than "
                         "10 records and is not empty"));
    // The first party keeps its mask of them, by name.
    EXPECT_THAT(m->Unmask(1),
                StatusIs(absl::StatusCode::kPermissionDenied, "the check has not held"));
    if (parties == 3) {
      // The middle party takes no part in the comparison.
      LeaderMessage middle;
      middle.set_job_id(kJob);
      middle.set_round(1);
      middle.mutable_sum_bin_check()->set_collect(1);
      middle.mutable_sum_bin_check()->set_step(1);
      EXPECT_THAT(m->Send(m->names()[1], middle),
                  StatusIs(absl::StatusCode::kPermissionDenied,
                           "only the ring's first party (it holds the mask) and its last"));
    }

    // An honest leader in a fresh job: the bins merged from the cells' totals pass, and their
    // class counts are the union's.
    auto honest = MaliciousLeader::Create(absl::StrCat("bins_at_k_", parties), 0, kBinnedKSpec,
                                          BinTables(parties));
    ASSERT_NE(honest, nullptr);
    ASSERT_OK(honest->PrepareAll(honest->names()));
    auto honest_source = honest->SumSource(honest->names(), numeric);
    ASSERT_OK(honest_source->Collect(totals).status());
    const std::vector<int32_t> bins = engine::MergeCellsIntoBins(cells, *cell_counts, 10);
    ASSERT_EQ(bins, (std::vector<int32_t>{0, 25, 75, 100}));
    engine::StatsRequest per_bin;
    per_bin.range_counts.push_back({0, bins, true});
    absl::StatusOr<std::vector<uint64_t>> class_counts = honest_source->Collect(per_bin);
    ASSERT_OK(class_counts.status());
    // Row r is "yes" when r % 3 == 0: rows 0-11, 12-28 and 29-39 by bin.
    EXPECT_EQ(*class_counts, (std::vector<uint64_t>{4, 8, 6, 11, 4, 7}));
    // A second set of bins for the attribute would difference the first.
    engine::StatsRequest again;
    again.range_counts.push_back({0, {cells[0], cells[1], cells[4]}, true});
    EXPECT_THAT(honest_source->Collect(again).status(),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "class counts of attribute 0 were asked over bins already"));
  }
}

// The bin check's six messages against a leader that reorders, misdirects, forges and replays
// them (two data parties; the bins are the honest ones): each refused by name, the same step
// again answered with the same bytes, and the mask handed over only once the check held.
TEST(MaliciousLeader, BinCheckMessagesReorderedForgedOrReplayedAreRefusedByName) {
  auto m = MaliciousLeader::Create("bin_check_steps", 0, kBinnedKSpec, BinTables(2));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const std::string a = m->names()[0];  // garbler: it holds the mask
  const std::string b = m->names()[1];  // evaluator: it sealed the masked total
  engine::StatsRequest per_bin;
  const std::vector<int32_t> cells = engine::PublicCellBounds(m->schema().qids[0], 4);
  ASSERT_EQ(cells.size(), 5u);
  per_bin.range_counts.push_back({0, {cells[0], cells[1], cells[3], cells[4]}, true});
  absl::StatusOr<PartyMessage> hop = m->Send(a, m->Step(0, b, per_bin));
  ASSERT_OK(hop.status());
  EXPECT_FALSE(hop->sum_step().has_mask_seed()) << "a collect with bins keeps its mask";
  LeaderMessage last = m->Step(0, "", per_bin);
  *last.mutable_sum_step()->mutable_sealed() = hop->sum_step().sealed();
  ASSERT_OK(m->Send(b, last).status());
  EXPECT_THAT(m->Unmask(0),
              StatusIs(absl::StatusCode::kPermissionDenied, "the check has not held"));

  auto check = [&](uint32_t step, const fedanon::v1::SealedPayload* input, uint64_t collect = 0,
                   uint32_t round = 1) {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(round);
    msg.mutable_sum_bin_check()->set_collect(collect);
    msg.mutable_sum_bin_check()->set_step(step);
    if (input != nullptr) *msg.mutable_sum_bin_check()->mutable_input() = *input;
    return msg;
  };
  // Reordered and misdirected.
  EXPECT_THAT(m->Send(b, check(3, nullptr)),
              StatusIs(absl::StatusCode::kPermissionDenied, "takes a message sealed by"));
  EXPECT_THAT(m->Send(b, check(2, nullptr)),
              StatusIs(absl::StatusCode::kInvalidArgument, "is not this party's (the evaluator)"));
  EXPECT_THAT(m->Send(b, check(1, nullptr, 7)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "a bin check of collect 7, but the current collect is 0"));
  EXPECT_THAT(m->Send(b, check(1, nullptr, 0, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, "is asked in round 2"));
  absl::StatusOr<PartyMessage> s1 = m->Send(b, check(1, nullptr));
  ASSERT_OK(s1.status());
  const fedanon::v1::SealedPayload m1 = s1->sum_bin_checked().sealed();
  EXPECT_EQ(m1.receiver(), a);
  // The same step again: the same answer.
  absl::StatusOr<PartyMessage> s1_again = m->Send(b, check(1, nullptr));
  ASSERT_OK(s1_again.status());
  EXPECT_EQ(s1_again->SerializeAsString(), s1->SerializeAsString());
  // Forged: the leader seals its own message under the evaluator's name.
  const fedanon::v1::SealedPayload forged =
      m->Forge(b, a, m1.purpose(), 1, "FSC1 not a comparison message", false);
  EXPECT_THAT(m->Send(a, check(2, &forged)),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not open as sealed by"));
  absl::StatusOr<PartyMessage> s2 = m->Send(a, check(2, &m1));
  ASSERT_OK(s2.status());
  const fedanon::v1::SealedPayload m2 = s2->sum_bin_checked().sealed();
  // Step 2 again with another input: refused (one request, one answer).
  EXPECT_THAT(m->Send(a, check(2, &forged)), StatusIs(absl::StatusCode::kPermissionDenied,
                                                      "was answered already for another input"));
  // A message handed back to its own sender, and one skipped ahead.
  EXPECT_THAT(m->Send(a, check(4, &m2)),
              StatusIs(absl::StatusCode::kPermissionDenied, "takes a message sealed by"));
  EXPECT_THAT(m->Send(b, check(5, &m2)),
              StatusIs(absl::StatusCode::kPermissionDenied, "does not open as sealed by"));
  // On in order: the check holds and the mask comes with the garbler's step 6 (protocol 5.0),
  // the box a SumUnmask then gets too; the bins' class counts are the union's.
  fedanon::v1::SealedPayload carried = m2;
  fedanon::v1::SealedPayload with_step_six;
  for (uint32_t step = 3; step <= 6; ++step) {
    absl::StatusOr<PartyMessage> r = m->Send(step % 2 == 1 ? b : a, check(step, &carried));
    ASSERT_TRUE(r.ok()) << "step " << step << ": " << r.status();
    EXPECT_EQ(r->sum_bin_checked().has_mask_seed(), step == 6) << "step " << step;
    carried = r->sum_bin_checked().sealed();
    with_step_six = r->sum_bin_checked().mask_seed();
  }
  EXPECT_EQ(with_step_six.sender(), a);
  EXPECT_EQ(with_step_six.receiver(), "leader");
  LeaderMessage unmask;
  unmask.set_job_id(kJob);
  unmask.set_round(1);
  unmask.mutable_sum_unmask()->set_collect(0);
  absl::StatusOr<PartyMessage> asked = m->Send(a, unmask);
  ASSERT_OK(asked.status());
  EXPECT_EQ(asked->sum_mask().seed().SerializeAsString(), with_step_six.SerializeAsString());
  ASSERT_OK(m->Unmask(0));
  EXPECT_EQ(m->seen().back(), "sum for leader: 4,8,6,11,4,7");
}

// ---- Local recoding's within-group bins (numeric_split: binned, protocol 5.0). ----

constexpr char kLocalBinnedSpec[] = R"(name: local-binned
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: q, role: qid, values: [qa, qb]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
recoding: local
privacy: {model: lkc, L: 2, K: 10}
numeric_split: binned
numeric_cells: 4
)";

// One record of the local binned tables: its age, whether q is "qa", whether it is "yes".
struct LocalBinRow {
  int age = 0;
  bool qa = false;
  bool yes = false;
};

// 40 records in the four public cells (12, 5, 12 and 11), so the global bins at K = 10 are the
// first cell (A: 12 records), the middle two (B: 17) and the last (C: 11). By q: A holds 2 qa and
// 10 qb, B 12 qa (its second cell) and 5 qb (its first), C 3 qa and 8 qb. So the group q = qa
// holds 2, 12 and 3 records per global bin (one within-group bin of 17 under K = 10), and the
// group q = qb 10, 5 and 8 (within-group bins [A] and [B, C] of 10 and 13 records).
std::vector<LocalBinRow> LocalBinRows() {
  std::vector<LocalBinRow> rows;
  auto add = [&rows](int age, int count, int qa) {
    for (int i = 0; i < count; ++i) {
      const int r = static_cast<int>(rows.size());
      rows.push_back({age + i % 3, i < qa, r % 3 == 0});
    }
  };
  add(10, 12, 2);
  add(30, 5, 0);
  add(60, 12, 12);
  add(85, 11, 3);
  return rows;
}

std::vector<std::string> LocalBinTables(int parties) {
  std::vector<std::string> out(static_cast<size_t>(parties), "age,q,cls\n");
  const std::vector<LocalBinRow> rows = LocalBinRows();
  for (size_t r = 0; r < rows.size(); ++r) {
    absl::StrAppend(&out[r % static_cast<size_t>(parties)], rows[r].age, ",",
                    rows[r].qa ? "qa" : "qb", ",", rows[r].yes ? "yes" : "no", "\n");
  }
  return out;
}

// The union's labelled words [count, yes, no] per range of ages [lo_i, lo_{i+1}) among the rows
// `in_group` keeps, counted from the rows themselves.
std::vector<uint64_t> LocalBinWords(const std::vector<int>& age_bounds,
                                    const std::function<bool(const LocalBinRow&)>& in_group) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 1 < age_bounds.size(); ++i) {
    uint64_t count = 0, yes = 0;
    for (const LocalBinRow& row : LocalBinRows()) {
      if (!in_group(row) || row.age < age_bounds[i] || row.age >= age_bounds[i + 1]) continue;
      ++count;
      yes += row.yes ? 1 : 0;
    }
    out.insert(out.end(), {count, yes, count - yes});
  }
  return out;
}

void SetLocalGroup(int32_t group, const std::vector<engine::LocalValue>& key,
                   fedanon::v1::LocalGroupRef* out) {
  out->set_group(group);
  for (const engine::LocalValue& v : key) {
    auto* k = out->add_key();
    k->set_node(v.node);
    k->set_lo(v.lo);
    k->set_hi(v.hi);
  }
}

// A request of labelled ranges of `key`'s age over fine children `bounds` (global bins).
fedanon::v1::StatsRequest LocalRanges(int32_t group, const std::vector<engine::LocalValue>& key,
                                      const std::vector<int32_t>& bounds) {
  fedanon::v1::StatsRequest request;
  auto* r = request.mutable_local()->add_ranges();
  SetLocalGroup(group, key, r->mutable_group());
  r->set_attribute(0);
  for (int32_t b : bounds) r->add_bounds(b);
  return request;
}

fedanon::v1::StateUpdate LocalSplitUpdate(int32_t group, const std::vector<engine::LocalValue>& key,
                                          uint32_t attribute, const std::vector<int>& child_of_fine,
                                          const std::vector<int32_t>& new_ids) {
  fedanon::v1::StateUpdate u;
  auto* s = u.mutable_local_split();
  SetLocalGroup(group, key, s->mutable_group());
  s->set_attribute(attribute);
  for (int c : child_of_fine) s->add_child_of_fine(c);
  for (int32_t id : new_ids) s->add_new_ids(id);
  return u;
}

// issue 44: a local job's within-group bins are checked as global bins are. An honest leader's
// within-group bins (merged from a group's unlabelled counts per global bin to at least K) pass the
// bin check and their class counts are the union's; a leader that asks a group's class counts per
// global bin, one holding 2 records, is refused by name by the comparing parties and the first
// keeps its mask; a group's bins asked a second time, a threshold split off the group's
// within-group bins, and one before its bins were asked are refused by name. Two and three data
// parties.
TEST(MaliciousLeader, LocalWithinGroupBinsBelowKStayMaskedAndSplitsKeepToThem) {
  for (int parties : {2, 3}) {
    SCOPED_TRACE(absl::StrCat(parties, " data parties"));
    const engine::NumericSplitConfig numeric{
        .mode = fedanon::v1::NUMERIC_SPLIT_BINNED, .cells = 4, .min_split_bin = 0};
    auto m = MaliciousLeader::Create(absl::StrCat("local_bins_", parties), 0, kLocalBinnedSpec,
                                     LocalBinTables(parties));
    ASSERT_NE(m, nullptr);
    ASSERT_OK(m->PrepareAll(m->names()));
    const table::Dataset& schema = m->schema();
    const std::vector<int32_t> cells = engine::PublicCellBounds(schema.qids[0], 4);
    ASSERT_EQ(cells.size(), 5u);
    // The public cells hold ages [0, 25), [25, 50), [50, 75), [75, 100) (ranks are ages here).
    ASSERT_EQ(cells, (std::vector<int32_t>{0, 25, 50, 75, 100}));
    const std::vector<int32_t> global_bins = {cells[0], cells[1], cells[3], cells[4]};
    const std::vector<int> ages = {cells[0], cells[1], cells[3], cells[4]};
    auto source = m->SumSource(m->names(), numeric);
    fedanon::v1::StateUpdate setup;
    auto* age_bins = setup.mutable_local_setup()->add_bins();
    for (const int32_t b : global_bins) age_bins->add_bounds(b);
    setup.mutable_local_setup()->add_bins();  // q: none
    source->AddUpdate(setup);
    const engine::LocalFineMap fine(&schema, true, {global_bins, {}});
    const std::vector<engine::LocalValue> root = engine::LocalRootKey(schema);
    constexpr size_t kWidth = 3;  // count, yes, no

    // The root's within-group bins are the global bins (12, 17, 11): they pass.
    absl::StatusOr<std::vector<uint64_t>> root_words =
        source->CollectProto(LocalRanges(0, root, {0, 1, 2, 3}), 3 * kWidth, /*bins=*/true);
    ASSERT_OK(root_words.status());
    EXPECT_EQ(*root_words, LocalBinWords(ages, [](const LocalBinRow&) { return true; }));

    // Split the root on q: group 1 is qa, group 2 qb.
    ASSERT_OK_AND_ASSIGN(const std::vector<engine::LocalValue> qs,
                         engine::LocalChildValues(schema, fine, 1, root[1], {0, 1}));
    ASSERT_EQ(qs.size(), 2u);
    std::vector<engine::LocalValue> qa = root, qb = root;
    qa[1] = qs[0];
    qb[1] = qs[1];
    source->AddUpdate(LocalSplitUpdate(0, root, 1, {0, 1}, {1, 2}));
    // Group qb's honest within-group bins: [A] and [B, C] (10 and 13 records).
    absl::StatusOr<std::vector<uint64_t>> qb_words =
        source->CollectProto(LocalRanges(2, qb, {0, 1, 3}), 2 * kWidth, /*bins=*/true);
    ASSERT_OK(qb_words.status());
    EXPECT_EQ(*qb_words, LocalBinWords({ages[0], ages[1], ages[3]},
                                       [](const LocalBinRow& r) { return !r.qa; }));
    // Asked again, with other bins: they would difference the first.
    EXPECT_THAT(source->CollectProto(LocalRanges(2, qb, {0, 2, 3}), 2 * kWidth, true).status(),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "class counts of 'age' in group 2 were asked over within-group bins "
                         "already"));

    // Splits sent by hand with the next collect (sequences 0 and 1 went: the setup, the split).
    const std::string first = m->names()[0];
    auto split_step = [&](fedanon::v1::StateUpdate split, uint64_t collect) {
      split.set_sequence(2);
      LeaderMessage msg;
      msg.set_job_id(kJob);
      msg.set_round(1);
      auto* step = msg.mutable_sum_step();
      *step->mutable_request() = LocalRanges(1, qa, {0, 3});
      *step->add_updates() = std::move(split);
      step->set_collect(collect);
      step->set_chunks(1);
      step->set_total_words(kWidth);
      step->set_chunk_words(kWidth);
      step->set_next(m->names()[1]);
      return msg;
    };
    // qb at fine child 2 (inside its bin [B, C]): its sides would difference that bin.
    EXPECT_THAT(m->Send(first, split_step(LocalSplitUpdate(2, qb, 0, {0, 0, 1}, {3, 4}), 4)),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "the threshold of 'age' in group 2 at bin 2 is not a boundary of the "
                         "group's within-group bins"));
    // qa before any of its bins were asked.
    EXPECT_THAT(m->Send(first, split_step(LocalSplitUpdate(1, qa, 0, {0, 1, 1}, {3, 4}), 4)),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "a threshold of 'age' in group 1 comes before any class counts over its "
                         "within-group bins were asked"));

    // The deviating leader: qa's class counts per global bin (2, 12 and 3 records).
    EXPECT_THAT(source->CollectProto(LocalRanges(1, qa, {0, 1, 2, 3}), 3 * kWidth, true).status(),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "failed: a bin whose class counts the leader asked for holds fewer than "
                         "10 records and is not empty"));
    // The first party keeps its mask of them (collect 3, after the root's, qb's and qb's again;
    // the refused splits started no collect).
    EXPECT_THAT(m->Unmask(3),
                StatusIs(absl::StatusCode::kPermissionDenied, "the check has not held"));
  }
}

// The judge vetoes hospital-b's candidate; the leader commits it anyway (accept = true). The judge
// re-checks and refuses, the owner refuses to apply its own candidate without the judge's sealed
// acceptance; the job fails with the named reason and nothing is released.
TEST(MaliciousLeader, VerticalCommitOfAVetoedCandidateIsRefused) {
  const std::map<std::string, std::string> tax = {{"q.csv", "v0;ANY\nv1;ANY\n"}};
  // First the honest run: the candidate is vetoed and the table stays fully generalized.
  const VerticalAttack honest =
      RunVerticalAttack("vveto_honest", kVetoSpec, VetoTables(), tax, nullptr);
  ASSERT_EQ(honest.info.state(), fedanon::v1::JOB_STATE_DONE) << honest.info.failure_reason();
  EXPECT_EQ(honest.info.report().steps_size(), 0);
  int vetoes = 0;
  for (const auto& bytes : honest.replies) {
    PartyMessage m;
    ASSERT_TRUE(m.ParseFromString(bytes));
    vetoes += m.has_vertical() && m.vertical().has_verdict() && !m.vertical().verdict().accept();
  }
  ASSERT_EQ(vetoes, 1) << "the scenario needs the judge to veto";

  const VerticalAttack attack = RunVerticalAttack(
      "vveto_commit", kVetoSpec, VetoTables(), tax, [](const std::string&, LeaderMessage* msg) {
        if (msg->has_vertical() && msg->vertical().has_commit()) {
          msg->mutable_vertical()->mutable_commit()->set_accept(true);
        }
      });
  ExpectNothingReleased(attack);
  // Refused by name: the signed verdicts relayed with the commit show the veto (the first check
  // a party makes), or, without them, the judge's own re-check.
  const std::string& reason = attack.info.failure_reason();
  EXPECT_TRUE(reason.find("forged vertical commit: the leader commits a candidate a judge "
                          "vetoed") != std::string::npos ||
              reason.find("refused to apply a specialization that fails this party's own check "
                          "of the privacy model") != std::string::npos)
      << reason;
}

// k-anonymity: q0 (at hospital-a) has a value held by 2 records, so specializing q0 breaks k = 5
// and no honest party proposes it. The leader makes it the winner anyway (as if hospital-a had
// proposed it): hospital-a, the holder, re-checks its own split and refuses to instruct it.
TEST(MaliciousLeader, VerticalWinnerThatBreaksKIsRefusedByItsHolder) {
  constexpr char kSpec[] = R"(name: vertical-k
attributes:
  - {name: id, role: id}
  - {name: q0, role: qid, taxonomy: q0.csv, party: hospital-a}
  - {name: q1, role: qid, taxonomy: q1.csv, party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy:
  model: templates
  templates:
    - {qid: [q0, q1], k: 5}
partitioning: vertical
)";
  const std::map<std::string, std::string> tax = {{"q0.csv", "r0;ANY\nr1;ANY\n"},
                                                  {"q1.csv", "w0;ANY\nw1;ANY\n"}};
  std::string a = "id,cls,q0\n", b = "id,cls,q1\n";
  for (int i = 0; i < 40; ++i) {
    const char* cls = i % 2 ? "yes" : "no";
    absl::StrAppend(&a, "id", i, ",", cls, ",", i < 2 ? "r1" : "r0", "\n");
    absl::StrAppend(&b, "id", i, ",", cls, ",", i % 2 ? "w0" : "w1", "\n");
  }
  const VerticalAttack attack = RunVerticalAttack(
      "vk_winner", kSpec, {a, b}, tax, nullptr, [](const std::string& party, PartyMessage* reply) {
        if (party != "hospital-a" || !reply->has_vertical() || !reply->vertical().has_proposal()) {
          return;
        }
        // The leader's choice: q0's root candidate (attribute 0, node 0, candidate 0) wins.
        auto* p = reply->mutable_vertical()->mutable_proposal();
        p->set_participate(true);
        p->mutable_candidate()->set_attribute(0);
        p->mutable_candidate()->set_node(0);
        p->mutable_candidate()->set_candidate(0);
        p->mutable_candidate()->set_score(1e9);
      });
  ExpectNothingReleased(attack);
  // A round's proposal names no candidate (the candidate stays at its party until the secure
  // comparison names it the winner), and the altered one no longer carries its party's
  // signature: the computing parties refuse it before the holder's own re-check could run.
  const std::string& reason = attack.info.failure_reason();
  EXPECT_TRUE(reason.find("forged vertical comparison: the proposal of 'hospital-a' names a "
                          "candidate") != std::string::npos ||
              reason.find("refused to apply a specialization that fails this party's own check "
                          "of the privacy model: q0 ANY") != std::string::npos)
      << reason;
}

}  // namespace
}  // namespace fedanon::testing

namespace fedanon::testing {
namespace {

// The final check (docs/threat-model.md, "The final check"): K=3 over one attribute whose values
// the parties hold 5 / 2 / 6 times in all (two splits of the same sums across the parties).
constexpr char kSpecK3[] = R"(name: malicious-k
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 3}
)";

std::vector<std::string> TablesK3(int variant) {
  if (variant == 0) return {Table(3, 1, 0), Table(2, 1, 2), Table(0, 0, 4)};
  return {Table(1, 2, 1), Table(4, 0, 1), Table(0, 0, 4)};
}

// An instruction disclosing value `value` of g (suppression: candidate = hidden value index).
fedanon::v1::StateUpdate Disclose(int value) {
  fedanon::v1::StateUpdate u;
  u.set_sequence(0);
  auto* in = u.mutable_instruction();
  in->set_attribute(0);
  in->set_node(0);
  in->set_candidate(value);
  return u;
}

// The length of the final-check vector after `update`, as an honest leader computes it.
uint64_t FinalCheckWords(const MaliciousLeader& m, const fedanon::v1::StateUpdate& update) {
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : m.schema().qids) hier.emplace_back(&q);
  hier[0].Specialize(update.instruction().node(), update.instruction().candidate());
  auto model = engine::BuildPrivacyModel(m.spec(), m.schema());
  EXPECT_TRUE(model.ok()) << model.status();
  auto layout = engine::BuildFinalCheckLayout(*model, m.schema(), hier, "*");
  EXPECT_TRUE(layout.ok()) << layout.status();
  return layout.ok() ? layout->words : 0;
}

leader::FinalCheckRing Ring(const MaliciousLeader& m) {
  leader::FinalCheckRing ring;
  ring.channel = m.channel();
  ring.job_id = kJob;
  ring.ring = m.names();
  ring.round = 2;
  ring.timeout = absl::Seconds(10);
  return ring;
}

// A union step as an honest leader sends it to `party` (recipient: the leader).
LeaderMessage UnionStepFor(const MaliciousLeader& m, size_t party) {
  LeaderMessage msg;
  msg.set_job_id(kJob);
  msg.set_round(2);
  auto* step = msg.mutable_union_step();
  step->set_recipient("leader");
  step->set_next(party + 1 < m.names().size() ? m.names()[party + 1] : "leader");
  return msg;
}

TEST(MaliciousLeader, SpecializationBreakingKIsRefusedByEveryParty) {
  std::vector<std::vector<std::string>> seen;
  for (int variant : {0, 1}) {
    auto m = MaliciousLeader::Create("breakk", variant, kSpecK3, TablesK3(variant));
    ASSERT_NE(m, nullptr);
    ASSERT_OK(m->PrepareAll(m->names()));
    const auto& n = m->names();
    // Disclosing gb leaves a global group of 2 records under K=3 (the instruction carries no
    // group sizes for the leader to misstate: each party sums them itself).
    const fedanon::v1::StateUpdate cheat = Disclose(1);
    const absl::Status check = leader::RunFinalCheck(Ring(*m), {cheat}, FinalCheckWords(*m, cheat));
    ASSERT_THAT(check, StatusIs(absl::StatusCode::kFailedPrecondition,
                                "final check: the parties refuse to release: "));
    for (const auto& party : n) {
      EXPECT_THAT(std::string(check.message()),
                  ::testing::HasSubstr(absl::StrCat(
                      "party '", party,
                      "': refuses to release: final check failed: {g} k=3: group (g=gb) holds 2 "
                      "records, fewer than 3")));
    }
    seen.emplace_back().push_back(std::string(check.message()));
    // The leader goes on regardless: every party refuses the union with the same reason, and the
    // released-counts sum too; no row reaches the recipient (the leader).
    for (size_t i = 0; i < n.size(); ++i) {
      absl::StatusOr<PartyMessage> reply = m->Send(n[i], UnionStepFor(*m, i));
      EXPECT_THAT(reply, StatusIs(absl::StatusCode::kPermissionDenied,
                                  absl::StrCat("party '", n[i],
                                               "': secure union: refuses to release: final check "
                                               "failed: {g} k=3: group (g=gb) holds 2 records")));
      engine::StatsRequest released;
      released.released_groups.push_back({1});
      released.released_combinations = 2;
      LeaderMessage sum = m->Step(1, i + 1 < n.size() ? n[i + 1] : "", released, 2);
      EXPECT_THAT(m->Send(n[i], sum),
                  StatusIs(absl::StatusCode::kPermissionDenied, "refuses to release"));
    }
    // A new instruction after the check is refused too: the cut is fixed.
    LeaderMessage more = m->Step(1, n[1], m->Request(), 2);
    fedanon::v1::StateUpdate next = Disclose(0);
    next.set_sequence(1);
    *more.mutable_sum_step()->add_updates() = next;
    EXPECT_THAT(m->Send(n[0], more),
                StatusIs(absl::StatusCode::kPermissionDenied, "after the final check"));
    for (const auto& line : m->seen()) seen.back().push_back(line);
  }
  EXPECT_EQ(seen[0], seen[1]) << "the leader learned something that depends on hospital-a alone";
}

// The same global counts as TablesK3, held by two parties.
std::vector<std::string> TablesK3TwoParties(int variant) {
  if (variant == 0) return {Table(3, 1, 0), Table(2, 1, 6)};
  return {Table(1, 2, 1), Table(4, 0, 5)};
}

// Two data parties: no ring sum (it would hand each the other's counts); the two decide every
// group size by secure comparisons, the leader relaying sealed messages. A cut that leaves a group
// of K - 1 records is refused by both, by name, and the release with it, whichever way the
// records are split between them.
TEST(MaliciousLeader, TwoPartiesRefuseAGroupBelowKBySecureComparison) {
  std::vector<std::vector<std::string>> seen;
  for (int variant : {0, 1}) {
    auto m = MaliciousLeader::Create("breakk2", variant, kSpecK3, TablesK3TwoParties(variant));
    ASSERT_NE(m, nullptr);
    ASSERT_OK(m->PrepareAll(m->names()));
    const auto& n = m->names();
    ASSERT_EQ(n.size(), 2u);
    // The ring sum is refused outright with two parties.
    EXPECT_THAT(leader::RunFinalCheck(Ring(*m), {Disclose(1)}, FinalCheckWords(*m, Disclose(1))),
                StatusIs(absl::StatusCode::kFailedPrecondition, "three or more"));
    LeaderMessage sum;
    sum.set_job_id(kJob);
    sum.set_round(2);
    sum.mutable_final_check()->set_phase(fedanon::v1::FinalCheckStep::PHASE_SUM);
    sum.mutable_final_check()->set_chunks(1);
    sum.mutable_final_check()->set_chunk_words(FinalCheckWords(*m, Disclose(1)));
    sum.mutable_final_check()->set_total_words(FinalCheckWords(*m, Disclose(1)));
    EXPECT_THAT(m->Send(n[0], sum),
                StatusIs(absl::StatusCode::kFailedPrecondition, "would reveal the other party's"));
    // Disclosing gb leaves a global group of 2 records under K=3.
    const fedanon::v1::StateUpdate cheat = Disclose(1);
    const absl::StatusOr<uint32_t> check =
        leader::RunTwoPartyFinalCheck(Ring(*m), {cheat}, FinalCheckWords(*m, cheat));
    ASSERT_THAT(check.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         "final check: the parties refuse to release: "));
    for (const auto& party : n) {
      EXPECT_THAT(std::string(check.status().message()),
                  ::testing::HasSubstr(absl::StrCat(
                      "party '", party,
                      "': refuses to release: final check failed: {g} k=3: among groups 0 to 1 of "
                      "2, a group holds fewer than 3 records")));
    }
    seen.emplace_back().push_back(std::string(check.status().message()));
    for (size_t i = 0; i < n.size(); ++i) {
      EXPECT_THAT(m->Send(n[i], UnionStepFor(*m, i)),
                  StatusIs(absl::StatusCode::kPermissionDenied,
                           absl::StrCat("party '", n[i],
                                        "': secure union: refuses to release: final check failed: "
                                        "{g} k=3: among groups")));
    }
    for (const auto& line : m->seen()) seen.back().push_back(line);
  }
  EXPECT_EQ(seen[0], seen[1]) << "the leader learned something that depends on hospital-a alone";
}

TEST(MaliciousLeader, TwoPartiesPassAnHonestCutBySecureComparisonAndRefuseTamperedMessages) {
  auto m = MaliciousLeader::Create("honestk2", 0, kSpecK3, TablesK3TwoParties(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  EXPECT_THAT(m->Send(n[0], UnionStepFor(*m, 0)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "refuses to release before the final check of the privacy model passed"));
  const fedanon::v1::StateUpdate honest = Disclose(2);  // groups of 6 and 7 records
  const uint64_t words = FinalCheckWords(*m, honest);
  // A leader that starts at the garbler, or replays the evaluator's first step with another
  // comparison's number, is refused by name.
  LeaderMessage compare;
  compare.set_job_id(kJob);
  compare.set_round(2);
  auto* step = compare.mutable_final_check();
  step->set_phase(fedanon::v1::FinalCheckStep::PHASE_COMPARE);
  step->set_chunks(1);
  step->set_chunk_words(words);
  step->set_total_words(words);
  step->set_comparison(0);
  step->set_comparison_step(1);
  EXPECT_THAT(m->Send(n[0], compare), StatusIs(absl::StatusCode::kFailedPrecondition,
                                               "starts with step 2 of comparison 0"));
  ASSERT_OK_AND_ASSIGN(const uint32_t comparisons,
                       leader::RunTwoPartyFinalCheck(Ring(*m), {honest}, words));
  EXPECT_EQ(comparisons, 1u);  // {g} k=3: the 3 groups' sizes in one comparison (no bound)
  // Both parties now release.
  fedanon::v1::SealedPayload carried;
  for (size_t i = 0; i < n.size(); ++i) {
    LeaderMessage msg = UnionStepFor(*m, i);
    if (i > 0) *msg.mutable_union_step()->mutable_list() = carried;
    ASSERT_OK_AND_ASSIGN(PartyMessage reply, m->Send(n[i], msg));
    carried = reply.union_step().list();
  }
}

TEST(MaliciousLeader, FinalCheckPassesAnHonestCutAndGatesTheRelease) {
  auto m = MaliciousLeader::Create("honestk", 0, kSpecK3, TablesK3(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  // Before the check no party releases anything.
  EXPECT_THAT(m->Send(n[0], UnionStepFor(*m, 0)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "refuses to release before the final check of the privacy model passed"));
  // Disclosing gc: groups of 6 and 7 records, both >= K.
  const fedanon::v1::StateUpdate honest = Disclose(2);
  ASSERT_OK(leader::RunFinalCheck(Ring(*m), {honest}, FinalCheckWords(*m, honest)));
  // The same request again gets the same answer; another one is refused.
  leader::FinalCheckRing again = Ring(*m);
  EXPECT_OK(leader::RunFinalCheck(again, {honest}, FinalCheckWords(*m, honest)));
  again.round = 3;
  EXPECT_THAT(leader::RunFinalCheck(again, {honest}, FinalCheckWords(*m, honest)),
              StatusIs(absl::StatusCode::kPermissionDenied, "one request, one answer"));
  // Now the union runs: every party adds its rows.
  fedanon::v1::SealedPayload carried;
  for (size_t i = 0; i < n.size(); ++i) {
    LeaderMessage step = UnionStepFor(*m, i);
    if (i > 0) *step.mutable_union_step()->mutable_list() = carried;
    ASSERT_OK_AND_ASSIGN(PartyMessage reply, m->Send(n[i], step));
    carried = reply.union_step().list();
  }
  EXPECT_EQ(carried.receiver(), "leader");
}

// An instruction names a node of the current cut: a node specialized before (its children made
// already) is refused, so a leader cannot replay an instruction to rebuild a part of the cut.
TEST(MaliciousLeader, AnInstructionForANodeSpecializedBeforeIsRefused) {
  auto m = MaliciousLeader::Create("respecialize", 0, kSpecK3, TablesK3(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  LeaderMessage step = m->Step(0, n[1], m->Request());
  *step.mutable_sum_step()->add_updates() = Disclose(2);
  fedanon::v1::StateUpdate again = Disclose(1);
  again.set_sequence(1);
  *step.mutable_sum_step()->add_updates() = again;
  EXPECT_THAT(m->Send(n[0], step), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "instruction names no candidate of the current cut"));
}

// Every state update is an instruction or a split (or a local job's update), and an update the
// leader repeats under a number applied already must be the one applied: a leader cannot slip
// another content under an old number, or chain an empty update.
TEST(MaliciousLeader, AnEmptyOrRewrittenStateUpdateIsRefused) {
  auto m = MaliciousLeader::Create("rewritten_update", 0, kSpecK3, TablesK3(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  LeaderMessage empty = m->Step(0, n[1], m->Request());
  empty.mutable_sum_step()->add_updates()->set_sequence(0);
  EXPECT_THAT(m->Send(n[0], empty), StatusIs(absl::StatusCode::kInvalidArgument,
                                             "state update 0 names no instruction or split"));
  // The update applies (the request, sized for the cut before it, is then refused for its
  // length: the updates apply first).
  auto not_about_updates = [](const absl::StatusOr<PartyMessage>& reply) {
    return reply.ok() ? std::string() : std::string(reply.status().message());
  };
  LeaderMessage first = m->Step(0, n[1], m->Request());
  *first.mutable_sum_step()->add_updates() = Disclose(2);
  EXPECT_THAT(not_about_updates(m->Send(n[0], first)),
              ::testing::Not(::testing::HasSubstr("state update")));
  // The same update again (a later collect) is taken; another content under number 0 is not.
  LeaderMessage same = m->Step(1, n[1], m->Request());
  *same.mutable_sum_step()->add_updates() = Disclose(2);
  EXPECT_THAT(not_about_updates(m->Send(n[0], same)),
              ::testing::Not(::testing::HasSubstr("state update")));
  LeaderMessage rewritten = m->Step(2, n[1], m->Request());
  *rewritten.mutable_sum_step()->add_updates() = Disclose(1);
  EXPECT_THAT(m->Send(n[0], rewritten),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "state update 0 differs from the one applied under that number"));
}

// With the leader as the signed recipient no party delivers a union: a delivery step sent to the
// last party of the ring is refused by name (it is not the recipient), before any list is opened.
TEST(MaliciousLeader, AUnionDeliveryToAPartyThatIsNotTheRecipientIsRefused) {
  auto m = MaliciousLeader::Create("deliver_not_recipient", 0, kSpecK3, TablesK3(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  const fedanon::v1::StateUpdate honest = Disclose(2);
  ASSERT_OK(leader::RunFinalCheck(Ring(*m), {honest}, FinalCheckWords(*m, honest)));
  LeaderMessage deliver = UnionStepFor(*m, n.size() - 1);
  deliver.mutable_union_step()->set_deliver(true);
  deliver.mutable_union_step()->clear_next();
  EXPECT_THAT(m->Send(n.back(), deliver),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "asked to deliver a union meant for another party"));
}

TEST(MaliciousLeader, FinalCheckBoxesAreForPartiesOnly) {
  // The leader relays the final check's boxes but can open none of them, whatever sender it tries.
  auto m = MaliciousLeader::Create("boxes", 0, kSpecK3, TablesK3(0));
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  const fedanon::v1::StateUpdate honest = Disclose(2);
  const uint64_t words = FinalCheckWords(*m, honest);
  LeaderMessage msg;
  msg.set_job_id(kJob);
  msg.set_round(2);
  auto* step = msg.mutable_final_check();
  step->set_phase(fedanon::v1::FinalCheckStep::PHASE_SUM);
  step->set_chunks(1);
  step->set_chunk_words(words);
  step->set_total_words(words);
  *step->add_updates() = honest;
  // The first party takes no input from the leader (it masks with its own random words).
  LeaderMessage zeros = msg;
  *zeros.mutable_final_check()->mutable_input() =
      m->Forge(n[2], n[0], "final-check", 2, Zeros(words), false);
  EXPECT_THAT(m->Send(n[0], zeros), StatusIs(absl::StatusCode::kPermissionDenied,
                                             "starts from its own mask, not the leader's input"));
  ASSERT_OK_AND_ASSIGN(PartyMessage a, m->Send(n[0], msg));
  const auto& box = a.final_check().sealed();
  EXPECT_EQ(box.receiver(), n[1]);
  for (const std::string& sender : n) {
    const crypto::SealContext c{kJob, m->run_id(), 2, sender, "leader", box.purpose()};
    EXPECT_FALSE(
        crypto::OpenFrom(m->leader_keys(), *m->PartyKey(sender), c, box.ciphertext()).ok());
  }
  // A box forged by the leader "from" hospital-a does not open at hospital-b.
  LeaderMessage forged = msg;
  forged.mutable_final_check()->clear_updates();
  *forged.mutable_final_check()->mutable_input() =
      m->Forge(n[0], n[1], box.purpose(), 2, Zeros(words), false);
  *forged.mutable_final_check()->add_updates() = honest;
  EXPECT_THAT(m->Send(n[1], forged), StatusIs(absl::StatusCode::kPermissionDenied,
                                              "does not open as sealed by 'hospital-a'"));
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
  auto spec = spec::ParseJobSpecYaml(kVSpec, "job.yaml");
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

// The leader announces as winner a party the secure comparison did not name: it rewrites the
// computing parties' choices (to name the party it sends the winner to), or drops one of them.
TEST(MaliciousLeader, VerticalWinnerThatDidNotWinIsRefused) {
  struct Case {
    std::string name;
    std::function<void(const std::string& to, fedanon::v1::VerticalWinner*)> alter;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"vsig_winner_renamed",
       [](const std::string& to, fedanon::v1::VerticalWinner* w) {
         for (auto& c : *w->mutable_choices()) {
           c.set_winner(to == "hospital-a" ? "hospital-b" : "hospital-a");
         }
       },
       "as the round's winner, not '"},
      {"vsig_winner_one_choice",
       [](const std::string&, fedanon::v1::VerticalWinner* w) {
         w->mutable_choices()->RemoveLast();
       },
       "the secure comparison's choice of both computing parties"},
  };
  for (const Case& c : cases) {
    std::atomic<int> tampered{0};
    const auto info = RunTamperedVertical(c.name, [&](const std::string& to, LeaderMessage* m) {
      if (!m->has_vertical() || !m->vertical().has_winner()) return;
      c.alter(to, m->mutable_vertical()->mutable_winner());
      ++tampered;
    });
    ASSERT_GT(tampered.load(), 0) << c.name;
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED) << c.name;
    EXPECT_THAT(info.failure_reason(),
                ::testing::AllOf(::testing::HasSubstr("forged vertical winner"),
                                 ::testing::HasSubstr(c.reason)))
        << c.name;
  }
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
// that adds one record that does not exist (hospital-a in the misbehaviour mode
// inflate-released-counts) makes the sum exceed the job's records: the leader refuses to write
// any row (leader/leader.cc ReleasedTableFromCounts) and the job fails with the named reason. An
// honest run of the same job releases every record.
TEST(CheatingParty, ReleasedCountsThatDoNotSumToTheRecordsAreRefused) {
  for (const bool cheat : {false, true}) {
    SCOPED_TRACE(cheat ? "cheating" : "honest");
    std::vector<std::map<std::string, std::string>> files;
    for (const auto& t : Tables(0)) files.push_back({{"table.csv", t}});
    ASSERT_OK_AND_ASSIGN(
        auto fed,
        InProcessFederation::Create(
            cheat ? "released_cheat" : "released_ok", files, [&](party::PartyAgentOptions& o) {
              if (cheat && o.name == "hospital-a") {
                o.deviation = party_testing::DeviatingParty("inflate-released-counts");
              }
            }));
    ASSERT_OK_AND_ASSIGN(auto spec, spec::ParseJobSpecYaml(kSpec, "malicious.yaml"));
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
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
    EXPECT_THAT(info.failure_reason(),
                ::testing::HasSubstr("the released counts add up to more than the job's 21 "
                                     "records (a party answered inconsistently); nothing was "
                                     "released"));
    EXPECT_FALSE(fed->leader->Result(submitted.job_id()).ok());
  }
}

// A deviating data party (issue: a deviating data party, finding 2): the summed root count sizes
// the leader's released table (one entry per record), so no party may take part with more records
// than the admin signed (max_records_per_party). hospital-c holds 9 records under a limit of 6:
// honest, it refuses the job itself at Prepare; lying about it (ignore-record-limit), its true
// counts make the root count 21 > 3 x 6, which the leader refuses by name before any release.
TEST(CheatingParty, ARootCountAboveTheSignedLimitIsRefusedByTheLeader) {
  for (const bool cheat : {false, true}) {
    SCOPED_TRACE(cheat ? "cheating" : "honest");
    std::vector<std::map<std::string, std::string>> files;
    for (const auto& t : Tables(0)) files.push_back({{"table.csv", t}});
    ASSERT_OK_AND_ASSIGN(
        auto fed, InProcessFederation::Create(
                      cheat ? "root_cheat" : "root_ok", files, [&](party::PartyAgentOptions& o) {
                        if (cheat && o.name == "hospital-c") {
                          o.deviation = party_testing::DeviatingParty("ignore-record-limit");
                        }
                      }));
    ASSERT_OK_AND_ASSIGN(auto spec,
                         spec::ParseJobSpecYaml(std::string(kSpec) + "max_records_per_party: 6\n",
                                                "malicious.yaml"));
    fedanon::v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    for (const auto& p : fed->names) req.add_parties(p);
    ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo submitted, fed->Submit(req));
    const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
    EXPECT_THAT(info.failure_reason(),
                ::testing::HasSubstr(
                    cheat ? std::string(engine::kRootCountAboveLimit) +
                                " 21 exceeds the job's limit of 18 records"
                          : "'hospital-c': table 'table.csv' holds 9 records, more than the "
                            "job's max_records_per_party of 6"));
    EXPECT_FALSE(fed->leader->Result(submitted.job_id()).ok());
  }
}

// A deviating data party in the secure union (issue: a deviating data party, finding 3): the rows
// are sealed for the recipient, so a later party cannot read an earlier party's rows, but it could
// drop, repeat or replace them on their way. The recipient checks the table it opens against the
// counts the parties summed: the leader against the row total and every group's count from its
// engine, a recipient data party against the final check's vector. `note` has no declared domain,
// so the leader cannot release from counts and the union carries the rows. hospital-b's first row
// is gb and hospital-a holds none, so a swapped row always moves a record into gb.
constexpr char kUnionSpec[] = R"(name: union
attributes:
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: cls, role: class, values: [yes, no]}
  - {name: note, role: other}
partitioning: horizontal
privacy: {model: lkc, L: 1, K: 2}
)";

std::vector<std::string> UnionTables() {
  const auto rows = [](std::vector<std::pair<std::string, int>> groups) {
    std::string t = "g,cls,note\n";
    for (const auto& [g, n] : groups) {
      for (int i = 0; i < n; ++i) absl::StrAppend(&t, g, ",", g == "gb" ? "no" : "yes", ",n\n");
    }
    return t;
  };
  return {rows({{"ga", 3}, {"gc", 3}}), rows({{"gb", 4}, {"ga", 2}}), rows({{"gc", 5}, {"ga", 2}})};
}

// Runs `spec_yaml` on `tables` (one per party) with `cheater` in misbehaviour `mode` (none when
// empty) and `recipient` (the leader when empty); `keep` holds the federation for the caller's
// checks.
fedanon::v1::JobInfo RunJobWithCheater(const std::string& name,
                                       const std::vector<std::string>& tables,
                                       const char* spec_yaml, const std::string& cheater,
                                       const std::string& mode, const std::string& recipient,
                                       std::unique_ptr<InProcessFederation>* keep) {
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& t : tables) files.push_back({{"table.csv", t}});
  auto fed = InProcessFederation::Create(name, files, [&](party::PartyAgentOptions& o) {
    if (o.name == cheater) o.deviation = party_testing::DeviatingParty(mode);
  });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return {};
  *keep = std::move(*fed);
  auto spec = spec::ParseJobSpecYaml(spec_yaml, "malicious.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& p : (*keep)->names) req.add_parties(p);
  req.set_recipient(recipient);
  auto submitted = (*keep)->Submit(req);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return {};
  return (*keep)->Wait(submitted->job_id());
}

// The union tables with hospital-b in misbehaviour `cheat`.
fedanon::v1::JobInfo RunUnion(const std::string& name, const std::string& cheat,
                              const std::string& recipient, InProcessFederation** out_fed,
                              std::unique_ptr<InProcessFederation>* keep) {
  const fedanon::v1::JobInfo info =
      RunJobWithCheater(name, UnionTables(), kUnionSpec, "hospital-b", cheat, recipient, keep);
  *out_fed = keep->get();
  return info;
}

// The kSpec job on Tables(0) with `cheater` in misbehaviour `mode`.
fedanon::v1::JobInfo RunWithCheater(const std::string& name, const std::string& cheater,
                                    const std::string& mode,
                                    std::unique_ptr<InProcessFederation>* keep) {
  return RunJobWithCheater(name, Tables(0), kSpec, cheater, mode, "", keep);
}

TEST(CheatingParty, ARowDroppedRepeatedSwappedOrInventedInTheUnionIsRefusedByTheLeader) {
  struct Case {
    std::string cheat;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"union-drop-row",
       "the released table holds 18 rows but the parties summed 19 records: a party dropped or "
       "added rows in the secure union"},
      {"union-repeat-row", "a party repeated another's row on its way"},
      {"union-swap-row", "but the parties summed"},
      {"union-invent-row", "value 'invented' of attribute 'g' is not a value of the final cut"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.cheat.empty() ? "honest" : tc.cheat);
    InProcessFederation* fed = nullptr;
    std::unique_ptr<InProcessFederation> keep;
    const fedanon::v1::JobInfo info =
        RunUnion("union_l_" + (tc.cheat.empty() ? std::string("ok") : tc.cheat.substr(6)), tc.cheat,
                 "", &fed, &keep);
    ASSERT_NE(fed, nullptr);
    if (tc.cheat.empty()) {
      ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
      ASSERT_OK_AND_ASSIGN(const std::string csv, fed->leader->Result(info.job_id()));
      EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 20);  // 19 records and the header
      continue;
    }
    EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
    EXPECT_THAT(info.failure_reason(),
                ::testing::HasSubstr("the leader (recipient) refuses the released table"))
        << info.failure_reason();
    EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr(tc.reason));
    EXPECT_FALSE(fed->leader->Result(info.job_id()).ok());
  }
}

// The same with the released counts (issue: a deviating data party, finding 3): hospital-a moves
// one of its records to another group; the total is right, but that group's count no longer adds
// up to what the rounds summed, and the leader writes nothing.
TEST(CheatingParty, AReleasedCountMovedToAnotherGroupIsRefused) {
  std::unique_ptr<InProcessFederation> fed;
  const fedanon::v1::JobInfo info =
      RunWithCheater("released_move", "hospital-a", "move-released-count", &fed);
  ASSERT_NE(fed, nullptr);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("(a party moved records between groups or values); nothing "
                                   "was released"))
      << info.failure_reason();
  EXPECT_FALSE(fed->leader->Result(info.job_id()).ok());
}

// A deviating data party in the final check (issue: a deviating data party, finding 1): hospital-a
// subtracts 1000 from the first word it adds, which wraps the sum past 2^64. Every party finds a
// total no honest ring can produce (more records than the signed limit allows) and refuses to
// release; the leader gets nothing.
TEST(CheatingParty, AFinalCheckSumNoHonestRingProducesIsRefusedByEveryParty) {
  std::unique_ptr<InProcessFederation> fed;
  const fedanon::v1::JobInfo info =
      RunWithCheater("final_offset", "hospital-a", "final-check-negative-offset", &fed);
  ASSERT_NE(fed, nullptr);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("the summed counts are not ones honest parties can produce"))
      << info.failure_reason();
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("records at most"));
  EXPECT_FALSE(fed->leader->Result(info.job_id()).ok());
}

// A deviating data party that invents records (issue: a deviating data party, finding 1): no role
// can tell them from real ones, so this is the bounded, documented outcome (docs/threat-model.md,
// "A data party that deviates"), not a refusal. hospital-a holds the only real record of gb
// (class no); hospital-c adds K - 1 = 2 fake gb records (class yes). The job runs; the published
// table holds K records in every group counting the fakes, and the fakes themselves; and the group
// holding gb is, once hospital-c takes its two fakes out, the one real record of hospital-a —
// whose class it thereby reads. Without the fakes that record sits in a group of at least K real
// records.
TEST(CheatingParty, InventedRecordsShowInThePublishedTableAndBoundWhatTheLiarReads) {
  // Rows of the published table by their g cell: [rows, rows of class yes].
  auto run = [&](const std::string& name, const std::string& c_table,
                 std::map<std::string, std::pair<int, int>>* groups) {
    std::unique_ptr<InProcessFederation> fed;
    const fedanon::v1::JobInfo info = RunJobWithCheater(
        name, {Table(5, 1, 0), Table(2, 0, 2), c_table}, kSpecK3, "", "", "", &fed);
    ASSERT_NE(fed, nullptr);
    ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
    ASSERT_OK_AND_ASSIGN(const std::string csv, fed->leader->Result(info.job_id()));
    std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty());
    const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
    const size_t g_at = std::find(header.begin(), header.end(), "g") - header.begin();
    const size_t cls_at = std::find(header.begin(), header.end(), "cls") - header.begin();
    ASSERT_LT(g_at, header.size());
    ASSERT_LT(cls_at, header.size());
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
      auto& group = (*groups)[cells[g_at]];
      ++group.first;
      group.second += cells[cls_at] == "yes" ? 1 : 0;
    }
  };
  std::map<std::string, std::pair<int, int>> honest, lied;
  run("invented_honest", Table(0, 0, 9), &honest);
  run("invented_lied", Table(0, 0, 9) + "gb,yes\ngb,yes\n", &lied);
  int honest_rows = 0, lied_rows = 0;
  for (const auto& [cell, g] : honest) {
    EXPECT_GE(g.first, 3) << cell;
    honest_rows += g.first;
  }
  for (const auto& [cell, g] : lied) {
    EXPECT_GE(g.first, 3) << cell;  // K holds over every row, fakes included
    lied_rows += g.first;
  }
  EXPECT_EQ(honest_rows, 19);
  EXPECT_EQ(lied_rows, 21);  // the two fakes are in the published table
  // The group of gb: in the honest run the real gb record shares it with at least K - 1 other real
  // records; with the fakes it is the fakes and that one record (class no), which hospital-c reads.
  // The group holding gb: gb disclosed, or the suppressed rest (the one cell other than ga, gc).
  auto group_of_gb = [](const std::map<std::string, std::pair<int, int>>& groups) {
    std::vector<std::pair<int, int>> found;
    for (const auto& [cell, g] : groups) {
      if (cell != "ga" && cell != "gc") found.push_back(g);
    }
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? std::make_pair(0, 0) : found[0];
  };
  EXPECT_EQ(group_of_gb(lied), std::make_pair(3, 2));  // 2 fakes (yes) and hospital-a's (no)
  const std::pair<int, int> honest_gb = group_of_gb(honest);
  EXPECT_GE(honest_gb.first, 3);
}

// The same swap with hospital-c as the recipient: three data parties ran the final check, and
// hospital-c finds a group whose released rows differ from the summed counts. Nothing is written.
TEST(CheatingParty, ARowSwappedInTheUnionIsRefusedByARecipientPartyAgainstTheFinalCheck) {
  InProcessFederation* fed = nullptr;
  std::unique_ptr<InProcessFederation> keep;
  const fedanon::v1::JobInfo info =
      RunUnion("union_p_swap", "union-swap-row", "hospital-c", &fed, &keep);
  ASSERT_NE(fed, nullptr);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("'hospital-c' (recipient) refuses the released table"))
      << info.failure_reason();
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("but the parties' final check summed"));
  EXPECT_FALSE(std::filesystem::exists(
      absl::StrCat(fed->dir, "/hospital-c/output/", info.job_id(), ".csv")));
}
}  // namespace
}  // namespace fedanon::testing

namespace fedanon::testing {
namespace {

// Vertical local recoding (docs/vertical.md "Local recoding"), q0 at hospital-a, q1 at
// hospital-b, k = 5: the leader names a group that is not live as hospital-a's winner, or alters
// the won candidate (a split of q0 that no honest party proposed). hospital-a, the owner, finds
// neither among its own proposals of the wave and refuses; nothing is released.
constexpr char kLocalSpec[] = R"(name: vertical-local-k
attributes:
  - {name: id, role: id}
  - {name: q0, role: qid, taxonomy: q0.csv, party: hospital-a}
  - {name: q1, role: qid, taxonomy: q1.csv, party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy:
  model: templates
  templates:
    - {qid: [q0, q1], k: 5}
partitioning: vertical
recoding: local
)";

std::vector<std::string> LocalTables() {
  std::string a = "id,cls,q0\n", b = "id,cls,q1\n";
  for (int i = 0; i < 40; ++i) {
    const char* cls = i < 20 ? "yes" : "no";
    absl::StrAppend(&a, "id", i, ",", cls, ",", i < 12 ? "r1" : "r0", "\n");
    absl::StrAppend(&b, "id", i, ",", cls, ",", i % 2 ? "w0" : "w1", "\n");
  }
  return {a, b};
}

TEST(MaliciousLeader, VerticalLocalWinnerOfAnotherGroupIsRefusedByItsOwner) {
  const std::map<std::string, std::string> tax = {{"q0.csv", "r0;ANY\nr1;ANY\n"},
                                                  {"q1.csv", "w0;ANY\nw1;ANY\n"}};
  const VerticalAttack honest =
      RunVerticalAttack("vlocal_honest", kLocalSpec, LocalTables(), tax, nullptr);
  ASSERT_EQ(honest.info.state(), fedanon::v1::JOB_STATE_DONE) << honest.info.failure_reason();
  ASSERT_GT(honest.info.report().steps_size(), 0);

  // The leader names only the count and digest of an owner's won groups.
  const VerticalAttack wrong_group = RunVerticalAttack(
      "vlocal_group", kLocalSpec, LocalTables(), tax, [](const std::string&, LeaderMessage* msg) {
        if (msg->has_vertical() && msg->vertical().has_local_winners()) {
          auto* w = msg->mutable_vertical()->mutable_local_winners();
          w->set_won_count(w->won_count() + 1);
        }
      });
  ExpectNothingReleased(wrong_group);
  EXPECT_NE(wrong_group.info.failure_reason().find("refused to apply a local-recoding wave"),
            std::string::npos)
      << wrong_group.info.failure_reason();

  const VerticalAttack altered = RunVerticalAttack(
      "vlocal_altered", kLocalSpec, LocalTables(), tax, [](const std::string&, LeaderMessage* msg) {
        if (msg->has_vertical() && msg->vertical().has_local_winners()) {
          auto* w = msg->mutable_vertical()->mutable_local_winners();
          std::string digest = w->won_digest();
          if (!digest.empty()) digest[0] ^= 0x01;
          w->set_won_digest(digest);
        }
      });
  ExpectNothingReleased(altered);
  EXPECT_NE(altered.info.failure_reason().find(
                "the leader's winners differ from the best signed proposals"),
            std::string::npos)
      << altered.info.failure_reason();

  // The leader relays an owner's instruction twice in one commit (its groups split twice).
  const VerticalAttack twice = RunVerticalAttack(
      "vlocal_twice", kLocalSpec, LocalTables(), tax, [](const std::string&, LeaderMessage* msg) {
        if (msg->has_vertical() && msg->vertical().has_local_commit()) {
          auto* c = msg->mutable_vertical()->mutable_local_commit();
          if (c->instructions_size() > 0) *c->add_instructions() = c->instructions(0);
          if (c->instruction_refs_size() > 0) *c->add_instruction_refs() = c->instruction_refs(0);
        }
      });
  ExpectNothingReleased(twice);
  // Whole payloads reach the replica's check (two instructions from one owner); chunked ones
  // (the in-process default) are refused by the chunk inbox, which opens a stream once.
  const std::string& why = twice.info.failure_reason();
  EXPECT_TRUE(why.find("refused to apply a local-recoding wave") != std::string::npos ||
              why.find("no chunk of it was received") != std::string::npos)
      << why;
}

// Issue 31, signed local proposals: every party signs its wave's per-group proposals with its
// replica's state digest; the leader delivers them all page by page before the wave's later
// steps, and every party recomputes the winners and checks the instructions before applying
// anything.
struct LocalAttackCase {
  std::string name;
  std::string expected;  // in the failure reason
  TamperingChannel::Tamper tamper;
};

TEST(MaliciousLeader, VerticalLocalDeviationsAreRefusedByName) {
  const std::map<std::string, std::string> tax = {{"q0.csv", "r0;ANY\nr1;ANY\n"},
                                                  {"q1.csv", "w0;ANY\nw1;ANY\n"}};
  // Each cheat counts how often it changed a message: a cheat that never fired proves nothing.
  auto fired = std::make_shared<std::atomic<int>>(0);
  auto replayed = std::make_shared<std::map<std::string, fedanon::v1::LocalProposalsPut>>();
  auto first_round = std::make_shared<uint32_t>(0);
  const std::vector<LocalAttackCase> cases = {
      // The leader withholds the owner's instruction from the other party (hospital-a wins the
      // root on q0; hospital-b would apply nothing and the replicas would diverge).
      {"vlocal_withhold", "is missing (withheld from this party)",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (party != "hospital-b" || !msg->has_vertical() || !msg->vertical().has_local_commit()) {
           return;
         }
         auto* c = msg->mutable_vertical()->mutable_local_commit();
         if (c->instructions_size() + c->instruction_refs_size() == 0) return;
         c->clear_instructions();
         c->clear_instruction_refs();
         ++*fired;
       }},
      // The leader announces fewer won groups to an owner (it would hand a group to another,
      // lower-scoring party's proposal).
      {"vlocal_lower", "the leader's winners differ from the best signed proposals",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_winners()) return;
         auto* w = msg->mutable_vertical()->mutable_local_winners();
         if (w->won_count() == 0) return;
         w->set_won_count(w->won_count() - 1);
         ++*fired;
       }},
      // The leader raises the score of a delivered proposal (and fixes the list's digest and
      // size to match): the proposer's signature no longer covers it.
      {"vlocal_score", "do not carry its signature for wave",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_proposals_put()) return;
         auto* put = msg->mutable_vertical()->mutable_local_proposals_put();
         fedanon::v1::LocalProposals list;
         if (put->pages() != 1 || !list.ParseFromString(put->page_bytes()) ||
             list.proposals_size() == 0) {
           return;
         }
         auto* p = list.mutable_proposals(0);
         p->set_score(p->score() + 1);
         put->set_page_bytes(list.SerializeAsString());
         put->set_list_bytes(put->page_bytes().size());
         put->set_list_digest(crypto::Sha256(put->page_bytes()));
         ++*fired;
       }},
      // The leader replays hospital-b's signed proposals of the first wave in a later wave.
      {"vlocal_replay", "(altered, or replayed from another wave)",
       [fired, replayed, first_round](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_proposals_put()) return;
         auto* put = msg->mutable_vertical()->mutable_local_proposals_put();
         if (put->party() != "hospital-b") return;
         if (*first_round == 0) *first_round = msg->round();
         if (msg->round() == *first_round) {
           (*replayed)[put->party()] = *put;
         } else if (replayed->count(put->party())) {
           *put = replayed->at(put->party());
           ++*fired;
         }
       }},
  };
  for (const auto& c : cases) {
    *fired = 0;
    const VerticalAttack attack =
        RunVerticalAttack(c.name, kLocalSpec, LocalTables(), tax, c.tamper);
    EXPECT_GT(fired->load(), 0) << c.name << ": the cheat never fired";
    ExpectNothingReleased(attack);
    EXPECT_NE(attack.info.failure_reason().find("refused to apply a local-recoding wave"),
              std::string::npos)
        << c.name << ": " << attack.info.failure_reason();
    EXPECT_NE(attack.info.failure_reason().find(c.expected), std::string::npos)
        << c.name << ": " << attack.info.failure_reason();
  }
}

// ---- Horizontal local recoding: the integration by released counts (docs/federation.md). ----

// Every non-QID value declared: the leader (recipient) asks one secure sum of the released
// counts per (final group, value combination) after the final check.
constexpr char kHorizontalLocalSpec[] = R"(name: local-counts
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: q, role: qid, values: [qa, qb, qc, qd]}
  - {name: cls, role: class, values: [yes, no]}
  - {name: s, role: sensitive, values: [d0, d1, d2]}
privacy: {model: lkc, L: 2, K: 4, C: 0.9, sensitive_values: [d0]}
partitioning: horizontal
recoding: local
)";

std::vector<std::string> HorizontalLocalTables() {
  std::vector<std::string> tables(3, "age,q,cls,s\n");
  uint64_t state = 0x5eed1234abcdULL;
  auto next = [&state](int n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<int>(state % static_cast<uint64_t>(n));
  };
  for (int r = 0; r < 180; ++r) {
    const int age = 18 + next(60);
    const int q = next(4);
    const bool yes = (age < 45) == (next(10) < 8);
    absl::StrAppend(&tables[r % 3], age, ",q", std::string(1, static_cast<char>('a' + q)), ",",
                    yes ? "yes" : "no", ",d", next(3), "\n");
  }
  return tables;
}

// The released-counts request of a local job, if `msg` carries it.
fedanon::v1::LocalStatsRequest* ReleasedCountsRequest(LeaderMessage* msg) {
  if (!msg->has_sum_step() || !msg->sum_step().request().has_local() ||
      msg->sum_step().request().local().released_groups_size() == 0) {
    return nullptr;
  }
  return msg->mutable_sum_step()->mutable_request()->mutable_local();
}

// Honest: the same job through the same channel without a cheat releases the table by counts.
TEST(MaliciousLeader, HorizontalLocalReleasedCountsHonestRun) {
  auto asked = std::make_shared<std::atomic<int>>(0);
  const VerticalAttack run =
      RunVerticalAttack("hlocal_honest", kHorizontalLocalSpec, HorizontalLocalTables(), {},
                        [asked](const std::string&, LeaderMessage* msg) {
                          if (ReleasedCountsRequest(msg) != nullptr) ++*asked;
                        });
  EXPECT_EQ(run.info.state(), fedanon::v1::JOB_STATE_DONE) << run.info.failure_reason();
  EXPECT_TRUE(run.leader_has_result);
  EXPECT_EQ(asked->load(), 3) << "one released-counts request per party";
  EXPECT_GT(run.info.report().groups(), 2u);
}

// A leader that names, in the released-counts request, a group that is not final, omits a final
// group, repeats one, or splits a group's key to learn finer counts: every party refuses by name,
// the job fails and nothing is released (no counts summed, no rows, no result).
TEST(MaliciousLeader, HorizontalLocalReleasedCountsDeviationsAreRefusedByName) {
  auto fired = std::make_shared<std::atomic<int>>(0);
  // Applies `cheat` to the released-counts request (each party gets the same cheat).
  auto on_release = [fired](std::function<void(fedanon::v1::LocalStatsRequest*)> cheat) {
    return [fired, cheat](const std::string&, LeaderMessage* msg) {
      fedanon::v1::LocalStatsRequest* r = ReleasedCountsRequest(msg);
      if (r == nullptr) return;
      cheat(r);
      ++*fired;
    };
  };
  const std::vector<LocalAttackCase> cases = {
      // Group 0 (the whole table) was split: it is not a final group.
      {"hlocal_not_final", "group 0 is not a live group of this job",
       on_release(
           [](fedanon::v1::LocalStatsRequest* r) { r->mutable_released_groups(0)->set_group(0); })},
      {"hlocal_omit", "released counts omit final group",
       on_release(
           [](fedanon::v1::LocalStatsRequest* r) { r->mutable_released_groups()->RemoveLast(); })},
      {"hlocal_repeat", "twice (one count each)", on_release([](fedanon::v1::LocalStatsRequest* r) {
         *r->add_released_groups() = r->released_groups(0);
       })},
      // The first group with an age interval of >= 2 ranks is named twice, each with half of its
      // interval (the counts of its two halves).
      {"hlocal_split_key", "differs from this party's record of it",
       on_release([](fedanon::v1::LocalStatsRequest* r) {
         for (int i = 0; i < r->released_groups_size(); ++i) {
           auto* age = r->mutable_released_groups(i)->mutable_key(0);
           if (age->hi() - age->lo() < 2) continue;
           const int32_t mid = age->lo() + (age->hi() - age->lo()) / 2;
           fedanon::v1::LocalGroupRef upper = r->released_groups(i);
           upper.mutable_key(0)->set_lo(mid);
           age->set_hi(mid);
           *r->add_released_groups() = upper;
           return;
         }
       })},
  };
  for (const auto& c : cases) {
    *fired = 0;
    const VerticalAttack attack =
        RunVerticalAttack(c.name, kHorizontalLocalSpec, HorizontalLocalTables(), {}, c.tamper);
    EXPECT_GT(fired->load(), 0) << c.name << ": the cheat never fired";
    EXPECT_EQ(attack.info.state(), fedanon::v1::JOB_STATE_FAILED) << c.name;
    EXPECT_FALSE(attack.leader_has_result) << c.name;
    EXPECT_FALSE(attack.party_wrote_output) << c.name;
    EXPECT_NE(attack.info.failure_reason().find(c.expected), std::string::npos)
        << c.name << ": " << attack.info.failure_reason();
    // No party answered the released counts or sent rows: the only sum answers are the rounds'.
    for (const auto& bytes : attack.replies) {
      PartyMessage m;
      ASSERT_TRUE(m.ParseFromString(bytes));
      EXPECT_FALSE(m.has_union_step()) << c.name << ": a party sent rows";
    }
  }
}

// Before the final check (three parties) no party answers a released-counts request, even for
// the one live group with its true key; a global released-counts request in a local job is refused
// as well.
TEST(MaliciousLeader, HorizontalLocalReleasedCountsBeforeTheFinalCheckAreRefused) {
  auto m =
      MaliciousLeader::Create("hlocal_early", 0, kHorizontalLocalSpec, HorizontalLocalTables());
  ASSERT_NE(m, nullptr);
  ASSERT_OK(m->PrepareAll(m->names()));
  const auto& n = m->names();
  const uint64_t combos = m->schema().ValueCombinations();
  ASSERT_EQ(combos, 6u);
  for (size_t i = 0; i < n.size(); ++i) {
    LeaderMessage msg;
    msg.set_job_id(kJob);
    msg.set_round(1);
    auto* step = msg.mutable_sum_step();
    auto* local = step->mutable_request()->mutable_local();
    auto* g = local->add_released_groups();
    g->set_group(0);
    for (const engine::LocalValue& v : engine::LocalRootKey(m->schema())) {
      auto* k = g->add_key();
      k->set_node(v.node);
      k->set_lo(v.lo);
      k->set_hi(v.hi);
    }
    local->set_released_combinations(combos);
    step->set_collect(0);
    step->set_chunk(0);
    step->set_chunks(1);
    step->set_total_words(combos);
    step->set_chunk_words(combos);
    step->set_next(i + 1 < n.size() ? n[i + 1] : "");
    EXPECT_THAT(m->Send(n[i], msg),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         absl::StrCat("party '", n[i],
                                      "': released counts: refuses to release before the final "
                                      "check of the privacy model passed")));
  }
  for (const auto& line : m->seen()) EXPECT_EQ(line.rfind("error: ", 0), 0u) << line;
}

// Vertical local recoding with a confidence bound: hospital-b holds q1 and the sensitive s (the
// judge), hospital-a q0 and hospital-c q2. s = d0 follows q0 = r1 (14 of its 20 records), so
// hospital-a's split of the root on q0 breaks C = 0.5 and the judge vetoes it; the other splits
// are accepted and published to the parties that are not judges.
constexpr char kLocalVetoSpec[] = R"(name: vertical-local-veto
attributes:
  - {name: id, role: id}
  - {name: q0, role: qid, taxonomy: q0.csv, party: hospital-a}
  - {name: q1, role: qid, taxonomy: q1.csv, party: hospital-b}
  - {name: q2, role: qid, taxonomy: q2.csv, party: hospital-c}
  - {name: s, role: sensitive, values: [d0, d1], party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy: {model: lkc, L: 2, K: 5, C: 0.5, sensitive_values: [d0]}
partitioning: vertical
recoding: local
)";

std::vector<std::string> LocalVetoTables() {
  std::string a = "id,cls,q0\n", b = "id,cls,q1,s\n", c = "id,cls,q2\n";
  for (int i = 0; i < 60; ++i) {
    const char* cls = i < 24 ? "yes" : "no";
    absl::StrAppend(&a, "id", i, ",", cls, ",", i < 20 ? "r1" : "r0", "\n");
    absl::StrAppend(&b, "id", i, ",", cls, ",", i % 2 ? "w0" : "w1", ",", i < 14 ? "d0" : "d1",
                    "\n");
    absl::StrAppend(&c, "id", i, ",", cls, ",", i % 3 ? "u0" : "u1", "\n");
  }
  return {a, b, c};
}

// A judge's verdict page delivered by the leader (LocalVerdictsPut), or null.
fedanon::v1::LocalVerdictsPut* VerdictPutOf(LeaderMessage* msg) {
  if (!msg->has_vertical() || !msg->vertical().has_local_verdicts_put()) return nullptr;
  return msg->mutable_vertical()->mutable_local_verdicts_put();
}

// The verdict list of a one-page put, or nullopt.
std::optional<fedanon::v1::LocalVerdicts> WholeList(const fedanon::v1::LocalVerdictsPut& put) {
  fedanon::v1::LocalVerdicts list;
  if (put.pages() != 1 || !list.ParseFromString(put.page_bytes())) return std::nullopt;
  return list;
}

// Replaces a one-page put's list, with the size and digest to match (not the judge's signature).
void SetList(const fedanon::v1::LocalVerdicts& list, fedanon::v1::LocalVerdictsPut* put) {
  put->set_page_bytes(list.SerializeAsString());
  put->set_list_bytes(put->page_bytes().size());
  put->set_list_digest(crypto::Sha256(put->page_bytes()));
}

TEST(MaliciousLeader, VerticalLocalVerdictDeviationsAreRefusedByName) {
  const std::map<std::string, std::string> tax = {{"q0.csv", "r0;ANY\nr1;ANY\n"},
                                                  {"q1.csv", "w0;ANY\nw1;ANY\n"},
                                                  {"q2.csv", "u0;ANY\nu1;ANY\n"}};
  // The honest run: the judge vetoes at least one split, and the job releases.
  const VerticalAttack honest =
      RunVerticalAttack("vlocal_veto_honest", kLocalVetoSpec, LocalVetoTables(), tax, nullptr);
  ASSERT_EQ(honest.info.state(), fedanon::v1::JOB_STATE_DONE) << honest.info.failure_reason();
  uint64_t vetoes = 0;
  for (const auto& bytes : honest.replies) {
    PartyMessage m;
    ASSERT_TRUE(m.ParseFromString(bytes));
    if (!m.has_vertical() || !m.vertical().has_local_verdicts()) continue;
    // Paged verdicts: one page here (a small table), the list in page_bytes.
    fedanon::v1::LocalVerdicts list;
    ASSERT_EQ(m.vertical().local_verdicts().pages(), 1u);
    ASSERT_TRUE(list.ParseFromString(m.vertical().local_verdicts().page_bytes()));
    for (const auto& v : list.verdicts()) vetoes += v.accept() ? 0 : 1;
  }
  ASSERT_GT(vetoes, 0u) << "the honest run has no veto: the attacks below would prove nothing";
  EXPECT_LE(honest.info.report().largest_confidence(), 0.5 + 1e-9);

  auto fired = std::make_shared<std::atomic<int>>(0);
  const std::vector<LocalAttackCase> cases = {
      // The leader drops the judge's verdicts that carry a veto: in place of their page, the
      // wave's commit, so that the vetoed split would be applied.
      {"vlocal_drop_veto", "before the verdicts of judge 'hospital-b' were delivered",
       [fired](const std::string&, LeaderMessage* msg) {
         auto* put = VerdictPutOf(msg);
         if (put == nullptr) return;
         const auto list = WholeList(*put);
         if (!list) return;
         bool veto = false;
         for (const auto& v : list->verdicts()) veto |= !v.accept();
         if (!veto) return;
         msg->mutable_vertical()->mutable_local_commit();
         ++*fired;
       }},
      // The leader turns a veto into an acceptance (and fixes the list's size and digest).
      {"vlocal_flip_veto", "forged local verdicts: the verdicts of judge 'hospital-b'",
       [fired](const std::string&, LeaderMessage* msg) {
         auto* put = VerdictPutOf(msg);
         if (put == nullptr) return;
         auto list = WholeList(*put);
         if (!list) return;
         for (auto& v : *list->mutable_verdicts()) {
           if (v.accept()) continue;
           v.set_accept(true);
           SetList(*list, put);
           ++*fired;
           return;
         }
       }},
      // The leader delivers a verdict list in the name of a party that is not a judge.
      {"vlocal_forged_judge", "a verdict page of 'hospital-a', which is not another judge",
       [fired](const std::string&, LeaderMessage* msg) {
         auto* put = VerdictPutOf(msg);
         if (put == nullptr) return;
         put->set_judge("hospital-a");
         ++*fired;
       }},
      // The leader relays verdicts inside the commit (as before paged verdicts).
      {"vlocal_relayed_verdicts", "verdicts relayed inside the step",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_commit() ||
             msg->vertical().local_commit().closing()) {
           return;
         }
         msg->mutable_vertical()->mutable_local_commit()->add_verdicts()->set_judge("hospital-b");
         ++*fired;
       }},
      // The leader withholds an accepted split from a party that is not a judge.
      {"vlocal_drop_accepted", "and every judge accepted, is missing (withheld from this party)",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (party != "hospital-c" || !msg->has_vertical() || !msg->vertical().has_local_commit()) {
           return;
         }
         auto* c = msg->mutable_vertical()->mutable_local_commit();
         if (c->instructions_size() + c->instruction_refs_size() == 0) return;
         c->clear_instructions();
         c->clear_instruction_refs();
         ++*fired;
       }},
  };
  for (const auto& c : cases) {
    *fired = 0;
    const VerticalAttack attack =
        RunVerticalAttack(c.name, kLocalVetoSpec, LocalVetoTables(), tax, c.tamper);
    EXPECT_GT(fired->load(), 0) << c.name << ": the cheat never fired";
    ExpectNothingReleased(attack);
    EXPECT_NE(attack.info.failure_reason().find("refused to apply a local-recoding wave"),
              std::string::npos)
        << c.name << ": " << attack.info.failure_reason();
    EXPECT_NE(attack.info.failure_reason().find(c.expected), std::string::npos)
        << c.name << ": " << attack.info.failure_reason();
  }
}

// ---- Steps out of place: the leader's own choices (which step, which page, which round, what it
// relays), refused by name. Each case is one federation run that fails at the first refusal. ----

// The leader's choice, not the admin's: per-record payloads travel whole (a Prepare naming no
// message limit), so that a sealed instruction can be relayed again, or twice, as the leader holds
// it.
void WholePayloads(LeaderMessage* msg) {
  if (msg->has_prepare()) msg->mutable_prepare()->set_max_message_bytes(0);
}

// Runs each case against honest parties and asserts that it fired, that nothing was released and
// that the job's failure names the refusal.
void ExpectRefusedByName(const char* spec, const std::vector<std::string>& tables,
                         const std::map<std::string, std::string>& tax,
                         const std::vector<LocalAttackCase>& cases,
                         const std::shared_ptr<std::atomic<int>>& fired) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    *fired = 0;
    const VerticalAttack attack = RunVerticalAttack(c.name, spec, tables, tax, c.tamper);
    EXPECT_GT(fired->load(), 0) << "the cheat never fired";
    ExpectNothingReleased(attack);
    EXPECT_THAT(attack.info.failure_reason(), ::testing::HasSubstr(c.expected));
  }
}

// party/vertical_party.cc VerticalParty::CheckCandidate (through VerticalParty::Deliver): the
// leader relays to the judge, again, the owner's sealed instruction of a round whose candidate was
// committed since (whole payloads open in any later step named with that round): the judge finds
// the candidate's node split already and refuses.
TEST(MaliciousLeader, AnInstructionReplayedAfterItsCommitIsRefusedByTheJudge) {
  std::atomic<int> fired{0};
  std::optional<LeaderMessage> saved;  // hospital-a's last Deliver
  bool committed = false;              // its candidate was committed to hospital-a since
  const auto info =
      RunTamperedVertical("vreplay_deliver", [&](const std::string& to, LeaderMessage* m) {
        WholePayloads(m);
        if (to != "hospital-a" || !m->has_vertical() || fired > 0) return;
        if (m->vertical().has_deliver()) {
          saved = *m;
          committed = false;
        } else if (m->vertical().has_commit()) {
          committed = saved && m->round() == saved->round() && m->vertical().commit().accept();
        } else if (committed) {
          *m = *saved;  // the next request after the commit: the old delivery again
          ++fired;
        }
      });
  ASSERT_GT(fired.load(), 0) << "no candidate of hospital-b was accepted and committed";
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(
      info.failure_reason(),
      ::testing::HasSubstr("party 'hospital-a': the winner names no candidate of the current cut"));
}

// party/vertical_waves_party.cc LocalReplicaOf: a local-recoding step (a proposal page) in a job
// with global recoding.
TEST(MaliciousLeader, ALocalRecodingStepInAGlobalJobIsRefused) {
  std::atomic<int> fired{0};
  const auto info =
      RunTamperedVertical("vlocal_in_global", [&](const std::string&, LeaderMessage* m) {
        if (!m->has_vertical() || !m->vertical().has_propose()) return;
        m->mutable_vertical()->mutable_local_propose()->set_page(0);
        ++fired;
      });
  ASSERT_GT(fired.load(), 0);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              ::testing::HasSubstr("a local-recoding step in a job without recoding: local"));
}

// The taxonomies of kLocalSpec and of kLocalVetoSpec.
std::map<std::string, std::string> LocalTaxonomies() {
  return {{"q0.csv", "r0;ANY\nr1;ANY\n"}, {"q1.csv", "w0;ANY\nw1;ANY\n"}};
}
std::map<std::string, std::string> LocalVetoTaxonomies() {
  return {{"q0.csv", "r0;ANY\nr1;ANY\n"},
          {"q1.csv", "w0;ANY\nw1;ANY\n"},
          {"q2.csv", "u0;ANY\nu1;ANY\n"}};
}

// A LocalJudge on its way to kLocalVetoSpec's judge.
bool ToTheJudge(const std::string& party, const LeaderMessage& msg) {
  return party == "hospital-b" && msg.has_vertical() && msg.vertical().has_local_judge();
}

// Checks: party/vertical_waves_party.cc Propose, ProposalsPut and CheckDeliveredProposals.
// Vertical local recoding without judges (kLocalSpec): a wave's proposal steps out of place.
TEST(MaliciousLeader, VerticalLocalProposalStepsOutOfPlaceAreRefusedByName) {
  const auto tax = LocalTaxonomies();
  auto fired = std::make_shared<std::atomic<int>>(0);
  const std::vector<LocalAttackCase> cases = {
      // party/vertical_waves_party.cc Propose: a proposal page past the party's list.
      {"vlocal_page_range", "page 7 of this party's 1 proposal pages of wave",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_propose()) return;
         msg->mutable_vertical()->mutable_local_propose()->set_page(7);
         ++*fired;
       }},
      // party/vertical_waves_party.cc ProposalsPut: a page delivered in the name of its receiver.
      {"vlocal_own_name",
       "a proposal page of 'hospital-b', which is not another data party of the job",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (party != "hospital-b" || !msg->has_vertical() ||
             !msg->vertical().has_local_proposals_put()) {
           return;
         }
         msg->mutable_vertical()->mutable_local_proposals_put()->set_party(party);
         ++*fired;
       }},
      // party/vertical_waves_party.cc CheckDeliveredProposals: the winners of a wave the party
      // did not propose in.
      {"vlocal_winners_of_another_wave", "before this party proposed in it",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_winners()) return;
         msg->set_round(msg->round() + 7);
         ++*fired;
       }},
  };
  ExpectRefusedByName(kLocalSpec, LocalTables(), tax, cases, fired);
}

// Checks: party/vertical_waves_party.cc Commit; party/vertical_local.cc CloseWaves, ApplyWave.
// Vertical local recoding without judges (kLocalSpec): a wave's commit that closes the waves out
// of place, or relays an instruction twice.
TEST(MaliciousLeader, VerticalLocalCommitsThatCloseOrRepeatAreRefusedByName) {
  const auto tax = LocalTaxonomies();
  auto fired = std::make_shared<std::atomic<int>>(0);
  auto first_wave = std::make_shared<uint32_t>(0);
  const std::vector<LocalAttackCase> cases = {
      // party/vertical_waves_party.cc Commit: a wave's commit with instructions, marked closing
      // (the parties would compare final digests and release after splits were handed over).
      {"vlocal_closing_with_instructions", "the closing wave carries instructions",
       [fired](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical() || !msg->vertical().has_local_commit()) return;
         auto* c = msg->mutable_vertical()->mutable_local_commit();
         if (c->instructions_size() + c->instruction_refs_size() == 0) return;
         c->set_closing(true);
         ++*fired;
       }},
      // party/vertical_local.cc CloseWaves: the first wave numbered 0 (the number every replica
      // uses for "no checked wave"), closed right after its proposals: refused although every
      // signed proposal of it was delivered and checked.
      {"vlocal_closing_wave_zero", "the closing wave 0 comes without checked proposals",
       [fired, first_wave](const std::string&, LeaderMessage* msg) {
         if (!msg->has_vertical()) return;
         if (*first_wave == 0 && msg->vertical().has_local_propose()) *first_wave = msg->round();
         if (*first_wave == 0 || msg->round() != *first_wave) return;
         msg->set_round(0);
         if (msg->vertical().has_local_winners()) {
           msg->mutable_vertical()->mutable_local_commit()->set_closing(true);
           ++*fired;
         }
       }},
      // party/vertical_local.cc ApplyWave: an owner's (whole) instruction relayed twice in one
      // commit.
      {"vlocal_twice_whole", "two instructions from 'hospital-a'",
       [fired](const std::string&, LeaderMessage* msg) {
         WholePayloads(msg);
         if (!msg->has_vertical() || !msg->vertical().has_local_commit()) return;
         auto* c = msg->mutable_vertical()->mutable_local_commit();
         for (int i = 0; i < c->instructions_size(); ++i) {
           if (c->instructions(i).sender() != "hospital-a") continue;
           *c->add_instructions() = c->instructions(i);
           ++*fired;
           return;
         }
       }},
  };
  ExpectRefusedByName(kLocalSpec, LocalTables(), tax, cases, fired);
}

// Checks: party/vertical_waves_party.cc VerticalWavesParty::VerdictsPage.
// Vertical local recoding with a judge (kLocalVetoSpec: hospital-b judges the splits of
// hospital-a and hospital-c): the judge's verdict pages asked out of place.
TEST(MaliciousLeader, VerticalLocalVerdictPagesOutOfPlaceAreRefusedByName) {
  const auto tax = LocalVetoTaxonomies();
  auto fired = std::make_shared<std::atomic<int>>(0);
  auto judged = std::make_shared<uint32_t>(0);  // the round hospital-b judged in
  const std::vector<LocalAttackCase> cases = {
      // party/vertical_waves_party.cc VerdictsPage: the judge's verdict page before it judged.
      {"vjudge_page_before_judging", "before this judge judged it",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (!ToTheJudge(party, *msg)) return;
         msg->mutable_vertical()->mutable_local_verdicts_page()->set_page(0);
         ++*fired;
       }},
      // party/vertical_waves_party.cc VerdictsPage: a verdict page past the judge's list (the
      // next request after its judgement).
      {"vjudge_page_range", "page 5 of this judge's 1 verdict pages of wave",
       [fired, judged](const std::string& party, LeaderMessage* msg) {
         if (*fired > 0 || party != "hospital-b" || !msg->has_vertical()) return;
         if (ToTheJudge(party, *msg)) {
           *judged = msg->round();
         } else if (*judged != 0) {
           msg->set_round(*judged);
           msg->mutable_vertical()->mutable_local_verdicts_page()->set_page(5);
           ++*fired;
         }
       }},
  };
  ExpectRefusedByName(kLocalVetoSpec, LocalVetoTables(), tax, cases, fired);
}

// Checks: party/vertical_waves_party.cc CheckDeliveredVerdicts; party/vertical_local.cc Judge.
// Vertical local recoding with a judge (kLocalVetoSpec): the judge skipped (the wave's commit in
// its place), or a party that is not a judge asked to judge.
TEST(MaliciousLeader, VerticalLocalJudgementSkippedOrMisdirectedIsRefusedByName) {
  const auto tax = LocalVetoTaxonomies();
  auto fired = std::make_shared<std::atomic<int>>(0);
  const std::vector<LocalAttackCase> cases = {
      // party/vertical_waves_party.cc CheckDeliveredVerdicts: the wave's commit in place of the
      // judge's judgement (the judge would apply splits it never judged).
      {"vjudge_commit_before_judging", "before this judge's verdicts",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (!ToTheJudge(party, *msg)) return;
         msg->mutable_vertical()->mutable_local_commit();
         ++*fired;
       }},
      // party/vertical_local.cc Judge: a party that holds no bounded sensitive value asked to
      // judge (it would read the splits before the judges accepted them).
      {"vjudge_not_a_judge", "but not a judge",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (party != "hospital-c" || !msg->has_vertical() ||
             !msg->vertical().has_local_winners()) {
           return;
         }
         msg->mutable_vertical()->mutable_local_judge();
         ++*fired;
       }},
  };
  ExpectRefusedByName(kLocalVetoSpec, LocalVetoTables(), tax, cases, fired);
}

// Checks: party/vertical_local.cc VerticalLocalReplica::Judge.
// Vertical local recoding with a judge (kLocalVetoSpec): an owner's split withheld from the judge,
// or relayed to it twice.
TEST(MaliciousLeader, VerticalLocalSplitsToJudgeWithheldOrRepeatedAreRefusedByName) {
  const auto tax = LocalVetoTaxonomies();
  auto fired = std::make_shared<std::atomic<int>>(0);
  const std::vector<LocalAttackCase> cases = {
      // party/vertical_local.cc Judge: an owner's split withheld from the judge (its veto would
      // never be asked).
      {"vjudge_withheld", "is missing from the splits to judge (withheld from this judge)",
       [fired](const std::string& party, LeaderMessage* msg) {
         if (!ToTheJudge(party, *msg)) return;
         auto* j = msg->mutable_vertical()->mutable_local_judge();
         if (j->instructions_size() + j->instruction_refs_size() == 0) return;
         j->clear_instructions();
         j->clear_instruction_refs();
         ++*fired;
       }},
      // party/vertical_local.cc Judge: an owner's (whole) instruction relayed twice to the judge.
      {"vjudge_twice_whole", "two instructions from 'hospital-a' to judge",
       [fired](const std::string& party, LeaderMessage* msg) {
         WholePayloads(msg);
         if (!ToTheJudge(party, *msg)) return;
         auto* j = msg->mutable_vertical()->mutable_local_judge();
         for (int i = 0; i < j->instructions_size(); ++i) {
           if (j->instructions(i).sender() != "hospital-a") continue;
           *j->add_instructions() = j->instructions(i);
           ++*fired;
           return;
         }
       }},
  };
  ExpectRefusedByName(kLocalVetoSpec, LocalVetoTables(), tax, cases, fired);
}

}  // namespace
}  // namespace fedanon::testing
