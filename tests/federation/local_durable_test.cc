// Durable jobs with `recoding: local` (docs/operations.md "Durable jobs"): the leader is "killed"
// (its data directory copied at that instant, as kill -9 would leave it, then a new Leader started
// on the copy) at chosen points of a local job, in one process with in-process parties
// (tests/support/durable_federation.h):
// * horizontal, 3 parties of gen-data's table, LKC with C < 1: after a few of the waves' secure
//   sums, in the middle of the waves, at the final check's ring and during the sealed-row union
//   (the local job's integration);
// * vertical, 2 parties, k-anonymity: in the first wave after the ID matching (its proposals), in
//   a later wave (its commit), at the closing wave and during the release;
// * vertical, 2 parties, LKC with C < 1 on a sensitive attribute of one party (that party judges
//   the other's splits): at a judge's verdicts and at a wave's publication of the verdicts.
// Each resumed job must end DONE with the steps, groups and released rows of an uninterrupted run
// and of the centralized `recoding: local` run on the union / join, the view log must hold no
// line twice, every party's state file must go, the parties' audit files and run ledgers must
// record what an uninterrupted run's do (besides repeats of answers), and no request the
// restarted leader asked again may have been answered differently (AnswerLedger). A party killed
// after answering (and restarted over its directories) at five of these points, likewise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/adult_vertical_util.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/durable_federation.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using fedanon::v1::JobInfo;

// gen-data's Adult-like schema, as tests/cli/local_recoding_daemons_test.cc runs it through the
// daemons: a confidence bound (C < 1) horizontally, k-anonymity vertically.
constexpr char kHorizontalSpec[] = R"(name: durable-local-horizontal
partitioning: horizontal
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: education, role: qid, taxonomy: tax/education.csv}
  - {name: marital-status, role: sensitive}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv}
  - {name: sex, role: qid, taxonomy: tax/sex.csv}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 2, K: 10, C: 0.5, sensitive_values: [Divorced, Separated]}
score: infogain
missing: drop
recoding: local
)";

constexpr char kVerticalSpec[] = R"(name: durable-local-vertical
partitioning: vertical
attributes:
  - {name: id, role: id}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1, party: hospital-a}
  - {name: education, role: qid, taxonomy: tax/education.csv, party: hospital-a}
  - {name: marital-status, role: sensitive, party: hospital-a}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv, party: hospital-a}
  - {name: sex, role: qid, taxonomy: tax/sex.csv, party: hospital-b}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1, party: hospital-b}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv, party: hospital-b}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy:
  model: templates
  templates:
    - {qid: [age, education, occupation, sex, hours-per-week, native-country], k: 10}
score: infogain
missing: drop
recoding: local
)";

// The vertical job with a confidence bound: marital-status (at hospital-a) is sensitive, so
// hospital-a judges every wave's winning splits of hospital-b per group (LocalJudge, its signed
// verdicts published with LocalPublish); the crash points below fall on those calls.
constexpr char kJudgedSpec[] = R"(name: durable-local-judged
partitioning: vertical
attributes:
  - {name: id, role: id}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1, party: hospital-a}
  - {name: education, role: qid, taxonomy: tax/education.csv, party: hospital-a}
  - {name: marital-status, role: sensitive, party: hospital-a}
  - {name: occupation, role: qid, taxonomy: tax/occupation.csv, party: hospital-a}
  - {name: sex, role: qid, taxonomy: tax/sex.csv, party: hospital-b}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1, party: hospital-b}
  - {name: native-country, role: qid, taxonomy: tax/native-country.csv, party: hospital-b}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 2, K: 10, C: 0.3, sensitive_values: [Divorced, Separated]}
score: infogain
missing: drop
recoding: local
)";

// Which job: horizontal (3 parties), vertical (2), or vertical with a judge (the same 2 parties'
// data as kVertical, kJudgedSpec).
enum class Variant { kHorizontal, kVertical, kJudged };

const char* Tag(Variant v) {
  switch (v) {
    case Variant::kHorizontal:
      return "h";
    case Variant::kVertical:
      return "v";
    case Variant::kJudged:
      return "j";
  }
  return "?";
}

// A generated job: its spec, taxonomies, each party's files and the union (horizontal) or the
// join (vertical) the centralized run anonymizes.
struct Generated {
  std::string spec;
  std::map<std::string, std::string> taxonomies;  // "tax/<attr>.csv" -> content
  std::vector<std::map<std::string, std::string>> files;
  Table table;
};

Generated Generate(bool vertical) {
  Generated g;
  const std::string dir = FreshDir(vertical ? "ldurable_vdata" : "ldurable_hdata");
  datagen::DatagenOptions o;
  o.rows = vertical ? 600 : 900;
  o.seed = 31;
  o.out_dir = dir;
  o.parties = vertical ? 2 : 3;
  o.partition = vertical ? datagen::DatagenOptions::Partition::kVertical
                         : datagen::DatagenOptions::Partition::kHorizontal;
  EXPECT_OK(datagen::GenerateDataset(o).status());
  g.spec = vertical ? kVerticalSpec : kHorizontalSpec;
  for (const auto& e : fs::directory_iterator(dir + "/tax")) {
    g.taxonomies["tax/" + e.path().filename().string()] = SlurpFile(e.path().string());
  }
  for (int p = 0; p < o.parties; ++p) {
    auto f = g.taxonomies;
    f["table.csv"] = SlurpFile(absl::StrCat(dir, "/party", p + 1, ".csv"));
    g.files.push_back(std::move(f));
  }
  auto table = ReadCsvTable(dir + "/table.csv");
  EXPECT_TRUE(table.ok()) << table.status();
  if (table.ok()) g.table = *std::move(table);
  fs::remove_all(dir);
  return g;
}

const Generated& Data(Variant v) {
  static const Generated* horizontal = new Generated(Generate(false));
  static const Generated* joined = new Generated(Generate(true));
  static const Generated* judged = [] {
    auto* g = new Generated(*joined);
    g->spec = kJudgedSpec;
    return g;
  }();
  switch (v) {
    case Variant::kHorizontal:
      return *horizontal;
    case Variant::kVertical:
      return *joined;
    case Variant::kJudged:
      return *judged;
  }
  return *horizontal;
}

absl::StatusOr<fedanon::v1::SubmitJobRequest> Request(const Generated& g,
                                                      const std::vector<std::string>& parties) {
  ASSIGN_OR_RETURN(const fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(g.spec, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& p : parties) req.add_parties(p);
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) {
      (*req.mutable_taxonomies())[a.name()] = g.taxonomies.at(a.taxonomy());
    }
  }
  return req;
}

std::unique_ptr<DurableFederation> CreateFederation(const std::string& name, Variant v) {
  return DurableFederation::Create(name, Data(v).files, [v](const std::vector<std::string>& names) {
    return Request(Data(v), names);
  });
}

// Every step as "round attribute value records score".
std::vector<std::string> Steps(const fedanon::v1::Report& report) {
  std::vector<std::string> out;
  for (const auto& s : report.steps()) {
    out.push_back(absl::StrCat(s.round(), " ", s.attribute(), " ", s.value(), " ", s.records(), " ",
                               s.score()));
  }
  return out;
}

// What a release is compared by: its steps, group count, smallest group, discernibility ratio and
// its rows as a multiset over the centralized run's columns.
struct Release {
  std::vector<std::string> steps;
  uint64_t groups = 0;
  uint64_t smallest_group = 0;
  double discernibility_ratio = 0;
  std::vector<std::string> header;
  std::vector<std::string> rows;  // sorted
};

Release FromReport(const fedanon::v1::Report& report) {
  Release r;
  r.steps = Steps(report);
  r.groups = report.groups();
  r.smallest_group = report.smallest_group();
  r.discernibility_ratio = report.discernibility_ratio();
  return r;
}

// The centralized `recoding: local` run on the union / join.
const Release& Central(Variant v) {
  static std::map<Variant, Release>* runs = new std::map<Variant, Release>;
  if (auto it = runs->find(v); it != runs->end()) return it->second;
  const Generated& g = Data(v);
  const Job job =
      WriteJob(absl::StrCat("ldurable_", Tag(v), "central"), g.spec, g.table, g.taxonomies);
  Release& r = (*runs)[v];
  auto report = RunJob(job);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return r;
  r = FromReport(*report);
  auto table = ReadCsvTable(job.output_path);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return r;
  r.header = table->header;
  r.rows = RowsByColumns(*table, r.header);
  fs::remove_all(job.dir);
  return r;
}

// The job's release as the leader stored it (rows over the centralized run's columns).
Release Released(DurableFederation& d, const JobInfo& info, Variant v) {
  Release r = FromReport(info.report());
  auto csv = d.fed->leader->Result(info.job_id());
  EXPECT_TRUE(csv.ok()) << csv.status();
  if (!csv.ok()) return r;
  auto table = ParseCsvText(*csv, d.fed->dir);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return r;
  r.header = Central(v).header;
  r.rows = RowsByColumns(*table, r.header);
  return r;
}

void ExpectSameRelease(const Release& got, const Release& want, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.groups, want.groups);
  EXPECT_EQ(got.smallest_group, want.smallest_group);
  EXPECT_DOUBLE_EQ(got.discernibility_ratio, want.discernibility_ratio);
  EXPECT_EQ(got.rows, want.rows);
}

long Lines(const std::string& text) {
  return static_cast<long>(std::count(text.begin(), text.end(), '\n'));
}

// What each party recorded of the job: per party, its audit file's entries by kind (a job-end by
// its outcome, an answer repeated for a repeated request as "<kind> repeat"), and its run
// ledger's lines of the job ("ledger <table file> <state>").
using PartyRecords = std::map<std::string, std::map<std::string, int>>;

PartyRecords ReadPartyRecords(const DurableFederation& d, const std::string& job_id) {
  PartyRecords out;
  for (const auto& [name, o] : d.party_options) {
    std::map<std::string, int>& r = out[name];
    const std::string audit = SlurpFile(o.output_dir + "/" + job_id + ".audit.jsonl");
    for (absl::string_view line : absl::StrSplit(audit, '\n', absl::SkipEmpty())) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      EXPECT_FALSE(j.is_discarded()) << name << ": " << line;
      if (j.is_discarded()) continue;
      std::string kind = "audit " + j.value("kind", "?");
      // The same answer sent again for a repeated request is audited as a repeat.
      if (j.contains("repeat")) kind += " repeat";
      if (j.contains("success")) {
        kind += " success=" +
                (j["success"].is_string() ? j["success"].get<std::string>() : j["success"].dump());
      }
      ++r[kind];
    }
    const std::string ledger = SlurpFile(o.output_dir + "/runs.ledger");
    for (absl::string_view line : absl::StrSplit(ledger, '\n', absl::SkipEmpty())) {
      const std::vector<std::string> f = absl::StrSplit(line, '\t');
      if (f.size() == 4 && f[1] == job_id) {
        ++r[absl::StrCat("ledger ", fs::path(f[2]).filename().string(), " ", f[3])];
      }
    }
  }
  return out;
}

// An uninterrupted run: its release, its calls' kinds (CallKind, in call order), the length of
// its view log and the parties' records.
struct Clean {
  Release release;
  std::vector<std::string> kinds;
  long view_lines = 0;
  PartyRecords parties;
};

const Clean& CleanRun(Variant v) {
  static std::map<Variant, Clean>* runs = new std::map<Variant, Clean>;
  if (auto it = runs->find(v); it != runs->end()) return it->second;
  Clean& c = (*runs)[v];
  auto d = CreateFederation(absl::StrCat("ldurable_", Tag(v), "clean"), v);
  if (d == nullptr) return c;
  auto id = d->Submit();
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return c;
  const JobInfo info = d->fed->Wait(*id);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  EXPECT_EQ(info.report().recoding(), fedanon::v1::RECODING_LOCAL);
  c.release = Released(*d, info, v);
  c.kinds = d->crashing->kinds();
  auto view = d->fed->leader->ViewLogText(*id);
  EXPECT_TRUE(view.ok()) << view.status();
  if (view.ok()) c.view_lines = Lines(*view);
  ExpectDurableStateGone(*d, *id);
  c.parties = ReadPartyRecords(*d, *id);
  const std::string dir = d->fed->dir;
  d.reset();
  fs::remove_all(dir);
  return c;
}

// A crash point: the `nth` (1-based; -1: the last) call of a kind `matches` accepts, in an
// uninterrupted run.
struct CrashPoint {
  std::string name;
  Variant variant = Variant::kHorizontal;
  std::function<bool(const std::string& kind)> matches;
  int nth = 1;
};

// 1-based call number of the point, 0 when the uninterrupted run has no such call.
int CallOf(const CrashPoint& p, const std::vector<std::string>& kinds) {
  int seen = 0;
  int last = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (!p.matches(kinds[i])) continue;
    last = static_cast<int>(i + 1);
    if (++seen == p.nth) return last;
  }
  return p.nth < 0 ? last : 0;
}

// The secure sum number `collect` (its first hop, whatever its chunk).
std::function<bool(const std::string&)> Collect(uint64_t collect) {
  return [want = absl::StrCat("sum_step ", collect)](const std::string& k) { return k == want; };
}

std::function<bool(const std::string&)> Kind(const std::string& kind) {
  return [kind](const std::string& k) { return k == kind; };
}

// The last secure sum of the uninterrupted horizontal run (its collect number).
uint64_t LastCollect() {
  uint64_t last = 0;
  for (const std::string& k : CleanRun(Variant::kHorizontal).kinds) {
    if (absl::StartsWith(k, "sum_step ")) last = std::max<uint64_t>(last, std::stoull(k.substr(9)));
  }
  return last;
}

void PrintTo(const CrashPoint& p, std::ostream* os) { *os << p.name; }

class LocalDurable : public ::testing::TestWithParam<CrashPoint> {};

// kill -9 of the leader after the party answered the request at the crash point (its reply lost
// with the leader), then a new leader on the data directory as the crash left it.
TEST_P(LocalDurable, LeaderKilledResumesToTheUninterruptedAndCentralizedRelease) {
  const CrashPoint& p = GetParam();
  const Clean& clean = CleanRun(p.variant);
  ASSERT_FALSE(clean.kinds.empty());
  ExpectSameRelease(clean.release, Central(p.variant), "uninterrupted run vs centralized");
  ASSERT_GT(clean.release.groups, 3u) << "the job split nothing: the test would be vacuous";
  const int call = CallOf(p, clean.kinds);
  ASSERT_GT(call, 0) << "an uninterrupted run makes no such call: " << p.name << "\n"
                     << absl::StrJoin(clean.kinds, ", ");

  auto d = CreateFederation(absl::StrCat("ldurable_", p.name), p.variant);
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  std::string at;
  d->crashing->CrashAt(call, d->LeaderDiesAfterTheReply(snapshot, &crashed, &at));
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(180)));
  d->fed->leader.reset();  // the old process is gone
  const absl::Time restart = absl::Now();
  ASSERT_OK(d->StartLeaderOn(snapshot));
  ASSERT_OK_AND_ASSIGN(const JobInfo at_restart, d->fed->leader->Get(job_id));
  EXPECT_EQ(at_restart.state(), fedanon::v1::JOB_STATE_RUNNING);
  const JobInfo info = d->fed->Wait(job_id);
  const double resume_s = absl::ToDoubleSeconds(absl::Now() - restart);
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  EXPECT_EQ(info.report().recoding(), fedanon::v1::RECODING_LOCAL);
  EXPECT_THAT(
      info.report().warnings(),
      ::testing::Contains(::testing::HasSubstr("resumed 1 time(s) after a leader restart")));

  const Release got = Released(*d, info, p.variant);
  ExpectSameRelease(got, clean.release, "resumed run vs uninterrupted run");
  ExpectSameRelease(got, Central(p.variant), "resumed run vs centralized");
  // The replay logged no line twice: as many lines as an uninterrupted run.
  ASSERT_OK_AND_ASSIGN(const std::string view, d->fed->leader->ViewLogText(job_id));
  EXPECT_EQ(Lines(view), clean.view_lines);
  // At least the interrupted request was asked again, and every repeated request got the answer
  // the party gave the first time.
  EXPECT_GE(d->answers->repeated(), 1);
  EXPECT_THAT(d->answers->differing(), ::testing::IsEmpty());
  ExpectDurableStateGone(*d, job_id);
  // The parties' own records: besides the repeats of answers to repeated requests, the audit
  // entries of an uninterrupted run (one job-start, one job-end success=true, no step answered
  // anew), and one run in each run ledger, done.
  PartyRecords parties = ReadPartyRecords(*d, job_id);
  int repeats = 0;
  for (auto& [name, r] : parties) {
    for (auto it = r.begin(); it != r.end();) {
      if (!absl::EndsWith(it->first, " repeat")) {
        ++it;
        continue;
      }
      repeats += it->second;
      it = r.erase(it);
    }
  }
  EXPECT_LE(repeats, d->answers->repeated());
  EXPECT_EQ(parties, clean.parties);
  for (const auto& party : parties) {
    const std::string& name = party.first;
    const std::map<std::string, int>& r = party.second;
    auto n = [&r](const std::string& key) {
      const auto it = r.find(key);
      return it == r.end() ? 0 : it->second;
    };
    EXPECT_EQ(n("audit job-start"), 1) << name;
    EXPECT_EQ(n("audit job-end success=true"), 1) << name;
    EXPECT_EQ(n("ledger table.csv done"), 1) << name;
  }
  std::printf(
      "[ durable ] local %s leader crash at call %d of %zu (%s): restart to done %.3f s, %d "
      "request(s) asked again, view log %ld lines\n",
      p.name.c_str(), call, clean.kinds.size(), at.c_str(), resume_s, d->answers->repeated(),
      Lines(view));
  if (!HasFailure()) {
    const std::string dir = d->fed->dir;
    d.reset();
    fs::remove_all(dir);
  }
}

std::vector<CrashPoint> Points() {
  return {
      // Horizontal: after three secure sums (the numeric bins, the first wave's statistics), in
      // the middle of the waves, at the final check's ring, and in the union (the first and the
      // last hop: the integration of a local job).
      {"h_after_3_sums", Variant::kHorizontal, Collect(4)},
      {"h_mid_waves", Variant::kHorizontal,
       [](const std::string& k) {
         return k == absl::StrCat("sum_step ", std::max<uint64_t>(5, LastCollect() / 2));
       }},
      {"h_final_check", Variant::kHorizontal, Kind("final_check")},
      {"h_union_first_hop", Variant::kHorizontal, Kind("union_step")},
      {"h_union_last_hop", Variant::kHorizontal, Kind("union_step"), 3},
      // Vertical: the first wave after the ID matching (a party's proposals), a later wave's
      // commit, the closing wave, the release.
      {"v_first_wave", Variant::kVertical, Kind("vertical/local_propose"), 2},
      {"v_later_commit", Variant::kVertical, Kind("vertical/local_commit"), 3},
      {"v_closing_wave", Variant::kVertical, Kind("vertical/local_commit"), -1},
      {"v_release", Variant::kVertical, Kind("vertical/release"), 1},
      // Vertical with a judge: a judge's verdicts on the second wave it judges, and the
      // publication of a later wave's verdicts to the parties.
      {"j_judge", Variant::kJudged, Kind("vertical/local_judge"), 2},
      {"j_publish", Variant::kJudged, Kind("vertical/local_publish"), 3},
  };
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, LocalDurable, ::testing::ValuesIn(Points()),
                         [](const ::testing::TestParamInfo<CrashPoint>& info) {
                           return info.param.name;
                         });

class LocalDurableParty : public ::testing::TestWithParam<CrashPoint> {};

// kill -9 of the party at the crash point after it answered (its reply lost), restarted at once
// over its directories: the leader asks it again, it reloads the local job from its state file
// (the splits applied so far, its groups) and answers with what it had answered.
TEST_P(LocalDurableParty, KilledAfterAnsweringResumesToTheSameRelease) {
  const CrashPoint& p = GetParam();
  const Clean& clean = CleanRun(p.variant);
  ASSERT_FALSE(clean.kinds.empty());
  const int call = CallOf(p, clean.kinds);
  ASSERT_GT(call, 0) << p.name;
  auto d = CreateFederation(absl::StrCat("ldurable_party_", p.name), p.variant);
  ASSERT_NE(d, nullptr);
  std::string victim;
  ASSERT_OK_AND_ASSIGN(const JobInfo info,
                       d->RunWithCrash(call, d->PartyRestarts(/*after_answering=*/true, &victim)));
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_FALSE(victim.empty());
  const Release got = Released(*d, info, p.variant);
  ExpectSameRelease(got, clean.release, "after a party restart vs uninterrupted run");
  ExpectSameRelease(got, Central(p.variant), "after a party restart vs centralized");
  EXPECT_GE(d->answers->repeated(), 1);
  EXPECT_THAT(d->answers->differing(), ::testing::IsEmpty());
  ExpectDurableStateGone(*d, info.job_id());
  if (!HasFailure()) {
    const std::string dir = d->fed->dir;
    d.reset();
    fs::remove_all(dir);
  }
}

INSTANTIATE_TEST_SUITE_P(
    CrashPoints, LocalDurableParty,
    ::testing::Values(
        CrashPoint{"h_mid_waves", Variant::kHorizontal,
                   [](const std::string& k) {
                     return k ==
                            absl::StrCat("sum_step ", std::max<uint64_t>(5, LastCollect() / 2));
                   }},
        CrashPoint{"h_union_first_hop", Variant::kHorizontal, Kind("union_step")},
        CrashPoint{"v_first_wave", Variant::kVertical, Kind("vertical/local_propose"), 2},
        CrashPoint{"v_later_commit", Variant::kVertical, Kind("vertical/local_commit"), 3},
        CrashPoint{"j_judge", Variant::kJudged, Kind("vertical/local_judge"), 2}),
    [](const ::testing::TestParamInfo<CrashPoint>& info) { return info.param.name; });

}  // namespace
}  // namespace fedanon::testing
