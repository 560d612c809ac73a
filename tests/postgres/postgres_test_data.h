// Test data for the PostgreSQL tests (tests only): a generated Adult-like table (common/datagen)
// in a fresh directory, and the SQL column list that loads such a table into PostgreSQL (numeric
// columns as integer, the others as text).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/datagen/datagen.h"
#include "tests/common/engine/engine_test_util.h"

namespace fedanon::testing {

// The columns of Adult that hold numbers.
inline bool IsAdultNumericColumn(const std::string& name) {
  static const std::set<std::string> numeric = {"age",          "fnlwgt",       "education-num",
                                                "capital-gain", "capital-loss", "hours-per-week"};
  return numeric.count(name) > 0;
}

// "\"age\" integer", "\"workclass\" text", ... for `header`.
inline std::vector<std::string> AdultSqlColumns(const std::vector<std::string>& header) {
  std::vector<std::string> columns;
  for (const auto& h : header) {
    columns.push_back(absl::StrCat("\"", h, "\" ", IsAdultNumericColumn(h) ? "integer" : "text"));
  }
  return columns;
}

// Writes gen-data's files (table.csv, party1..3.csv, tax/, job.yaml, horizontal.yaml) for `rows`
// records into a fresh directory and returns it.
inline std::string GenerateAdultLike(const std::string& name, uint64_t rows, int parties) {
  const std::string dir = FreshDir(name);
  datagen::DatagenOptions o;
  o.rows = rows;
  o.seed = 7;
  o.out_dir = dir;
  o.parties = parties;
  auto summary = datagen::GenerateDataset(o);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return dir;
}

}  // namespace fedanon::testing
