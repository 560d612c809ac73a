// Builders of generalization hierarchies in ARX's CSV format (`leaf;parent;...;root` per line,
// the format common/table/taxonomy.h reads), after ARX's hierarchy builders (docs/hierarchies.md):
//
//  * interval: numbers into intervals [lo-hi) of a width, joined `fanout` at a time per level;
//  * masking: codes of a fixed length masked from the right (47677 -> 4767* -> 476** ...);
//  * date: days generalized to month, quarter, year, decade, century;
//  * ordered: categories in a given order grouped into runs of `fanout` per level.
//
// The leaves come from the definition itself (an interval `step`, a masking `alphabet`, the dates
// `from`..`to`, the ordered list) or from a list of values: a public values file, or — the
// centralized convenience — the distinct values of a table's column. Listed values the
// definition cannot cover are refused by where they were read and their value ("ages.txt:7:
// value '130' lies outside every interval [0, 100)"); so is a definition with parameters that
// make no hierarchy. Every built text is parsed back with Taxonomy::ParseArx before it is
// returned, so what is written is what the engine will read.
//
// Federated jobs take hierarchies built from definitions only (BuildFromDefinition): the values
// file, if any, must be a public list; a party's table is never read for them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::hierarchies {

inline constexpr size_t kMaxHierarchyLeaves = 1000000;

// Values with where each was first read ("file:line"), distinct, in order of first appearance.
struct ValueList {
  std::vector<std::pair<std::string, std::string>> values;  // (value, where)
};

// A values file: one value per line (trailing CR and surrounding blanks dropped, blank lines
// skipped). NotFound / InvalidArgument naming the file.
absl::StatusOr<ValueList> ReadValuesFile(const std::string& path);
// The distinct values of column `column` of the CSV table `path`, except `missing_token` (the
// engine drops or keeps missing values itself). InvalidArgument when the column is absent.
absl::StatusOr<ValueList> ReadColumnValues(const std::string& path, const std::string& column,
                                           const std::string& missing_token);

// The definition's parameters make a hierarchy (InvalidArgument naming the attribute and the
// parameter otherwise). The attribute name is only used in messages.
absl::Status ValidateHierarchyDefinition(const fedanon::v1::HierarchyDefinition& definition);

// Whether the definition gives its own leaves (step, alphabet, from/to, ordered list).
bool DefinitionHasLeaves(const fedanon::v1::HierarchyDefinition& definition);

// The ARX CSV text (`;`-separated, one line per leaf, LF) of `definition` over `values` (null:
// the definition's own leaves). With both, every listed value must be one of the definition's
// leaves, written the same way.
absl::StatusOr<std::string> BuildHierarchyText(const fedanon::v1::HierarchyDefinition& definition,
                                               const ValueList* values);

// The hierarchy from public definitions only: the definition's own leaves, or its `values` file;
// FailedPrecondition when it has neither (it would need a table).
absl::StatusOr<std::string> BuildFromDefinition(const fedanon::v1::HierarchyDefinition& definition);

// A federated job's check (docs/hierarchies.md): every hierarchy the spec's `hierarchy` section
// defines, rebuilt from its public definition, must equal the taxonomy text the job ships for
// that attribute (`taxonomy_by_attribute`: attribute -> file content). FailedPrecondition naming
// the attribute when a definition needs a table, or when the shipped file differs (e.g. it was
// built from one party's data).
absl::Status CheckFederatedHierarchies(
    const fedanon::v1::JobSpec& spec,
    const std::map<std::string, std::string>& taxonomy_by_attribute);

// What a built text contains, for summaries: leaves and levels below the root.
struct HierarchyShape {
  size_t leaves = 0;
  size_t levels = 0;
};
HierarchyShape ShapeOf(const std::string& text);

}  // namespace fedanon::hierarchies
