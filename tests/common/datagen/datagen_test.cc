#include "common/datagen/datagen.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "tests/support/status_matchers.h"

namespace fedanon::datagen {
namespace {

namespace fs = std::filesystem;
using ::fedanon::testing::StatusIs;
using Table = std::vector<std::vector<std::string>>;

const std::vector<std::string> kHeader = {"age",
                                          "workclass",
                                          "fnlwgt",
                                          "education",
                                          "education-num",
                                          "marital-status",
                                          "occupation",
                                          "relationship",
                                          "race",
                                          "sex",
                                          "capital-gain",
                                          "capital-loss",
                                          "hours-per-week",
                                          "native-country",
                                          "income"};
const std::vector<std::string> kCategorical = {"workclass",  "education",     "marital-status",
                                               "occupation", "relationship",  "race",
                                               "sex",        "native-country"};

fs::path TestDir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / absl::StrCat("datagen_test_", getpid(), "_", name);
  fs::remove_all(dir);
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Table ParseCsv(const std::string& text) {
  Table rows;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  return rows;
}

int Column(const Table& table, const std::string& name) {
  for (size_t i = 0; i < table[0].size(); ++i) {
    if (table[0][i] == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

absl::StatusOr<std::string> Generate(const fs::path& dir, uint64_t rows, uint64_t seed,
                                     int parties = 1, bool vertical = false) {
  DatagenOptions options;
  options.rows = rows;
  options.seed = seed;
  options.out_dir = dir.string();
  options.parties = parties;
  options.partition =
      vertical ? DatagenOptions::Partition::kVertical : DatagenOptions::Partition::kHorizontal;
  return GenerateDataset(options);
}

// One 20,000-row data set shared by the statistical tests.
class DatagenTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kRows = 20000;

  static void SetUpTestSuite() {
    dir_ = new fs::path(TestDir("shared"));
    const auto summary = Generate(*dir_, kRows, 7);
    ASSERT_TRUE(summary.ok()) << summary.status();
    table_ = new Table(ParseCsv(ReadFile(*dir_ / "table.csv")));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete table_;
    delete dir_;
  }

  // Share of `>50K` among the data rows satisfying `pred`.
  template <typename Pred>
  static double HighShare(Pred pred) {
    const int income = Column(*table_, "income");
    int n = 0;
    int high = 0;
    for (size_t r = 1; r < table_->size(); ++r) {
      const auto& row = (*table_)[r];
      if (!pred(row)) continue;
      ++n;
      high += row[income] == ">50K";
    }
    EXPECT_GT(n, 100);
    return n == 0 ? 0.0 : static_cast<double>(high) / n;
  }

  static fs::path* dir_;
  static Table* table_;
};
fs::path* DatagenTest::dir_ = nullptr;
Table* DatagenTest::table_ = nullptr;

TEST_F(DatagenTest, WritesHeaderRowsTaxonomiesAndJob) {
  ASSERT_EQ(table_->size(), kRows + 1);
  EXPECT_EQ((*table_)[0], kHeader);
  for (size_t r = 1; r < table_->size(); ++r) ASSERT_EQ((*table_)[r].size(), kHeader.size()) << r;
  for (const std::string& attr : kCategorical) {
    EXPECT_TRUE(fs::exists(*dir_ / "tax" / (attr + ".csv"))) << attr;
  }
  EXPECT_TRUE(fs::exists(*dir_ / "job.yaml"));
  EXPECT_FALSE(fs::exists(*dir_ / "party1.csv"));
}

TEST_F(DatagenTest, EveryCategoricalValueIsALeafOfItsTaxonomy) {
  for (const std::string& attr : kCategorical) {
    SCOPED_TRACE(attr);
    std::set<std::string> leaves;
    std::set<std::string> inner;
    for (absl::string_view line :
         absl::StrSplit(ReadFile(*dir_ / "tax" / (attr + ".csv")), '\n', absl::SkipEmpty())) {
      const std::vector<std::string> path = absl::StrSplit(line, ';');
      ASSERT_GE(path.size(), 2u) << line;
      EXPECT_EQ(path.back(), "ANY") << line;
      EXPECT_TRUE(leaves.insert(path[0]).second) << "duplicate leaf in " << line;
      inner.insert(path.begin() + 1, path.end());
    }
    for (const std::string& leaf : leaves) EXPECT_EQ(inner.count(leaf), 0u) << leaf;
    const int col = Column(*table_, attr);
    std::set<std::string> seen;
    for (size_t r = 1; r < table_->size(); ++r) {
      const std::string& v = (*table_)[r][col];
      if (seen.insert(v).second) {
        EXPECT_EQ(leaves.count(v), 1u) << v;
      }
    }
    // The vocabularies are Adult's (rare values may be absent from 20,000 rows).
    const std::map<std::string, size_t> min_distinct = {
        {"workclass", 6},   {"education", 16},     {"marital-status", 7},
        {"occupation", 13}, {"relationship", 6},   {"race", 5},
        {"sex", 2},         {"native-country", 35}};
    EXPECT_GE(seen.size(), min_distinct.at(attr));
  }
}

TEST_F(DatagenTest, ValuesAreInRange) {
  const std::map<std::string, std::pair<int, int>> ranges = {
      {"age", {17, 90}},           {"fnlwgt", {12000, 1500000}},
      {"education-num", {1, 16}},  {"capital-gain", {0, 99999}},
      {"capital-loss", {0, 4356}}, {"hours-per-week", {1, 99}}};
  const std::vector<std::string> education = {
      "Preschool", "1st-4th", "5th-6th",     "7th-8th",      "9th",       "10th",
      "11th",      "12th",    "HS-grad",     "Some-college", "Assoc-voc", "Assoc-acdm",
      "Bachelors", "Masters", "Prof-school", "Doctorate"};
  const int gain = Column(*table_, "capital-gain");
  const int loss = Column(*table_, "capital-loss");
  const int country = Column(*table_, "native-country");
  int zero_gain = 0;
  int zero_loss = 0;
  int us = 0;
  for (size_t r = 1; r < table_->size(); ++r) {
    const auto& row = (*table_)[r];
    for (const auto& [name, range] : ranges) {
      const int v = std::stoi(row[Column(*table_, name)]);
      ASSERT_GE(v, range.first) << name;
      ASSERT_LE(v, range.second) << name;
    }
    const int num = std::stoi(row[Column(*table_, "education-num")]);
    ASSERT_EQ(row[Column(*table_, "education")], education[num - 1]);
    ASSERT_TRUE(row.back() == "<=50K" || row.back() == ">50K") << row.back();
    zero_gain += row[gain] == "0";
    zero_loss += row[loss] == "0";
    us += row[country] == "United-States";
    ASSERT_TRUE(row[gain] == "0" || row[loss] == "0");
  }
  const double n = static_cast<double>(kRows);
  EXPECT_NEAR(zero_gain / n, 0.92, 0.02);
  EXPECT_NEAR(zero_loss / n, 0.95, 0.02);
  EXPECT_NEAR(us / n, 0.91, 0.015);
}

TEST_F(DatagenTest, ClassBalanceAndCorrelations) {
  const double high = HighShare([](const auto&) { return true; });
  EXPECT_GT(high, 0.20);
  EXPECT_LT(high, 0.30);

  const int num = Column(*table_, "education-num");
  const int marital = Column(*table_, "marital-status");
  const int age = Column(*table_, "age");
  const int gain = Column(*table_, "capital-gain");
  const int occupation = Column(*table_, "occupation");
  const double degree = HighShare([&](const auto& r) { return std::stoi(r[num]) >= 13; });
  const double school = HighShare([&](const auto& r) { return std::stoi(r[num]) <= 9; });
  EXPECT_GT(degree, school + 0.15) << degree << " vs " << school;
  const double married =
      HighShare([&](const auto& r) { return r[marital] == "Married-civ-spouse"; });
  const double never = HighShare([&](const auto& r) { return r[marital] == "Never-married"; });
  EXPECT_GT(married, never + 0.2) << married << " vs " << never;
  const double mid_age = HighShare([&](const auto& r) {
    const int a = std::stoi(r[age]);
    return a >= 40 && a <= 55;
  });
  const double young = HighShare([&](const auto& r) { return std::stoi(r[age]) < 25; });
  EXPECT_GT(mid_age, young + 0.2);
  EXPECT_GT(HighShare([&](const auto& r) { return r[gain] != "0"; }), high + 0.2);
  EXPECT_GT(HighShare([&](const auto& r) { return r[occupation] == "Exec-managerial"; }), high);
}

TEST_F(DatagenTest, RelationshipIsConsistentWithSexAndMaritalStatus) {
  const int rel = Column(*table_, "relationship");
  const int sex = Column(*table_, "sex");
  const int marital = Column(*table_, "marital-status");
  int husbands = 0;
  int wives = 0;
  for (size_t r = 1; r < table_->size(); ++r) {
    const auto& row = (*table_)[r];
    const bool with_spouse =
        row[marital] == "Married-civ-spouse" || row[marital] == "Married-AF-spouse";
    if (row[rel] == "Husband") {
      ++husbands;
      ASSERT_EQ(row[sex], "Male");
      ASSERT_TRUE(with_spouse) << row[marital];
    }
    if (row[rel] == "Wife") {
      ++wives;
      ASSERT_EQ(row[sex], "Female");
      ASSERT_TRUE(with_spouse) << row[marital];
    }
  }
  EXPECT_NEAR(husbands / static_cast<double>(kRows), 0.41, 0.03);
  EXPECT_NEAR(wives / static_cast<double>(kRows), 0.046, 0.015);
}

TEST_F(DatagenTest, JobSpecHasExpectedKeys) {
  const std::string yaml = ReadFile(*dir_ / "job.yaml");
  for (const char* expected : {
           "name: generated-adult\n",
           "partitioning: horizontal\n",
           "  - {name: age, role: qid, type: continuous}\n",
           "  - {name: fnlwgt, role: other, type: continuous}\n",
           "  - {name: workclass, role: qid, type: categorical, taxonomy: tax/workclass.csv}\n",
           "  - {name: native-country, role: qid, type: categorical, taxonomy: "
           "tax/native-country.csv}\n",
           "  - {name: marital-status, role: sensitive, type: categorical}\n",
           "  - {name: income, role: class, type: categorical}\n",
           "privacy:\n  model: lkc\n  L: 4\n  K: 20\n  C: 0.2\n",
           "  sensitive_values: [Divorced, Separated]\n",
           "score: infogain\n",
           "missing: drop\n",
       }) {
    EXPECT_NE(yaml.find(expected), std::string::npos) << expected << "\nin\n" << yaml;
  }
  EXPECT_EQ(yaml.find("party"), std::string::npos);
  // Every attribute is listed once; every referenced taxonomy exists.
  for (const std::string& column : kHeader) {
    EXPECT_NE(yaml.find("{name: " + column + ","), std::string::npos) << column;
  }
  size_t pos = 0;
  int taxonomies = 0;
  while ((pos = yaml.find("taxonomy: ", pos)) != std::string::npos) {
    pos += 10;
    const std::string path = yaml.substr(pos, yaml.find('}', pos) - pos);
    EXPECT_TRUE(fs::exists(*dir_ / path)) << path;
    ++taxonomies;
  }
  EXPECT_EQ(taxonomies, 7);
}

TEST(DatagenDeterminismTest, SameSeedSameBytesOtherSeedOtherData) {
  const fs::path a = TestDir("det_a");
  const fs::path b = TestDir("det_b");
  const fs::path c = TestDir("det_c");
  ASSERT_OK(Generate(a, 3000, 42, 3));
  ASSERT_OK(Generate(b, 3000, 42, 3));
  ASSERT_OK(Generate(c, 3000, 43, 3));
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(a)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), a);
    EXPECT_EQ(ReadFile(entry.path()), ReadFile(b / rel)) << rel;
    ++files;
  }
  EXPECT_EQ(files, 1 + 2 + 8 + 3);  // table, job + horizontal job, taxonomies, parties
  EXPECT_NE(ReadFile(a / "table.csv"), ReadFile(c / "table.csv"));
  EXPECT_EQ(ReadFile(a / "tax/occupation.csv"), ReadFile(c / "tax/occupation.csv"));
  // A prefix property: the first rows do not depend on the row count.
  ASSERT_OK(Generate(c, 10, 42));
  const std::string small = ReadFile(c / "table.csv");
  EXPECT_EQ(ReadFile(a / "table.csv").substr(0, small.size()), small);
  for (const fs::path& d : {a, b, c}) fs::remove_all(d);
}

TEST(DatagenPartitionTest, HorizontalPartiesAreARoundRobinSplit) {
  const fs::path dir = TestDir("horizontal");
  ASSERT_OK_AND_ASSIGN(const std::string summary, Generate(dir, 1001, 3, 3));
  EXPECT_NE(summary.find("1001 rows"), std::string::npos) << summary;
  EXPECT_NE(summary.find("party3.csv"), std::string::npos) << summary;
  const Table table = ParseCsv(ReadFile(dir / "table.csv"));
  ASSERT_EQ(table.size(), 1002u);
  std::vector<Table> parties;
  for (int i = 1; i <= 3; ++i) {
    parties.push_back(ParseCsv(ReadFile(dir / absl::StrCat("party", i, ".csv"))));
    EXPECT_EQ(parties.back()[0], kHeader);
  }
  EXPECT_FALSE(fs::exists(dir / "party4.csv"));
  EXPECT_EQ(parties[0].size(), 335u);
  EXPECT_EQ(parties[1].size(), 335u);
  EXPECT_EQ(parties[2].size(), 334u);
  for (size_t r = 1; r < table.size(); ++r) {
    const size_t i = r - 1;
    ASSERT_EQ(parties[i % 3][1 + i / 3], table[r]) << r;
  }
  EXPECT_NE(ReadFile(dir / "job.yaml").find("partitioning: horizontal\n"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DatagenPartitionTest, VerticalPartiesShareIdsAndSplitTheAttributes) {
  const fs::path dir = TestDir("vertical");
  ASSERT_OK(Generate(dir, 500, 9, 3, /*vertical=*/true));
  const Table table = ParseCsv(ReadFile(dir / "table.csv"));
  ASSERT_EQ(table.size(), 501u);
  ASSERT_EQ(table[0][0], "id");
  EXPECT_EQ(std::vector<std::string>(table[0].begin() + 1, table[0].end()), kHeader);
  EXPECT_EQ(table[1][0], "r000001");
  EXPECT_EQ(table[500][0], "r000500");
  std::map<std::string, const std::vector<std::string>*> by_id;
  for (size_t r = 1; r < table.size(); ++r) {
    EXPECT_TRUE(by_id.emplace(table[r][0], &table[r]).second) << table[r][0];
  }

  const std::string yaml = ReadFile(dir / "job.yaml");
  EXPECT_NE(yaml.find("partitioning: vertical\n"), std::string::npos);
  EXPECT_NE(yaml.find("  - {name: id, role: id}\n"), std::string::npos);

  std::vector<std::string> attributes;  // concatenated party blocks
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE(i);
    const Table party = ParseCsv(ReadFile(dir / absl::StrCat("party", i, ".csv")));
    ASSERT_EQ(party.size(), 501u);
    const auto& header = party[0];
    ASSERT_GE(header.size(), 3u);
    EXPECT_EQ(header.front(), "id");
    EXPECT_EQ(header.back(), "income");
    for (size_t c = 1; c + 1 < header.size(); ++c) {
      attributes.push_back(header[c]);
      EXPECT_NE(yaml.find("{name: " + header[c] + ","), std::string::npos);
      const size_t line = yaml.find("{name: " + header[c] + ",");
      EXPECT_NE(yaml.substr(line, yaml.find('\n', line) - line)
                    .find(absl::StrCat("party: party", i, "}")),
                std::string::npos)
          << header[c];
    }
    std::set<std::string> ids;
    for (size_t r = 1; r < party.size(); ++r) {
      const auto& row = party[r];
      ASSERT_EQ(row.size(), header.size());
      ids.insert(row[0]);
      auto it = by_id.find(row[0]);
      ASSERT_NE(it, by_id.end()) << row[0];
      for (size_t c = 1; c < header.size(); ++c) {
        ASSERT_EQ(row[c], (*it->second)[Column(table, header[c])]) << header[c];
      }
    }
    EXPECT_EQ(ids.size(), by_id.size());
  }
  EXPECT_EQ(attributes, std::vector<std::string>(kHeader.begin(), kHeader.end() - 1));
  fs::remove_all(dir);
}

// --overlap F: each party keeps the `rows` common records (table.csv, the join) and gets
// round(rows * (1 - F) / F) records with ids of its own, so that the common share of its ids is F.
TEST(DatagenPartitionTest, VerticalOverlapAddsOwnRecordsWithIdsNoOtherPartyHas) {
  const fs::path dir = TestDir("overlap");
  const fs::path again = TestDir("overlap_again");
  const fs::path full = TestDir("overlap_full");
  auto generate = [](const fs::path& d, double overlap) {
    DatagenOptions options;
    options.rows = 600;
    options.seed = 5;
    options.out_dir = d.string();
    options.parties = 2;
    options.partition = DatagenOptions::Partition::kVertical;
    options.overlap = overlap;
    return GenerateDataset(options);
  };
  ASSERT_OK_AND_ASSIGN(const std::string summary, generate(dir, 0.4));
  EXPECT_NE(summary.find("900 records of its own"), std::string::npos) << summary;
  ASSERT_OK(generate(again, 0.4));
  ASSERT_OK(generate(full, 1.0));
  const Table table = ParseCsv(ReadFile(dir / "table.csv"));
  ASSERT_EQ(table.size(), 601u);
  // The join does not change with the overlap (the own records come from another stream).
  EXPECT_EQ(ReadFile(dir / "table.csv"), ReadFile(full / "table.csv"));
  std::map<std::string, const std::vector<std::string>*> common;
  for (size_t r = 1; r < table.size(); ++r) common.emplace(table[r][0], &table[r]);
  std::vector<std::set<std::string>> ids(2);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const std::string name = absl::StrCat("party", i + 1, ".csv");
    EXPECT_EQ(ReadFile(dir / name), ReadFile(again / name));  // deterministic by seed
    const Table party = ParseCsv(ReadFile(dir / name));
    ASSERT_EQ(party.size(), 1u + 600 + 900);  // 600 / 1500 = 0.4 of its ids are common
    EXPECT_EQ(party[0], ParseCsv(ReadFile(full / name))[0]);
    size_t in_common = 0;
    for (size_t r = 1; r < party.size(); ++r) {
      EXPECT_TRUE(ids[i].insert(party[r][0]).second) << party[r][0];
      auto it = common.find(party[r][0]);
      if (it == common.end()) continue;
      ++in_common;
      for (size_t c = 1; c < party[0].size(); ++c) {
        ASSERT_EQ(party[r][c], (*it->second)[Column(table, party[0][c])]) << party[0][c];
      }
    }
    EXPECT_EQ(in_common, 600u);
    // Interleaved: some own record comes before the last common one.
    EXPECT_EQ(common.count(party[2][0]), 0u) << party[2][0];
  }
  size_t shared = 0;
  for (const auto& id : ids[0]) shared += ids[1].count(id);
  EXPECT_EQ(shared, 600u);  // exactly the common records: the own ids differ between parties
  EXPECT_NE(ReadFile(dir / "party1.csv"), ReadFile(full / "party1.csv"));

  DatagenOptions bad;
  bad.rows = 10;
  bad.out_dir = dir.string();
  bad.parties = 2;
  bad.partition = DatagenOptions::Partition::kVertical;
  bad.overlap = 0.0;
  EXPECT_THAT(GenerateDataset(bad), StatusIs(absl::StatusCode::kInvalidArgument, "overlap"));
  bad.overlap = 1.5;
  EXPECT_THAT(GenerateDataset(bad), StatusIs(absl::StatusCode::kInvalidArgument, "overlap"));
  bad.overlap = 0.5;
  bad.partition = DatagenOptions::Partition::kHorizontal;
  EXPECT_THAT(GenerateDataset(bad), StatusIs(absl::StatusCode::kInvalidArgument, "overlap"));
  for (const fs::path& d : {dir, again, full}) fs::remove_all(d);
}

TEST(DatagenErrorsTest, RejectsBadOptionsAndUnwritablePaths) {
  const fs::path dir = TestDir("errors");
  EXPECT_THAT(Generate(dir, 0, 1), StatusIs(absl::StatusCode::kInvalidArgument, "rows"));
  EXPECT_THAT(Generate(dir, 10, 1, 0), StatusIs(absl::StatusCode::kInvalidArgument, "parties"));
  EXPECT_THAT(Generate(dir, 10, 1, -2), StatusIs(absl::StatusCode::kInvalidArgument, "parties"));
  EXPECT_THAT(Generate(dir, 10, 1, 15, true),
              StatusIs(absl::StatusCode::kInvalidArgument, "parties"));
  EXPECT_THAT(Generate("", 10, 1), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_FALSE(fs::exists(dir));

  // A path below a regular file cannot be created.
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  const fs::path blocked = dir / "file" / "out";
  const auto status = Generate(blocked, 10, 1);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.status().message()).find(blocked.string()), std::string::npos)
      << status.status();
  // An existing directory where table.csv should go.
  fs::create_directories(dir / "out" / "table.csv");
  const auto table_status = Generate(dir / "out", 10, 1);
  EXPECT_FALSE(table_status.ok());
  EXPECT_NE(std::string(table_status.status().message()).find("table.csv"), std::string::npos)
      << table_status.status();
  fs::remove_all(dir);
}

}  // namespace
TEST(DatagenHorizontalSpecTest, EncodesEveryPartyAgainstThePublicSchema) {
  const std::string dir = ::testing::TempDir() + "/datagen_horizontal";
  std::filesystem::remove_all(dir);
  DatagenOptions o;
  o.rows = 600;
  o.seed = 3;
  o.out_dir = dir;
  o.parties = 3;
  ASSERT_TRUE(GenerateDataset(o).ok());
  auto spec = spec::LoadJobSpec(dir + "/horizontal.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec::ValidateJobSpec(*spec).ok());
  std::map<std::string, std::string> texts;
  for (const auto& a : spec->attributes()) {
    if (a.taxonomy().empty()) continue;
    auto text = base::ReadFile(a.taxonomy());
    ASSERT_TRUE(text.ok()) << text.status();
    texts[a.name()] = *text;
  }
  auto schema = table::BuildPublicSchema(*spec, texts);
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_TRUE(schema->all_values_declared);
  uint64_t total = 0;
  for (int p = 1; p <= 3; ++p) {
    auto data = table::LoadDataset(*spec, dir + "/party" + std::to_string(p) + ".csv", &*schema);
    ASSERT_TRUE(data.ok()) << data.status();
    total += data->num_records;
  }
  EXPECT_EQ(total, 600u);
}

}  // namespace fedanon::datagen
