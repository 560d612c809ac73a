// Vertical ID matching in batches (docs/crypto.md "ID matching"): with a tiny batch size (many
// batches per list) the job releases what one batch per list releases, over two and three parties
// with half-overlapping ids; each party gets its calls in one fixed order (what a restarted leader
// replays). A deviating leader (in-process, tampering with requests in flight) is refused by
// name: a batch replayed with another payload, sealed by the wrong party, for another origin or
// hop, a skipped batch, a duplicated batch, a batch count changed mid-list, a batch larger than
// the batch size, an alignment before the common ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "leader/vertical_job.h"
#include "party/testing/observing_party.h"
#include "tests/federation/adult_vertical_util.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kTinyBatch = 7;

struct Generated {
  std::string spec;
  std::map<std::string, std::string> taxonomies;
  std::vector<std::map<std::string, std::string>> files;
};

// `rows` common records over `parties` parties, each with as many again of its own (overlap 0.5).
Generated Generate(const std::string& name, uint64_t rows, int parties) {
  Generated g;
  const std::string dir = FreshDir(name + "_data");
  datagen::DatagenOptions o;
  o.rows = rows;
  o.seed = 5;
  o.out_dir = dir;
  o.parties = parties;
  o.partition = datagen::DatagenOptions::Partition::kVertical;
  o.overlap = 0.5;
  EXPECT_OK(datagen::GenerateDataset(o).status());
  g.spec = SlurpFile(dir + "/vertical.yaml");
  for (int p = parties - 1; p >= 0; --p) {
    g.spec = std::regex_replace(g.spec, std::regex(absl::StrCat("party: party", p + 1, "\\b")),
                                std::string("party: hospital-") + static_cast<char>('a' + p));
  }
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tax")) {
    g.taxonomies["tax/" + e.path().filename().string()] = SlurpFile(e.path().string());
  }
  for (int p = 0; p < parties; ++p) {
    auto f = g.taxonomies;
    f["table.csv"] = SlurpFile(absl::StrCat(dir, "/party", p + 1, ".csv"));
    g.files.push_back(std::move(f));
  }
  return g;
}

const Generated& TwoParties() {
  static const Generated* g = new Generated(Generate("idb2", 120, 2));
  return *g;
}
const Generated& ThreeParties() {
  static const Generated* g = new Generated(Generate("idb3", 90, 3));
  return *g;
}

fedanon::v1::SubmitJobRequest Request(const Generated& g, const std::vector<std::string>& names) {
  fedanon::v1::SubmitJobRequest req;
  auto spec = spec::ParseJobSpecYaml(g.spec, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return req;
  *req.mutable_spec() = *spec;
  for (const auto& p : names) req.add_parties(p);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) {
      (*req.mutable_taxonomies())[a.name()] = g.taxonomies.at(a.taxonomy());
    }
  }
  return req;
}

// One ID-matching call as a party saw it: its kind and (origin, batch).
std::string Describe(const fedanon::v1::VerticalStep& s) {
  if (s.has_id_encrypt()) return absl::StrCat("E b", s.id_encrypt().batch());
  if (s.has_id_reencrypt()) {
    return absl::StrCat("R ", s.id_reencrypt().origin(), " b", s.id_reencrypt().batch());
  }
  if (s.has_id_digests()) {
    return absl::StrCat("D ", s.id_digests().origin(), " b", s.id_digests().batch());
  }
  if (s.has_id_common()) return absl::StrCat("C b", s.id_common().batch());
  if (s.has_id_align()) return "A";
  return "";
}

struct JobRun {
  fedanon::v1::JobInfo info;
  Table result;
  std::string result_error;
  std::map<std::string, std::vector<std::string>> calls;  // party -> ID-matching calls in order
  uint64_t largest_id_request = 0;  // bytes of the largest ID-matching request and reply
  uint64_t largest_id_reply = 0;
};

using Tamper =
    std::function<void(InProcessFederation&, const std::string&, fedanon::v1::LeaderMessage*)>;

// Runs the job with batches of `batch` ids. `limit` > 0: the leader's message limit;
// `party_limit` > 0: every party's.
JobRun RunJob(const Generated& g, const std::string& name, uint32_t batch,
              const Tamper& tamper = {}, uint64_t limit = 0, uint64_t party_limit = 0) {
  JobRun out;
  auto fed = InProcessFederation::Create(
      name, g.files,
      [party_limit](party::PartyAgentOptions& o) {
        if (party_limit > 0) o.max_message_bytes = party_limit;
      },
      [batch, limit](leader::LeaderOptions& o) {
        o.id_batch_ids = batch;
        if (limit > 0) o.max_message_bytes = limit;
      });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  InProcessFederation* f = fed->get();
  absl::Mutex mu;
  f->channel.set_tamper([&](const std::string& party, fedanon::v1::LeaderMessage* m) {
    if (tamper) tamper(*f, party, m);
    if (m->round() != 0 || !m->has_vertical()) return;
    const std::string what = Describe(m->vertical());
    absl::MutexLock lock(&mu);
    if (!what.empty()) out.calls[party].push_back(what);
    out.largest_id_request = std::max<uint64_t>(out.largest_id_request, m->ByteSizeLong());
  });
  f->channel.set_observer([&](const std::string&, const std::string& bytes) {
    fedanon::v1::PartyMessage m;
    if (!m.ParseFromString(bytes) || !m.has_vertical() || !m.vertical().has_ids()) return;
    absl::MutexLock lock(&mu);
    out.largest_id_reply = std::max<uint64_t>(out.largest_id_reply, bytes.size());
  });
  auto info = f->Submit(Request(g, f->names));
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  out.info = f->Wait(info->job_id());
  f->channel.set_tamper(nullptr);
  f->channel.set_observer(nullptr);
  auto csv = f->leader->Result(info->job_id());
  if (!csv.ok()) {
    out.result_error = std::string(csv.status().message());
    return out;
  }
  auto t = ParseCsvText(*csv, f->dir);
  EXPECT_TRUE(t.ok()) << t.status();
  if (t.ok()) out.result = *t;
  return out;
}

std::vector<std::string> Steps(const fedanon::v1::Report& report) {
  std::vector<std::string> out;
  for (const auto& s : report.steps()) {
    out.push_back(absl::StrCat(s.attribute(), " ", s.value(), " ", s.records()));
  }
  return out;
}

void ExpectSameRelease(const JobRun& a, const JobRun& b, uint64_t rows) {
  ASSERT_EQ(a.info.state(), fedanon::v1::JOB_STATE_DONE) << a.info.failure_reason();
  ASSERT_EQ(b.info.state(), fedanon::v1::JOB_STATE_DONE) << b.info.failure_reason();
  EXPECT_EQ(Steps(a.info.report()), Steps(b.info.report()));
  EXPECT_EQ(a.result.rows.size(), rows);
  EXPECT_EQ(RowsByColumns(a.result, b.result.header), RowsByColumns(b.result, b.result.header));
}

size_t Count(const std::vector<std::string>& calls, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(
      calls.begin(), calls.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; }));
}

TEST(IdBatches, TwoPartiesInTinyBatchesReleaseWhatOneBatchReleases) {
  const JobRun batched = RunJob(TwoParties(), "idb2_batched", kTinyBatch);
  const JobRun whole = RunJob(TwoParties(), "idb2_whole", 65536);
  ExpectSameRelease(batched, whole, 120);
  // 240 ids a party in batches of 7: 35 batches a list, each re-encrypted once by the other party,
  // which seals its digests for the leader and the owner (delivered to it); the 120 common ids
  // come back in 18 batches. One batch: one call of each.
  for (const auto& [party, calls] : batched.calls) {
    EXPECT_EQ(Count(calls, "E "), 35u) << party;
    EXPECT_EQ(Count(calls, "R "), 35u) << party;
    EXPECT_EQ(Count(calls, "D "), 35u) << party;
    EXPECT_EQ(Count(calls, "C "), 18u) << party;
    EXPECT_EQ(calls.back(), "A") << party;
  }
  for (const auto& [party, calls] : whole.calls) {
    EXPECT_EQ(
        calls,
        (std::vector<std::string>{
            "E b0", "R " + std::string(party == "hospital-a" ? "hospital-b" : "hospital-a") + " b0",
            "D " + party + " b0", "C b0", "A"}))
        << party;
  }
}

TEST(IdBatches, ThreePartiesInTinyBatchesReleaseWhatOneBatchReleases) {
  const JobRun batched = RunJob(ThreeParties(), "idb3_batched", kTinyBatch);
  const JobRun whole = RunJob(ThreeParties(), "idb3_whole", 65536);
  ExpectSameRelease(batched, whole, 90);
  // 180 ids a party: 26 batches a list; each party re-encrypts the two other lists and removes
  // its blinding from its own (the last hop: no digests come to it), and the 90 common ids come
  // back in 13 batches.
  for (const auto& [party, calls] : batched.calls) {
    EXPECT_EQ(Count(calls, "E "), 26u) << party;
    EXPECT_EQ(Count(calls, "R "), 78u) << party;
    EXPECT_EQ(Count(calls, "R " + party + " "), 26u) << party;
    EXPECT_EQ(Count(calls, "D "), 0u) << party;
    EXPECT_EQ(Count(calls, "C "), 13u) << party;
  }
}

TEST(IdBatches, UnderASmallMessageLimitEachBatchFitsOneMessage) {
  // 4 KiB: the leader picks batches of (4 KiB less the chunk headroom) / 134 ids, so no
  // ID-matching request or reply crosses the limit, and the release is the same.
  constexpr uint64_t kLimit = 4096;
  const JobRun small = RunJob(TwoParties(), "idb2_small", 65536, {}, kLimit);
  const JobRun whole = RunJob(TwoParties(), "idb2_small_ref", 65536);
  ExpectSameRelease(small, whole, 120);
  EXPECT_LE(small.largest_id_request, kLimit);
  EXPECT_LE(small.largest_id_reply, kLimit);
  EXPECT_GT(small.largest_id_request, kLimit / 8);  // batches, not a handful of ids
  for (const auto& [party, calls] : small.calls) EXPECT_GE(Count(calls, "E "), 5u) << party;
}

void ExpectRefused(const JobRun& r, const std::string& reason);

TEST(IdBatches, ABatchOverAPartysOwnMessageLimitIsRefused) {
  // The leader sizes batches for its own 64 MiB limit (240 ids, 16 KB a batch here) but the
  // parties accept 4 KiB: each refuses to send a reply over its limit, by name.
  const JobRun r = RunJob(TwoParties(), "idb_party_limit", 65536, {}, 0, 4096);
  ExpectRefused(r, "over this party's message limit of 4096 bytes");
}

TEST(IdBatches, EachPartyGetsItsCallsInOneFixedOrder) {
  // The leader's per-party threads wait for each other's batches, yet each party's n-th call is
  // the same in every run (RecordingChannel replays "the n-th call to party p" after a restart):
  // its own batch 0, then by batch + hop.
  const JobRun first = RunJob(ThreeParties(), "idb3_order1", kTinyBatch);
  const JobRun second = RunJob(ThreeParties(), "idb3_order2", kTinyBatch);
  ASSERT_EQ(first.info.state(), fedanon::v1::JOB_STATE_DONE) << first.info.failure_reason();
  ASSERT_EQ(first.calls.size(), 3u);
  EXPECT_EQ(first.calls, second.calls);
  const auto& a = first.calls.at("hospital-a");
  ASSERT_GE(a.size(), 6u);
  // hospital-a: key 0 its batch 0; key 1 its batch 1, then hospital-c's batch 0 (hop 1); key 2
  // its batch 2, hospital-c's batch 1, hospital-b's batch 0 (hop 2, the last: digests next).
  EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 6),
            (std::vector<std::string>{"E b0", "E b1", "R hospital-c b0", "E b2", "R hospital-c b1",
                                      "R hospital-b b0"}));
}

// ---- A deviating leader ----

void ExpectRefused(const JobRun& r, const std::string& reason) {
  EXPECT_EQ(r.info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(r.info.failure_reason(), HasSubstr(reason));
  EXPECT_FALSE(r.result_error.empty()) << "the leader holds a result";
}

// The tamper hook runs one call at a time (InProcessPartyChannel): state needs no lock of its
// own, but the leader's threads call it, so the tests keep it in one struct per run.
struct Seen {
  std::map<std::tuple<std::string, std::string, uint32_t>, fedanon::v1::LeaderMessage> msgs;
  bool done = false;
};

TEST(IdBatches, ABatchReplayedWithAnotherPayloadIsRefused) {
  // hospital-b first answers batch 1 of hospital-a's list as sent; the leader then asks again
  // with batch 0's sealed points under batch 1.
  Seen seen;
  const JobRun r =
      RunJob(TwoParties(), "idb_replay", kTinyBatch,
             [&](InProcessFederation& f, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (seen.done || party != "hospital-b" || !m->has_vertical() ||
                   !m->vertical().has_id_reencrypt()) {
                 return;
               }
               auto* re = m->mutable_vertical()->mutable_id_reencrypt();
               if (re->batch() == 0) seen.msgs[{party, "R", 0}] = *m;
               if (re->batch() != 1) return;
               const auto reply = f.agents[1]->Handle(*m);
               EXPECT_FALSE(reply.has_error()) << reply.error().message();
               *re->mutable_list() = seen.msgs.at({party, "R", 0}).vertical().id_reencrypt().list();
               seen.done = true;
             });
  EXPECT_TRUE(seen.done);
  ExpectRefused(r,
                "one request, one answer: batch 1 of 'hospital-a''s list was already "
                "re-encrypted from another payload");
}

TEST(IdBatches, ABatchSealedByTheWrongPartyIsRefused) {
  bool done = false;
  const JobRun r = RunJob(
      TwoParties(), "idb_sender", kTinyBatch,
      [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
        if (done || party != "hospital-b" || !m->has_vertical() ||
            !m->vertical().has_id_reencrypt()) {
          return;
        }
        m->mutable_vertical()->mutable_id_reencrypt()->mutable_list()->set_sender("hospital-b");
        done = true;
      });
  EXPECT_TRUE(done);
  ExpectRefused(r,
                "batch 0 of 'hospital-a''s list is sealed by 'hospital-b', not by its "
                "predecessor 'hospital-a' on the ring");
}

TEST(IdBatches, ABatchOfAnotherOriginOrHopDoesNotOpen) {
  // Three parties: hospital-b gets hospital-a's list at hop 1 and hospital-c's at hop 2, both
  // sealed by hospital-a. The leader hands hospital-a's batch 0 (hop 0) as hospital-c's batch 0.
  Seen seen;
  const JobRun r =
      RunJob(ThreeParties(), "idb_origin", kTinyBatch,
             [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (seen.done || party != "hospital-b" || !m->has_vertical() ||
                   !m->vertical().has_id_reencrypt()) {
                 return;
               }
               auto* re = m->mutable_vertical()->mutable_id_reencrypt();
               if (re->batch() != 0) return;
               if (re->origin() == "hospital-a") {
                 seen.msgs[{party, "a", 0}] = *m;
                 return;
               }
               if (!seen.msgs.count({party, "a", 0})) return;
               *re->mutable_list() = seen.msgs.at({party, "a", 0}).vertical().id_reencrypt().list();
               seen.done = true;
             });
  EXPECT_TRUE(seen.done);
  ExpectRefused(r,
                "batch 0 of 26 of 'hospital-c''s list does not open as hop 1's (sealed for "
                "another origin, hop, batch or count)");
}

TEST(IdBatches, ASkippedBatchIsRefusedBeforeTheCommonIds) {
  // The leader delivers batch 0's digests of hospital-b's own list again in place of batch 1's:
  // answered again (the same request), but hospital-b finds batch 1 missing when the common ids
  // come, and signs nothing.
  Seen seen;
  const JobRun r =
      RunJob(TwoParties(), "idb_skip", kTinyBatch,
             [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (party != "hospital-b" || !m->has_vertical() || !m->vertical().has_id_digests() ||
                   m->vertical().id_digests().origin() != "hospital-b") {
                 return;
               }
               const uint32_t b = m->vertical().id_digests().batch();
               if (b == 0) seen.msgs[{party, "D", 0}] = *m;
               if (b == 1) {
                 *m = seen.msgs.at({party, "D", 0});
                 seen.done = true;
               }
             });
  EXPECT_TRUE(seen.done);
  ExpectRefused(r, "the common ids arrived before every batch of this party's own list came back");
}

TEST(IdBatches, ADuplicatedBatchWithOtherContentIsRefused) {
  // Batch 1's digests delivered a second time, relabelled as batch 0.
  bool done = false;
  const JobRun r =
      RunJob(TwoParties(), "idb_dup", kTinyBatch,
             [&](InProcessFederation& f, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (done || party != "hospital-b" || !m->has_vertical() ||
                   !m->vertical().has_id_digests() || m->vertical().id_digests().batch() != 1) {
                 return;
               }
               const auto reply = f.agents[1]->Handle(*m);
               EXPECT_FALSE(reply.has_error()) << reply.error().message();
               m->mutable_vertical()->mutable_id_digests()->set_batch(0);
               done = true;
             });
  EXPECT_TRUE(done);
  ExpectRefused(r,
                "one request, one answer: the digests of batch 0 of this party's list were "
                "already delivered with other content");
}

TEST(IdBatches, ABatchCountChangedMidListIsRefused) {
  bool done = false;
  const JobRun r =
      RunJob(TwoParties(), "idb_count", kTinyBatch,
             [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (done || party != "hospital-b" || !m->has_vertical() ||
                   !m->vertical().has_id_reencrypt() || m->vertical().id_reencrypt().batch() != 2) {
                 return;
               }
               auto* re = m->mutable_vertical()->mutable_id_reencrypt();
               re->set_batches(re->batches() + 1);
               done = true;
             });
  EXPECT_TRUE(done);
  ExpectRefused(r, "the batch count of 'hospital-a''s list changed from 35 to 36");
}

TEST(IdBatches, ABatchLargerThanTheBatchSizeIsRefused) {
  // The leader tells hospital-b the batches hold 6 ids while hospital-a sealed 7 a batch: the
  // first batch of hospital-a's list holds more than hospital-b takes.
  const JobRun r =
      RunJob(TwoParties(), "idb_oversize", kTinyBatch,
             [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (party != "hospital-b" || !m->has_vertical()) return;
               auto* s = m->mutable_vertical();
               if (s->has_id_encrypt()) s->mutable_id_encrypt()->set_batch_ids(6);
               if (s->has_id_reencrypt()) s->mutable_id_reencrypt()->set_batch_ids(6);
               if (s->has_id_digests()) s->mutable_id_digests()->set_batch_ids(6);
               if (s->has_id_common()) s->mutable_id_common()->set_batch_ids(6);
             });
  // hospital-b refuses hospital-a's 7-id batches, or hospital-a hospital-b's 6-id ones (the two
  // run at once): either way by the batch's size.
  ExpectRefused(r, "ids; every batch but the last holds");
}

TEST(IdBatches, AlignmentBeforeTheCommonIdsIsRefused) {
  // The leader turns hospital-b's first digest delivery into IdAlign.
  bool done = false;
  const JobRun r =
      RunJob(TwoParties(), "idb_early", kTinyBatch,
             [&](InProcessFederation&, const std::string& party, fedanon::v1::LeaderMessage* m) {
               if (done || party != "hospital-b" || !m->has_vertical() ||
                   !m->vertical().has_id_digests()) {
                 return;
               }
               m->mutable_vertical()->mutable_id_align();
               done = true;
             });
  EXPECT_TRUE(done);
  ExpectRefused(r, "IdAlign before every batch of the common ids arrived");
}

}  // namespace
}  // namespace fedanon::testing

namespace fedanon::testing {
namespace {

// Three parties where hospital-a and hospital-b share six people and hospital-c only three of
// them: each party may learn which of its own records are common to all three, never that p4-p6
// are in both hospital-a's and hospital-b's lists. No party opens another list's digests (with
// three parties a list's digests exist only at its owner and the leader), every party aligns on
// the three common to all, and the leader's view log says what it learned of the lists.
TEST(IdBatches, NoPartyLearnsAPairwiseIntersection) {
  constexpr char kSpec3[] = R"(name: pairwise
attributes:
  - {name: id, role: id}
  - {name: qa, role: qid, values: [x, y], party: hospital-a}
  - {name: qb, role: qid, values: [x, y], party: hospital-b}
  - {name: qc, role: qid, values: [x, y], party: hospital-c}
  - {name: cls, role: class, values: [yes, no]}
privacy: {model: lkc, L: 1, K: 1}
partitioning: vertical
)";
  // The class is the same person's at every party (the shared class: the replicas recompute a
  // winner's score with their own class column); the QID values follow the row order.
  auto table = [](const std::string& col, const std::vector<std::string>& ids) {
    std::string t = "id,cls," + col + "\n";
    for (size_t i = 0; i < ids.size(); ++i) {
      t += ids[i] + ((ids[i].back() - '0') % 2 ? ",yes" : ",no") + (i % 2 ? ",x\n" : ",y\n");
    }
    return t;
  };
  const std::vector<std::map<std::string, std::string>> files = {
      {{"table.csv", table("qa", {"p1", "p2", "p3", "p4", "p5", "p6", "a1"})}},
      {{"table.csv", table("qb", {"p6", "p5", "p4", "p3", "p2", "p1", "b1"})}},
      {{"table.csv", table("qc", {"p3", "c1", "p1", "c2", "p2", "c3"})}}};
  absl::Mutex mu;
  std::map<std::string, std::vector<std::string>> opened;  // receiver -> purposes
  ASSERT_OK_AND_ASSIGN(
      auto fed,
      InProcessFederation::Create("idb_pairwise", files, [&](party::PartyAgentOptions& o) {
        o.observer = party_testing::ObservingParty(
            [&, receiver = o.name](const std::string&, const std::string& purpose,
                                   const std::string&) {
              absl::MutexLock lock(&mu);
              opened[receiver].push_back(purpose);
            });
      }));
  ASSERT_OK_AND_ASSIGN(auto spec, spec::ParseJobSpecYaml(kSpec3, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& p : fed->names) req.add_parties(p);
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo submitted, fed->Submit(req));
  const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_OK_AND_ASSIGN(const std::string csv, fed->leader->Result(submitted.job_id()));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;  // header and p1, p2, p3
  absl::MutexLock lock(&mu);
  for (const auto& [receiver, purposes] : opened) {
    for (const std::string& purpose : purposes) {
      EXPECT_EQ(purpose.rfind("id-full:", 0), std::string::npos)
          << receiver << " opened the digests of a list: " << purpose;
    }
  }
}

// A deviating data party (issue: a deviating data party, finding 2) declares its ID list in more
// batches than the signed job's max_records_per_party needs: the count would size the leader's
// work lists (up to 2^32 batches), so the leader refuses it by name before asking for any further
// batch.
TEST(IdBatches, APartyDeclaringMoreBatchesThanTheSignedLimitNeedsIsRefusedByTheLeader) {
  Generated g = TwoParties();  // 240 ids a party: 35 batches of 7
  g.spec += "max_records_per_party: 240\n";
  auto fed =
      InProcessFederation::Create("idb2_inflated", g.files, nullptr,
                                  [](leader::LeaderOptions& o) { o.id_batch_ids = kTinyBatch; });
  ASSERT_OK(fed.status());
  InProcessFederation* f = fed->get();
  f->channel.set_reply_tamper([](const std::string& party, fedanon::v1::PartyMessage* m) {
    if (party == "hospital-a" && m->has_vertical() && m->vertical().has_ids() &&
        m->vertical().ids().batches() == 35) {
      m->mutable_vertical()->mutable_ids()->set_batches(36);  // one more than 240 ids need
    }
  });
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo submitted, f->Submit(Request(g, f->names)));
  const fedanon::v1::JobInfo info = f->Wait(submitted.job_id());
  f->channel.set_reply_tamper(nullptr);
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), HasSubstr(leader::kIdBatchesAboveLimit));
  EXPECT_THAT(info.failure_reason(), HasSubstr("party 'hospital-a' declares its ID list in 36"));
  EXPECT_THAT(info.failure_reason(), HasSubstr("needs at most 35"));
}

// The same limit at the party: a table larger than the signed max_records_per_party is refused by
// its own party at Prepare, before any ID leaves it.
TEST(IdBatches, ATableLargerThanTheSignedLimitIsRefusedByItsParty) {
  Generated g = TwoParties();
  g.spec += "max_records_per_party: 239\n";
  auto fed = InProcessFederation::Create("idb2_limit", g.files);
  ASSERT_OK(fed.status());
  InProcessFederation* f = fed->get();
  ASSERT_OK_AND_ASSIGN(const fedanon::v1::JobInfo submitted, f->Submit(Request(g, f->names)));
  const fedanon::v1::JobInfo info = f->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(),
              HasSubstr("holds 240 records, more than the job's max_records_per_party of 239"));
}

}  // namespace
}  // namespace fedanon::testing
