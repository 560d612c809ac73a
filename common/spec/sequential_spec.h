// The `sequential` section of a job spec (fung2007 thesis ch. 6): how its templates name
// attributes of the current and the previous release, and its validation without data. The
// section's meaning (the join, the templates' check) lives in common/sequential/.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::spec {

// The pseudo-attribute naming a record of one release ("current.@record").
inline constexpr std::string_view kSequentialRecord = "@record";

enum class SequentialSide { kAny, kCurrent, kPrevious };

// An attribute named in a sequential template: "current.age", "previous.@record", "age", or with
// several previous releases "previous2.Disease" (the second --previous-release).
struct SequentialRef {
  SequentialSide side = SequentialSide::kAny;
  std::string name;
  // kPrevious: 0 for "previous." (the only previous release, or any that has the column), i >= 1
  // for "previousI." (the i-th previous release in the order given).
  int release = 0;
};

// InvalidArgument (prefixed with `where`) for an empty name, a bare "@record" or "previous0.".
absl::StatusOr<SequentialRef> ParseSequentialRef(const std::string& text, const std::string& where);

// "sequential.anonymity template 2" / "sequential.confidentiality template 1" (i is 0-based).
std::string SequentialTemplateWhere(bool anonymity, int i);

// Checks the `sequential` section of a validated spec on its own (no data): templates name
// attributes in a known form, k >= 1, 0 < max <= 1, sensitive values given; the job's `privacy`
// section is unused. Called by ValidateJobSpec when the section is present.
absl::Status ValidateSequentialSpec(const fedanon::v1::JobSpec& spec);

}  // namespace fedanon::spec
