#include "common/table/csv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"

namespace fedanon::table {
namespace {

constexpr size_t kFlushThreshold = size_t{1} << 20;  // 1 MiB
// At most this much of a streamed file is buffered (grown for a longer record), and no more than
// the range holds: a small table's reader costs its size, not a fixed 4 MiB (each pass touches
// it page by page). Reads of 256 KiB keep a large table's load as fast as 4 MiB ones did.
constexpr size_t kStreamBuffer = size_t{256} << 10;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// `;` if the first non-blank line has more `;` than `,`, else `,`.
char DetectSeparator(std::string_view text) {
  const size_t begin = text.find_first_not_of("\r\n");
  if (begin == std::string_view::npos) return ',';
  const size_t end = text.find('\n', begin);
  const std::string_view line =
      text.substr(begin, end == std::string_view::npos ? end : end - begin);
  size_t semicolons = 0;
  size_t commas = 0;
  for (char c : line) {
    semicolons += c == ';';
    commas += c == ',';
  }
  return semicolons > commas ? ';' : ',';
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CsvReader

CsvReader::CsvReader(std::shared_ptr<const std::string> text, std::string source_name,
                     char separator)
    : owned_text_(std::move(text)),
      text_(*owned_text_),
      source_name_(std::move(source_name)),
      separator_(separator) {
  if (text_.starts_with(kUtf8Bom)) pos_ = line_start_ = kUtf8Bom.size();
}

CsvReader::CsvReader(int fd, uint64_t begin, uint64_t end, std::string source_name, char separator,
                     size_t first_line, size_t max_line_bytes)
    : fd_(fd),
      file_pos_(begin),
      file_end_(end),
      base_offset_(begin),
      eof_(begin >= end),
      max_line_bytes_(max_line_bytes),
      source_name_(std::move(source_name)),
      separator_(separator),
      line_(first_line) {
  const uint64_t range = end - std::min(begin, end);
  buffer_.resize(static_cast<size_t>(std::clamp<uint64_t>(range, 1, kStreamBuffer)));
}

CsvReader::~CsvReader() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Opens `path` read-only; `*regular` tells whether it is a regular file (of `*size` bytes).
absl::StatusOr<int> OpenForReading(const std::string& path, bool* regular, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open", path);
  struct stat st;
  *regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  *size = *regular ? static_cast<uint64_t>(st.st_size) : 0;
  return fd;
}

absl::StatusOr<size_t> PreadSome(int fd, char* out, size_t n, uint64_t at,
                                 const std::string& path) {
  for (;;) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(at));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return base::ErrnoStatus(errno, "cannot read", path);
  }
}

// Whether the bytes [0, size) of `fd` are only CR and LF.
absl::StatusOr<bool> OnlyLineEnds(int fd, uint64_t size, const std::string& path) {
  std::string chunk(1 << 16, '\0');
  for (uint64_t at = 0; at < size;) {
    ASSIGN_OR_RETURN(size_t got, PreadSome(fd, chunk.data(), chunk.size(), at, path));
    if (got == 0) break;
    if (std::string_view(chunk.data(), got).find_first_not_of("\r\n") != std::string_view::npos) {
      return false;
    }
    at += got;
  }
  return true;
}

absl::Status CheckSeparator(char separator, const std::string& source_name) {
  if (separator == '"' || separator == '\n' || separator == '\r') {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": invalid CSV separator '",
                                                   absl::CHexEscape(std::string(1, separator)),
                                                   "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::Open(const std::string& path,
                                                           CsvOptions options) {
  // Decided before opening: a FIFO's writer must see one open only.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    ASSIGN_OR_RETURN(std::string text,
                     base::ReadFile(path, base::ReadFileOptions{
                                              .max_bytes = options.max_bytes,
                                              .max_line_bytes = options.max_line_bytes,
                                              .what = "table",
                                          }));
    if (text.find_first_not_of("\r\n") == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": file is empty"));
    }
    return FromString(std::move(text), path, options);
  }
  bool regular = false;
  uint64_t size = 0;
  ASSIGN_OR_RETURN(int fd, OpenForReading(path, &regular, &size));
  std::unique_ptr<CsvReader> reader(
      new CsvReader(fd, 0, size, path, options.separator, 1, options.max_line_bytes));
  if (!regular) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  if (size > options.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is larger than the limit of ",
                                                   options.max_bytes, " bytes for a table"));
  }
  RETURN_IF_ERROR(CheckSeparator(options.separator, path));
  ASSIGN_OR_RETURN(bool empty, OnlyLineEnds(fd, size, path));
  if (empty) return absl::InvalidArgumentError(absl::StrCat(path, ": file is empty"));
  RETURN_IF_ERROR(reader->Refill(0).status());
  // The lines of the first buffer are checked now (a small file fails to open, as one read whole
  // does); longer lines further on when the reader reaches them.
  if (options.max_line_bytes > 0) {
    const std::string_view text = reader->text_;
    size_t line = 1, line_start = 0;
    for (size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', nl + 1)) {
      if (nl - line_start > options.max_line_bytes) break;
      ++line;
      line_start = nl + 1;
    }
    const size_t end = std::min(text.size(), text.find('\n', line_start));
    if (end - line_start > options.max_line_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line, ": line longer than ", options.max_line_bytes, " bytes"));
    }
  }
  if (reader->separator_ == 0) reader->separator_ = DetectSeparator(reader->text_);
  if (reader->text_.starts_with(kUtf8Bom)) reader->pos_ = reader->line_start_ = kUtf8Bom.size();
  return reader;
}

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::OpenRange(const std::string& path,
                                                                uint64_t begin, uint64_t end,
                                                                size_t first_line,
                                                                CsvOptions options) {
  RETURN_IF_ERROR(CheckSeparator(options.separator, path));
  if (options.separator == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a range needs its separator"));
  }
  bool regular = false;
  uint64_t size = 0;
  ASSIGN_OR_RETURN(int fd, OpenForReading(path, &regular, &size));
  std::unique_ptr<CsvReader> reader(new CsvReader(
      fd, begin, std::min(end, size), path, options.separator, first_line, options.max_line_bytes));
  if (!regular) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  RETURN_IF_ERROR(reader->Refill(0).status());
  if (begin == 0 && reader->text_.starts_with(kUtf8Bom)) {
    reader->pos_ = reader->line_start_ = kUtf8Bom.size();
  }
  return reader;
}

absl::StatusOr<bool> CsvReader::Refill(size_t keep_from) {
  if (eof_) return false;
  if (keep_from > 0) {
    std::memmove(buffer_.data(), buffer_.data() + keep_from, filled_ - keep_from);
    filled_ -= keep_from;
    pos_ -= keep_from;
    line_start_ -= std::min(line_start_, keep_from);
    base_offset_ += keep_from;
  }
  // Bytes before `complete` end with a '\n' (or are none): the line after them is the tail.
  const size_t old_visible = text_.empty() ? 0 : text_.size() - std::min(text_.size(), keep_from);
  size_t complete = old_visible;
  for (;;) {
    if (filled_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buffer_.size() - filled_, file_end_ - file_pos_));
    ASSIGN_OR_RETURN(size_t got,
                     PreadSome(fd_, buffer_.data() + filled_, want, file_pos_, source_name_));
    const size_t scan_from = filled_;
    filled_ += got;
    file_pos_ += got;
    if (got == 0 || file_pos_ >= file_end_) {  // the end of the range (or a file that shrank)
      eof_ = true;
      text_ = std::string_view(buffer_.data(), filled_);
      return true;
    }
    const void* nl = memrchr(buffer_.data() + scan_from, '\n', filled_ - scan_from);
    if (nl != nullptr) {
      complete = static_cast<const char*>(nl) - buffer_.data() + 1;
      break;
    }
    if (max_line_bytes_ > 0 && filled_ - complete > max_line_bytes_) {
      const size_t line =
          line_ + static_cast<size_t>(std::count(buffer_.data() + std::min(pos_, complete),
                                                 buffer_.data() + complete, '\n'));
      failed_ = true;
      return absl::InvalidArgumentError(
          absl::StrCat(source_name_, ":", line, ": line longer than ", max_line_bytes_, " bytes"));
    }
  }
  text_ = std::string_view(buffer_.data(), complete);
  return true;
}

absl::Status CsvReader::CheckLineLengths(size_t begin, size_t line) {
  size_t line_begin = begin;
  for (size_t p = begin; p < pos_; ++p) {
    if (text_[p] != '\n') continue;
    if (p - line_begin > max_line_bytes_) break;
    ++line;
    line_begin = p + 1;
  }
  const size_t end = std::min(pos_, text_.find('\n', line_begin));
  if (end - line_begin <= max_line_bytes_) return absl::OkStatus();
  failed_ = true;
  return absl::InvalidArgumentError(
      absl::StrCat(source_name_, ":", line, ": line longer than ", max_line_bytes_, " bytes"));
}

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::FromString(std::string text,
                                                                 std::string source_name,
                                                                 CsvOptions options) {
  return FromShared(std::make_shared<const std::string>(std::move(text)), std::move(source_name),
                    options);
}

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::FromShared(
    std::shared_ptr<const std::string> text, std::string source_name, CsvOptions options) {
  if (text == nullptr) return absl::InvalidArgumentError(base::Cat(source_name, ": no text"));
  RETURN_IF_ERROR(CheckSeparator(options.separator, source_name));
  const char separator = options.separator != 0 ? options.separator : DetectSeparator(*text);
  return std::unique_ptr<CsvReader>(
      new CsvReader(std::move(text), std::move(source_name), separator));
}

bool CsvReader::AtLineEnd(size_t pos) const {
  const size_t n = text_.size();
  if (pos >= n) return false;
  if (text_[pos] == '\n') return true;
  return text_[pos] == '\r' && (pos + 1 == n || text_[pos + 1] == '\n');
}

void CsvReader::ConsumeLineEnd() {
  if (text_[pos_] == '\r') ++pos_;
  if (pos_ < text_.size()) ++pos_;  // the '\n'
  ++line_;
  line_start_ = pos_;
}

absl::Status CsvReader::ErrorAt(size_t line, size_t column, std::string_view what) {
  pos_ = text_.size();  // errors are final: later calls report end of input
  failed_ = true;
  return absl::InvalidArgumentError(
      absl::StrCat(source_name_, ":", line, ":", column, ": ", base::Av(what)));
}

void CsvReader::ScanUnquoted(std::vector<std::string_view>* fields) {
  const char* const data = text_.data();
  const size_t n = text_.size();
  const char sep = separator_;
  const size_t start = pos_;
  size_t p = pos_;
  for (;;) {
    while (p < n) {
      const char c = data[p];
      if (c == sep || c == '\n' || c == '\r') break;
      ++p;
    }
    // A lone CR inside a line is data.
    if (p < n && data[p] == '\r' && p + 1 < n && data[p + 1] != '\n') {
      ++p;
      continue;
    }
    break;
  }
  pos_ = p;
  fields->emplace_back(data + start, p - start);
}

bool CsvReader::ScanPlainRecord(std::vector<std::string_view>* fields) {
  const char* const data = text_.data();
  const size_t n = text_.size();
  const char sep = separator_;
  size_t p = pos_;
  size_t field = p;
  auto end_record = [&](size_t at) {
    fields->emplace_back(data + field, at - field);
    pos_ = at + 1;
    ++line_;
    line_start_ = pos_;
  };
#if defined(__SSE2__)
  const __m128i sep16 = _mm_set1_epi8(sep);
  const __m128i lf16 = _mm_set1_epi8('\n');
  const __m128i cr16 = _mm_set1_epi8('\r');
  const __m128i quote16 = _mm_set1_epi8('"');
  for (; p + 16 <= n; p += 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + p));
    const auto lfs = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, lf16)));
    // The bytes of this record in the chunk: those before its first '\n'.
    const unsigned mine = lfs != 0 ? (lfs & (0u - lfs)) - 1 : 0xFFFFu;
    const auto odd = static_cast<unsigned>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(chunk, cr16), _mm_cmpeq_epi8(chunk, quote16))));
    if ((odd & mine) != 0) {
      fields->clear();
      return false;
    }
    for (auto seps = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, sep16))) & mine;
         seps != 0; seps &= seps - 1) {
      const size_t at = p + static_cast<size_t>(__builtin_ctz(seps));
      fields->emplace_back(data + field, at - field);
      field = at + 1;
    }
    if (lfs != 0) {
      end_record(p + static_cast<size_t>(__builtin_ctz(lfs)));
      return true;
    }
  }
#endif
  for (; p < n; ++p) {
    const char c = data[p];
    if (c == sep) {
      fields->emplace_back(data + field, p - field);
      field = p + 1;
    } else if (c == '\n') {
      end_record(p);
      return true;
    } else if (c == '\r' || c == '"') {
      break;
    }
  }
  fields->clear();  // a final line without '\n', or a quote or CR: the general parser's
  return false;
}

absl::Status CsvReader::ParseQuoted(std::vector<std::string_view>* fields, size_t* unescaped_used) {
  const char* const data = text_.data();
  const size_t n = text_.size();
  const size_t quote_line = line_;
  const size_t quote_column = pos_ - line_start_ + 1;
  const size_t begin = ++pos_;
  bool doubled = false;
  size_t end;
  for (;;) {
    const void* found = std::memchr(data + pos_, '"', n - pos_);
    const size_t quote = found ? static_cast<const char*>(found) - data : n;
    for (const char* nl = static_cast<const char*>(std::memchr(data + pos_, '\n', quote - pos_));
         nl != nullptr;
         nl = static_cast<const char*>(std::memchr(nl + 1, '\n', data + quote - (nl + 1)))) {
      ++line_;
      line_start_ = nl + 1 - data;
    }
    if (found == nullptr) {
      if (fd_ >= 0 && !eof_) {  // the field goes on past the text read so far
        need_more_ = true;
        return absl::OkStatus();
      }
      return ErrorAt(quote_line, quote_column, "unterminated quote");
    }
    if (quote + 1 < n && data[quote + 1] == '"') {
      doubled = true;
      pos_ = quote + 2;
      continue;
    }
    end = quote;
    pos_ = quote + 1;
    break;
  }
  if (pos_ < n && data[pos_] != separator_ && !AtLineEnd(pos_)) {
    return ErrorAt(
        line_, pos_ - line_start_ + 1,
        absl::StrCat("unexpected character '", absl::CHexEscape(std::string(1, data[pos_])),
                     "' after closing quote"));
  }
  const std::string_view raw(data + begin, end - begin);
  if (!doubled) {
    fields->push_back(raw);
    return absl::OkStatus();
  }
  if (*unescaped_used == unescaped_.size()) unescaped_.emplace_back();
  std::string& out = unescaped_[*unescaped_used];
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    out.push_back(raw[i]);
    if (raw[i] == '"') ++i;  // skip the second quote of a pair
  }
  unescaped_fields_.emplace_back(fields->size(), *unescaped_used);
  ++*unescaped_used;
  fields->emplace_back();  // resolved in Next() once the record is complete
  return absl::OkStatus();
}

absl::StatusOr<bool> CsvReader::Next(std::vector<std::string_view>* fields) {
  fields->clear();
  unescaped_fields_.clear();
  if (failed_) return false;
  for (;;) {
    while (AtLineEnd(pos_)) ConsumeLineEnd();  // blank lines
    if (pos_ < text_.size()) break;
    if (fd_ < 0) return false;
    ASSIGN_OR_RETURN(bool more, Refill(pos_));
    if (!more) return false;
  }
  size_t record_start = pos_;
  const size_t record_line = line_;
  size_t record_line_start = line_start_;
  record_line_ = line_;
  for (bool plain = ScanPlainRecord(fields); !plain;) {
    const size_t n = text_.size();
    size_t unescaped_used = 0;
    for (;;) {
      if (pos_ < n && text_[pos_] == '"') {
        RETURN_IF_ERROR(ParseQuoted(fields, &unescaped_used));
        if (need_more_) break;
      } else {
        ScanUnquoted(fields);
      }
      if (pos_ >= n) break;
      if (text_[pos_] == separator_) {
        ++pos_;
        continue;
      }
      ConsumeLineEnd();
      break;
    }
    if (!need_more_) break;
    // Streaming: a quoted field runs past the text read so far; read more and parse again.
    need_more_ = false;
    fields->clear();
    unescaped_fields_.clear();
    pos_ = record_start;
    line_ = record_line;
    line_start_ = record_line_start;
    ASSIGN_OR_RETURN(bool more, Refill(record_start));
    if (!more) return absl::InternalError("CSV reader: no more input inside a quoted field");
    record_start = pos_;
    record_line_start = line_start_;
  }
  if (fd_ >= 0 && max_line_bytes_ > 0 && pos_ - record_start > max_line_bytes_) {
    RETURN_IF_ERROR(CheckLineLengths(record_start, record_line));
  }
  for (const auto& [field, storage] : unescaped_fields_) (*fields)[field] = unescaped_[storage];
  return true;
}

absl::Status CsvReader::CheckFieldCount(const std::vector<std::string_view>& fields,
                                        size_t expected) const {
  if (fields.size() == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(source_name_, ":", record_line_, ": expected ",
                                                 expected, " fields, found ", fields.size()));
}

// ---------------------------------------------------------------------------------------------
// CsvWriter

CsvWriter::CsvWriter(std::unique_ptr<base::AtomicFileWriter> file, char separator)
    : file_(std::move(file)), separator_(separator) {
  buffer_.reserve(kFlushThreshold + 4096);
}

absl::StatusOr<std::unique_ptr<CsvWriter>> CsvWriter::Create(const std::string& path,
                                                             char separator) {
  if (separator == '"' || separator == '\n' || separator == '\r' || separator == 0) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CSV separator for ", path));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<base::AtomicFileWriter> file,
                   base::AtomicFileWriter::Open(path, {.mode = base::kPrivateFileMode}));
  return std::unique_ptr<CsvWriter>(new CsvWriter(std::move(file), separator));
}

CsvWriter::~CsvWriter() = default;

void CsvWriter::WriteRow(const std::vector<std::string_view>& fields) {
  AppendCsvRecord(fields, separator_, &buffer_);
  if (buffer_.size() >= kFlushThreshold && deferred_error_.ok()) deferred_error_ = FlushBuffer();
}

void CsvWriter::WriteFormatted(std::string_view records) {
  if (!deferred_error_.ok()) return;
  // Small pieces gather in the buffer; a large one (formatted elsewhere) is written as it is,
  // after what is buffered: copied, it touched the buffer's fresh pages for nothing.
  if (records.size() < kFlushThreshold / 16 && buffer_.size() + records.size() < kFlushThreshold) {
    buffer_.append(records);
    return;
  }
  if (!buffer_.empty()) deferred_error_ = FlushBuffer();
  if (deferred_error_.ok()) deferred_error_ = file_->Write(records);
}

absl::Status CsvWriter::FlushBuffer() {
  absl::Status status = file_->Write(buffer_);
  buffer_.clear();
  return status;
}

absl::StatusOr<std::string> CsvWriter::FlushForReading() {
  RETURN_IF_ERROR(deferred_error_);
  RETURN_IF_ERROR(FlushBuffer());
  return file_->temp_path();
}

absl::Status CsvWriter::StartWriteOut() {
  RETURN_IF_ERROR(deferred_error_);
  RETURN_IF_ERROR(FlushBuffer());
  return file_->StartWriteOut();
}

absl::Status CsvWriter::Sync() {
  RETURN_IF_ERROR(deferred_error_);
  RETURN_IF_ERROR(FlushBuffer());
  return file_->Sync();
}

absl::Status CsvWriter::Commit() {
  RETURN_IF_ERROR(deferred_error_);
  RETURN_IF_ERROR(FlushBuffer());
  return file_->Commit();
}

// ---------------------------------------------------------------------------------------------
// Quoting

namespace {

// Whether `field` needs quotes: one pass over it (find_first_of would search the specials once
// per character).
bool NeedsQuotes(std::string_view field, char separator) {
  for (const char c : field) {
    if (c == separator || c == '"' || c == '\r' || c == '\n') return true;
  }
  return false;
}

}  // namespace

void AppendCsvField(std::string_view field, char separator, std::string* out) {
  if (!NeedsQuotes(field, separator)) {
    out->append(field);
    return;
  }
  out->push_back('"');
  for (char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

char* WriteCsvField(std::string_view field, char separator, char* out) {
  if (!NeedsQuotes(field, separator)) {
    if (!field.empty()) std::memcpy(out, field.data(), field.size());
    return out + field.size();
  }
  *out++ = '"';
  for (char c : field) {
    if (c == '"') *out++ = '"';
    *out++ = c;
  }
  *out++ = '"';
  return out;
}

void AppendCsvRecord(const std::vector<std::string_view>& fields, char separator,
                     std::string* out) {
  if (fields.size() == 1 && fields[0].empty()) {
    out->append("\"\"\n");
    return;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out->push_back(separator);
    AppendCsvField(fields[i], separator, out);
  }
  out->push_back('\n');
}

std::string CsvLine(const std::vector<std::string_view>& fields) {
  std::string out;
  AppendCsvRecord(fields, ',', &out);
  return out;
}

std::string CsvField(std::string_view field) {
  std::string out;
  AppendCsvField(field, ',', &out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Whole files

absl::Status WriteFileAtomically(const std::string& path, std::string_view content) {
  return base::WriteFileAtomically(path, content, {.mode = base::kSharedFileMode});
}

}  // namespace fedanon::table
