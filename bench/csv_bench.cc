// CSV reader throughput (Google Benchmark): records of 15 numeric fields with an occasional quoted
// field with escaped quotes, parsed field by field from memory. Reports bytes/s and items (rows)/s.
//   build/default/bench/csv_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/table/csv.h"

namespace {

std::string MakeTable(int rows, int fields) {
  std::string text;
  text.reserve(static_cast<size_t>(rows) * fields * 8);
  for (int r = 0; r < rows; ++r) {
    for (int f = 0; f < fields; ++f) {
      if (f > 0) text += ',';
      if (f == 7 && r % 1000 == 0) {
        text += "\"q,\"\"x\"\"\"";
      } else {
        text += std::to_string((r * 31 + f * 7) % 100000);
      }
    }
    text += '\n';
  }
  return text;
}

void BM_CsvReaderRows(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const std::string table = MakeTable(rows, 15);
  for (auto _ : state) {
    auto reader = fedanon::table::CsvReader::FromString(std::string(table), "bench.csv");
    if (!reader.ok()) {
      state.SkipWithError("cannot open the table");
      return;
    }
    std::vector<std::string_view> fields;
    size_t n = 0;
    for (;;) {
      absl::StatusOr<bool> more = (*reader)->Next(&fields);
      if (!more.ok()) {
        state.SkipWithError("parse error");
        return;
      }
      if (!*more) break;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(table.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * rows);
}
BENCHMARK(BM_CsvReaderRows)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
