// CSV input and atomic CSV output for tables (RFC 4180 quoting, `,` or `;` separators).
//
// CsvReader loads a whole file into memory and hands out one record at a time as string_views,
// so that a million-row table can be dictionary-encoded without materializing a string per cell.
// Errors name the file, the 1-based line and column (e.g. "t.csv:12:7: unterminated quote").
// CsvWriter writes through common/base/file_io.h's AtomicFileWriter (a temporary file beside the
// target, renamed on Commit()); if Commit() is never reached the temporary file is removed, so a
// failed job leaves no partial output. AppendCsvField / CsvLine are the one CSV quoter: every
// place that writes CSV (files, the released tables on the wire) goes through them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/file_io.h"

namespace fedanon::common {

// RFC 4180: appends `field` to `out`, in double quotes (inner quotes doubled) when it holds the
// separator, a double quote, CR or LF, else as it is.
void AppendCsvField(std::string_view field, char separator, std::string* out);
// Appends one record: the fields joined by `separator`, then "\n". A record of one empty field
// is written as "" so that it does not read back as a blank line (which readers skip).
void AppendCsvRecord(const std::vector<std::string_view>& fields, char separator, std::string* out);
// The record as a string (separator ',').
std::string CsvLine(const std::vector<std::string_view>& fields);
// One field, quoted as above (separator ',').
std::string CsvField(std::string_view field);

struct CsvOptions {
  // 0: detect from the first line (`;` if it contains more `;` than `,`, else `,`).
  char separator = 0;
  // Open() only: a larger file, or a physical line longer than max_line_bytes, is an error
  // ("'t.csv' is larger than the limit of N bytes for a table", "t.csv:12: line longer than N
  // bytes"), found while reading, so that /dev/zero or an endless FIFO fails fast.
  uint64_t max_bytes = kDefaultMaxTableBytes;
  size_t max_line_bytes = kMaxLineBytes;
};

class CsvReader {
 public:
  // Reads `path` fully, once (a FIFO or a pipe works). NotFound if it does not exist;
  // InvalidArgument if empty or beyond the limits of `options`.
  static absl::StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path,
                                                         CsvOptions options = {});
  // Reads text already in memory (shared, e.g. kept by a Dataset to read its rows again).
  static absl::StatusOr<std::unique_ptr<CsvReader>> FromShared(
      std::shared_ptr<const std::string> text, std::string source_name, CsvOptions options = {});
  // Parses in-memory text; `source_name` is used in error messages.
  static absl::StatusOr<std::unique_ptr<CsvReader>> FromString(std::string text,
                                                               std::string source_name,
                                                               CsvOptions options = {});

  // Reads the next record into `fields` (views stay valid until the next call). Returns false at
  // end of input. Blank lines are skipped; CRLF and LF are accepted; a final line without newline
  // is read. InvalidArgument with file:line:column for malformed quoting.
  absl::StatusOr<bool> Next(std::vector<std::string_view>* fields);

  // 1-based line number where the record last returned by Next() starts.
  size_t line() const { return record_line_; }
  const std::string& source_name() const { return source_name_; }
  // The whole text being read (shared, so that it can be read again without the file).
  const std::shared_ptr<const std::string>& shared_text() const { return owned_text_; }
  char separator() const { return separator_; }

  // OK if `fields` has `expected` entries, else InvalidArgument naming the file and the line of
  // the last record ("t.csv:12: expected 15 fields, found 14"). Field counts are the caller's
  // business; this only keeps the messages uniform.
  absl::Status CheckFieldCount(const std::vector<std::string_view>& fields, size_t expected) const;

 private:
  CsvReader(std::shared_ptr<const std::string> text, std::string source_name, char separator);
  absl::Status ParseQuoted(std::vector<std::string_view>* fields, size_t* unescaped_used);
  void ScanUnquoted(std::vector<std::string_view>* fields);
  bool AtLineEnd(size_t pos) const;  // `pos` starts "\n", "\r\n" or a final "\r"
  void ConsumeLineEnd();
  absl::Status ErrorAt(size_t line, size_t column, std::string_view what);

  std::shared_ptr<const std::string> owned_text_;
  std::string_view text_;  // *owned_text_
  std::string source_name_;
  char separator_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t record_line_ = 0;
  size_t line_start_ = 0;               // offset of the first byte of line `line_`
  std::vector<std::string> unescaped_;  // storage for quoted fields that contained ""
  // (field index, unescaped_ index) pairs of the current record, resolved once it is complete.
  std::vector<std::pair<size_t, size_t>> unescaped_fields_;
};

class CsvWriter {
 public:
  // Creates `<path>.tmp.<random>` (O_CREAT|O_EXCL, so never through a planted symbolic link;
  // mode 0600: a table is private to its owner) in the same directory. Fails if the directory
  // does not exist. Commit() replaces an existing file (a symbolic link at `path` is replaced,
  // never followed).
  static absl::StatusOr<std::unique_ptr<CsvWriter>> Create(const std::string& path,
                                                           char separator = ',');
  ~CsvWriter();  // removes the temporary file unless Commit() succeeded

  // Buffers one record (AppendCsvRecord).
  void WriteRow(const std::vector<std::string_view>& fields);
  // Flushes, fsyncs and renames the temporary file onto the target path.
  absl::Status Commit();

 private:
  CsvWriter(std::unique_ptr<AtomicFileWriter> file, char separator);
  absl::Status FlushBuffer();

  std::unique_ptr<AtomicFileWriter> file_;
  char separator_;
  std::string buffer_;
  absl::Status deferred_error_;
};

// Writes a table or a report atomically: WriteFileAtomically of common/base/file_io.h with mode
// 0644, replacing an existing file.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content);

// ReadFile (whole files) is declared in common/base/file_io.h, included above.

}  // namespace fedanon::common
