#include "common/table/csv.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace fedanon::table {
namespace {

using ::fedanon::testing::StatusIs;
using ::fedanon::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Rows = std::vector<std::vector<std::string>>;

// Reads every record; on error returns the status.
absl::StatusOr<Rows> ReadAll(CsvReader& reader) {
  Rows rows;
  std::vector<std::string_view> fields;
  for (;;) {
    absl::StatusOr<bool> more = reader.Next(&fields);
    if (!more.ok()) return more.status();
    if (!*more) return rows;
    rows.emplace_back(fields.begin(), fields.end());
  }
}

absl::StatusOr<Rows> Parse(std::string text, CsvOptions options = {}) {
  auto reader = CsvReader::FromString(std::move(text), "t.csv", options);
  if (!reader.ok()) return reader.status();
  return ReadAll(**reader);
}

TEST(CsvReaderTest, ReadsSimpleRecordsWithLf) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse("a,b,c\n1,2,3\n"));
  EXPECT_EQ(rows, (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
}

TEST(CsvReaderTest, ReadsCrlfAndFinalLineWithoutNewline) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse("a,b\r\n1,2\r\n3,4"));
  EXPECT_EQ(rows, (Rows{{"a", "b"}, {"1", "2"}, {"3", "4"}}));
}

TEST(CsvReaderTest, SkipsBlankLinesAndTracksLineNumbers) {
  auto reader = *CsvReader::FromString("\n\na,b\n\r\n\nc,d\n\n", "t.csv");
  std::vector<std::string_view> fields;
  ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&fields));
  ASSERT_TRUE(more);
  EXPECT_THAT(fields, ElementsAre("a", "b"));
  EXPECT_EQ(reader->line(), 3u);
  ASSERT_OK_AND_ASSIGN(more, reader->Next(&fields));
  ASSERT_TRUE(more);
  EXPECT_THAT(fields, ElementsAre("c", "d"));
  EXPECT_EQ(reader->line(), 6u);
  ASSERT_OK_AND_ASSIGN(more, reader->Next(&fields));
  EXPECT_FALSE(more);
  EXPECT_THAT(fields, IsEmpty());
}

TEST(CsvReaderTest, EmptyFieldsAndTrailingSeparator) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse(",a,,\n,\n"));
  EXPECT_EQ(rows, (Rows{{"", "a", "", ""}, {"", ""}}));
  ASSERT_OK_AND_ASSIGN(rows, Parse("x,"));
  EXPECT_EQ(rows, (Rows{{"x", ""}}));
}

TEST(CsvReaderTest, DetectsSeparatorFromFirstLine) {
  auto semicolon = *CsvReader::FromString("a;b;c,d\n1;2;3,4\n", "t.csv");
  EXPECT_EQ(semicolon->separator(), ';');
  ASSERT_OK_AND_ASSIGN(Rows rows, ReadAll(*semicolon));
  EXPECT_EQ(rows, (Rows{{"a", "b", "c,d"}, {"1", "2", "3,4"}}));

  auto comma = *CsvReader::FromString("a,b;c\n", "t.csv");
  EXPECT_EQ(comma->separator(), ',');
  // Blank leading lines do not count as the first line.
  EXPECT_EQ((*CsvReader::FromString("\r\n\na;b\n", "t.csv"))->separator(), ';');
  // Ties and lines without separators default to `,`.
  EXPECT_EQ((*CsvReader::FromString("a;b,c\n", "t.csv"))->separator(), ',');
  EXPECT_EQ((*CsvReader::FromString("abc\n", "t.csv"))->separator(), ',');
}

TEST(CsvReaderTest, ExplicitSeparatorOverridesDetection) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse("a;b\tc\n", CsvOptions{.separator = '\t'}));
  EXPECT_EQ(rows, (Rows{{"a;b", "c"}}));
}

TEST(CsvReaderTest, QuotedFieldsWithSeparatorsNewlinesAndQuotes) {
  ASSERT_OK_AND_ASSIGN(
      Rows rows, Parse("\"a,b\",\"line1\nline2\",\"say \"\"hi\"\"\",\"\"\r\n\"x\"\"\",\"\"\"\"\n"));
  EXPECT_EQ(rows, (Rows{{"a,b", "line1\nline2", "say \"hi\"", ""}, {"x\"", "\""}}));
}

TEST(CsvReaderTest, ManyUnescapedFieldsInOneRecordStayValid) {
  // Exercises the per-record storage for unescaped fields: short strings (SSO) must not be
  // invalidated when the storage grows within a record.
  std::string text;
  Rows expected(2);
  for (int row = 0; row < 2; ++row) {
    for (int i = 0; i < 40; ++i) {
      if (i > 0) text += ',';
      text += "\"" + std::to_string(i) + "\"\"\"";
      expected[row].push_back(std::to_string(i) + "\"");
    }
    text += '\n';
  }
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse(text));
  EXPECT_EQ(rows, expected);
}

TEST(CsvReaderTest, LineNumberOfRecordAfterMultilineField) {
  auto reader = *CsvReader::FromString("a,\"x\ny\nz\"\nb,c\n", "t.csv");
  std::vector<std::string_view> fields;
  ASSERT_TRUE(*reader->Next(&fields));
  EXPECT_EQ(reader->line(), 1u);
  ASSERT_TRUE(*reader->Next(&fields));
  EXPECT_EQ(reader->line(), 4u);
  EXPECT_THAT(fields, ElementsAre("b", "c"));
}

TEST(CsvReaderTest, LoneCarriageReturnInsideFieldIsData) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse("a\rb,c\r"));
  EXPECT_EQ(rows, (Rows{{"a\rb", "c"}}));
}

// Records of every length from 0 to 40 bytes, with a double quote or a lone CR inside a field at
// every position (data there, as for any unquoted field), read the same whichever parser takes
// them: the one-pass scan of plain records (16 bytes at a time) or the field-by-field one.
TEST(CsvReaderTest, PlainAndOddRecordsOfEveryLengthSplitAlike) {
  for (const char odd : {'\0', '"', '\r'}) {
    std::string text;
    Rows expected;
    for (size_t length = 1; length <= 40; ++length) {
      for (size_t at = 0; at < length; ++at) {
        std::string record;
        for (size_t i = 0; i < length; ++i) record.push_back(i % 5 == 4 ? ',' : char('a' + i % 26));
        // A quote at a field's start would open a quoted field, a CR at the end ends the line.
        if (odd != '\0' && at % 5 != 0 && at % 5 != 4 && at + 1 < length) record[at] = odd;
        text += record + "\n";
        std::vector<std::string> fields(1);
        for (char c : record) {
          if (c == ',') {
            fields.emplace_back();
          } else {
            fields.back().push_back(c);
          }
        }
        expected.push_back(fields);
      }
    }
    ASSERT_OK_AND_ASSIGN(Rows rows, Parse(text, {.separator = ','}));
    EXPECT_EQ(rows, expected) << "odd character " << int(odd);
    TempDir dir;
    const std::string path = dir.File("t.csv");
    ASSERT_OK(WriteFileAtomically(path, text));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CsvReader> reader,
                         CsvReader::Open(path, {.separator = ','}));
    ASSERT_OK_AND_ASSIGN(Rows streamed, ReadAll(*reader));
    EXPECT_EQ(streamed, expected) << "odd character " << int(odd);
  }
}

TEST(CsvReaderTest, SkipsUtf8ByteOrderMark) {
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse("\xEF\xBB\xBF"
                                        "a;b\n"));
  EXPECT_EQ(rows, (Rows{{"a", "b"}}));
}

TEST(CsvReaderTest, UnterminatedQuoteNamesOpeningPosition) {
  EXPECT_THAT(Parse("a,b\nc,\"open\nmore\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "t.csv:2:3: unterminated quote"));
}

TEST(CsvReaderTest, CharacterAfterClosingQuoteIsAnError) {
  EXPECT_THAT(Parse("a,b\n\"x\"y,z\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "t.csv:2:4: unexpected character 'y' after closing quote"));
  // Columns count from the start of the current physical line.
  EXPECT_THAT(Parse("\"a\nbc\" ,d\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "t.csv:2:4: unexpected character ' '"));
}

TEST(CsvReaderTest, ErrorIsFinal) {
  auto reader = *CsvReader::FromString("\"x\"y\na\n", "t.csv");
  std::vector<std::string_view> fields;
  EXPECT_THAT(reader->Next(&fields), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&fields));
  EXPECT_FALSE(more);
}

TEST(CsvReaderTest, CheckFieldCount) {
  auto reader = *CsvReader::FromString("a,b,c\n\n1,2\n", "t.csv");
  std::vector<std::string_view> fields;
  ASSERT_TRUE(*reader->Next(&fields));
  EXPECT_OK(reader->CheckFieldCount(fields, 3));
  ASSERT_TRUE(*reader->Next(&fields));
  EXPECT_THAT(reader->CheckFieldCount(fields, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, "t.csv:3: expected 3 fields, found 2"));
}

TEST(CsvReaderTest, OpenMissingFileIsNotFound) {
  TempDir dir;
  EXPECT_THAT(CsvReader::Open(dir.File("nope.csv")),
              StatusIs(absl::StatusCode::kNotFound, "nope.csv"));
}

TEST(CsvReaderTest, OpenEmptyFileIsInvalid) {
  TempDir dir;
  ASSERT_OK(table::WriteFileAtomically(dir.File("empty.csv"), ""));
  EXPECT_THAT(CsvReader::Open(dir.File("empty.csv")),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty.csv: file is empty"));
}

TEST(CsvReaderTest, OpenReadsFileAndNamesItInErrors) {
  TempDir dir;
  ASSERT_OK(table::WriteFileAtomically(dir.File("t.csv"), "a;b\n\"c\n"));
  ASSERT_OK_AND_ASSIGN(auto reader, CsvReader::Open(dir.File("t.csv")));
  EXPECT_EQ(reader->source_name(), dir.File("t.csv"));
  EXPECT_THAT(ReadAll(*reader), StatusIs(absl::StatusCode::kInvalidArgument,
                                         dir.File("t.csv") + ":2:1: unterminated quote"));
}

// A large table with occasional quoted fields parses completely and field by field. Its speed is
// measured by bench/csv_bench.cc (Google Benchmark), not asserted here.
TEST(CsvReaderTest, LargeTableWithQuotedFieldsParsesCompletely) {
  constexpr int kRows = 200'000;
  constexpr int kFields = 15;
  std::string text;
  text.reserve(size_t{kRows} * kFields * 8);
  for (int r = 0; r < kRows; ++r) {
    for (int f = 0; f < kFields; ++f) {
      if (f > 0) text += ',';
      if (f == 7 && r % 1000 == 0) {
        text += "\"q,\"\"x\"\"\"";  // occasional quoted field with escapes
      } else {
        text += std::to_string((r * 31 + f * 7) % 100000);
      }
    }
    text += '\n';
  }
  auto reader = *CsvReader::FromString(std::move(text), "big.csv");
  std::vector<std::string_view> fields;
  size_t rows = 0;
  size_t quoted = 0;
  for (;;) {
    absl::StatusOr<bool> more = reader->Next(&fields);
    ASSERT_OK(more);
    if (!*more) break;
    ASSERT_EQ(fields.size(), size_t{kFields});
    if (fields[7] == "q,\"x\"") ++quoted;
    ++rows;
  }
  EXPECT_EQ(rows, size_t{kRows});
  EXPECT_EQ(quoted, size_t{kRows / 1000});
}

TEST(CsvWriterTest, QuotesOnlyWhenNeededAndRoundTrips) {
  TempDir dir;
  const std::string path = dir.File("out.csv");
  ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(path));
  writer->WriteRow({"plain", "a,b", "say \"hi\"", "two\nlines", "cr\r", ""});
  writer->WriteRow({""});  // a lone empty field must not become a blank line
  writer->WriteRow({"x", "y"});
  ASSERT_OK(writer->Commit());
  ASSERT_OK_AND_ASSIGN(std::string content, base::ReadFile(path));
  EXPECT_EQ(content,
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\r\",\n"
            "\"\"\n"
            "x,y\n");
  ASSERT_OK_AND_ASSIGN(auto reader, CsvReader::Open(path));
  ASSERT_OK_AND_ASSIGN(Rows rows, ReadAll(*reader));
  EXPECT_EQ(rows,
            (Rows{{"plain", "a,b", "say \"hi\"", "two\nlines", "cr\r", ""}, {""}, {"x", "y"}}));
  EXPECT_THAT(dir.List(), ElementsAre("out.csv"));  // no temporary file left behind
}

// The one quoter every CSV writer uses (files, released tables on the wire, sweep reports).
TEST(CsvQuotingTest, QuotesPerRfc4180) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("a;b"), "a;b");
  EXPECT_EQ(CsvLine({"x", "y,z", ""}), "x,\"y,z\",\n");
  EXPECT_EQ(CsvLine({""}), "\"\"\n");  // not a blank line
  std::string out;
  AppendCsvRecord({"a,b", "c;d"}, ';', &out);
  EXPECT_EQ(out, "a,b;\"c;d\"\n");
  // What CsvLine writes, CsvReader reads back.
  ASSERT_OK_AND_ASSIGN(Rows rows, Parse(CsvLine({"q\"", "a,b"}) + CsvLine({""}) + CsvLine({"z"})));
  EXPECT_EQ(rows, (Rows{{"q\"", "a,b"}, {""}, {"z"}}));
}

TEST(CsvQuotingTest, WriteCsvFieldWritesWhatAppendCsvFieldAppends) {
  for (const std::string_view field :
       {"plain", "", "a,b", "say \"hi\"", "cr\r", "two\nlines", "a;b", "\"\"", ",", "x;y,z\""}) {
    for (const char separator : {',', ';'}) {
      std::string appended;
      AppendCsvField(field, separator, &appended);
      std::string written(CsvFieldBound(field), '\0');
      written.resize(
          static_cast<size_t>(WriteCsvField(field, separator, written.data()) - written.data()));
      EXPECT_EQ(written, appended) << field;
    }
  }
}

TEST(CsvWriterTest, SemicolonSeparatorQuotesSemicolonsNotCommas) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(dir.File("s.csv"), ';'));
  writer->WriteRow({"a,b", "c;d"});
  ASSERT_OK(writer->Commit());
  EXPECT_EQ(*base::ReadFile(dir.File("s.csv")), "a,b;\"c;d\"\n");
}

TEST(CsvWriterTest, UncommittedWriterLeavesNothing) {
  TempDir dir;
  {
    ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(dir.File("out.csv")));
    writer->WriteRow({"a"});
    const std::vector<std::string> files = dir.List();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_THAT(files[0], ::testing::StartsWith("out.csv.tmp."));
  }
  EXPECT_THAT(dir.List(), IsEmpty());
}

TEST(CsvWriterTest, CommitReplacesExistingFile) {
  TempDir dir;
  ASSERT_OK(table::WriteFileAtomically(dir.File("out.csv"), "old\n"));
  ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(dir.File("out.csv")));
  writer->WriteRow({"new"});
  EXPECT_EQ(*base::ReadFile(dir.File("out.csv")), "old\n");  // untouched until Commit()
  ASSERT_OK(writer->Commit());
  EXPECT_EQ(*base::ReadFile(dir.File("out.csv")), "new\n");
  EXPECT_THAT(writer->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
}

TEST(CsvWriterTest, LargeOutputIsFlushedInChunks) {
  TempDir dir;
  const std::string path = dir.File("big.csv");
  ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(path));
  const std::string value(100, 'v');
  for (int i = 0; i < 50'000; ++i) writer->WriteRow({value, std::to_string(i)});
  ASSERT_OK(writer->Commit());
  ASSERT_OK_AND_ASSIGN(auto reader, CsvReader::Open(path));
  ASSERT_OK_AND_ASSIGN(Rows rows, ReadAll(*reader));
  ASSERT_EQ(rows.size(), 50'000u);
  EXPECT_EQ(rows.back(), (std::vector<std::string>{value, "49999"}));
}

TEST(CsvWriterTest, MissingDirectoryIsNotFound) {
  TempDir dir;
  EXPECT_THAT(CsvWriter::Create(dir.File("no/such/dir/out.csv")),
              StatusIs(absl::StatusCode::kNotFound, "out.csv"));
}

TEST(CsvFileTest, WriteFileAtomicallyAndReadFile) {
  TempDir dir;
  const std::string path = dir.File("report.json");
  std::string content(3 << 20, 'x');  // larger than one read chunk
  content += "end";
  ASSERT_OK(table::WriteFileAtomically(path, content));
  ASSERT_OK_AND_ASSIGN(std::string read, base::ReadFile(path));
  EXPECT_EQ(read, content);
  ASSERT_OK(table::WriteFileAtomically(path, "short"));
  EXPECT_EQ(*base::ReadFile(path), "short");
  EXPECT_THAT(dir.List(), ElementsAre("report.json"));
}

TEST(CsvFileTest, ReadFileErrorsNameThePath) {
  TempDir dir;
  EXPECT_THAT(base::ReadFile(dir.File("missing.txt")),
              StatusIs(absl::StatusCode::kNotFound, "missing.txt"));
  EXPECT_THAT(table::WriteFileAtomically(dir.File("no/dir/x"), "x"),
              StatusIs(absl::StatusCode::kNotFound, "no/dir/x"));
}

// /dev/zero (or an endless FIFO) as a table fails fast: a line longer than the bound is an error
// with its line number, and the size limit holds even where there are newlines.
TEST(CsvReaderTest, OpenIsBoundedInLineLengthAndSize) {
  EXPECT_THAT(
      CsvReader::Open("/dev/zero"),
      StatusIs(absl::StatusCode::kInvalidArgument, "/dev/zero:1: line longer than 1048576 bytes"));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("csv_limits_" + std::to_string(::getpid())))
          .string();
  ASSERT_OK(table::WriteFileAtomically(path, "a,b\n1,2\n3,4\n"));
  EXPECT_THAT(CsvReader::Open(path, {.max_bytes = 8}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'" + path + "' is larger than the limit of 8 bytes for a table"));
  EXPECT_THAT(CsvReader::Open(path, {.max_line_bytes = 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, path + ":1: line longer than 2 bytes"));
  EXPECT_OK(CsvReader::Open(path, {.max_bytes = 12, .max_line_bytes = 3}).status());
  std::filesystem::remove(path);
}

// A table is written private to its owner.
TEST(CsvWriterTest, TablesAreWrittenWithMode0600) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("csv_mode_" + std::to_string(::getpid())))
          .string();
  ASSERT_OK_AND_ASSIGN(auto writer, CsvWriter::Create(path));
  writer->WriteRow({"a"});
  ASSERT_OK(writer->Commit());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fedanon::table
