// The distortion metric of the thesis's sequential-release experiments (fung2007 §6.4, after
// Samarati/Sweeney [59]), measured on a raw table and an anonymized release of it:
//
//  * categorical QID with a taxonomy: a raw value v released as its ancestor g costs
//    depth(v) - depth(g) units ("each time a categorical value is generalized to the parent value
//    in a record, there is one unit of distortion");
//  * categorical QID without a taxonomy (suppression, thesis ch. 5): a value released as the
//    spec's suppression token costs one unit (§5.5: "each suppression of a domain value v in a
//    record as one unit of distortion");
//  * continuous QID: a value released as the interval [a-b) costs (b - a) / (f2 - f1) units,
//    [f1, f2) the attribute's full range (the spec's `range`, else the smallest range holding
//    the raw values, as the engine's root interval);
//
// summed separately over categorical and continuous attributes and divided by the number of
// records (§6.4: "the distortion is separately computed for categorical attributes and continuous
// attributes. The total distortion is normalized by the number of records"). The raw records
// with a missing value are dropped as `fedanon anonymize` drops them; the release must hold the
// kept records in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::evaluation {

struct Distortion {
  uint64_t records = 0;
  double categorical = 0;  // units per record
  double continuous = 0;   // units per record
};

// Loads the QID attributes' taxonomies named by `spec` (paths as the spec loader resolved them)
// and compares the raw table with the release. InvalidArgument for a released value that is
// neither the raw value, one of its ancestors, the suppression token nor (continuous) an interval
// holding it (file:line, attribute and value), and for differing record counts.
absl::StatusOr<Distortion> MeasureDistortion(const fedanon::v1::JobSpec& spec,
                                             const std::string& raw_path,
                                             const std::string& anonymized_path);

// The interval [lo, hi) of a released label "[lo-hi)"; InvalidArgument for anything else.
absl::StatusOr<std::pair<double, double>> ParseIntervalLabel(const std::string& label);

}  // namespace fedanon::evaluation
