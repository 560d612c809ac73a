// The party's protocol classes on their own, each against a scripted peer (the test plays the
// leader and the other parties): the context's sealing between participants, the payload
// transfer's chunk receipt, the secure sum's routing and mask hand-over, the final check's
// release gate. The whole agent is tested in party_agent_test.cc and through federations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/numeric_split.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "crypto/sealed_box.h"
#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/secure_sum_party.h"
#include "party/secure_union_party.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;

// One party's view of a job whose ring is `ring` and whose leader is "leader", with a sealing
// key pair per participant (shared between the contexts of one test, as certificates would be).
struct Participants {
  explicit Participants(std::vector<std::string> ring) : ring(std::move(ring)) {
    for (const std::string& name : Names()) {
      auto keys = crypto::SealKeyPair::Generate();
      EXPECT_TRUE(keys.ok());
      pairs[name] = *std::move(keys);
    }
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> out = ring;
    out.push_back("leader");
    return out;
  }
  std::unique_ptr<JobContext> ContextOf(const std::string& self) {
    options.push_back(std::make_unique<PartyAgentOptions>());
    options.back()->name = self;
    auto ctx = std::make_unique<JobContext>(*options.back(), audit);
    ctx->job_id = "job-0123456789ab";
    ctx->run_id = "run-1";
    ctx->ring = ring;
    ctx->leader = "leader";
    ctx->recipient = "leader";
    for (const std::string& name : Names()) {
      auto pub = crypto::SealPublicKey::FromUncompressedPoint(
          pairs[name]->public_key().UncompressedPoint());
      EXPECT_TRUE(pub.ok());
      ctx->seal_keys[name] = *std::move(pub);
    }
    auto own = std::make_shared<SealKeyRing::Entry>();
    own->keys = pairs[self];
    ctx->own_seal = std::move(own);
    return ctx;
  }
  std::vector<std::string> ring;
  std::map<std::string, std::shared_ptr<crypto::SealKeyPair>> pairs;
  std::vector<std::unique_ptr<PartyAgentOptions>> options;
  AuditLog audit{""};  // no state directory: nothing recorded
};

TEST(JobContext, APayloadSealedForAPartyOpensThereUnderTheSameRoundAndPurposeOnly) {
  Participants p({"a", "b", "c"});
  auto a = p.ContextOf("a");
  auto b = p.ContextOf("b");
  auto sealed = a->SealFor("b", 4, "instruction", "secret");
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  EXPECT_EQ(sealed->sender(), "a");
  EXPECT_EQ(sealed->receiver(), "b");
  auto opened = b->OpenSealed(*sealed, 4, "instruction");
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, "secret");
  EXPECT_FALSE(b->OpenSealed(*sealed, 5, "instruction").ok());  // another round
  EXPECT_FALSE(b->OpenSealed(*sealed, 4, "verdict").ok());      // another purpose
  auto c = p.ContextOf("c");
  EXPECT_FALSE(c->OpenSealed(*sealed, 4, "instruction").ok());  // not sealed for c
  EXPECT_FALSE(a->SealFor("mallory", 4, "instruction", "x").ok());
}

TEST(JobContext, APayloadNamingTheLeaderAsSenderIsRefused) {
  Participants p({"a", "b"});
  auto b = p.ContextOf("b");
  fedanon::v1::SealedPayload from_leader;
  from_leader.set_sender("leader");
  from_leader.set_receiver("b");
  auto opened = b->OpenSealed(from_leader, 1, "instruction");
  EXPECT_TRUE(absl::IsPermissionDenied(opened.status()));
  EXPECT_THAT(opened.status().message(), HasSubstr("not a data party"));
}

TEST(JobContext, AReleaseHeaderIsExactlyTheSignedJobsReleasedAttributes) {
  Participants p({"a", "b"});
  auto a = p.ContextOf("a");
  for (const auto& [name, role] :
       std::vector<std::pair<std::string, fedanon::v1::Role>>{{"id", fedanon::v1::ROLE_ID},
                                                              {"age", fedanon::v1::ROLE_QID},
                                                              {"cls", fedanon::v1::ROLE_CLASS}}) {
    auto* attribute = a->spec.add_attributes();
    attribute->set_name(name);
    attribute->set_role(role);
  }
  auto header = [](std::vector<std::string> names) {
    google::protobuf::RepeatedPtrField<std::string> out;
    for (auto& n : names) *out.Add() = std::move(n);
    return out;
  };
  EXPECT_TRUE(a->CheckReleasedHeader(header({"age", "cls"}), "secure union").ok());
  for (const auto& wrong : std::vector<std::vector<std::string>>{
           {"cls", "age"}, {"age"}, {"id", "age", "cls"}, {"age", "cls", "age"}, {}}) {
    const absl::Status st = a->CheckReleasedHeader(header(wrong), "vertical assemble");
    EXPECT_TRUE(absl::IsPermissionDenied(st)) << wrong.size();
    EXPECT_THAT(st.message(), HasSubstr("vertical assemble: the header the leader sends is not "
                                        "the released attributes of the signed job (age,cls)"));
  }
}

fedanon::v1::LeaderMessage ChunkPutOf(const std::string& sender, const std::string& receiver) {
  fedanon::v1::LeaderMessage m;
  m.set_job_id("job-0123456789ab");
  auto* ref = m.mutable_chunk_put()->mutable_ref();
  ref->set_stream("s");
  ref->set_sender(sender);
  ref->set_receiver(receiver);
  ref->set_chunks(1);
  return m;
}

TEST(PayloadTransfer, ChunksAreTakenOnlyForThisPartyFromADataPartyOfAChunkedJob) {
  Participants p({"a", "b"});
  auto b = p.ContextOf("b");
  PayloadTransfer whole_job(*b);
  EXPECT_THAT(whole_job.ChunkPut(ChunkPutOf("a", "b"), false).status().message(),
              HasSubstr("travel whole"));
  b->chunk_bytes = 1024;
  PayloadTransfer transfer(*b);
  EXPECT_THAT(transfer.ChunkPut(ChunkPutOf("a", "c"), false).status().message(),
              HasSubstr("is for 'c'"));
  EXPECT_THAT(transfer.ChunkPut(ChunkPutOf("leader", "b"), false).status().message(),
              HasSubstr("is not a data party of the job"));
  fedanon::v1::LeaderMessage get;
  get.mutable_chunk_get()->set_stream("never-produced");
  EXPECT_TRUE(absl::IsNotFound(transfer.ChunkGet(get).status()));
}

// A stream this party produced serves its chunks by index, and none beyond its count (listed
// untested in docs/protocol.md).
TEST(PayloadTransfer, AChunkBeyondItsStreamsCountIsRefused) {
  Participants p({"a", "b"});
  auto b = p.ContextOf("b");
  b->message_limit = 64 << 10;
  b->chunk_bytes = 1024;
  PayloadTransfer transfer(*b);
  transfer.StartProducing("step-1", std::string(32, 'd'));
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  const std::string bytes(3000, 'x');  // three chunks of at most 1024 bytes
  ASSERT_OK(transfer.SealPayload("a", 1, "test-payload", bytes, &whole, &ref));
  transfer.StopProducing();
  ASSERT_GE(ref.chunks(), 2u);
  fedanon::v1::LeaderMessage get;
  get.mutable_chunk_get()->set_stream(ref.stream());
  for (uint32_t i = 0; i < ref.chunks(); ++i) {
    get.mutable_chunk_get()->set_index(i);
    EXPECT_OK(transfer.ChunkGet(get)) << i;
  }
  get.mutable_chunk_get()->set_index(ref.chunks());
  EXPECT_THAT(transfer.ChunkGet(get),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("chunk ", ref.chunks(), " is beyond its count of ")));
}

fedanon::v1::LeaderMessage SumStepTo(const std::string& next) {
  fedanon::v1::LeaderMessage m;
  m.set_job_id("job-0123456789ab");
  m.set_round(1);
  m.mutable_sum_step()->set_next(next);
  return m;
}

// A global horizontal job over one categorical QID (Sex) and one continuous QID (Age).
absl::StatusOr<fedanon::v1::JobSpec> SexAgeSpec() {
  return common::ParseJobSpecYaml(R"(name: t
attributes:
  - {name: Sex, role: qid, values: [M, F]}
  - {name: Age, role: qid, type: continuous, range: [0, 40], precision: 1}
  - {name: Disease, role: sensitive, values: [flu, hiv]}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [hiv]}
partitioning: horizontal
)",
                                  "job.yaml");
}

// State updates the job's recoding or current cut does not have (docs/protocol.md listed these
// refusals untested): a local-recoding update in a global job, a split of an attribute that is
// no interval, a threshold outside its interval; a threshold inside it applies.
TEST(HorizontalTables, UpdatesThatTheRecodingOrTheCutDoNotHaveAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<common::Dataset> schema = common::BuildPublicSchema(*spec, {});
  ASSERT_TRUE(schema.ok()) << schema.status();
  HorizontalTables tables;
  tables.data = std::make_unique<common::Dataset>(*std::move(schema));
  for (const auto& q : tables.data->qids) tables.hier.emplace_back(&q);
  ASSERT_EQ(tables.hier.size(), 2u);
  auto apply = [&](fedanon::v1::StateUpdate u) {
    google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate> updates;
    u.set_sequence(tables.applied_updates);
    *updates.Add() = std::move(u);
    return tables.ApplyUpdates(*spec, updates);
  };
  fedanon::v1::StateUpdate local;
  local.mutable_local_split();
  EXPECT_THAT(apply(local), StatusIs(absl::StatusCode::kPermissionDenied,
                                     "a local-recoding update in a job without recoding: local"));
  fedanon::v1::StateUpdate categorical;  // Sex has no intervals
  categorical.mutable_split()->set_attribute(0);
  EXPECT_THAT(apply(categorical), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "split names no interval of the current cut"));
  const common::AttributeHierarchy& age = tables.hier[1];
  const auto& root = age.node(0);
  fedanon::v1::StateUpdate outside;
  outside.mutable_split()->set_attribute(1);
  outside.mutable_split()->set_node(0);
  outside.mutable_split()->set_split(root.rank_hi);  // its upper end is not inside it
  EXPECT_THAT(apply(outside), StatusIs(absl::StatusCode::kInvalidArgument,
                                       "split threshold lies outside its interval"));
  EXPECT_EQ(tables.applied_updates, 0u);
  // A threshold inside the interval (on a public-cell boundary when the search is binned).
  int32_t threshold = root.rank_lo + 1;
  const common::NumericSplitConfig numeric = common::NumericSplitFromSpec(*spec);
  if (numeric.binned()) {
    for (int32_t c : common::PublicCellBounds(age.column(), numeric.cells)) {
      if (c > root.rank_lo && c < root.rank_hi) {
        threshold = c;
        break;
      }
    }
  }
  fedanon::v1::StateUpdate inside = outside;
  inside.mutable_split()->set_split(threshold);
  EXPECT_OK(apply(inside));
  EXPECT_EQ(tables.applied_updates, 1u);
}

// The statistics a request names must exist in the party's current cut (common::FromProto, on
// the hierarchies of SexAgeSpec; docs/protocol.md listed these refusals untested).
TEST(StatsRequestFromTheWire, NodesOutsideTheCurrentCutAreRefusedByName) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<common::Dataset> schema = common::BuildPublicSchema(*spec, {});
  ASSERT_TRUE(schema.ok()) << schema.status();
  std::vector<common::AttributeHierarchy> hier;
  for (const auto& q : schema->qids) hier.emplace_back(&q);
  const int32_t beyond = static_cast<int32_t>(hier[1].size());
  auto refused = [&](const std::function<void(fedanon::v1::StatsRequest*)>& fill) {
    fedanon::v1::StatsRequest proto;
    fill(&proto);
    return common::FromProto(proto, hier).status();
  };
  // A rank histogram of a categorical attribute, or of a node the cut does not have.
  EXPECT_THAT(
      refused([](auto* r) { r->add_rank_histograms()->set_attribute(0); }),
      StatusIs(absl::StatusCode::kInvalidArgument, "rank histogram of an unknown interval"));
  EXPECT_THAT(
      refused([&](auto* r) {
        auto* h = r->add_rank_histograms();
        h->set_attribute(1);
        h->set_node(beyond);
      }),
      StatusIs(absl::StatusCode::kInvalidArgument, "rank histogram of an unknown interval"));
  EXPECT_THAT(refused([&](auto* r) {
                auto* c = r->add_node_class_counts();
                c->set_attribute(1);
                c->set_node(beyond);
              }),
              StatusIs(absl::StatusCode::kInvalidArgument, "class counts of an unknown node"));
  EXPECT_THAT(refused([](auto* r) { r->add_node_class_counts()->set_attribute(7); }),
              StatusIs(absl::StatusCode::kInvalidArgument, "class counts of an unknown node"));
  // The same kinds over existing nodes are read.
  EXPECT_OK(refused([](auto* r) {
    auto* h = r->add_rank_histograms();
    h->set_attribute(1);
    h->set_node(0);
    r->add_node_class_counts()->set_attribute(0);
  }));
}

TEST(SecureSumParty, AHopIsSealedOnlyForTheSuccessorAgreedAtPrepare) {
  Participants p({"a", "b", "c"});
  auto b = p.ContextOf("b");
  HorizontalTables tables;
  FinalCheckParty final_check(*b, tables);
  SecureSumParty sum(*b, tables, final_check);
  for (const std::string next : {"a", "", "leader", "mallory"}) {
    auto reply = sum.Step(SumStepTo(next));
    EXPECT_TRUE(absl::IsPermissionDenied(reply.status())) << next;
    EXPECT_THAT(reply.status().message(), HasSubstr("this party's successor in the ring"));
  }
  auto c = p.ContextOf("c");
  SecureSumParty last(*c, tables, final_check);
  EXPECT_THAT(last.Step(SumStepTo("a")).status().message(), HasSubstr("the leader (empty next)"));
}

// A local-recoding statistics request in a job with global recoding is refused before anything
// is counted (docs/protocol.md listed it untested).
TEST(SecureSumParty, LocalStatisticsInAGlobalJobAreRefused) {
  Participants p({"a", "b", "c"});
  auto a = p.ContextOf("a");
  HorizontalTables tables;
  FinalCheckParty final_check(*a, tables);
  SecureSumParty sum(*a, tables, final_check);
  fedanon::v1::LeaderMessage m = SumStepTo("b");
  auto* step = m.mutable_sum_step();
  step->set_chunks(1);  // one chunk of one word
  step->set_total_words(1);
  step->set_chunk_words(1);
  step->mutable_request()->mutable_local();
  EXPECT_THAT(sum.Step(m),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "secure sum: local-recoding statistics in a job without recoding: local"));
}

TEST(SecureSumParty, OnlyTheRingsFirstPartyHandsAMaskOverAndOnlyOfTheCurrentCollect) {
  Participants p({"a", "b", "c"});
  HorizontalTables tables;
  auto b = p.ContextOf("b");
  FinalCheckParty fb(*b, tables);
  SecureSumParty not_first(*b, tables, fb);
  fedanon::v1::LeaderMessage unmask;
  unmask.set_round(1);
  unmask.mutable_sum_unmask()->set_collect(0);
  EXPECT_THAT(not_first.Unmask(unmask).status().message(),
              HasSubstr("only the ring's first party masks the sum"));
  auto a = p.ContextOf("a");
  FinalCheckParty fa(*a, tables);
  SecureSumParty first(*a, tables, fa);
  auto none = first.Unmask(unmask);
  EXPECT_TRUE(absl::IsFailedPrecondition(none.status()));
  EXPECT_THAT(none.status().message(), HasSubstr("no mask of collect 0 is held"));
}

TEST(FinalCheckParty, ThreePartiesReleaseOnlyAfterTheCheckTwoPartiesSkipIt) {
  HorizontalTables tables;
  Participants three({"a", "b", "c"});
  auto a = three.ContextOf("a");
  FinalCheckParty gate(*a, tables);
  const absl::Status refused = gate.ReleaseAllowed("secure union");
  EXPECT_TRUE(absl::IsPermissionDenied(refused));
  EXPECT_THAT(refused.message(), HasSubstr("before the final check of the privacy model passed"));
  Participants two({"a", "b"});
  auto a2 = two.ContextOf("a");
  FinalCheckParty skipped(*a2, tables);
  EXPECT_TRUE(skipped.ReleaseAllowed("secure union").ok());
}

// The secure union's routing against what Prepare fixed (docs/protocol.md listed these refusals
// untested): the recipient agreed at Prepare, and the ring's first party starts from nothing.
TEST(SecureUnionParty, AnotherRecipientOrAStartingSetForTheFirstPartyIsRefused) {
  Participants p({"a", "b"});  // two parties: no final check before the release
  auto a = p.ContextOf("a");
  HorizontalTables tables;
  FinalCheckParty final_check(*a, tables);
  PayloadTransfer transfer(*a);
  SecureUnionParty union_party(*a, tables, final_check, transfer, nullptr);
  fedanon::v1::LeaderMessage m;
  m.set_job_id("job-0123456789ab");
  m.set_round(3);
  auto* step = m.mutable_union_step();
  step->set_next("b");
  step->set_recipient("mallory");
  EXPECT_THAT(union_party.Step(m),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "secure union: recipient 'mallory' is not the one agreed at Prepare "
                       "('leader')"));
  step->set_recipient("leader");
  step->mutable_list()->set_sender("b");
  step->mutable_list()->set_ciphertext("rows the leader slipped in");
  EXPECT_THAT(union_party.Step(m),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "secure union: the first party of the ring starts from the empty set"));
}

}  // namespace
}  // namespace fedanon::party
