// The rounds of a horizontal federated job with `recoding: local` (docs/federation.md, "Local
// recoding"): the centralized LocalRecoder on the leader's public schema, its statistics from
// FederatedLocalSource (ring secure sums) — so the groups, steps and released values equal the
// centralized run on the union. The leader's job code (leader.cc) then integrates the parties'
// rows by the secure set union (each party releases its records with its groups' values) and
// writes the report.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/engine/local_recoding.h"
#include "common/engine/privacy_model.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"
#include "leader/secure_sum_source.h"
#include "leader/view_log.h"

namespace fedanon::leader {

struct LocalRounds {
  std::unique_ptr<common::LocalRecoder> engine;
  std::string stop_reason;
};

// Runs the rounds. `round` is the round number the secure sums stamp (updated as steps are
// taken); `on_step` is told each step as for a global job.
absl::StatusOr<LocalRounds> RunLocalRounds(
    const fedanon::v1::JobSpec& spec, const common::Dataset& schema,
    const common::PrivacyModel& model, SecureSumCountSource* sums, ViewLog* view_log,
    uint32_t* round, std::function<void(const fedanon::v1::SpecializationStep&, size_t)> on_step);

}  // namespace fedanon::leader
