// Random small sequential releases, every output confirmed by the brute-force join checker
// (tests/sequential/join_checker.h, no engine code): T1 and T2 are projections of one random
// underlying table (T2 sometimes with generalized join values), with random anonymity and
// confidentiality templates over the join, sometimes with inconsistency rules. For every run:
//  * refused runs: the most general T1 really violates a template (Cor. 6.2.2);
//  * the output is truthful (every value generalizes the raw one) and every template holds on the
//    materialized join, with the report's smallest group / largest confidence equal to the
//    checker's;
//  * the output is maximal: specializing any one remaining taxonomy value (to the children
//    toward the raw values) violates some template on the materialized join.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

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
  Table t1, t2;
  bool with_g = false, with_age = false;
  std::vector<seqcheck::Rule> rules;
  std::vector<Template> templates;
  std::string spec;
};

template <typename T>
const T& Pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

Case MakeCase(std::mt19937& rng) {
  Case c;
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  c.with_g = coin(0.5);
  c.with_age = coin(0.4);
  const int n = 6 + pick(20);
  const bool generalize_t2 = coin(0.4);
  c.t1.header = {"Pid", "A", "J", "S", "Cls"};
  if (c.with_g) c.t1.header.push_back("G");
  if (c.with_age) c.t1.header.push_back("Age");
  c.t2.header = {"J", "Z", "D"};
  if (c.with_g) c.t2.header.push_back("G");
  const int patients = 1 + n * 2 / 3;
  // Inconsistency rules; the underlying table obeys them ("common sense"), so the releases stay
  // population-related.
  const bool rule_az = coin(0.3), rule_aj = coin(0.3), rule_gd = c.with_g && coin(0.3);
  if (rule_az) c.rules.push_back({"A", "A1", "Z", "z1"});
  if (rule_aj) c.rules.push_back({"A", "a3", "J", "J2"});
  if (rule_gd) c.rules.push_back({"G", "g1", "D", "d3"});
  for (int i = 0; i < n; ++i) {
    const int a = pick(4);
    const int j = rule_aj && a == 2 ? pick(2) : pick(5);
    const int z = rule_az && a < 2 ? 1 + pick(2) : pick(3);
    const std::string g = absl::StrCat("g", 1 + pick(2));
    const int d = rule_gd && g == "g1" ? pick(2) : pick(3);
    std::vector<std::string> r1 = {absl::StrCat("p", pick(patients)), absl::StrCat("a", 1 + a),
                                   absl::StrCat("j", 1 + j), absl::StrCat("s", 1 + pick(3)),
                                   coin(0.5) ? "Y" : "N"};
    std::string jv = absl::StrCat("j", 1 + j);
    if (generalize_t2 && coin(0.5)) jv = j < 2 ? "J1" : "J2";
    if (generalize_t2 && coin(0.1)) jv = "ANY_J";
    std::vector<std::string> r2 = {jv, absl::StrCat("z", 1 + z), absl::StrCat("d", 1 + d)};
    if (c.with_g) {
      r1.push_back(g);
      r2.push_back(g);
    }
    if (c.with_age) r1.push_back(absl::StrCat(20 + pick(30)));
    c.t1.rows.push_back(r1);
    c.t2.rows.push_back(r2);
  }
  c.t1.rows[0][3] = "s1";  // the sensitive values of confidentiality templates occur
  c.t2.rows[0][2] = "d1";
  std::shuffle(c.t2.rows.begin(), c.t2.rows.end(), rng);

  std::vector<std::string> xs = {"current.A", "current.J", "previous.J", "previous.Z"};
  if (c.with_age) xs.push_back("current.Age");
  if (c.with_g) xs.push_back("previous.G");
  const int num = 1 + pick(2);
  for (int t = 0; t < num; ++t) {
    Template tp;
    tp.anonymity = coin(0.6);
    for (const auto& x : xs) {
      if (coin(0.5)) tp.x.push_back(x);
    }
    if (tp.x.empty()) tp.x.push_back(Pick(rng, xs));
    if (tp.anonymity) {
      const std::vector<std::vector<std::string>> ys = {{"current.@record"},
                                                        {"previous.@record"},
                                                        {"current.@record", "previous.@record"},
                                                        {"current.Pid"},
                                                        {"previous.D"},
                                                        {"current.S", "previous.D"},
                                                        {"current.Pid", "previous.@record"},
                                                        {"current.@record", "previous.D"}};
      tp.y = Pick(rng, ys);
      tp.k = 1 + pick(5);
    } else {
      if (coin(0.5)) {
        tp.y = {"current.S"};
        tp.value = "s1";
      } else {
        tp.y = {"previous.D"};
        tp.value = "d1";
      }
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
  if (c.with_age) spec += "  - {name: Age, role: qid, type: continuous}\n";
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
    for (const auto& r : c.rules) {
      spec +=
          absl::StrCat("    - {current: ", r.current, ", current_value: ", r.current_value,
                       ", previous: ", r.previous, ", previous_value: ", r.previous_value, "}\n");
    }
  }
  if (!anon.empty()) spec += "  anonymity:\n" + anon;
  if (!conf.empty()) spec += "  confidentiality:\n" + conf;
  if (coin(0.3)) spec += "score: infogain_privloss\n";
  c.spec = spec;
  return c;
}

// The template values on the materialized join of `t1` (released columns plus Pid) and `t2`:
// per template, a_Y min or confidence max, and whether all hold.
struct Evaluation {
  uint64_t smallest = 0;
  double largest = 0;
  bool ok = true;
};

Evaluation Evaluate(const Case& c, const seqcheck::Release& t1, const seqcheck::Release& t2) {
  const seqcheck::Taxonomies tax = {{"J", seqcheck::ParseParents(kTaxJ)},
                                    {"A", seqcheck::ParseParents(kTaxA)}};
  const auto join = seqcheck::Join(t1, t2, tax, c.rules);
  Evaluation e;
  bool first = true;
  for (const Template& t : c.templates) {
    std::vector<seqcheck::Ref> x;
    for (const auto& s : t.x) x.push_back(seqcheck::ParseRef(s));
    if (t.anonymity) {
      std::vector<seqcheck::Ref> y;
      for (const auto& s : t.y) y.push_back(seqcheck::ParseRef(s));
      const uint64_t a = seqcheck::Anonymity(t1, t2, join, x, y);
      e.smallest = first ? a : std::min(e.smallest, a);
      first = false;
      e.ok &= a >= t.k;
    } else {
      const double conf =
          seqcheck::Confidence(t1, t2, join, x, seqcheck::ParseRef(t.y[0]), {t.value});
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

TEST(RandomJoinTest, EveryOutputKeepsTheJoinPrivateAndIsMaximal) {
  std::mt19937 rng(20061);
  const auto parents_a = seqcheck::ParseParents(kTaxA);
  const auto parents_j = seqcheck::ParseParents(kTaxJ);
  int ran = 0, refused = 0, specialized = 0;
  for (int iter = 0; iter < 250; ++iter) {
    const Case c = MakeCase(rng);
    SCOPED_TRACE(absl::StrCat("case ", iter, "\n", c.spec));
    const SeqJob s =
        WriteSeqJob("seqrand", c.spec, c.t1, c.t2, {{"a.csv", kTaxA}, {"j.csv", kTaxJ}});
    const auto report = RunSeqJob(s);
    const seqcheck::Release t2{c.t2.header, c.t2.rows};
    if (!report.ok()) {
      ASSERT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition) << report.status();
      ASSERT_THAT(report.status().message(), ::testing::HasSubstr("cannot be met"));
      // The most general T1 must violate some template.
      Table general = c.t1;
      general.header.erase(general.header.begin());  // Pid is not released
      for (auto& r : general.rows) {
        r.erase(r.begin());
        r[0] = "ANY_A";
        r[1] = "ANY_J";
      }
      if (c.with_age) {
        int lo = 1000, hi = 0;
        for (const auto& r : c.t1.rows) {
          lo = std::min(lo, std::stoi(r.back()));
          hi = std::max(hi, std::stoi(r.back()));
        }
        for (auto& r : general.rows) r.back() = absl::StrCat("[", lo, "-", hi + 1, ")");
      }
      EXPECT_FALSE(Evaluate(c, WithPid(general, c.t1), t2).ok);
      ++refused;
      continue;
    }
    ++ran;
    specialized += report->steps_size() > 0;
    ASSERT_OK_AND_ASSIGN(Table out, ReadCsvTable(s.job.output_path));
    ASSERT_EQ(out.rows.size(), c.t1.rows.size());
    const int ca = Col(out.header, "A"), cj = Col(out.header, "J");
    const int raw_a = Col(c.t1.header, "A"), raw_j = Col(c.t1.header, "J");
    // Truthful.
    for (size_t i = 0; i < out.rows.size(); ++i) {
      ASSERT_TRUE(seqcheck::IsAncestorOrSelf(parents_a, out.rows[i][ca], c.t1.rows[i][raw_a]));
      ASSERT_TRUE(seqcheck::IsAncestorOrSelf(parents_j, out.rows[i][cj], c.t1.rows[i][raw_j]));
    }
    // Private, with the report's figures.
    const Evaluation e = Evaluate(c, WithPid(out, c.t1), t2);
    ASSERT_TRUE(e.ok);
    EXPECT_EQ(report->smallest_group(), e.smallest);
    EXPECT_NEAR(report->largest_confidence(), e.largest, 1e-12);
    // Maximal over the taxonomy attributes.
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
        EXPECT_FALSE(Evaluate(c, WithPid(more, c.t1), t2).ok)
            << "specializing " << out.header[col] << " " << v << " keeps the join private";
      }
    }
  }
  // The generator must exercise both outcomes and real specializations.
  EXPECT_GT(ran, 50);
  EXPECT_GT(refused, 5);
  EXPECT_GT(specialized, 30);
  std::cerr << ran << " runs checked, " << refused << " refused, " << specialized
            << " with at least one specialization\n";
}

}  // namespace
}  // namespace fedanon::testing
