// What the leader of a horizontal federation learns during numeric split search (issue 27 §1), from
// a captured view: a PartyChannel wrapper between the leader and the parties records every
// secure-sum request, the leader's masks (the first hop's input) and the masked total the last
// party returns, and subtracts one from the other — exactly what the leader decodes. UCI Adult
// split over 3 parties, all 13 QIDs with fnlwgt (range [0, 1500000], precision 1), LKC L=4, K=20,
// C=0.2. With the default binned search: no per-value class histogram, record counts only per
// public cell (<= numeric_cells per attribute, once), class counts only per bin of >= K records
// (once), and every class count of a continuous interval's two sides is 0 or >= K. The run
// equals the centralized run on the union. The exact search, as a contrast (and a check that the
// capture sees a leak where there is one), hands the leader class histograms of single records.
// Both print what they measured ("[ measured ]").
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "crypto/sealed_box.h"
#include "tests/federation/federation_test_util.h"
#include "tests/federation/leader_capture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_paths.h"

namespace fedanon::testing {
namespace {

constexpr uint64_t kK = 20;
constexpr uint32_t kCells = 32;  // the default numeric_cells

std::string AdultDir() { return ::fedanon::testing::SharedDir() + "/datasets/adult"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr char kSpec[] = R"(name: adult-numeric-split
attributes:
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: workclass, role: qid, taxonomy: workclass.csv}
  - {name: fnlwgt, role: qid, type: continuous, range: [0, 1500000], precision: 1}
  - {name: education, role: qid, taxonomy: education.csv}
  - {name: education-num, role: qid, type: continuous, range: [0, 20], precision: 1}
  - {name: marital-status, role: sensitive, values: [Married-civ-spouse, Divorced, Never-married, Separated, Widowed, Married-spouse-absent, Married-AF-spouse]}
  - {name: occupation, role: qid, taxonomy: occupation.csv}
  - {name: relationship, role: qid, taxonomy: relationship.csv}
  - {name: race, role: qid, taxonomy: race.csv}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: capital-gain, role: qid, type: continuous, range: [0, 100000], precision: 1}
  - {name: capital-loss, role: qid, type: continuous, range: [0, 5000], precision: 1}
  - {name: hours-per-week, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: native-country, role: qid, taxonomy: native-country.csv}
  - {name: income, role: class, values: ["<=50K", ">50K"]}
privacy: {model: lkc, L: 4, K: 20, C: 0.2, sensitive_values: [Divorced, Separated]}
partitioning: horizontal
MODE
)";

// What the leader learnt during numeric split search, per the captured view.
struct NumericView {
  uint64_t labelled_cells = 0;  // class-count vectors with a non-zero total (per rank / per bin)
  uint64_t smallest_labelled =
      std::numeric_limits<uint64_t>::max();  // the smallest non-zero total among them
  uint64_t single_record_cells = 0;          // ... and how many describe exactly one record
  uint64_t per_rank_histograms = 0;
  std::map<uint32_t, int> unlabelled_requests, labelled_requests;  // per attribute
  std::map<uint32_t, std::vector<int32_t>> unlabelled_bounds;
  std::vector<std::string> violations;
};

// Walks the decoded sums with a replica of the public hierarchies (updated from the instructions
// and split decisions that rode along, as a party does) to find where each part of a vector lies.
NumericView Analyze(const std::vector<DecodedSum>& sums, const table::Dataset& schema) {
  NumericView view;
  std::vector<engine::AttributeHierarchy> hier;
  for (const auto& q : schema.qids) hier.emplace_back(&q);
  const size_t nc = std::max(1, schema.num_classes());
  const size_t tracked = schema.tracked.size();
  auto note_labelled = [&](uint64_t total) {
    if (total == 0) return;
    ++view.labelled_cells;
    view.smallest_labelled = std::min(view.smallest_labelled, total);
    if (total == 1) ++view.single_record_cells;
  };
  for (const DecodedSum& sum : sums) {
    for (const auto& u : sum.updates) {
      if (u.has_instruction()) {
        hier[u.instruction().attribute()].Specialize(u.instruction().node(),
                                                     u.instruction().candidate());
      } else if (u.has_split()) {
        hier[u.split().attribute()].SetSplit(u.split().node(), u.split().split());
      }
    }
    auto request = wire::FromProto(sum.request, hier);
    if (!request.ok()) {
      view.violations.push_back(std::string(request.status().message()));
      continue;
    }
    if (sum.total.size() != engine::StatsLength(hier, schema.num_classes(), tracked, *request)) {
      view.violations.push_back("a decoded vector does not match its request");
      continue;
    }
    size_t pos = 0;
    for (const auto& r : request->range_counts) {
      const auto attr = static_cast<uint32_t>(r.attr);
      const size_t ranges = r.bounds.size() - 1;
      if (!r.labelled) {
        ++view.unlabelled_requests[attr];
        view.unlabelled_bounds[attr] = r.bounds;
        pos += ranges;
        continue;
      }
      ++view.labelled_requests[attr];
      for (size_t i = 0; i < ranges; ++i) {
        uint64_t n = 0;
        for (size_t k = 0; k < nc; ++k) n += sum.total[pos + i * nc + k];
        note_labelled(n);
        if (n < kK) {
          view.violations.push_back(absl::StrCat("a labelled bin of ", schema.qids[attr].name,
                                                 " describes ", n, " < K records"));
        }
      }
      pos += ranges * nc;
    }
    for (const auto& [a, n] : request->rank_histograms) {
      ++view.per_rank_histograms;
      const auto& node = hier[a].node(n);
      for (int32_t r = node.rank_lo; r < node.rank_hi; ++r) {
        uint64_t total = 0;
        for (size_t k = 0; k < nc; ++k) total += sum.total[pos + (r - node.rank_lo) * nc + k];
        note_labelled(total);
      }
      pos += static_cast<size_t>(node.rank_hi - node.rank_lo) * nc;
    }
    for (const auto& [a, n] : request->node_class_counts) {
      const size_t fine = static_cast<size_t>(hier[a].FineChildCount(n));
      if (hier[a].kind() == table::QidKind::kContinuous) {
        for (size_t f = 0; f < fine; ++f) {
          uint64_t total = 0;
          for (size_t k = 0; k < nc; ++k) total += sum.total[pos + f * nc + k];
          if (total != 0 && total < kK) {
            view.violations.push_back(absl::StrCat("a side of an interval of ", schema.qids[a].name,
                                                   " has ", total, " < K records"));
          }
        }
      }
      pos += fine * nc;
    }
  }
  return view;
}

// The public cells of a grid attribute computed here from the spec: ceil(R / cells) ranks wide.
std::vector<int32_t> ExpectedCells(double lo, double hi, double precision) {
  const auto ranks = static_cast<int32_t>(std::ceil((hi - lo) / precision));
  const int32_t width = (ranks + static_cast<int32_t>(kCells) - 1) / static_cast<int32_t>(kCells);
  std::vector<int32_t> bounds;
  for (int32_t r = 0; r < ranks; r += width) bounds.push_back(r);
  bounds.push_back(ranks);
  return bounds;
}

// File name (as the spec says it) -> content of the Adult hierarchies.
std::map<std::string, std::string> AdultTaxonomies() {
  std::map<std::string, std::string> taxonomies;
  for (const char* attr :
       {"workclass", "education", "occupation", "race", "sex", "native-country"}) {
    taxonomies[absl::StrCat(attr, ".csv")] =
        Slurp(absl::StrCat(AdultDir(), "/arx-hierarchies/adult_hierarchy_", attr, ".csv"));
  }
  taxonomies["relationship.csv"] =
      Slurp(AdultDir() + "/extra-hierarchies/adult_hierarchy_relationship.csv");
  return taxonomies;
}

struct AdultRun {
  NumericView view;
  fedanon::v1::Report report;
  std::string csv;
  std::string view_log;  // the leader's own view log (leader/view_log.h)
};

// Runs the Adult job over 3 in-process parties with the leader behind a RecordingChannel.
void RunAdult(const std::string& name, const std::string& mode, AdultRun* out) {
  const std::map<std::string, std::string> taxonomies = AdultTaxonomies();
  ASSERT_OK_AND_ASSIGN(Table table, ReadCsvTable(AdultDir() + "/adult_clean.csv"));
  const std::string spec_text = absl::StrReplaceAll(kSpec, {{"MODE", mode}});
  std::vector<std::map<std::string, std::string>> files(3, taxonomies);
  std::vector<Table> parts(3);
  for (auto& p : parts) p.header = table.header;
  for (size_t r = 0; r < table.rows.size(); ++r) parts[r % 3].rows.push_back(table.rows[r]);
  for (int p = 0; p < 3; ++p) files[p]["table.csv"] = ToCsv(parts[p]);
  ASSERT_OK_AND_ASSIGN(auto fed, InProcessFederation::Create(name, files));

  // The leader talks to the parties through the recorder.
  RecordingChannel recorder(&fed->channel);
  ASSERT_OK_AND_ASSIGN(auto seal,
                       fed->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24)));
  leader::LeaderOptions lo;
  lo.name = "leader";
  lo.data_dir = fed->dir + "/recorded-leader";
  lo.round_timeout = absl::Seconds(60);
  lo.ca_pem = fed->ca->cert_pem();
  lo.seal_cert_pem = seal.cert_pem;
  lo.seal_key_pem = seal.key_pem;
  ASSERT_OK_AND_ASSIGN(auto leader_keys, crypto::SealKeyPairFromPem(seal.key_pem));
  recorder.set_leader_keys(std::move(leader_keys), fed->ca->cert_pem());
  std::map<std::string, std::string> party_certs;
  for (size_t i = 0; i < fed->names.size(); ++i) {
    party_certs[fed->names[i]] = fed->agents[i]->seal_cert_pem();
  }
  recorder.set_party_certificates(std::move(party_certs));
  ASSERT_OK_AND_ASSIGN(fed->leader, leader::Leader::Create(lo, &recorder));

  ASSERT_OK_AND_ASSIGN(fedanon::v1::JobSpec spec, spec::ParseJobSpecYaml(spec_text, "job.yaml"));
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = spec;
  for (const auto& n : fed->names) req.add_parties(n);
  std::map<std::string, std::string> texts;
  for (const auto& a : spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    (*req.mutable_taxonomies())[a.name()] = taxonomies.at(a.taxonomy());
    texts[a.name()] = taxonomies.at(a.taxonomy());
  }
  ASSERT_OK_AND_ASSIGN(auto info, fed->Submit(req));
  const auto done = fed->Wait(info.job_id());
  ASSERT_EQ(done.state(), fedanon::v1::JOB_STATE_DONE) << done.failure_reason();
  out->report = done.report();
  ASSERT_OK_AND_ASSIGN(out->csv, fed->leader->Result(info.job_id()));
  ASSERT_OK_AND_ASSIGN(out->view_log, fed->leader->ViewLogText(info.job_id()));
  fed->leader.reset();  // before the recorder goes away

  ASSERT_OK_AND_ASSIGN(table::Dataset schema, table::BuildPublicSchema(spec, texts));
  out->view = Analyze(recorder.Sums(), schema);
  std::cout << "[ measured ] " << (mode.empty() ? "numeric_split: binned (default)" : mode)
            << ": labelled cells the leader saw " << out->view.labelled_cells
            << " (of exactly one record: " << out->view.single_record_cells
            << "), smallest labelled count " << out->view.smallest_labelled
            << ", per-rank histograms " << out->view.per_rank_histograms << ", steps "
            << out->report.steps_size() << "\n";
}

bool HaveAdult() { return std::filesystem::exists(AdultDir() + "/adult_clean.csv"); }

TEST(NumericSplitFederation, LeaderLearnsNoRecordLevelCountsAndMatchesCentralized) {
  if (!HaveAdult()) GTEST_SKIP() << "UCI Adult not found under " << AdultDir();
  AdultRun fed;
  RunAdult("numeric_adult_binned", "", &fed);
  if (HasFatalFailure()) return;
  const NumericView& v = fed.view;
  EXPECT_EQ(fed.report.numeric_split(), fedanon::v1::NUMERIC_SPLIT_BINNED);
  EXPECT_TRUE(v.violations.empty()) << v.violations.front();
  EXPECT_EQ(v.per_rank_histograms, 0u) << "a per-rank class histogram was decoded";
  EXPECT_GT(v.labelled_cells, 0u);
  EXPECT_GE(v.smallest_labelled, kK);
  // Record counts per public cell only, once per continuous attribute; class counts once.
  const std::map<std::string, std::vector<int32_t>> cells = {
      {"age", ExpectedCells(0, 100, 1)},           {"fnlwgt", ExpectedCells(0, 1500000, 1)},
      {"education-num", ExpectedCells(0, 20, 1)},  {"capital-gain", ExpectedCells(0, 100000, 1)},
      {"capital-loss", ExpectedCells(0, 5000, 1)}, {"hours-per-week", ExpectedCells(0, 100, 1)}};
  const std::vector<std::string> qids = {
      "age",          "workclass",      "fnlwgt",        "education", "education-num",
      "occupation",   "relationship",   "race",          "sex",       "capital-gain",
      "capital-loss", "hours-per-week", "native-country"};
  EXPECT_EQ(v.unlabelled_requests.size(), cells.size());
  for (const auto& [attr, count] : v.unlabelled_requests) {
    ASSERT_LT(attr, qids.size());
    EXPECT_EQ(count, 1) << qids[attr];
    ASSERT_TRUE(cells.count(qids[attr])) << qids[attr] << " is not continuous";
    EXPECT_EQ(v.unlabelled_bounds.at(attr), cells.at(qids[attr])) << qids[attr];
    EXPECT_LE(v.unlabelled_bounds.at(attr).size() - 1, kCells) << qids[attr];
  }
  for (const auto& [attr, count] : v.labelled_requests) EXPECT_EQ(count, 1) << qids[attr];

  // The leader's view log says the same: one `numeric_split` line per attribute with labelled
  // bins, each bin of >= K records (tests/federation/view_log_test.cc checks completeness).
  int numeric_split_lines = 0;
  std::istringstream lines(fed.view_log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"kind\":\"numeric_split\"") == std::string::npos) continue;
    ++numeric_split_lines;
    const size_t open = line.find("\"counts\":[") + std::strlen("\"counts\":[");
    std::vector<uint64_t> counts;
    for (absl::string_view c :
         absl::StrSplit(line.substr(open, line.find(']', open) - open), ',')) {
      uint64_t n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(c, &n)) << line;
      counts.push_back(n);
    }
    ASSERT_EQ(counts.size() % 2, 0u) << "two classes";
    for (size_t b = 0; b < counts.size(); b += 2) EXPECT_GE(counts[b] + counts[b + 1], kK) << line;
  }
  EXPECT_EQ(numeric_split_lines, static_cast<int>(v.labelled_requests.size()));

  // federated == centralized on the union, with the same (binned) rule.
  ASSERT_OK_AND_ASSIGN(Table table, ReadCsvTable(AdultDir() + "/adult_clean.csv"));
  const Job job = WriteJob("numeric_adult_central", absl::StrReplaceAll(kSpec, {{"MODE", ""}}),
                           table, AdultTaxonomies());
  ASSERT_OK_AND_ASSIGN(fedanon::v1::Report central, RunJob(job));
  EXPECT_EQ(central.numeric_split(), fedanon::v1::NUMERIC_SPLIT_BINNED);
  ASSERT_EQ(fed.report.steps_size(), central.steps_size());
  for (int i = 0; i < central.steps_size(); ++i) {
    EXPECT_EQ(fed.report.steps(i).attribute(), central.steps(i).attribute());
    EXPECT_EQ(fed.report.steps(i).value(), central.steps(i).value());
    EXPECT_DOUBLE_EQ(fed.report.steps(i).score(), central.steps(i).score());
  }
  ASSERT_OK_AND_ASSIGN(Table central_out, ReadCsvTable(job.output_path));
  ASSERT_OK_AND_ASSIGN(Table fed_out, ParseCsvText(fed.csv, job.dir));
  EXPECT_EQ(RowsByColumns(fed_out, central_out.header),
            RowsByColumns(central_out, central_out.header));
}

// The contrast (and the "before" figure): the exact search decodes single-record histograms.
TEST(NumericSplitFederation, ExactSearchHandsTheLeaderSingleRecords) {
  if (!HaveAdult()) GTEST_SKIP() << "UCI Adult not found under " << AdultDir();
  AdultRun fed;
  RunAdult("numeric_adult_exact", "numeric_split: exact", &fed);
  if (HasFatalFailure()) return;
  EXPECT_EQ(fed.report.numeric_split(), fedanon::v1::NUMERIC_SPLIT_EXACT);
  EXPECT_GT(fed.view.per_rank_histograms, 0u);
  EXPECT_EQ(fed.view.smallest_labelled, 1u);
  EXPECT_GT(fed.view.single_record_cells, 10000u);  // fnlwgt is near-unique
}

}  // namespace
}  // namespace fedanon::testing
