#include "common/sequential/sequential_anonymize.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/sequential/sequential_release.h"
#include "common/sequential/sequential_specializer.h"

namespace fedanon::sequential {

absl::Status RunSequentialRelease(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                                  const std::vector<std::string>& previous_paths,
                                  uint32_t max_rounds,
                                  const std::function<void(const std::string&)>& progress,
                                  std::vector<engine::AttributeHierarchy>* hierarchies,
                                  engine::Tips* tips, fedanon::v1::Report* report) {
  ASSIGN_OR_RETURN(SequentialModel model, LoadSequentialModel(spec, data, previous_paths));
  SequentialOptions options;
  options.score = spec.score();
  options.beneficial = spec.beneficial();
  options.suppression_token = spec.suppression_token();
  options.max_rounds = max_rounds;
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  if (progress) {
    options.on_step = [&](const fedanon::v1::SpecializationStep& step) {
      if (std::chrono::duration<double>(Clock::now() - last).count() < 1.0) return;
      last = Clock::now();
      progress(absl::StrCat("round ", step.round(), ": specialized ", step.attribute(), " ",
                            step.value(), " (", step.records(), " records)"));
    };
  }
  ASSIGN_OR_RETURN(auto engine, SequentialSpecializer::Create(&data, &model, hierarchies, tips,
                                                              std::move(options)));
  ASSIGN_OR_RETURN(std::string stop_reason, engine->Run());
  engine->FillReport(stop_reason, report);
  // A sequential release has a single data holder and searches thresholds per value.
  report->set_numeric_split(fedanon::v1::NUMERIC_SPLIT_EXACT);
  return absl::OkStatus();
}

}  // namespace fedanon::sequential
