// What ties a vertical release to what the replicas agreed (common/wire/release_digests.h): a
// replica's partition and groups digests over its records' QID labels, and the recipient's check
// of the joined rows (CheckJoinedRelease), for seven QID columns in two parts and 50 groups.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire/release_digests.h"

namespace fedanon {
namespace {

constexpr int kQids = 7;
constexpr int kGroups = 50;

std::string Label(int q, uint64_t record) {
  return absl::StrCat("q", q, "-label-", record % kGroups);
}

// Every record's labels, grouped into kGroups groups.
void BM_ReplicaDigests(benchmark::State& state) {
  const auto records = static_cast<uint64_t>(state.range(0));
  std::vector<std::string> keys(kGroups);
  for (int g = 0; g < kGroups; ++g) {
    for (int q = 0; q < kQids; ++q)
      wire::AppendGroupLabel(Label(q, static_cast<uint64_t>(g)), &keys[g]);
  }
  for (auto _ : state) {
    wire::ReleasePartitionHasher partition;
    wire::ReleaseGroupTally groups;
    for (uint64_t r = 0; r < records; ++r) partition.Add(keys[r % kGroups]);
    for (int g = 0; g < kGroups; ++g) groups.Add(keys[g], records / kGroups);
    benchmark::DoNotOptimize(partition.Finish());
    benchmark::DoNotOptimize(groups.Digest());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * records));
}
BENCHMARK(BM_ReplicaDigests)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void BM_CheckJoinedRelease(benchmark::State& state) {
  const auto records = static_cast<uint64_t>(state.range(0));
  // Two parts: QIDs 0-3 and 4-6, plus a class column in the first.
  std::vector<wire::VerticalColumnsView> parts;
  google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut> cut;
  for (int q = 0; q < kQids; ++q) {
    auto* c = cut.Add();
    c->set_attribute(absl::StrCat("q", q));
    for (int g = 0; g < kGroups; ++g) c->add_values(Label(q, static_cast<uint64_t>(g)));
  }
  wire::ReleaseGroupTally agreed;
  for (const auto& [from, to] : {std::pair{0, 4}, std::pair{4, kQids}}) {
    fedanon::v1::VerticalColumns columns;
    for (int q = from; q < to; ++q) columns.add_names(absl::StrCat("q", q));
    if (from == 0) columns.add_names("class");
    for (uint64_t r = 0; r < records; ++r) {
      for (int q = from; q < to; ++q) columns.add_cells(Label(q, r));
      if (from == 0) columns.add_cells(r % 2 ? "yes" : "no");
    }
    auto view = wire::VerticalColumnsView::Parse(columns.SerializeAsString());
    if (!view.ok()) std::abort();
    parts.push_back(*std::move(view));
  }
  for (int g = 0; g < kGroups; ++g) {
    std::string key;
    for (int q = 0; q < kQids; ++q)
      wire::AppendGroupLabel(Label(q, static_cast<uint64_t>(g)), &key);
    agreed.Add(key, records / kGroups);
  }
  const std::string digest = agreed.Digest();
  for (auto _ : state) {
    const absl::Status st = wire::CheckJoinedRelease(parts, cut, digest);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      std::abort();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * records));
}
BENCHMARK(BM_CheckJoinedRelease)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedanon

BENCHMARK_MAIN();
