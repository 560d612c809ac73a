// Random small sequential releases with 2 and 3 previous releases (thesis §6.5, the star join of
// T1 with T2, ..., Tp), every output confirmed by the brute-force checker of join_checker.h (no
// engine code), which materializes the star join itself. All releases are projections of one
// random underlying table: T1 = (Pid, A, J, S, Cls[, G]), T2 = (J, Z, D[, G]) joins on J (and G),
// T3 = (A, W) joins on A, T4 = (J, V) joins on J; T2, T3 and T4 sometimes hold generalized join
// values; inconsistency rules name a previous release explicitly or by column. For every run:
//  * refused runs: the most general T1 really violates a template on the star join;
//  * the output is truthful and every template holds on the materialized star join, with the
//    report's smallest group / largest confidence equal to the checker's;
//  * the output is maximal: specializing any one remaining taxonomy value (towards the raw
//    values) violates some template on the materialized star join.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/common/sequential/join_checker.h"
#include "tests/common/sequential/seq_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

const char kTaxA[] = "a1;A1;ANY_A\na2;A1;ANY_A\na3;A2;ANY_A\na4;A2;ANY_A\n";
const char kTaxJ[] = "j1;J1;ANY_J\nj2;J1;ANY_J\nj3;J2;ANY_J\nj4;J2;ANY_J\nj5;J2;ANY_J\n";

struct Template {
  bool anonymity;
  std::vector<std::string> x, y;  // y: anonymity; y[0] = attribute for confidentiality
  uint64_t k = 1;
  std::string value;
  double max = 1;
};

struct Case {
  Table t1;
  std::vector<Table> previous;
  bool with_g = false;
  std::vector<seqcheck::StarRule> rules;
  std::vector<Template> templates;
  std::string spec;
};

template <typename T>
const T& Pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

std::string Generalized(std::mt19937& rng, bool generalize, int index, const char* letter) {
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  if (generalize && coin(0.1)) return absl::StrCat("ANY_", absl::AsciiStrToUpper(letter));
  if (generalize && coin(0.4)) {
    const int group = letter[0] == 'a' ? (index < 2 ? 1 : 2) : (index < 2 ? 1 : 2);
    return absl::StrCat(absl::AsciiStrToUpper(letter), group);
  }
  return absl::StrCat(letter, 1 + index);
}

Case MakeCase(std::mt19937& rng, int releases) {
  Case c;
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  c.with_g = coin(0.4);
  const int n = 5 + pick(releases == 2 ? 14 : 9);
  const bool gen2 = coin(0.3), gen3 = coin(0.3), gen4 = coin(0.3);
  c.t1.header = {"Pid", "A", "J", "S", "Cls"};
  Table t2, t3, t4;
  t2.header = {"J", "Z", "D"};
  t3.header = {"A", "W"};
  t4.header = {"J", "V"};
  if (c.with_g) {
    c.t1.header.push_back("G");
    t2.header.push_back("G");
  }
  const int patients = 1 + n * 2 / 3;
  // Rules per pair; the underlying table obeys them, so every pair stays population-related.
  const bool rule_az = coin(0.3), rule_aj = coin(0.3), rule_jw = coin(0.3);
  const bool rule_sv = releases == 3 && coin(0.3);
  if (rule_az) c.rules.push_back({{"A", "A1", "Z", "z1"}, 0});  // by column
  if (rule_aj) c.rules.push_back({{"A", "a3", "J", "J2"}, 1});  // previous1.J
  if (rule_jw) c.rules.push_back({{"J", "J1", "W", "w1"}, 2});  // previous2.W
  if (rule_sv) c.rules.push_back({{"S", "s2", "V", "v2"}, 0});  // unchanged S
  for (int i = 0; i < n; ++i) {
    const int a = pick(4);
    const int j = rule_aj && a == 2 ? pick(2) : pick(5);
    const int z = rule_az && a < 2 ? 1 + pick(2) : pick(3);
    const int w = rule_jw && j < 2 ? 1 + pick(2) : pick(3);
    const int s = pick(3);
    const int v = rule_sv && s == 1 ? (coin(0.5) ? 0 : 2) : pick(3);
    const std::string g = absl::StrCat("g", 1 + pick(2));
    std::vector<std::string> r1 = {absl::StrCat("p", pick(patients)), absl::StrCat("a", 1 + a),
                                   absl::StrCat("j", 1 + j), absl::StrCat("s", 1 + s),
                                   coin(0.5) ? "Y" : "N"};
    std::vector<std::string> r2 = {Generalized(rng, gen2, j, "j"), absl::StrCat("z", 1 + z),
                                   absl::StrCat("d", 1 + pick(3))};
    if (c.with_g) {
      r1.push_back(g);
      r2.push_back(g);
    }
    c.t1.rows.push_back(r1);
    t2.rows.push_back(r2);
    t3.rows.push_back({Generalized(rng, gen3, a, "a"), absl::StrCat("w", 1 + w)});
    t4.rows.push_back({Generalized(rng, gen4, j, "j"), absl::StrCat("v", 1 + v)});
  }
  c.t1.rows[0][3] = "s1";  // the sensitive values of confidentiality templates occur
  t2.rows[0][2] = "d1";
  t3.rows[0][1] = rule_jw && c.t1.rows[0][2] < "j3" ? t3.rows[0][1] : "w1";
  // (the first record keeps its W when a rule forbids w1 for it; w1 then may not occur)
  std::shuffle(t2.rows.begin(), t2.rows.end(), rng);
  std::shuffle(t3.rows.begin(), t3.rows.end(), rng);
  std::shuffle(t4.rows.begin(), t4.rows.end(), rng);
  c.previous = {t2, t3};
  if (releases == 3) c.previous.push_back(t4);

  std::vector<std::string> xs = {"current.A",   "current.J",   "previous1.J",
                                 "previous1.Z", "previous2.A", "previous2.W"};
  if (c.with_g) xs.push_back("previous1.G");
  if (releases == 3) xs.push_back("previous3.J");
  bool w1_occurs = false;
  for (const auto& r : t3.rows) w1_occurs |= r[1] == "w1";
  const int num = 1 + pick(2);
  for (int t = 0; t < num; ++t) {
    Template tp;
    tp.anonymity = coin(0.6);
    for (const auto& x : xs) {
      if (coin(0.4)) tp.x.push_back(x);
    }
    if (tp.x.empty()) tp.x.push_back(Pick(rng, xs));
    if (tp.anonymity) {
      std::vector<std::vector<std::string>> ys = {
          {"current.@record"},
          {"previous1.@record"},
          {"previous2.@record"},
          {"current.@record", "previous1.@record", "previous2.@record"},
          {"current.Pid"},
          {"previous1.D"},
          {"current.S", "previous2.W"},
          {"current.Pid", "previous2.@record"}};
      if (releases == 3) ys.push_back({"previous1.D", "previous3.V"});
      tp.y = Pick(rng, ys);
      // previous2.W cannot be both in x and y
      if (std::find(tp.y.begin(), tp.y.end(), "previous2.W") != tp.y.end()) {
        tp.x.erase(std::remove(tp.x.begin(), tp.x.end(), "previous2.W"), tp.x.end());
        if (tp.x.empty()) tp.x.push_back("current.A");
      }
      tp.k = 1 + pick(releases == 2 ? 6 : 8);
    } else {
      const int which = pick(w1_occurs ? 3 : 2);
      tp.y = {which == 0 ? "current.S" : which == 1 ? "previous1.D" : "previous2.W"};
      tp.value = which == 0 ? "s1" : which == 1 ? "d1" : "w1";
      tp.x.erase(std::remove(tp.x.begin(), tp.x.end(), tp.y[0]), tp.x.end());
      if (tp.x.empty()) tp.x.push_back("current.A");
      tp.max = Pick(rng, std::vector<double>{0.4, 0.5, 0.6, 0.75, 0.9});
    }
    c.templates.push_back(tp);
  }

  std::string spec = "attributes:\n";
  spec += "  - {name: Pid, role: id}\n";
  spec += "  - {name: A, role: qid, taxonomy: a.csv}\n";
  spec += "  - {name: J, role: qid, taxonomy: j.csv}\n";
  spec += "  - {name: S, role: sensitive}\n";
  spec += "  - {name: Cls, role: class}\n";
  if (c.with_g) spec += "  - {name: G, role: other}\n";
  spec += "sequential:\n";
  std::string anon, conf;
  for (const Template& t : c.templates) {
    if (t.anonymity) {
      anon += absl::StrCat("    - {x: [", absl::StrJoin(t.x, ", "), "], y: [",
                           absl::StrJoin(t.y, ", "), "], k: ", t.k, "}\n");
    } else {
      conf += absl::StrCat("    - {x: [", absl::StrJoin(t.x, ", "), "], attribute: ", t.y[0],
                           ", sensitive_values: [", t.value, "], max: ", t.max, "}\n");
    }
  }
  if (!c.rules.empty()) {
    spec += "  inconsistent:\n";
    for (const auto& sr : c.rules) {
      const auto& r = sr.rule;
      const std::string previous =
          sr.release == 0 ? r.previous : absl::StrCat("previous", sr.release, ".", r.previous);
      spec += absl::StrCat("    - {current: ", r.current, ", current_value: ", r.current_value,
                           ", previous: ", previous, ", previous_value: ", r.previous_value, "}\n");
    }
  }
  if (!anon.empty()) spec += "  anonymity:\n" + anon;
  if (!conf.empty()) spec += "  confidentiality:\n" + conf;
  if (coin(0.3)) spec += "score: infogain_privloss\n";
  c.spec = spec;
  return c;
}

struct Evaluation {
  uint64_t smallest = 0;
  double largest = 0;
  bool ok = true;
};

Evaluation Evaluate(const Case& c, const seqcheck::Release& t1) {
  const seqcheck::Taxonomies tax = {{"J", seqcheck::ParseParents(kTaxJ)},
                                    {"A", seqcheck::ParseParents(kTaxA)}};
  std::vector<seqcheck::Release> previous;
  for (const Table& t : c.previous) previous.push_back({t.header, t.rows});
  const auto join = seqcheck::StarJoin(t1, previous, tax, c.rules);
  Evaluation e;
  bool first = true;
  for (const Template& t : c.templates) {
    std::vector<seqcheck::StarRef> x;
    for (const auto& s : t.x) x.push_back(seqcheck::ParseStarRef(s));
    if (t.anonymity) {
      std::vector<seqcheck::StarRef> y;
      for (const auto& s : t.y) y.push_back(seqcheck::ParseStarRef(s));
      const uint64_t a = seqcheck::StarAnonymity(t1, previous, join, x, y);
      e.smallest = first ? a : std::min(e.smallest, a);
      first = false;
      e.ok &= a >= t.k;
    } else {
      const double conf = seqcheck::StarConfidence(t1, previous, join, x,
                                                   seqcheck::ParseStarRef(t.y[0]), {t.value});
      e.largest = std::max(e.largest, conf);
      e.ok &= conf <= t.max + 1e-12;
    }
  }
  return e;
}

// The output table with the raw Pid column appended (Pid is never released).
seqcheck::Release WithPid(const Table& out, const Table& raw) {
  seqcheck::Release r{out.header, out.rows};
  r.header.push_back("Pid");
  for (size_t i = 0; i < r.rows.size(); ++i) r.rows[i].push_back(raw.rows[i][0]);
  return r;
}

int Col(const std::vector<std::string>& header, const std::string& name) {
  return static_cast<int>(std::find(header.begin(), header.end(), name) - header.begin());
}

void CheckRandomStarJoins(int releases, int iterations, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto parents_a = seqcheck::ParseParents(kTaxA);
  const auto parents_j = seqcheck::ParseParents(kTaxJ);
  int ran = 0, refused = 0, specialized = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    const Case c = MakeCase(rng, releases);
    SCOPED_TRACE(absl::StrCat("case ", iter, "\n", c.spec));
    const StarJob s =
        WriteStarJob("seqstar", c.spec, c.t1, c.previous, {{"a.csv", kTaxA}, {"j.csv", kTaxJ}});
    const auto report = RunStarJob(s);
    if (!report.ok()) {
      ASSERT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition) << report.status();
      ASSERT_THAT(report.status().message(), ::testing::HasSubstr("cannot be met"));
      Table general = c.t1;
      general.header.erase(general.header.begin());  // Pid is not released
      for (auto& r : general.rows) {
        r.erase(r.begin());
        r[0] = "ANY_A";
        r[1] = "ANY_J";
      }
      EXPECT_FALSE(Evaluate(c, WithPid(general, c.t1)).ok);
      ++refused;
      continue;
    }
    ++ran;
    specialized += report->steps_size() > 0;
    ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
    ASSERT_EQ(out.rows.size(), c.t1.rows.size());
    const int ca = Col(out.header, "A"), cj = Col(out.header, "J");
    const int raw_a = Col(c.t1.header, "A"), raw_j = Col(c.t1.header, "J");
    for (size_t i = 0; i < out.rows.size(); ++i) {
      ASSERT_TRUE(seqcheck::IsAncestorOrSelf(parents_a, out.rows[i][ca], c.t1.rows[i][raw_a]));
      ASSERT_TRUE(seqcheck::IsAncestorOrSelf(parents_j, out.rows[i][cj], c.t1.rows[i][raw_j]));
    }
    const Evaluation e = Evaluate(c, WithPid(out, c.t1));
    ASSERT_TRUE(e.ok);
    EXPECT_EQ(report->smallest_group(), e.smallest);
    EXPECT_NEAR(report->largest_confidence(), e.largest, 1e-12);
    for (const auto& [col, raw_col, parents] :
         {std::make_tuple(ca, raw_a, &parents_a), std::make_tuple(cj, raw_j, &parents_j)}) {
      std::set<std::string> values;
      for (const auto& r : out.rows) values.insert(r[col]);
      for (const std::string& v : values) {
        bool leaf = true;
        for (const auto& [child, parent] : *parents) leaf &= parent != v;
        if (leaf) continue;
        Table more = out;
        for (size_t i = 0; i < more.rows.size(); ++i) {
          if (more.rows[i][col] != v) continue;
          std::string child = c.t1.rows[i][raw_col];
          while (parents->at(child) != v) child = parents->at(child);
          more.rows[i][col] = child;
        }
        EXPECT_FALSE(Evaluate(c, WithPid(more, c.t1)).ok)
            << "specializing " << out.header[col] << " " << v << " keeps the star join private";
      }
    }
  }
  EXPECT_GT(ran, iterations / 5);
  EXPECT_GT(refused, iterations / 50);
  EXPECT_GT(specialized, iterations / 8);
  std::cerr << releases << " previous releases: " << ran << " runs checked, " << refused
            << " refused, " << specialized << " with at least one specialization\n";
}

TEST(RandomStarJoinTest, TwoPreviousReleasesEveryOutputPrivateAndMaximal) {
  CheckRandomStarJoins(2, 240, 6501);
}

TEST(RandomStarJoinTest, ThreePreviousReleasesEveryOutputPrivateAndMaximal) {
  CheckRandomStarJoins(3, 160, 6502);
}

}  // namespace
}  // namespace fedanon::testing
