#include "common/engine/released_rows.h"

#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/base/huge_pages.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"

namespace fedanon::engine {

std::vector<int> ReleasedColumns(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
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

namespace {

// Formatted rows are handed to the writer in pieces of about this size when they are not
// formatted ahead by other threads, from one string with room for a piece and a long row: each
// of its pages is a fresh one touched once per job, so that a MiB (with 2 MiB of room) was a
// tenth of UCI Adult's page faults, and a quarter of it writes as fast.
constexpr size_t kStreamedWrite = size_t{256} << 10;
constexpr size_t kStreamedRoom = kStreamedWrite + (size_t{64} << 10);

absl::Status InputChanged() { return absl::InternalError("the input changed while anonymizing"); }

// What every released row needs: the QID of each input column, the group of each record and
// the label of every node.
struct ReleasePlan {
  std::vector<int> qid_of_column;
  std::vector<int32_t> part_of;
  std::vector<std::vector<std::string>> labels;

  ReleasePlan(const fedanon::v1::JobSpec& spec, const table::Dataset& data, const Tips& tips,
              const std::vector<AttributeHierarchy>& hier)
      : qid_of_column(data.header.size(), -1), part_of(data.num_records, -1), labels(hier.size()) {
    for (size_t q = 0; q < data.qids.size(); ++q) {
      qid_of_column[data.qids[q].csv_column] = static_cast<int>(q);
    }
    for (size_t p = 0; p < tips.partition_count(); ++p) {
      if (!tips.alive(static_cast<int32_t>(p))) continue;
      for (uint32_t r : tips.records(static_cast<int32_t>(p))) part_of[r] = static_cast<int32_t>(p);
    }
    for (size_t a = 0; a < hier.size(); ++a) {
      for (size_t n = 0; n < hier[a].size(); ++n) {
        labels[a].push_back(hier[a].Label(static_cast<NodeIndex>(n), spec.suppression_token()));
      }
    }
  }

  // AppendCsvRecord of Row(...) with `separator`, without the row and into room made once per
  // row: the labels are quoted once (PrepareQuoted) instead of once per record.
  void AppendRow(const Tips& tips, const std::vector<int>& columns,
                 const std::vector<std::string_view>& fields, size_t record, char separator,
                 std::string* out) const {
    if (columns.size() == 1 || separator != quoted_separator || columns != quoted_columns) {
      std::vector<std::string_view> row;  // AppendCsvRecord's special case, or not prepared
      Row(tips, columns, fields, record, &row);
      table::AppendCsvRecord(row, separator, out);
      return;
    }
    size_t bound = fixed_bound;
    for (int c : copied_columns) bound += table::CsvFieldBound(fields[c]);
    const size_t old = out->size();
    if (out->capacity() < old + bound) out->reserve(std::max(2 * out->capacity(), old + bound));
    out->resize(old + bound);
    char* const begin = out->data();
    char* p = begin + old;
    const std::vector<NodeIndex>& key = tips.key(part_of[record]);
    bool first = true;
    for (int c : columns) {
      if (!first) *p++ = separator;
      first = false;
      const int q = qid_of_column[c];
      if (q < 0) {
        p = table::WriteCsvField(fields[c], separator, p);
      } else {
        const std::string& label = quoted[q][key[q]];
        p = std::copy(label.begin(), label.end(), p);
      }
    }
    *p++ = '\n';
    out->resize(static_cast<size_t>(p - begin));
  }

  // Every label as AppendCsvField writes it with `separator`, and the most bytes a row of
  // `columns` takes but for its copied fields.
  void PrepareQuoted(char separator, const std::vector<int>& columns) {
    quoted_separator = separator;
    quoted_columns = columns;
    quoted.resize(labels.size());
    std::vector<size_t> longest(labels.size(), 0);
    for (size_t a = 0; a < labels.size(); ++a) {
      quoted[a].clear();
      for (const std::string& label : labels[a]) {
        quoted[a].emplace_back();
        table::AppendCsvField(label, separator, &quoted[a].back());
        longest[a] = std::max(longest[a], quoted[a].back().size());
      }
    }
    fixed_bound = columns.size() + 1;  // the separators and the newline
    copied_columns.clear();
    for (int c : columns) {
      if (qid_of_column[c] < 0) {
        copied_columns.push_back(c);
      } else {
        fixed_bound += longest[qid_of_column[c]];
      }
    }
  }
  std::vector<std::vector<std::string>> quoted;
  char quoted_separator = 0;
  std::vector<int> quoted_columns;
  std::vector<int> copied_columns;  // of quoted_columns, those copied from the input
  size_t fixed_bound = 0;

  // The released values of `record` (input `fields`) for `columns`, into `row`.
  void Row(const Tips& tips, const std::vector<int>& columns,
           const std::vector<std::string_view>& fields, size_t record,
           std::vector<std::string_view>* row) const {
    row->clear();
    const int32_t p = part_of[record];
    for (int c : columns) {
      const int q = qid_of_column[c];
      row->push_back(q < 0 ? fields[c] : std::string_view(labels[q][tips.key(p)[q]]));
    }
  }
};

}  // namespace

absl::Status ForEachReleasedRow(
    const fedanon::v1::JobSpec& spec, const table::Dataset& data, const Tips& tips,
    const std::vector<AttributeHierarchy>& hier, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  const ReleasePlan plan(spec, data, tips, hier);
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::ReopenSource(data));
  std::vector<std::string_view> fields, row;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return InputChanged();
  size_t line = 0, record = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    if (line >= data.kept.size() || fields.size() != data.header.size()) return InputChanged();
    if (!data.kept[line++]) continue;
    if (record >= data.num_records) return InputChanged();
    plan.Row(tips, columns, fields, record++, &row);
    emit(row);
  }
  if (record != data.num_records) return InputChanged();
  return absl::OkStatus();
}

absl::Status WriteReleasedRows(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                               const Tips& tips, const std::vector<AttributeHierarchy>& hier,
                               const std::vector<int>& columns, char separator,
                               const std::function<absl::Status(std::string_view)>& write) {
  if (data.source_text != nullptr || data.checkpoints.empty()) {
    std::string text;
    text.reserve(kStreamedRoom);  // no copy as it grows (but for a row beyond the room)
    absl::Status status;
    RETURN_IF_ERROR(ForEachReleasedRow(spec, data, tips, hier, columns,
                                       [&](const std::vector<std::string_view>& row) {
                                         table::AppendCsvRecord(row, separator, &text);
                                         if (text.size() < kStreamedWrite || !status.ok()) return;
                                         status = write(text);
                                         text.clear();
                                       }));
    RETURN_IF_ERROR(status);
    return write(text);
  }
  ReleasePlan plan(spec, data, tips, hier);
  plan.PrepareQuoted(separator, columns);
  // The input's separator, as the load detected it.
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> probe,
                   table::CsvReader::Open(data.source_path));
  const char input_separator = probe->separator();
  probe.reset();
  struct stat st;
  if (::stat(data.source_path.c_str(), &st) != 0) return InputChanged();
  const auto& cps = data.checkpoints;
  const size_t blocks = cps.size();
  // Block b: the rows from checkpoint b to the next (the file's end after the last). With
  // `stream`, each MiB formatted is written at once (and `*text` is left with the rest).
  auto block_end = [&](size_t b) {
    return b + 1 < blocks ? cps[b + 1].offset : static_cast<uint64_t>(st.st_size);
  };
  auto format_block = [&](size_t b, std::string* text, bool stream) -> absl::Status {
    const uint64_t end = block_end(b);
    const uint64_t row_end = b + 1 < blocks ? cps[b + 1].row : data.kept.size();
    const uint64_t record_end = b + 1 < blocks ? cps[b + 1].record : data.num_records;
    ASSIGN_OR_RETURN(
        std::unique_ptr<table::CsvReader> reader,
        table::CsvReader::OpenRange(data.source_path, cps[b].offset, end, 1,
                                    {.separator = input_separator, .max_line_bytes = 0}));
    std::vector<std::string_view> fields;
    uint64_t r = cps[b].row, record = cps[b].record;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
      if (!more) break;
      if (r >= row_end || fields.size() != data.header.size()) return InputChanged();
      if (!data.kept[r++]) continue;
      if (record >= record_end) return InputChanged();
      plan.AppendRow(tips, columns, fields, record++, separator, text);
      if (stream && text->size() >= kStreamedWrite) {
        RETURN_IF_ERROR(write(*text));
        text->clear();
      }
    }
    if (r != row_end || record != record_end) return InputChanged();
    return absl::OkStatus();
  };
  // A single block (a table of fewer than kCheckpointRows rows) leaves nothing to do in
  // parallel: it is formatted and written here, a MiB at a time, so that a small table's release
  // is never held whole as text (4 MiB of it for Adult's 45,222 rows, 12 MiB while it grew).
  if (blocks == 1) {
    std::string text;
    text.reserve(kStreamedRoom);  // no copy as it grows (but for a row beyond the room)
    RETURN_IF_ERROR(format_block(0, &text, /*stream=*/true));
    return write(text);
  }
  // Two threads format blocks (each the next one not taken, at most kAhead beyond the one being
  // written); this thread writes them in order.
  constexpr size_t kAhead = 3;
  std::vector<std::string> texts(blocks);
  std::vector<absl::Status> statuses(blocks);
  std::vector<char> done(blocks, 0);
  // Texts already written, kept for their room: a block is formatted into one of them (no
  // string grows from nothing and no fresh memory is touched for every block).
  std::vector<std::string> spare;
  size_t next_block = 0, taken_by_writer = 0;
  bool stop = false;
  absl::Mutex mu;
  absl::CondVar changed;
  auto work = [&] {
    std::string text;
    for (;;) {
      size_t b;
      {
        absl::MutexLock lock(&mu);
        while (!stop && next_block < blocks && next_block >= taken_by_writer + kAhead) {
          changed.Wait(&mu);
        }
        if (stop || next_block >= blocks) return;
        b = next_block++;
        if (!spare.empty()) {
          text = std::move(spare.back());
          spare.pop_back();
        }
      }
      text.clear();
      // Room for the block at once (its rows in the input, and a quarter more for labels longer
      // than the values): a string that grew by doubling would copy itself and touch fresh
      // memory at each step, which on these virtual machines costs more than the formatting.
      const uint64_t input_bytes = block_end(b) - cps[b].offset;
      base::ReserveWithHugePages(text, input_bytes + input_bytes / 4 + 4096);
      absl::Status status = format_block(b, &text, /*stream=*/false);
      absl::MutexLock lock(&mu);
      texts[b] = std::move(text);
      statuses[b] = std::move(status);
      done[b] = 1;
      changed.SignalAll();
    }
  };
  std::thread first(work), second(work);
  absl::Status result;
  for (size_t b = 0; b < blocks && result.ok(); ++b) {
    std::string text;
    {
      absl::MutexLock lock(&mu);
      while (!done[b]) changed.Wait(&mu);
      result = statuses[b];
      text = std::move(texts[b]);
      taken_by_writer = b + 1;
      changed.SignalAll();
    }
    if (result.ok()) result = write(text);
    absl::MutexLock lock(&mu);
    spare.push_back(std::move(text));
  }
  {
    absl::MutexLock lock(&mu);
    stop = true;
    changed.SignalAll();
  }
  first.join();
  second.join();
  return result;
}

}  // namespace fedanon::engine
