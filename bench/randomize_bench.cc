// Random anonymization (common/random_anonymization.h) on a generated table of 1M records and 9
// QID attributes (2 to 74 values each, skewed): records per second of Algorithm 1 (entropy
// weights) from the seeded generator and from the OpenSSL CSPRNG, of Algorithm 2 with k = 3, and
// of the length-2 relative-bias report.
//
//   build/<dir>/bench/randomize_bench [--benchmark_repetitions=3]
// Reported counter: items_per_second = records per second.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "common/randomization/random_anonymization.h"
#include "common/randomization/random_anonymization_metrics.h"
#include "common/randomization/random_source.h"

namespace fedanon {
namespace {

constexpr size_t kRecords = 1'000'000;

const std::vector<randomization::CategoricalColumn>& Table() {
  static const std::vector<randomization::CategoricalColumn>* table = [] {
    auto* t = new std::vector<randomization::CategoricalColumn>();
    auto random = randomization::RandomSource::Seeded(2024);
    for (size_t values : {74, 16, 7, 14, 6, 5, 2, 41, 9}) {
      randomization::CategoricalColumn c;
      c.name = "q" + std::to_string(t->size());
      for (size_t v = 0; v < values; ++v) c.values.push_back("v" + std::to_string(v));
      for (size_t r = 0; r < kRecords; ++r) {
        // Skewed: the minimum of two uniform draws favours small codes.
        c.codes.push_back(
            static_cast<uint32_t>(std::min(random->Below(values), random->Below(values))));
      }
      t->push_back(std::move(c));
    }
    return t;
  }();
  return *table;
}

void Run(benchmark::State& state, int k, bool seeded) {
  const auto& table = Table();
  auto plan =
      randomization::PlanRandomization(table, k,
                                       k == 1 ? randomization::AttributeSelection::kEntropyWeighted
                                              : randomization::AttributeSelection::kUniform);
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    auto random = seeded ? randomization::RandomSource::Seeded(1)
                         : randomization::RandomSource::Unpredictable();
    auto out = randomization::Randomize(table, *plan, *random);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
}

void BM_Algorithm1Seeded(benchmark::State& state) { Run(state, 1, true); }
void BM_Algorithm1Csprng(benchmark::State& state) { Run(state, 1, false); }
void BM_Algorithm2K3Csprng(benchmark::State& state) { Run(state, 3, false); }

void BM_RelativeBiasLength2(benchmark::State& state) {
  const auto& table = Table();
  auto plan = randomization::PlanRandomization(table, 1,
                                               randomization::AttributeSelection::kEntropyWeighted);
  auto random = randomization::RandomSource::Seeded(1);
  auto released = randomization::Randomize(table, *plan, *random);
  for (auto _ : state) {
    auto bias = randomization::MeasureRelativeBias(table, *released, *plan, 2);
    benchmark::DoNotOptimize(bias);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
}

BENCHMARK(BM_Algorithm1Seeded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Algorithm1Csprng)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Algorithm2K3Csprng)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RelativeBiasLength2)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace fedanon

BENCHMARK_MAIN();
