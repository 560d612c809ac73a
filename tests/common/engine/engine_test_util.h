// Helpers for engine tests (tests only): write a job (spec, table, taxonomies) to a temporary
// directory, run `Anonymize` on it, read the output back and hand everything to the independent
// brute-force checker.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "app/anonymize.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/taxonomy.h"
#include "tests/checker/brute_force_checker.h"

namespace fedanon::testing {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

inline std::string FreshDir(const std::string& name) {
  static int counter = 0;
  const std::string dir =
      std::filesystem::path(::testing::TempDir()) /
      ("fedanon_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string ToCsv(const Table& t) {
  std::string s = absl::StrJoin(t.header, ",") + "\n";
  for (const auto& r : t.rows) s += absl::StrJoin(r, ",") + "\n";
  return s;
}

inline absl::StatusOr<Table> ReadCsvTable(const std::string& path) {
  auto reader = table::CsvReader::Open(path);
  if (!reader.ok()) return reader.status();
  Table t;
  std::vector<std::string_view> fields;
  bool first = true;
  while (true) {
    auto more = (*reader)->Next(&fields);
    if (!more.ok()) return more.status();
    if (!*more) break;
    std::vector<std::string> row(fields.begin(), fields.end());
    if (first) {
      t.header = std::move(row);
      first = false;
    } else {
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

// A job laid out in a directory: job.yaml, table.csv, tax/<attr>.csv.
struct Job {
  std::string dir;
  std::string spec_path;
  std::string input_path;
  std::string output_path;
  std::string report_path;
};

inline Job WriteJob(const std::string& name, const std::string& spec_yaml, const Table& table,
                    const std::map<std::string, std::string>& taxonomies = {}) {
  Job job;
  job.dir = FreshDir(name);
  job.spec_path = job.dir + "/job.yaml";
  job.input_path = job.dir + "/table.csv";
  job.output_path = job.dir + "/out.csv";
  job.report_path = job.dir + "/report.json";
  WriteText(job.spec_path, spec_yaml);
  WriteText(job.input_path, ToCsv(table));
  for (const auto& [file, text] : taxonomies) WriteText(job.dir + "/" + file, text);
  return job;
}

inline absl::StatusOr<fedanon::v1::Report> RunJob(const Job& job, uint32_t max_rounds = 0) {
  app::AnonymizeOptions opts;
  opts.spec_path = job.spec_path;
  opts.input_path = job.input_path;
  opts.output_path = job.output_path;
  opts.report_path = job.report_path;
  opts.max_rounds = max_rounds;
  return app::Anonymize(opts);
}

// Builds the checker's input from the job's files (raw rows restricted to the output columns,
// with rows holding the missing token dropped as `missing: drop` does).
inline absl::StatusOr<CheckerInput> MakeCheckerInput(const Job& job) {
  auto spec = spec::LoadJobSpec(job.spec_path);
  if (!spec.ok()) return spec.status();
  auto raw = ReadCsvTable(job.input_path);
  if (!raw.ok()) return raw.status();
  auto out = ReadCsvTable(job.output_path);
  if (!out.ok()) return out.status();
  CheckerInput in;
  in.spec = *spec;
  in.header = out->header;
  std::vector<int> cols;
  for (const auto& h : out->header) {
    cols.push_back(static_cast<int>(std::find(raw->header.begin(), raw->header.end(), h) -
                                    raw->header.begin()));
  }
  std::vector<int> listed;
  for (const auto& a : spec->attributes()) {
    auto it = std::find(raw->header.begin(), raw->header.end(), a.name());
    if (it != raw->header.end()) listed.push_back(static_cast<int>(it - raw->header.begin()));
  }
  for (const auto& r : raw->rows) {
    bool missing = false;
    if (spec->missing() != fedanon::v1::MISSING_KEEP) {
      for (int c : listed) missing |= r[c] == spec->missing_token();
    }
    if (missing) continue;
    std::vector<std::string> row;
    for (int c : cols) row.push_back(r[c]);
    in.raw.push_back(std::move(row));
  }
  in.anonymized = out->rows;
  for (const auto& a : spec->attributes()) {
    const bool sensitive = a.role() == fedanon::v1::ROLE_SENSITIVE;
    if ((a.role() != fedanon::v1::ROLE_QID && !sensitive) || a.taxonomy().empty()) continue;
    auto tax = table::Taxonomy::LoadArx(a.taxonomy(), a.name());
    if (!tax.ok()) return tax.status();
    // A sensitive attribute's taxonomy: t-closeness's hierarchical distance.
    auto& paths = sensitive ? in.sensitive_taxonomy : in.taxonomy_paths[a.name()];
    for (size_t n = 0; n < tax->size(); ++n) {
      const auto id = static_cast<table::Taxonomy::NodeId>(n);
      if (!tax->is_leaf(id)) continue;
      std::vector<std::string> path;
      for (auto x = id; x != table::Taxonomy::kNoNode; x = tax->parent(x)) {
        path.push_back(tax->label(x));
      }
      paths[tax->label(id)] = path;
    }
  }
  return in;
}

// splitmix64: a tiny deterministic generator, so random cases are the same on every platform.
struct SplitMix64 {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Uniform(int lo, int hi) { return lo + static_cast<int>(Next() % (hi - lo + 1)); }
  bool Coin(double p) { return static_cast<double>(Next() % 1000000) / 1e6 < p; }
};

// Expands a compressed table row "<values> x count" with a class frequency like "2Y3N".
inline void AddCompressed(Table* t, const std::vector<std::string>& values,
                          const std::vector<std::pair<std::string, int>>& class_counts,
                          int class_column) {
  for (const auto& [cls, n] : class_counts) {
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> row = values;
      row.insert(row.begin() + class_column, cls);
      t->rows.push_back(row);
    }
  }
}

}  // namespace fedanon::testing
