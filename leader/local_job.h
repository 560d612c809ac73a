// The rounds of a horizontal federated job with `recoding: local` (docs/federation.md, "Local
// recoding"): the centralized LocalRecoder on the leader's public schema, its statistics from
// FederatedLocalSource (ring secure sums) — so the groups, steps and released values equal the
// centralized run on the union. The leader's job code (leader.cc) then integrates: when it is
// the recipient and every released non-QID value is declared (LocalReleasedCountsApply), by ONE
// secure sum of the released counts per (final group, value combination)
// (CollectLocalReleasedCounts), from which it writes the released rows; otherwise by the secure
// set union (each party releases its records with its groups' values). Then the report.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/local_recoding.h"
#include "common/engine/privacy_model.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"
#include "leader/secure_sum_source.h"
#include "leader/view_log.h"

namespace fedanon::leader {

struct LocalRounds {
  std::unique_ptr<engine::LocalRecoder> engine;
  std::string stop_reason;
};

// Runs the rounds with the engine `options` a global job would use (score, numeric split, the
// record limit, `on_step` told each step). `round` is the round number the secure sums stamp
// (updated as steps are taken).
absl::StatusOr<LocalRounds> RunLocalRounds(const table::Dataset& schema,
                                           const engine::PrivacyModel& model,
                                           SecureSumCountSource* sums, ViewLog* view_log,
                                           uint32_t* round, engine::EngineOptions options);

// Whether the released counts of the final groups fit: every released non-QID attribute has a
// declared domain, final groups x combinations <= engine::kMaxLocalReleasedWords, and the request
// naming every final group with its key stays under kMaxLocalReleaseRequestBytes. (The caller
// also requires the leader to be the recipient.)
inline constexpr size_t kMaxLocalReleaseRequestBytes = size_t{16} << 20;
bool LocalReleasedCountsApply(const engine::LocalRecoder& engine, const table::Dataset& schema);

// The request of the released counts: every final group (in final_groups() order) with its key,
// and the job's value combinations.
fedanon::v1::StatsRequest LocalReleasedCountsRequest(const engine::LocalRecoder& engine,
                                                     const table::Dataset& schema);

// One secure sum of the released counts: per final group (final_groups() order),
// schema.ValueCombinations() words. Each group's words go to the view log as a
// kViewReleasedCounts entry ("group N").
absl::StatusOr<std::vector<uint64_t>> CollectLocalReleasedCounts(const engine::LocalRecoder& engine,
                                                                 const table::Dataset& schema,
                                                                 SecureSumCountSource* sums,
                                                                 ViewLog* view_log, uint32_t round);

}  // namespace fedanon::leader
