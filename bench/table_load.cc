// Loads one table as a party does at prepare, from a CSV file or from PostgreSQL, and prints the
// record count and the wall time; run under `/usr/bin/time -v` for the peak RSS (docs/postgres.md,
// "Reading speed and memory").
//   table_load SPEC.yaml csv PATH
//   table_load SPEC.yaml postgres CONNINFO TABLE
#include <chrono>
#include <cstdio>
#include <string>

#include "common/spec/job_spec_loader.h"
#include "common/table/dataset.h"
#include "common/table_postgres/postgres_source.h"

int main(int argc, char** argv) {
  const std::string kind = argc >= 3 ? argv[2] : "";
  if (!((kind == "csv" && argc == 4) || (kind == "postgres" && argc == 5))) {
    std::fprintf(stderr,
                 "usage: table_load SPEC.yaml csv PATH | table_load SPEC.yaml postgres CONNINFO "
                 "TABLE\n");
    return 2;
  }
  auto spec = fedanon::spec::LoadJobSpec(argv[1]);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", std::string(spec.status().message()).c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<fedanon::table::Dataset> data =
      kind == "csv" ? fedanon::table::LoadDataset(*spec, argv[3])
                    : fedanon::table_postgres::LoadDatasetFromPostgres(*spec, {.name = "bench",
                                                                               .conninfo = argv[3],
                                                                               .table = argv[4],
                                                                               .query = "",
                                                                               .push_down = false});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", std::string(data.status().message()).c_str());
    return 1;
  }
  std::printf("%s: %zu records in %.2f s\n", kind.c_str(), data->num_records, seconds);
  return 0;
}
