// The leader's view log is complete for local recoding (`recoding: local`, issue #31): a
// horizontal 3-party local job runs with the leader behind the capturing PartyChannel of
// tests/federation/leader_capture.h, which records, independently of the leader, every vector the
// leader decodes (secure sums opened with the leader's keys and unmasked). The test splits each
// captured vector into parts with its own walk of the local layout (docs/threat-model.md, the five
// local kinds: per group `local_group`, then per QID `local_candidate_counts`, `local_bin_counts`
// or `local_rank_histogram`; per range query `local_numeric_split`; the integration's
// `released_counts` per final group, every non-QID value being declared), naming the group from the
// request, and checks that the view log holds exactly these parts (round, kind, attribute,
// labelled, group, counts) — every value the leader learned is logged, nothing logged is missing
// from the capture. Both numeric searches: binned (the default) and exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/engine/count_source.h"
#include "common/engine/local_recoding.h"
#include "common/engine/numeric_split.h"
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
  std::string node;  // "group N" for the local kinds
  std::vector<uint64_t> counts;
  auto Key() const { return std::tie(round, kind, attribute, labelled, node, counts); }
  bool operator<(const Part& o) const { return Key() < o.Key(); }
  bool operator==(const Part& o) const { return Key() == o.Key(); }
};

std::string Describe(const Part& p) {
  std::ostringstream s;
  s << "round " << p.round << " " << p.kind << " attribute '" << p.attribute << "' labelled "
    << p.labelled << " node '" << p.node << "' counts[" << p.counts.size() << "]";
  return s.str();
}

// The view log as parts (tests/support/view_log_parts.h), the group named by `node`.
std::vector<Part> ParseViewLog(const std::string& text) {
  std::vector<Part> parts;
  for (const ViewLogLine& l : ReadViewLogLines(text)) {
    Part p;
    p.round = l.round;
    p.kind = l.kind;
    p.attribute = l.attribute;
    p.labelled = l.labelled;
    p.node = l.json.value("node", "");
    p.counts = l.counts;
    parts.push_back(std::move(p));
  }
  return parts;
}

engine::LocalValue FromProto(const fedanon::v1::LocalValue& v) {
  return {v.node(), v.lo(), v.hi()};
}

// The parts of the captured secure sums. The fine map is rebuilt from the bins the leader
// announced (StateUpdate.local_setup, riding along with a sum) as a party rebuilds it; each local
// request's vector is walked group by group with the layout of docs/threat-model.md.
std::vector<Part> PartsOfSums(const std::vector<DecodedSum>& sums, const table::Dataset& schema,
                              bool binned) {
  std::vector<Part> parts;
  std::unique_ptr<engine::LocalFineMap> fine;
  const size_t width =
      1 + static_cast<size_t>(std::max(1, schema.num_classes())) + schema.tracked.size();
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  for (const DecodedSum& sum : sums) {
    for (const auto& u : sum.updates) {
      if (!u.has_local_setup()) continue;
      EXPECT_EQ(fine, nullptr) << "bins announced twice";
      std::vector<std::vector<int32_t>> bins(schema.qids.size());
      for (int a = 0; a < u.local_setup().bins_size(); ++a) {
        bins[a].assign(u.local_setup().bins(a).bounds().begin(),
                       u.local_setup().bins(a).bounds().end());
      }
      fine = std::make_unique<engine::LocalFineMap>(&schema, binned, std::move(bins));
    }
    DecodedWords decoded(sum.total);
    auto add = [&](std::string kind, std::string attribute, bool labelled, std::string node,
                   size_t words) {
      std::optional<std::vector<uint64_t>> counts = decoded.Take(words);
      if (!counts) return;
      parts.push_back({sum.round, std::move(kind), std::move(attribute), labelled, std::move(node),
                       *std::move(counts)});
    };
    if (sum.request.has_local()) {
      EXPECT_NE(fine, nullptr) << "a local request before the bins were announced";
      if (fine == nullptr) continue;
      for (const auto& g : sum.request.local().groups()) {
        const std::string node = absl::StrCat("group ", g.group());
        add("local_group", "", true, node, width);
        EXPECT_EQ(static_cast<size_t>(g.key_size()), schema.qids.size());
        for (int a = 0; a < g.key_size(); ++a) {
          const int count = fine->FineCount(a, FromProto(g.key(a)));
          if (count == 0) continue;
          const bool continuous = schema.qids[a].kind == table::QidKind::kContinuous;
          if (continuous && binned) {
            add("local_bin_counts", schema.qids[a].name, false, node, static_cast<size_t>(count));
          } else {
            add(continuous ? "local_rank_histogram" : "local_candidate_counts", schema.qids[a].name,
                true, node, static_cast<size_t>(count) * width);
          }
        }
      }
      // The integration by released counts: per final group, one word per value combination.
      for (const auto& g : sum.request.local().released_groups()) {
        add("released_counts", "", sum.request.local().released_combinations() > 1,
            absl::StrCat("group ", g.group()), sum.request.local().released_combinations());
      }
      for (const auto& r : sum.request.local().ranges()) {
        EXPECT_GE(r.bounds_size(), 2);
        add("local_numeric_split", schema.qids[r.attribute()].name, true,
            absl::StrCat("group ", r.group().group()),
            static_cast<size_t>(r.bounds_size() - 1) * width);
      }
    } else {  // the public-cell counts of a continuous attribute (RangeCounts)
      auto request = wire::FromProto(sum.request, hier);
      EXPECT_TRUE(request.ok()) << request.status();
      if (!request.ok()) continue;
      EXPECT_TRUE(request->node_class_counts.empty() && request->group_keys.empty() &&
                  request->rank_histograms.empty())
          << "a global statistic in a local job";
      for (const auto& r : request->range_counts) {
        EXPECT_FALSE(r.labelled) << "labelled global bins in a local job";
        add("numeric_split_cells", schema.qids[r.attr].name, false, "", r.bounds.size() - 1);
      }
      for (size_t g = 0; g < request->released_groups.size(); ++g) {
        add("released_counts", "", request->released_combinations > 1, "",
            request->released_combinations);
      }
    }
    EXPECT_EQ(decoded.taken(), sum.total.size()) << "a decoded vector longer than its request";
  }
  return parts;
}

// Two continuous QIDs, two taxonomies, a suppression attribute (`region`, no taxonomy), a
// sensitive attribute with a confidence bound.
constexpr char kSpec[] = R"(name: local-view-log
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: job, role: qid, taxonomy: job.csv}
  - {name: region, role: qid, values: [north, south, east]}
  - {name: hours, role: qid, type: continuous, range: [0, 80], precision: 1}
  - {name: disease, role: sensitive, values: [flu, hiv, none]}
  - {name: class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 10, C: 0.6, sensitive_values: [hiv]}
partitioning: horizontal
recoding: local
)";

// 900 records dealt over 3 parties; the class depends on age and job.
Table MakeTable() {
  static const char* jobs[] = {"Janitor", "Mover",      "Carpenter", "Technician",
                               "Manager", "Accountant", "Lawyer"};
  static const char* regions[] = {"north", "south", "east"};
  uint64_t state = 0x31d1f00dULL;
  Table t;
  t.header = {"age", "sex", "job", "region", "hours", "disease", "class"};
  for (int r = 0; r < 900; ++r) {
    const int age = 18 + static_cast<int>(NextRandom(&state) % 60);
    const int job = static_cast<int>(NextRandom(&state) % 7);
    const int hours = 10 + static_cast<int>(NextRandom(&state) % 60);
    const uint64_t d = NextRandom(&state) % 10;
    const bool y =
        (age > 40) != (job >= 4) ? NextRandom(&state) % 4 == 0 : NextRandom(&state) % 4 != 0;
    t.rows.push_back({absl::StrCat(age), NextRandom(&state) % 2 ? "Male" : "Female", jobs[job],
                      regions[NextRandom(&state) % 3], absl::StrCat(hours),
                      d == 0 ? "hiv" : (d < 4 ? "flu" : "none"), y ? "Y" : "N"});
  }
  return t;
}

// Runs the local job behind the capture and compares the view log with what was captured;
// returns how many lines of each kind the log held.
std::map<std::string, int> RunAndCompare(const std::string& name, const std::string& extra_spec) {
  std::map<std::string, int> kinds;
  const Table table = MakeTable();
  auto fed_or = InProcessFederation::Create(name, DealRows(table, 3));
  EXPECT_TRUE(fed_or.ok()) << fed_or.status();
  if (!fed_or.ok()) return kinds;
  auto& fed = *fed_or;

  RecordingChannel recorder(&fed->channel);
  crypto::IssuedCertificate seal;
  auto captured = CapturedLeader(*fed, &recorder, &seal);
  EXPECT_TRUE(captured.ok()) << captured.status();
  if (!captured.ok()) return kinds;
  fed->leader = std::move(*captured);
  const absl::Status opens = OpenSumsAsTheLeader(*fed, seal, &recorder);
  EXPECT_TRUE(opens.ok()) << opens;
  if (!opens.ok()) return kinds;

  auto spec = spec::ParseJobSpecYaml(std::string(kSpec) + extra_spec, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return kinds;
  std::map<std::string, std::string> texts;
  const fedanon::v1::SubmitJobRequest req = ViewLogRequest(*spec, fed->names, &texts);
  auto submitted = fed->Submit(req);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return kinds;
  const fedanon::v1::JobInfo info = fed->Wait(submitted->job_id());
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  EXPECT_EQ(info.report().recoding(), fedanon::v1::RECODING_LOCAL);
  auto view_log = fed->leader->ViewLogText(submitted->job_id());
  EXPECT_TRUE(view_log.ok()) << view_log.status();
  auto csv = fed->leader->Result(submitted->job_id());
  EXPECT_TRUE(csv.ok()) << csv.status();
  if (!view_log.ok() || !csv.ok()) return kinds;
  auto released = ParseCsvText(*csv, fed->dir);
  EXPECT_TRUE(released.ok()) << released.status();
  fed->leader.reset();  // before the recorder goes away

  auto schema = table::BuildPublicSchema(*spec, texts);
  EXPECT_TRUE(schema.ok()) << schema.status();
  if (!schema.ok()) return kinds;
  const bool binned = engine::NumericSplitFromSpec(*spec).binned();
  const std::vector<DecodedSum> sums = recorder.Sums();
  EXPECT_GT(sums.size(), 3u);
  std::vector<Part> expected = PartsOfSums(sums, *schema, binned);
  // Every non-QID value is declared: the table is integrated by the released counts per (final
  // group, value combination), captured above; no sealed rows.
  EXPECT_GT(info.report().steps_size(), 5);
  if (released.ok()) {
    EXPECT_EQ(released->rows.size(), table.rows.size());
  }
  const std::vector<Part> logged = ParseViewLog(*view_log);
  ExpectSameParts(logged, expected, Describe);

  for (const Part& p : logged) {
    ++kinds[p.kind];
    // The numeric split rule inside a group: every labelled within-group bin holds >= K records.
    if (p.kind == "local_numeric_split") {
      for (size_t i = 0; i < p.counts.size(); i += 4) EXPECT_GE(p.counts[i], kK) << Describe(p);
    }
    // Every group the leader learned is a group of >= K records, its words [count, classes (2),
    // sensitive (1)] consistent.
    if (p.kind == "local_group") {
      EXPECT_EQ(p.counts.size(), 4u) << Describe(p);
      if (p.counts.size() != 4) continue;
      EXPECT_GE(p.counts[0], kK) << Describe(p);
      EXPECT_EQ(p.counts[1] + p.counts[2], p.counts[0]) << Describe(p);
    }
  }
  return kinds;
}

TEST(LocalViewLog, BinnedLocalJobLogsExactlyWhatTheLeaderDecoded) {
  std::map<std::string, int> kinds = RunAndCompare("local_view_binned", "");
  EXPECT_EQ(kinds["numeric_split_cells"], 2) << "once per continuous attribute";
  EXPECT_GT(kinds["local_group"], 1);
  EXPECT_GT(kinds["local_candidate_counts"], 0);
  EXPECT_GT(kinds["local_bin_counts"], 0);
  EXPECT_GT(kinds["local_numeric_split"], 0);
  EXPECT_EQ(kinds["local_rank_histogram"], 0) << "the binned search decodes no per-rank counts";
  EXPECT_GT(kinds["released_counts"], 1) << "one per final group";
  EXPECT_EQ(kinds["released_rows"], 0);
  for (const char* global :
       {"candidate_counts", "group_counts", "numeric_split", "numeric_rank_histogram"}) {
    EXPECT_EQ(kinds[global], 0) << global << " in a local job";
  }
}

TEST(LocalViewLog, ExactLocalJobLogsExactlyWhatTheLeaderDecoded) {
  std::map<std::string, int> kinds = RunAndCompare("local_view_exact", "numeric_split: exact\n");
  EXPECT_GT(kinds["local_group"], 1);
  EXPECT_GT(kinds["local_candidate_counts"], 0);
  EXPECT_GT(kinds["local_rank_histogram"], 0);
  EXPECT_EQ(kinds["local_bin_counts"], 0);
  EXPECT_EQ(kinds["local_numeric_split"], 0);
  EXPECT_GT(kinds["released_counts"], 1) << "one per final group";
  EXPECT_EQ(kinds["released_rows"], 0);
}

}  // namespace
}  // namespace fedanon::testing
