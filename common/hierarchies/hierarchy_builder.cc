#include "common/hierarchies/hierarchy_builder.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/hierarchies/hierarchy_kinds.h"
#include "common/table/csv.h"
#include "common/table/taxonomy.h"

namespace fedanon::hierarchies {
namespace hierarchy_internal {

absl::Status DefinitionError(std::string_view attribute, std::string_view what) {
  return absl::InvalidArgumentError(base::Cat("hierarchy for '", attribute, "': ", what));
}

absl::Status ValueError(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(base::Cat(where, ": ", what));
}

std::string FormatHierarchyNumber(double x) {
  if (x == 0) return "0";  // not "-0"
  return absl::StrFormat("%.15g", x);
}

}  // namespace hierarchy_internal

namespace {

using fedanon::v1::HierarchyDefinition;
using hierarchy_internal::DateRows;
using hierarchy_internal::DefinitionError;
using hierarchy_internal::HierarchyRows;
using hierarchy_internal::IntervalRows;
using hierarchy_internal::MaskingRows;
using hierarchy_internal::OrderedRows;
using hierarchy_internal::ValidateDate;
using hierarchy_internal::ValidateInterval;
using hierarchy_internal::ValidateMasking;
using hierarchy_internal::ValidateOrdered;

// Adds `value` (first seen at `where`) unless already listed.
void AddValue(std::string value, std::string where, absl::flat_hash_set<std::string>* seen,
              ValueList* list) {
  if (seen->insert(value).second) list->values.emplace_back(std::move(value), std::move(where));
}

absl::StatusOr<HierarchyRows> RowsOf(const HierarchyDefinition& d, const ValueList* values) {
  switch (d.kind_case()) {
    case HierarchyDefinition::kInterval:
      return IntervalRows(d.interval(), values, d.attribute());
    case HierarchyDefinition::kMasking:
      return MaskingRows(d.masking(), values, d.attribute());
    case HierarchyDefinition::kDate:
      return DateRows(d.date(), values, d.attribute());
    case HierarchyDefinition::kOrdered:
      return OrderedRows(d.ordered(), values, d.attribute());
    default:
      return DefinitionError(d.attribute(), "give one of interval, masking, date or ordered");
  }
}

}  // namespace

absl::StatusOr<ValueList> ReadValuesFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   base::ReadFile(path, base::ReadFileOptions{.max_bytes = base::kMaxTaxonomyBytes,
                                                              .max_line_bytes = base::kMaxLineBytes,
                                                              .what = "values file"}));
  ValueList list;
  absl::flat_hash_set<std::string> seen;
  size_t line = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line;
    const absl::string_view value = absl::StripAsciiWhitespace(raw);
    if (value.empty()) continue;
    AddValue(std::string(value), base::Cat(path, ":", line), &seen, &list);
  }
  if (list.values.empty()) {
    return absl::InvalidArgumentError(base::Cat(path, ": the values file lists no value"));
  }
  return list;
}

absl::StatusOr<ValueList> ReadColumnValues(const std::string& path, const std::string& column,
                                           const std::string& missing_token) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(const bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(base::Cat(path, " is empty"));
  const std::vector<std::string> header(fields.begin(), fields.end());
  auto it = std::find(header.begin(), header.end(), column);
  if (it == header.end()) {
    return absl::InvalidArgumentError(base::Cat("column '", column, "' is not in ", path,
                                                " (columns: ", absl::StrJoin(header, ", "), ")"));
  }
  const size_t c = static_cast<size_t>(it - header.begin());
  ValueList list;
  absl::flat_hash_set<std::string> seen;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, header.size()));
    if (fields[c] == missing_token) continue;
    if (!seen.contains(base::Av(fields[c]))) {
      AddValue(std::string(fields[c]), base::Cat(path, ":", reader->line(), " (", column, ")"),
               &seen, &list);
    }
  }
  if (list.values.empty()) {
    return absl::InvalidArgumentError(base::Cat(path, ": column '", column, "' has no value"));
  }
  return list;
}

absl::Status ValidateHierarchyDefinition(const HierarchyDefinition& d) {
  switch (d.kind_case()) {
    case HierarchyDefinition::kInterval:
      return ValidateInterval(d.interval(), d.attribute());
    case HierarchyDefinition::kMasking:
      return ValidateMasking(d.masking(), d.attribute());
    case HierarchyDefinition::kDate:
      return ValidateDate(d.date(), d.attribute());
    case HierarchyDefinition::kOrdered:
      return ValidateOrdered(d.ordered(), d.attribute());
    default:
      return DefinitionError(d.attribute(), "give one of interval, masking, date or ordered");
  }
}

bool DefinitionHasLeaves(const HierarchyDefinition& d) {
  switch (d.kind_case()) {
    case HierarchyDefinition::kInterval:
      return d.interval().step() > 0;
    case HierarchyDefinition::kMasking:
      return !d.masking().alphabet().empty();
    case HierarchyDefinition::kDate:
      return !d.date().from().empty();
    case HierarchyDefinition::kOrdered:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::string> BuildHierarchyText(const HierarchyDefinition& d,
                                               const ValueList* values) {
  if (values != nullptr && values->values.size() > kMaxHierarchyLeaves) {
    return DefinitionError(d.attribute(),
                           base::Cat("more than ", kMaxHierarchyLeaves, " distinct values"));
  }
  ASSIGN_OR_RETURN(const HierarchyRows rows, RowsOf(d, values));
  std::string text;
  for (const std::vector<std::string>& row : rows) {
    for (const std::string& label : row) {
      if (label.find(';') != std::string::npos) {
        return DefinitionError(d.attribute(),
                               base::Cat("value '", label, "' contains ';', the separator"));
      }
    }
    absl::StrAppend(&text, absl::StrJoin(row, ";"), "\n");
  }
  // What is written must read back as the same tree (one parent per label, leaves as leaves).
  ASSIGN_OR_RETURN(
      const table::Taxonomy parsed,
      table::Taxonomy::ParseArx(text, base::Cat("the hierarchy built for '", d.attribute(), "'"),
                                d.attribute()));
  size_t leaves = 0;
  for (table::Taxonomy::NodeId n = 0; n < static_cast<table::Taxonomy::NodeId>(parsed.size());
       ++n) {
    leaves += parsed.is_leaf(n);
  }
  if (leaves != rows.size()) {
    return DefinitionError(d.attribute(),
                           "a generalization's label equals a value; the built hierarchy would "
                           "not keep every value as a leaf");
  }
  return text;
}

absl::StatusOr<std::string> BuildFromDefinition(const HierarchyDefinition& d) {
  if (!d.values().empty()) {
    ASSIGN_OR_RETURN(const ValueList values, ReadValuesFile(d.values()));
    return BuildHierarchyText(d, &values);
  }
  if (!DefinitionHasLeaves(d)) {
    return absl::FailedPreconditionError(base::Cat(
        "hierarchy for '", d.attribute(),
        "' gives no values of its own (interval step, masking alphabet, date from/to) and no "
        "values file: it can only be built from a table (fedanon hierarchy spec --input, "
        "centralized jobs only)"));
  }
  return BuildHierarchyText(d, nullptr);
}

absl::Status CheckFederatedHierarchies(
    const fedanon::v1::JobSpec& spec,
    const std::map<std::string, std::string>& taxonomy_by_attribute) {
  for (const HierarchyDefinition& d : spec.hierarchy()) {
    absl::StatusOr<std::string> built = BuildFromDefinition(d);
    if (!built.ok()) {
      return absl::FailedPreconditionError(
          base::Cat("a federated job builds its hierarchies from public definitions only: ",
                    built.status().message()));
    }
    auto it = taxonomy_by_attribute.find(d.attribute());
    if (it == taxonomy_by_attribute.end() || it->second != *built) {
      return absl::FailedPreconditionError(base::Cat(
          "the taxonomy file of attribute '", d.attribute(),
          "' is not what the spec's hierarchy definition builds (a federated job takes "
          "hierarchies built from public definitions only, never from one party's table): "
          "write it with `fedanon hierarchy spec --spec JOB.yaml`"));
    }
  }
  return absl::OkStatus();
}

HierarchyShape ShapeOf(const std::string& text) {
  HierarchyShape shape;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++shape.leaves;
    std::vector<absl::string_view> labels = absl::StrSplit(line, ';');
    labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
    shape.levels = std::max(shape.levels, labels.size() - 1);
  }
  return shape;
}

}  // namespace fedanon::hierarchies
