// Per-attribute information loss of a released table, as ARX reports it (its "loss" measure,
// Iyengar, "Transforming data to satisfy privacy constraints", KDD 2002): each released QID value
// loses 0 when kept as it is, 1 when suppressed or generalized to the root, (leaves under the
// value - 1) / (leaves of the taxonomy - 1) for a taxonomy node, and the interval's width over the
// attribute's range for an interval [lo-hi); an attribute's loss is the average over the released
// records. Reads the release only (the recipient's view).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/table/taxonomy.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::evaluation {

struct LossContext {
  // The taxonomy of each QID that has one (as the job used it).
  std::map<std::string, std::shared_ptr<const table::Taxonomy>> taxonomies;
  // The full range [lo, hi) of each continuous QID without a taxonomy; missing: the spec's
  // `range`, else the span of the released intervals and numbers.
  std::map<std::string, std::pair<double, double>> ranges;
};

// The loss of every QID of `spec` (spec order) over the released CSV `released_path`.
// InvalidArgument naming the file, line and attribute for a QID column missing from the header
// or a value that is neither a node of the attribute's taxonomy nor the suppression token.
absl::StatusOr<std::vector<fedanon::v1::AttributeLoss>> AttributeLosses(
    const fedanon::v1::JobSpec& spec, const std::string& released_path, const LossContext& context);

// "[lo-hi)" (the engine's interval labels) into lo and hi; false for anything else.
bool ParseIntervalLabel(std::string_view label, double* lo, double* hi);

}  // namespace fedanon::evaluation
