// Horizontal federated local recoding (`recoding: local`, leader/local_job.h, party/local_party.h)
// against the centralized `fedanon anonymize` on the union: the same steps (order, values, scores,
// group sizes), the same groups and the same released rows (sorted CSV lines byte-identical; the
// federated rows arrive shuffled by the secure union), the centralized release accepted by the
// independent checker (CheckLocalPrivacy). Worked example A, random tables with every kind of
// attribute in both numeric searches over 2-5 parties, and UCI Adult's 8-QID task over 3 parties
// (skipped without ../shared). The leader's view log: every labelled per-group vector of a
// continuous attribute describes within-group bins of >= K records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/spec/job_spec_loader.h"
#include "tests/checker/brute_force_checker.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

struct Outcome {
  fedanon::v1::JobInfo info;
  Table result;
  std::string view_log;
};

Outcome RunFederated(const Scenario& s, const std::string& name) {
  Outcome out;
  auto fed = InProcessFederation::Create(name, PartyFiles(s));
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  auto req = MakeRequest(s, (*fed)->names);
  EXPECT_TRUE(req.ok()) << req.status();
  if (!req.ok()) return out;
  auto info = (*fed)->Submit(*req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  out.info = (*fed)->Wait(info->job_id());
  auto log = (*fed)->leader->ViewLogText(info->job_id());
  if (log.ok()) out.view_log = *log;
  if (out.info.state() == fedanon::v1::JOB_STATE_DONE) {
    auto csv = (*fed)->leader->Result(info->job_id());
    EXPECT_TRUE(csv.ok()) << csv.status();
    if (csv.ok()) {
      auto t = ParseCsvText(*csv, (*fed)->dir);
      EXPECT_TRUE(t.ok()) << t.status();
      if (t.ok()) out.result = *t;
    }
  }
  return out;
}

// Every labelled per-group vector of a continuous attribute (local_numeric_split) holds bins of
// >= k records (its words are [count, classes, sensitive] per bin, `width` each); returns how many
// such vectors there were.
size_t CheckWithinGroupBins(const std::string& view_log, size_t width, uint64_t k) {
  size_t vectors = 0;
  for (absl::string_view line : absl::StrSplit(view_log, '\n', absl::SkipEmpty())) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << line;
    if (j.is_discarded() || j.value("kind", "") != "local_numeric_split") continue;
    ++vectors;
    std::vector<uint64_t> counts;
    for (const auto& c : j.value("counts", nlohmann::json::array())) {
      counts.push_back(c.get<uint64_t>());
    }
    EXPECT_EQ(counts.size() % width, 0u) << line;
    for (size_t i = 0; i + width <= counts.size(); i += width) {
      EXPECT_GE(counts[i], k) << "a labelled within-group bin of fewer than K records: " << line;
    }
  }
  return vectors;
}

// How many view-log lines of each kind, and the sum of the released counts' words.
struct ViewKinds {
  std::map<std::string, size_t> lines;
  uint64_t released_count_sum = 0;
};
ViewKinds KindsOf(const std::string& view_log) {
  ViewKinds out;
  for (absl::string_view line : absl::StrSplit(view_log, '\n', absl::SkipEmpty())) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << line;
    if (j.is_discarded()) continue;
    const std::string kind = j.value("kind", "");
    ++out.lines[kind];
    if (kind != "released_counts") continue;
    for (const auto& c : j.value("counts", nlohmann::json::array())) {
      out.released_count_sum += c.get<uint64_t>();
    }
  }
  return out;
}

// Runs the centralized engine on the union, checks it with the independent checker, and checks
// the federated run against it.
Outcome ExpectSameAsCentralized(const Scenario& s, const std::string& name) {
  std::map<std::string, std::string> tax_files;
  for (const auto& [file, text] : s.taxonomies) tax_files[file] = text;
  const Job job = WriteJob(name + "_central", s.spec_yaml, s.table, tax_files);
  auto central_or = RunJob(job);
  EXPECT_TRUE(central_or.ok()) << central_or.status();
  if (!central_or.ok()) return {};
  const fedanon::v1::Report central = *central_or;
  auto central_out = ReadCsvTable(job.output_path);
  EXPECT_TRUE(central_out.ok()) << central_out.status();
  if (!central_out.ok()) return {};
  auto in = MakeCheckerInput(job);
  EXPECT_TRUE(in.ok()) << in.status();
  if (in.ok()) {
    const PrivacyCheck check = CheckLocalPrivacy(*in);
    EXPECT_TRUE(check.satisfied) << check.violation;
  }

  Outcome fed = RunFederated(s, name);
  EXPECT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();
  if (fed.info.state() != fedanon::v1::JOB_STATE_DONE) return fed;
  const auto& report = fed.info.report();
  EXPECT_EQ(report.recoding(), fedanon::v1::RECODING_LOCAL);
  EXPECT_EQ(report.steps_size(), central.steps_size());
  for (int i = 0; i < std::min(central.steps_size(), report.steps_size()); ++i) {
    EXPECT_EQ(report.steps(i).attribute(), central.steps(i).attribute()) << "step " << i;
    EXPECT_EQ(report.steps(i).value(), central.steps(i).value()) << "step " << i;
    EXPECT_DOUBLE_EQ(report.steps(i).score(), central.steps(i).score()) << "step " << i;
    EXPECT_EQ(report.steps(i).records(), central.steps(i).records()) << "step " << i;
  }
  EXPECT_EQ(report.smallest_group(), central.smallest_group());
  EXPECT_EQ(report.groups(), central.groups());
  EXPECT_DOUBLE_EQ(report.discernibility_ratio(), central.discernibility_ratio());
  EXPECT_EQ(fed.result.header, central_out->header);
  EXPECT_EQ(RowsByColumns(fed.result, central_out->header),
            RowsByColumns(*central_out, central_out->header));
  EXPECT_EQ(fed.result.rows.size(), s.table.rows.size());
  std::filesystem::remove_all(job.dir);
  return fed;
}

Scenario LocalExampleA() {
  Scenario s = ExampleA();
  s.spec_yaml += "recoding: local\n";
  return s;
}

TEST(LocalRecodingFederation, ExampleAThreeHospitalsEqualsCentralized) {
  const Outcome fed = ExpectSameAsCentralized(LocalExampleA(), "fed_local_a");
  EXPECT_THAT(fed.info.report().final_check(),
              ::testing::StartsWith("passed at every data party: 3 parties re-checked"));
  // Surgery declares no values: the released counts do not apply, the sealed rows travel the
  // secure union.
  const ViewKinds kinds = KindsOf(fed.view_log);
  EXPECT_EQ(kinds.lines.count("released_counts"), 0u);
  EXPECT_EQ(kinds.lines.count("released_rows"), 1u);
}

// Random tables with every kind of attribute, both numeric searches, split at random over 2-5
// parties.
Scenario RandomScenario(uint64_t seed) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 11;
  auto next = [&state](int n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<int>(state % static_cast<uint64_t>(n));
  };
  Scenario s;
  std::string attrs;
  const int nq = 2 + next(3);
  std::vector<int> kinds;
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    s.table.header.push_back(name);
    kinds.push_back(next(3));
    if (kinds.back() == 0) {
      std::string tax;
      for (int v = 0; v < 6; ++v) {
        absl::StrAppend(&tax, name, "val", v, ";", name, "grp", v / 3, ";ANY\n");
      }
      s.taxonomies[name + ".csv"] = tax;
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, taxonomy: ", name, ".csv}\n");
    } else if (kinds.back() == 1) {
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, values: [", name, "s0, ", name,
                      "s1, ", name, "s2, ", name, "s3]}\n");
    } else {
      absl::StrAppend(&attrs, "  - {name: ", name,
                      ", role: qid, type: continuous, range: [0, 40], precision: 1}\n");
    }
  }
  s.table.header.push_back("cls");
  s.table.header.push_back("sens");
  const int rows = 60 + next(200);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (int q = 0; q < nq; ++q) {
      const std::string& h = s.table.header[q];
      if (kinds[q] == 0) {
        row.push_back(absl::StrCat(h, "val", next(6)));
      } else if (kinds[q] == 1) {
        row.push_back(absl::StrCat(h, "s", next(4)));
      } else {
        row.push_back(absl::StrCat(next(40)));
      }
    }
    row.push_back(next(10) < 7 ? (row[0].back() % 2 ? "yes" : "no") : (next(2) ? "yes" : "no"));
    row.push_back(absl::StrCat("d", next(4)));
    s.table.rows.push_back(row);
  }
  absl::StrAppend(&attrs, "  - {name: cls, role: class, values: [yes, no]}\n",
                  "  - {name: sens, role: sensitive, values: [d0, d1, d2, d3]}\n");
  static const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};
  // Every fifth seed scores by the thesis's minimal distortion (Eq. 6.1, §5.5); the expression is
  // otherwise the one it was, so the other seeds' scenarios stay what they were.
  s.spec_yaml = absl::StrCat(
      "name: random-local\nattributes:\n", attrs, "privacy: {model: lkc, L: ", 1 + next(nq),
      ", K: ", 2 + next(8),
      ", C: 0.9, sensitive_values: [d0]}\nscore: ", seed % 5 == 0 ? "distortion" : kScores[next(4)],
      "\nnumeric_split: ", seed % 3 == 0 ? "exact" : "binned",
      "\npartitioning: horizontal\nrecoding: local\n");
  const int parties = 2 + next(4);
  s.split.assign(parties, {});
  for (int r = 0; r < rows; ++r) s.split[r < parties ? r : next(parties)].push_back(r);
  return s;
}

class LocalRecodingFederationRandom : public ::testing::TestWithParam<int> {};

TEST_P(LocalRecodingFederationRandom, EqualsCentralizedOnTheUnion) {
  const Scenario s = RandomScenario(GetParam());
  SCOPED_TRACE(s.spec_yaml);
  const Outcome fed = ExpectSameAsCentralized(s, absl::StrCat("fed_local_rand_", GetParam()));
  // The view-log rule: labelled within-group bins hold >= K records (K = the spec's K here).
  auto spec = spec::ParseJobSpecYaml(s.spec_yaml, "job.yaml");
  ASSERT_OK(spec.status());
  CheckWithinGroupBins(fed.view_log, 1 + 2 + 1, spec->privacy().k());
}

INSTANTIATE_TEST_SUITE_P(Seeds, LocalRecodingFederationRandom, ::testing::Range(1, 25));

// Every non-QID value declared and the leader the recipient: ONE secure sum of the released
// counts per (final group, value combination) integrates the table (one view-log line per final
// group, no sealed rows), and the rows equal the centralized run's, over 3 parties and over 2
// (where no final check runs).
TEST(LocalRecodingFederation, DeclaredDomainsIntegrateByReleasedCountsOverThreeAndTwoParties) {
  for (const int parties : {3, 2}) {
    for (const int seed : {4, 7}) {
      Scenario s = RandomScenario(seed);
      s.split.assign(parties, {});
      for (size_t r = 0; r < s.table.rows.size(); ++r) {
        s.split[r % parties].push_back(static_cast<int>(r));
      }
      SCOPED_TRACE(absl::StrCat(parties, " parties, seed ", seed, "\n", s.spec_yaml));
      const Outcome fed =
          ExpectSameAsCentralized(s, absl::StrCat("fed_local_counts_", parties, "_", seed));
      ASSERT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();
      const ViewKinds kinds = KindsOf(fed.view_log);
      EXPECT_EQ(kinds.lines.count("released_rows"), 0u) << "sealed rows although counts apply";
      ASSERT_EQ(kinds.lines.count("released_counts"), 1u);
      EXPECT_EQ(kinds.lines.at("released_counts"), fed.info.report().groups())
          << "one line per final group";
      EXPECT_EQ(kinds.released_count_sum, s.table.rows.size());
      if (parties == 3) {
        EXPECT_THAT(fed.info.report().final_check(),
                    ::testing::StartsWith("passed at every data party: 3 parties"));
      } else {
        EXPECT_THAT(fed.info.report().final_check(),
                    ::testing::StartsWith("passed at both data parties: "));
      }
    }
  }
}

// UCI Adult, the 8-QID task at k = 50, split over 3 parties (skipped without the data).
TEST(LocalRecodingFederation, AdultEightQidsEqualsCentralized) {
  const std::string dir = SharedDir() + "/datasets/adult";
  if (!std::filesystem::exists(dir + "/adult_clean.csv")) {
    GTEST_SKIP() << "UCI Adult not found in " << dir;
  }
  auto raw = ReadCsvTable(dir + "/adult_clean.csv");
  ASSERT_OK(raw.status());
  Scenario s;
  const std::vector<std::string> keep = {"age",   "education", "marital-status", "occupation",
                                         "race",  "sex",       "native-country", "workclass",
                                         "income"};
  s.table.header = keep;
  std::vector<int> idx;
  for (const auto& c : keep) {
    idx.push_back(static_cast<int>(std::find(raw->header.begin(), raw->header.end(), c) -
                                   raw->header.begin()));
    ASSERT_LT(idx.back(), static_cast<int>(raw->header.size())) << c;
  }
  for (const auto& row : raw->rows) {
    std::vector<std::string> out;
    for (int i : idx) out.push_back(row[i]);
    s.table.rows.push_back(std::move(out));
  }
  std::string attrs =
      "  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}\n";
  for (const char* a : {"education", "marital-status", "occupation", "race", "sex",
                        "native-country", "workclass"}) {
    std::ifstream f(dir + "/arx-hierarchies/adult_hierarchy_" + std::string(a) + ".csv");
    if (!f) GTEST_SKIP() << "no ARX hierarchy for " << a;
    std::stringstream ss;
    ss << f.rdbuf();
    s.taxonomies[std::string(a) + ".csv"] = ss.str();
    absl::StrAppend(&attrs, "  - {name: ", a, ", role: qid, taxonomy: ", a, ".csv}\n");
  }
  attrs += "  - {name: income, role: class, values: [\"<=50K\", \">50K\"]}\n";
  s.spec_yaml = absl::StrCat("name: adult-local\nattributes:\n", attrs,
                             "privacy:\n  model: templates\n  templates:\n"
                             "    - {qid: [age, education, marital-status, occupation, race, sex, "
                             "native-country, workclass], k: 50}\npartitioning: horizontal\n"
                             "recoding: local\n");
  s.split.assign(3, {});
  for (size_t r = 0; r < s.table.rows.size(); ++r) s.split[r % 3].push_back(static_cast<int>(r));
  const Outcome fed = ExpectSameAsCentralized(s, "fed_local_adult");
  EXPECT_GT(CheckWithinGroupBins(fed.view_log, 1 + 2, 50), 0u);
}

}  // namespace
}  // namespace fedanon::testing
