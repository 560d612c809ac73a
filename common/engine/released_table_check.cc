#include "common/engine/released_table_check.h"

#include <memory>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::engine {
namespace {

// What each released column means to the check.
struct ColumnRoles {
  std::vector<int> qid_column;      // per QID: its column in the rows
  std::vector<int> tracked_column;  // per tracked value: its attribute's column
  int distribution_column = -1;     // the sensitive attribute of ldiversity/tcloseness
  absl::flat_hash_map<std::string, uint64_t> distribution_values;  // its declared value -> index
};

absl::StatusOr<ColumnRoles> Roles(const ReleasedTableExpectations& e) {
  const table::Dataset& schema = *e.schema;
  const auto column_of = [&](const std::string& name) -> absl::StatusOr<int> {
    for (size_t i = 0; i < e.header.size(); ++i) {
      if (e.header[i] == name) return static_cast<int>(i);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the released table has no column '", name, "'"));
  };
  ColumnRoles roles;
  for (const table::QidColumn& q : schema.qids) {
    ASSIGN_OR_RETURN(const int c, column_of(q.name));
    roles.qid_column.push_back(c);
  }
  for (const table::TrackedSensitive& t : schema.tracked) {
    ASSIGN_OR_RETURN(const int c, column_of(t.attribute));
    roles.tracked_column.push_back(c);
  }
  if (e.layout->hist_words > 0) {
    if (schema.distribution_column < 0 ||
        static_cast<size_t>(schema.distribution_column) >= schema.value_columns.size()) {
      return absl::FailedPreconditionError(
          "the released table cannot be re-checked: the schema lacks the sensitive attribute's "
          "declared values");
    }
    const table::Dataset::ValueColumn& vc =
        schema.value_columns[static_cast<size_t>(schema.distribution_column)];
    if (vc.values.size() != e.layout->hist_words) {
      return absl::FailedPreconditionError(
          "the released table cannot be re-checked: the sensitive attribute's declared values "
          "differ from the model's");
    }
    ASSIGN_OR_RETURN(roles.distribution_column, column_of(vc.name));
    for (size_t v = 0; v < vc.values.size(); ++v) roles.distribution_values[vc.values[v]] = v;
  }
  return roles;
}

// Per QID attribute: the label of each node of the final cut -> the node.
absl::StatusOr<std::vector<absl::flat_hash_map<std::string, NodeIndex>>> CutNodesByLabel(
    const ReleasedTableExpectations& e) {
  std::vector<absl::flat_hash_map<std::string, NodeIndex>> by_label(e.hier->size());
  for (size_t a = 0; a < e.hier->size(); ++a) {
    const AttributeHierarchy& h = (*e.hier)[a];
    for (size_t n = 0; n < h.size(); ++n) {
      if (!h.node(static_cast<NodeIndex>(n)).children.empty()) continue;
      const auto [it, inserted] = by_label[a].try_emplace(
          h.Label(static_cast<NodeIndex>(n), e.suppression_token), static_cast<NodeIndex>(n));
      if (!inserted) {
        return absl::InternalError(absl::StrCat("two values of the final cut of '",
                                                e.schema->qids[a].name, "' share the label '",
                                                it->first, "'"));
      }
    }
  }
  return by_label;
}

std::string KeyName(const ReleasedTableExpectations& e, const std::vector<NodeIndex>& key) {
  std::vector<std::string> parts;
  for (size_t a = 0; a < key.size(); ++a) {
    parts.push_back(
        absl::StrCat(e.schema->qids[a].name, "=", (*e.hier)[a].Label(key[a], e.suppression_token)));
  }
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

// The first word where the table's counts differ from the final check's, named.
absl::Status CompareWithFinalCheck(const FinalCheckLayout& layout,
                                   const std::vector<uint64_t>& table,
                                   const std::vector<uint64_t>& agreed) {
  if (agreed.size() != table.size()) {
    return absl::InternalError("the final check's vector and the table's layout differ in size");
  }
  for (const FinalCheckConstraint& c : layout.constraints) {
    for (uint64_t g = 0; g < c.groups; ++g) {
      const uint64_t at = c.offset + g * layout.Slot(c);
      for (uint64_t w = 0; w < layout.Slot(c); ++w) {
        if (table[at + w] == agreed[at + w]) continue;
        const std::string what =
            w == 0              ? "records"
            : w < layout.stride ? absl::StrCat("records with '", layout.tracked[w - 1], "'")
                                : absl::StrCat("records of sensitive value #", w - layout.stride);
        return absl::DataLossError(absl::StrCat(
            "the released table's group ", FinalCheckGroupName(c, g), " of ", c.description,
            " holds ", table[at + w], " ", what, " but the parties' final check summed ",
            agreed[at + w], ": a party dropped, repeated or invented rows in the secure union"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct ReleasedTableChecker::ColumnRolesHolder {
  ColumnRoles roles;
};

absl::StatusOr<ReleasedTableChecker> ReleasedTableChecker::Create(
    const ReleasedTableExpectations& e) {
  if (e.layout == nullptr || e.schema == nullptr || e.hier == nullptr ||
      e.hier->size() != e.schema->qids.size()) {
    return absl::InternalError("the released table's check lacks the job's cut");
  }
  ReleasedTableChecker c;
  c.e_ = &e;
  ASSIGN_OR_RETURN(ColumnRoles roles, Roles(e));
  c.roles_ = std::make_shared<ColumnRolesHolder>(ColumnRolesHolder{std::move(roles)});
  ASSIGN_OR_RETURN(c.by_label_, CutNodesByLabel(e));
  c.positions_ = FinalCheckCutPositions(*e.hier);
  c.counts_.assign(e.layout->words, 0);
  return c;
}

absl::Status ReleasedTableChecker::AddRows(const std::vector<std::string>& rows) {
  const ReleasedTableExpectations& e = *e_;
  const ColumnRoles& roles = roles_->roles;
  const FinalCheckLayout& layout = *e.layout;
  std::vector<std::string_view> fields;
  std::vector<NodeIndex> key(e.hier->size());
  const size_t m = layout.tracked.size();
  // The rows are parsed in blocks of about 4 MiB (whole rows), not joined into one copy.
  std::unique_ptr<table::CsvReader> reader;
  size_t next = 0;
  uint64_t records = 0;
  while (true) {
    bool more = false;
    if (reader != nullptr) {
      ASSIGN_OR_RETURN(more, reader->Next(&fields));
    }
    if (!more) {
      if (next == rows.size()) break;
      std::string block;
      const size_t first = next;
      while (next < rows.size() && block.size() < (size_t{4} << 20)) block += rows[next++];
      ASSIGN_OR_RETURN(reader, table::CsvReader::FromString(std::move(block),
                                                            absl::StrCat("the released table (row ",
                                                                         rows_ + first + 1, " on)"),
                                                            table::CsvOptions{.separator = ','}));
      continue;
    }
    ++records;
    const uint64_t row = rows_ + records;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, e.header.size()));
    for (size_t a = 0; a < key.size(); ++a) {
      const std::string_view cell = fields[static_cast<size_t>(roles.qid_column[a])];
      const auto it = by_label_[a].find(absl::string_view(cell.data(), cell.size()));
      if (it == by_label_[a].end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the released table's row ", row, ": value '", std::string(cell), "' of attribute '",
            e.schema->qids[a].name, "' is not a value of the final cut"));
      }
      key[a] = it->second;
    }
    uint64_t bits = 0;
    for (size_t b = 0; b < m; ++b) {
      if (fields[static_cast<size_t>(roles.tracked_column[b])] == e.schema->tracked[b].value) {
        bits |= uint64_t{1} << b;
      }
    }
    uint64_t hist = 0;
    if (roles.distribution_column >= 0) {
      const std::string_view value = fields[static_cast<size_t>(roles.distribution_column)];
      const auto it = roles.distribution_values.find(absl::string_view(value.data(), value.size()));
      if (it == roles.distribution_values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the released table's row ", row, ": value '", std::string(value),
                         "' of the sensitive attribute is not one of its declared values"));
      }
      hist = it->second;
    }
    for (const FinalCheckConstraint& c : layout.constraints) {
      uint64_t index = 0;
      for (size_t i = 0; i < c.attrs.size(); ++i) {
        const int a = c.attrs[i];
        index = index * c.cut_labels[i].size() + static_cast<uint64_t>(positions_[a][key[a]]);
      }
      uint64_t* w = counts_.data() + c.offset + index * layout.Slot(c);
      w[0] += 1;
      for (size_t b = 0; b < m; ++b) w[1 + b] += bits >> b & 1;
      if (c.distribution) w[layout.stride + hist] += 1;
    }
    if (e.group_totals != nullptr) {
      std::vector<uint64_t>& g = groups_[key];
      g.resize(1 + m, 0);
      g[0] += 1;
      for (size_t b = 0; b < m; ++b) g[1 + b] += bits >> b & 1;
    }
  }
  if (records != rows.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the released table's ", rows.size(), " rows",
                     rows_ > 0 ? absl::StrCat(" from row ", rows_ + 1) : std::string(), " hold ",
                     records, " CSV records"));
  }
  rows_ += records;
  return absl::OkStatus();
}

absl::Status ReleasedTableChecker::Finish() const {
  const ReleasedTableExpectations& e = *e_;
  if (e.rows.has_value() && rows_ != *e.rows) {
    return absl::DataLossError(
        absl::StrCat("the released table holds ", rows_, " rows but the parties summed ", *e.rows,
                     " records: a party dropped or added rows in the secure union"));
  }
  if (e.group_totals != nullptr) {
    for (const auto& [group, agreed] : *e.group_totals) {
      const auto it = groups_.find(group);
      const uint64_t held = it == groups_.end() ? 0 : it->second[0];
      if (it == groups_.end() || it->second != agreed) {
        return absl::DataLossError(
            absl::StrCat("the released table's group ", KeyName(e, group), " holds ", held,
                         " rows (or other sensitive counts) but the parties summed ",
                         agreed.empty() ? 0 : agreed[0],
                         ": a party dropped, repeated or invented rows in the secure union"));
      }
    }
    for (const auto& [group, held] : groups_) {
      if (!e.group_totals->contains(group)) {
        return absl::DataLossError(absl::StrCat(
            "the released table's group ", KeyName(e, group), " holds ", held[0],
            " rows but no such group was agreed: a party invented rows in the secure union"));
      }
    }
  }
  if (e.final_check_totals != nullptr) {
    RETURN_IF_ERROR(CompareWithFinalCheck(*e.layout, counts_, *e.final_check_totals));
  }
  if (absl::Status model = CheckFinalCounts(*e.layout, counts_); !model.ok()) {
    return absl::Status(model.code(), absl::StrCat("the released table itself: ", model.message()));
  }
  return absl::OkStatus();
}

absl::Status CheckReleasedTable(const ReleasedTableExpectations& expected,
                                const std::vector<std::string>& rows) {
  // A row count that differs is named before any row is read.
  if (expected.rows.has_value() && rows.size() != *expected.rows && expected.layout != nullptr &&
      expected.schema != nullptr && expected.hier != nullptr) {
    return absl::DataLossError(absl::StrCat(
        "the released table holds ", rows.size(), " rows but the parties summed ", *expected.rows,
        " records: a party dropped or added rows in the secure union"));
  }
  ASSIGN_OR_RETURN(ReleasedTableChecker checker, ReleasedTableChecker::Create(expected));
  RETURN_IF_ERROR(checker.AddRows(rows));
  return checker.Finish();
}

}  // namespace fedanon::engine
