// Property tests over many random small tables and privacy requirements: every output must
// satisfy its model, be truthful and be maximal according to the independent brute-force
// checker, and the engine's reported figures must agree with the checker's.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/engine/count_source.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using Rng = SplitMix64;

struct RandomJob {
  Job job;
  std::string description;
};

RandomJob MakeRandomJob(uint64_t seed) {
  Rng rng{seed * 7919 + 13};
  const int nq = rng.Uniform(2, 4);
  const int rows = rng.Uniform(15, 120);
  Table t;
  std::map<std::string, std::string> taxonomies;
  std::string attrs;
  std::vector<std::string> qid_names;
  std::vector<std::function<std::string()>> gens;
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    qid_names.push_back(name);
    t.header.push_back(name);
    const int kind = rng.Uniform(0, 2);
    if (kind == 0) {  // taxonomy with 2-3 levels
      const int leaves = rng.Uniform(2, 7);
      std::string tax;
      const bool deep = rng.Coin(0.5);
      for (int l = 0; l < leaves; ++l) {
        const int g = l / 2;
        tax += absl::StrCat(name, "v", l, ";", name, "g", g, ";");
        if (deep) tax += absl::StrCat(name, "h", g / 2, ";");
        tax += absl::StrCat("ANY_", name, "\n");
      }
      taxonomies["tax/" + name + ".csv"] = tax;
      attrs += absl::StrCat("  - {name: ", name, ", role: qid, taxonomy: tax/", name, ".csv}\n");
      gens.push_back(
          [&rng, name, leaves] { return absl::StrCat(name, "v", rng.Uniform(0, leaves - 1)); });
    } else if (kind == 1) {  // suppression
      const int values = rng.Uniform(2, 6);
      attrs += absl::StrCat("  - {name: ", name, ", role: qid}\n");
      gens.push_back(
          [&rng, name, values] { return absl::StrCat(name, "s", rng.Uniform(0, values - 1)); });
    } else {  // continuous
      const int hi = rng.Uniform(3, 30);
      attrs += absl::StrCat("  - {name: ", name, ", role: qid, type: continuous}\n");
      gens.push_back([&rng, hi] { return absl::StrCat(rng.Uniform(0, hi)); });
    }
  }
  t.header.push_back("cls");
  t.header.push_back("sens");
  const int classes = rng.Uniform(2, 3);
  int s0 = 0;
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (auto& g : gens) row.push_back(g());
    // The class leans on the first QID value so that information gain is informative.
    const int cls = (rng.Coin(0.7) ? static_cast<int>(row[0].back()) : rng.Uniform(0, 9)) % classes;
    row.push_back(absl::StrCat("c", cls));
    const int s = rng.Uniform(0, 3);
    s0 += s == 0;
    row.push_back(absl::StrCat("s", s));
    t.rows.push_back(row);
  }
  attrs += "  - {name: cls, role: class}\n  - {name: sens, role: sensitive}\n";
  static const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};
  // Every fifth seed scores by the thesis's minimal distortion instead (Eq. 6.1, §5.5); the draw
  // is made anyway, so the other seeds' jobs stay what they were.
  const std::string drawn = kScores[rng.Uniform(0, 3)];
  const std::string score = seed % 5 == 0 ? "distortion" : drawn;
  std::string privacy;
  const double min_c = static_cast<double>(s0) / rows;
  if (rng.Coin(0.6)) {
    const int L = rng.Uniform(1, nq);
    const int K = rng.Uniform(2, std::max(2, rows / 5));
    const double C = std::min(1.0, min_c + rng.Uniform(1, 60) / 100.0);
    privacy = absl::StrCat("privacy: {model: lkc, L: ", L, ", K: ", K, ", C: ", C,
                           ", sensitive_values: [s0]}\n");
  } else {
    privacy = "privacy:\n  model: templates\n  templates:\n";
    const int n = rng.Uniform(1, 2);
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> qid;
      for (const auto& name : qid_names) {
        if (rng.Coin(0.6)) qid.push_back(name);
      }
      if (qid.empty()) qid.push_back(qid_names[0]);
      privacy += absl::StrCat("    - {qid: [", absl::StrJoin(qid, ", "),
                              "], k: ", rng.Uniform(2, std::max(2, rows / 4)), "}\n");
    }
    if (rng.Coin(0.5)) {
      privacy += absl::StrCat("  confidence:\n    - {qid: [", qid_names[nq - 1],
                              "], sensitive_values: [s0], max: ",
                              std::min(1.0, min_c + rng.Uniform(5, 50) / 100.0), "}\n");
    }
  }
  const bool beneficial = rng.Coin(0.3);
  const std::string spec =
      absl::StrCat("name: random-", seed, "\nattributes:\n", attrs, privacy, "score: ", score,
                   "\nbeneficial: ", beneficial ? "true" : "false", "\n");
  RandomJob rj;
  rj.job = WriteJob(absl::StrCat("random_", seed), spec, t, taxonomies);
  rj.description = spec;
  return rj;
}

class RandomTablesTest : public ::testing::TestWithParam<int> {};

TEST_P(RandomTablesTest, OutputIsPrivateTruthfulMaximalAndReportedFiguresAgree) {
  const RandomJob rj = MakeRandomJob(GetParam());
  SCOPED_TRACE(rj.description);
  // The generator keeps every requirement satisfiable (K <= |T|, bounds above the overall
  // confidence), so every run must succeed.
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report report_value, RunJob(rj.job));
  const auto* report = &report_value;
  ASSERT_OK_AND_ASSIGN(CheckerInput out, MakeCheckerInput(rj.job));
  const PrivacyCheck check = CheckPrivacy(out);
  EXPECT_TRUE(check.satisfied) << check.violation;
  EXPECT_OK(CheckTruthful(out));
  EXPECT_OK(CheckMaximal(out));
  EXPECT_EQ(report->smallest_group(), check.smallest_group);
  EXPECT_NEAR(report->largest_confidence(), check.largest_confidence, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomTablesTest, ::testing::Range(1, 401));

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RandomTablesDeterminism, SameJobTwiceGivesIdenticalOutput) {
  for (int seed : {3, 17, 42}) {
    const RandomJob a = MakeRandomJob(seed);
    const RandomJob b = MakeRandomJob(seed);
    ASSERT_OK(RunJob(a.job));
    ASSERT_OK(RunJob(b.job));
    EXPECT_EQ(Slurp(a.job.output_path), Slurp(b.job.output_path)) << seed;
  }
}

// Forwards to a LocalCountSource over its own TIPS, saying whether it counts in process (the
// engine then derives each parent's largest new child) or not (every new group is asked for, as
// from a federated source), and counts the group keys asked for.
class CountingSource : public engine::CountSource {
 public:
  CountingSource(engine::Tips* tips, bool in_process) : local_(tips), in_process_(in_process) {}
  absl::Status Specialize(int attr, engine::NodeIndex node, int c,
                          const std::vector<uint64_t>& sizes) override {
    return local_.Specialize(attr, node, c, sizes);
  }
  absl::Status Split(int attr, engine::NodeIndex node, int32_t split) override {
    return local_.Split(attr, node, split);
  }
  absl::StatusOr<std::vector<uint64_t>> Collect(const engine::StatsRequest& request) override {
    group_keys += request.group_keys.size();
    return local_.Collect(request);
  }
  bool CountsInProcess() const override { return in_process_; }
  absl::StatusOr<std::vector<uint64_t>> CollectAttributeBlocks(
      int attr, const std::vector<std::vector<engine::NodeIndex>>& keys) override {
    attribute_blocks += keys.size();
    return local_.CollectAttributeBlocks(attr, keys);
  }
  uint64_t group_keys = 0;
  uint64_t attribute_blocks = 0;

 private:
  engine::LocalCountSource local_;
  bool in_process_;
};

struct EngineRun {
  std::vector<std::string> steps;  // attribute, value, children, score, records of each step
  uint64_t smallest_group = 0;
  uint64_t group_keys = 0;
  uint64_t attribute_blocks = 0;
};

absl::StatusOr<EngineRun> RunEngine(const Job& job, bool in_process) {
  ASSIGN_OR_RETURN(const fedanon::v1::JobSpec spec, spec::LoadJobSpec(job.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  ASSIGN_OR_RETURN(const table::Dataset data, table::LoadDataset(spec, job.input_path));
  ASSIGN_OR_RETURN(const engine::PrivacyModel model, engine::BuildPrivacyModel(spec, data));
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : data.qids) hier.emplace_back(&q);
  engine::Tips tips(&data, &hier);
  CountingSource source(&tips, in_process);
  engine::EngineOptions opts;
  opts.score = spec.score();
  opts.beneficial = spec.beneficial();
  opts.numeric = engine::NumericSplitFromSpec(spec);
  ASSIGN_OR_RETURN(auto engine,
                   engine::TopDownSpecializer::Create(&data, &model, &hier, &source, opts));
  RETURN_IF_ERROR(engine->Run().status());
  EngineRun run;
  for (const auto& step : engine->steps()) {
    run.steps.push_back(absl::StrCat(
        step.attribute(), " ", step.value(), " -> ", absl::StrJoin(step.children(), "|"), " score ",
        absl::StrFormat("%a", step.score()), " records ", step.records()));
  }
  run.smallest_group = engine->smallest_group();
  run.group_keys = source.group_keys;
  run.attribute_blocks = source.attribute_blocks;
  return run;
}

// A source that counts in process is not asked for each parent's largest new child: its
// statistics are the parent's minus its siblings' (TopDownSpecializer::CollectChildGroups).
// Every step (its score to the last bit) and the smallest group are those of a run that asks
// for every group, over 200 random jobs of every score and model; and fewer groups were asked.
TEST(RandomTablesDerivedGroups, DerivingEachParentsLargestChildChangesNoStep) {
  uint64_t asked_whole = 0, asked_derived = 0, blocks = 0, steps = 0;
  for (int seed = 1; seed <= 200; ++seed) {
    const RandomJob rj = MakeRandomJob(seed);
    SCOPED_TRACE(rj.description);
    ASSERT_OK_AND_ASSIGN(const EngineRun whole, RunEngine(rj.job, false));
    ASSERT_OK_AND_ASSIGN(const EngineRun derived, RunEngine(rj.job, true));
    EXPECT_EQ(derived.steps, whole.steps);
    EXPECT_EQ(derived.smallest_group, whole.smallest_group);
    EXPECT_EQ(whole.attribute_blocks, 0u);
    asked_whole += whole.group_keys;
    asked_derived += derived.group_keys;
    blocks += derived.attribute_blocks;
    steps += whole.steps.size();
  }
  EXPECT_GT(steps, 200u);
  EXPECT_LT(asked_derived, asked_whole);
  // One derived child per split group: the keys not asked for are the blocks counted alone.
  EXPECT_EQ(asked_derived + blocks, asked_whole);
  EXPECT_GT(blocks, 0u);
}

}  // namespace
}  // namespace fedanon::testing
