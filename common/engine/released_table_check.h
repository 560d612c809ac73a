// The recipient's check of a horizontal job's released table before it is written: the secure
// union's rows come from every data party, and any party after the first could drop, repeat or
// invent rows on their way. The recipient (the leader or a data party) reads the table it received
// on its own, not the engine's bookkeeping:
//
//  * the row count equals the records the parties summed (the root count), when known;
//  * every row has the released attributes, and every QID cell is a label of the final cut;
//  * the signed privacy model holds on the table itself (k and confidence bounds, l-diversity or
//    t-closeness), through the final check's layout (common/engine/final_check.h);
//  * where the recipient knows them, the table's counts equal the agreed ones exactly: the final
//    check's summed vector (a recipient data party, three or more parties) or the engine's group
//    statistics (the leader).
// Repeated sealed rows are refused earlier, where they are opened (common/wire/released_union.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/final_check.h"
#include "common/engine/hierarchy.h"
#include "common/table/dataset.h"

namespace fedanon::engine {

struct ReleasedTableExpectations {
  // The final check's layout over the final cut of `hier` (BuildFinalCheckLayout).
  const FinalCheckLayout* layout = nullptr;
  const table::Dataset* schema = nullptr;
  const std::vector<AttributeHierarchy>* hier = nullptr;
  std::string suppression_token;
  // The released attributes, in the rows' column order.
  std::vector<std::string> header;
  // The parties' summed root count; unset when the recipient does not know it.
  std::optional<uint64_t> rows;
  // The final check's summed vector in `layout` (a recipient data party of three or more).
  const std::vector<uint64_t>* final_check_totals = nullptr;
  // Per final group (its cut node of every QID): [size, count of each tracked sensitive value],
  // as the leader's engine summed them.
  const std::map<std::vector<NodeIndex>, std::vector<uint64_t>>* group_totals = nullptr;
};

// The same check fed piece by piece, so that a table larger than memory is checked as it is
// written: Create, AddRows for every block of rows (in any order), then Finish for the verdict.
// Memory: the final check's vector (and, with group_totals, one entry per group), never the rows.
// `expected` must outlive the checker.
class ReleasedTableChecker {
 public:
  static absl::StatusOr<ReleasedTableChecker> Create(const ReleasedTableExpectations& expected);
  // `rows`: CSV lines, one record each with its newline. Errors as CheckReleasedTable's, with
  // rows numbered from the first ever added.
  absl::Status AddRows(const std::vector<std::string>& rows);
  // The verdict on every row added.
  absl::Status Finish() const;
  uint64_t rows() const { return rows_; }

 private:
  struct ColumnRolesHolder;
  ReleasedTableChecker() = default;
  const ReleasedTableExpectations* e_ = nullptr;
  std::shared_ptr<const ColumnRolesHolder> roles_;
  std::vector<absl::flat_hash_map<std::string, NodeIndex>> by_label_;
  std::vector<std::vector<int64_t>> positions_;
  std::vector<uint64_t> counts_;
  std::map<std::vector<NodeIndex>, std::vector<uint64_t>> groups_;
  uint64_t rows_ = 0;
};

// OK, or an error naming what the table breaks: DataLoss for a row count or group count that
// differs from the agreed one, InvalidArgument for a malformed row or a QID cell outside the cut
// (its row, attribute and value), FailedPrecondition for a group that breaks the privacy model.
// `rows` are CSV lines (one record each, with its newline), in any order.
absl::Status CheckReleasedTable(const ReleasedTableExpectations& expected,
                                const std::vector<std::string>& rows);

}  // namespace fedanon::engine
