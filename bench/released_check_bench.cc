// The recipient's check of a released horizontal table (common/engine/released_table_check.h):
// rows per second for a table of three QID attributes (two disclosed values each, the rest
// hidden), a tracked sensitive value and a free-text column, with the leader's group totals.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/engine/privacy_model.h"
#include "common/engine/released_table_check.h"
#include "common/spec/job_spec_loader.h"

namespace fedanon {
namespace {

constexpr char kSpec[] = R"(name: released-check-bench
attributes:
  - {name: a, role: qid, values: [a0, a1, a2, a3, a4, a5]}
  - {name: b, role: qid, values: [b0, b1, b2, b3, b4, b5]}
  - {name: c, role: qid, values: [c0, c1, c2, c3, c4, c5]}
  - {name: s, role: sensitive, values: [flu, none]}
  - {name: note, role: other}
privacy: {model: lkc, L: 2, K: 2, C: 0.9, sensitive_values: [flu]}
)";

template <typename T>
T OrDie(absl::StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "%s\n", std::string(v.status().message()).c_str());
    std::abort();
  }
  return *std::move(v);
}

void BM_CheckReleasedTable(benchmark::State& state) {
  const auto spec = OrDie(spec::ParseJobSpecYaml(kSpec, "bench.yaml"));
  const table::Dataset schema = OrDie(table::BuildPublicSchema(spec, {}));
  const engine::PrivacyModel model = OrDie(engine::BuildPrivacyModel(spec, schema));
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  // Disclose two values of each attribute: cut {v0, v1, *}.
  for (auto& h : hier) {
    engine::NodeIndex hidden = 0;
    for (int i = 0; i < 2; ++i) {
      const std::vector<engine::NodeIndex> kids = h.Specialize(hidden, 0);
      hidden = kids.back();
    }
  }
  const engine::FinalCheckLayout layout =
      OrDie(engine::BuildFinalCheckLayout(model, schema, hier, "*"));
  std::vector<std::vector<std::string>> labels(hier.size());
  std::vector<std::vector<engine::NodeIndex>> nodes(hier.size());
  for (size_t a = 0; a < hier.size(); ++a) {
    for (size_t n = 0; n < hier[a].size(); ++n) {
      if (!hier[a].node(static_cast<engine::NodeIndex>(n)).children.empty()) continue;
      labels[a].push_back(hier[a].Label(static_cast<engine::NodeIndex>(n), "*"));
      nodes[a].push_back(static_cast<engine::NodeIndex>(n));
    }
  }
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::string> rows;
  rows.reserve(n);
  std::map<std::vector<engine::NodeIndex>, std::vector<uint64_t>> totals;
  uint64_t x = 88172645463325252ULL;
  for (size_t r = 0; r < n; ++r) {
    std::vector<engine::NodeIndex> key;
    std::string row;
    for (size_t a = 0; a < hier.size(); ++a) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const size_t v = x % labels[a].size();
      key.push_back(nodes[a][v]);
      absl::StrAppend(&row, labels[a][v], ",");
    }
    const bool flu = (x >> 20) % 4 == 0;
    absl::StrAppend(&row, flu ? "flu" : "none", ",note ", r % 97, "\n");
    rows.push_back(std::move(row));
    auto& t = totals[key];
    t.resize(2, 0);
    t[0] += 1;
    t[1] += flu;
  }
  const engine::ReleasedTableExpectations expected{.layout = &layout,
                                                   .schema = &schema,
                                                   .hier = &hier,
                                                   .suppression_token = "*",
                                                   .header = {"a", "b", "c", "s", "note"},
                                                   .rows = n,
                                                   .final_check_totals = nullptr,
                                                   .group_totals = &totals};
  for (auto _ : state) {
    const absl::Status st = engine::CheckReleasedTable(expected, rows);
    if (!st.ok()) {
      state.SkipWithError(std::string(st.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_CheckReleasedTable)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedanon

BENCHMARK_MAIN();
