// The game-theoretic participation strategy of mohammed2011 §6 (Algorithm 2, Theorem 1) in
// vertical jobs: with a party that never participates, the honest parties stop contributing
// within n - 1 rounds and the defector's attributes stay fully generalized; with parties of equal
// capability the strategy changes nothing; with unequal capability (§7.2) the strong party stops
// because the weak one cannot keep up. The report says who contributed what and why rounds were
// declined.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/datagen.h"
#include "common/job_spec_loader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string PartyName(size_t i) {
  return std::string("hospital-") + static_cast<char>('a' + i);
}

struct Run {
  fedanon::v1::JobInfo info;
  Table result;
};

// Runs a vertical job over in-process parties; `misbehave[i]` is party i's misbehaviour mode.
Run RunJob(const std::string& name, const std::string& spec_yaml,
           const std::vector<std::map<std::string, std::string>>& files,
           const std::vector<std::string>& misbehave) {
  Run out;
  auto fed = InProcessFederation::Create(name, files);
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  // Misbehaving agents replace the honest ones (same names, keys and data).
  for (size_t i = 0; i < misbehave.size(); ++i) {
    if (misbehave[i].empty()) continue;
    (*fed)->channel.Disconnect(PartyName(i));
  }
  std::vector<std::unique_ptr<party::PartyAgent>> bad;
  for (size_t i = 0; i < misbehave.size(); ++i) {
    if (misbehave[i].empty()) continue;
    auto seal = (*fed)->ca->IssueSeal({crypto::Role::kParty, PartyName(i)}, absl::Hours(1));
    EXPECT_TRUE(seal.ok());
    party::PartyAgentOptions o;
    o.name = PartyName(i);
    o.data_dir = (*fed)->dir + "/" + PartyName(i);
    o.default_data_path = "table.csv";
    o.output_dir = o.data_dir + "/output";
    o.ca_pem = (*fed)->ca->cert_pem();
    o.seal_cert_pem = seal->cert_pem;
    o.seal_key_pem = seal->key_pem;
    o.misbehave = misbehave[i];
    auto agent = party::PartyAgent::Create(o);
    EXPECT_TRUE(agent.ok()) << agent.status();
    (*fed)->channel.Add(agent->get());
    bad.push_back(std::move(*agent));
  }
  auto spec = common::ParseJobSpecYaml(spec_yaml, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& n : (*fed)->names) req.add_parties(n);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) {
      (*req.mutable_taxonomies())[a.name()] = files[0].at(a.taxonomy());
    }
  }
  auto info = (*fed)->leader->Submit(req, "admin");
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  out.info = (*fed)->Wait(info->job_id());
  if (out.info.state() == fedanon::v1::JOB_STATE_DONE) {
    auto csv = (*fed)->leader->Result(info->job_id());
    EXPECT_TRUE(csv.ok());
    auto t = ParseCsvText(*csv, (*fed)->dir);
    EXPECT_TRUE(t.ok());
    if (t.ok()) out.result = *t;
  }
  return out;
}

// Generated Adult-like data split by columns over `parties` (gen-data's contiguous blocks).
struct Generated {
  std::string spec;
  std::vector<std::map<std::string, std::string>> files;
  std::vector<std::vector<std::string>> columns;  // per party (QID attributes)
};

Generated Generate(const std::string& name, int parties, const std::string& participation) {
  Generated g;
  const std::string dir = FreshDir(name + "_data");
  common::DatagenOptions o;
  o.rows = 3000;
  o.seed = 5;
  o.out_dir = dir;
  o.parties = parties;
  o.partition = common::DatagenOptions::Partition::kVertical;
  EXPECT_TRUE(common::GenerateDataset(o).ok());
  g.spec = Slurp(dir + "/vertical.yaml");
  for (int p = parties - 1; p >= 0; --p) {
    g.spec = std::regex_replace(g.spec, std::regex(absl::StrCat("party: party", p + 1, "\\b")),
                                absl::StrCat("party: ", PartyName(p)));
  }
  g.spec += participation;
  std::map<std::string, std::string> tax;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tax")) {
    tax["tax/" + e.path().filename().string()] = Slurp(e.path().string());
  }
  g.columns.resize(parties);
  const std::regex attr(R"(\{name: ([\w-]+), role: qid[^}]*party: (hospital-\w))");
  for (auto it = std::sregex_iterator(g.spec.begin(), g.spec.end(), attr);
       it != std::sregex_iterator(); ++it) {
    g.columns[(*it)[2].str().back() - 'a'].push_back((*it)[1].str());
  }
  for (int p = 0; p < parties; ++p) {
    auto f = tax;
    f["table.csv"] = Slurp(absl::StrCat(dir, "/party", p + 1, ".csv"));
    g.files.push_back(std::move(f));
  }
  return g;
}

const fedanon::v1::PartyParticipation* Find(const fedanon::v1::Report& r, const std::string& p) {
  for (const auto& x : r.participation()) {
    if (x.party() == p) return &x;
  }
  return nullptr;
}

// Theorem 1: a defector (never participates) gets at most n - 1 specializations from the others
// under the game-theoretic strategy with epsilon = 0, and none of its own attributes is refined.
class Defector : public ::testing::TestWithParam<int> {};

TEST_P(Defector, HonestPartiesStopWithinNMinusOneRounds) {
  const int n = GetParam();
  const std::string name = absl::StrCat("defector_", n);
  const Generated g = Generate(name, n, "participation: game_theoretic\nepsilon: 0\n");
  std::vector<std::string> misbehave(n);
  misbehave[n - 1] = "never-participate";
  const Run gt = RunJob(name, g.spec, g.files, misbehave);
  ASSERT_EQ(gt.info.state(), fedanon::v1::JOB_STATE_DONE) << gt.info.failure_reason();
  const auto& report = gt.info.report();
  ASSERT_EQ(report.participation_size(), n);
  uint32_t honest_won = 0;
  for (int p = 0; p + 1 < n; ++p) {
    const auto* x = Find(report, PartyName(p));
    ASSERT_NE(x, nullptr);
    honest_won += x->rounds_won();
    EXPECT_LE(x->rounds_won(), 1u) << PartyName(p);
    EXPECT_GT(x->declined_because().count("contributed more than " + PartyName(n - 1) +
                                          " by more than epsilon"),
              0u)
        << report.DebugString();
  }
  EXPECT_GE(honest_won, 1u);
  EXPECT_LE(honest_won, static_cast<uint32_t>(n - 1));
  EXPECT_EQ(report.steps_size(), static_cast<int>(honest_won));
  const auto* bad = Find(report, PartyName(n - 1));
  ASSERT_NE(bad, nullptr);
  EXPECT_TRUE(bad->misbehaving());
  EXPECT_EQ(bad->rounds_won(), 0u);
  EXPECT_EQ(bad->contribution(), 0.0);
  EXPECT_NE(report.stop_reason().find("every party sent Not-participate"), std::string::npos);
  // The defector's attributes are released fully generalized.
  for (const auto& col : g.columns[n - 1]) {
    const auto c = std::find(gt.result.header.begin(), gt.result.header.end(), col);
    ASSERT_NE(c, gt.result.header.end()) << col;
    std::set<std::string> values;
    for (const auto& row : gt.result.rows) values.insert(row[c - gt.result.header.begin()]);
    EXPECT_EQ(values.size(), 1u) << col;
  }

  // Under the honest strategy the defector would have gained many more specializations.
  std::string honest = g.spec;
  honest.replace(honest.find("participation: game_theoretic"),
                 std::strlen("participation: game_theoretic"), "participation: honest");
  const Run h = RunJob(name + "_honest", honest, g.files, misbehave);
  ASSERT_EQ(h.info.state(), fedanon::v1::JOB_STATE_DONE) << h.info.failure_reason();
  EXPECT_GT(h.info.report().steps_size(), n - 1);
}

INSTANTIATE_TEST_SUITE_P(Parties, Defector, ::testing::Values(2, 4));

TEST(Participation, UnderDeclaringIsReportedAndStillEndsTheJob) {
  const Generated g = Generate("underdeclare", 2, "participation: game_theoretic\nepsilon: 0.5\n");
  const Run r = RunJob("underdeclare", g.spec, g.files, {"", "under-declare"});
  ASSERT_EQ(r.info.state(), fedanon::v1::JOB_STATE_DONE) << r.info.failure_reason();
  const auto* bad = Find(r.info.report(), PartyName(1));
  ASSERT_NE(bad, nullptr);
  EXPECT_TRUE(bad->misbehaving());
}

TEST(Participation, EqualCapabilityGivesTheHonestTable) {
  // gen-data's two blocks are of comparable value for the class; a generous epsilon lets the
  // parties alternate as the honest sequence does.
  const Generated g = Generate("equal", 2, "participation: game_theoretic\nepsilon: 1\n");
  const Run gt = RunJob("equal_gt", g.spec, g.files, {"", ""});
  std::string honest = g.spec;
  honest.replace(honest.find("participation: game_theoretic"),
                 std::strlen("participation: game_theoretic"), "participation: honest");
  const Run h = RunJob("equal_h", honest, g.files, {"", ""});
  ASSERT_EQ(gt.info.state(), fedanon::v1::JOB_STATE_DONE) << gt.info.failure_reason();
  ASSERT_EQ(h.info.state(), fedanon::v1::JOB_STATE_DONE) << h.info.failure_reason();
  EXPECT_EQ(RowsByColumns(gt.result, h.result.header), RowsByColumns(h.result, h.result.header));
  EXPECT_EQ(gt.info.report().steps_size(), h.info.report().steps_size());
}

}  // namespace
}  // namespace fedanon::testing
