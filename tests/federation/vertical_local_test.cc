// Vertical federated local recoding (`recoding: local`, docs/vertical.md "Local recoding"): the
// in-process federation (the classes the daemons run) releases exactly the table the centralized
// `fedanon anonymize` with `recoding: local` releases on the joined table, on random seeded tables
// for every score and 2 and 3 parties; the release passes the independent local-recoding checker
// (CheckLocalPrivacy); with confidence bounds the judges veto per group and the release is still
// the centralized one; the leader's view log holds every per-group proposal; the one combination
// vertical local recoding cannot score is refused at submission.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/spec/job_spec_loader.h"
#include "party/testing/deviating_party.h"
#include "tests/checker/brute_force_checker.h"
#include "tests/federation/adult_vertical_util.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

constexpr const char* kScores[] = {"infogain", "gainratio", "infogain_privloss", "discernibility"};

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL) {}
  int operator()(int n) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<int>(state_ % static_cast<uint64_t>(n));
  }

 private:
  uint64_t state_;
};

struct Scenario {
  std::string spec_yaml;
  std::map<std::string, std::string> taxonomies;
  Table joined;                                   // id, cls, tag, q...
  std::vector<std::vector<std::string>> columns;  // per party: its attribute columns
};

std::string PartyName(int p) { return absl::StrCat("hospital-", std::string(1, 'a' + p)); }

// A random table: 3-5 QID attributes (taxonomies of depth 3 and suppression attributes; with
// `continuous` q0 is continuous), a class following two of them, and `tag` (role other, at the
// first party: a unique value per record, so the shuffled release can be matched to its raw
// rows for the checker). The model is k-anonymity templates or LKC without sensitive values; with
// `bound` 1 LKC with a sensitive attribute `s` at the last party and C < 1, with `bound` 2
// k-anonymity templates and a confidence template on s. Then d0 follows q0 (at the first party),
// so that splits the first party proposes break the bound and the judge vetoes them.
Scenario MakeScenario(uint64_t seed, int parties, int score, bool continuous, int bound = 0) {
  Rng next(seed * 7919 + static_cast<uint64_t>(parties) * 31 + static_cast<uint64_t>(score));
  Scenario s;
  s.columns.assign(parties, {});
  const int nq = 3 + next(3);
  std::vector<int> kinds;  // 0 taxonomy, 1 suppression, 2 continuous
  std::string attrs =
      "  - {name: id, role: id}\n  - {name: cls, role: class, values: [yes, no]}\n"
      "  - {name: tag, role: other, party: hospital-a}\n";
  s.joined.header = {"id", "cls", "tag"};
  s.columns[0].push_back("tag");
  for (int q = 0; q < nq; ++q) {
    const std::string name = absl::StrCat("q", q);
    const int owner = q < parties ? q : next(parties);
    s.columns[owner].push_back(name);
    s.joined.header.push_back(name);
    const int kind = q == 0 && continuous ? 2 : q == 1 ? 0 : next(2);
    kinds.push_back(kind);
    if (kind == 0) {
      std::string tax;
      for (int v = 0; v < 8; ++v) {
        absl::StrAppend(&tax, name, "v", v, ";", name, "m", v / 2, ";", name, "g", v / 4, ";ANY\n");
      }
      s.taxonomies[name + ".csv"] = tax;
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, taxonomy: ", name,
                      ".csv, party: ", PartyName(owner), "}\n");
    } else if (kind == 1) {
      absl::StrAppend(&attrs, "  - {name: ", name, ", role: qid, values: [", name, "s0, ", name,
                      "s1, ", name, "s2], party: ", PartyName(owner), "}\n");
    } else {
      absl::StrAppend(&attrs, "  - {name: ", name,
                      ", role: qid, type: continuous, range: [0, 60], precision: 1, party: ",
                      PartyName(owner), "}\n");
    }
  }
  if (bound > 0) {
    absl::StrAppend(&attrs, "  - {name: s, role: sensitive, values: [d0, d1, d2], party: ",
                    PartyName(parties - 1), "}\n");
    s.joined.header.push_back("s");
    s.columns[parties - 1].push_back("s");
  }
  const int rows = 150 + next(250);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::string> row = {absl::StrCat("p", seed, "-", r), "", absl::StrCat("t", r)};
    std::vector<int> value(nq);
    for (int q = 0; q < nq; ++q) {
      const std::string name = absl::StrCat("q", q);
      if (kinds[q] == 0) {
        value[q] = next(8);
        row.push_back(absl::StrCat(name, "v", value[q]));
      } else if (kinds[q] == 1) {
        value[q] = next(10) < 8 ? next(2) : 2;
        row.push_back(absl::StrCat(name, "s", value[q]));
      } else {
        value[q] = next(60);
        row.push_back(absl::StrCat(value[q]));
      }
    }
    const bool yes =
        next(10) < 8 ? (value[0] > (kinds[0] == 2 ? 30 : 3)) != (value[1] % 2 == 1) : next(2) == 0;
    row[1] = yes ? "yes" : "no";
    if (bound > 0) {
      // About 40% of the records (q0 low) carry d0 at 70%, the rest at 15%: about 0.37 overall.
      const bool low = value[0] < (kinds[0] == 2 ? 24 : kinds[0] == 0 ? 3 : 1);
      row.push_back(next(100) < (low ? 70 : 15) ? "d0" : absl::StrCat("d", 1 + next(2)));
    }
    s.joined.rows.push_back(std::move(row));
  }
  std::string privacy;
  if (bound == 1) {
    privacy = absl::StrCat("privacy: {model: lkc, L: ", 1 + next(2), ", K: ", 3 + next(8),
                           ", C: 0.", 45 + next(20), ", sensitive_values: [d0]}\n");
  } else if (bound == 2) {
    privacy = absl::StrCat(
        "privacy:\n  model: templates\n  templates:\n    - {qid: [q0, q1], k: ", 3 + next(8),
        "}\n  confidence:\n    - {qid: [q0, q1], sensitive_values: [d0], max: 0.", 45 + next(20),
        "}\n");
  } else if (next(2) == 0) {
    privacy = absl::StrCat("privacy:\n  model: templates\n  templates:\n    - {qid: [q0, q1], k: ",
                           3 + next(8), "}\n    - {qid: [q1, q2], k: ", 2 + next(12), "}\n");
  } else {
    privacy = absl::StrCat("privacy: {model: lkc, L: ", 1 + next(2), ", K: ", 3 + next(10), "}\n");
  }
  s.spec_yaml =
      absl::StrCat("name: vertical-local\nattributes:\n", attrs, privacy, "score: ", kScores[score],
                   "\npartitioning: vertical\nrecoding: local\n");
  return s;
}

std::vector<std::map<std::string, std::string>> PartyFiles(const Scenario& s, uint64_t seed) {
  Rng next(seed + 99);
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& cols : s.columns) {
    Table part;
    part.header = {"id", "cls"};
    std::vector<size_t> idx = {0, 1};
    for (const auto& c : cols) {
      part.header.push_back(c);
      idx.push_back(std::find(s.joined.header.begin(), s.joined.header.end(), c) -
                    s.joined.header.begin());
    }
    for (const auto& row : s.joined.rows) {
      std::vector<std::string> out;
      for (size_t i : idx) out.push_back(row[i]);
      part.rows.push_back(std::move(out));
    }
    for (size_t i = part.rows.size(); i > 1; --i) {
      std::swap(part.rows[i - 1], part.rows[next(static_cast<int>(i))]);
    }
    std::map<std::string, std::string> f = s.taxonomies;
    f["table.csv"] = ToCsv(part);
    files.push_back(std::move(f));
  }
  return files;
}

fedanon::v1::SubmitJobRequest Request(const std::string& spec_yaml,
                                      const std::map<std::string, std::string>& taxonomies,
                                      const InProcessFederation& fed) {
  fedanon::v1::SubmitJobRequest req;
  auto spec = spec::ParseJobSpecYaml(spec_yaml, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return req;
  *req.mutable_spec() = *spec;
  for (const auto& p : fed.names) req.add_parties(p);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) {
      (*req.mutable_taxonomies())[a.name()] = taxonomies.at(a.taxonomy());
    }
  }
  return req;
}

struct Outcome {
  bool same_rows = false;
  std::string view_log;
  uint64_t proposals_sent = 0;  // per-group proposals in the parties' replies
  uint64_t vetoes_sent = 0;     // per-group vetoes in the judges' replies
  uint64_t groups = 0;
};

// Runs `s` federated and centralized; checks the federated release with the local-recoding
// checker (matched to the raw rows by `tag`) and compares it with the centralized one.
void RunBoth(const Scenario& s, const std::string& name, uint64_t seed, Outcome* out) {
  SCOPED_TRACE(absl::StrCat(name, "\n", s.spec_yaml));
  auto fed = InProcessFederation::Create(name, PartyFiles(s, seed));
  ASSERT_TRUE(fed.ok()) << fed.status();
  auto mu = std::make_shared<absl::Mutex>();
  uint64_t* sent = &out->proposals_sent;
  uint64_t* vetoes = &out->vetoes_sent;
  // A party's list travels in pages (in order; one under the default limit).
  auto lists = std::make_shared<std::map<std::string, std::string>>();
  (*fed)->channel.set_observer(
      [sent, vetoes, mu, lists](const std::string& party, const std::string& bytes) {
        fedanon::v1::PartyMessage m;
        if (!m.ParseFromString(bytes) || !m.has_vertical()) return;
        absl::MutexLock lock(mu.get());
        if (m.vertical().has_local_proposals()) {
          const auto& page = m.vertical().local_proposals();
          std::string& list = (*lists)[party];
          if (page.page() == 0) list.clear();
          list += page.page_bytes();
          fedanon::v1::LocalProposals whole;
          if (page.page() + 1 == page.pages() && whole.ParseFromString(list)) {
            *sent += static_cast<uint64_t>(whole.proposals_size());
          }
        }
        if (m.vertical().has_local_verdicts()) {
          // A judge's verdicts travel in pages too (in order).
          const auto& page = m.vertical().local_verdicts();
          std::string& list = (*lists)["verdicts:" + party];
          if (page.page() == 0) list.clear();
          list += page.page_bytes();
          fedanon::v1::LocalVerdicts whole;
          if (page.page() + 1 == page.pages() && whole.ParseFromString(list)) {
            for (const auto& v : whole.verdicts()) *vetoes += v.accept() ? 0 : 1;
          }
        }
      });
  ASSERT_OK_AND_ASSIGN(auto submitted, (*fed)->Submit(Request(s.spec_yaml, s.taxonomies, **fed)));
  const fedanon::v1::JobInfo info = (*fed)->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_OK_AND_ASSIGN(std::string csv, (*fed)->leader->Result(submitted.job_id()));
  ASSERT_OK_AND_ASSIGN(Table released, ParseCsvText(csv, (*fed)->dir));
  ASSERT_OK_AND_ASSIGN(out->view_log, (*fed)->leader->ViewLogText(submitted.job_id()));
  EXPECT_EQ(info.report().recoding(), fedanon::v1::RECODING_LOCAL);
  out->groups = info.report().groups();

  const Job job = WriteJob(name + "_central", s.spec_yaml, s.joined, s.taxonomies);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));
  ASSERT_EQ(released.rows.size(), s.joined.rows.size());

  // The independent checker on the federated release, rows put back in raw order by `tag`.
  const auto tag_at =
      std::find(released.header.begin(), released.header.end(), "tag") - released.header.begin();
  ASSERT_LT(static_cast<size_t>(tag_at), released.header.size());
  std::map<std::string, std::vector<std::string>> by_tag;
  for (const auto& r : released.rows) by_tag[r[tag_at]] = r;
  Table ordered;
  ordered.header = released.header;
  for (const auto& r : s.joined.rows) ordered.rows.push_back(by_tag.at(r[2]));
  Job fed_job = job;
  fed_job.output_path = job.dir + "/federated.csv";
  WriteText(fed_job.output_path, ToCsv(ordered));
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(fed_job));
  EXPECT_OK(CheckTruthful(in));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;

  out->same_rows =
      RowsByColumns(released, central_out.header) == RowsByColumns(central_out, central_out.header);
  if (out->same_rows) {
    EXPECT_EQ(info.report().groups(), central.groups());
    EXPECT_EQ(info.report().smallest_group(), central.smallest_group());
    EXPECT_DOUBLE_EQ(info.report().discernibility_ratio(), central.discernibility_ratio());
    EXPECT_DOUBLE_EQ(info.report().largest_confidence(), central.largest_confidence());
    // The steps in the centralized order (wave, score, group), numbered alike.
    ASSERT_EQ(info.report().steps_size(), central.steps_size());
    for (int i = 0; i < central.steps_size(); ++i) {
      const auto& f = info.report().steps(i);
      const auto& c = central.steps(i);
      EXPECT_EQ(f.round(), c.round()) << i;
      EXPECT_EQ(f.attribute(), c.attribute()) << i;
      EXPECT_EQ(f.value(), c.value()) << i;
      EXPECT_EQ(f.records(), c.records()) << i;
      EXPECT_DOUBLE_EQ(f.score(), c.score()) << i;
      EXPECT_DOUBLE_EQ(f.info_gain(), c.info_gain()) << i;
      EXPECT_EQ(std::vector<std::string>(f.children().begin(), f.children().end()),
                std::vector<std::string>(c.children().begin(), c.children().end()))
          << i;
    }
  }
}

struct Case {
  int score;
  int parties;
};

class VerticalLocal : public ::testing::TestWithParam<Case> {};

// Categorical QIDs (taxonomies and suppression): federated == centralized, byte for byte after
// the canonical row order, on 3 seeded tables per score and party count.
TEST_P(VerticalLocal, ReleasesTheCentralizedLocalTable) {
  const Case c = GetParam();
  uint64_t groups = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const Scenario s = MakeScenario(seed, c.parties, c.score, /*continuous=*/false);
    Outcome out;
    RunBoth(s, absl::StrCat("vlocal_", c.score, "_", c.parties, "_", seed), seed, &out);
    EXPECT_TRUE(out.same_rows) << "federated local recoding differs from the centralized run";
    groups += out.groups;
  }
  EXPECT_GT(groups, 3u) << "no scenario split its table: the comparison is vacuous";
}

INSTANTIATE_TEST_SUITE_P(ScoresAndParties, VerticalLocal,
                         ::testing::Values(Case{0, 2}, Case{1, 2}, Case{2, 2}, Case{3, 2},
                                           Case{0, 3}, Case{3, 3}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return absl::StrCat(kScores[info.param.score], "_", info.param.parties,
                                               "parties");
                         });

// A continuous QID: the vertical search uses the per-group numeric rule (thresholds among
// within-group bins of >= K records merged from the global bins), as the centralized
// LocalRecoder does, so the releases are equal.
TEST(VerticalLocalContinuous, ReleasesTheCentralizedLocalTable) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const Scenario s = MakeScenario(seed, 2, 0, /*continuous=*/true);
    Outcome out;
    RunBoth(s, absl::StrCat("vlocal_cont_", seed), seed, &out);
    EXPECT_TRUE(out.same_rows);
  }
}

// Every per-group proposal a party sends is in the leader's view log (kind vertical_score, the
// group named), and so is every party's decline.
TEST(VerticalLocalViewLog, RecordsEveryPerGroupProposal) {
  const Scenario s = MakeScenario(5, 2, 0, /*continuous=*/false);
  Outcome out;
  RunBoth(s, "vlocal_view", 5, &out);
  uint64_t logged = 0, declines = 0;
  for (absl::string_view line : absl::StrSplit(out.view_log, '\n')) {
    if (line.find("\"vertical_score\"") != std::string::npos) {
      EXPECT_NE(line.find("\"group "), std::string::npos) << line;
      ++logged;
    }
    declines += line.find("\"vertical_decline\"") != std::string::npos;
  }
  EXPECT_GT(out.proposals_sent, 0u);
  EXPECT_EQ(logged, out.proposals_sent);
  EXPECT_GE(declines, 1u);  // the last wave: nobody has a candidate left
}

// Confidence bounds (LKC with C < 1, a confidence template): the holder of the sensitive values
// judges every wave's winning splits per group; a vetoed split is retried with the proposer's next
// best on another attribute (one veto per group and attribute). The release holds the model (the
// independent checker) for every score, 2 and 3 parties, several seeds; where no judge vetoed, the
// release, the report's steps (numbered by logical wave), info_gain and the largest confidence
// equal the centralized run's; and vetoes happen.
struct BoundCase {
  int score;
  int parties;
  int bound;  // 1 LKC, 2 confidence template
};

class VerticalLocalBounded : public ::testing::TestWithParam<BoundCase> {};

TEST_P(VerticalLocalBounded, JudgesVetoOncePerGroupAndAttributeAndTheReleaseHoldsTheModel) {
  const BoundCase c = GetParam();
  uint64_t groups = 0, vetoes = 0, differing = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Scenario s = MakeScenario(seed, c.parties, c.score, seed == 4, c.bound);
    Outcome out;
    RunBoth(s, absl::StrCat("vlocal_bound_", c.score, "_", c.parties, "_", c.bound, "_", seed),
            seed, &out);
    // A veto excludes its attribute for that group (one veto per group and attribute: issue 49,
    // finding 6), where the centralized recoder may still choose another candidate of it; the
    // release then holds the model (RunBoth's checker) but may be less specialized.
    if (out.vetoes_sent == 0) {
      EXPECT_TRUE(out.same_rows) << "federated local recoding differs from the centralized run";
    }
    differing += out.same_rows ? 0 : 1;
    groups += out.groups;
    vetoes += out.vetoes_sent;
  }
  EXPECT_GT(groups, 4u) << "no scenario split its table: the comparison is vacuous";
  EXPECT_GT(vetoes, 0u) << "no judge vetoed anything: the veto path is untested";
  std::printf(
      "%s, %d parties, %s: %llu final groups, %llu vetoes, %llu of 4 seeds differ from "
      "the centralized release\n",
      kScores[c.score], c.parties, c.bound == 1 ? "LKC" : "confidence template",
      static_cast<unsigned long long>(groups), static_cast<unsigned long long>(vetoes),
      static_cast<unsigned long long>(differing));
}

INSTANTIATE_TEST_SUITE_P(ScoresPartiesBounds, VerticalLocalBounded,
                         ::testing::Values(BoundCase{0, 2, 1}, BoundCase{1, 2, 2},
                                           BoundCase{2, 2, 1}, BoundCase{3, 2, 2},
                                           BoundCase{0, 3, 1}, BoundCase{1, 3, 2},
                                           BoundCase{2, 3, 2}, BoundCase{3, 3, 1}),
                         [](const ::testing::TestParamInfo<BoundCase>& info) {
                           return absl::StrCat(
                               kScores[info.param.score], "_", info.param.parties, "parties_",
                               info.param.bound == 1 ? "lkc" : "confidence_template");
                         });

// What the federation refuses, at the leader's submission check (every party's Prepare runs the
// same CheckFederatedRecoding): infogain_privloss without an anonymity threshold when a bounded
// sensitive attribute is at another party than a QID attribute (PrivLoss is then the rise of the
// confidence, which a proposer cannot compute without the sensitive values).
TEST(VerticalLocalRefusals, PrivLossWithoutAnonymityIsRefusedByName) {
  const Scenario s = MakeScenario(1, 2, 2, /*continuous=*/false, /*bound=*/2);
  auto fed = InProcessFederation::Create("vlocal_refuse", PartyFiles(s, 1));
  ASSERT_TRUE(fed.ok()) << fed.status();
  // Only a confidence template (no k > 1), on q1 (at the holder of s): the global rounds could
  // score it, local recoding splits on q0 (at hospital-a) too.
  std::string bounded = absl::StrCat(
      s.spec_yaml.substr(0, s.spec_yaml.find("privacy:")),
      "privacy:\n  model: templates\n  confidence:\n    - {qid: [q1], sensitive_values: [d0], "
      "max: 0.6}\nscore: infogain_privloss\npartitioning: vertical\nrecoding: local\n");
  auto spec = spec::ParseJobSpecYaml(bounded, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status() << "\n" << bounded;
  EXPECT_OK(engine::CheckVerticalScoreComputable(*spec));
  EXPECT_THAT(spec::CheckFederatedRecoding(*spec),
              StatusIs(absl::StatusCode::kInvalidArgument, spec::kLocalPrivLossNeedsSensitive));
  auto refused = (*fed)->Submit(Request(bounded, s.taxonomies, **fed));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message()).find(spec::kLocalPrivLossNeedsSensitive),
            std::string::npos)
      << refused.status();
  // Another score, or an anonymity threshold: accepted.
  std::string other = bounded;
  other.replace(other.find("infogain_privloss"), 17, "infogain");
  ASSERT_OK_AND_ASSIGN(*spec, spec::ParseJobSpecYaml(other, "job.yaml"));
  EXPECT_OK(spec::CheckFederatedRecoding(*spec));
  std::string with_k = bounded;
  with_k.replace(with_k.find("  confidence:"), 0, "  templates:\n    - {qid: [q0], k: 3}\n");
  ASSERT_OK_AND_ASSIGN(*spec, spec::ParseJobSpecYaml(with_k, "job.yaml"));
  EXPECT_OK(spec::CheckFederatedRecoding(*spec));
  // Judges: the holder of s, only with a bound below 1.
  EXPECT_EQ(spec::VerticalLocalJudges(*spec), std::vector<std::string>{"hospital-b"});
  with_k.replace(with_k.find("max: 0.6"), 8, "max: 1");
  ASSERT_OK_AND_ASSIGN(*spec, spec::ParseJobSpecYaml(with_k, "job.yaml"));
  EXPECT_TRUE(spec::VerticalLocalJudges(*spec).empty());
}

// A deviating data party (issue: a deviating data party, finding 5) in local recoding:
// hospital-b's per-group proposals claim the score 1e300, so it would win every group it proposes
// for. Every other replica recomputes each won split's score (information gain) from its children
// and the class, and refuses the wave: the job fails by name and nothing is released.
TEST(VerticalLocalRefusals, AnOverstatedGroupScoreIsRefusedByTheOtherReplicas) {
  const Scenario s = MakeScenario(1, 2, 0, /*continuous=*/false);
  auto fed = InProcessFederation::Create(
      "vlocal_overstate", PartyFiles(s, 1), [](party::PartyAgentOptions& o) {
        if (o.name == "hospital-b") o.deviation = party_testing::DeviatingParty("overstate-score");
      });
  ASSERT_TRUE(fed.ok()) << fed.status();
  ASSERT_OK_AND_ASSIGN(auto submitted, (*fed)->Submit(Request(s.spec_yaml, s.taxonomies, **fed)));
  const fedanon::v1::JobInfo info = (*fed)->Wait(submitted.job_id());
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr(engine::kScoreOverstated))
      << info.failure_reason();
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("was declared at 1e+300"));
  EXPECT_FALSE((*fed)->leader->Result(submitted.job_id()).ok());
}

// UCI Adult (every 3rd record) split over 2 parties, the task without age (its 7
// categorical QIDs: workclass, education, marital-status, occupation, race, sex, native-country;
// the other columns released as they are), k = 50, gain ratio: federated == centralized local.
TEST(VerticalLocalAdult, SevenCategoricalQidsK50EqualCentralized) {
  if (!std::filesystem::exists(AdultCsv())) {
    GTEST_SKIP() << "UCI Adult not found at " << AdultCsv() << " (../shared/datasets/adult)";
  }
  const std::vector<std::vector<std::string>> columns = {
      {"age", "workclass", "education", "education-num", "marital-status", "occupation",
       "capital-gain"},
      {"relationship", "race", "sex", "capital-loss", "hours-per-week", "native-country"}};
  const std::vector<std::string> qid = {"workclass", "education", "marital-status", "occupation",
                                        "race",      "sex",       "native-country"};
  const std::map<std::string, std::string> taxonomies = AdultTaxonomies();
  ASSERT_OK_AND_ASSIGN(Table table, AdultWithIds(3));
  const std::string spec_yaml =
      AdultVerticalSpec(columns, qid, 50, "recoding: local\n", /*others_raw=*/true);
  const Job job = WriteJob("adult_vlocal_central", spec_yaml, table, taxonomies);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));

  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create(
                                     "adult_vlocal", AdultPartyFiles(table, columns, taxonomies)));
  ASSERT_OK_AND_ASSIGN(auto submitted, fed->Submit(Request(spec_yaml, taxonomies, *fed)));
  const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_OK_AND_ASSIGN(std::string csv, fed->leader->Result(submitted.job_id()));
  ASSERT_OK_AND_ASSIGN(Table released, ParseCsvText(csv, fed->dir));
  EXPECT_EQ(info.report().groups(), central.groups());
  EXPECT_GE(info.report().smallest_group(), 50u);
  EXPECT_GT(central.groups(), 20u);
  EXPECT_EQ(RowsByColumns(released, central_out.header),
            RowsByColumns(central_out, central_out.header));
  std::printf(
      "Adult/3 vertical local, 7 categorical QIDs, k=50: %llu groups, %u splits (report), DR "
      "%.4f\n",
      static_cast<unsigned long long>(info.report().groups()),
      static_cast<unsigned>(info.report().steps_size()), info.report().discernibility_ratio());
}

// The same Adult task with a confidence bound: relationship (at hospital-b) is sensitive, and no
// value of the QIDs may infer Husband with confidence above 0.6 — marital-status and sex, which
// predict it, are at hospital-a and hospital-b, so hospital-b judges hospital-a's splits and vetoes
// many. Federated == centralized local (rows, steps, largest confidence), checked by
// CheckLocalPrivacy.
TEST(VerticalLocalAdult, SevenCategoricalQidsK50WithAConfidenceBoundEqualCentralized) {
  if (!std::filesystem::exists(AdultCsv())) {
    GTEST_SKIP() << "UCI Adult not found at " << AdultCsv() << " (../shared/datasets/adult)";
  }
  const std::vector<std::vector<std::string>> columns = {
      {"age", "workclass", "education", "education-num", "marital-status", "occupation",
       "capital-gain"},
      {"relationship", "race", "sex", "capital-loss", "hours-per-week", "native-country"}};
  const std::vector<std::string> qid = {"workclass", "education", "marital-status", "occupation",
                                        "race",      "sex",       "native-country"};
  const std::map<std::string, std::string> taxonomies = AdultTaxonomies();
  ASSERT_OK_AND_ASSIGN(Table table, AdultWithIds(3));
  std::string spec_yaml =
      AdultVerticalSpec(columns, qid, 50, "recoding: local\n", /*others_raw=*/true);
  const std::string other = "{name: relationship, role: other, party: hospital-b}";
  ASSERT_NE(spec_yaml.find(other), std::string::npos) << spec_yaml;
  spec_yaml.replace(spec_yaml.find(other), other.size(),
                    "{name: relationship, role: sensitive, values: [Husband, Not-in-family, "
                    "Own-child, Unmarried, Wife, Other-relative], party: hospital-b}");
  spec_yaml.replace(spec_yaml.find("score:"), 0,
                    "  confidence:\n    - {qid: [marital-status, sex], sensitive_values: "
                    "[Husband], max: 0.6}\n");
  const Job job = WriteJob("adult_vlocal_conf_central", spec_yaml, table, taxonomies);
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));
  ASSERT_OK_AND_ASSIGN(CheckerInput in, MakeCheckerInput(job));
  const PrivacyCheck check = CheckLocalPrivacy(in);
  EXPECT_TRUE(check.satisfied) << check.violation;

  ASSERT_OK_AND_ASSIGN(auto fed,
                       InProcessFederation::Create("adult_vlocal_conf",
                                                   AdultPartyFiles(table, columns, taxonomies)));
  auto mu = std::make_shared<absl::Mutex>();
  auto vetoes = std::make_shared<uint64_t>(0);
  auto lists = std::make_shared<std::map<std::string, std::string>>();
  fed->channel.set_observer(
      [vetoes, mu, lists](const std::string& party, const std::string& bytes) {
        fedanon::v1::PartyMessage m;
        if (!m.ParseFromString(bytes) || !m.has_vertical() || !m.vertical().has_local_verdicts()) {
          return;
        }
        absl::MutexLock lock(mu.get());
        // A judge's verdicts travel in pages (in order).
        const auto& page = m.vertical().local_verdicts();
        std::string& list = (*lists)[party];
        if (page.page() == 0) list.clear();
        list += page.page_bytes();
        fedanon::v1::LocalVerdicts whole;
        if (page.page() + 1 == page.pages() && whole.ParseFromString(list)) {
          for (const auto& v : whole.verdicts()) *vetoes += v.accept() ? 0 : 1;
        }
      });
  ASSERT_OK_AND_ASSIGN(auto submitted, fed->Submit(Request(spec_yaml, taxonomies, *fed)));
  const fedanon::v1::JobInfo info = fed->Wait(submitted.job_id());
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  ASSERT_OK_AND_ASSIGN(std::string csv, fed->leader->Result(submitted.job_id()));
  ASSERT_OK_AND_ASSIGN(Table released, ParseCsvText(csv, fed->dir));
  EXPECT_EQ(info.report().groups(), central.groups());
  EXPECT_DOUBLE_EQ(info.report().largest_confidence(), central.largest_confidence());
  EXPECT_LE(central.largest_confidence(), 0.6 + 1e-9);
  EXPECT_GT(central.groups(), 5u);
  ASSERT_EQ(info.report().steps_size(), central.steps_size());
  // Progress: the job's round is its last committed wave (0 before the first), so an operator
  // sees the waves go by; every wave split a group or had a split vetoed.
  EXPECT_GE(info.round(), 1u);
  {
    absl::MutexLock lock(mu.get());
    EXPECT_LE(info.round(), static_cast<uint64_t>(central.steps_size()) + *vetoes);
  }
  for (int i = 0; i < central.steps_size(); ++i) {
    EXPECT_EQ(info.report().steps(i).round(), central.steps(i).round()) << i;
    EXPECT_EQ(info.report().steps(i).value(), central.steps(i).value()) << i;
    EXPECT_EQ(info.report().steps(i).records(), central.steps(i).records()) << i;
    EXPECT_DOUBLE_EQ(info.report().steps(i).info_gain(), central.steps(i).info_gain()) << i;
  }
  EXPECT_EQ(RowsByColumns(released, central_out.header),
            RowsByColumns(central_out, central_out.header));
  EXPECT_GT(*vetoes, 0u);
  std::printf(
      "Adult/3 vertical local, 7 categorical QIDs, k=50, conf(Husband | marital-status, sex) <= "
      "0.6: %llu groups, %u splits, %llu vetoes, largest confidence %.4f, DR %.4f\n",
      static_cast<unsigned long long>(info.report().groups()),
      static_cast<unsigned>(info.report().steps_size()), static_cast<unsigned long long>(*vetoes),
      info.report().largest_confidence(), info.report().discernibility_ratio());
}

}  // namespace
}  // namespace fedanon::testing
