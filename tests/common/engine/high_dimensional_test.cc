// LKC-privacy must work for |QID| = 41 and L = 4 (101,270 attribute subsets, as for the Blood
// data set of mohammed2010 §6). The output is verified by brute force over every 4-subset with a
// compact integer-coded check (the generic checker is too slow for 101,270 subsets).
#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

TEST(HighDimensionalLkc, FortyOneQidAttributesWithLFour) {
  constexpr int kQ = 41, kRows = 600, kK = 5;
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>(state >> 33);
  };
  Table t;
  std::map<std::string, std::string> taxonomies;
  std::string spec = "name: q41\nattributes:\n";
  for (int i = 0; i < kQ; ++i) {
    const std::string name = absl::StrCat("a", i);
    t.header.push_back(name);
    if (i % 3 == 0) {
      absl::StrAppend(&spec, "  - {name: ", name, ", role: qid, type: continuous}\n");
    } else {
      std::string tax;
      for (int v = 0; v < 4; ++v)
        absl::StrAppend(&tax, name, "v", v, ";", name, "g", v / 2, ";ANY\n");
      taxonomies["tax/" + name + ".csv"] = tax;
      absl::StrAppend(&spec, "  - {name: ", name, ", role: qid, taxonomy: tax/", name, ".csv}\n");
    }
  }
  t.header.push_back("cls");
  t.header.push_back("sens");
  absl::StrAppend(&spec, "  - {name: cls, role: class}\n  - {name: sens, role: sensitive}\n",
                  "privacy: {model: lkc, L: 4, K: ", kK, ", C: 0.6, sensitive_values: [s0]}\n");
  for (int r = 0; r < kRows; ++r) {
    std::vector<std::string> row;
    for (int i = 0; i < kQ; ++i) {
      row.push_back(i % 3 == 0 ? absl::StrCat(next() % 10) : absl::StrCat("a", i, "v", next() % 4));
    }
    row.push_back(std::stoi(row[0]) > 4 ? "Y" : "N");
    row.push_back(absl::StrCat("s", next() % 5));
    t.rows.push_back(row);
  }
  const Job job = WriteJob("q41", spec, t, taxonomies);
  ASSERT_OK_AND_ASSIGN(auto report, RunJob(job));
  EXPECT_EQ(report.constraints_checked(), 101270u);
  EXPECT_GT(report.steps_size(), 0);

  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  ASSERT_OK(CheckTruthful(in));
  // Integer-code every output QID value, then check each 4-subset's groups.
  std::vector<std::vector<uint32_t>> codes(kQ, std::vector<uint32_t>(kRows));
  for (int a = 0; a < kQ; ++a) {
    std::unordered_map<std::string, uint32_t> ids;
    for (int r = 0; r < kRows; ++r) {
      codes[a][r] = ids.emplace(in.anonymized[r][a], ids.size()).first->second;
    }
  }
  std::vector<bool> s0(kRows);
  for (int r = 0; r < kRows; ++r) s0[r] = in.raw[r][kQ + 1] == "s0";
  uint64_t subsets = 0, smallest = kRows;
  double largest_conf = 0;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> groups;
  for (int a = 0; a < kQ; ++a)
    for (int b = a + 1; b < kQ; ++b)
      for (int c = b + 1; c < kQ; ++c)
        for (int d = c + 1; d < kQ; ++d) {
          ++subsets;
          groups.clear();
          for (int r = 0; r < kRows; ++r) {
            const uint64_t key = uint64_t{codes[a][r]} << 48 | uint64_t{codes[b][r]} << 32 |
                                 uint64_t{codes[c][r]} << 16 | codes[d][r];
            auto& g = groups[key];
            ++g.first;
            g.second += s0[r];
          }
          for (const auto& [key, g] : groups) {
            smallest = std::min<uint64_t>(smallest, g.first);
            largest_conf = std::max(largest_conf, static_cast<double>(g.second) / g.first);
          }
        }
  EXPECT_EQ(subsets, 101270u);
  EXPECT_GE(smallest, static_cast<uint64_t>(kK));
  EXPECT_LE(largest_conf, 0.6 + 1e-12);
  EXPECT_EQ(report.smallest_group(), smallest);
  EXPECT_NEAR(report.largest_confidence(), largest_conf, 1e-12);
}

}  // namespace
}  // namespace fedanon::testing
