// The four kinds of hierarchy_builder.h, one file each; shared by hierarchy_builder.cc only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/hierarchies/hierarchy_builder.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::hierarchies::hierarchy_internal {

// One row per leaf: the leaf, its generalizations, the root last.
using HierarchyRows = std::vector<std::vector<std::string>>;

// "hierarchy for 'age': " + what.
absl::Status DefinitionError(std::string_view attribute, std::string_view what);
// "<where>: " + what (a listed value the definition cannot cover).
absl::Status ValueError(std::string_view where, std::string_view what);
// A number as labels write it: "40", "0.5", "-2.25".
std::string FormatHierarchyNumber(double x);

absl::Status ValidateInterval(const fedanon::v1::IntervalHierarchy& d, std::string_view attribute);
absl::StatusOr<HierarchyRows> IntervalRows(const fedanon::v1::IntervalHierarchy& d,
                                           const ValueList* values, std::string_view attribute);

absl::Status ValidateMasking(const fedanon::v1::MaskingHierarchy& d, std::string_view attribute);
absl::StatusOr<HierarchyRows> MaskingRows(const fedanon::v1::MaskingHierarchy& d,
                                          const ValueList* values, std::string_view attribute);

absl::Status ValidateDate(const fedanon::v1::DateHierarchy& d, std::string_view attribute);
absl::StatusOr<HierarchyRows> DateRows(const fedanon::v1::DateHierarchy& d, const ValueList* values,
                                       std::string_view attribute);

absl::Status ValidateOrdered(const fedanon::v1::OrderedHierarchy& d, std::string_view attribute);
absl::StatusOr<HierarchyRows> OrderedRows(const fedanon::v1::OrderedHierarchy& d,
                                          const ValueList* values, std::string_view attribute);

}  // namespace fedanon::hierarchies::hierarchy_internal
