#include "cli/randomize_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/base/version.h"
#include "common/engine/released_rows.h"
#include "common/randomization/random_source.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"

namespace fedanon::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::Status InputChanged() { return absl::InternalError("the input changed while randomizing"); }

// Re-reads the input (which LoadDataset has validated) and dictionary-encodes the raw values of
// the QID columns of the kept records: RA works on the values as they are, not on hierarchies.
absl::StatusOr<std::vector<randomization::CategoricalColumn>> ReadQidValues(
    const table::Dataset& data) {
  std::vector<randomization::CategoricalColumn> columns(data.qids.size());
  std::vector<absl::flat_hash_map<std::string, uint32_t>> dictionaries(data.qids.size());
  for (size_t q = 0; q < data.qids.size(); ++q) {
    columns[q].name = data.qids[q].name;
    columns[q].codes.reserve(data.num_records);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::ReopenSource(data));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return InputChanged();
  size_t line = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    if (line >= data.kept.size() || fields.size() != data.header.size()) return InputChanged();
    if (!data.kept[line++]) continue;
    for (size_t q = 0; q < data.qids.size(); ++q) {
      const std::string_view value = fields[data.qids[q].csv_column];
      auto it = dictionaries[q].find(base::Av(value));
      if (it == dictionaries[q].end()) {
        it = dictionaries[q]
                 .emplace(std::string(value), static_cast<uint32_t>(columns[q].values.size()))
                 .first;
        columns[q].values.emplace_back(value);
      }
      columns[q].codes.push_back(it->second);
    }
  }
  if (!columns.empty() && columns[0].codes.size() != data.num_records) return InputChanged();
  return columns;
}

// Writes the released rows into `writer` (not committed): the input re-read once more, the QID
// values of each kept record taken from `released`, every other released value copied verbatim.
absl::Status WriteReleasedRows(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                               const std::vector<randomization::CategoricalColumn>& released,
                               table::CsvWriter& writer) {
  const std::vector<int> columns = engine::ReleasedColumns(spec, data, /*spec_order=*/false);
  std::vector<int> qid_of_column(data.header.size(), -1);
  for (size_t q = 0; q < data.qids.size(); ++q) {
    qid_of_column[data.qids[q].csv_column] = static_cast<int>(q);
  }
  std::vector<std::string_view> row;
  row.reserve(columns.size());
  for (int c : columns) row.push_back(data.header[c]);
  writer.WriteRow(row);
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::ReopenSource(data));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return InputChanged();
  size_t line = 0, record = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    if (line >= data.kept.size() || fields.size() != data.header.size()) return InputChanged();
    if (!data.kept[line++]) continue;
    if (record >= data.num_records) return InputChanged();
    row.clear();
    for (int c : columns) {
      const int q = qid_of_column[c];
      row.push_back(q < 0 ? fields[c]
                          : std::string_view(released[q].values[released[q].codes[record]]));
    }
    writer.WriteRow(row);
    ++record;
  }
  if (record != data.num_records) return InputChanged();
  return absl::OkStatus();
}

const char* SelectionName(randomization::AttributeSelection selection) {
  return selection == randomization::AttributeSelection::kEntropyWeighted ? "entropy" : "uniform";
}

}  // namespace

absl::StatusOr<RandomizeSummary> RandomizeTable(const RandomizeOptions& options) {
  const auto start = Clock::now();
  RandomizeSummary summary;
  // Outputs never replace what the run reads, nor each other: checked before anything is read.
  const std::vector<base::NamedPath> outputs = {{"--output", options.output_path},
                                                {"--report", options.report_path}};
  RETURN_IF_ERROR(base::CheckDistinctOutputs(
      outputs, {{"--input", options.input_path}, {"--spec", options.spec_path}}));
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(options.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  std::vector<base::NamedPath> taxonomies;
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) {
      taxonomies.emplace_back(absl::StrCat("the taxonomy of attribute '", a.name(), "'"),
                              a.taxonomy());
    }
  }
  RETURN_IF_ERROR(base::CheckDistinctOutputs(outputs, taxonomies));
  summary.job_name = spec.name();
  ASSIGN_OR_RETURN(table::Dataset data, table::LoadDataset(spec, options.input_path));
  summary.records_in = data.records_in;
  summary.records_dropped = data.records_dropped;
  summary.records_out = data.num_records;
  ASSIGN_OR_RETURN(std::vector<randomization::CategoricalColumn> original, ReadQidValues(data));
  // Created now so that a missing output directory fails before the work.
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvWriter> output,
                   table::CsvWriter::Create(options.output_path, ','));
  summary.timings_seconds["read"] = SecondsSince(start);

  const auto randomize_start = Clock::now();
  const int k = options.attributes_per_record;
  const randomization::AttributeSelection selection =
      options.selection.value_or(k == 1 ? randomization::AttributeSelection::kEntropyWeighted
                                        : randomization::AttributeSelection::kUniform);
  ASSIGN_OR_RETURN(summary.plan, randomization::PlanRandomization(original, k, selection));
  for (const randomization::CategoricalColumn& c : original) {
    summary.qid_names.push_back(c.name);
    summary.distinct_values.push_back(c.values.size());
  }
  summary.probabilistic_anonymity = randomization::ProbabilisticAnonymity(summary.plan);
  std::unique_ptr<randomization::RandomSource> random =
      options.seed.has_value() ? randomization::RandomSource::Seeded(*options.seed)
                               : randomization::RandomSource::Unpredictable();
  summary.reproducible = random->reproducible();
  ASSIGN_OR_RETURN(std::vector<randomization::CategoricalColumn> released,
                   Randomize(original, summary.plan, *random));
  summary.timings_seconds["randomize"] = SecondsSince(randomize_start);

  const auto measure_start = Clock::now();
  if (options.prior_knowledge_bound) {
    ASSIGN_OR_RETURN(summary.prior_knowledge_bound,
                     Proposition10Bound(original, released, summary.plan));
  }
  for (int length : options.bias_lengths) {
    ASSIGN_OR_RETURN(randomization::RelativeBias bias,
                     MeasureRelativeBias(original, released, summary.plan, length));
    summary.relative_bias.push_back(bias);
  }
  if (options.amplification) {
    ASSIGN_OR_RETURN(summary.amplification,
                     randomization::CAmplification(original, released, summary.plan));
  }
  for (int length : options.variance_lengths) {
    // The measured variance redraws from seeds of its own (seed + 1, ...), never the release's.
    ASSIGN_OR_RETURN(randomization::RelativeVariance v,
                     MeasureRelativeVariance(original, summary.plan, length, options.variance_runs,
                                             options.seed.value_or(0) + 1000003));
    summary.relative_variance.push_back(v);
  }
  summary.timings_seconds["measure"] = SecondsSince(measure_start);

  const auto write_start = Clock::now();
  RETURN_IF_ERROR(WriteReleasedRows(spec, data, released, *output));
  summary.timings_seconds["write"] = SecondsSince(write_start);
  summary.timings_seconds["total"] = SecondsSince(start);
  // The report first, the table last, as `fedanon anonymize` does: a failure leaves neither.
  if (!options.report_path.empty()) {
    RETURN_IF_ERROR(
        table::WriteFileAtomically(options.report_path, RandomizeSummaryToJson(summary)));
  }
  if (absl::Status committed = output->Commit(); !committed.ok()) {
    if (!options.report_path.empty()) ::unlink(options.report_path.c_str());
    return committed;
  }
  return summary;
}

std::string RandomizeSummaryToJson(const RandomizeSummary& summary) {
  nlohmann::ordered_json j;
  j["job_name"] = summary.job_name;
  j["version"] = std::string(base::VersionLine("fedanon"));
  j["method"] = "random anonymization (yang2010)";
  j["records_in"] = summary.records_in;
  j["records_dropped"] = summary.records_dropped;
  j["records_out"] = summary.records_out;
  j["attributes_per_record"] = summary.plan.attributes_per_record;
  j["selection"] = SelectionName(summary.plan.selection);
  j["reproducible"] = summary.reproducible;
  nlohmann::ordered_json qids = nlohmann::ordered_json::array();
  for (size_t i = 0; i < summary.qid_names.size(); ++i) {
    nlohmann::ordered_json q;
    q["name"] = summary.qid_names[i];
    q["distinct_values"] = summary.distinct_values[i];
    q["entropy"] = summary.plan.entropies[i];
    q["selection_probability"] = summary.plan.probabilities[i];
    qids.push_back(std::move(q));
  }
  j["qid"] = std::move(qids);
  j["probabilistic_anonymity"] = summary.probabilistic_anonymity;
  if (summary.prior_knowledge_bound.has_value()) {
    j["prior_knowledge_bound"] = {{"max", summary.prior_knowledge_bound->max},
                                  {"mean", summary.prior_knowledge_bound->mean}};
  }
  nlohmann::ordered_json bias = nlohmann::ordered_json::array();
  for (const randomization::RelativeBias& b : summary.relative_bias) {
    bias.push_back({{"length", b.length},
                    {"attribute_sets", b.attribute_sets},
                    {"combinations", b.combinations},
                    {"measured", b.measured},
                    {"predicted", b.predicted}});
  }
  j["relative_bias"] = std::move(bias);
  if (summary.amplification.has_value()) {
    j["c_amplification"] = {{"max", summary.amplification->max},
                            {"mean", summary.amplification->mean}};
  }
  nlohmann::ordered_json variance = nlohmann::ordered_json::array();
  for (const randomization::RelativeVariance& v : summary.relative_variance) {
    variance.push_back({{"length", v.length},
                        {"combinations", v.combinations},
                        {"runs", v.runs},
                        {"eq11", v.eq11},
                        {"independent", v.independent},
                        {"measured", v.measured}});
  }
  if (!summary.relative_variance.empty()) j["relative_variance"] = std::move(variance);
  j["timings_seconds"] = summary.timings_seconds;
  return j.dump(2) + "\n";
}

std::string RandomizeSummaryToText(const RandomizeSummary& summary) {
  const int k = summary.plan.attributes_per_record;
  std::string text =
      absl::StrCat(summary.records_out, " records, ", summary.qid_names.size(), " QID attributes, ",
                   k, k == 1 ? " attribute" : " attributes", " per record (",
                   k == 1 ? "Algorithm 1, " : "Algorithm 2, ",
                   summary.plan.selection == randomization::AttributeSelection::kEntropyWeighted
                       ? "entropy-weighted selection, Proposition 7"
                       : "uniform selection",
                   ")\n");
  absl::StrAppendFormat(&text, "probabilistic anonymity Pa(D') = %.3f (%s)\n",
                        summary.probabilistic_anonymity,
                        k == 1 ? "Eq. 1" : "Eq. 1 over the C(m,k) attribute sets");
  if (summary.prior_knowledge_bound.has_value()) {
    absl::StrAppendFormat(&text,
                          "Proposition 10 bound on guessing a record's original QID values: max "
                          "%.4f, mean %.4f\n",
                          summary.prior_knowledge_bound->max, summary.prior_knowledge_bound->mean);
  }
  for (const randomization::RelativeBias& b : summary.relative_bias) {
    absl::StrAppendFormat(&text,
                          "relative bias of support, length %d (%u attribute sets, %u "
                          "combinations): measured %.3f%%, predicted %.3f%%\n",
                          b.length, b.attribute_sets, b.combinations, 100 * b.measured,
                          100 * b.predicted);
  }
  if (summary.amplification.has_value()) {
    absl::StrAppendFormat(&text, "c-amplification (Definition 8): max %.4f, mean %.4f\n",
                          summary.amplification->max, summary.amplification->mean);
  }
  for (const randomization::RelativeVariance& v : summary.relative_variance) {
    absl::StrAppendFormat(&text,
                          "variance of R(q), length %d (%u combinations): Eq. 11 %.6g, "
                          "independent records %.6g, measured over %d runs %.6g\n",
                          v.length, v.combinations, v.eq11, v.independent, v.runs, v.measured);
  }
  absl::StrAppendFormat(&text, "%.3f s", summary.timings_seconds.at("total"));
  return text;
}

// ---------------------------------------------------------------------------------------------
// The command line

namespace {

struct RandomizeFlags {
  RandomizeOptions options;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string selection;
  bool quiet = false;
};

absl::Status RunRandomizeCommand(RandomizeFlags flags) {
  RandomizeOptions& o = flags.options;
  if (flags.seed_given) o.seed = flags.seed;
  if (!flags.selection.empty()) {
    o.selection = flags.selection == "entropy" ? randomization::AttributeSelection::kEntropyWeighted
                                               : randomization::AttributeSelection::kUniform;
  }
  // Combinations the paper does not define are usage errors.
  if (o.attributes_per_record > 1 &&
      o.selection == randomization::AttributeSelection::kEntropyWeighted) {
    return server::UsageError(
        "--selection entropy picks one attribute per record (Proposition 7); Algorithm 2 selects "
        "its attributes uniformly");
  }
  if (o.attributes_per_record > 1 && o.prior_knowledge_bound) {
    return server::UsageError(
        "--prior-knowledge-bound (Proposition 10) is defined for one attribute per record");
  }
  ASSIGN_OR_RETURN(const RandomizeSummary summary, RandomizeTable(o));
  if (!flags.quiet) {
    if (summary.reproducible) {
      std::cerr << "fedanon randomize: seeded run: anyone who knows the seed can redo and undo "
                   "this randomization; do not publish it\n";
    }
    std::cerr << "fedanon randomize: " << RandomizeSummaryToText(summary) << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

server::CommandAction DeclareRandomizeCommand(CLI::App* command) {
  auto flags = std::make_shared<RandomizeFlags>();
  RandomizeOptions& o = flags->options;
  command->add_option("--spec", o.spec_path, "Job spec (YAML); its QID attributes are randomized")
      ->required();
  command->add_option("--input", o.input_path, "Input table (CSV with header)")->required();
  command->add_option("--output", o.output_path, "Randomized table to write (CSV)")->required();
  command->add_option("--report", o.report_path, "JSON report to write");
  command
      ->add_option("--attributes-per-record", o.attributes_per_record,
                   "QID values replaced per record: 1 = Algorithm 1, more = Algorithm 2")
      ->check(CLI::PositiveNumber);
  CLI::Option* seed =
      command->add_option("--seed", flags->seed,
                          "Reproducible run from this seed (tests, experiments; never publish it). "
                          "Default: OpenSSL's CSPRNG");
  command
      ->add_option("--selection", flags->selection,
                   "How the attribute of a record is chosen: entropy (p_i ~ e^Entropy, "
                   "Proposition 7; default for 1 per record) or uniform")
      ->check(CLI::IsMember({"entropy", "uniform"}));
  command->add_flag("--prior-knowledge-bound", o.prior_knowledge_bound,
                    "Report the Proposition 10 bound (1 attribute per record only)");
  command
      ->add_option("--bias-length", o.bias_lengths,
                   "Report the relative bias of supports of value combinations of this length "
                   "(repeatable)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--c-amplification", o.amplification,
                    "Report the c-amplification of Definition 8 (1 attribute per record only)");
  command
      ->add_option("--variance-length", o.variance_lengths,
                   "Report the variance of R(q) for value combinations of this length: Eq. 11, "
                   "exact for independent records, and measured (1 attribute per record only; "
                   "repeatable)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--variance-runs", o.variance_runs,
                   "Randomizations behind the measured variance (default 20)")
      ->check(CLI::Range(2, 100000));
  command->add_flag("--quiet", flags->quiet, "No summary on stderr");
  return [flags, seed] {
    flags->seed_given = seed->count() > 0;
    return server::ExitCode(RunRandomizeCommand(*flags), "fedanon randomize");
  };
}

}  // namespace fedanon::cli
