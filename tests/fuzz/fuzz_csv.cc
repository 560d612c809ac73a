// Fuzz target: the CSV reader (common/table/csv.h) over arbitrary text. Besides the sanitizers'
// checks, every record it returns must read back identically once re-encoded with every field
// quoted (a second reader over that text, same separator), records start on increasing lines,
// and each record consumes input (no endless loop on any text).
#include <string>
#include <string_view>
#include <vector>

#include "common/table/csv.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

using table::CsvOptions;
using table::CsvReader;

// Every field quoted, quotes doubled: unambiguous whatever the field holds.
std::string QuotedRecord(const std::vector<std::string_view>& fields, char separator) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out.push_back(separator);
    out.push_back('"');
    for (char c : fields[i]) {
      if (c == '"') out.push_back('"');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('\n');
  return out;
}

void FuzzCsv(std::string_view text) {
  auto reader = CsvReader::FromString(std::string(text), "fuzz.csv", CsvOptions{});
  if (!reader.ok()) FuzzFail("FromString failed with the detected separator");
  const char separator = (*reader)->separator();
  std::vector<std::vector<std::string>> records;
  std::string requoted;
  std::vector<std::string_view> fields;
  size_t last_line = 0;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&fields);
    if (!more.ok()) {
      // Errors are final: the reader then reports the end of input.
      absl::StatusOr<bool> after = (*reader)->Next(&fields);
      if (!after.ok() || *after) FuzzFail("a read after an error returned a record");
      break;
    }
    if (!*more) break;
    if ((*reader)->line() <= last_line) FuzzFail("records do not start on increasing lines");
    last_line = (*reader)->line();
    if (records.size() > text.size()) FuzzFail("more records than input bytes");
    if (!(*reader)->CheckFieldCount(fields, fields.size()).ok()) FuzzFail("CheckFieldCount");
    records.emplace_back(fields.begin(), fields.end());
    requoted += QuotedRecord(fields, separator);
  }
  auto again = CsvReader::FromString(requoted, "requoted.csv", CsvOptions{separator});
  if (!again.ok()) FuzzFail("cannot read the re-encoded records");
  for (const auto& record : records) {
    absl::StatusOr<bool> more = (*again)->Next(&fields);
    if (!more.ok() || !*more) FuzzFail("re-encoded records do not read back");
    if (std::vector<std::string>(fields.begin(), fields.end()) != record) {
      FuzzFail("a re-encoded record reads back differently");
    }
  }
  absl::StatusOr<bool> more = (*again)->Next(&fields);
  if (!more.ok() || *more) FuzzFail("re-encoded records read back with extra records");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() { return {}; }

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzCsv(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
