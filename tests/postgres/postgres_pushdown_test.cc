// Push-down statistics (common/table_postgres/postgres_stats.h) against a real private server
// (tests/postgres/postgres_cluster.h; skipped without the binaries): on a generated Adult-like
// table with missing values, every StatsRequest answer computed by SQL equals, word for word, what
// AppendLocalStats computes from the loaded table, along a random sequence of specializations with
// random requests of every kind; so do the final check's group counts and the released rows. The
// check at job start refuses NULLs, values outside a taxonomy and values off a grid with the
// in-memory reader's messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/engine/count_source.h"
#include "common/engine/released_rows.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table_postgres/postgres_stats.h"
#include "tests/postgres/postgres_cluster.h"
#include "tests/postgres/postgres_test_data.h"
#include "tests/support/job_authorization_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

using ::testing::HasSubstr;

class PostgresPushdownTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = PostgresCluster::Start();
    if (!cluster.ok()) {
      skip_reason_ = new std::string(cluster.status().message());
      return;
    }
    cluster_ = cluster->release();
    dir_ = new std::string(GenerateAdultLike("pg_pushdown", 2500, 1));
    auto table = ReadCsvTable(*dir_ + "/table.csv");
    ASSERT_TRUE(table.ok()) << table.status();
    // Some missing values (`missing: drop` drops those rows, in memory and in SQL alike).
    for (size_t r = 5; r < table->rows.size(); r += 37) table->rows[r][1] = "?";
    WriteText(*dir_ + "/table.csv", ToCsv(*table));
    header_ = new std::vector<std::string>(table->header);
    std::ifstream in(*dir_ + "/table.csv", std::ios::binary);
    ASSERT_OK(cluster_->LoadCsv("adult", AdultSqlColumns(table->header),
                                std::string(std::istreambuf_iterator<char>(in), {})));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (cluster_ == nullptr) GTEST_SKIP() << (skip_reason_ ? *skip_reason_ : "no cluster");
    auto spec = spec::LoadJobSpec(*dir_ + "/horizontal.yaml");
    ASSERT_OK(spec);
    spec_ = *spec;
    auto schema = table::BuildPublicSchema(spec_, TaxonomyTexts(spec_, *dir_));
    ASSERT_OK(schema);
    schema_ = std::make_unique<table::Dataset>(*std::move(schema));
  }
  table_postgres::PostgresSource Source(const std::string& query) const {
    return {.name = "patients",
            .conninfo = cluster_->conninfo() + conninfo_options_,
            .table = query.empty() ? "adult" : "",
            .query = query,
            .push_down = true};
  }
  // The table with `column` replaced by `expression` in the rows `where` selects.
  std::string SelectWith(const std::string& column, const std::string& expression,
                         const std::string& where) const {
    std::vector<std::string> cols;
    for (const auto& h : *header_) {
      cols.push_back(h == column ? absl::StrCat("CASE WHEN ", where, " THEN ", expression,
                                                " ELSE \"", h, "\" END AS \"", h, "\"")
                                 : absl::StrCat("\"", h, "\""));
    }
    return absl::StrCat("SELECT ", absl::StrJoin(cols, ", "),
                        " FROM (SELECT *, row_number() OVER () AS n FROM adult) AS t");
  }

  // 14 random specializations with random requests of every kind: every word equals
  // AppendLocalStats on the loaded table; then the final check's counts and the released rows.
  void AnswersEveryRequest(const table_postgres::PostgresPushdown::Limits& limits);

  static PostgresCluster* cluster_;
  static std::string* skip_reason_;
  static std::string* dir_;
  static std::vector<std::string>* header_;
  fedanon::v1::JobSpec spec_;
  std::unique_ptr<table::Dataset> schema_;
  std::string conninfo_options_;  // appended to the push-down's connection string
};

PostgresCluster* PostgresPushdownTest::cluster_ = nullptr;
std::string* PostgresPushdownTest::skip_reason_ = nullptr;
std::string* PostgresPushdownTest::dir_ = nullptr;
std::vector<std::string>* PostgresPushdownTest::header_ = nullptr;

// The cut nodes (no children) of a hierarchy.
std::vector<engine::NodeIndex> CutNodes(const engine::AttributeHierarchy& h) {
  std::vector<engine::NodeIndex> out;
  for (size_t n = 0; n < h.size(); ++n) {
    if (h.node(static_cast<engine::NodeIndex>(n)).children.empty()) {
      out.push_back(static_cast<engine::NodeIndex>(n));
    }
  }
  return out;
}

std::string Joined(const std::vector<std::string_view>& row) {
  return absl::StrJoin(std::vector<std::string>(row.begin(), row.end()), "|");
}

// A random split threshold for a continuous node (or -1 when it cannot be split).
int32_t RandomSplit(const engine::HierarchyNode& n, std::mt19937_64& rng) {
  if (n.rank_hi - n.rank_lo < 2) return -1;
  // Mostly near the low end, where gen-data's values are (capital-gain's grid is 100,000 wide).
  const int32_t width = std::min(n.rank_hi - n.rank_lo - 1, 60);
  return n.rank_lo + 1 + static_cast<int32_t>(rng() % width);
}

void PostgresPushdownTest::AnswersEveryRequest(
    const table_postgres::PostgresPushdown::Limits& limits) {
  ASSERT_OK_AND_ASSIGN(table::Dataset mem,
                       table::LoadDataset(spec_, *dir_ + "/table.csv", schema_.get()));
  ASSERT_OK_AND_ASSIGN(auto pd,
                       table_postgres::PostgresPushdown::Open(spec_, Source(""), *schema_));
  pd->set_limits(limits);
  ASSERT_GT(mem.records_dropped, 0u) << "the test wants rows with missing values";
  EXPECT_EQ(pd->data().num_records, mem.num_records);
  EXPECT_EQ(pd->data().records_dropped, mem.records_dropped);
  std::vector<engine::AttributeHierarchy> hm, hp;
  for (const auto& q : mem.qids) hm.emplace_back(&q);
  for (const auto& q : pd->data().qids) hp.emplace_back(&q);
  engine::Tips tips(&mem, &hm);
  std::mt19937_64 rng(29);
  auto split = [&](int a, engine::NodeIndex n) {
    if (hm[a].kind() != table::QidKind::kContinuous) return;
    const int32_t s = RandomSplit(hm[a].node(n), rng);
    hm[a].SetSplit(n, s);
    hp[a].SetSplit(n, s);
  };
  for (size_t a = 0; a < hm.size(); ++a) split(static_cast<int>(a), 0);
  const uint64_t queries_before = pd->queries();
  int requests = 0;
  size_t nonzero = 0;
  for (int step = 0; step < 14; ++step) {
    // A random request of every kind over the current cut.
    engine::StatsRequest request;
    for (size_t a = 0; a < hm.size(); ++a) {
      if (hm[a].kind() != table::QidKind::kContinuous) continue;
      const auto& root = hm[a].node(0);
      std::vector<int32_t> bounds = {static_cast<int32_t>(rng() % 5)};
      while (bounds.size() < 6)
        bounds.push_back(bounds.back() + 1 + static_cast<int32_t>(rng() % 20));
      if (bounds.back() > root.rank_hi) continue;
      request.range_counts.push_back({static_cast<int>(a), bounds, (rng() & 1) == 1});
    }
    for (size_t a = 0; a < hm.size(); ++a) {
      for (engine::NodeIndex n : CutNodes(hm[a])) {
        if (rng() % 3 == 0) request.node_class_counts.push_back({static_cast<int>(a), n});
        const auto& node = hm[a].node(n);
        if (hm[a].kind() == table::QidKind::kContinuous && node.rank_hi - node.rank_lo <= 200 &&
            rng() % 2 == 0) {
          request.rank_histograms.push_back({static_cast<int>(a), n});
        }
      }
    }
    request.node_class_counts.push_back({1, 0});  // the root after it was specialized: zeros
    for (size_t p = 0; p < tips.partition_count(); ++p) {
      if (!tips.alive(static_cast<int32_t>(p)) || rng() % 4 != 0) continue;
      request.group_keys.push_back(tips.key(static_cast<int32_t>(p)));
      if (rng() % 2 == 0) request.released_groups.push_back(tips.key(static_cast<int32_t>(p)));
    }
    request.group_keys.push_back(std::vector<engine::NodeIndex>(hm.size(), 0));  // no such group
    request.released_combinations = mem.ValueCombinations();
    std::vector<uint64_t> want, got;
    engine::AppendLocalStats(tips, request, &want);
    ASSERT_OK(pd->AppendStats(hp, request, &got));
    ASSERT_EQ(want.size(), engine::StatsLength(hm, mem.num_classes(), mem.tracked.size(), request));
    ASSERT_EQ(got.size(), want.size()) << "step " << step;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "step " << step << " word " << i;
    }
    nonzero += std::count_if(want.begin(), want.end(), [](uint64_t w) { return w != 0; });
    ++requests;
    // One random specialization of a refinable cut node.
    std::vector<std::pair<int, engine::NodeIndex>> refinable;
    for (size_t a = 0; a < hm.size(); ++a) {
      for (engine::NodeIndex n : CutNodes(hm[a])) {
        if (hm[a].CandidateCount(n) > 0) refinable.push_back({static_cast<int>(a), n});
      }
    }
    if (refinable.empty()) break;
    const auto [a, n] = refinable[rng() % refinable.size()];
    const int c = static_cast<int>(rng() % hm[a].CandidateCount(n));
    const auto kids = hm[a].Specialize(n, c);
    hp[a].Specialize(n, c);
    tips.Specialize(a, n, c);
    pd->Specialize(a, n, c);
    for (engine::NodeIndex k : kids) split(a, k);
  }
  EXPECT_EQ(requests, 14);
  EXPECT_GT(nonzero, 1000u);  // the answers count real records
  // A bounded number of queries per request (at most four; three without range counts here).
  EXPECT_LE(pd->queries() - queries_before, 4u * requests);

  // The final check's group counts: every live partition, with its sensitive counts.
  ASSERT_OK_AND_ASSIGN(auto groups, pd->GroupCounts(hp));
  size_t live = 0;
  for (size_t p = 0; p < tips.partition_count(); ++p) {
    const int32_t part = static_cast<int32_t>(p);
    if (!tips.alive(part) || tips.records(part).empty()) continue;
    ++live;
    ASSERT_TRUE(groups.count(tips.key(part)));
    const auto& g = groups.at(tips.key(part));
    ASSERT_EQ(g.size(), 1 + mem.tracked.size());
    EXPECT_EQ(g[0], tips.records(part).size());
    for (size_t b = 0; b < mem.tracked.size(); ++b) {
      uint64_t n = 0;
      for (uint32_t r : tips.records(part)) n += mem.sensitive_bits[r] >> b & 1;
      EXPECT_EQ(g[1 + b], n);
    }
  }
  EXPECT_EQ(groups.size(), live);

  // The released rows, as a multiset.
  const auto columns = engine::ReleasedColumns(spec_, mem, /*spec_order=*/true);
  std::vector<std::string> rows_mem, rows_pd;
  ASSERT_OK(engine::ForEachReleasedRow(
      spec_, mem, tips, hm, columns,
      [&](const std::vector<std::string_view>& r) { rows_mem.push_back(Joined(r)); }));
  ASSERT_OK(pd->ForEachReleasedRow(
      hp, engine::ReleasedColumns(spec_, pd->data(), /*spec_order=*/true),
      [&](const std::vector<std::string_view>& r) { rows_pd.push_back(Joined(r)); }));
  std::sort(rows_mem.begin(), rows_mem.end());
  std::sort(rows_pd.begin(), rows_pd.end());
  EXPECT_EQ(rows_pd.size(), mem.num_records);
  EXPECT_EQ(rows_pd, rows_mem);
}

TEST_F(PostgresPushdownTest, AnswersEveryRequestWordForWordAsTheLoadedTable) {
  AnswersEveryRequest({});
}

// The other shapes of the SQL: group statistics by one GROUP BY per refinable attribute joined by
// UNION ALL (more cells than the combined GROUP BY takes), and group keys packed into several
// BIGINT columns.
TEST_F(PostgresPushdownTest, AnswersEveryRequestWordForWordWithPerAttributeGroupByAndSeveralKeys) {
  AnswersEveryRequest({.max_combined_cells = 0, .pack_limit = 8});
}

// Every statement push-down sends, as the server logs it (log_statement=all on the push-down's
// connection), in both shapes of the SQL: no GROUPING SETS, ROLLUP or CUBE, which Citus runs on
// a single shard only (docs/postgres.md, "Standard SQL only").
TEST_F(PostgresPushdownTest, SendsNoGroupingSetsRollupOrCube) {
  const std::string log_path = cluster_->dir() + "/server.log";
  const auto log_size = [&] {
    std::ifstream in(log_path, std::ios::binary | std::ios::ate);
    return in ? static_cast<std::streamoff>(in.tellg()) : std::streamoff{0};
  };
  const std::streamoff before = log_size();
  conninfo_options_ = " options='-c log_statement=all'";
  AnswersEveryRequest({});
  AnswersEveryRequest({.max_combined_cells = 0, .pack_limit = 8});
  std::ifstream in(log_path, std::ios::binary);
  ASSERT_TRUE(in) << log_path;
  in.seekg(before);
  std::string line;
  std::vector<std::string> statements;
  while (std::getline(in, line)) {
    // "statement: <sql>" (simple protocol) or "execute <unnamed>: <sql>" (PQexecParams).
    if (line.find("LOG:  statement: ") != std::string::npos ||
        line.find("LOG:  execute ") != std::string::npos) {
      statements.push_back(line);
    }
  }
  // Two Opens (the transaction, the column types, the two scans of the check) and 14 requests
  // each with group statistics, released counts, the final check and the released rows.
  EXPECT_GT(statements.size(), 40u);
  size_t group_by = 0, union_all = 0;
  for (const std::string& s : statements) {
    const std::string upper = absl::AsciiStrToUpper(s);
    EXPECT_EQ(upper.find("GROUPING SETS"), std::string::npos) << s;
    EXPECT_EQ(upper.find("GROUPING("), std::string::npos) << s;
    EXPECT_EQ(upper.find("ROLLUP"), std::string::npos) << s;
    EXPECT_EQ(upper.find("CUBE"), std::string::npos) << s;
    group_by += upper.find("GROUP BY") != std::string::npos;
    union_all += upper.find(" UNION ALL ") != std::string::npos;
  }
  EXPECT_GT(group_by, 30u);
  // The check at job start (twice) and the group statistics past the cell limit (14 requests).
  EXPECT_GE(union_all, 2u + 14u);
}

// The snapshot's fingerprint: equal for two Opens of the same rows (by table and by query),
// different when one value changes or a row goes.
TEST_F(PostgresPushdownTest, TheFingerprintChangesWithTheTable) {
  ASSERT_OK_AND_ASSIGN(auto a, table_postgres::PostgresPushdown::Open(spec_, Source(""), *schema_));
  ASSERT_OK_AND_ASSIGN(auto b, table_postgres::PostgresPushdown::Open(spec_, Source(""), *schema_));
  ASSERT_OK_AND_ASSIGN(auto same, table_postgres::PostgresPushdown::Open(
                                      spec_, Source("SELECT * FROM adult"), *schema_));
  EXPECT_EQ(a->fingerprint().size(), 16u);
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  EXPECT_EQ(a->fingerprint(), same->fingerprint());
  ASSERT_OK_AND_ASSIGN(
      auto relabelled,
      table_postgres::PostgresPushdown::Open(
          spec_, Source(SelectWith("marital-status", "'Divorced'", "n <= 50")), *schema_));
  ASSERT_OK_AND_ASSIGN(auto fewer, table_postgres::PostgresPushdown::Open(
                                       spec_, Source("SELECT * FROM adult LIMIT 2000"), *schema_));
  EXPECT_NE(relabelled->fingerprint(), a->fingerprint());
  EXPECT_NE(fewer->fingerprint(), a->fingerprint());
  EXPECT_NE(fewer->fingerprint(), relabelled->fingerprint());
}

// One test (each test of this file starts its own server under CTest): every refusal of the
// check at job start, with the reader's messages.
TEST_F(PostgresPushdownTest, RefusesBadInputWithTheReadersMessages) {
  // A NULL, with the reader's advice.
  auto pd = table_postgres::PostgresPushdown::Open(
      spec_, Source(SelectWith("workclass", "NULL", "n = 7")), *schema_);
  ASSERT_FALSE(pd.ok());
  EXPECT_THAT(pd.status().message(),
              HasSubstr("PostgreSQL source 'patients': column 2 (workclass) is NULL in 1 row; "
                        "leave NULLs out in the query (WHERE ... IS NOT NULL) or map them to the "
                        "job's missing token '?' (COALESCE)"));
  // A value outside the taxonomy, counted as the reader counts it.
  pd = table_postgres::PostgresPushdown::Open(
      spec_, Source(SelectWith("race", "'Martian'", "n IN (3, 9)")), *schema_);
  ASSERT_FALSE(pd.ok());
  EXPECT_THAT(pd.status().message(),
              HasSubstr("attribute 'race': 1 value is not a leaf of taxonomy "));
  EXPECT_THAT(pd.status().message(), HasSubstr("(2 records): 'Martian' (2 records)"));
  // A value off the continuous grid.
  pd = table_postgres::PostgresPushdown::Open(
      spec_, Source(SelectWith("age", "(\"age\" + 0.5)::numeric", "n = 5")), *schema_);
  ASSERT_FALSE(pd.ok());
  EXPECT_THAT(pd.status().message(), HasSubstr("(age): "));
  EXPECT_THAT(pd.status().message(), HasSubstr(".5 is not on the grid 0 + i * 1 inside the range "
                                               "[0, 100) (1 row)"));
  // An undeclared class value: the class is also a released value column, and the reader names
  // it as such.
  pd = table_postgres::PostgresPushdown::Open(
      spec_, Source(SelectWith("income", "'maybe'", "n = 11")), *schema_);
  ASSERT_FALSE(pd.ok());
  EXPECT_THAT(pd.status().message(),
              HasSubstr("attribute 'income': values not among its declared values: "
                        "'maybe' (1 record)"));
}

}  // namespace
}  // namespace fedanon::testing
