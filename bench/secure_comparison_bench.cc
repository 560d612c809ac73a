// Cost of the secure comparison (crypto/secure_comparison.h): for each kind and size, the time of
// each side's steps (both sides in this one process, one after the other, so the times add up to
// one core's work) and the bytes each side sends, in total and per instance. Medians of RUNS runs.
// Usage: secure_comparison_bench [runs=5]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "crypto/secure_comparison.h"

namespace {

using fedanon::crypto::ComparisonCost;
using fedanon::crypto::ComparisonEvaluator;
using fedanon::crypto::ComparisonGarbler;
using fedanon::crypto::ComparisonKind;
using fedanon::crypto::ComparisonOutput;
using fedanon::crypto::ComparisonSpec;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Times {
  double garbler = 0;
  double evaluator = 0;
};

Times RunOnce(const ComparisonSpec& spec, std::mt19937_64& rng) {
  // Values of ComparisonWords(bits) words each, the last word below 2^(bits mod 64).
  const uint32_t words = fedanon::crypto::ComparisonWords(spec.bits);
  const uint32_t top_bits = spec.bits - 64 * (words - 1);
  const uint64_t mask = top_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << top_bits) - 1;
  std::vector<uint64_t> g(spec.count * words), e(spec.count * words);
  for (uint64_t i = 0; i < spec.count * words; ++i) {
    const bool top = i % words == words - 1;
    g[i] = rng() & (top ? mask : ~uint64_t{0});
    e[i] = rng() & (top ? mask : ~uint64_t{0});
  }
  using Clock = std::chrono::steady_clock;
  Times t;
  auto timed = [](double* acc, auto&& f) {
    const auto start = Clock::now();
    auto r = f();
    *acc += std::chrono::duration<double>(Clock::now() - start).count();
    if (!r.ok()) {
      std::fprintf(stderr, "failed: %s\n", std::string(r.status().message()).c_str());
      std::exit(1);
    }
    return *std::move(r);
  };
  auto garbler = timed(&t.garbler, [&] { return ComparisonGarbler::Create(spec, g); });
  auto evaluator = timed(&t.evaluator, [&] { return ComparisonEvaluator::Create(spec, e); });
  const std::string m1 = timed(&t.evaluator, [&] { return evaluator->Start(); });
  const std::string m2 = timed(&t.garbler, [&] { return garbler->AnswerBase(m1); });
  const std::string m3 = timed(&t.evaluator, [&] { return evaluator->Extend(m2); });
  const std::string m4 = timed(&t.garbler, [&] { return garbler->Garble(m3); });
  const std::string m5 = timed(&t.evaluator, [&] { return evaluator->Evaluate(m4); });
  timed(&t.garbler, [&] { return garbler->Finish(m5); });
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::mt19937_64 rng(1);  // inputs only; the protocol draws its own randomness
  struct Case {
    const char* name;
    ComparisonSpec spec;
  };
  const std::vector<Case> cases = {
      {"x > y, 64 bits (two-party winner)",
       {"b", ComparisonKind::kGreaterThan, 64, 0, 1, ComparisonOutput::kEach}},
      {"argmax of 3 shared 64-bit keys",
       {"b", ComparisonKind::kSharedArgmax, 64, 0, 3, ComparisonOutput::kEach}},
      {"argmax of 8 shared 64-bit keys",
       {"b", ComparisonKind::kSharedArgmax, 64, 0, 8, ComparisonOutput::kEach}},
      {"vertical winner: 2 parties, 193-bit keys",
       {"b", ComparisonKind::kSharedArgmax, 193, 0, 2, ComparisonOutput::kEach}},
      {"vertical winner: 4 parties, 193-bit keys",
       {"b", ComparisonKind::kSharedArgmax, 193, 0, 4, ComparisonOutput::kEach}},
      {"group sizes, 32 bits, 1k groups, all",
       {"b", ComparisonKind::kSumZeroOrAtLeast, 32, 20, 1000, ComparisonOutput::kAll}},
      {"group sizes, 32 bits, 100k groups, all",
       {"b", ComparisonKind::kSumZeroOrAtLeast, 32, 20, 100000, ComparisonOutput::kAll}},
      {"group sizes, 17 bits, 100k groups, all",
       {"b", ComparisonKind::kSumZeroOrAtLeast, 17, 20, 100000, ComparisonOutput::kAll}},
      {"confidence, 64 bits, 100k bounds, all",
       {"b", ComparisonKind::kSumNonNegative, 64, 0, 100000, ComparisonOutput::kAll}},
      {"bins, 32 bits, 10k bins, each",
       {"b", ComparisonKind::kSumZeroOrAtLeast, 32, 20, 10000, ComparisonOutput::kEach}},
  };
  std::printf("%-42s %10s %12s %12s %14s %14s %12s\n", "case", "AND gates", "garbler s",
              "evaluator s", "garbler bytes", "evaluat. bytes", "us/instance");
  for (const Case& c : cases) {
    const auto cost = fedanon::crypto::CostOfComparison(c.spec);
    if (!cost.ok()) return 1;
    std::vector<double> gs, es;
    const int n = c.spec.count >= 100000 ? std::min(runs, 3) : runs;
    for (int r = 0; r < n; ++r) {
      const Times t = RunOnce(c.spec, rng);
      gs.push_back(t.garbler);
      es.push_back(t.evaluator);
    }
    const double g = Median(gs);
    const double e = Median(es);
    std::printf("%-42s %10llu %12.4f %12.4f %14llu %14llu %12.2f\n", c.name,
                static_cast<unsigned long long>(cost->and_gates), g, e,
                static_cast<unsigned long long>(cost->garbler_bytes),
                static_cast<unsigned long long>(cost->evaluator_bytes),
                1e6 * (g + e) / static_cast<double>(c.spec.count));
  }
  return 0;
}
