#include "common/evaluation/information_loss.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/table/csv.h"

namespace fedanon::evaluation {
namespace {

// Leaves under every node of `t` (a leaf counts itself). Parents are created before their
// children (taxonomy.h), so one pass from the last node up adds each node to its parent.
std::vector<double> LeavesUnder(const table::Taxonomy& t) {
  std::vector<double> leaves(t.size(), 0);
  for (table::Taxonomy::NodeId n = static_cast<table::Taxonomy::NodeId>(t.size()) - 1; n >= 0;
       --n) {
    if (t.is_leaf(n)) leaves[n] += 1;
    if (n != t.root()) leaves[t.parent(n)] += leaves[n];
  }
  return leaves;
}

struct Column {
  const fedanon::v1::Attribute* attribute = nullptr;
  int csv_column = -1;
  const table::Taxonomy* taxonomy = nullptr;
  std::vector<double> leaves;                         // taxonomy: leaves per node
  absl::flat_hash_map<std::string, uint64_t> counts;  // released value -> records
};

}  // namespace

bool ParseIntervalLabel(std::string_view label, double* lo, double* hi) {
  if (label.size() < 5 || label.front() != '[' || label.back() != ')') return false;
  const std::string inner(label.substr(1, label.size() - 2));
  char* end = nullptr;
  *lo = std::strtod(inner.c_str(), &end);
  if (end == inner.c_str() || *end != '-') return false;
  const char* second = end + 1;
  *hi = std::strtod(second, &end);
  return end != second && *end == '\0' && std::isfinite(*lo) && std::isfinite(*hi) && *lo < *hi;
}

absl::StatusOr<std::vector<fedanon::v1::AttributeLoss>> AttributeLosses(
    const fedanon::v1::JobSpec& spec, const std::string& released_path,
    const LossContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(released_path));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(const bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InvalidArgumentError(base::Cat(released_path, " is empty"));
  const std::vector<std::string> header(fields.begin(), fields.end());
  std::vector<Column> columns;
  for (const auto& a : spec.attributes()) {
    if (a.role() != fedanon::v1::ROLE_QID) continue;
    auto it = std::find(header.begin(), header.end(), a.name());
    if (it == header.end()) {
      return absl::InvalidArgumentError(
          base::Cat("QID attribute '", a.name(), "' is not a column of ", released_path));
    }
    Column c;
    c.attribute = &a;
    c.csv_column = static_cast<int>(it - header.begin());
    if (auto t = context.taxonomies.find(a.name()); t != context.taxonomies.end() && t->second) {
      c.taxonomy = t->second.get();
      c.leaves = LeavesUnder(*c.taxonomy);
    }
    columns.push_back(std::move(c));
  }
  uint64_t records = 0;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, header.size()));
    ++records;
    for (Column& c : columns) ++c.counts[base::Av(fields[c.csv_column])];
  }
  std::vector<fedanon::v1::AttributeLoss> losses;
  for (Column& c : columns) {
    const fedanon::v1::Attribute& a = *c.attribute;
    const bool continuous =
        c.taxonomy == nullptr && a.type() == fedanon::v1::ATTRIBUTE_TYPE_CONTINUOUS;
    double range_lo = std::numeric_limits<double>::infinity();
    double range_hi = -std::numeric_limits<double>::infinity();
    if (continuous) {
      if (auto r = context.ranges.find(a.name()); r != context.ranges.end()) {
        range_lo = r->second.first;
        range_hi = r->second.second;
      } else if (a.range_size() == 2) {
        range_lo = a.range(0);
        range_hi = a.range(1);
      } else {
        for (const auto& [value, count] : c.counts) {
          double lo = 0, hi = 0;
          if (ParseIntervalLabel(value, &lo, &hi)) {
            range_lo = std::min(range_lo, lo);
            range_hi = std::max(range_hi, hi);
          } else if (absl::SimpleAtod(value, &lo)) {
            range_lo = std::min(range_lo, lo);
            range_hi = std::max(range_hi, lo);
          }
        }
      }
    }
    double total = 0;
    for (const auto& [value, count] : c.counts) {
      double loss = 0;
      if (value == spec.suppression_token() &&
          (c.taxonomy == nullptr || !c.taxonomy->Find(value).has_value())) {
        loss = 1;
      } else if (c.taxonomy != nullptr) {
        const std::optional<table::Taxonomy::NodeId> node = c.taxonomy->Find(value);
        if (!node.has_value()) {
          return absl::InvalidArgumentError(base::Cat(released_path, ": value '", value,
                                                      "' of attribute '", a.name(),
                                                      "' is not in its taxonomy"));
        }
        const double all = c.leaves[c.taxonomy->root()];
        loss = all > 1 ? (c.leaves[*node] - 1) / (all - 1) : 0;
      } else if (continuous) {
        double lo = 0, hi = 0;
        if (ParseIntervalLabel(value, &lo, &hi) && range_hi > range_lo) {
          loss = std::min(1.0, (hi - lo) / (range_hi - range_lo));
        }
      }
      total += loss * static_cast<double>(count);
    }
    fedanon::v1::AttributeLoss out;
    out.set_attribute(a.name());
    out.set_loss(records > 0 ? total / static_cast<double>(records) : 0);
    out.set_distinct_values(c.counts.size());
    losses.push_back(std::move(out));
  }
  return losses;
}

}  // namespace fedanon::evaluation
