// A party keeps its own record (issue 26): a horizontal 3-party job (with a secure set union) and
// a vertical job run with the leader behind a channel that captures, independently of the
// parties, every reply each party sent. The test checks that each party's audit file
// (party/audit_log.h) has exactly one entry per reply it sent in the job — same round, kind and
// receivers as the sealed payloads actually name — and, for the horizontal job, that the counts
// a party recorded as its own are the counts of its own table (recomputed here from its CSV and
// the public requests) and add up over the parties to what the leader decoded.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "tests/federation/federation_test_util.h"
#include "tests/federation/leader_capture.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

// One message a party sent, as its audit file states it or as the capture shows it.
struct Sent {
  std::string party;
  uint32_t round = 0;
  std::string kind;
  std::vector<std::string> to;
  auto Key() const { return std::tie(party, round, kind, to); }
  bool operator<(const Sent& o) const { return Key() < o.Key(); }
  bool operator==(const Sent& o) const { return Key() == o.Key(); }
};

std::string Describe(const Sent& s) {
  std::ostringstream o;
  o << s.party << " round " << s.round << " " << s.kind << " to [";
  for (const auto& t : s.to) o << t << " ";
  o << "]";
  return o.str();
}

std::vector<std::string> Receivers(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& payloads) {
  std::vector<std::string> out;
  for (const auto& p : payloads) out.push_back(p.receiver());
  return out;
}

// The audit entry a reply implies: its kind and who can read it (the receivers its sealed
// payloads name, the leader for what it reads in plaintext).
Sent FromReply(const std::string& party, const fedanon::v1::LeaderMessage& request,
               const fedanon::v1::PartyMessage& reply) {
  Sent s{party, static_cast<uint32_t>(request.round()), "", {}};
  const std::string leader = "leader";
  if (reply.has_error()) {
    s.kind = "error";
    s.to = {leader};
  } else if (reply.has_prepared()) {
    s.kind = "job-start";
    s.to = {leader};
  } else if (reply.has_pong()) {
    s.kind = "job-end";
    s.to = {leader};
  } else if (reply.has_final_check()) {
    s.kind = "final-check";
    const auto& r = reply.final_check();
    if (r.has_sealed()) {
      s.to = {r.sealed().receiver()};
    } else if (!r.sealed_ref().stream().empty()) {
      s.to = {r.sealed_ref().receiver()};
    } else if (r.totals_size() > 0) {
      for (const auto& t : r.totals()) s.to.push_back(t.receiver());
    } else {
      s.to = {leader};
    }
  } else if (reply.has_sum_step()) {
    s.kind = "secure-sum";
    s.to = {reply.sum_step().sealed().receiver()};
  } else if (reply.has_sum_mask()) {  // the ring's first party's mask, sealed for the leader
    s.kind = "secure-sum-mask";
    s.to = {reply.sum_mask().seed().receiver()};
  } else if (reply.has_sum_bin_checked()) {  // a bin check's message: for the other party, or
                                             // (the garbler's last step) nothing but the leader's
    s.kind = "bin-check";
    const auto& b = reply.sum_bin_checked();
    s.to = {b.has_sealed()                     ? b.sealed().receiver()
            : !b.sealed_ref().stream().empty() ? b.sealed_ref().receiver()
                                               : leader};
  } else if (reply.has_chunk()) {  // a chunk of a payload, sealed
    s.kind = "payload-chunk";
    s.to = {reply.chunk().ref().receiver()};
  } else if (reply.has_chunk_ack()) {
    s.kind = "chunk-receipt";
    s.to = {leader};
  } else if (reply.has_union_step()) {
    if (request.union_step().deliver()) {
      s.kind = "released-table";
      s.to = {leader};
    } else {
      s.kind = "union-rows";
      s.to = {reply.union_step().list_ref().stream().empty()
                  ? reply.union_step().list().receiver()
                  : reply.union_step().list_ref().receiver()};
    }
  } else if (reply.has_vertical()) {
    const auto& v = reply.vertical();
    switch (v.result_case()) {
      case fedanon::v1::VerticalStepResult::kIds:
        if (request.vertical().has_id_align()) {
          s.kind = "id-common";
          s.to = {leader};
        } else if (request.vertical().has_id_digests() || request.vertical().has_id_common()) {
          s.kind = "chunk-receipt";  // a receipt (the last common batch: a signed statement)
          s.to = {leader};
        } else {
          s.kind = "id-list";
          s.to = v.ids().has_list() ? std::vector<std::string>{v.ids().list().receiver()}
                                    : Receivers(v.ids().for_parties());
        }
        break;
      case fedanon::v1::VerticalStepResult::kProposal:
        // Participation to the leader, the key's shares sealed for the computing parties.
        s.kind = "proposal";
        s.to = {leader};
        for (const auto& share : v.proposal().key_shares()) s.to.push_back(share.receiver());
        break;
      case fedanon::v1::VerticalStepResult::kInstructions:
        s.kind = "instruction";
        s.to = Receivers(v.instructions().for_parties());
        for (const auto& r : v.instructions().refs()) s.to.push_back(r.receiver());
        // The round's winner reveals its candidate to the leader.
        if (v.instructions().has_won()) s.to.push_back(leader);
        break;
      case fedanon::v1::VerticalStepResult::kCompared:
        s.kind = "winner-comparison";
        // The next message for the other computing party: whole, or (chunked jobs) a stream.
        if (!v.compared().sealed_ref().stream().empty()) {
          s.to.push_back(v.compared().sealed_ref().receiver());
        } else if (!v.compared().sealed().receiver().empty()) {
          s.to.push_back(v.compared().sealed().receiver());
        }
        if (v.compared().has_choice()) s.to.push_back(leader);
        break;
      case fedanon::v1::VerticalStepResult::kVerdict:
        s.kind = "verdict";
        s.to = {leader, v.verdict().for_owner().receiver()};
        break;
      case fedanon::v1::VerticalStepResult::kReleased:
        s.kind = "release";
        s.to = {v.released().columns_ref().stream().empty()
                    ? v.released().columns().receiver()
                    : v.released().columns_ref().receiver()};
        break;
      case fedanon::v1::VerticalStepResult::kAssembled:
        s.kind = "released-table";
        s.to = {leader};
        break;
      case fedanon::v1::VerticalStepResult::kCommitted:
        s.kind = "commit";
        s.to = {leader};
        break;
      default:
        // A winner's owner with no judge to send the children to (or no one left after the
        // judges) replies with an empty result: still a message, sealed for no one.
        const bool instruction =
            request.vertical().has_winner() || request.vertical().has_publish();
        s.kind = instruction ? "instruction" : "?";
    }
  } else {
    s.kind = "?";
  }
  return s;
}

// Forwards to `inner` and keeps every job-scoped reply each party sent (pings are not).
class SentCapture : public wire::PartyChannel {
 public:
  explicit SentCapture(wire::PartyChannel* inner) : inner_(inner) {}
  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    auto reply = inner_->Call(party, request, timeout);
    if (reply.ok() && !request.job_id().empty() && !request.has_ping()) {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(FromReply(party, request, *reply));
      if (reply->has_sum_step()) sums_.push_back({party, request});
      // The ring's first party's mask, riding with its answer to a collect's last chunk (protocol
      // 2.1): an entry of its own in the audit, as when it answers a SumUnmask.
      // The next round's proposal, riding with a commit (protocol 4.1): the commit's entry and
      // the proposal's of the round it is for (the next, or the same after a veto).
      if (request.has_vertical() && request.vertical().has_commit() &&
          reply->vertical().has_proposal()) {
        sent_.back().round =
            static_cast<uint32_t>(request.round()) + (request.vertical().commit().accept() ? 1 : 0);
        sent_.push_back(Sent{party, static_cast<uint32_t>(request.round()), "commit", {"leader"}});
      }
      if (reply->has_sum_step() && reply->sum_step().has_mask_seed()) {
        sent_.push_back(Sent{party,
                             static_cast<uint32_t>(request.round()),
                             "secure-sum-mask",
                             {reply->sum_step().mask_seed().receiver()}});
      }
      // The same with the first party's last step of a bin check that held (protocol 5.0).
      if (reply->has_sum_bin_checked() && reply->sum_bin_checked().has_mask_seed()) {
        sent_.push_back(Sent{party,
                             static_cast<uint32_t>(request.round()),
                             "secure-sum-mask",
                             {reply->sum_bin_checked().mask_seed().receiver()}});
      }
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }
  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  // The secure-sum requests each party answered, in the order it answered them.
  std::vector<std::pair<std::string, fedanon::v1::LeaderMessage>> sums() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sums_;
  }

 private:
  wire::PartyChannel* inner_;
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
  std::vector<std::pair<std::string, fedanon::v1::LeaderMessage>> sums_;
};

std::vector<nlohmann::json> ReadAudit(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << line;
    if (j.is_object()) lines.push_back(std::move(j));
  }
  return lines;
}

std::vector<Sent> Logged(const std::string& party, const std::vector<nlohmann::json>& lines,
                         const std::string& job_id) {
  std::vector<Sent> out;
  for (const auto& j : lines) {
    EXPECT_EQ(j.value("job", ""), job_id);
    Sent s{party, j.value("round", 0u), j.value("kind", ""), {}};
    for (const auto& t : j.value("to", nlohmann::json::array())) s.to.push_back(t);
    out.push_back(std::move(s));
  }
  return out;
}

void ExpectSameMessages(std::vector<Sent> logged, std::vector<Sent> expected) {
  std::sort(logged.begin(), logged.end());
  std::sort(expected.begin(), expected.end());
  std::vector<Sent> missing, extra;
  std::set_difference(expected.begin(), expected.end(), logged.begin(), logged.end(),
                      std::back_inserter(missing));
  std::set_difference(logged.begin(), logged.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  EXPECT_TRUE(missing.empty()) << missing.size() << " message(s) sent but not in the audit, e.g. "
                               << Describe(missing.front());
  EXPECT_TRUE(extra.empty()) << extra.size() << " audit entries for no message, e.g. "
                             << Describe(extra.front());
  EXPECT_EQ(logged.size(), expected.size());
}

const std::map<std::string, std::string>& Taxonomies() {
  static const auto* t = new std::map<std::string, std::string>{
      {"sex.csv", "Male;ANY_Sex\nFemale;ANY_Sex\n"},
      {"job.csv",
       "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;ANY_Job\n"
       "Carpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-collar;ANY_Job\n"
       "Manager;White-collar;ANY_Job\nAccountant;Professional;White-collar;ANY_Job\n"
       "Lawyer;Professional;White-collar;ANY_Job\n"}};
  return *t;
}

absl::StatusOr<std::unique_ptr<leader::Leader>> CapturedLeader(InProcessFederation& fed,
                                                               wire::PartyChannel* channel,
                                                               crypto::IssuedCertificate* seal) {
  ASSIGN_OR_RETURN(*seal, fed.ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24)));
  leader::LeaderOptions lo;
  lo.name = "leader";
  lo.data_dir = fed.dir + "/captured-leader";
  lo.round_timeout = absl::Seconds(60);
  lo.ca_pem = fed.ca->cert_pem();
  lo.seal_cert_pem = seal->cert_pem;
  lo.seal_key_pem = seal->key_pem;
  return leader::Leader::Create(lo, channel);
}

uint64_t Next(uint64_t* state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

// --------------------------------------------------------------------------------------------
// Horizontal: 600 records over 3 parties, a released column without declared values, so the
// table is integrated by secure set union.

constexpr char kHorizontalSpec[] = R"(name: audit-horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: disease, role: sensitive, values: [flu, hiv, none]}
  - {name: class, role: class, values: [Y, N]}
  - {name: note, role: other}
privacy: {model: lkc, L: 2, K: 10, C: 0.6, sensitive_values: [hiv]}
partitioning: horizontal
)";

TEST(PartyAudit, HorizontalJobRecordsEveryMessageAndTheOwnCounts) {
  static const char* jobs[] = {"Janitor", "Mover",      "Carpenter", "Technician",
                               "Manager", "Accountant", "Lawyer"};
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  std::vector<Table> parts(3);
  for (auto& p : parts) p.header = {"age", "sex", "job", "disease", "class", "note"};
  for (int r = 0; r < 600; ++r) {
    const int age = 18 + static_cast<int>(Next(&state) % 60);
    const int job = static_cast<int>(Next(&state) % 7);
    const uint64_t d = Next(&state) % 10;
    const bool y = (age > 40) != (job >= 4) ? Next(&state) % 4 == 0 : Next(&state) % 4 != 0;
    parts[r % 3].rows.push_back({absl::StrCat(age), Next(&state) % 2 ? "Male" : "Female", jobs[job],
                                 d == 0 ? "hiv" : (d < 4 ? "flu" : "none"), y ? "Y" : "N",
                                 absl::StrCat("note-", r % 5)});
  }
  std::vector<std::map<std::string, std::string>> files(3, Taxonomies());
  for (int p = 0; p < 3; ++p) files[p]["table.csv"] = ToCsv(parts[p]);
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create("party_audit_horizontal", files));

  RecordingChannel recorder(&fed->channel);
  SentCapture capture(&recorder);
  crypto::IssuedCertificate seal;
  ASSERT_OK_AND_ASSIGN(fed->leader, CapturedLeader(*fed, &capture, &seal));
  ASSERT_OK_AND_ASSIGN(auto leader_keys, crypto::SealKeyPairFromPem(seal.key_pem));
  recorder.set_leader_keys(std::move(leader_keys), fed->ca->cert_pem());
  std::map<std::string, std::string> party_certs;
  for (size_t i = 0; i < fed->names.size(); ++i) {
    party_certs[fed->names[i]] = fed->agents[i]->seal_cert_pem();
  }
  recorder.set_party_certificates(std::move(party_certs));

  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml(kHorizontalSpec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : fed->names) req.add_parties(n);
  std::map<std::string, std::string> texts;
  for (const auto& a : spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    (*req.mutable_taxonomies())[a.name()] = Taxonomies().at(a.taxonomy());
    texts[a.name()] = Taxonomies().at(a.taxonomy());
  }
  ASSERT_OK_AND_ASSIGN(auto info, fed->Submit(req));
  const std::string job_id = info.job_id();
  info = fed->Wait(job_id);
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  fed->leader.reset();  // every EndJob answered, before the capture goes away

  // One entry per message, per party.
  std::map<std::string, std::vector<nlohmann::json>> audit;
  std::map<std::string, int> kinds;
  for (const auto& name : fed->names) {
    audit[name] = ReadAudit(fed->dir + "/" + name + "/output/" + job_id + ".audit.jsonl");
    std::vector<Sent> expected;
    for (const Sent& s : capture.sent()) {
      if (s.party == name) expected.push_back(s);
    }
    ExpectSameMessages(Logged(name, audit[name], job_id), expected);
    for (const auto& j : audit[name]) ++kinds[j.value("kind", "")];
    ASSERT_FALSE(audit[name].empty());
    EXPECT_EQ(audit[name].front().value("kind", ""), "job-start");
    ASSERT_OK_AND_ASSIGN(const crypto::Identity admin,
                         crypto::IdentityOfCertificate(fed->admin.cert_pem));
    EXPECT_EQ(audit[name].front().value("admin", ""), admin.name);
    EXPECT_EQ(audit[name].front().value("ring", ""), "hospital-a,hospital-b,hospital-c");
    EXPECT_EQ(audit[name].front().value("records", 0u), 200u);
    EXPECT_EQ(audit[name].back().value("kind", ""), "job-end");
    EXPECT_EQ(audit[name].back().value("success", ""), "true");
  }
  EXPECT_EQ(kinds["job-start"], 3);
  EXPECT_EQ(kinds["job-end"], 3);
  EXPECT_EQ(kinds["union-rows"], 3);
  EXPECT_GT(kinds["secure-sum"], 3);
  for (const auto& [name, lines] : audit) {
    uint64_t rows = 0;
    for (const auto& j : lines) {
      if (j.value("kind", "") == "union-rows") {
        rows += j.value("rows", 0u);
        EXPECT_EQ(j.value("rows_sealed_for", ""), "leader");
      }
    }
    EXPECT_EQ(rows, 200u) << name << ": every own record is released once";
  }

  // The counts each party recorded, by collect: its own local counts, recomputed here from its
  // table and the public requests (with the updates that rode along), independently of the party.
  ASSERT_OK_AND_ASSIGN(table::Dataset schema, table::BuildPublicSchema(spec, texts));
  std::map<uint64_t, std::vector<uint64_t>> summed;  // collect -> sum over parties
  for (size_t p = 0; p < fed->names.size(); ++p) {
    const std::string& name = fed->names[p];
    std::map<uint64_t, std::vector<uint64_t>> recorded;
    for (const auto& j : audit[name]) {
      if (j.value("kind", "") != "secure-sum") continue;
      ASSERT_TRUE(j.contains("counts")) << j.dump();
      EXPECT_EQ(j.value("form", ""), "masked+sealed");
      auto& v = recorded[j.value("collect", uint64_t{0})];
      v.resize(j.value("total_words", uint64_t{0}));
      const uint64_t offset = j.value("offset", uint64_t{0});
      const auto counts = j["counts"].get<std::vector<uint64_t>>();
      ASSERT_LE(offset + counts.size(), v.size());
      std::copy(counts.begin(), counts.end(), v.begin() + static_cast<ptrdiff_t>(offset));
    }
    ASSERT_OK_AND_ASSIGN(table::Dataset data,
                         table::LoadDataset(spec, fed->dir + "/" + name + "/table.csv", &schema));
    std::vector<engine::AttributeHierarchy> hier;
    for (const auto& q : data.qids) hier.emplace_back(&q);
    engine::Tips tips(&data, &hier);
    uint64_t applied = 0;
    size_t checked = 0;
    for (const auto& [party, request] : capture.sums()) {
      const auto& step = request.sum_step();
      if (party != name || step.chunk() != 0 || !step.has_request()) continue;
      for (const auto& u : step.updates()) {
        if (u.sequence() < applied) continue;
        if (u.has_instruction()) {
          const auto& in = u.instruction();
          hier[in.attribute()].Specialize(in.node(), in.candidate());
          tips.Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
        } else if (u.has_split()) {
          hier[u.split().attribute()].SetSplit(u.split().node(), u.split().split());
        }
        ++applied;
      }
      ASSERT_OK_AND_ASSIGN(engine::StatsRequest stats, wire::FromProto(step.request(), hier));
      std::vector<uint64_t> own;
      engine::AppendLocalStats(tips, stats, &own);
      ASSERT_TRUE(recorded.count(step.collect())) << name << " collect " << step.collect();
      EXPECT_EQ(recorded[step.collect()], own) << name << " collect " << step.collect();
      auto& sum = summed[step.collect()];
      sum.resize(own.size());
      for (size_t i = 0; i < own.size(); ++i) sum[i] += recorded[step.collect()][i];
      ++checked;
    }
    EXPECT_EQ(checked, recorded.size()) << name;
    EXPECT_GT(checked, 0u);
  }
  // And over the parties they add up to what the leader decoded.
  size_t decoded = 0;
  for (const DecodedSum& d : recorder.Sums()) {
    ++decoded;
    bool found = false;
    for (const auto& [collect, sum] : summed) found = found || sum == d.total;
    EXPECT_TRUE(found) << "a decoded total no party's counts add up to (round " << d.round << ")";
  }
  EXPECT_EQ(decoded, summed.size());
}

// --------------------------------------------------------------------------------------------
// Vertical: mohammed2011's Table 1, party a holding Sex and party b Job and Salary.

constexpr char kVerticalSpec[] = R"(name: audit-vertical
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Salary, role: qid, type: continuous, range: [1, 99], precision: 1, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
privacy:
  model: templates
  templates:
    - {qid: [Sex, Job], k: 4}
    - {qid: [Sex, Salary], k: 5}
score: gainratio
beneficial: true
partitioning: vertical
)";

// The same job with a sensitive attribute at hospital-a (LKC), so that hospital-a judges
// hospital-b's candidates (verdicts) and hospital-b's children reach it before the commit.
constexpr char kVerticalSensitiveSpec[] = R"(name: audit-vertical-sensitive
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Disease, role: sensitive, values: [flu, hiv, none], party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Salary, role: qid, type: continuous, range: [1, 99], precision: 1, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 4, C: 0.9, sensitive_values: [hiv]}
score: gainratio
partitioning: vertical
)";

std::vector<std::map<std::string, std::string>> VerticalFiles(bool sensitive) {
  struct Block {
    const char* sex;
    const char* job;
    const char* salary;
    int y, n;
  };
  const Block blocks[] = {{"Male", "Janitor", "30", 0, 3},    {"Male", "Mover", "32", 0, 4},
                          {"Male", "Carpenter", "35", 2, 3},  {"Female", "Technician", "37", 3, 1},
                          {"Female", "Manager", "42", 4, 2},  {"Female", "Manager", "44", 3, 0},
                          {"Male", "Accountant", "44", 3, 0}, {"Female", "Accountant", "44", 3, 0},
                          {"Male", "Lawyer", "44", 2, 0},     {"Female", "Lawyer", "44", 1, 0}};
  Table a, b;
  a.header = {"ID", "Class", "Sex"};
  if (sensitive) a.header.push_back("Disease");
  b.header = {"ID", "Class", "Job", "Salary"};
  int id = 1;
  for (const Block& blk : blocks) {
    for (int i = 0; i < blk.y + blk.n; ++i) {
      const std::string pid = absl::StrCat("person-", id++);
      const std::string cls = i < blk.y ? "Y" : "N";
      a.rows.push_back({pid, cls, blk.sex});
      if (sensitive) a.rows.back().push_back(id % 7 == 0 ? "hiv" : (id % 2 ? "flu" : "none"));
      b.rows.push_back({pid, cls, blk.job, blk.salary});
    }
  }
  b.rows.push_back({"only-b", "Y", "Mover", "31"});  // not common
  std::vector<std::map<std::string, std::string>> files(2, Taxonomies());
  files[0]["table.csv"] = ToCsv(a);
  files[1]["table.csv"] = ToCsv(b);
  return files;
}

void RunVertical(const std::string& name, const std::string& recipient, bool sensitive = false) {
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create(name, VerticalFiles(sensitive)));
  SentCapture capture(&fed->channel);
  crypto::IssuedCertificate seal;
  ASSERT_OK_AND_ASSIGN(fed->leader, CapturedLeader(*fed, &capture, &seal));
  ASSERT_OK_AND_ASSIGN(
      fedanon::v1::JobSpec spec,
      spec::ParseJobSpecYaml(sensitive ? kVerticalSensitiveSpec : kVerticalSpec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : fed->names) req.add_parties(n);
  req.set_recipient(recipient);
  if (!recipient.empty()) {
    req.mutable_spec()->mutable_release()->set_allow_data_holding_recipient(true);
  }
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) {
      (*req.mutable_taxonomies())[a.name()] = Taxonomies().at(a.taxonomy());
    }
  }
  ASSERT_OK_AND_ASSIGN(auto info, fed->Submit(req));
  const std::string job_id = info.job_id();
  info = fed->Wait(job_id);
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  fed->leader.reset();

  std::map<std::string, int> kinds;
  for (const auto& party : fed->names) {
    const auto lines = ReadAudit(fed->dir + "/" + party + "/output/" + job_id + ".audit.jsonl");
    std::vector<Sent> expected;
    for (const Sent& s : capture.sent()) {
      if (s.party == party) expected.push_back(s);
    }
    ExpectSameMessages(Logged(party, lines, job_id), expected);
    for (const auto& j : lines) {
      const std::string kind = j.value("kind", "");
      ++kinds[kind];
      if (kind == "id-common") {
        EXPECT_EQ(j.value("common_records", 0u), 34u);
      }
      if (kind == "release") {
        EXPECT_EQ(j.value("records", 0u), 34u);
        EXPECT_EQ(j["to"], nlohmann::json::array({recipient.empty() ? "leader" : recipient}));
      }
      if (kind == "released-table") {
        EXPECT_EQ(party, recipient);
        EXPECT_EQ(j.value("rows", 0u), 34u);
      }
      EXPECT_FALSE(j.contains("counts")) << "a vertical party sends no count vectors";
    }
  }
  EXPECT_EQ(kinds["job-start"], 2);
  EXPECT_EQ(kinds["id-common"], 2);
  EXPECT_EQ(kinds["release"], 2);
  EXPECT_GT(kinds["id-list"], 0);
  EXPECT_GT(kinds["proposal"], 0);
  EXPECT_GT(kinds["instruction"], 0);
  EXPECT_GT(kinds["commit"], 0);
  EXPECT_GT(kinds["winner-comparison"], 0);
  EXPECT_EQ(kinds["released-table"], recipient.empty() ? 0 : 1);
  if (sensitive) {
    EXPECT_GT(kinds["verdict"], 0) << "hospital-a judges hospital-b's candidates";
  } else {
    EXPECT_EQ(kinds["verdict"], 0) << "no sensitive values: no judges";
  }
  EXPECT_EQ(kinds["job-end"], 2);
}

TEST(PartyAudit, VerticalJobRecordsEveryMessage) { RunVertical("party_audit_vertical", ""); }

TEST(PartyAudit, VerticalJobWithAJudgeRecordsTheVerdicts) {
  RunVertical("party_audit_vertical_judge", "", /*sensitive=*/true);
}

TEST(PartyAudit, VerticalJobWithADataPartyRecipientRecordsTheWrittenTable) {
  RunVertical("party_audit_vertical_recipient", "hospital-b");
}

}  // namespace
}  // namespace fedanon::testing
