// The vertical federation (mohammed2011 §5) against the centralized engine on the joined table:
// worked example B with Sex at one party and Job, Salary at the other; random tables over 2-4
// parties whose files list the ids in different orders and hold ids the others lack; and what
// the parties' replies must not carry (raw values, ids).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

struct VScenario {
  std::string spec_yaml;                          // vertical; taxonomy paths relative
  std::map<std::string, std::string> taxonomies;  // file -> content
  Table joined;                                   // ID column first, every attribute
  std::vector<std::vector<std::string>> columns;  // per party: its attribute columns
  std::string class_column;
  uint64_t seed = 1;
  int extra_ids = 0;  // per party: ids the others do not have
  int missing = 0;    // per party: common ids it drops (so they are not common)
};

uint64_t Next(uint64_t* state, uint64_t n) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state % n;
}

// The party files: ID, class and the party's own columns, rows shuffled; some joined rows are
// withheld by one party (not common) and each party adds rows with ids nobody else has.
std::vector<std::map<std::string, std::string>> PartyFiles(const VScenario& s,
                                                           std::set<std::string>* common_ids) {
  uint64_t state = s.seed * 0x9e3779b97f4a7c15ULL + 11;
  const size_t parties = s.columns.size();
  std::vector<std::set<size_t>> withheld(parties);
  for (size_t p = 0; p < parties; ++p) {
    for (int m = 0; m < s.missing; ++m) withheld[p].insert(Next(&state, s.joined.rows.size()));
  }
  common_ids->clear();
  for (size_t r = 0; r < s.joined.rows.size(); ++r) {
    bool everywhere = true;
    for (size_t p = 0; p < parties; ++p) everywhere = everywhere && !withheld[p].count(r);
    if (everywhere) common_ids->insert(s.joined.rows[r][0]);
  }
  std::vector<std::map<std::string, std::string>> files;
  for (size_t p = 0; p < parties; ++p) {
    std::vector<int> idx = {0};
    Table part;
    part.header = {s.joined.header[0], s.class_column};
    idx.push_back(
        static_cast<int>(std::find(s.joined.header.begin(), s.joined.header.end(), s.class_column) -
                         s.joined.header.begin()));
    for (const auto& c : s.columns[p]) {
      part.header.push_back(c);
      idx.push_back(static_cast<int>(std::find(s.joined.header.begin(), s.joined.header.end(), c) -
                                     s.joined.header.begin()));
    }
    for (size_t r = 0; r < s.joined.rows.size(); ++r) {
      if (withheld[p].count(r)) continue;
      std::vector<std::string> row;
      for (int i : idx) row.push_back(s.joined.rows[r][i]);
      part.rows.push_back(row);
    }
    for (int e = 0; e < s.extra_ids; ++e) {
      std::vector<std::string> row = part.rows[Next(&state, part.rows.size())];
      row[0] = absl::StrCat("only-", p, "-", e);
      part.rows.push_back(row);
    }
    for (size_t i = part.rows.size(); i > 1; --i) {
      std::swap(part.rows[i - 1], part.rows[Next(&state, i)]);
    }
    std::map<std::string, std::string> f = s.taxonomies;
    f["table.csv"] = ToCsv(part);
    files.push_back(std::move(f));
  }
  return files;
}

struct VOutcome {
  fedanon::v1::JobInfo info;
  Table result;
  std::vector<std::string> replies;  // every serialized party reply
  // Receiver -> every plaintext it opened from another party (ID lists, instructions, ...).
  std::map<std::string, std::vector<std::string>> opened;
};

VOutcome RunVertical(const VScenario& s, const std::string& name, std::set<std::string>* common) {
  VOutcome out;
  auto mu = std::make_shared<absl::Mutex>();  // the leader calls parties in parallel
  auto fed = InProcessFederation::Create(
      name, PartyFiles(s, common), [&out, mu](party::PartyAgentOptions& o) {
        o.observe_opened = [&out, mu, receiver = o.name](const std::string&,
                                                         const std::string& plain) {
          absl::MutexLock lock(mu.get());
          out.opened[receiver].push_back(plain);
        };
      });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  (*fed)->channel.set_observer([&out, mu](const std::string&, const std::string& bytes) {
    absl::MutexLock lock(mu.get());
    out.replies.push_back(bytes);
  });
  auto spec = common::ParseJobSpecYaml(s.spec_yaml, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return out;
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& p : (*fed)->names) req.add_parties(p);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty())
      (*req.mutable_taxonomies())[a.name()] = s.taxonomies.at(a.taxonomy());
  }
  auto info = (*fed)->Submit(req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  out.info = (*fed)->Wait(info->job_id());
  if (out.info.state() == fedanon::v1::JOB_STATE_DONE) {
    auto csv = (*fed)->leader->Result(info->job_id());
    EXPECT_TRUE(csv.ok()) << csv.status();
    if (csv.ok()) {
      auto t = ParseCsvText(*csv, (*fed)->dir);
      EXPECT_TRUE(t.ok()) << t.status();
      if (t.ok()) out.result = *t;
    }
  }
  return out;
}

// Centralized run on the joined table restricted to the common ids.
void ExpectSameAsCentralized(const VScenario& s, const std::string& name) {
  std::set<std::string> common;
  const VOutcome fed = RunVertical(s, name, &common);
  ASSERT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();

  Table joined;
  joined.header = s.joined.header;
  for (const auto& row : s.joined.rows) {
    if (common.count(row[0])) joined.rows.push_back(row);
  }
  const Job job = WriteJob(name + "_central", s.spec_yaml, joined, s.taxonomies);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));

  const auto& report = fed.info.report();
  ASSERT_EQ(report.steps_size(), central.steps_size()) << report.DebugString();
  for (int i = 0; i < central.steps_size(); ++i) {
    EXPECT_EQ(report.steps(i).attribute(), central.steps(i).attribute()) << "step " << i;
    EXPECT_EQ(report.steps(i).value(), central.steps(i).value()) << "step " << i;
    EXPECT_DOUBLE_EQ(report.steps(i).score(), central.steps(i).score()) << "step " << i;
    EXPECT_EQ(report.steps(i).records(), central.steps(i).records()) << "step " << i;
  }
  EXPECT_EQ(report.smallest_group(), central.smallest_group());
  EXPECT_EQ(report.groups(), central.groups());
  EXPECT_NEAR(report.largest_confidence(), central.largest_confidence(), 1e-12);
  EXPECT_EQ(fed.result.rows.size(), common.size());
  EXPECT_EQ(RowsByColumns(fed.result, central_out.header),
            RowsByColumns(central_out, central_out.header));
}

// Worked example B (mohammed2011 Table 1): party a holds Sex, party b holds Job and Salary.
VScenario ExampleB() {
  VScenario s;
  s.spec_yaml = R"(name: example-b
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Salary, role: qid, type: continuous, range: [1, 99], precision: 1, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
privacy:
  model: templates
  templates:
    - {qid: [Sex, Job], k: 4}
    - {qid: [Sex, Salary], k: 5}
score: gainratio
beneficial: true
partitioning: vertical
numeric_split: exact  # the paper's Salary split at 37 is a per-value threshold
)";
  s.taxonomies = {{"job.csv",
                   "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;"
                   "ANY_Job\nCarpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-"
                   "collar;ANY_Job\nManager;White-collar;ANY_Job\nAccountant;Professional;White-"
                   "collar;ANY_Job\nLawyer;Professional;White-collar;ANY_Job\n"},
                  {"sex.csv", "Male;ANY_Sex\nFemale;ANY_Sex\n"}};
  s.joined.header = {"ID", "Class", "Sex", "Job", "Salary"};
  struct Block {
    const char* sex;
    const char* job;
    const char* salary;
    int y, n;
  };
  const Block blocks[] = {{"Male", "Janitor", "30", 0, 3},    {"Male", "Mover", "32", 0, 4},
                          {"Male", "Carpenter", "35", 2, 3},  {"Female", "Technician", "37", 3, 1},
                          {"Female", "Manager", "42", 4, 2},  {"Female", "Manager", "44", 3, 0},
                          {"Male", "Accountant", "44", 3, 0}, {"Female", "Accountant", "44", 3, 0},
                          {"Male", "Lawyer", "44", 2, 0},     {"Female", "Lawyer", "44", 1, 0}};
  int id = 1;
  for (const Block& b : blocks) {
    for (int i = 0; i < b.y + b.n; ++i) {
      s.joined.rows.push_back(
          {absl::StrCat("person-", id++), i < b.y ? "Y" : "N", b.sex, b.job, b.salary});
    }
  }
  s.columns = {{"Sex"}, {"Job", "Salary"}};
  s.class_column = "Class";
  return s;
}

TEST(VerticalFederation, WorkedExampleBEqualsCentralized) {
  ExpectSameAsCentralized(ExampleB(), "vert_b");
}

TEST(VerticalFederation, WorkedExampleBKnownAnswers) {
  std::set<std::string> common;
  const VOutcome fed = RunVertical(ExampleB(), "vert_b_known", &common);
  ASSERT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();
  const auto& report = fed.info.report();
  ASSERT_GE(report.steps_size(), 2);
  // Example 6: the first winner is Salary [1-99) -> {[1-37), [37-99)}, then ANY_Job.
  EXPECT_EQ(report.steps(0).attribute(), "Salary");
  EXPECT_EQ(report.steps(0).children(0), "[1-37)");
  EXPECT_EQ(report.steps(0).children(1), "[37-99)");
  EXPECT_NEAR(report.steps(0).info_gain(), 0.3584, 5e-5);
  EXPECT_EQ(report.steps(1).value(), "ANY_Job");
  EXPECT_NEAR(report.steps(1).info_gain(), 0.272, 5e-4);
  EXPECT_GE(report.smallest_group(), 4u);
  EXPECT_EQ(common.size(), 34u);
  EXPECT_EQ(fed.result.rows.size(), 34u);
}

TEST(VerticalFederation, ExampleBWithShuffledPartialIds) {
  VScenario s = ExampleB();
  s.extra_ids = 5;
  s.missing = 2;
  s.seed = 7;
  ExpectSameAsCentralized(s, "vert_b_partial");
}

// Random tables with every kind of attribute, attributes dealt over 2-4 parties.
VScenario RandomScenario(uint64_t seed) {
  uint64_t state = seed * 0x2545f4914f6cdd1dULL + 3;
  auto next = [&state](int n) { return static_cast<int>(Next(&state, static_cast<uint64_t>(n))); };
  VScenario s;
  s.seed = seed;
  s.extra_ids = next(6);
  s.missing = next(6);
  const int parties = 2 + next(3);
  s.columns.assign(parties, {});
  std::string attrs = "  - {name: ID, role: id}\n";
  const int nq = parties + next(3);
  std::vector<int> kinds;
  s.joined.header = {"ID"};
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    const int owner = q < parties ? q : next(parties);
    const std::string party =
        absl::StrCat("hospital-", std::string(1, static_cast<char>('a' + owner)));
    s.columns[owner].push_back(name);
    s.joined.header.push_back(name);
    const int kind = next(3);
    kinds.push_back(kind);
    if (kind == 0) {
      std::string tax;
      for (int v = 0; v < 6; ++v)
        absl::StrAppend(&tax, name, "val", v, ";", name, "grp", v / 3, ";ANY\n");
      s.taxonomies[name + ".csv"] = tax;
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, taxonomy: ", name,
                      ".csv, party: ", party, "}\n");
    } else if (kind == 1) {
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, values: [", name, "s0, ", name,
                      "s1, ", name, "s2, ", name, "s3], party: ", party, "}\n");
    } else {
      absl::StrAppend(&attrs, "  - {name: ", name,
                      ", role: qid, type: continuous, range: [0, 40], precision: 1, party: ", party,
                      "}\n");
    }
  }
  const int sens_owner = next(parties);
  s.columns[sens_owner].push_back("sens");
  s.joined.header.push_back("cls");
  s.joined.header.push_back("sens");
  s.class_column = "cls";
  const int rows = 40 + next(120);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row = {absl::StrCat("id-", seed, "-", r)};
    for (int q = 0; q < nq; ++q) {
      const std::string name = absl::StrCat("q", q);
      if (kinds[q] == 0) {
        row.push_back(absl::StrCat(name, "val", next(6)));
      } else if (kinds[q] == 1) {
        row.push_back(absl::StrCat(name, "s", next(4)));
      } else {
        row.push_back(absl::StrCat(next(40)));
      }
    }
    row.push_back(next(10) < 7 ? (row[1].back() % 2 ? "yes" : "no") : (next(2) ? "yes" : "no"));
    row.push_back(absl::StrCat("d", next(4)));
    s.joined.rows.push_back(row);
  }
  absl::StrAppend(&attrs, "  - {name: cls, role: class, values: [yes, no]}\n",
                  "  - {name: sens, role: sensitive, values: [d0, d1, d2, d3], party: hospital-",
                  std::string(1, static_cast<char>('a' + sens_owner)), "}\n");
  static const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};
  s.spec_yaml = absl::StrCat(
      "name: random-vertical\nattributes:\n", attrs, "privacy: {model: lkc, L: ", 1 + next(nq),
      ", K: ", 2 + next(6), ", C: ", next(2) ? "0.9" : "0.6",
      ", sensitive_values: [d0]}\nscore: ", kScores[next(4)], "\npartitioning: vertical\n");
  return s;
}

class VerticalRandom : public ::testing::TestWithParam<int> {};

TEST_P(VerticalRandom, EqualsCentralizedOnTheJoinedTable) {
  const VScenario s = RandomScenario(GetParam());
  SCOPED_TRACE(s.spec_yaml);
  ExpectSameAsCentralized(s, absl::StrCat("vert_rand_", GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Seeds, VerticalRandom, ::testing::Range(1, 21));

TEST(VerticalFederation, RepliesCarryNoIdsAndNoUnreleasedRawValues) {
  VScenario s = ExampleB();
  s.extra_ids = 3;
  std::set<std::string> common;
  const VOutcome fed = RunVertical(s, "vert_leak", &common);
  ASSERT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();
  ASSERT_FALSE(fed.replies.empty());
  // Values that the released table does not show (it is generalized) must appear nowhere.
  std::set<std::string> released;
  for (const auto& row : fed.result.rows) released.insert(row.begin(), row.end());
  std::set<std::string> secrets;
  for (const auto& row : s.joined.rows) {
    secrets.insert(row[0]);  // every id
    for (size_t c = 2; c < row.size(); ++c) {
      if (!released.count(row[c])) secrets.insert(row[c]);
    }
  }
  secrets.insert("only-0-0");
  ASSERT_GT(secrets.size(), 34u);
  for (const auto& bytes : fed.replies) {
    for (const auto& secret : secrets) {
      if (secret.size() < 3) continue;  // "30", "Y": too short to be meaningful in binary data
      ASSERT_EQ(bytes.find(secret), std::string::npos) << "a reply carries '" << secret << "'";
    }
  }
}

// What a party receives from the others, after opening it: the ID lists (points), the
// instructions (child indexes) — never another party's raw values that the release does not show,
// and never an id. Checked on the plaintexts each party opened, per receiver.
TEST(VerticalFederation, PartiesOpenNoOtherPartysRawValuesOrIds) {
  VScenario s = ExampleB();
  s.extra_ids = 3;
  std::set<std::string> common;
  const VOutcome fed = RunVertical(s, "vert_leak_opened", &common);
  ASSERT_EQ(fed.info.state(), fedanon::v1::JOB_STATE_DONE) << fed.info.failure_reason();
  std::set<std::string> released;
  for (const auto& row : fed.result.rows) released.insert(row.begin(), row.end());
  ASSERT_EQ(fed.opened.size(), s.columns.size()) << "every party opened something";
  size_t attribute_secrets = 0;  // unreleased values of another party's attributes, checked
  for (size_t receiver = 0; receiver < s.columns.size(); ++receiver) {
    const std::string name = std::string("hospital-") + static_cast<char>('a' + receiver);
    // Every id, and the unreleased values of the attributes the other parties hold.
    std::set<std::string> secrets;
    for (const auto& row : s.joined.rows) secrets.insert(row[0]);
    for (size_t owner = 0; owner < s.columns.size(); ++owner) {
      if (owner == receiver) continue;
      for (const auto& column : s.columns[owner]) {
        const size_t c = std::find(s.joined.header.begin(), s.joined.header.end(), column) -
                         s.joined.header.begin();
        for (const auto& row : s.joined.rows) {
          if (!released.count(row[c]) && row[c].size() >= 3) secrets.insert(row[c]);
        }
      }
    }
    ASSERT_GE(secrets.size(), common.size()) << name;
    attribute_secrets += secrets.size() - s.joined.rows.size();
    const auto it = fed.opened.find(name);
    ASSERT_NE(it, fed.opened.end()) << name;
    ASSERT_GE(it->second.size(), 2u) << name << ": ID lists and at least one instruction";
    for (const auto& plain : it->second) {
      for (const auto& secret : secrets) {
        ASSERT_EQ(plain.find(secret), std::string::npos) << name << " received '" << secret << "'";
      }
    }
  }
  EXPECT_GT(attribute_secrets, 0u) << "no unreleased attribute value to look for: vacuous";
}

TEST(VerticalFederation, AnAttributeWithoutPartyIsRefused) {
  VScenario s = ExampleB();
  s.spec_yaml.replace(s.spec_yaml.find(", party: hospital-a"), 19, "");
  std::set<std::string> common;
  auto fed = InProcessFederation::Create("vert_noparty", PartyFiles(s, &common));
  ASSERT_TRUE(fed.ok()) << fed.status();
  ASSERT_OK_AND_ASSIGN(auto spec, common::ParseJobSpecYaml(s.spec_yaml, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& p : (*fed)->names) req.add_parties(p);
  auto info = (*fed)->Submit(req);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(std::string(info.status().message()).find("'Sex' needs `party:`"), std::string::npos)
      << info.status();
}

}  // namespace
}  // namespace fedanon::testing
