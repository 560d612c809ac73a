// Worked example A of mohammed2010 (Table I) as a horizontal federation scenario for protocol
// tests (tests only): the spec, its taxonomies, the table and its split over three hospitals,
// with the helpers that turn a scenario into party files and a job request.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/spec/job_spec_loader.h"
#include "fedanon/v1/federation.pb.h"
#include "tests/common/engine/engine_test_util.h"

namespace fedanon::testing {

struct Scenario {
  std::string spec_yaml;                          // taxonomy paths relative to the data dir
  std::map<std::string, std::string> taxonomies;  // file -> content
  Table table;                                    // the union
  std::vector<std::vector<int>> split;            // rows of each party
};

inline absl::StatusOr<fedanon::v1::SubmitJobRequest> MakeRequest(
    const Scenario& s, const std::vector<std::string>& parties) {
  auto spec = spec::ParseJobSpecYaml(s.spec_yaml, "job.yaml");
  if (!spec.ok()) return spec.status();
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& p : parties) req.add_parties(p);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty())
      (*req.mutable_taxonomies())[a.name()] = s.taxonomies.at(a.taxonomy());
  }
  return req;
}

inline std::vector<std::map<std::string, std::string>> PartyFiles(const Scenario& s) {
  std::vector<std::map<std::string, std::string>> files;
  for (const auto& rows : s.split) {
    Table part;
    part.header = s.table.header;
    for (int r : rows) part.rows.push_back(s.table.rows[r]);
    std::map<std::string, std::string> f = s.taxonomies;
    f["table.csv"] = ToCsv(part);
    files.push_back(std::move(f));
  }
  return files;
}

// Worked example A (mohammed2010 Table I) with parties {1-3}, {4-7}, {8-11}.
inline Scenario ExampleA() {
  Scenario s;
  s.spec_yaml = R"(name: example-a
attributes:
  - {name: Job, role: qid, taxonomy: job.csv}
  - {name: Sex, role: qid, taxonomy: sex.csv}
  - {name: Age, role: qid, taxonomy: age.csv}
  - {name: Transfuse, role: class, values: [Y, N]}
  - {name: Surgery, role: sensitive}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}
partitioning: horizontal
)";
  s.taxonomies = {{"job.csv",
                   "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;"
                   "ANY_Job\nCarpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-"
                   "collar;ANY_Job\nManager;White-collar;ANY_Job\nLawyer;Professional;White-collar;"
                   "ANY_Job\nDoctor;Professional;White-collar;ANY_Job\n"},
                  {"sex.csv", "M;ANY_Sex\nF;ANY_Sex\n"},
                  {"age.csv",
                   "24;[1-30);[1-60);[1-99)\n34;[30-60);[1-60);[1-99)\n44;[30-60);[1-60);[1-99)\n"
                   "58;[30-60);[1-60);[1-99)\n63;[60-99);[1-99)\n"}};
  s.table.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  s.table.rows = {{"1", "Janitor", "M", "34", "Y", "Transgender"},
                  {"2", "Lawyer", "F", "58", "N", "Plastic"},
                  {"3", "Mover", "M", "58", "N", "Urology"},
                  {"4", "Lawyer", "M", "24", "N", "Vascular"},
                  {"5", "Mover", "M", "34", "Y", "Transgender"},
                  {"6", "Janitor", "M", "44", "Y", "Plastic"},
                  {"7", "Doctor", "F", "44", "N", "Vascular"},
                  {"8", "Doctor", "M", "58", "N", "Plastic"},
                  {"9", "Doctor", "M", "24", "N", "Urology"},
                  {"10", "Carpenter", "F", "63", "Y", "Vascular"},
                  {"11", "Technician", "F", "63", "Y", "Plastic"}};
  s.split = {{0, 1, 2}, {3, 4, 5, 6}, {7, 8, 9, 10}};
  return s;
}

// Worked example A with Age a continuous attribute searched in bins of 4 public cells
// (numeric_split: binned): its job runs the parties' bin check (protocol 4.0).
inline Scenario ExampleABinned() {
  Scenario s = ExampleA();
  const std::string categorical = "  - {name: Age, role: qid, taxonomy: age.csv}\n";
  const size_t at = s.spec_yaml.find(categorical);
  if (at != std::string::npos) {
    s.spec_yaml.replace(at, categorical.size(),
                        "  - {name: Age, role: qid, type: continuous, range: [1, 99], "
                        "precision: 1}\n");
  }
  s.spec_yaml += "numeric_split: binned\nnumeric_cells: 4\n";
  return s;
}

}  // namespace fedanon::testing
