// One party's side of a horizontal job on a PostgreSQL table, in-memory against push-down
// (docs/postgres.md, "Push-down"): the table read into memory (LoadDatasetFromPostgres + TIPS) or
// left in the database (PostgresPushdown), then the whole top-down specialization loop with this
// one holder as the count source, as the leader would drive it (no secure sums: the party's
// compute and memory only). Prints records, steps, queries, a digest of the steps (equal in both
// modes) and the wall time; run under `/usr/bin/time -v` for the peak RSS.
//   pushdown_bench SPEC.yaml memory|push-down CONNINFO TABLE [MAX_ROUNDS]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/engine/count_source.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table_postgres/postgres_source.h"
#include "common/table_postgres/postgres_stats.h"
#include "crypto/hash.h"

namespace {

using fedanon::engine::AttributeHierarchy;

// The count source of a push-down party.
class PushdownSource : public fedanon::engine::CountSource {
 public:
  PushdownSource(fedanon::table_postgres::PostgresPushdown* pd,
                 std::vector<AttributeHierarchy>* hier)
      : pd_(pd), hier_(hier) {}
  absl::Status Specialize(int attr, fedanon::engine::NodeIndex node, int c,
                          const std::vector<uint64_t>&) override {
    pd_->Specialize(attr, node, c);
    return absl::OkStatus();
  }
  absl::Status Split(int, fedanon::engine::NodeIndex, int32_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<uint64_t>> Collect(
      const fedanon::engine::StatsRequest& request) override {
    std::vector<uint64_t> out;
    if (absl::Status st = pd_->AppendStats(*hier_, request, &out); !st.ok()) return st;
    return out;
  }

 private:
  fedanon::table_postgres::PostgresPushdown* pd_;
  std::vector<AttributeHierarchy>* hier_;
};

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[2] : "";
  if (argc < 5 || (mode != "memory" && mode != "push-down")) {
    std::fprintf(stderr,
                 "usage: pushdown_bench SPEC.yaml memory|push-down CONNINFO TABLE [MAX_ROUNDS]\n");
    return 2;
  }
  uint32_t max_rounds = 0;
  if (argc >= 6 && !absl::SimpleAtoi(argv[5], &max_rounds)) return 2;
  auto spec = fedanon::spec::LoadJobSpec(argv[1]);
  if (!spec.ok()) return Fail(spec.status());
  std::map<std::string, std::string> texts;
  for (const auto& a : spec->attributes()) {
    if (a.taxonomy().empty()) continue;
    std::ifstream in(a.taxonomy(), std::ios::binary);
    texts[a.name()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  auto schema = fedanon::table::BuildPublicSchema(*spec, texts);
  if (!schema.ok()) return Fail(schema.status());
  const fedanon::table_postgres::PostgresSource source{.name = "bench",
                                                       .conninfo = argv[3],
                                                       .table = argv[4],
                                                       .query = "",
                                                       .push_down = mode == "push-down"};
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<fedanon::table::Dataset> data;
  std::unique_ptr<fedanon::table_postgres::PostgresPushdown> pd;
  std::unique_ptr<fedanon::engine::Tips> tips;
  std::vector<AttributeHierarchy> hier;
  std::unique_ptr<fedanon::engine::CountSource> counts;
  if (mode == "memory") {
    auto loaded = fedanon::table_postgres::LoadDatasetFromPostgres(*spec, source, &*schema);
    if (!loaded.ok()) return Fail(loaded.status());
    data = std::make_unique<fedanon::table::Dataset>(*std::move(loaded));
  } else {
    auto opened = fedanon::table_postgres::PostgresPushdown::Open(*spec, source, *schema);
    if (!opened.ok()) return Fail(opened.status());
    pd = *std::move(opened);
    data = std::make_unique<fedanon::table::Dataset>(pd->data());
  }
  for (const auto& q : data->qids) hier.emplace_back(&q);
  if (pd) {
    counts = std::make_unique<PushdownSource>(pd.get(), &hier);
  } else {
    tips = std::make_unique<fedanon::engine::Tips>(data.get(), &hier);
    counts = std::make_unique<fedanon::engine::LocalCountSource>(tips.get());
  }
  const double loaded_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto model = fedanon::engine::BuildPrivacyModel(*spec, *data);
  if (!model.ok()) return Fail(model.status());
  fedanon::engine::EngineOptions options;
  options.score = spec->score();
  options.beneficial = spec->beneficial();
  options.suppression_token = spec->suppression_token();
  options.numeric = fedanon::engine::NumericSplitFromSpec(*spec);
  options.max_rounds = max_rounds;
  std::string steps;
  options.on_step = [&](const fedanon::v1::SpecializationStep& step, size_t) {
    absl::StrAppend(&steps, step.attribute(), " ", step.value(), "\n");
  };
  auto engine = fedanon::engine::TopDownSpecializer::Create(data.get(), &*model, &hier,
                                                            counts.get(), std::move(options));
  if (!engine.ok()) return Fail(engine.status());
  auto stop = (*engine)->Run();
  if (!stop.ok()) return Fail(stop.status());
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: %zu records, %zu steps (steps digest %s), %llu SQL queries; table ready in %.2f s, "
      "total %.2f s\n",
      mode.c_str(), data->num_records, (*engine)->steps().size(),
      absl::BytesToHexString(fedanon::crypto::Sha256(steps)).substr(0, 16).c_str(),
      static_cast<unsigned long long>(pd ? pd->queries() : 0), loaded_s, total_s);
  return 0;
}
