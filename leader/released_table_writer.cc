#include "leader/released_table_writer.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "crypto/shuffle.h"

namespace fedanon::leader {

absl::Status WriteTableBuffered(const std::string& header_line, size_t n,
                                const std::function<std::string_view(size_t)>& line,
                                const JobStore::ResultWriter& write) {
  constexpr size_t kBuffer = size_t{4} << 20;
  std::string buffer = header_line;
  buffer.reserve(kBuffer + 4096);
  for (size_t i = 0; i < n; ++i) {
    buffer += line(i);
    if (buffer.size() >= kBuffer) {
      RETURN_IF_ERROR(write(buffer));
      buffer.clear();
    }
  }
  return buffer.empty() ? absl::OkStatus() : write(buffer);
}

namespace {

// The counts are the parties' sums: before one row is written per record they must add up to the
// job's records (a wrong sum would make the leader write, and allocate, any number of rows).
absl::Status CheckCountsAddUp(const std::vector<uint64_t>& counts, uint64_t total_records) {
  uint64_t sum = 0;
  for (uint64_t n : counts) {
    if (n > total_records - sum) {
      return absl::DataLossError(
          absl::StrCat("the released counts add up to more than the job's ", total_records,
                       " records (a party answered inconsistently); nothing was released"));
    }
    sum += n;
  }
  if (sum != total_records) {
    return absl::DataLossError(absl::StrCat("the released counts add up to ", sum,
                                            ", not the job's ", total_records,
                                            " records (a party answered inconsistently); nothing "
                                            "was released"));
  }
  return absl::OkStatus();
}

// Per released column (every attribute but the record id, in spec order, named in `header`): a
// QID index (>= 0) or a value column (-1 - index).
absl::StatusOr<std::vector<int>> ReleasedColumnSources(const fedanon::v1::JobSpec& spec,
                                                       const table::Dataset& schema,
                                                       std::vector<std::string_view>* header) {
  std::vector<int> source;
  for (const auto& a : spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_ID) continue;
    header->push_back(a.name());
    int src = 0;
    bool found = false;
    for (size_t q = 0; q < schema.qids.size(); ++q) {
      if (schema.qids[q].name == a.name()) src = static_cast<int>(q), found = true;
    }
    for (size_t v = 0; v < schema.value_columns.size() && !found; ++v) {
      if (schema.value_columns[v].name == a.name()) src = -1 - static_cast<int>(v), found = true;
    }
    if (!found) return absl::InternalError("released column without a source");
    source.push_back(src);
  }
  return source;
}

// Per tracked sensitive value: its value column and its index there (-1: not released here).
std::vector<std::pair<int, int32_t>> TrackedValueColumns(const table::Dataset& schema) {
  std::vector<std::pair<int, int32_t>> tracked_at;
  for (const table::TrackedSensitive& t : schema.tracked) {
    std::pair<int, int32_t> at{-1, -1};
    for (size_t v = 0; v < schema.value_columns.size(); ++v) {
      const auto& values = schema.value_columns[v].values;
      if (schema.value_columns[v].name != t.attribute) continue;
      const auto it = std::find(values.begin(), values.end(), t.value);
      if (it != values.end()) at = {static_cast<int>(v), static_cast<int32_t>(it - values.begin())};
    }
    tracked_at.push_back(at);
  }
  return tracked_at;
}

// The value of each value column in combination `c` (the last column varies fastest).
void DecodeCombination(const table::Dataset& schema, uint64_t c, std::vector<int32_t>* index) {
  for (size_t v = schema.value_columns.size(); v-- > 0;) {
    const uint64_t size = std::max<uint64_t>(1, schema.value_columns[v].values.size());
    (*index)[v] = static_cast<int32_t>(c % size);
    c /= size;
  }
}

}  // namespace

absl::Status WriteReleasedTableFromCounts(
    const fedanon::v1::JobSpec& spec, const table::Dataset& schema, size_t groups,
    const std::function<std::vector<std::string>(size_t)>& labels_of,
    const std::vector<uint64_t>& counts, uint64_t total_records,
    const JobStore::ResultWriter& write, const std::vector<std::vector<uint64_t>>* group_totals) {
  const uint64_t combos = schema.ValueCombinations();
  if (counts.size() != groups * combos) {
    return absl::InternalError("released counts have the wrong length");
  }
  RETURN_IF_ERROR(CheckCountsAddUp(counts, total_records));
  std::vector<std::string_view> header;
  ASSIGN_OR_RETURN(const std::vector<int> source, ReleasedColumnSources(spec, schema, &header));
  // The distinct rows (at most the 50M released words, so their numbers fit 32 bits), and per
  // record the number of its row.
  std::vector<std::string> lines;
  std::vector<uint32_t> line_of;
  // One number per record: the records are bounded by the signed job (EngineOptions::max_records);
  // a leader without the memory for them fails the job, not the process.
  try {
    line_of.reserve(total_records);
  } catch (const std::exception&) {  // std::bad_alloc, std::length_error
    return absl::ResourceExhaustedError(absl::StrCat("the leader has not the memory to write ",
                                                     total_records,
                                                     " released rows; nothing was released"));
  }
  std::vector<std::string_view> row(source.size());
  std::vector<int32_t> value_index(schema.value_columns.size());
  const std::vector<std::pair<int, int32_t>> tracked_at = TrackedValueColumns(schema);
  if (group_totals != nullptr && group_totals->size() != groups) {
    return absl::InternalError("the rounds' group totals do not match the released groups");
  }
  std::vector<uint64_t> held(1 + tracked_at.size());
  for (size_t g = 0; g < groups; ++g) {
    std::fill(held.begin(), held.end(), 0);
    const std::vector<std::string> labels = labels_of(g);
    if (labels.size() != schema.qids.size()) {
      return absl::InternalError("a released group without a label per QID attribute");
    }
    for (uint64_t c = 0; c < combos; ++c) {
      const uint64_t n = counts[g * combos + c];
      if (n == 0) continue;
      DecodeCombination(schema, c, &value_index);
      for (size_t i = 0; i < source.size(); ++i) {
        row[i] =
            source[i] >= 0
                ? std::string_view(labels[source[i]])
                : std::string_view(
                      schema.value_columns[-1 - source[i]].values[value_index[-1 - source[i]]]);
      }
      lines.push_back(table::CsvLine(row));
      line_of.insert(line_of.end(), n, static_cast<uint32_t>(lines.size() - 1));
      held[0] += n;
      for (size_t b = 0; b < tracked_at.size(); ++b) {
        if (tracked_at[b].first >= 0 && value_index[tracked_at[b].first] == tracked_at[b].second) {
          held[1 + b] += n;
        }
      }
    }
    if (group_totals != nullptr && (*group_totals)[g] != held) {
      const std::vector<uint64_t>& agreed = (*group_totals)[g];
      return absl::DataLossError(
          absl::StrCat("the released counts of group (", absl::StrJoin(labels, ", "), ") hold ",
                       held[0], " records (or other sensitive counts) but the rounds summed ",
                       agreed.empty() ? 0 : agreed[0],
                       " (a party moved records between groups or values); nothing was released"));
    }
  }
  std::vector<size_t> perm;
  try {
    ASSIGN_OR_RETURN(perm, crypto::SecurePermutation(line_of.size()));
  } catch (const std::exception&) {  // std::bad_alloc
    return absl::ResourceExhaustedError(absl::StrCat("the leader has not the memory to shuffle ",
                                                     total_records,
                                                     " released rows; nothing was released"));
  }
  return WriteTableBuffered(
      table::CsvLine(header), perm.size(),
      [&](size_t i) -> std::string_view { return lines[line_of[perm[i]]]; }, write);
}

}  // namespace fedanon::leader
