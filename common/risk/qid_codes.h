// The quasi-identifier columns of one table, dictionary-encoded (a code per distinct value, equal
// codes for equal values): what every re-identification risk figure is computed from. Built from
// a CSV file (raw or released: values compared as written), from an encoded Dataset, or by hand
// in tests; then grouped into equivalence classes over any subset of the columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/risk/population_models.h"

namespace fedanon::risk {

struct QidCodes {
  std::vector<std::string> names;              // the QID attributes, in spec order
  std::vector<std::vector<uint32_t>> columns;  // [attribute][record]: the value's code
  uint64_t records = 0;
  uint64_t dropped = 0;  // rows left out for a missing value (`missing: drop`)
};

// The equivalence class of every record over the attributes `subset` (indices into columns), as
// dense ids 0..classes-1, and how many classes there are.
struct ClassIds {
  std::vector<uint32_t> ids;  // per record
  uint32_t classes = 0;
};
ClassIds GroupRecords(const QidCodes& table, const std::vector<int>& subset);
// Refines `parent` by one more attribute (the classes of subset + {attribute}).
ClassIds RefineGroups(const ClassIds& parent, const std::vector<uint32_t>& column);

// Class size -> number of classes, for the grouping `groups`.
ClassSizeHistogram HistogramOf(const ClassIds& groups);

}  // namespace fedanon::risk
