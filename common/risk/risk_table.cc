#include "common/risk/risk_table.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"

namespace fedanon::risk {

absl::StatusOr<QidCodes> ReadQidCodes(const fedanon::v1::JobSpec& spec, table::CsvReader* reader) {
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(const bool has_header, reader->Next(&fields));
  if (!has_header) {
    return absl::InvalidArgumentError(absl::StrCat(reader->source_name(), " is empty"));
  }
  const std::vector<std::string> header(fields.begin(), fields.end());
  auto column_of = [&](const std::string& name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  QidCodes table;
  std::vector<int> qid_columns;
  std::vector<int> listed_columns;  // spec attributes present: a missing value drops the row
  for (const auto& a : spec.attributes()) {
    const int c = column_of(a.name());
    if (a.role() == fedanon::v1::ROLE_QID) {
      if (c < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("QID attribute '", a.name(), "' is not a column of ",
                         reader->source_name(), " (columns: ", absl::StrJoin(header, ", "), ")"));
      }
      table.names.push_back(a.name());
      qid_columns.push_back(c);
    }
    if (c >= 0) listed_columns.push_back(c);
  }
  const bool drop_missing = spec.missing() != fedanon::v1::MISSING_KEEP;
  std::vector<absl::flat_hash_map<std::string, uint32_t>> dictionaries(qid_columns.size());
  table.columns.resize(qid_columns.size());
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next(&fields));
    if (!more) break;
    RETURN_IF_ERROR(reader->CheckFieldCount(fields, header.size()));
    if (drop_missing && std::any_of(listed_columns.begin(), listed_columns.end(),
                                    [&](int c) { return fields[c] == spec.missing_token(); })) {
      ++table.dropped;
      continue;
    }
    for (size_t q = 0; q < qid_columns.size(); ++q) {
      auto& dictionary = dictionaries[q];
      auto [it, inserted] = dictionary.try_emplace(std::string(fields[qid_columns[q]]),
                                                   static_cast<uint32_t>(dictionary.size()));
      table.columns[q].push_back(it->second);
    }
    ++table.records;
  }
  if (table.records == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader->source_name(), " has no data rows",
                     table.dropped ? " left after dropping missing values" : ""));
  }
  return table;
}

absl::StatusOr<QidCodes> ReadQidCodes(const fedanon::v1::JobSpec& spec, const std::string& path,
                                      const table::CsvOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(path, options));
  return ReadQidCodes(spec, reader.get());
}

QidCodes QidCodesOf(const table::Dataset& data) {
  QidCodes table;
  table.records = data.num_records;
  table.dropped = data.records_dropped;
  for (const table::QidColumn& q : data.qids) {
    table.names.push_back(q.name);
    table.columns.emplace_back(q.codes.begin(), q.codes.end());
  }
  return table;
}

}  // namespace fedanon::risk
