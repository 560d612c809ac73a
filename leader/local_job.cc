#include "leader/local_job.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/numeric_split.h"
#include "leader/local_group_source.h"

namespace fedanon::leader {

absl::StatusOr<LocalRounds> RunLocalRounds(const table::Dataset& schema,
                                           const engine::PrivacyModel& model,
                                           SecureSumCountSource* sums, ViewLog* view_log,
                                           uint32_t* round, engine::EngineOptions options) {
  // Owned by the rounds: the engine calls it until Run returns.
  auto source =
      std::make_shared<FederatedLocalSource>(sums, &schema, view_log, [round] { return *round; });
  LocalRounds out;
  ASSIGN_OR_RETURN(out.engine,
                   engine::LocalRecoder::Create(&schema, &model, std::move(options), source.get()));
  ASSIGN_OR_RETURN(out.stop_reason, out.engine->Run());
  *round = static_cast<uint32_t>(out.engine->steps().size() + 1);
  // Every split went out with the statistics of its children (the wave's last secure sum).
  if (!sums->TakePendingUpdates().empty()) {
    return absl::InternalError("local recoding: split instructions were never delivered");
  }
  return out;
}

fedanon::v1::StatsRequest LocalReleasedCountsRequest(const engine::LocalRecoder& engine,
                                                     const table::Dataset& schema) {
  fedanon::v1::StatsRequest request;
  auto* local = request.mutable_local();
  for (int32_t g : engine.final_groups()) {
    LocalGroupRefToProto({g, engine.Key(g)}, local->add_released_groups());
  }
  local->set_released_combinations(schema.ValueCombinations());
  return request;
}

bool LocalReleasedCountsApply(const engine::LocalRecoder& engine, const table::Dataset& schema) {
  const uint64_t combos = schema.ValueCombinations();
  if (!schema.all_values_declared || combos > engine::kMaxLocalReleasedWords ||
      engine.final_groups().size() >
          engine::kMaxLocalReleasedWords / std::max<uint64_t>(1, combos)) {
    return false;
  }
  // Each group costs a few bytes per QID attribute in the request: bounded without building it.
  // Per value: tags and lengths, and three varints of at most 5 bytes.
  size_t bytes = 0;
  for (int32_t g : engine.final_groups()) bytes += 8 + engine.Key(g).size() * (6 + 3 * 5);
  return bytes <= kMaxLocalReleaseRequestBytes;
}

absl::StatusOr<std::vector<uint64_t>> CollectLocalReleasedCounts(const engine::LocalRecoder& engine,
                                                                 const table::Dataset& schema,
                                                                 SecureSumCountSource* sums,
                                                                 ViewLog* view_log,
                                                                 uint32_t round) {
  const uint64_t combos = schema.ValueCombinations();
  const std::vector<int32_t>& groups = engine.final_groups();
  const size_t words = groups.size() * combos;
  ASSIGN_OR_RETURN(std::vector<uint64_t> counts,
                   sums->CollectProto(LocalReleasedCountsRequest(engine, schema), words));
  if (counts.size() != words) {
    return absl::InternalError("local recoding: the released counts have the wrong length");
  }
  if (view_log != nullptr) {
    for (size_t i = 0; i < groups.size(); ++i) {
      ViewEntry e;
      e.round = round;
      e.kind = kViewReleasedCounts;
      e.labelled = combos > 1;
      e.node = absl::StrCat("group ", groups[i]);
      e.counts.assign(counts.begin() + static_cast<ptrdiff_t>(i * combos),
                      counts.begin() + static_cast<ptrdiff_t>((i + 1) * combos));
      RETURN_IF_ERROR(view_log->Append(e));
    }
  }
  return counts;
}

}  // namespace fedanon::leader
