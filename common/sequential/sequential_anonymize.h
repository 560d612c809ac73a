// The sequential-release step of `fedanon anonymize --previous-release` (fung2007 thesis ch. 6):
// loads the previous releases (one, or several for a star join) and the join model, runs
// SequentialSpecializer on the job's table and fills the result part of the report. Reading the
// job's table and writing the output stay in anonymize.cc, shared with the single-release path.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::sequential {

// `hierarchies` and `tips` are at the most general state and are specialized in place; the
// caller then writes the released rows from them. `progress` may be empty.
absl::Status RunSequentialRelease(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                                  const std::vector<std::string>& previous_paths,
                                  uint32_t max_rounds,
                                  const std::function<void(const std::string&)>& progress,
                                  std::vector<engine::AttributeHierarchy>* hierarchies,
                                  engine::Tips* tips, fedanon::v1::Report* report);

}  // namespace fedanon::sequential
