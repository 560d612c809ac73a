#include "app/table_risk.h"

#include "common/base/status_macros.h"
#include "common/risk/risk_analysis.h"
#include "common/risk/risk_table.h"

namespace fedanon::app {

fedanon::v1::RiskOptions EffectiveRiskOptions(const fedanon::v1::JobSpec& spec,
                                              const fedanon::v1::RiskOptions& overrides) {
  fedanon::v1::RiskOptions options = spec.risk();
  if (overrides.population_size() > 0 || overrides.sampling_fraction() > 0) {
    options.set_population_size(overrides.population_size());
    options.set_sampling_fraction(overrides.sampling_fraction());
  }
  if (overrides.threshold() > 0) options.set_threshold(overrides.threshold());
  if (overrides.max_combination_size() > 0) {
    options.set_max_combination_size(overrides.max_combination_size());
  }
  return options;
}

absl::StatusOr<fedanon::v1::RiskSummary> AssessTableRisk(const fedanon::v1::JobSpec& spec,
                                                         const std::string& path,
                                                         const fedanon::v1::RiskOptions& options,
                                                         const std::string& name) {
  ASSIGN_OR_RETURN(const risk::QidCodes table, risk::ReadQidCodes(spec, path));
  return risk::AnalyzeRisk(table, options, name);
}

}  // namespace fedanon::app
