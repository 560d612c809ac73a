#include "common/table/csv.h"

#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"

namespace fedanon::common {
namespace {

constexpr size_t kFlushThreshold = size_t{1} << 20;  // 1 MiB
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

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::Open(const std::string& path,
                                                           CsvOptions options) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, ReadFileOptions{
                                                        .max_bytes = options.max_bytes,
                                                        .max_line_bytes = options.max_line_bytes,
                                                        .what = "table",
                                                    }));
  if (text.find_first_not_of("\r\n") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": file is empty"));
  }
  return FromString(std::move(text), path, options);
}

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::FromString(std::string text,
                                                                 std::string source_name,
                                                                 CsvOptions options) {
  return FromShared(std::make_shared<const std::string>(std::move(text)), std::move(source_name),
                    options);
}

absl::StatusOr<std::unique_ptr<CsvReader>> CsvReader::FromShared(
    std::shared_ptr<const std::string> text, std::string source_name, CsvOptions options) {
  if (text == nullptr) return absl::InvalidArgumentError(Cat(source_name, ": no text"));
  if (options.separator == '"' || options.separator == '\n' || options.separator == '\r') {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": invalid CSV separator '",
                     absl::CHexEscape(std::string(1, options.separator)), "'"));
  }
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
  return absl::InvalidArgumentError(
      absl::StrCat(source_name_, ":", line, ":", column, ": ", Av(what)));
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
    if (found == nullptr) return ErrorAt(quote_line, quote_column, "unterminated quote");
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
  const size_t n = text_.size();
  while (AtLineEnd(pos_)) ConsumeLineEnd();  // blank lines
  if (pos_ >= n) return false;
  record_line_ = line_;
  size_t unescaped_used = 0;
  for (;;) {
    if (pos_ < n && text_[pos_] == '"') {
      RETURN_IF_ERROR(ParseQuoted(fields, &unescaped_used));
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

CsvWriter::CsvWriter(std::unique_ptr<AtomicFileWriter> file, char separator)
    : file_(std::move(file)), separator_(separator) {
  buffer_.reserve(kFlushThreshold + 4096);
}

absl::StatusOr<std::unique_ptr<CsvWriter>> CsvWriter::Create(const std::string& path,
                                                             char separator) {
  if (separator == '"' || separator == '\n' || separator == '\r' || separator == 0) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CSV separator for ", path));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Open(path, {.mode = kPrivateFileMode}));
  return std::unique_ptr<CsvWriter>(new CsvWriter(std::move(file), separator));
}

CsvWriter::~CsvWriter() = default;

void CsvWriter::WriteRow(const std::vector<std::string_view>& fields) {
  AppendCsvRecord(fields, separator_, &buffer_);
  if (buffer_.size() >= kFlushThreshold && deferred_error_.ok()) deferred_error_ = FlushBuffer();
}

absl::Status CsvWriter::FlushBuffer() {
  const absl::Status status = file_->Write(buffer_);
  buffer_.clear();
  return status;
}

absl::Status CsvWriter::Commit() {
  RETURN_IF_ERROR(deferred_error_);
  RETURN_IF_ERROR(FlushBuffer());
  return file_->Commit();
}

// ---------------------------------------------------------------------------------------------
// Quoting

void AppendCsvField(std::string_view field, char separator, std::string* out) {
  const char specials[] = {separator, '"', '\r', '\n'};
  if (field.find_first_of(std::string_view(specials, sizeof(specials))) == std::string_view::npos) {
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
  return WriteFileAtomically(path, content, {.mode = kSharedFileMode});
}

}  // namespace fedanon::common
