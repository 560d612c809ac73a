// The leader's view log is complete (issue 27 §5): a horizontal 3-party job and a vertical job
// run with the leader behind a capturing PartyChannel (tests/federation/leader_capture.h), which
// records — independently of the leader — every vector the leader decodes (secure sums, opened
// with the leader's keys and unmasked) and every plaintext field of the parties' vertical replies.
// The test splits the captured vectors into parts with its own replica of the layout and checks
// that the view log holds exactly these parts (same round, kind, attribute, labelled flag, counts,
// party) — nothing missing, nothing extra — and that, in the default binned numeric split search,
// every labelled bin describes at least K records.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "tests/federation/federation_test_util.h"
#include "tests/federation/leader_capture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/view_log_parts.h"

namespace fedanon::testing {
namespace {

constexpr uint64_t kK = 10;

// One part of what the leader learned, as the view log states it or as the capture implies it.
struct Part {
  uint32_t round = 0;
  std::string kind;
  std::string attribute;
  bool labelled = false;
  std::vector<uint64_t> counts;
  std::string party;
  std::optional<double> score;
  auto Key() const { return std::tie(round, kind, attribute, labelled, counts, party, score); }
  bool operator<(const Part& o) const { return Key() < o.Key(); }
  bool operator==(const Part& o) const { return Key() == o.Key(); }
};

std::string Describe(const Part& p) {
  std::ostringstream s;
  s << "round " << p.round << " " << p.kind << " attribute '" << p.attribute << "' labelled "
    << p.labelled << " party '" << p.party << "' counts[" << p.counts.size() << "]";
  if (p.score) s << " score " << *p.score;
  return s.str();
}

// Parses the view log (tests/support/view_log_parts.h); every line must be an object with the
// required fields and types.
std::vector<Part> ParseViewLog(const std::string& text) {
  std::vector<Part> parts;
  for (const ViewLogLine& l : ReadViewLogLines(text)) {
    const nlohmann::json& j = l.json;
    const std::string& line = l.text;
    EXPECT_TRUE(j.contains("round") && j["round"].is_number_unsigned()) << line;
    EXPECT_TRUE(j.contains("kind") && j["kind"].is_string()) << line;
    EXPECT_TRUE(j.contains("attribute") && j["attribute"].is_string()) << line;
    EXPECT_TRUE(j.contains("labelled") && j["labelled"].is_boolean()) << line;
    EXPECT_TRUE(j.contains("counts") && j["counts"].is_array()) << line;
    Part p;
    p.round = l.round;
    p.kind = l.kind;
    p.attribute = l.attribute;
    p.labelled = l.labelled;
    p.counts = l.counts;
    p.party = j.value("party", "");
    if (j.contains("score")) p.score = j["score"].get<double>();
    parts.push_back(std::move(p));
  }
  return parts;
}

// The parts of the captured secure sums, walked with a replica of the public hierarchies
// (updated from the instructions and split decisions that rode along, as a party does).
std::vector<Part> PartsOfSums(const std::vector<DecodedSum>& sums, const table::Dataset& schema) {
  std::vector<Part> parts;
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  const size_t nc = std::max(1, schema.num_classes());
  const size_t stride = 1 + schema.tracked.size();
  for (const DecodedSum& sum : sums) {
    for (const auto& u : sum.updates) {
      if (u.has_instruction()) {
        hier[u.instruction().attribute()].Specialize(u.instruction().node(),
                                                     u.instruction().candidate());
      } else if (u.has_split()) {
        hier[u.split().attribute()].SetSplit(u.split().node(), u.split().split());
      }
    }
    auto request = wire::FromProto(sum.request, hier);
    EXPECT_TRUE(request.ok()) << request.status();
    if (!request.ok()) continue;
    DecodedWords decoded(sum.total);
    auto add = [&](std::string kind, std::string attribute, bool labelled, size_t words) {
      std::optional<std::vector<uint64_t>> counts = decoded.Take(words);
      if (!counts) return;
      parts.push_back({sum.round, std::move(kind), std::move(attribute), labelled,
                       *std::move(counts), "", std::nullopt});
    };
    for (const auto& r : request->range_counts) {
      add(r.labelled ? "numeric_split" : "numeric_split_cells", schema.qids[r.attr].name,
          r.labelled, (r.bounds.size() - 1) * (r.labelled ? nc : 1));
    }
    for (const auto& [a, n] : request->rank_histograms) {
      const auto& node = hier[a].node(n);
      add("numeric_rank_histogram", schema.qids[a].name, true,
          static_cast<size_t>(node.rank_hi - node.rank_lo) * nc);
    }
    for (const auto& [a, n] : request->node_class_counts) {
      add("candidate_counts", schema.qids[a].name, true,
          static_cast<size_t>(hier[a].FineChildCount(n)) * nc);
    }
    for (const auto& key : request->group_keys) {
      size_t words = stride;
      for (size_t a = 0; a < key.size(); ++a) words += stride * hier[a].FineChildCount(key[a]);
      add("group_counts", "", !schema.tracked.empty(), words);
    }
    for (size_t g = 0; g < request->released_groups.size(); ++g) {
      add("released_counts", "", request->released_combinations > 1,
          request->released_combinations);
    }
    for (const auto& q : request->histograms) {
      add("sensitive_histogram", q.attr >= 0 ? schema.qids[q.attr].name : "", true,
          engine::HistogramWords(hier, q, request->histogram_domain));
    }
    EXPECT_EQ(decoded.taken(), sum.total.size()) << "a decoded vector longer than its request";
  }
  return parts;
}

// --------------------------------------------------------------------------------------------
// Horizontal

constexpr char kHorizontalSpec[] = R"(name: view-log-horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: hours, role: qid, type: continuous, range: [0, 80], precision: 1}
  - {name: disease, role: sensitive, values: [flu, hiv, none]}
  - {name: class, role: class, values: [Y, N]}
NOTE
PRIVACY
partitioning: horizontal
)";
constexpr char kLkcPrivacy[] =
    "privacy: {model: lkc, L: 2, K: 10, C: 0.6, sensitive_values: [hiv]}";

// 900 records dealt over 3 parties; the class depends on age and job, so there is something to
// specialize.
Table HorizontalTable(bool with_note) {
  static const char* jobs[] = {"Janitor", "Mover",      "Carpenter", "Technician",
                               "Manager", "Accountant", "Lawyer"};
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  Table t;
  t.header = {"age", "sex", "job", "hours", "disease", "class"};
  if (with_note) t.header.push_back("note");
  for (int r = 0; r < 900; ++r) {
    const int age = 18 + static_cast<int>(NextRandom(&state) % 60);
    const int job = static_cast<int>(NextRandom(&state) % 7);
    const int hours = 10 + static_cast<int>(NextRandom(&state) % 60);
    const uint64_t d = NextRandom(&state) % 10;
    const bool y =
        (age > 40) != (job >= 4) ? NextRandom(&state) % 4 == 0 : NextRandom(&state) % 4 != 0;
    std::vector<std::string> row = {
        absl::StrCat(age),   NextRandom(&state) % 2 ? "Male" : "Female", jobs[job],
        absl::StrCat(hours), d == 0 ? "hiv" : (d < 4 ? "flu" : "none"),  y ? "Y" : "N"};
    if (with_note) row.push_back(absl::StrCat("note-", r % 5));
    t.rows.push_back(std::move(row));
  }
  return t;
}

struct LeaderRun {
  fedanon::v1::JobInfo info;
  std::string job_id;
  std::string view_log;
  std::string view_log_path;
  Table result;
};

void SubmitAndWait(InProcessFederation& fed, const fedanon::v1::SubmitJobRequest& req,
                   LeaderRun* out) {
  ASSERT_OK_AND_ASSIGN(auto info, fed.Submit(req));
  out->job_id = info.job_id();
  out->info = fed.Wait(info.job_id());
  ASSERT_EQ(out->info.state(), fedanon::v1::JOB_STATE_DONE) << out->info.failure_reason();
  ASSERT_OK_AND_ASSIGN(out->view_log, fed.leader->ViewLogText(info.job_id()));
  out->view_log_path = fed.dir + "/captured-leader/" + info.job_id() + ".view.jsonl";
  ASSERT_OK_AND_ASSIGN(std::string csv, fed.leader->Result(info.job_id()));
  ASSERT_OK_AND_ASSIGN(out->result, ParseCsvText(csv, fed.dir));
}

void ExpectPrivateFile(const std::string& path, const std::string& content) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), content) << "the admin view differs from the file";
}

// Runs the horizontal job; `with_note` adds a released column without declared values, so the
// table is integrated by secure set union (opened by the leader) instead of summed counts.
void RunHorizontal(const std::string& name, bool with_note,
                   const std::string& privacy = kLkcPrivacy) {
  const Table table = HorizontalTable(with_note);
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create(name, DealRows(table, 3)));

  RecordingChannel recorder(&fed->channel);
  crypto::IssuedCertificate seal;
  ASSERT_OK_AND_ASSIGN(fed->leader, CapturedLeader(*fed, &recorder, &seal));
  ASSERT_OK(OpenSumsAsTheLeader(*fed, seal, &recorder));

  const std::string spec_text = absl::StrReplaceAll(
      kHorizontalSpec,
      {{"NOTE", with_note ? "  - {name: note, role: other}" : ""}, {"PRIVACY", privacy}});
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(spec_text, "job.yaml"));
  std::map<std::string, std::string> texts;
  const fedanon::v1::SubmitJobRequest req = ViewLogRequest(spec, fed->names, &texts);
  LeaderRun run;
  SubmitAndWait(*fed, req, &run);
  if (::testing::Test::HasFatalFailure()) return;
  fed->leader.reset();  // before the recorder goes away
  ExpectPrivateFile(run.view_log_path, run.view_log);

  ASSERT_OK_AND_ASSIGN(table::Dataset schema, table::BuildPublicSchema(spec, texts));
  std::vector<Part> expected = PartsOfSums(recorder.Sums(), schema);
  const auto steps = static_cast<uint32_t>(run.info.report().steps_size());
  if (with_note) {  // the union the leader opened: the released table's rows
    expected.push_back({steps + 1, "released_rows", "", false, {run.result.rows.size()}, "", {}});
  }
  const std::vector<Part> logged = ParseViewLog(run.view_log);
  ExpectSameParts(logged, expected, Describe);

  // Every kind of part a binned horizontal job decodes is there.
  std::map<std::string, int> kinds;
  for (const Part& p : logged) ++kinds[p.kind];
  EXPECT_EQ(kinds["numeric_split_cells"], 2) << "once per continuous attribute";
  EXPECT_EQ(kinds["numeric_split"], 2);
  EXPECT_GT(kinds["candidate_counts"], 0);
  EXPECT_GT(kinds["group_counts"], 0);
  const bool distribution = spec.privacy().model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
                            spec.privacy().model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS;
  if (distribution) {
    // ldiversity / tcloseness: the group counts carry no sensitive value; the sensitive
    // histograms come apart, each child of each one holding K records or none (docs/
    // threat-model.md), and the first is the whole table's.
    EXPECT_GT(kinds["sensitive_histogram"], 1);
    const size_t domain = 3;  // flu, hiv, none
    bool first = true;
    for (const Part& p : logged) {
      if (p.kind == "group_counts") {
        EXPECT_FALSE(p.labelled);
      }
      if (p.kind != "sensitive_histogram") continue;
      ASSERT_EQ(p.counts.size() % domain, 0u);
      for (size_t c = 0; c < p.counts.size() / domain; ++c) {
        const uint64_t n =
            p.counts[c * domain] + p.counts[c * domain + 1] + p.counts[c * domain + 2];
        EXPECT_TRUE(n == 0 || n >= kK) << "a histogram of " << n << " records reached the leader";
        if (first) {
          EXPECT_EQ(n, table.rows.size()) << "the first is the whole table's";
        }
      }
      first = false;
    }
  } else {
    EXPECT_EQ(kinds["sensitive_histogram"], 0);
  }
  EXPECT_EQ(kinds["numeric_rank_histogram"], 0) << "the binned search decodes no per-rank counts";
  if (with_note) {
    EXPECT_EQ(kinds["released_rows"], 1);
    EXPECT_EQ(kinds["released_counts"], 0);
  } else {
    EXPECT_GT(kinds["released_counts"], 0);
    uint64_t released = 0;
    for (const Part& p : logged) {
      if (p.kind == "released_counts") {
        for (uint64_t c : p.counts) released += c;
      }
    }
    EXPECT_EQ(released, table.rows.size());
  }
  EXPECT_GT(run.info.report().steps_size(), 0);

  // The labelled numeric-split bins (class counts per bin) each describe at least K records.
  const size_t nc = static_cast<size_t>(schema.num_classes());
  for (const Part& p : logged) {
    if (p.kind != "numeric_split") continue;
    EXPECT_TRUE(p.labelled);
    ASSERT_EQ(p.counts.size() % nc, 0u);
    ASSERT_GE(p.counts.size() / nc, 2u) << p.attribute;
    for (size_t b = 0; b < p.counts.size() / nc; ++b) {
      uint64_t n = 0;
      for (size_t k = 0; k < nc; ++k) n += p.counts[b * nc + k];
      EXPECT_GE(n, kK) << p.attribute << " bin " << b;
    }
  }
  // The unlabelled cells are record counts only: they add up to the table.
  for (const Part& p : logged) {
    if (p.kind != "numeric_split_cells") continue;
    uint64_t n = 0;
    for (uint64_t c : p.counts) n += c;
    EXPECT_EQ(n, table.rows.size()) << p.attribute;
  }
}

TEST(LeaderViewLog, HorizontalJobLogsEverySecureSumItDecodes) {
  RunHorizontal("view_log_horizontal", /*with_note=*/false);
}

TEST(LeaderViewLog, HorizontalJobWithUnionLogsTheRowsItOpens) {
  RunHorizontal("view_log_horizontal_union", /*with_note=*/true);
}

// ldiversity and tcloseness add the sensitive histograms to what the leader decodes: all logged,
// none of fewer than K records.
TEST(LeaderViewLog, HorizontalLDiversityJobLogsEverySensitiveHistogram) {
  RunHorizontal("view_log_ldiversity", /*with_note=*/false,
                "privacy: {model: ldiversity, variant: entropy, diversity: 1.8, K: 10}");
}

TEST(LeaderViewLog, HorizontalTClosenessJobLogsEverySensitiveHistogram) {
  RunHorizontal("view_log_tcloseness", /*with_note=*/true,
                "privacy: {model: tcloseness, t: 0.2, distance: ordered, K: 10}");
}

// --------------------------------------------------------------------------------------------
// Vertical

constexpr char kVerticalSpec[] = R"(name: view-log-vertical
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

// mohammed2011's Table 1 (34 records), party a holding Sex and party b Job and Salary.
std::vector<std::map<std::string, std::string>> VerticalFiles() {
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
  b.header = {"ID", "Class", "Job", "Salary"};
  int id = 1;
  for (const Block& blk : blocks) {
    for (int i = 0; i < blk.y + blk.n; ++i) {
      const std::string pid = absl::StrCat("person-", id++);
      const std::string cls = i < blk.y ? "Y" : "N";
      a.rows.push_back({pid, cls, blk.sex});
      b.rows.push_back({pid, cls, blk.job, blk.salary});
    }
  }
  b.rows.push_back({"only-b", "Y", "Mover", "31"});  // not common: never counted
  std::vector<std::map<std::string, std::string>> files(2, ViewLogTaxonomies());
  files[0]["table.csv"] = ToCsv(a);
  files[1]["table.csv"] = ToCsv(b);
  return files;
}

// The parts the leader read from the captured vertical replies.
std::vector<Part> PartsOfExchanges(const std::vector<VerticalExchange>& exchanges,
                                   const std::vector<std::string>& qid_names) {
  std::vector<Part> parts;
  for (const VerticalExchange& x : exchanges) {
    Part p;
    p.round = x.round;
    p.party = x.party;
    if (x.step.has_id_align()) {
      p.kind = "id_intersection";
      p.counts = {x.reply.ids().common_records()};
    } else if (x.step.has_propose() || (x.step.has_commit() && x.reply.has_proposal())) {
      // Participation only: the candidate and its score go into the secure comparison. Since
      // protocol 4.1 the next round's proposal rides with the commit (the next round's number,
      // or this one's again after a veto).
      if (x.step.has_commit() && x.step.commit().accept()) ++p.round;
      p.kind = x.reply.proposal().participate() ? "vertical_participate" : "vertical_decline";
    } else if (x.step.has_winner()) {
      // The round's winner reveals its candidate and score to the leader.
      const auto& won = x.reply.instructions().won();
      p.kind = "vertical_score";
      const uint32_t attr = won.candidate().attribute();
      p.attribute = attr < qid_names.size() ? qid_names[attr] : "?";
      p.counts = {static_cast<uint64_t>(won.candidate().node()),
                  static_cast<uint64_t>(won.candidate().candidate())};
      p.score = won.candidate().score();
    } else if (x.step.has_deliver()) {
      p.kind = "vertical_verdict";
      p.counts = {x.reply.verdict().accept() ? 1u : 0u};
    } else if (x.step.has_release()) {
      const auto& report = x.reply.released().report();
      p.kind = "vertical_report";
      p.counts = {report.groups(), report.smallest_group()};
      for (const auto& s : report.steps()) p.counts.push_back(s.records());
    } else if (x.step.has_assemble()) {
      p.kind = "released_rows";
      p.counts = {x.reply.assembled().rows_written()};
    } else {
      continue;  // sealed bytes only (ID lists, instructions) or an acknowledgement
    }
    parts.push_back(std::move(p));
  }
  return parts;
}

void RunVertical(const std::string& name, const std::string& recipient) {
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create(name, VerticalFiles()));
  VerticalRecordingChannel recorder(&fed->channel);
  crypto::IssuedCertificate seal;
  ASSERT_OK_AND_ASSIGN(fed->leader, CapturedLeader(*fed, &recorder, &seal));
  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec,
                       spec::ParseJobSpecYaml(kVerticalSpec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req = ViewLogRequest(spec, fed->names);
  req.set_recipient(recipient);
  // A data party as recipient could link the rows to its records: the spec must opt in.
  if (!recipient.empty())
    req.mutable_spec()->mutable_release()->set_allow_data_holding_recipient(true);
  std::vector<std::string> qid_names;
  for (const auto& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID) qid_names.push_back(a.name());
  }
  LeaderRun run;
  if (recipient.empty()) {
    SubmitAndWait(*fed, req, &run);
    if (::testing::Test::HasFatalFailure()) return;
  } else {
    ASSERT_OK_AND_ASSIGN(auto info, fed->Submit(req));
    run.job_id = info.job_id();
    run.info = fed->Wait(info.job_id());
    ASSERT_EQ(run.info.state(), fedanon::v1::JOB_STATE_DONE) << run.info.failure_reason();
    ASSERT_OK_AND_ASSIGN(run.view_log, fed->leader->ViewLogText(info.job_id()));
    run.view_log_path = fed->dir + "/captured-leader/" + info.job_id() + ".view.jsonl";
  }
  fed->leader.reset();
  ExpectPrivateFile(run.view_log_path, run.view_log);

  const std::vector<VerticalExchange> exchanges = recorder.Exchanges();
  std::vector<Part> expected = PartsOfExchanges(exchanges, qid_names);
  // The leader intersects the lists' digests (sealed for it by each list's last hop): one per id
  // of each party's table.
  const auto files = VerticalFiles();
  for (size_t i = 0; i < fed->names.size(); ++i) {
    const std::string& table = files[i].at("table.csv");
    const uint64_t ids = static_cast<uint64_t>(std::count(table.begin(), table.end(), '\n')) - 1;
    expected.push_back({0, "id_digests", "", false, {ids}, fed->names[i], {}});
  }
  if (recipient.empty()) {  // the leader joined the released columns itself
    uint32_t release_round = 0;
    for (const auto& x : exchanges) {
      if (x.step.has_release()) release_round = x.round;
    }
    expected.push_back(
        {release_round, "released_rows", "", false, {run.result.rows.size()}, "", {}});
    EXPECT_EQ(run.result.rows.size(), 34u);
  }
  const std::vector<Part> logged = ParseViewLog(run.view_log);
  ExpectSameParts(logged, expected, Describe);

  std::map<std::string, int> kinds;
  for (const Part& p : logged) ++kinds[p.kind];
  EXPECT_EQ(kinds["id_intersection"], 2);
  EXPECT_EQ(kinds["id_digests"], 2);
  EXPECT_GT(kinds["vertical_score"], 0);
  EXPECT_GT(kinds["vertical_participate"], kinds["vertical_score"]);
  EXPECT_GT(kinds["vertical_decline"], 0);  // the last round: every party declines
  // No losing score: one score per round, the winner's (a round's every other participant shows
  // its participation only).
  std::map<uint32_t, int> scores_per_round;
  for (const Part& p : logged) {
    if (p.kind == "vertical_score") ++scores_per_round[p.round];
  }
  for (const auto& [round, scores] : scores_per_round) EXPECT_EQ(scores, 1) << "round " << round;
  // No sensitive values in this spec: no party judges another's candidate (docs/vertical.md).
  EXPECT_EQ(kinds["vertical_verdict"], 0);
  EXPECT_EQ(kinds["vertical_report"], 2);
  EXPECT_EQ(kinds["released_rows"], 1);
  for (const Part& p : logged) {
    if (p.kind == "id_intersection" || p.kind == "released_rows") {
      EXPECT_EQ(p.counts, std::vector<uint64_t>{34}) << p.kind;
    }
    EXPECT_FALSE(p.labelled) << "a vertical leader decodes no class counts";
  }
}

TEST(LeaderViewLog, VerticalJobLogsEveryReplyItReads) {
  RunVertical("view_log_vertical", /*recipient=*/"");
}

TEST(LeaderViewLog, VerticalJobWithRecipientPartyLogsTheAssembledRowCount) {
  RunVertical("view_log_vertical_party", /*recipient=*/"hospital-b");
}

TEST(LeaderViewLog, UnknownAndMalformedJobIdsAreRefused) {
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create("view_log_ids", VerticalFiles()));
  EXPECT_EQ(fed->leader->ViewLogText("job-000000000000").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(fed->leader->ViewLogText("../jobs.db").ok());
}

}  // namespace
}  // namespace fedanon::testing
