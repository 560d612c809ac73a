// Helpers for sequential-release tests (tests only): lay out a job with a previous release in a
// temporary directory, run `Anonymize` with --previous-release, or drive SequentialSpecializer
// directly to observe the join's privacy values between rounds.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "app/anonymize.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/sequential/sequential_release.h"
#include "common/sequential/sequential_specializer.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "tests/common/engine/engine_test_util.h"

namespace fedanon::testing {

struct SeqJob {
  Job job;
  std::string previous_path;
};

inline SeqJob WriteSeqJob(const std::string& name, const std::string& spec_yaml,
                          const Table& current, const Table& previous,
                          const std::map<std::string, std::string>& taxonomies) {
  SeqJob s;
  s.job = WriteJob(name, spec_yaml, current, taxonomies);
  s.previous_path = s.job.dir + "/previous.csv";
  WriteText(s.previous_path, ToCsv(previous));
  return s;
}

inline absl::StatusOr<fedanon::v1::Report> RunSeqJob(const SeqJob& s, uint32_t max_rounds = 0) {
  app::AnonymizeOptions opts;
  opts.spec_path = s.job.spec_path;
  opts.input_path = s.job.input_path;
  opts.output_path = s.job.output_path;
  opts.report_path = s.job.report_path;
  if (!s.previous_path.empty()) opts.previous_release_paths = {s.previous_path};
  opts.max_rounds = max_rounds;
  return app::Anonymize(opts);
}

// A job with several previous releases (previous1.csv, previous2.csv, ... in the job directory).
struct StarJob {
  Job job;
  std::vector<std::string> previous_paths;
};

inline StarJob WriteStarJob(const std::string& name, const std::string& spec_yaml,
                            const Table& current, const std::vector<Table>& previous,
                            const std::map<std::string, std::string>& taxonomies) {
  StarJob s;
  s.job = WriteJob(name, spec_yaml, current, taxonomies);
  for (size_t i = 0; i < previous.size(); ++i) {
    s.previous_paths.push_back(s.job.dir + "/previous" + std::to_string(i + 1) + ".csv");
    WriteText(s.previous_paths.back(), ToCsv(previous[i]));
  }
  return s;
}

inline absl::StatusOr<fedanon::v1::Report> RunStarJob(const StarJob& s, uint32_t max_rounds = 0) {
  app::AnonymizeOptions opts;
  opts.spec_path = s.job.spec_path;
  opts.input_path = s.job.input_path;
  opts.output_path = s.job.output_path;
  opts.report_path = s.job.report_path;
  opts.previous_release_paths = s.previous_paths;
  opts.max_rounds = max_rounds;
  return app::Anonymize(opts);
}

// The pieces of a sequential run, kept alive together (the hierarchies point into the dataset).
struct DirectRun {
  fedanon::v1::JobSpec spec;
  std::unique_ptr<table::Dataset> data;
  std::unique_ptr<sequential::SequentialModel> model;
  std::vector<engine::AttributeHierarchy> hier;
  std::unique_ptr<engine::Tips> tips;
  std::unique_ptr<sequential::SequentialSpecializer> engine;
};

inline absl::StatusOr<std::unique_ptr<DirectRun>> StartDirect(const SeqJob& s,
                                                              uint32_t max_rounds = 0) {
  auto run = std::make_unique<DirectRun>();
  auto spec = spec::LoadJobSpec(s.job.spec_path);
  if (!spec.ok()) return spec.status();
  run->spec = *spec;
  if (auto st = spec::ValidateJobSpec(run->spec); !st.ok()) return st;
  auto data = table::LoadDataset(run->spec, s.job.input_path);
  if (!data.ok()) return data.status();
  run->data = std::make_unique<table::Dataset>(std::move(*data));
  auto model = sequential::LoadSequentialModel(run->spec, *run->data, s.previous_path);
  if (!model.ok()) return model.status();
  run->model = std::make_unique<sequential::SequentialModel>(std::move(*model));
  for (const auto& q : run->data->qids) run->hier.emplace_back(&q);
  run->tips = std::make_unique<engine::Tips>(run->data.get(), &run->hier);
  sequential::SequentialOptions opts;
  opts.score = run->spec.score();
  opts.max_rounds = max_rounds;
  auto engine = sequential::SequentialSpecializer::Create(run->data.get(), run->model.get(),
                                                          &run->hier, run->tips.get(), opts);
  if (!engine.ok()) return engine.status();
  run->engine = std::move(*engine);
  return run;
}

}  // namespace fedanon::testing
