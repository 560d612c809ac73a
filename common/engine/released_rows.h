// The released (anonymized) rows of one holder's table: input order, chosen columns, QID values
// replaced by the label of their generalized value, every other value copied verbatim from the
// input (which is re-read, so only the encoded QID columns are kept in memory).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

// Columns (indices into data.header) of the released table: the spec's attributes except the
// record id, in input column order (`spec_order` false) or in spec order.
std::vector<int> ReleasedColumns(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                                 bool spec_order);

// Calls `emit` once per kept record with its released values for `columns`.
absl::Status ForEachReleasedRow(
    const fedanon::v1::JobSpec& spec, const table::Dataset& data, const Tips& tips,
    const std::vector<AttributeHierarchy>& hier, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit);

// The same rows as CSV text (AppendCsvRecord with `separator`), handed to `write` in consecutive
// pieces in input order. A file streamed at load (Dataset::checkpoints) is re-read and formatted
// in blocks by two threads, a few blocks ahead of `write` at most (memory stays bounded); a file
// of a single block by the calling thread, handed to `write` about a MiB at a time.
absl::Status WriteReleasedRows(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                               const Tips& tips, const std::vector<AttributeHierarchy>& hier,
                               const std::vector<int>& columns, char separator,
                               const std::function<absl::Status(std::string_view)>& write);

}  // namespace fedanon::engine
