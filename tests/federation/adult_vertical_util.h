// UCI Adult split by columns for vertical-federation tests (tests only): the shared data set
// (../shared/datasets/adult, skipped when absent), its taxonomies, a spec with the attributes of
// mohammed2011 §7 owned by the given parties, and one file per party listing the records in its
// own order. Final-weight (Fw) is left out: a near-unique survey weight, not something to release.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {

inline std::string AdultDir() { return ::fedanon::testing::SharedDir() + "/datasets/adult"; }
inline std::string AdultCsv() { return AdultDir() + "/adult_clean.csv"; }

inline std::string SlurpFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Taxonomy file name (as the spec names it) -> content.
inline std::map<std::string, std::string> AdultTaxonomies() {
  std::map<std::string, std::string> taxonomies;
  for (const char* attr : {"workclass", "education", "marital-status", "occupation", "race", "sex",
                           "native-country"}) {
    taxonomies[absl::StrCat(attr, ".csv")] =
        SlurpFile(absl::StrCat(AdultDir(), "/arx-hierarchies/adult_hierarchy_", attr, ".csv"));
  }
  taxonomies["relationship.csv"] =
      SlurpFile(AdultDir() + "/extra-hierarchies/adult_hierarchy_relationship.csv");
  return taxonomies;
}

// Every `stride`-th Adult record with an id column "adult-<row>" in front.
inline absl::StatusOr<Table> AdultWithIds(size_t stride) {
  auto raw = ReadCsvTable(AdultCsv());
  if (!raw.ok()) return raw.status();
  Table table;
  table.header = {"id"};
  table.header.insert(table.header.end(), raw->header.begin(), raw->header.end());
  for (size_t r = 0; r < raw->rows.size(); r += stride) {
    std::vector<std::string> row = {absl::StrCat("adult-", r)};
    row.insert(row.end(), raw->rows[r].begin(), raw->rows[r].end());
    table.rows.push_back(std::move(row));
  }
  return table;
}

// mohammed2011 §7's Top9 QID (Cg, Ag, Ms, En, Re, Hw, Sx, Ed, Oc in rank order).
inline const std::vector<std::string>& AdultTop9() {
  static const std::vector<std::string> top9 = {"capital-gain",  "age",          "marital-status",
                                                "education-num", "relationship", "hours-per-week",
                                                "sex",           "education",    "occupation"};
  return top9;
}

// The vertical spec: `columns[p]` are owned by hospital-<'a'+p>; one template over `qid` with `k`;
// gain ratio; `extra` appended (e.g. participation keys). The other attributes are QID attributes
// outside the template (specialized freely), or with `others_raw` released unchanged (role other),
// as in mohammed2011 §7 where only the QID is generalized.
inline std::string AdultVerticalSpec(const std::vector<std::vector<std::string>>& columns,
                                     const std::vector<std::string>& qid, int k,
                                     const std::string& extra = "", bool others_raw = false) {
  std::map<std::string, std::string> owner;
  for (size_t p = 0; p < columns.size(); ++p) {
    for (const auto& c : columns[p]) {
      owner[c] = absl::StrCat("hospital-", std::string(1, static_cast<char>('a' + p)));
    }
  }
  // Attribute -> how it is generalized (a taxonomy file, or a continuous range).
  static const std::vector<std::pair<std::string, std::string>> kAttributes = {
      {"age", "type: continuous, range: [0, 100], precision: 1"},
      {"workclass", "taxonomy: workclass.csv"},
      {"education", "taxonomy: education.csv"},
      {"education-num", "type: continuous, range: [0, 20], precision: 1"},
      {"marital-status", "taxonomy: marital-status.csv"},
      {"occupation", "taxonomy: occupation.csv"},
      {"relationship", "taxonomy: relationship.csv"},
      {"race", "taxonomy: race.csv"},
      {"sex", "taxonomy: sex.csv"},
      {"capital-gain", "type: continuous, range: [0, 100000], precision: 1"},
      {"capital-loss", "type: continuous, range: [0, 5000], precision: 1"},
      {"hours-per-week", "type: continuous, range: [0, 100], precision: 1"},
      {"native-country", "taxonomy: native-country.csv"}};
  std::string out = "name: adult-vertical\nattributes:\n  - {name: id, role: id}\n";
  for (const auto& [name, how] : kAttributes) {
    const bool in_qid = std::find(qid.begin(), qid.end(), name) != qid.end();
    if (others_raw && !in_qid) {
      absl::StrAppend(&out, "  - {name: ", name, ", role: other, party: ", owner.at(name), "}\n");
    } else {
      absl::StrAppend(&out, "  - {name: ", name, ", role: qid, ", how, ", party: ", owner.at(name),
                      "}\n");
    }
  }
  absl::StrAppend(&out, "  - {name: income, role: class, values: [\"<=50K\", \">50K\"]}\n",
                  "privacy:\n  model: templates\n  templates:\n    - {qid: [",
                  absl::StrJoin(qid, ", "), "], k: ", k, "}\n",
                  "score: gainratio\npartitioning: vertical\n", extra);
  return out;
}

// One file set per party: id, income and the party's columns, each party listing the rows in its
// own order; plus the taxonomies.
inline std::vector<std::map<std::string, std::string>> AdultPartyFiles(
    const Table& table, const std::vector<std::vector<std::string>>& columns,
    const std::map<std::string, std::string>& taxonomies) {
  std::vector<std::map<std::string, std::string>> files(columns.size(), taxonomies);
  for (size_t p = 0; p < columns.size(); ++p) {
    std::vector<std::string> cols = {"id", "income"};
    cols.insert(cols.end(), columns[p].begin(), columns[p].end());
    std::vector<int> idx;
    for (const auto& c : cols) {
      idx.push_back(static_cast<int>(std::find(table.header.begin(), table.header.end(), c) -
                                     table.header.begin()));
    }
    Table part;
    part.header = cols;
    const size_t n = table.rows.size();
    for (size_t i = 0; i < n; ++i) {
      const auto& row = table.rows[(i * 7919 + p * 101) % n];  // a different order per party
      std::vector<std::string> out;
      for (int k : idx) out.push_back(row[k]);
      part.rows.push_back(std::move(out));
    }
    files[p]["table.csv"] = ToCsv(part);
  }
  return files;
}

}  // namespace fedanon::testing
