#include "app/anonymize.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "app/job_assessment.h"
#include "app/table_risk.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/local_recoding.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/released_rows.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/risk/risk_analysis.h"
#include "common/risk/risk_table.h"
#include "common/sequential/sequential_anonymize.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"

namespace fedanon::app {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Fails early (before the possibly long run) when the directory `path` is to be written in is
// missing, so that the error does not come only after the anonymization.
absl::Status CheckOutputDirectory(const std::string& path, const char* what) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) return absl::OkStatus();  // the current directory
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("cannot write the ", what, " '", path, "': directory '",
                                            dir.string(), "' does not exist"));
  }
  return absl::OkStatus();
}

// Writes the anonymized table to a temporary file (re-reading the input so that non-QID values
// are copied verbatim) and returns the writer uncommitted: the caller commits it once every other
// output is written, so that a failure leaves nothing behind.
absl::StatusOr<std::unique_ptr<table::CsvWriter>> WriteOutput(
    const fedanon::v1::JobSpec& spec, const table::Dataset& data, const engine::Tips* tips,
    const std::vector<engine::AttributeHierarchy>& hier, const engine::LocalRecoder* local,
    const std::string& output_path) {
  const std::vector<int> columns = engine::ReleasedColumns(spec, data, /*spec_order=*/false);
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvWriter> writer,
                   table::CsvWriter::Create(output_path, ','));
  std::vector<std::string_view> header;
  header.reserve(columns.size());
  for (int c : columns) header.push_back(data.header[c]);
  writer->WriteRow(header);
  if (local != nullptr) {
    auto emit = [&](const std::vector<std::string_view>& row) { writer->WriteRow(row); };
    RETURN_IF_ERROR(engine::ForEachLocalReleasedRow(spec, data, *local, columns, emit));
  } else {
    RETURN_IF_ERROR(engine::WriteReleasedRows(spec, data, *tips, hier, columns, ',',
                                              [&](std::string_view text) {
                                                writer->WriteFormatted(text);
                                                return absl::OkStatus();
                                              }));
  }
  return writer;
}

// Frees the per-record codes of `data` (every QID's, the class's, the value columns' and the
// sensitive bits), keeping which rows were kept: once a global recoding has made its groups, the
// release is written from them (Tips) and the input's text alone. They are most of the job's
// memory (4 bytes per QID and record: 496 MiB of a 10M-record table with 13 QIDs), and the
// release's buffers would otherwise come on top of them.
void ReleaseRecordCodes(table::Dataset* data) {
  auto free_column = [](auto& column) { std::remove_reference_t<decltype(column)>().swap(column); };
  for (table::QidColumn& q : data->qids) free_column(q.codes);
  for (auto& vc : data->value_columns) free_column(vc.codes);
  free_column(data->class_codes);
  free_column(data->sensitive_bits);
}

// The steward's figures (AnonymizeOptions::assess): the input's risk from the records the job
// kept, the release's from the table written (read back before it is committed), and BE / CE /
// UE when the input is a file that can be read again.
absl::Status AssessRun(const fedanon::v1::JobSpec& spec, const table::Dataset& data,
                       const std::string& input_path, const AnonymizeOptions& options,
                       table::CsvWriter* output, fedanon::v1::Report* report) {
  const fedanon::v1::RiskOptions risk = EffectiveRiskOptions(spec, options.risk);
  ASSIGN_OR_RETURN(*report->mutable_risk_before(),
                   risk::AnalyzeRisk(risk::QidCodesOf(data), risk, options.input_path));
  ASSIGN_OR_RETURN(const std::string released, output->FlushForReading());
  evaluation::LossContext context;
  for (const table::QidColumn& q : data.qids) {
    if (q.taxonomy) context.taxonomies[q.name] = q.taxonomy;
    if (q.kind == table::QidKind::kContinuous) context.ranges[q.name] = {q.range_lo, q.range_hi};
  }
  fedanon::v1::JobSpec assessed = spec;
  *assessed.mutable_risk() = risk;
  RETURN_IF_ERROR(AssessRelease(assessed, released, context, report));
  std::error_code ec;
  if (std::filesystem::is_regular_file(input_path, ec)) {
    RETURN_IF_ERROR(AssessClassification(spec, input_path, released, report));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReportToJson(const fedanon::v1::Report& report) {
  ASSIGN_OR_RETURN(std::string json, spec::ProtoToJson(report));
  return json + "\n";
}

absl::StatusOr<fedanon::v1::Report> Anonymize(const AnonymizeOptions& options) {
  const auto start = Clock::now();
  fedanon::v1::Report report;
  report.set_version(std::string(base::VersionLine("fedanon")));

  const std::string input_path = options.input_path == "-" ? "/dev/stdin" : options.input_path;
  // Outputs never replace what the run reads, nor each other: checked before anything is read.
  std::vector<base::NamedPath> inputs = {{"--input", input_path}, {"--spec", options.spec_path}};
  for (const std::string& path : options.previous_release_paths) {
    inputs.push_back({"--previous-release", path});
  }
  const std::vector<base::NamedPath> outputs = {{"--output", options.output_path},
                                                {"--report", options.report_path},
                                                {"--html", options.html_path}};
  RETURN_IF_ERROR(base::CheckDistinctOutputs(outputs, inputs));
  ASSIGN_OR_RETURN(fedanon::v1::JobSpec spec, spec::LoadJobSpec(options.spec_path));
  RETURN_IF_ERROR(spec::ValidateJobSpec(spec));
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) {
      inputs.emplace_back(absl::StrCat("the taxonomy of attribute '", a.name(), "'"), a.taxonomy());
    }
  }
  RETURN_IF_ERROR(base::CheckDistinctOutputs(outputs, inputs));
  report.set_job_name(spec.name());
  if (spec.has_sequential() != !options.previous_release_paths.empty()) {
    return absl::InvalidArgumentError(
        spec.has_sequential()
            ? "the spec has a sequential section: give the earlier release with --previous-release"
            : "--previous-release needs a sequential section in the spec (the join's templates)");
  }
  RETURN_IF_ERROR(CheckOutputDirectory(options.output_path, "output"));
  if (!options.report_path.empty()) {
    RETURN_IF_ERROR(CheckOutputDirectory(options.report_path, "report"));
  }
  if (!options.html_path.empty()) {
    RETURN_IF_ERROR(CheckOutputDirectory(options.html_path, "page"));
  }
  ASSIGN_OR_RETURN(table::Dataset data,
                   table::LoadDataset(spec, input_path, /*schema=*/nullptr,
                                      {.max_input_bytes = options.max_input_bytes}));
  if (options.warn) {
    for (const std::string& warning : data.warnings) options.warn(warning);
  }
  report.set_records_in(data.records_in);
  report.set_records_dropped(data.records_dropped);
  (*report.mutable_timings_seconds())["read"] = SecondsSince(start);

  const auto anon_start = Clock::now();
  std::vector<engine::AttributeHierarchy> hier;
  for (const table::QidColumn& q : data.qids) hier.emplace_back(&q);
  // Local recoding keeps its own groups (local_recoding.h): no TIPS.
  const bool local = spec.recoding() == fedanon::v1::RECODING_LOCAL;
  std::unique_ptr<engine::Tips> tips =
      local ? nullptr : std::make_unique<engine::Tips>(&data, &hier);
  std::string stop_reason;
  std::unique_ptr<engine::TopDownSpecializer> engine;
  std::unique_ptr<engine::LocalRecoder> local_engine;
  engine::PrivacyModel model;
  engine::LocalCountSource source(tips.get());
  auto last_progress = Clock::now();
  if (spec.has_sequential()) {
    RETURN_IF_ERROR(sequential::RunSequentialRelease(spec, data, options.previous_release_paths,
                                                     options.max_rounds, options.progress, &hier,
                                                     tips.get(), &report));
  } else {
    ASSIGN_OR_RETURN(model, engine::BuildPrivacyModel(spec, data));
    engine::EngineOptions engine_options;
    engine_options.score = spec.score();
    engine_options.beneficial = spec.beneficial();
    engine_options.suppression_token = spec.suppression_token();
    engine_options.max_rounds = options.max_rounds;
    engine_options.numeric = engine::NumericSplitFromSpec(spec);
    if (options.progress) {
      engine_options.on_step = [&](const fedanon::v1::SpecializationStep& step, size_t groups) {
        if (std::chrono::duration<double>(Clock::now() - last_progress).count() < 1.0) return;
        last_progress = Clock::now();
        options.progress(absl::StrCat("round ", step.round(), ": specialized ", step.attribute(),
                                      " ", step.value(), " (", step.records(), " records), ",
                                      groups, " groups, ", SecondsSince(start), " s"));
      };
    }
    if (local) {
      ASSIGN_OR_RETURN(local_engine,
                       engine::LocalRecoder::Create(&data, &model, std::move(engine_options)));
      ASSIGN_OR_RETURN(stop_reason, local_engine->Run());
    } else {
      ASSIGN_OR_RETURN(engine, engine::TopDownSpecializer::Create(&data, &model, &hier, &source,
                                                                  std::move(engine_options)));
      ASSIGN_OR_RETURN(stop_reason, engine->Run());
    }
  }
  (*report.mutable_timings_seconds())["anonymize"] = SecondsSince(anon_start);
  // The assessment reads the codes again (the input's risk), the local recoding and the
  // sequential release write from them.
  const bool assess = options.assess || !options.html_path.empty() || spec.has_risk();
  if (engine != nullptr && !spec.has_sequential() && !assess) ReleaseRecordCodes(&data);

  const auto write_start = Clock::now();
  ASSIGN_OR_RETURN(
      std::unique_ptr<table::CsvWriter> output,
      WriteOutput(spec, data, tips.get(), hier, local_engine.get(), options.output_path));
  (*report.mutable_timings_seconds())["write"] = SecondsSince(write_start);

  report.set_records_out(data.num_records);
  if (engine) engine->FillReport(stop_reason, &report);
  if (local_engine) local_engine->FillReport(stop_reason, &report);
  if (assess) {
    const auto assess_start = Clock::now();
    RETURN_IF_ERROR(AssessRun(spec, data, input_path, options, output.get(), &report));
    (*report.mutable_timings_seconds())["assess"] = SecondsSince(assess_start);
  }
  (*report.mutable_timings_seconds())["total"] = SecondsSince(start);
  // The report and the page first, the table last: if they cannot be written, the table's
  // temporary file is removed by the writer's destructor; if the table cannot be committed, they
  // are removed again. The table is on its way to disk meanwhile (StartWriteOut) and is fsynced
  // in a thread of its own while they are written and committed, so that the disk's waits for
  // the three overlap (a fifth of UCI Adult's whole job on the project's machines).
  RETURN_IF_ERROR(output->StartWriteOut());
  absl::Status table_synced;
  std::thread sync_table([&] { table_synced = output->Sync(); });
  const absl::Status pages_written = [&]() -> absl::Status {
    if (!options.report_path.empty()) {
      ASSIGN_OR_RETURN(std::string report_json, ReportToJson(report));
      RETURN_IF_ERROR(table::WriteFileAtomically(options.report_path, report_json));
    }
    if (!options.html_path.empty()) {
      html_report::ReportPage page;
      page.report = report;
      page.spec = spec;
      for (const table::QidColumn& q : data.qids) {
        if (q.taxonomy) page.taxonomies[q.name] = q.taxonomy;
      }
      if (absl::Status written = WriteReportHtml(options.html_path, page); !written.ok()) {
        if (!options.report_path.empty()) ::unlink(options.report_path.c_str());
        return written;
      }
    }
    return absl::OkStatus();
  }();
  sync_table.join();
  RETURN_IF_ERROR(pages_written);
  if (!table_synced.ok()) {
    if (!options.report_path.empty()) ::unlink(options.report_path.c_str());
    if (!options.html_path.empty()) ::unlink(options.html_path.c_str());
    return table_synced;
  }
  if (absl::Status committed = output->Commit(); !committed.ok()) {
    if (!options.report_path.empty()) ::unlink(options.report_path.c_str());
    if (!options.html_path.empty()) ::unlink(options.html_path.c_str());
    return committed;
  }
  return report;
}

}  // namespace fedanon::app
