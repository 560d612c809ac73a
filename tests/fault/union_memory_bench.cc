// The secure union's memory benchmark (issue #47; run by hand or by bench/union_memory.sh, not
// registered in CTest: it prints figures). A horizontal job through real daemons whose recipient
// is hospital-a, so that every released row travels the secure union: each party's hop, the
// leader's relay and the recipient's delivery. Prints the job's wall time, the rows the
// recipient wrote, and the peak resident memory (VmHWM) of the leader and of every party.
// FEDANON_UNION_ROWS: the records in all (default 300,000, split over three parties);
// FEDANON_UNION_MESSAGE_LIMIT: the federation's max_message_bytes (default: the daemons' 64 MiB).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tests/fault/fault_federation.h"

namespace fedanon::testing {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  int out = 0;
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

size_t Lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

TEST(UnionMemory, ARecipientPartysJobThroughTheSecureUnion) {
  FaultFederationOptions options;
  options.rows = EnvInt("FEDANON_UNION_ROWS", 300000);
  options.direct = true;
  if (const int limit = EnvInt("FEDANON_UNION_MESSAGE_LIMIT", 0); limit > 0) {
    options.leader_yaml_extra = absl::StrCat("max_message_bytes: ", limit, "\n");
  }
  auto fed = std::make_unique<FaultFederation>(options);
  ASSERT_TRUE(fed->Start().ok());
  const std::string recipient = fed->parties()[0];
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job = fed->Submit({}, 3600, recipient);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<fedanon::v1::JobInfo> end = fed->WaitForEnd(*job, absl::Hours(1));
  ASSERT_TRUE(end.ok()) << end.status();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_EQ(end->state(), fedanon::v1::JOB_STATE_DONE) << end->failure_reason();
  std::string peaks = absl::StrFormat("leader %.0f MiB", PeakRssMiB(fed->leader_pid()));
  for (int i = 0; i < static_cast<int>(fed->parties().size()); ++i) {
    absl::StrAppendFormat(&peaks, ", %s %.0f MiB", fed->parties()[static_cast<size_t>(i)],
                          PeakRssMiB(fed->party_pid(i)));
  }
  const size_t written = Lines(fed->party_output_dir(0) + "/" + *job + ".csv");
  std::printf("[ union-memory ] rows=%d recipient=%s job_s=%.1f rows_written=%zu peak RSS: %s\n",
              options.rows, recipient.c_str(), seconds, written > 0 ? written - 1 : 0,
              peaks.c_str());
  EXPECT_EQ(written, static_cast<size_t>(options.rows) + 1);
}

}  // namespace
}  // namespace fedanon::testing
