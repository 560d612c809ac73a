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

#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/engine/count_source.h"
#include "common/engine/final_check.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/sealed_box.h"
#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/local_party.h"
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
constexpr char kSexAgeYaml[] = R"(name: t
attributes:
  - {name: Sex, role: qid, values: [M, F]}
  - {name: Age, role: qid, type: continuous, range: [0, 40], precision: 1}
  - {name: Disease, role: sensitive, values: [flu, hiv]}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [hiv]}
partitioning: horizontal
)";

absl::StatusOr<fedanon::v1::JobSpec> SexAgeSpec() {
  return spec::ParseJobSpecYaml(kSexAgeYaml, "job.yaml");
}

// State updates the job's recoding or current cut does not have (docs/protocol.md listed these
// refusals untested): a local-recoding update in a global job, a split of an attribute that is
// no interval, a threshold outside its interval; a threshold inside it applies.
TEST(HorizontalTables, UpdatesThatTheRecodingOrTheCutDoNotHaveAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<table::Dataset> schema = table::BuildPublicSchema(*spec, {});
  ASSERT_TRUE(schema.ok()) << schema.status();
  HorizontalTables tables;
  tables.data = std::make_unique<table::Dataset>(*std::move(schema));
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
  const engine::AttributeHierarchy& age = tables.hier[1];
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
  const engine::NumericSplitConfig numeric = engine::NumericSplitFromSpec(*spec);
  if (numeric.binned()) {
    for (int32_t c : engine::PublicCellBounds(age.column(), numeric.cells)) {
      if (c > root.rank_lo && c < root.rank_hi) {
        threshold = c;
        break;
      }
    }
  }
  fedanon::v1::StateUpdate inside = outside;
  inside.mutable_split()->set_split(threshold);
  if (numeric.binned()) {
    // Binned: only on a boundary of the attribute's bins, so not before they were asked.
    EXPECT_THAT(apply(inside), StatusIs(absl::StatusCode::kPermissionDenied,
                                        "comes before any class counts over its bins were asked"));
    engine::StatsRequest bins;
    bins.range_counts.push_back({1, {root.rank_lo, threshold, root.rank_hi}, true});
    ASSERT_OK(tables.RecordBins(bins, numeric));
    EXPECT_THAT(tables.RecordBins(bins, numeric),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "class counts of attribute 1 were asked over bins already"));
  }
  EXPECT_OK(apply(inside));
  EXPECT_EQ(tables.applied_updates, 1u);
}

// The statistics a request names must exist in the party's current cut (wire::FromProto, on
// the hierarchies of SexAgeSpec; docs/protocol.md listed these refusals untested).
TEST(StatsRequestFromTheWire, NodesOutsideTheCurrentCutAreRefusedByName) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<table::Dataset> schema = table::BuildPublicSchema(*spec, {});
  ASSERT_TRUE(schema.ok()) << schema.status();
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema->qids) hier.emplace_back(&q);
  const int32_t beyond = static_cast<int32_t>(hier[1].size());
  auto refused = [&](const std::function<void(fedanon::v1::StatsRequest*)>& fill) {
    fedanon::v1::StatsRequest proto;
    fill(&proto);
    return wire::FromProto(proto, hier).status();
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
  PayloadTransfer transfer(*b);
  FinalCheckParty final_check(*b, tables, transfer);
  SecureSumParty sum(*b, tables, final_check, transfer);
  for (const std::string next : {"a", "", "leader", "mallory"}) {
    auto reply = sum.Step(SumStepTo(next));
    EXPECT_TRUE(absl::IsPermissionDenied(reply.status())) << next;
    EXPECT_THAT(reply.status().message(), HasSubstr("this party's successor in the ring"));
  }
  auto c = p.ContextOf("c");
  PayloadTransfer c_transfer(*c);
  SecureSumParty last(*c, tables, final_check, c_transfer);
  EXPECT_THAT(last.Step(SumStepTo("a")).status().message(), HasSubstr("the leader (empty next)"));
}

// A local-recoding statistics request in a job with global recoding is refused before anything
// is counted (docs/protocol.md listed it untested).
TEST(SecureSumParty, LocalStatisticsInAGlobalJobAreRefused) {
  Participants p({"a", "b", "c"});
  auto a = p.ContextOf("a");
  HorizontalTables tables;
  PayloadTransfer transfer(*a);
  FinalCheckParty final_check(*a, tables, transfer);
  SecureSumParty sum(*a, tables, final_check, transfer);
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
  PayloadTransfer tb(*b);
  FinalCheckParty fb(*b, tables, tb);
  SecureSumParty not_first(*b, tables, fb, tb);
  fedanon::v1::LeaderMessage unmask;
  unmask.set_round(1);
  unmask.mutable_sum_unmask()->set_collect(0);
  EXPECT_THAT(not_first.Unmask(unmask).status().message(),
              HasSubstr("only the ring's first party masks the sum"));
  auto a = p.ContextOf("a");
  PayloadTransfer ta(*a);
  FinalCheckParty fa(*a, tables, ta);
  SecureSumParty first(*a, tables, fa, ta);
  auto none = first.Unmask(unmask);
  EXPECT_TRUE(absl::IsFailedPrecondition(none.status()));
  EXPECT_THAT(none.status().message(), HasSubstr("no mask of collect 0 is held"));
}

TEST(FinalCheckParty, ThreeOrTwoPartiesReleaseOnlyAfterTheCheck) {
  HorizontalTables tables;
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"a", "b", "c"}, std::vector<std::string>{"a", "b"}}) {
    Participants parties(names);
    auto a = parties.ContextOf("a");
    PayloadTransfer transfer(*a);
    FinalCheckParty gate(*a, tables, transfer);
    const absl::Status refused = gate.ReleaseAllowed("secure union");
    EXPECT_TRUE(absl::IsPermissionDenied(refused)) << names.size();
    EXPECT_THAT(refused.message(), HasSubstr("before the final check of the privacy model passed"));
  }
}

// ---- Refusals of a deviating leader (docs/protocol.md, "(b) Checks without a test"). ----

// A party's chunked payload for `receiver`, produced by `producer` under step key "step-1" and
// put chunk by chunk into `into` (as the leader relays it: ChunkGet at the producer, ChunkPut at
// the receiver). Returns the stream's ChunkRef.
fedanon::v1::ChunkRef RelayChunks(PayloadTransfer& producer, PayloadTransfer& into,
                                  const std::string& receiver, const std::string& purpose,
                                  const std::string& bytes) {
  producer.StartProducing("step-1", std::string(32, 'd'));
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  EXPECT_OK(producer.SealPayload(receiver, 1, purpose, bytes, &whole, &ref));
  producer.StopProducing();
  for (uint32_t i = 0; i < ref.chunks(); ++i) {
    fedanon::v1::LeaderMessage get;
    get.set_round(1);
    get.mutable_chunk_get()->set_stream(ref.stream());
    get.mutable_chunk_get()->set_index(i);
    absl::StatusOr<fedanon::v1::PartyMessage> chunk = producer.ChunkGet(get);
    EXPECT_OK(chunk);
    if (!chunk.ok()) break;
    fedanon::v1::LeaderMessage put;
    put.set_round(1);
    *put.mutable_chunk_put()->mutable_ref() = chunk->chunk().ref();
    put.mutable_chunk_put()->set_index(i);
    *put.mutable_chunk_put()->mutable_chunk() = chunk->chunk().chunk();
    EXPECT_OK(into.ChunkPut(put, false)) << i;
  }
  return ref;
}

// party/payload_transfer.cc OpenPayload: a whole payload where the job negotiated chunks.
TEST(PayloadTransfer, AWholePayloadInAChunkedJobIsRefused) {
  Participants p({"a", "b"});
  auto a = p.ContextOf("a");
  auto b = p.ContextOf("b");
  auto whole = a->SealFor("b", 1, "union-list", "the list");
  ASSERT_OK(whole);
  b->chunk_bytes = 1024;
  PayloadTransfer chunked(*b);
  EXPECT_THAT(chunked.OpenPayload(*whole, fedanon::v1::ChunkRef(), 1, "union-list", nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a whole 'union-list' payload in a job whose per-record payloads travel "
                       "in chunks"));
  // The same payload in a job whose payloads travel whole opens.
  b->chunk_bytes = 0;
  PayloadTransfer whole_job(*b);
  std::string sender;
  auto opened = whole_job.OpenPayload(*whole, fedanon::v1::ChunkRef(), 1, "union-list", &sender);
  ASSERT_OK(opened);
  EXPECT_EQ(*opened, "the list");
  EXPECT_EQ(sender, "a");
}

// A secure comparison's message (SealMessage, protocol 5.0): whole when it fits one chunk of a
// chunked job, so the leader relays it with the step; in chunks when larger. The receiver opens a
// whole one only up to one chunk: a larger whole message (the leader's, or a sender's, choice of
// form) is refused by name.
TEST(PayloadTransfer, AComparisonMessageGoesWholeUpToOneChunkAndNoLarger) {
  Participants p({"a", "b"});
  auto a = p.ContextOf("a");
  auto b = p.ContextOf("b");
  for (auto* ctx : {a.get(), b.get()}) {
    ctx->chunk_bytes = 4096;
    ctx->message_limit = 64 << 10;
  }
  PayloadTransfer sender(*a);
  PayloadTransfer receiver(*b);
  const std::string small(4096, 's');
  sender.StartProducing("step-1", std::string(32, 'd'));
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  ASSERT_OK(sender.SealMessage("b", 1, "compare", small, &whole, &ref));
  sender.StopProducing();
  EXPECT_TRUE(ref.stream().empty()) << "one chunk's worth goes whole";
  ASSERT_OK_AND_ASSIGN(
      const std::string opened,
      receiver.OpenPayloadFrom("a", whole, ref, 1, "compare", "a comparison", "this step"));
  EXPECT_EQ(opened, small);
  // One byte more: in chunks, which the receiver opens once they were put.
  const std::string large(4097, 'l');
  const fedanon::v1::ChunkRef chunked = RelayChunks(sender, receiver, "b", "compare-2", large);
  EXPECT_EQ(chunked.chunks(), 2u);
  ASSERT_OK_AND_ASSIGN(const std::string reassembled,
                       receiver.OpenPayloadFrom("a", fedanon::v1::SealedPayload(), chunked, 1,
                                                "compare-2", "a comparison", "this step"));
  EXPECT_EQ(reassembled, large);
  // The same larger message sealed whole (as a job without chunks would): refused by name.
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::SealedPayload too_large,
                       a->SealFor("b", 1, "compare-3", large));
  EXPECT_THAT(
      receiver.OpenPayloadFrom("a", too_large, fedanon::v1::ChunkRef(), 1, "compare-3",
                               "a comparison", "this step"),
      StatusIs(absl::StatusCode::kPermissionDenied, "bytes, more than one chunk of this job"));
}

// party/payload_transfer.cc OpenPayload: a step naming a stream meant for another party or of
// another purpose, a stream none of whose chunks arrived, and a stream under another shape than
// its chunks declared; the stream as its chunks declared it then opens.
TEST(PayloadTransfer, AStepNamingAnotherStreamOrShapeThanItsChunksIsRefused) {
  Participants p({"a", "b", "c"});
  auto a = p.ContextOf("a");
  auto b = p.ContextOf("b");
  for (JobContext* ctx : {a.get(), b.get()}) {
    ctx->chunk_bytes = 4096;
    ctx->message_limit = 64 << 10;
  }
  PayloadTransfer at_a(*a);
  PayloadTransfer at_b(*b);
  const std::string bytes(10000, 'x');  // three chunks
  const fedanon::v1::ChunkRef ref = RelayChunks(at_a, at_b, "b", "union-list", bytes);
  ASSERT_GE(ref.chunks(), 2u);
  const fedanon::v1::SealedPayload none;
  EXPECT_THAT(at_b.OpenPayload(none, ref, 1, "instruction", nullptr),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "is a 'union-list' payload for 'b', not a 'instruction' payload for this "
                       "party"));
  fedanon::v1::ChunkRef for_c = ref;
  for_c.set_receiver("c");
  EXPECT_THAT(at_b.OpenPayload(none, for_c, 1, "union-list", nullptr),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "is a 'union-list' payload for 'c', not a 'union-list' payload for this "
                       "party"));
  fedanon::v1::ChunkRef never_put = ref;
  never_put.set_stream("step-2/b");
  EXPECT_THAT(at_b.OpenPayload(none, never_put, 1, "union-list", nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "chunked payload 'step-2/b' from 'a': no chunk of it was received"));
  for (const auto& reshape : std::vector<std::function<void(fedanon::v1::ChunkRef*)>>{
           [](auto* r) { r->set_chunks(r->chunks() + 1); },
           [](auto* r) { r->set_total_bytes(r->total_bytes() - 1); },
           [](auto* r) { r->set_request_digest(std::string(32, 'e')); }}) {
    fedanon::v1::ChunkRef other = ref;
    reshape(&other);
    EXPECT_THAT(at_b.OpenPayload(none, other, 1, "union-list", nullptr),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "the step names another shape than its chunks declared"));
  }
  std::string sender;
  auto opened = at_b.OpenPayload(none, ref, 1, "union-list", &sender);
  ASSERT_OK(opened);
  EXPECT_EQ(*opened, bytes);
  EXPECT_EQ(sender, "a");
}

// SexAgeSpec with `recoding: local`.
absl::StatusOr<fedanon::v1::JobSpec> SexAgeLocalSpec() {
  return spec::ParseJobSpecYaml(std::string(kSexAgeYaml) + "recoding: local\n", "job.yaml");
}

// A party's table of SexAgeSpec (or SexAgeLocalSpec), loaded as party/job_setup.cc loads it:
// records, hierarchies, TIPS, and a local-recoding job's groups.
std::unique_ptr<HorizontalTables> LoadedTables(const fedanon::v1::JobSpec& spec) {
  static const std::vector<std::vector<std::string>> kRows = {
      {"M", "25", "flu", "Y"}, {"F", "30", "hiv", "N"}, {"M", "35", "flu", "N"},
      {"F", "12", "flu", "Y"}, {"M", "8", "hiv", "Y"},  {"F", "39", "flu", "N"}};
  auto tables = std::make_unique<HorizontalTables>();
  absl::StatusOr<table::Dataset> schema = table::BuildPublicSchema(spec, {});
  EXPECT_OK(schema);
  if (!schema.ok()) return tables;
  auto encoder = table::DatasetEncoder::Create(spec, "test table", &*schema);
  EXPECT_OK(encoder);
  if (!encoder.ok()) return tables;
  const std::vector<std::string_view> header = {"Sex", "Age", "Disease", "Class"};
  EXPECT_OK((*encoder)->SetHeader(header));
  std::string text = "Sex,Age,Disease,Class\n";
  for (size_t i = 0; i < kRows.size(); ++i) {
    const std::vector<std::string_view> fields(kRows[i].begin(), kRows[i].end());
    EXPECT_OK((*encoder)->AddRow(fields, i + 1));
    text += absl::StrJoin(kRows[i], ",") + "\n";
  }
  absl::StatusOr<table::Dataset> data =
      (*encoder)->Finish(std::make_shared<const std::string>(std::move(text)));
  EXPECT_OK(data);
  if (!data.ok()) return tables;
  tables->data = std::make_unique<table::Dataset>(*std::move(data));
  for (const auto& q : tables->data->qids) tables->hier.emplace_back(&q);
  tables->tips = std::make_unique<engine::Tips>(tables->data.get(), &tables->hier);
  if (spec.recoding() == fedanon::v1::RECODING_LOCAL) {
    tables->local = std::make_unique<LocalParty>(tables->data.get(), spec);
  }
  return tables;
}

// One data party of a horizontal job with its loaded table: its context, final check and secure
// sum, as the agent wires them.
struct HorizontalParty {
  HorizontalParty(Participants& p, const std::string& self, const fedanon::v1::JobSpec& spec)
      : ctx(p.ContextOf(self)),
        tables(LoadedTables(spec)),
        transfer(*ctx),
        final_check(*ctx, *tables, transfer),
        sum(*ctx, *tables, final_check, transfer) {
    ctx->spec = spec;
  }
  std::unique_ptr<JobContext> ctx;
  std::unique_ptr<HorizontalTables> tables;
  PayloadTransfer transfer;
  FinalCheckParty final_check;
  SecureSumParty sum;
};

// party/horizontal_tables.cc ApplyUpdates: a global instruction or split in a job with recoding:
// local.
TEST(HorizontalTables, AGlobalUpdateInALocalRecodingJobIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeLocalSpec();
  ASSERT_OK(spec);
  std::unique_ptr<HorizontalTables> tables = LoadedTables(*spec);
  ASSERT_NE(tables->local, nullptr);
  auto apply = [&](fedanon::v1::StateUpdate u) {
    google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate> updates;
    u.set_sequence(tables->applied_updates);
    *updates.Add() = std::move(u);
    return tables->ApplyUpdates(*spec, updates);
  };
  fedanon::v1::StateUpdate instruction;  // the first candidate of Sex's root
  instruction.mutable_instruction()->set_attribute(0);
  instruction.mutable_instruction()->set_node(0);
  instruction.mutable_instruction()->set_candidate(0);
  EXPECT_THAT(apply(instruction),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "a global instruction in a job with recoding: local (only group splits "
                       "apply)"));
  fedanon::v1::StateUpdate split;
  split.mutable_split()->set_attribute(1);
  split.mutable_split()->set_node(0);
  split.mutable_split()->set_split(-1);
  EXPECT_THAT(apply(split), StatusIs(absl::StatusCode::kPermissionDenied,
                                     "a global instruction in a job with recoding: local"));
  EXPECT_EQ(tables->applied_updates, 0u);
  EXPECT_TRUE(tables->hier[0].node(0).children.empty());
}

// common/wire/federation_wire.cc FromProto: the group keys a request names must be as wide as
// the QIDs and name nodes of the current cut, both for statistics and for released counts.
TEST(StatsRequestFromTheWire, GroupKeysOfTheWrongWidthOrWithAnUnknownNodeAreRefusedByName) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  absl::StatusOr<table::Dataset> schema = table::BuildPublicSchema(*spec, {});
  ASSERT_OK(schema);
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema->qids) hier.emplace_back(&q);
  ASSERT_EQ(hier.size(), 2u);
  for (const bool released : {false, true}) {
    auto key_of = [&](const std::vector<int32_t>& nodes) {
      fedanon::v1::StatsRequest proto;
      auto* key = released ? proto.add_released_groups() : proto.add_groups();
      for (int32_t n : nodes) key->add_nodes(n);
      return wire::FromProto(proto, hier).status();
    };
    for (const std::vector<int32_t>& wrong_width :
         std::vector<std::vector<int32_t>>{{}, {0}, {0, 0, 0}}) {
      EXPECT_THAT(key_of(wrong_width),
                  StatusIs(absl::StatusCode::kInvalidArgument, "group key of the wrong width"))
          << released << " " << wrong_width.size();
    }
    const int32_t beyond_sex = static_cast<int32_t>(hier[0].size());
    const int32_t beyond_age = static_cast<int32_t>(hier[1].size());
    for (const std::vector<int32_t>& unknown :
         std::vector<std::vector<int32_t>>{{0, beyond_age}, {beyond_sex, 0}, {-1, 0}}) {
      EXPECT_THAT(key_of(unknown),
                  StatusIs(absl::StatusCode::kInvalidArgument, "group key names an unknown node"))
          << released << " " << unknown[0] << "," << unknown[1];
    }
    EXPECT_OK(key_of({0, 0})) << released;
  }
}

// The words `request` asks of `tables` (its statistics' length).
size_t WordsOf(const HorizontalTables& tables, const fedanon::v1::StatsRequest& proto) {
  absl::StatusOr<engine::StatsRequest> request = wire::FromProto(proto, tables.hier);
  EXPECT_OK(request);
  std::vector<uint64_t> out;
  if (request.ok()) engine::AppendLocalStats(*tables.tips, *request, &out);
  return out.size();
}

// A global statistics request: the class counts of both QIDs' roots and the root group's.
fedanon::v1::StatsRequest RootStatistics() {
  fedanon::v1::StatsRequest r;
  r.add_node_class_counts()->set_attribute(0);
  r.add_node_class_counts()->set_attribute(1);
  auto* group = r.add_groups();
  group->add_nodes(0);
  group->add_nodes(0);
  return r;
}

// Chunk `chunk` of collect 0 (round 1), `chunk_words` words each and `total_words` in all,
// routed to `next`; the first chunk carries `request`.
fedanon::v1::LeaderMessage SumChunk(const std::string& next,
                                    const fedanon::v1::StatsRequest& request, uint32_t chunk,
                                    uint64_t chunk_words, uint64_t total_words) {
  fedanon::v1::LeaderMessage m = SumStepTo(next);
  auto* step = m.mutable_sum_step();
  step->set_collect(0);
  step->set_chunk(chunk);
  step->set_chunk_words(chunk_words);
  step->set_total_words(total_words);
  step->set_chunks(static_cast<uint32_t>((total_words + chunk_words - 1) / chunk_words));
  step->set_chunk_offset(uint64_t{chunk} * chunk_words);
  if (chunk == 0) *step->mutable_request() = request;
  return m;
}

// party/secure_sum_party.cc Step: a later chunk of a collect under another chunking than its
// first chunk's, and a later chunk carrying the request or state updates.
TEST(SecureSumParty, ALaterChunkUnderAnotherChunkingOrCarryingTheRequestIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  const fedanon::v1::StatsRequest request = RootStatistics();
  const size_t words = WordsOf(*a.tables, request);
  ASSERT_GE(words, 3u);  // chunk 1 exists both one and two words a chunk
  ASSERT_OK(a.sum.Step(SumChunk("b", request, 0, 1, words)));
  // Chunk 1 as if the vector went two words a chunk.
  EXPECT_THAT(a.sum.Step(SumChunk("b", request, 1, 2, words)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "secure sum: the chunking changed within a collect"));
  // Chunk 1 with the request, or with an update, again.
  fedanon::v1::LeaderMessage with_request = SumChunk("b", request, 1, 1, words);
  *with_request.mutable_sum_step()->mutable_request() = request;
  EXPECT_THAT(a.sum.Step(with_request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "secure sum: only the first chunk carries the request"));
  fedanon::v1::LeaderMessage with_update = SumChunk("b", request, 1, 1, words);
  auto* split = with_update.mutable_sum_step()->add_updates()->mutable_split();
  split->set_attribute(1);
  split->set_split(-1);
  EXPECT_THAT(a.sum.Step(with_update),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "secure sum: only the first chunk carries the request"));
  EXPECT_EQ(a.tables->applied_updates, 0u);
  // Chunk 1 as the collect began it is answered.
  EXPECT_OK(a.sum.Step(SumChunk("b", request, 1, 1, words)));
}

// party/secure_sum_party.cc HopInput: a predecessor's hop that opens but holds another number of
// words than its chunk.
TEST(SecureSumParty, AHopInputOfAnotherLengthThanItsChunkIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  const fedanon::v1::StatsRequest request = RootStatistics();
  const size_t words = WordsOf(*b.tables, request);
  fedanon::v1::LeaderMessage to_b = SumChunk("c", request, 0, 2, words);
  const fedanon::v1::SumStep& step = to_b.sum_step();
  const std::string purpose =
      wire::SumHopPurpose(step, 1, wire::SumRequestDigest(request, b.tables->update_chain));
  const crypto::SealContext context{"job-0123456789ab", "run-1", 1, "a", "b", purpose};
  for (const std::vector<uint64_t>& input :
       std::vector<std::vector<uint64_t>>{{7}, {7, 8, 9}, {}}) {
    auto sealed = crypto::SealFrom(*p.pairs["a"], *b.ctx->seal_keys.at("b"), context,
                                   wire::EncodeWords(input));
    ASSERT_OK(sealed);
    auto* box = to_b.mutable_sum_step()->mutable_sealed();
    box->set_sender("a");
    box->set_receiver("b");
    box->set_purpose(purpose);
    box->set_ciphertext(*sealed);
    EXPECT_THAT(b.sum.Step(to_b), StatusIs(absl::StatusCode::kInvalidArgument,
                                           absl::StrCat("secure sum: the input of chunk 0 has ",
                                                        input.size(), " words, not 2")));
  }
  // a's own hop of the chunk is taken.
  auto hop = a.sum.Step(SumChunk("b", request, 0, 2, words));
  ASSERT_OK(hop);
  *to_b.mutable_sum_step()->mutable_sealed() = hop->sum_step().sealed();
  EXPECT_OK(b.sum.Step(to_b));
}

// party/secure_sum_party.cc CheckRequest: a job with recoding: local is asked for global
// statistics (or for nothing) outside LocalStatsRequest; its public-cell range counts are
// answered.
TEST(SecureSumParty, GlobalStatisticsInALocalRecodingJobAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeLocalSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  ASSERT_NE(a.tables->local, nullptr);
  fedanon::v1::StatsRequest group_only;
  *group_only.add_groups() = RootStatistics().groups(0);
  for (const fedanon::v1::StatsRequest& global :
       {RootStatistics(), group_only, fedanon::v1::StatsRequest()}) {
    EXPECT_THAT(a.sum.Step(SumChunk("b", global, 0, 4, 4)),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "secure sum: a job with recoding: local is asked only for its groups' "
                         "statistics or public-cell range counts"))
        << global.ShortDebugString();
  }
  fedanon::v1::StatsRequest cells;
  auto* ranges = cells.add_range_counts();
  ranges->set_attribute(1);
  for (int32_t bound : engine::PublicCellBounds(a.tables->hier[1].column(),
                                                engine::NumericSplitFromSpec(*spec).cells)) {
    ranges->add_bounds(bound);
  }
  const size_t words = WordsOf(*a.tables, cells);
  ASSERT_GT(words, 0u);
  EXPECT_OK(a.sum.Step(SumChunk("b", cells, 0, words, words)));
}

// Chunk `chunk` of `phase` of the final check (round 5), `chunk_words` words each and
// `total_words` in all.
fedanon::v1::LeaderMessage CheckChunk(fedanon::v1::FinalCheckStep::Phase phase, uint32_t chunk,
                                      uint64_t chunk_words, uint64_t total_words) {
  fedanon::v1::LeaderMessage m;
  m.set_job_id("job-0123456789ab");
  m.set_round(5);
  auto* step = m.mutable_final_check();
  step->set_phase(phase);
  step->set_chunk(chunk);
  step->set_chunk_words(chunk_words);
  step->set_total_words(total_words);
  step->set_chunks(
      chunk_words == 0 ? 1 : static_cast<uint32_t>((total_words + chunk_words - 1) / chunk_words));
  return m;
}

// The words of the final check over `party`'s current cut.
uint64_t FinalCheckWords(const HorizontalParty& party) {
  absl::StatusOr<engine::PrivacyModel> model =
      engine::BuildPrivacyModel(party.ctx->spec, *party.tables->data);
  EXPECT_OK(model);
  if (!model.ok()) return 0;
  absl::StatusOr<engine::FinalCheckLayout> layout = engine::BuildFinalCheckLayout(
      *model, *party.tables->data, party.tables->hier, party.ctx->spec.suppression_token());
  EXPECT_OK(layout);
  return layout.ok() ? layout->words : 0;
}

// Runs the two-party final check between `garbler` (the ring's first party) and `evaluator` as
// the leader does (leader::RunTwoPartyFinalCheck): every comparison's six steps, each party's
// sealed message relayed to the other, then both verdicts.
absl::Status PassTwoPartyFinalCheck(HorizontalParty& garbler, HorizontalParty& evaluator) {
  const uint64_t words = FinalCheckWords(garbler);
  uint32_t comparisons = 1;
  for (uint32_t c = 0; c < comparisons; ++c) {
    fedanon::v1::SealedPayload carried;
    for (uint32_t s = 1; s <= 6; ++s) {
      fedanon::v1::LeaderMessage m =
          CheckChunk(fedanon::v1::FinalCheckStep::PHASE_COMPARE, 0, words, words);
      m.mutable_final_check()->set_comparison(c);
      m.mutable_final_check()->set_comparison_step(s);
      if (s > 1) *m.mutable_final_check()->mutable_input() = carried;
      HorizontalParty& party = s % 2 == 1 ? evaluator : garbler;
      ASSIGN_OR_RETURN(const fedanon::v1::PartyMessage reply, party.final_check.Step(m));
      if (c == 0 && s == 1) comparisons = reply.final_check().comparisons();
      carried = reply.final_check().sealed();
    }
  }
  for (HorizontalParty* party : {&garbler, &evaluator}) {
    ASSIGN_OR_RETURN(const fedanon::v1::PartyMessage reply,
                     party->final_check.Step(
                         CheckChunk(fedanon::v1::FinalCheckStep::PHASE_VERIFY, 0, words, words)));
    if (!reply.final_check().passed()) return absl::InternalError("a verdict without `passed`");
  }
  return absl::OkStatus();
}

using CheckStep = fedanon::v1::FinalCheckStep;

// Two data parties: the secure comparisons gate the release as the ring sum does for three; the
// parties plan the same number of comparisons; a step of the other role, a verdict before the
// comparisons, or a ring-sum phase is refused.
TEST(FinalCheckParty, TwoPartiesReleaseAfterTheirSecureComparisonsPassed) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  const uint64_t words = FinalCheckWords(a);
  EXPECT_THAT(
      a.final_check.Step(CheckChunk(CheckStep::PHASE_VERIFY, 0, words, words)),
      StatusIs(absl::StatusCode::kFailedPrecondition, "starts with step 2 of comparison 0"));
  fedanon::v1::LeaderMessage at_garbler = CheckChunk(CheckStep::PHASE_COMPARE, 0, words, words);
  at_garbler.mutable_final_check()->set_comparison_step(1);
  EXPECT_THAT(a.final_check.Step(at_garbler), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                       "starts with step 2 of comparison 0"));
  EXPECT_THAT(a.final_check.Step(CheckChunk(CheckStep::PHASE_UNMASK, 0, words, words)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "the two compare securely instead"));
  EXPECT_THAT(a.final_check.ReleaseAllowed("secure union"),
              StatusIs(absl::StatusCode::kPermissionDenied, "before the final check"));
  ASSERT_OK(PassTwoPartyFinalCheck(a, b));
  EXPECT_OK(a.final_check.ReleaseAllowed("secure union"));
  EXPECT_OK(b.final_check.ReleaseAllowed("secure union"));
}

// The secure union's routing against what Prepare fixed (docs/protocol.md listed these refusals
// untested): the recipient agreed at Prepare, and the ring's first party starts from nothing.
TEST(SecureUnionParty, AnotherRecipientOrAStartingSetForTheFirstPartyIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  ASSERT_OK(PassTwoPartyFinalCheck(a, b));
  PayloadTransfer transfer(*a.ctx);
  SecureUnionParty union_party(*a.ctx, *a.tables, a.final_check, transfer, nullptr);
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

// party/secure_sum_party.cc CheckRequest: once the final check started, statistics (anything
// but the released counts) are no longer summed.
TEST(SecureSumParty, StatisticsAfterTheFinalCheckStartedAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  const fedanon::v1::StatsRequest request = RootStatistics();
  const size_t words = WordsOf(*a.tables, request);
  const uint64_t check_words = FinalCheckWords(a);
  ASSERT_GT(check_words, 0u);
  ASSERT_OK(a.final_check.Step(CheckChunk(CheckStep::PHASE_SUM, 0, check_words, check_words)));
  ASSERT_TRUE(a.final_check.started());
  EXPECT_THAT(a.sum.Step(SumChunk("b", request, 0, words, words)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "secure sum: after the final check only the released counts may be "
                       "summed"));
}

// The released-counts request of collect 0 over SexAgeSpec's root group.
fedanon::v1::StatsRequest ReleasedRootCounts(uint64_t combinations) {
  fedanon::v1::StatsRequest r;
  auto* group = r.add_released_groups();
  group->add_nodes(0);
  group->add_nodes(0);
  r.set_released_combinations(combinations);
  return r;
}

// party/secure_sum_party.cc CheckRequest (global recoding): released counts over another number
// of value combinations than the signed job declares.
TEST(SecureSumParty, ReleasedCountsOverAnUndeclaredDomainAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  ASSERT_OK(PassTwoPartyFinalCheck(a, b));  // the released counts wait for the final check
  ASSERT_TRUE(a.tables->data->all_values_declared);
  const uint64_t combinations = a.tables->data->ValueCombinations();
  const fedanon::v1::StatsRequest honest = ReleasedRootCounts(combinations);
  const size_t words = WordsOf(*a.tables, honest);
  ASSERT_GT(words, 0u);
  for (const uint64_t wrong : {uint64_t{0}, combinations - 1, combinations + 1}) {
    EXPECT_THAT(a.sum.Step(SumChunk("b", ReleasedRootCounts(wrong), 0, words, words)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "released counts requested over an undeclared domain"))
        << wrong;
  }
  EXPECT_OK(a.sum.Step(SumChunk("b", honest, 0, words, words)));
}

// party/secure_sum_party.cc Unmask: the mask before every chunk went round the ring, and the
// mask asked for under another request once it was handed over.
TEST(SecureSumParty, TheMaskGoesOnlyAfterEveryChunkAndOnlyForOneRequest) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  const fedanon::v1::StatsRequest request = RootStatistics();
  const size_t words = WordsOf(*a.tables, request);
  ASSERT_GE(words, 2u);
  auto first = a.sum.Step(SumChunk("b", request, 0, 1, words));
  ASSERT_OK(first);
  EXPECT_FALSE(first->sum_step().has_mask_seed()) << "the mask went before the last chunk";
  auto unmask = [](uint64_t round, uint64_t collect) {
    fedanon::v1::LeaderMessage m;
    m.set_job_id("job-0123456789ab");
    m.set_round(round);
    m.mutable_sum_unmask()->set_collect(collect);
    return m;
  };
  EXPECT_THAT(a.sum.Unmask(unmask(1, 0)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("secure sum: the mask of collect 0 goes to the leader only "
                                    "after every chunk went round the ring (1 of ",
                                    words, " answered)")));
  fedanon::v1::PartyMessage last;
  for (uint32_t chunk = 1; chunk < words; ++chunk) {
    auto answer = a.sum.Step(SumChunk("b", request, chunk, 1, words));
    ASSERT_TRUE(answer.ok()) << chunk << ": " << answer.status();
    // Protocol 2.1: the mask goes with the answer to the last chunk, and only with it.
    EXPECT_EQ(answer->sum_step().has_mask_seed(), chunk + 1 == words) << chunk;
    last = *answer;
  }
  EXPECT_EQ(last.sum_step().mask_seed().sender(), "a");
  EXPECT_EQ(last.sum_step().mask_seed().receiver(), "leader");
  // Asked in another round than the collect's (found by the mutating leader: the seed was sealed
  // under the leader's round, which the leader could not open, and the job failed unnamed).
  for (const uint64_t round : {2u, 0u}) {
    EXPECT_THAT(a.sum.Unmask(unmask(round, 0)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("secure sum: the mask of collect 0 is asked in round ", round,
                                      ", but the collect was summed in round 1")));
  }
  auto handed = a.sum.Unmask(unmask(1, 0));  // what a 2.0 leader asks: the seed that went
  ASSERT_OK(handed);
  EXPECT_EQ(handed->sum_mask().seed().SerializeAsString(),
            last.sum_step().mask_seed().SerializeAsString());
  auto again = a.sum.Unmask(unmask(1, 0));  // the same request: the same answer
  ASSERT_OK(again);
  EXPECT_EQ(again->SerializeAsString(), handed->SerializeAsString());
  EXPECT_THAT(a.sum.Unmask(unmask(2, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the mask of collect 0 is asked in round 2, but the collect was summed in "
                       "round 1"));
  EXPECT_THAT(a.sum.Unmask(unmask(1, 1)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "was handed over already for another request (one request, one answer)"));
}

// party/final_check_party.cc Step: a check in a job of two data parties, a chunk the chunking
// does not have, a first request of another length than the model over the party's cut, and a
// check that does not start with the sum of chunk 0. None starts the check.
TEST(FinalCheckParty, ACheckOfTwoPartiesOrThatDoesNotStartAsAgreedIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants two({"a", "b"});
  HorizontalParty of_two(two, "a", *spec);
  const uint64_t words = FinalCheckWords(of_two);
  ASSERT_GT(words, 0u);
  EXPECT_THAT(of_two.final_check.Step(CheckChunk(CheckStep::PHASE_SUM, 0, words, words)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "final check: with two data parties the summed counts would reveal the "
                       "other party's"));
  Participants three({"a", "b", "c"});
  HorizontalParty a(three, "a", *spec);
  std::vector<fedanon::v1::LeaderMessage> missing;
  missing.push_back(CheckChunk(CheckStep::PHASE_SUM, 0, words, 0));      // no words
  missing.push_back(CheckChunk(CheckStep::PHASE_SUM, 0, 0, words));      // no chunk size
  missing.push_back(CheckChunk(CheckStep::PHASE_SUM, 1, words, words));  // beyond the chunks
  missing.push_back(CheckChunk(CheckStep::PHASE_SUM, 0, 1, words));      // another count
  missing.back().mutable_final_check()->set_chunks(static_cast<uint32_t>(words + 1));
  missing.push_back(CheckChunk(CheckStep::PHASE_SUM, 0, engine::kMaxFinalCheckWords + 1,
                               engine::kMaxFinalCheckWords + 1));  // beyond the cap
  for (const fedanon::v1::LeaderMessage& m : missing) {
    EXPECT_THAT(a.final_check.Step(m),
                StatusIs(absl::StatusCode::kInvalidArgument, ") does not exist"))
        << m.final_check().ShortDebugString();
  }
  EXPECT_THAT(
      a.final_check.Step(CheckChunk(CheckStep::PHASE_SUM, 0, words + 1, words + 1)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               absl::StrCat("final check: the request has ", words + 1,
                            " words but the privacy model over this party's cut needs ", words)));
  for (const fedanon::v1::LeaderMessage& m :
       {CheckChunk(CheckStep::PHASE_VERIFY, 0, words, words),
        CheckChunk(CheckStep::PHASE_UNMASK, 0, words, words),
        CheckChunk(CheckStep::PHASE_UNSPECIFIED, 0, words, words),
        CheckChunk(CheckStep::PHASE_SUM, 1, 1, 2)}) {
    EXPECT_THAT(a.final_check.Step(m), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                "final check: it starts with the sum of chunk 0"))
        << m.final_check().ShortDebugString();
  }
  EXPECT_FALSE(a.final_check.started());
  EXPECT_FALSE(a.tables->cut_fixed);
  EXPECT_OK(a.final_check.Step(CheckChunk(CheckStep::PHASE_SUM, 0, words, words)));
  EXPECT_TRUE(a.final_check.started());
}

// party/final_check_party.cc Step, once the check started: another chunking, state updates on
// a step other than the first sum, and a step of no phase.
TEST(FinalCheckParty, AnotherChunkingLateUpdatesOrAnUnknownPhaseAreRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  const uint64_t words = FinalCheckWords(a);
  ASSERT_GT(words, 0u);
  ASSERT_OK(a.final_check.Step(CheckChunk(CheckStep::PHASE_SUM, 0, 1, words)));
  for (const fedanon::v1::LeaderMessage& m :
       {CheckChunk(CheckStep::PHASE_UNMASK, 0, 2, words),
        CheckChunk(CheckStep::PHASE_VERIFY, 0, 1, words + 1),
        CheckChunk(CheckStep::PHASE_UNMASK, 0, words + 1, words + 1)}) {
    EXPECT_THAT(a.final_check.Step(m),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "final check: the chunking changed during the check"))
        << m.final_check().ShortDebugString();
  }
  for (const CheckStep::Phase phase : {CheckStep::PHASE_UNMASK, CheckStep::PHASE_VERIFY}) {
    fedanon::v1::LeaderMessage m = CheckChunk(phase, 0, 1, words);
    auto* split = m.mutable_final_check()->add_updates()->mutable_split();
    split->set_attribute(1);
    split->set_split(-1);
    EXPECT_THAT(a.final_check.Step(m),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "final check: only the first sum carries state updates"))
        << phase;
  }
  EXPECT_THAT(a.final_check.Step(CheckChunk(CheckStep::PHASE_UNSPECIFIED, 0, 1, words)),
              StatusIs(absl::StatusCode::kInvalidArgument, "final check: unknown phase"));
  EXPECT_EQ(a.tables->applied_updates, 0u);
}

// party/final_check_party.cc UnmaskPhase and VerifyPhase: the unmasking asked of another party
// than the ring's first, the first party's verification before the total arrived or of a total
// the leader hands it, and the unmasking's and a verification's inputs from a party other than
// the agreed sender; the honest ring then passes.
TEST(FinalCheckParty, TheFirstPartysPhasesAndTheInputsOfTheAgreedSenderOnly) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b", "c"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  HorizontalParty c(p, "c", *spec);
  const uint64_t words = FinalCheckWords(a);
  ASSERT_GT(words, 0u);
  auto step = [&](CheckStep::Phase phase, const fedanon::v1::SealedPayload* input) {
    fedanon::v1::LeaderMessage m = CheckChunk(phase, 0, words, words);
    if (input != nullptr) *m.mutable_final_check()->mutable_input() = *input;
    return m;
  };
  auto from_a = a.final_check.Step(step(CheckStep::PHASE_SUM, nullptr));
  ASSERT_OK(from_a);
  auto from_b = b.final_check.Step(step(CheckStep::PHASE_SUM, &from_a->final_check().sealed()));
  ASSERT_OK(from_b);
  auto from_c = c.final_check.Step(step(CheckStep::PHASE_SUM, &from_b->final_check().sealed()));
  ASSERT_OK(from_c);
  const fedanon::v1::SealedPayload& b_to_c = from_b->final_check().sealed();
  const fedanon::v1::SealedPayload& c_to_a = from_c->final_check().sealed();
  EXPECT_THAT(b.final_check.Step(step(CheckStep::PHASE_UNMASK, &b_to_c)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "final check: only the ring's first party removes the mask"));
  EXPECT_THAT(a.final_check.Step(step(CheckStep::PHASE_VERIFY, nullptr)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "final check: asked to verify before every chunk of the total arrived"));
  EXPECT_THAT(a.final_check.Step(step(CheckStep::PHASE_VERIFY, &c_to_a)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "final check: the ring's first party verifies the total it unmasked "
                       "itself"));
  EXPECT_THAT(a.final_check.Step(step(CheckStep::PHASE_UNMASK, &b_to_c)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "final check: input must be sealed by 'c' for 'a', got one from 'b'"));
  auto totals = a.final_check.Step(step(CheckStep::PHASE_UNMASK, &c_to_a));
  ASSERT_OK(totals);
  ASSERT_EQ(totals->final_check().totals_size(), 2);
  const fedanon::v1::SealedPayload& total_for_b = totals->final_check().totals(0);
  ASSERT_EQ(total_for_b.receiver(), "b");
  EXPECT_THAT(b.final_check.Step(step(CheckStep::PHASE_VERIFY, &c_to_a)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "final check: input must be sealed by 'a' for 'b', got one from 'c'"));
  auto verified_a = a.final_check.Step(step(CheckStep::PHASE_VERIFY, nullptr));
  ASSERT_OK(verified_a);
  EXPECT_TRUE(verified_a->final_check().passed());
  auto verified_b = b.final_check.Step(step(CheckStep::PHASE_VERIFY, &total_for_b));
  ASSERT_OK(verified_b);
  EXPECT_TRUE(verified_b->final_check().passed());
}

// party/secure_union_party.cc OpenList: the list so far, chunked or whole, from another party
// than the agreed predecessor (the leader, or this party itself), or naming the predecessor but
// sealed by the leader; the predecessor's list is taken.
TEST(SecureUnionParty, AListFromAnotherThanTheAgreedPredecessorIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  Participants p({"a", "b"});
  HorizontalParty a(p, "a", *spec);
  HorizontalParty b(p, "b", *spec);
  ASSERT_OK(PassTwoPartyFinalCheck(a, b));
  b.ctx->chunk_bytes = 1024;
  b.ctx->message_limit = 64 << 10;
  PayloadTransfer transfer(*b.ctx);
  SecureUnionParty union_party(*b.ctx, *b.tables, b.final_check, transfer, nullptr);
  auto hop = [](auto fill) {
    fedanon::v1::LeaderMessage m;
    m.set_job_id("job-0123456789ab");
    m.set_round(3);
    auto* step = m.mutable_union_step();
    step->set_recipient("leader");
    step->set_next("leader");  // b is the ring's last: its list goes to the recipient
    fill(step);
    return m;
  };
  for (const std::string sender : {"leader", "b"}) {
    auto chunked = hop([&](fedanon::v1::UnionStep* step) {
      auto* ref = step->mutable_list_ref();
      ref->set_stream("union/b");
      ref->set_sender(sender);
      ref->set_receiver("b");
      ref->set_purpose("union-list");
      ref->set_chunks(1);
      ref->set_total_bytes(16);
    });
    EXPECT_THAT(union_party.Step(chunked),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         absl::StrCat("the union list must come from 'a' (the agreed "
                                      "predecessor), not from '",
                                      sender, "'")));
  }
  const std::string empty_list = fedanon::v1::UnionList().SerializeAsString();
  auto whole = [&](const std::string& named, const std::string& sealer) {
    auto sealed = crypto::SealFrom(
        *p.pairs[sealer], *b.ctx->seal_keys.at("b"),
        wire::UnionListContext("job-0123456789ab", "run-1", 3, named, "b"), empty_list);
    EXPECT_OK(sealed);
    return hop([&](fedanon::v1::UnionStep* step) {
      auto* list = step->mutable_list();
      list->set_sender(named);
      list->set_receiver("b");
      list->set_purpose("union-list");
      list->set_ciphertext(sealed.ok() ? *sealed : "");
    });
  };
  EXPECT_THAT(union_party.Step(whole("leader", "leader")),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "the union list must come from 'a' (the agreed predecessor) for 'b', not "
                       "from 'leader' for 'b'"));
  EXPECT_THAT(union_party.Step(whole("a", "leader")),
              StatusIs(absl::StatusCode::kPermissionDenied, ""));
  EXPECT_OK(union_party.Step(whole("a", "a")));
}

// party/secure_union_party.cc Step: the hop is answered once — the same request again gets the
// same reply, another one (here: the same hop in another round) is refused by name, with whole
// payloads and with chunks.
TEST(SecureUnionParty, AnotherRequestForAnAnsweredHopIsRefused) {
  absl::StatusOr<fedanon::v1::JobSpec> spec = SexAgeSpec();
  ASSERT_OK(spec);
  for (const bool chunked : {false, true}) {
    SCOPED_TRACE(chunked ? "chunked" : "whole");
    Participants p({"a", "b"});
    HorizontalParty a(p, "a", *spec);
    HorizontalParty b(p, "b", *spec);
    ASSERT_OK(PassTwoPartyFinalCheck(a, b));
    if (chunked) {
      a.ctx->chunk_bytes = 1024;
      a.ctx->message_limit = 64 << 10;
    }
    PayloadTransfer transfer(*a.ctx);
    SecureUnionParty union_party(*a.ctx, *a.tables, a.final_check, transfer, nullptr);
    fedanon::v1::LeaderMessage first;
    first.set_job_id("job-0123456789ab");
    first.set_round(3);
    first.mutable_union_step()->set_recipient("leader");
    first.mutable_union_step()->set_next("b");
    ASSERT_OK_AND_ASSIGN(const fedanon::v1::PartyMessage answered, union_party.Step(first));
    ASSERT_OK_AND_ASSIGN(const fedanon::v1::PartyMessage again, union_party.Step(first));
    EXPECT_EQ(again.SerializeAsString(), answered.SerializeAsString());
    fedanon::v1::LeaderMessage other = first;
    other.set_round(4);
    EXPECT_THAT(union_party.Step(other),
                chunked ? StatusIs(absl::StatusCode::kFailedPrecondition,
                                   "one request, one answer: the secure union hop was already "
                                   "answered for another request")
                        : StatusIs(absl::StatusCode::kPermissionDenied,
                                   "secure union: already answered for a different request (one "
                                   "request, one answer)"));
  }
}

}  // namespace
}  // namespace fedanon::party
