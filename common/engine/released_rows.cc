#include "common/engine/released_rows.h"

#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::common {

std::vector<int> ReleasedColumns(const fedanon::v1::JobSpec& spec, const Dataset& data,
                                 bool spec_order) {
  std::vector<int> out;
  auto released = [](const fedanon::v1::Attribute& a) { return a.role() != fedanon::v1::ROLE_ID; };
  if (spec_order) {
    for (const auto& a : spec.attributes()) {
      if (!released(a)) continue;
      for (size_t c = 0; c < data.header.size(); ++c) {
        if (data.header[c] == a.name()) out.push_back(static_cast<int>(c));
      }
    }
    return out;
  }
  for (size_t c = 0; c < data.header.size(); ++c) {
    for (const auto& a : spec.attributes()) {
      if (a.name() == data.header[c] && released(a)) out.push_back(static_cast<int>(c));
    }
  }
  return out;
}

absl::Status ForEachReleasedRow(
    const fedanon::v1::JobSpec& spec, const Dataset& data, const Tips& tips,
    const std::vector<AttributeHierarchy>& hier, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  std::vector<int> qid_of_column(data.header.size(), -1);
  for (size_t q = 0; q < data.qids.size(); ++q) {
    qid_of_column[data.qids[q].csv_column] = static_cast<int>(q);
  }
  std::vector<int32_t> part_of(data.num_records, -1);
  for (size_t p = 0; p < tips.partition_count(); ++p) {
    if (!tips.alive(static_cast<int32_t>(p))) continue;
    for (uint32_t r : tips.records(static_cast<int32_t>(p))) part_of[r] = static_cast<int32_t>(p);
  }
  std::vector<std::vector<std::string>> labels(hier.size());
  for (size_t a = 0; a < hier.size(); ++a) {
    for (size_t n = 0; n < hier[a].size(); ++n) {
      labels[a].push_back(hier[a].Label(static_cast<NodeIndex>(n), spec.suppression_token()));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> reader, ReopenSource(data));
  std::vector<std::string_view> fields, row;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InternalError("the input changed while anonymizing");
  size_t line = 0, record = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    if (line >= data.kept.size() || fields.size() != data.header.size()) {
      return absl::InternalError("the input changed while anonymizing");
    }
    if (!data.kept[line++]) continue;
    if (record >= data.num_records)
      return absl::InternalError("the input changed while anonymizing");
    row.clear();
    const int32_t p = part_of[record++];
    for (int c : columns) {
      const int q = qid_of_column[c];
      row.push_back(q < 0 ? fields[c] : std::string_view(labels[q][tips.key(p)[q]]));
    }
    emit(row);
  }
  if (record != data.num_records) return absl::InternalError("the input changed while anonymizing");
  return absl::OkStatus();
}

}  // namespace fedanon::common
