// CSV input and atomic CSV output for tables (RFC 4180 quoting, `,` or `;` separators).
//
// CsvReader hands out one record at a time as string_views, so that a table can be
// dictionary-encoded without materializing a string per cell. A regular file is streamed through
// a bounded buffer (memory independent of the file size; OpenRange reads a byte range of it, for
// parsing one file with several threads); a FIFO or a pipe is read whole, once.
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

namespace fedanon::table {

// RFC 4180: appends `field` to `out`, in double quotes (inner quotes doubled) when it holds the
// separator, a double quote, CR or LF, else as it is.
void AppendCsvField(std::string_view field, char separator, std::string* out);
// AppendCsvField into memory the caller has made room in: writes at most CsvFieldBound(field)
// bytes at `out` and returns the end of what it wrote.
char* WriteCsvField(std::string_view field, char separator, char* out);
inline size_t CsvFieldBound(std::string_view field) { return 2 * field.size() + 2; }
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
  uint64_t max_bytes = base::kDefaultMaxTableBytes;
  size_t max_line_bytes = base::kMaxLineBytes;
};

class CsvReader {
 public:
  // Reads `path`: a regular file is streamed (re-read from disk, never held whole), anything
  // else (a FIFO or a pipe) is read fully, once, and kept (shared_text()). NotFound if it does not
  // exist; InvalidArgument if empty or beyond the limits of `options` (a streamed file's long line
  // is reported when the reader reaches it).
  static absl::StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path,
                                                         CsvOptions options = {});
  // Streams the bytes [begin, end) of the regular file `path`, which must start a record (0, or
  // just after a '\n'); lines are numbered from `first_line`. `options.separator` must be set.
  // The end of the range is the end of input for the parser: a quoted field that crosses it is an
  // unterminated quote.
  static absl::StatusOr<std::unique_ptr<CsvReader>> OpenRange(const std::string& path,
                                                              uint64_t begin, uint64_t end,
                                                              size_t first_line,
                                                              CsvOptions options);
  // Reads text already in memory (shared, e.g. kept by a Dataset to read its rows again).
  static absl::StatusOr<std::unique_ptr<CsvReader>> FromShared(
      std::shared_ptr<const std::string> text, std::string source_name, CsvOptions options = {});
  // Parses in-memory text; `source_name` is used in error messages.
  static absl::StatusOr<std::unique_ptr<CsvReader>> FromString(std::string text,
                                                               std::string source_name,
                                                               CsvOptions options = {});

  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  // Reads the next record into `fields` (views stay valid until the next call). Returns false at
  // end of input. Blank lines are skipped; CRLF and LF are accepted; a final line without newline
  // is read. InvalidArgument with file:line:column for malformed quoting.
  absl::StatusOr<bool> Next(std::vector<std::string_view>* fields);

  // 1-based line number where the record last returned by Next() starts.
  size_t line() const { return record_line_; }
  // 1-based line number where the next record would start.
  size_t next_line() const { return line_; }
  // Byte offset (in the file or text) just past the input consumed so far.
  uint64_t offset() const { return base_offset_ + pos_; }
  const std::string& source_name() const { return source_name_; }
  // The whole text being read (shared, so that it can be read again without the file); null for
  // a streamed regular file.
  const std::shared_ptr<const std::string>& shared_text() const { return owned_text_; }
  char separator() const { return separator_; }

  // OK if `fields` has `expected` entries, else InvalidArgument naming the file and the line of
  // the last record ("t.csv:12: expected 15 fields, found 14"). Field counts are the caller's
  // business; this only keeps the messages uniform.
  absl::Status CheckFieldCount(const std::vector<std::string_view>& fields, size_t expected) const;

 private:
  CsvReader(std::shared_ptr<const std::string> text, std::string source_name, char separator);
  CsvReader(int fd, uint64_t begin, uint64_t end, std::string source_name, char separator,
            size_t first_line, size_t max_line_bytes);
  // Streaming: moves the unconsumed bytes from `keep_from` to the front of the buffer and reads
  // more, exposing the text up to the last complete line. False at the end of the range.
  absl::StatusOr<bool> Refill(size_t keep_from);
  // Streaming: the physical lines of the record [begin, pos_) starting at line `line` are within
  // max_line_bytes (as ReadFile checks a whole file).
  absl::Status CheckLineLengths(size_t begin, size_t line);
  absl::Status ParseQuoted(std::vector<std::string_view>* fields, size_t* unescaped_used);
  void ScanUnquoted(std::vector<std::string_view>* fields);
  // The common record, read in one pass 16 bytes at a time: no double quote and no CR anywhere in
  // it, ended by a '\n' inside text_. Returns false (with `fields` empty and nothing consumed)
  // for any other record, which the field-by-field parser then reads: both give the same fields.
  bool ScanPlainRecord(std::vector<std::string_view>* fields);
  bool AtLineEnd(size_t pos) const;  // `pos` starts "\n", "\r\n" or a final "\r"
  void ConsumeLineEnd();
  absl::Status ErrorAt(size_t line, size_t column, std::string_view what);

  std::shared_ptr<const std::string> owned_text_;
  std::string_view text_;  // *owned_text_, or the complete lines of buffer_ when streaming
  // Streaming a regular file: the descriptor, the byte range left to read, the buffer.
  int fd_ = -1;
  uint64_t file_pos_ = 0;
  uint64_t file_end_ = 0;
  uint64_t base_offset_ = 0;  // offset of buffer_[0] (or of the text) in the file
  std::string buffer_;
  size_t filled_ = 0;
  bool eof_ = true;         // no more bytes beyond buffer_[0, filled_)
  bool need_more_ = false;  // streaming: the record runs past the text exposed so far
  size_t max_line_bytes_ = 0;
  bool failed_ = false;  // an error was returned: later calls report end of input
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
  // Buffers records already formatted with AppendCsvRecord (and this writer's separator).
  void WriteFormatted(std::string_view records);
  // Writes what is buffered and returns the temporary file's path, so that the table written so
  // far can be read before it is committed (e.g. assessed, then committed or dropped).
  absl::StatusOr<std::string> FlushForReading();
  // Writes what is buffered and starts writing it out to disk without waiting
  // (AtomicFileWriter::StartWriteOut): for a caller with other work to do before Commit().
  absl::Status StartWriteOut();
  // Writes what is buffered and fsyncs it (AtomicFileWriter::Sync): Commit() then only moves it.
  absl::Status Sync();
  // Flushes, fsyncs and renames the temporary file onto the target path.
  absl::Status Commit();

 private:
  CsvWriter(std::unique_ptr<base::AtomicFileWriter> file, char separator);
  absl::Status FlushBuffer();

  std::unique_ptr<base::AtomicFileWriter> file_;
  char separator_;
  std::string buffer_;
  absl::Status deferred_error_;
};

// Writes a table or a report atomically: WriteFileAtomically of common/base/file_io.h with mode
// 0644, replacing an existing file.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content);

// ReadFile (whole files) is declared in common/base/file_io.h, included above.

}  // namespace fedanon::table
