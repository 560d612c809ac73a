// LoadDataset on a streamed regular file: the two-thread load (the file's halves encoded at once,
// then joined) gives exactly the Dataset of one pass, the CSV text is not kept, errors keep their
// file:line(:column) also in the second half or across the split, and a long line is found while
// streaming. Also CsvReader's streaming across its buffer (a quoted field longer than it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "tests/support/temp_dir.h"

namespace fedanon::table {
namespace {

using ::testing::HasSubstr;

constexpr char kSpec[] = R"(name: t
attributes:
  - {name: age, role: qid, type: continuous}
  - {name: grid, role: qid, type: continuous, range: [0, 100], precision: 0.5}
  - {name: city, role: qid}
  - {name: color, role: qid, values: [red, green, blue]}
  - {name: note, role: other}
  - {name: disease, role: sensitive}
  - {name: income, role: class}
privacy: {model: lkc, L: 2, K: 2, C: 0.9, sensitive_values: [flu, hiv]}
missing: drop
)";

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A table with quoted fields (some with line breaks and doubled quotes), blank lines, CRLF line
// ends, rows dropped for a missing value, and values first seen late in the file.
std::string Table(size_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string t = "age,grid,city,color,note,disease,income\n";
  const char* colors[] = {"red", "green", "blue"};
  const char* diseases[] = {"flu", "hiv", "cold", "none"};
  for (size_t r = 0; r < rows; ++r) {
    const uint32_t x = rng();
    absl::StrAppend(&t, x % 2 == 0 ? absl::StrCat(17 + x % 70) : absl::StrCat(17 + x % 70, ".5"),
                    ",", (x >> 3) % 200 * 0.5, ",");
    // Cities appear in order, so that each half first meets them differently.
    absl::StrAppend(&t, "city", (r * 7 / rows) * 13 + (x >> 9) % 5, ",", colors[(x >> 12) % 3],
                    ",");
    switch ((x >> 14) % 9) {
      case 0:
        absl::StrAppend(&t, "\"a, \"\"quoted\"\"\nnote\"");
        break;
      case 1:
        absl::StrAppend(&t, "?");  // the missing token: the row is dropped
        break;
      default:
        absl::StrAppend(&t, "n", r);
    }
    absl::StrAppend(&t, ",", diseases[(x >> 18) % 4], ",", (x >> 20) % 3 == 0 ? ">50K" : "<=50K",
                    (x >> 22) % 5 == 0 ? "\r\n" : "\n");
    if ((x >> 25) % 50 == 0) t += "\n";  // a blank line
  }
  return t;
}

fedanon::v1::JobSpec Spec() {
  auto spec = spec::ParseJobSpecYaml(kSpec, "spec");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

void ExpectSameDataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.header, b.header);
  EXPECT_EQ(a.num_records, b.num_records);
  EXPECT_EQ(a.records_in, b.records_in);
  EXPECT_EQ(a.records_dropped, b.records_dropped);
  EXPECT_EQ(a.kept, b.kept);
  EXPECT_EQ(a.class_labels, b.class_labels);
  EXPECT_EQ(a.class_codes, b.class_codes);
  EXPECT_EQ(a.sensitive_bits, b.sensitive_bits);
  EXPECT_EQ(a.warnings, b.warnings);
  ASSERT_EQ(a.qids.size(), b.qids.size());
  for (size_t q = 0; q < a.qids.size(); ++q) {
    SCOPED_TRACE(a.qids[q].name);
    EXPECT_EQ(a.qids[q].codes, b.qids[q].codes);
    EXPECT_EQ(a.qids[q].values, b.qids[q].values);
    EXPECT_EQ(a.qids[q].sorted_values, b.qids[q].sorted_values);
    EXPECT_EQ(a.qids[q].range_lo, b.qids[q].range_lo);
    EXPECT_EQ(a.qids[q].range_hi, b.qids[q].range_hi);
  }
}

LoadDatasetOptions OnePass() { return {.threads = 1}; }
LoadDatasetOptions TwoThreads() { return {.threads = 2, .parallel_min_bytes = 0}; }

TEST(DatasetLoadTest, TwoThreadsGiveTheDatasetOfOnePassAndKeepNoText) {
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  const std::string text = Table(20000, 1);
  WriteText(path, text);
  auto one = LoadDataset(Spec(), path, nullptr, OnePass());
  auto two = LoadDataset(Spec(), path, nullptr, TwoThreads());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(one->source_text, nullptr);
  EXPECT_EQ(two->source_text, nullptr);
  EXPECT_GT(one->records_dropped, 0u);
  EXPECT_GT(one->qids[2].values.size(), 30u);  // city: undeclared values, first-seen order
  ExpectSameDataset(*one, *two);
  // Checkpoints: ascending, at row starts that agree between the two loads' row counts.
  ASSERT_FALSE(two->checkpoints.empty());
  EXPECT_EQ(two->checkpoints.front().row, 0u);
  for (size_t i = 1; i < two->checkpoints.size(); ++i) {
    EXPECT_LT(two->checkpoints[i - 1].offset, two->checkpoints[i].offset);
    EXPECT_LE(two->checkpoints[i - 1].row, two->checkpoints[i].row);
  }
}

TEST(DatasetLoadTest, EveryPossibleSplitGivesTheSameDataset) {
  // A small table where the split falls on every kind of place in turn: inside a quoted field
  // with a line break, just before a blank line, on a CRLF.
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  const std::string text = Table(40, 2);
  WriteText(path, text);
  auto one = LoadDataset(Spec(), path, nullptr, OnePass());
  ASSERT_TRUE(one.ok()) << one.status();
  // The split is the first line start after the middle of the data: blank lines after the
  // header (skipped by the reader) move the middle across the data.
  for (size_t pad = 0; pad < 120; ++pad) {
    const size_t header_end = text.find('\n') + 1;
    WriteText(path, text.substr(0, header_end) + std::string(pad, '\n') + text.substr(header_end));
    auto two = LoadDataset(Spec(), path, nullptr, TwoThreads());
    ASSERT_TRUE(two.ok()) << two.status();
    SCOPED_TRACE(pad);
    EXPECT_EQ(one->qids[0].codes, two->qids[0].codes);
    EXPECT_EQ(one->qids[2].values, two->qids[2].values);
    EXPECT_EQ(one->qids[2].codes, two->qids[2].codes);
    EXPECT_EQ(one->kept, two->kept);
    EXPECT_EQ(one->sensitive_bits, two->sensitive_bits);
  }
}

TEST(DatasetLoadTest, ErrorsInTheSecondHalfKeepTheirLineAndColumn) {
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  std::string good;
  for (int r = 0; r < 100; ++r) absl::StrAppend(&good, 30 + r % 40, ",1,c,red,n,flu,<=50K\n");
  // A non-number in the continuous column `age`, near the end.
  std::string text = Table(2000, 3);
  size_t line = 1 + std::count(text.begin(), text.end(), '\n');
  text += "x1,1,c,red,n,flu,<=50K\n" + good;
  WriteText(path, text);
  auto one = LoadDataset(Spec(), path, nullptr, OnePass());
  auto two = LoadDataset(Spec(), path, nullptr, TwoThreads());
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(),
            absl::StrCat(path, ":", line, ": column 1 (age): 'x1' is not a number"));
  EXPECT_EQ(one.status(), two.status());
  // An unterminated quote near the end: file:line:column.
  text = Table(2000, 4);
  line = 1 + std::count(text.begin(), text.end(), '\n');
  text += "1,1,\"c,red,n,flu,<=50K\n" + good;
  WriteText(path, text);
  one = LoadDataset(Spec(), path, nullptr, OnePass());
  two = LoadDataset(Spec(), path, nullptr, TwoThreads());
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(), absl::StrCat(path, ":", line, ":5: unterminated quote"));
  EXPECT_EQ(one.status(), two.status());
}

TEST(DatasetLoadTest, QuotedFieldAcrossTheMiddleIsReadAsOneField) {
  // One huge quoted note with many line breaks spans the middle of the file: the second half,
  // starting inside it, fails, and the one-pass read gives the right table.
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  std::string text = "age,grid,city,color,note,disease,income\n";
  for (int r = 0; r < 50; ++r) absl::StrAppend(&text, 30 + r, ",1,c", r, ",red,n,flu,<=50K\n");
  std::string note = "\"";
  for (int l = 0; l < 3000; ++l) absl::StrAppend(&note, "line ", l, "\n");
  note += "\"";
  absl::StrAppend(&text, "31,2,cx,blue,", note, ",hiv,>50K\n");
  for (int r = 0; r < 5; ++r) absl::StrAppend(&text, 40 + r, ",1,d", r, ",green,n,cold,>50K\n");
  WriteText(path, text);
  auto one = LoadDataset(Spec(), path, nullptr, OnePass());
  auto two = LoadDataset(Spec(), path, nullptr, TwoThreads());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(one->num_records, 56u);
  ExpectSameDataset(*one, *two);
}

TEST(DatasetLoadTest, LongLineIsFoundWhileStreaming) {
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  std::string text = "age,grid,city,color,note,disease,income\n";
  for (int r = 0; r < 10; ++r) absl::StrAppend(&text, 30 + r, ",1,c,red,n,flu,<=50K\n");
  absl::StrAppend(&text, "30,1,c,red,", std::string(5000, 'n'), ",flu,<=50K\n");
  WriteText(path, text);
  for (int threads : {1, 2}) {
    auto d = LoadDataset(Spec(), path, nullptr,
                         {.max_line_bytes = 1000, .threads = threads, .parallel_min_bytes = 0});
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().message(), absl::StrCat(path, ":12: line longer than 1000 bytes"));
  }
}

TEST(DatasetLoadTest, HugeWholeNumbersGetTheirRanks) {
  // A continuous column without a grid whose whole numbers reach 2^31 - 1: each record's code is
  // the rank of its value among the distinct values, whether the value's id was found in the
  // direct table (small whole numbers), hashed (large ones, negative ones, and small ones seen
  // before the table reached them: 5000 first, then again once 3,000 distinct values have
  // widened the table's reach past it) or both. One pass and two threads agree.
  const std::vector<int64_t> first = {5000,    2147483647, 0,  4095,  4096,      2097151,
                                      2097152, 1490400,    -5, 13492, 2147483646};
  std::vector<int64_t> values = first;
  for (int64_t i = 0; i < 3000; ++i) values.push_back(i % 2 == 0 ? 6000 + i : 100000 + 7 * i);
  values.insert(values.end(), first.rbegin(), first.rend());
  values.insert(values.end(), {5000, 5000, 2147483647, 4095});
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  std::string text = "age,grid,city,color,note,disease,income\n";
  for (int64_t v : values) absl::StrAppend(&text, v, ",1,c,red,n,flu,<=50K\n");
  WriteText(path, text);
  std::vector<double> distinct(values.begin(), values.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  auto one = LoadDataset(Spec(), path, nullptr, OnePass());
  auto two = LoadDataset(Spec(), path, nullptr, TwoThreads());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  const QidColumn& age = one->qids[0];
  EXPECT_EQ(age.sorted_values, distinct);
  ASSERT_EQ(age.codes.size(), values.size());
  for (size_t r = 0; r < values.size(); ++r) {
    const auto rank =
        std::lower_bound(distinct.begin(), distinct.end(), values[r]) - distinct.begin();
    ASSERT_EQ(age.codes[r], rank) << "row " << r << ": " << values[r];
  }
  EXPECT_EQ(age.range_lo, -5);
  EXPECT_EQ(age.range_hi, 2147483648.0);  // whole numbers: the largest one plus 1
  ExpectSameDataset(*one, *two);
}

TEST(CsvStreamTest, RecordsLongerThanTheBufferAndEveryLineEnd) {
  // Fields far longer than the 256 KiB read buffer, quoted with line breaks and doubled quotes,
  // CRLF and LF, and no final newline: the stream reads what the in-memory reader reads.
  testing::TempDir dir;
  const std::string path = dir.File("t.csv");
  std::string text = "a,b\r\n";
  std::string big(5 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 1000) big[i] = '\n';
  absl::StrAppend(&text, "1,\"", big, "\"\"q\"\"\"\r\n\n");
  absl::StrAppend(&text, "2,", std::string(900000, 'y'), "\n");
  for (int r = 0; r < 100000; ++r) absl::StrAppend(&text, r, ",\"v\nw\"\n");
  absl::StrAppend(&text, "last,row");
  WriteText(path, text);
  auto streamed = CsvReader::Open(path);
  auto in_memory = CsvReader::FromString(text, path);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  ASSERT_TRUE(in_memory.ok());
  EXPECT_EQ((*streamed)->shared_text(), nullptr);
  std::vector<std::string_view> a, b;
  size_t records = 0;
  for (;;) {
    auto more_a = (*streamed)->Next(&a);
    auto more_b = (*in_memory)->Next(&b);
    ASSERT_TRUE(more_a.ok()) << more_a.status();
    ASSERT_TRUE(more_b.ok());
    ASSERT_EQ(*more_a, *more_b);
    if (!*more_a) break;
    ASSERT_EQ(a, b) << "record " << records;
    ASSERT_EQ((*streamed)->line(), (*in_memory)->line());
    ++records;
  }
  EXPECT_EQ(records, 100004u);
}

}  // namespace
}  // namespace fedanon::table
