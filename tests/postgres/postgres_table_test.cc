// The PostgreSQL source and sink (common/table_postgres/postgres_source.h, postgres_sink.h) against
// a real private server (tests/postgres/postgres_cluster.h; skipped without the binaries): a table
// read from PostgreSQL encodes exactly as the same CSV file does, bad input gets the CSV reader's
// errors (naming the column and the row), connection strings follow libpq's conventions without
// the password ever showing, and the sink replaces a table all or nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/spec/job_spec_loader.h"
#include "common/table_postgres/postgres_sink.h"
#include "common/table_postgres/postgres_source.h"
#include "tests/postgres/postgres_cluster.h"
#include "tests/postgres/postgres_test_data.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PostgresTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = PostgresCluster::Start();
    if (!cluster.ok()) {
      skip_reason_ = new std::string(cluster.status().message());
      return;
    }
    cluster_ = cluster->release();
    dir_ = new std::string(GenerateAdultLike("pg_table", 3000, 1));
    auto table = ReadCsvTable(*dir_ + "/table.csv");
    ASSERT_TRUE(table.ok()) << table.status();
    header_ = new std::vector<std::string>(table->header);
    ASSERT_OK(cluster_->LoadCsv("adult", AdultSqlColumns(table->header),
                                SlurpFile(*dir_ + "/table.csv")));
  }
  static void TearDownTestSuite() {
    delete cluster_;  // stops the server, removes its directory
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (cluster_ == nullptr) GTEST_SKIP() << (skip_reason_ ? *skip_reason_ : "no cluster");
    auto spec = spec::LoadJobSpec(*dir_ + "/job.yaml");
    ASSERT_OK(spec);
    spec_ = *spec;
  }

  // The rows of a query (fields joined by '|'); a failed query fails the test.
  static std::vector<std::string> Rows(const std::string& sql) {
    auto rows = cluster_->Query(sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::vector<std::string>{};
  }
  static std::string SlurpFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  table_postgres::PostgresSource Source(const std::string& query) const {
    return {.name = "patients",
            .conninfo = cluster_->conninfo(),
            .table = "",
            .query = query,
            .push_down = false};
  }
  // SELECT of every column of `adult` in order, numbered rows (n), with `replace` swapping a
  // column for an expression over the numbered rows.
  std::string SelectWith(const std::string& column, const std::string& expression) const {
    std::vector<std::string> cols;
    for (const auto& h : *header_) {
      cols.push_back(h == column ? absl::StrCat(expression, " AS \"", h, "\"")
                                 : absl::StrCat("\"", h, "\""));
    }
    return absl::StrCat("SELECT ", absl::StrJoin(cols, ", "),
                        " FROM (SELECT *, row_number() OVER () AS n FROM adult) AS t ORDER BY n");
  }
  // The error the CSV reader gives for the table with `column` of data row `row` set to `value`
  // (the same edit as SelectWith makes), with its "file:line" turned into the PostgreSQL form.
  std::string CsvErrorFor(const std::string& column, size_t row, const std::string& value) {
    auto table = ReadCsvTable(*dir_ + "/table.csv");
    EXPECT_TRUE(table.ok());
    const size_t c =
        std::find(table->header.begin(), table->header.end(), column) - table->header.begin();
    table->rows[row - 1][c] = value;
    const std::string path = *dir_ + "/edited.csv";
    WriteText(path, ToCsv(*table));
    auto loaded = table::LoadDataset(spec_, path);
    EXPECT_FALSE(loaded.ok());
    return absl::StrReplaceAll(std::string(loaded.status().message()),
                               {{absl::StrCat(path, ":", row + 1),
                                 "PostgreSQL source 'patients', row " + std::to_string(row)},
                                {path, "PostgreSQL source 'patients'"}});
  }

  static PostgresCluster* cluster_;
  static std::string* skip_reason_;
  static std::string* dir_;
  static std::vector<std::string>* header_;
  fedanon::v1::JobSpec spec_;
};

PostgresCluster* PostgresTable::cluster_ = nullptr;
std::string* PostgresTable::skip_reason_ = nullptr;
std::string* PostgresTable::dir_ = nullptr;
std::vector<std::string>* PostgresTable::header_ = nullptr;

// Every row of a Dataset's kept text, as read back (ReopenSource).
std::vector<std::string> KeptRows(const table::Dataset& d) {
  auto reader = table::ReopenSource(d);
  EXPECT_TRUE(reader.ok());
  std::vector<std::string> rows;
  std::vector<std::string_view> fields;
  while (true) {
    auto more = (*reader)->Next(&fields);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    rows.push_back(absl::StrJoin(std::vector<std::string>(fields.begin(), fields.end()), "|"));
  }
  return rows;
}

// Every record as its encoded values (codes that do not depend on the row order as they are,
// codes given in order of first appearance as the values they stand for), sorted: SQL promises
// no row order without ORDER BY, so the two Datasets are compared as multisets of records.
std::vector<std::string> EncodedRecords(const table::Dataset& d) {
  std::vector<std::string> records(d.num_records);
  for (size_t r = 0; r < d.num_records; ++r) {
    for (const auto& q : d.qids) {
      const int32_t code = q.codes[r];
      absl::StrAppend(&records[r],
                      q.kind == table::QidKind::kSuppression && !q.values_declared
                          ? q.values[code]
                          : std::to_string(code),
                      "|");
    }
    if (!d.class_codes.empty()) absl::StrAppend(&records[r], d.class_labels[d.class_codes[r]]);
    absl::StrAppend(&records[r], "|", d.sensitive_bits[r]);
  }
  std::sort(records.begin(), records.end());
  return records;
}

void ExpectSameDataset(const table::Dataset& pg, const table::Dataset& csv) {
  EXPECT_EQ(pg.header, csv.header);
  EXPECT_EQ(pg.num_records, csv.num_records);
  EXPECT_EQ(pg.records_dropped, csv.records_dropped);
  ASSERT_EQ(pg.qids.size(), csv.qids.size());
  for (size_t q = 0; q < pg.qids.size(); ++q) {
    EXPECT_EQ(pg.qids[q].sorted_values, csv.qids[q].sorted_values) << pg.qids[q].name;
    EXPECT_EQ(pg.qids[q].range_lo, csv.qids[q].range_lo) << pg.qids[q].name;
    EXPECT_EQ(pg.qids[q].range_hi, csv.qids[q].range_hi) << pg.qids[q].name;
  }
  EXPECT_EQ(EncodedRecords(pg), EncodedRecords(csv));
  std::vector<std::string> pg_rows = KeptRows(pg), csv_rows = KeptRows(csv);
  std::sort(pg_rows.begin(), pg_rows.end());
  std::sort(csv_rows.begin(), csv_rows.end());
  EXPECT_EQ(pg_rows, csv_rows);
}

TEST_F(PostgresTable, ATableReadsAsTheCsvFileDoes) {
  ASSERT_OK_AND_ASSIGN(table::Dataset csv, table::LoadDataset(spec_, *dir_ + "/table.csv"));
  table_postgres::PostgresSource source = Source("");
  source.table = "public.ADULT";  // SQL's rules: unquoted names fold to lower case
  ASSERT_OK_AND_ASSIGN(table::Dataset pg, table_postgres::LoadDatasetFromPostgres(spec_, source));
  EXPECT_EQ(pg.num_records, 3000u);
  ExpectSameDataset(pg, csv);
}

TEST_F(PostgresTable, AQueryReadsAsTheCsvFileDoes) {
  ASSERT_OK_AND_ASSIGN(table::Dataset csv, table::LoadDataset(spec_, *dir_ + "/table.csv"));
  ASSERT_OK_AND_ASSIGN(table::Dataset pg, table_postgres::LoadDatasetFromPostgres(
                                              spec_, Source(SelectWith("", "") + " ;\n")));
  ExpectSameDataset(pg, csv);
}

TEST_F(PostgresTable, ANullNamesTheColumnAndTheRow) {
  auto got = table_postgres::LoadDatasetFromPostgres(
      spec_, Source(SelectWith("workclass", "CASE WHEN n = 7 THEN NULL ELSE workclass END")));
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument,
                            "PostgreSQL source 'patients', row 7: column 2 (workclass) is NULL"));
}

TEST_F(PostgresTable, TextInAContinuousColumnIsATypeError) {
  auto got = table_postgres::LoadDatasetFromPostgres(spec_, Source(SelectWith("age", "age::text")));
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument,
                            "column 'age' has type text; attribute 'age' is continuous"));
}

TEST_F(PostgresTable, ABadNumberGetsTheCsvReadersError) {
  const std::string expected = CsvErrorFor("age", 3, "NaN");
  EXPECT_THAT(expected, HasSubstr("row 3: column 1 (age): 'NaN' is not a number"));
  auto got = table_postgres::LoadDatasetFromPostgres(
      spec_, Source(SelectWith("age", "CASE WHEN n = 3 THEN 'NaN'::numeric ELSE age END")));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), expected);
}

TEST_F(PostgresTable, AnUnknownValueGetsTheCsvReadersError) {
  const std::string expected = CsvErrorFor("workclass", 5, "Martian");
  EXPECT_THAT(expected, HasSubstr("'Martian' (1 record)"));
  auto got = table_postgres::LoadDatasetFromPostgres(
      spec_, Source(SelectWith("workclass", "CASE WHEN n = 5 THEN 'Martian' ELSE workclass END")));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), expected);
}

TEST_F(PostgresTable, AMissingColumnIsNamed) {
  auto got =
      table_postgres::LoadDatasetFromPostgres(spec_, Source("SELECT age, workclass FROM adult"));
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument,
                            "named in the spec is not a column of PostgreSQL source 'patients' "
                            "(columns: age, workclass)"));
}

TEST_F(PostgresTable, AFailingQueryIsNamed) {
  EXPECT_THAT(table_postgres::LoadDatasetFromPostgres(spec_, Source("SELECT * FROM no_such_table")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "PostgreSQL source 'patients': the query failed: ERROR:  relation "
                       "\"no_such_table\" does not exist"));
  // Part way through the rows: the server's error, after the last row that arrived.
  EXPECT_THAT(table_postgres::LoadDatasetFromPostgres(
                  spec_, Source(SelectWith("age", "CASE WHEN n = 2500 THEN 1 / 0 ELSE age END"))),
              StatusIs(absl::StatusCode::kInvalidArgument, "division by zero"));
  table_postgres::PostgresSource missing = Source("");
  missing.table = "no_such_table";
  EXPECT_THAT(table_postgres::LoadDatasetFromPostgres(spec_, missing),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "finding the table 'no_such_table' failed: ERROR:  relation "
                       "\"no_such_table\" does not exist"));
  // A query cannot write: the source reads in a read-only transaction.
  EXPECT_THAT(table_postgres::LoadDatasetFromPostgres(
                  spec_, Source("WITH gone AS (DELETE FROM adult RETURNING *) SELECT * FROM gone")),
              StatusIs(absl::StatusCode::kInvalidArgument, "read-only transaction"));
  EXPECT_EQ(Rows("SELECT count(*) FROM adult"), (std::vector<std::string>{"3000"}));
}

TEST_F(PostgresTable, ABadConnectionStringIsUnavailable) {
  table_postgres::PostgresSource source = Source("SELECT * FROM adult");
  source.conninfo = "host=/nonexistent-socket-dir port=1 dbname=x";
  EXPECT_THAT(
      table_postgres::LoadDatasetFromPostgres(spec_, source),
      StatusIs(absl::StatusCode::kUnavailable, "PostgreSQL source 'patients': cannot connect: "));
  source.conninfo = "hots=localhost";
  EXPECT_THAT(table_postgres::LoadDatasetFromPostgres(spec_, source),
              StatusIs(absl::StatusCode::kUnavailable, "invalid connection option \"hots\""));
}

TEST_F(PostgresTable, APassfileWorksAndAPasswordIsNeverInAMessage) {
  const std::string tcp = absl::StrCat("host=127.0.0.1 port=", cluster_->port(),
                                       " user=fedanon dbname=postgres sslmode=disable");
  const std::string passfile = *dir_ + "/pgpass";
  WriteText(passfile, absl::StrCat("127.0.0.1:", cluster_->port(),
                                   ":*:fedanon:", PostgresCluster::kPassword, "\n"));
  std::filesystem::permissions(
      passfile, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  table_postgres::PostgresSource source = Source("SELECT * FROM adult");
  source.conninfo = absl::StrCat(tcp, " passfile=", passfile);
  ASSERT_OK_AND_ASSIGN(table::Dataset pg, table_postgres::LoadDatasetFromPostgres(spec_, source));
  EXPECT_EQ(pg.num_records, 3000u);

  source.conninfo = absl::StrCat(tcp, " password=wrong-Pa55word-42");
  auto got = table_postgres::LoadDatasetFromPostgres(spec_, source);
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kUnavailable,
                            "password authentication failed for user \"fedanon\""));
  EXPECT_THAT(std::string(got.status().message()), Not(HasSubstr("wrong-Pa55word-42")));

  table_postgres::PostgresSink sink{.conninfo = source.conninfo, .table = "t"};
  absl::Status st = table_postgres::WriteTableToPostgres(sink, "job-1", "a,b\n1,2\n");
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kUnavailable, "password authentication failed"));
  EXPECT_THAT(std::string(st.message()), Not(HasSubstr("wrong-Pa55word-42")));
}

// The rows of `table` (sorted), each as its fields joined by '|'.
std::vector<std::string> SortedRows(const PostgresCluster& c, const std::string& table) {
  auto rows = c.Query(absl::StrCat("SELECT * FROM ", table));
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return {};
  std::sort(rows->begin(), rows->end());
  return *rows;
}

std::vector<std::string> SortedCsvRows(const std::string& csv) {
  auto reader = table::CsvReader::FromString(csv, "csv");
  EXPECT_TRUE(reader.ok());
  std::vector<std::string> rows;
  std::vector<std::string_view> fields;
  bool header = true;
  while (true) {
    auto more = (*reader)->Next(&fields);
    if (!more.ok() || !*more) break;
    if (!header)
      rows.push_back(absl::StrJoin(std::vector<std::string>(fields.begin(), fields.end()), "|"));
    header = false;
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST_F(PostgresTable, TheSinkWritesAndReplacesTheTable) {
  ASSERT_OK(cluster_->Sql("CREATE SCHEMA released"));
  const table_postgres::PostgresSink sink{.conninfo = cluster_->conninfo(),
                                          .table = "released.\"Adult_{job_id}\""};
  const std::string first = SlurpFile(*dir_ + "/table.csv");
  ASSERT_OK(table_postgres::WriteTableToPostgres(sink, "job1", first));
  EXPECT_EQ(SortedRows(*cluster_, "released.\"Adult_job1\""), SortedCsvRows(first));
  // Every column is text, named as in the header (quoted values, tabs and backslashes intact).
  const std::string odd = "a b,c-d\n\"x,\ty\",\"back\\slash \"\"q\"\"\"\n[1-5),\n";
  ASSERT_OK(table_postgres::WriteTableToPostgres(sink, "job1", odd));
  EXPECT_EQ(Rows("SELECT \"a b\", \"c-d\" FROM released.\"Adult_job1\" ORDER BY 1"),
            (std::vector<std::string>{"[1-5)|", "x,\ty|back\\slash \"q\""}));
  EXPECT_EQ(Rows("SELECT count(*) FROM pg_tables WHERE schemaname = 'released'"),
            (std::vector<std::string>{"1"}));
}

TEST_F(PostgresTable, ASinkFailureLeavesThePreviousTableUntouched) {
  const table_postgres::PostgresSink sink{.conninfo = cluster_->conninfo(), .table = "kept"};
  ASSERT_OK(table_postgres::WriteTableToPostgres(sink, "j", "v\nold-1\nold-2\n"));
  // More than one COPY chunk (1 MiB) of good rows reach the server, then a malformed row.
  std::string big = "v\n";
  while (big.size() < (3 << 20)) big += "a-new-row-that-reaches-the-server\n";
  big += "two,fields\n";
  absl::Status st = table_postgres::WriteTableToPostgres(sink, "j", big);
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument, "expected 1 fields, found 2"));
  EXPECT_EQ(SortedRows(*cluster_, "kept"), (std::vector<std::string>{"old-1", "old-2"}));
  EXPECT_EQ(Rows("SELECT to_regclass('kept_fedanon_new') IS NULL"),
            (std::vector<std::string>{"t"}));
  // A failure after the rows are in (the name holds a view, which DROP TABLE refuses).
  ASSERT_OK(cluster_->Sql("CREATE VIEW kept_view AS SELECT 'view-row'::text AS v"));
  const table_postgres::PostgresSink onto_view{.conninfo = cluster_->conninfo(),
                                               .table = "kept_view"};
  EXPECT_THAT(table_postgres::WriteTableToPostgres(onto_view, "j", "v\nnew\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, "dropping the previous table failed"));
  EXPECT_EQ(SortedRows(*cluster_, "kept_view"), (std::vector<std::string>{"view-row"}));
  EXPECT_EQ(Rows("SELECT to_regclass('kept_view_fedanon_new') IS NULL"),
            (std::vector<std::string>{"t"}));
}

}  // namespace
}  // namespace fedanon::testing
