#include "leader/local_job.h"

#include <utility>

#include "common/base/status_macros.h"
#include "common/engine/numeric_split.h"
#include "leader/local_group_source.h"

namespace fedanon::leader {

absl::StatusOr<LocalRounds> RunLocalRounds(
    const fedanon::v1::JobSpec& spec, const common::Dataset& schema,
    const common::PrivacyModel& model, SecureSumCountSource* sums, ViewLog* view_log,
    uint32_t* round, std::function<void(const fedanon::v1::SpecializationStep&, size_t)> on_step) {
  // Owned by the rounds: the engine calls it until Run returns.
  auto source =
      std::make_shared<FederatedLocalSource>(sums, &schema, view_log, [round] { return *round; });
  common::EngineOptions options;
  options.score = spec.score();
  options.beneficial = spec.beneficial();
  options.suppression_token = spec.suppression_token();
  options.numeric = common::NumericSplitFromSpec(spec);
  options.on_step = std::move(on_step);
  LocalRounds out;
  ASSIGN_OR_RETURN(out.engine,
                   common::LocalRecoder::Create(&schema, &model, std::move(options), source.get()));
  ASSIGN_OR_RETURN(out.stop_reason, out.engine->Run());
  *round = static_cast<uint32_t>(out.engine->steps().size() + 1);
  // Every split went out with the statistics of its children (the wave's last secure sum).
  if (!sums->TakePendingUpdates().empty()) {
    return absl::InternalError("local recoding: split instructions were never delivered");
  }
  return out;
}

}  // namespace fedanon::leader
