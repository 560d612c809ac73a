#include "cli/sweep.h"

#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <type_traits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "app/anonymize.h"
#include "cli/sweep_report.h"
#include "common/base/status_macros.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"

namespace fedanon::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A fresh temporary directory, removed with everything in it on destruction.
class ScratchDir {
 public:
  static absl::StatusOr<std::unique_ptr<ScratchDir>> Create() {
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    if (ec) return absl::InternalError(absl::StrCat("no temporary directory: ", ec.message()));
    std::string templ = (base / "fedanon-sweep-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a directory like '", templ, "'"));
    }
    return std::unique_ptr<ScratchDir>(new ScratchDir(templ));
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

template <typename T>
absl::StatusOr<std::vector<T>> ParseValues(absl::string_view key, absl::string_view list) {
  std::vector<T> out;
  for (absl::string_view v : absl::StrSplit(list, ',')) {
    T x{};
    bool parsed = false;
    if constexpr (std::is_same_v<T, double>) {
      parsed = absl::SimpleAtod(v, &x) && std::isfinite(x);
    } else {
      parsed = !v.empty() && v[0] != '-' && absl::SimpleAtoi(v, &x);
    }
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grid: ", key, ": '", v, "' is not ",
                       std::is_same_v<T, double> ? "a number" : "a non-negative integer"));
    }
    out.push_back(x);
  }
  return out;
}

// The spec with the cell's parameters and absolute taxonomy paths (it is written elsewhere).
fedanon::v1::JobSpec CellSpec(const fedanon::v1::JobSpec& spec, uint32_t l, uint32_t k, double c) {
  fedanon::v1::JobSpec cell = spec;
  cell.mutable_privacy()->set_l(l);
  cell.mutable_privacy()->set_k(k);
  cell.mutable_privacy()->set_c(c);
  for (auto& a : *cell.mutable_attributes()) {
    if (!a.taxonomy().empty()) {
      std::error_code ec;
      const fs::path absolute = fs::absolute(a.taxonomy(), ec);
      if (!ec) a.set_taxonomy(absolute.lexically_normal().string());
    }
  }
  return cell;
}

// Cuts the raw table into `parties` contiguous parts of (almost) equal size; returns their paths.
absl::StatusOr<std::vector<std::string>> SplitRaw(const std::string& raw_path, uint32_t parties,
                                                  const ScratchDir& dir) {
  std::vector<std::string_view> fields;
  size_t records = 0;
  {
    ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(raw_path));
    ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
    if (!has_header) return absl::InvalidArgumentError(absl::StrCat(raw_path, ": no header"));
    for (;;) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
      if (!more) break;
      ++records;
    }
  }
  if (records < parties) {
    return absl::InvalidArgumentError(absl::StrCat(
        raw_path, ": ", records, " records cannot be split among ", parties, " parties"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(raw_path));
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  (void)has_header;
  const std::vector<std::string> header(fields.begin(), fields.end());
  std::vector<std::string> paths;
  for (uint32_t p = 0; p < parties; ++p) {
    const size_t begin = records * p / parties, end = records * (p + 1) / parties;
    paths.push_back(dir.File(absl::StrCat("party", p + 1, ".csv")));
    ASSIGN_OR_RETURN(std::unique_ptr<table::CsvWriter> writer,
                     table::CsvWriter::Create(paths.back(), reader->separator()));
    writer->WriteRow(std::vector<std::string_view>(header.begin(), header.end()));
    for (size_t r = begin; r < end; ++r) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
      if (!more) return absl::InternalError(absl::StrCat(raw_path, " changed while read"));
      writer->WriteRow(fields);
    }
    RETURN_IF_ERROR(writer->Commit());
  }
  return paths;
}

// Appends the tables `parts` (same header) into `out_path`.
absl::Status Concatenate(const std::vector<std::string>& parts, const std::string& out_path) {
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvWriter> writer,
                   table::CsvWriter::Create(out_path, ','));
  std::vector<std::string_view> fields;
  std::vector<std::string> header;
  for (size_t p = 0; p < parts.size(); ++p) {
    ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::CsvReader::Open(parts[p]));
    ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
    if (!has_header) return absl::InternalError(absl::StrCat(parts[p], ": empty"));
    if (p == 0) {
      header.assign(fields.begin(), fields.end());
      writer->WriteRow(fields);
    } else if (std::vector<std::string>(fields.begin(), fields.end()) != header) {
      return absl::InternalError(absl::StrCat(parts[p], ": header differs from ", parts[0]));
    }
    for (;;) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
      if (!more) break;
      writer->WriteRow(fields);
    }
  }
  return writer->Commit();
}

// Anonymizes `input` with `spec_path` into `output`. A requirement the table cannot meet
// (FailedPrecondition) is returned as the point's error text; other errors fail the sweep.
absl::StatusOr<std::string> AnonymizeOrExplain(const std::string& spec_path,
                                               const std::string& input,
                                               const std::string& output) {
  app::AnonymizeOptions anon;
  anon.spec_path = spec_path;
  anon.input_path = input;
  anon.output_path = output;
  absl::StatusOr<fedanon::v1::Report> report = app::Anonymize(anon);
  if (report.ok()) return std::string();
  if (report.status().code() == absl::StatusCode::kFailedPrecondition) {
    return std::string(report.status().message());
  }
  return report.status();
}

std::string Percent(double x) { return absl::StrFormat("%.2f%%", 100 * x); }

// What every point of a sweep reads: the raw table, its parts for the naive baseline (none
// without it), the scratch directory and the evaluator of the raw table.
struct SweepInputs {
  std::string raw_path;
  std::vector<std::string> parts;
  const ScratchDir* dir = nullptr;
  const evaluation::UtilityEvaluator* evaluator = nullptr;
};

// Writes the release of one point to `output`: the raw table anonymized as a whole
// (centralized), or each part anonymized on its own and the results concatenated (naive).
// Returns why there is no release, or "" when there is one.
absl::StatusOr<std::string> AnonymizeRelease(bool naive, const std::string& spec_path,
                                             const SweepInputs& in, const std::string& output) {
  if (!naive) return AnonymizeOrExplain(spec_path, in.raw_path, output);
  std::vector<std::string> outputs;
  std::string failure;
  for (size_t p = 0; p < in.parts.size() && failure.empty(); ++p) {
    outputs.push_back(in.dir->File(absl::StrCat("party", p + 1, ".anonymized.csv")));
    ASSIGN_OR_RETURN(failure, AnonymizeOrExplain(spec_path, in.parts[p], outputs.back()));
    if (!failure.empty()) failure = absl::StrCat("party ", p + 1, ": ", failure);
  }
  if (failure.empty()) RETURN_IF_ERROR(Concatenate(outputs, output));
  return failure;
}

// The point of `method` ("centralized" or "naive") for the cell (l, k, c) whose spec is at
// `spec_path`: its release measured, or why there is none.
absl::StatusOr<SweepPoint> MeasurePoint(const char* method, uint32_t l, uint32_t k, double c,
                                        const std::string& spec_path, const SweepInputs& in) {
  const auto start = Clock::now();
  SweepPoint point;
  point.method = method;
  point.L = l;
  point.K = k;
  point.C = c;
  const std::string output = in.dir->File(absl::StrCat(method, ".csv"));
  ASSIGN_OR_RETURN(std::string failure,
                   AnonymizeRelease(point.method == "naive", spec_path, in, output));
  if (failure.empty()) {
    ASSIGN_OR_RETURN(evaluation::AnonymizedUtility u, in.evaluator->Evaluate(output));
    point.ok = true;
    point.classification_error = u.classification_error;
    point.discernibility_ratio = u.discernibility_ratio;
    point.groups = u.groups;
  } else {
    point.error = failure;
  }
  point.seconds = SecondsSince(start);
  return point;
}

// The progress line of the `cell`-th of `cells` cells.
std::string PointProgressLine(const SweepPoint& point, size_t cell, size_t cells) {
  const std::string where = absl::StrCat("sweep ", cell, "/", cells, ": L=", point.L,
                                         " K=", point.K, " C=", point.C, " ", point.method, ": ");
  if (!point.ok) return absl::StrCat(where, "no release: ", point.error);
  return absl::StrCat(where, "CE ", Percent(point.classification_error), ", DR ",
                      absl::StrFormat("%.4f", point.discernibility_ratio), ", ", point.groups,
                      " groups (", absl::StrFormat("%.1f", point.seconds), " s)");
}

}  // namespace

absl::StatusOr<SweepGrid> ParseSweepGrid(const std::string& text,
                                         const fedanon::v1::JobSpec& spec) {
  if (spec.privacy().model() != fedanon::v1::PRIVACY_MODEL_LKC) {
    return absl::InvalidArgumentError("sweep needs a job with privacy.model: lkc");
  }
  SweepGrid grid;
  std::set<std::string> seen;
  for (absl::string_view token : absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    const size_t eq = token.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grid: '", token, "' is not KEY=v1,v2,... (keys L, K, C)"));
    }
    const std::string key(token.substr(0, eq));
    const absl::string_view values = token.substr(eq + 1);
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("--grid: ", key, " is given twice"));
    }
    if (key == "L") {
      ASSIGN_OR_RETURN(grid.L, ParseValues<uint32_t>(key, values));
    } else if (key == "K") {
      ASSIGN_OR_RETURN(grid.K, ParseValues<uint32_t>(key, values));
    } else if (key == "C") {
      ASSIGN_OR_RETURN(grid.C, ParseValues<double>(key, values));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--grid: unknown key '", key, "'; the keys are L, K and C"));
    }
  }
  if (seen.empty()) return absl::InvalidArgumentError("--grid is empty; e.g. 'L=2,4 K=20,40'");
  if (grid.L.empty()) grid.L = {spec.privacy().l()};
  if (grid.K.empty()) grid.K = {spec.privacy().k()};
  if (grid.C.empty()) grid.C = {spec.privacy().c()};
  for (uint32_t l : grid.L) {
    for (uint32_t k : grid.K) {
      for (double c : grid.C) {
        fedanon::v1::JobSpec cell = CellSpec(spec, l, k, c);
        if (absl::Status s = spec::ValidateJobSpec(cell); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--grid: L=", l, " K=", k, " C=", c, ": ", s.message()));
        }
      }
    }
  }
  return grid;
}

absl::StatusOr<SweepResult> RunSweep(const SweepOptions& options) {
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  if (options.naive_parties == 1) {
    return absl::InvalidArgumentError("--naive-parties must be at least 2");
  }
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(options.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  ASSIGN_OR_RETURN(SweepGrid grid, ParseSweepGrid(options.grid, spec));

  SweepResult result;
  result.job_name = spec.name();
  result.spec_path = options.spec_path;
  result.raw_path = options.raw_path;
  result.grid = options.grid;
  result.naive_parties = options.naive_parties;
  result.local = options.local;
  result.seed = options.evaluation.seed;

  progress(
      absl::StrCat("sweep: ", grid.cells(), " cells; measuring BE and UE on ", options.raw_path));
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(
      std::unique_ptr<evaluation::UtilityEvaluator> evaluator,
      evaluation::UtilityEvaluator::Create(spec, options.raw_path, options.evaluation));
  result.baselines = evaluator->baselines();
  progress(absl::StrCat("sweep: ", result.baselines.records, " records, BE ",
                        Percent(result.baselines.baseline_error), ", UE ",
                        Percent(result.baselines.upper_bound_error), " (",
                        absl::StrFormat("%.1f", SecondsSince(start)), " s)"));

  ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> dir, ScratchDir::Create());
  SweepInputs inputs;
  inputs.raw_path = options.raw_path;
  inputs.dir = dir.get();
  inputs.evaluator = evaluator.get();
  if (options.naive_parties > 0) {
    ASSIGN_OR_RETURN(inputs.parts, SplitRaw(options.raw_path, options.naive_parties, *dir));
  }

  size_t cell = 0;
  for (uint32_t l : grid.L) {
    for (uint32_t k : grid.K) {
      for (double c : grid.C) {
        ++cell;
        const std::string spec_path = dir->File("cell.yaml");
        const std::string local_spec_path = dir->File("cell-local.yaml");
        fedanon::v1::JobSpec cell_spec = CellSpec(spec, l, k, c);
        if (options.local) {
          // Global beside local: the "centralized" points are global recoding.
          cell_spec.set_recoding(fedanon::v1::RECODING_UNSPECIFIED);
          fedanon::v1::JobSpec local_spec = cell_spec;
          local_spec.set_recoding(fedanon::v1::RECODING_LOCAL);
          RETURN_IF_ERROR(
              table::WriteFileAtomically(local_spec_path, spec::JobSpecToYaml(local_spec)));
        }
        RETURN_IF_ERROR(table::WriteFileAtomically(spec_path, spec::JobSpecToYaml(cell_spec)));
        for (const char* method : {"centralized", "naive", "local"}) {
          if (std::string(method) == "naive" && inputs.parts.empty()) continue;
          if (std::string(method) == "local" && !options.local) continue;
          const std::string& path = std::string(method) == "local" ? local_spec_path : spec_path;
          ASSIGN_OR_RETURN(SweepPoint point, MeasurePoint(method, l, k, c, path, inputs));
          progress(PointProgressLine(point, cell, grid.cells()));
          result.points.push_back(std::move(point));
        }
      }
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// The command line

namespace {

struct SweepFlags {
  SweepOptions options;
  std::string html_path = "sweep.html";
  std::string csv_path = "sweep.csv";
  bool quiet = false;
  std::string classifier = "c45";
};

// Fails early (before the sweep, which may take long) when `path`'s directory is missing.
absl::Status CheckDirectoryOf(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("cannot write '", path, "': directory '", dir.string(), "' does not exist"));
  }
  return absl::OkStatus();
}

absl::Status RunSweepCommand(SweepFlags flags) {
  if (flags.classifier == "naive-bayes") {
    flags.options.evaluation.classifier = evaluation::Classifier::kNaiveBayes;
  } else if (flags.classifier != "c45") {
    return absl::InvalidArgumentError(
        absl::StrCat("--classifier: '", flags.classifier, "' is not one of c45, naive-bayes"));
  }
  if (!flags.quiet) flags.options.progress = [](const std::string& m) { std::cerr << m << "\n"; };
  RETURN_IF_ERROR(CheckDirectoryOf(flags.html_path));
  RETURN_IF_ERROR(CheckDirectoryOf(flags.csv_path));
  // The reports never replace the inputs, nor each other.
  RETURN_IF_ERROR(base::CheckDistinctOutputs(
      {{"--html", flags.html_path}, {"--csv", flags.csv_path}},
      {{"--spec", flags.options.spec_path}, {"--raw", flags.options.raw_path}}));
  ASSIGN_OR_RETURN(const SweepResult result, RunSweep(flags.options));
  RETURN_IF_ERROR(WriteSweepReport(result, flags.html_path, flags.csv_path));
  if (!flags.quiet) {
    std::cerr << "fedanon sweep: wrote " << flags.html_path << " and " << flags.csv_path << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

server::CommandAction DeclareSweepCommand(CLI::App* command) {
  auto flags = std::make_shared<SweepFlags>();
  SweepOptions& o = flags->options;
  command->add_option("--spec", o.spec_path, "Job spec (YAML, privacy.model lkc)")->required();
  command->add_option("--raw", o.raw_path, "The raw table (CSV)")->required();
  command
      ->add_option("--grid", o.grid,
                   "Parameter values, e.g. 'L=2,4,6 K=20,40,60,80,100' (keys L, K, C; "
                   "unnamed keys keep the spec's value)")
      ->required();
  command
      ->add_option("--naive-parties", o.naive_parties,
                   "Also run the naive generalize-then-integrate baseline with N parties "
                   "(the table cut into N contiguous parts)")
      ->check(CLI::Range(2, 1000));
  command->add_flag("--local", o.local,
                    "Also run every cell with recoding: local (method \"local\"), beside global "
                    "recoding (method \"centralized\")");
  command->add_option("--html", flags->html_path, "HTML report to write")->capture_default_str();
  command->add_option("--csv", flags->csv_path, "CSV of the points to write")
      ->capture_default_str();
  command->add_option("--seed", o.evaluation.seed, "Seed of the 2/3 training, 1/3 test split");
  command->add_option("--classifier", flags->classifier,
                      "c45 (the C4.5-style tree, default) or naive-bayes (thesis §4.4.1)");
  command
      ->add_option("--folds", o.evaluation.folds,
                   "k-fold cross-validation instead of the 2/3-1/3 split (0: the split)")
      ->check(CLI::Range(0, 1000));
  command->add_flag("--quiet", flags->quiet, "No progress messages on stderr");
  return [flags] { return server::ExitCode(RunSweepCommand(*flags), "fedanon sweep"); };
}

}  // namespace fedanon::cli
