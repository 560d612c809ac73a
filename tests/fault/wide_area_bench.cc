// The wide-area benchmark (issue #47; run by bench/wide_area.sh, not registered in CTest: it
// prints figures). Real daemons as in the fault suite, each party dialling the leader through its
// own TcpProxy; every job runs twice in the same federation: over plain loopback (the proxies
// relay at once) and over a wide-area link (LinkProfile: delay, jitter, rate, stalls, on every
// party's link). For each job it prints both wall times (submission to the job's end, as an admin
// sees it), the leader's count of the job's calls and waves (its end-of-run log line,
// leader/call_counter.h), and the floor the link allows:
//   floor = loopback wall + waves x RTT + critical-path bytes / rate + stall time on the path,
// then whether the wide-area run is within 1.5x of it, and that both runs released the same rows.
//
// The link, from FEDANON_WAN (defaults shown): "rtt_ms=50,jitter_ms=5,mbit=50,stall_every_s=30,
// stall_ms=1000,seed=1". The jobs (gtest filter): WideArea.HorizontalGlobal and
// WideArea.HorizontalLocal (UCI Adult from ../shared split over three parties with the horizontal
// federation tests' spec, or, when it is absent, gen-data's 3-party table at Adult's size, 45,222
// records; the second with `recoding: local`) and WideArea.Vertical (gen-data's 2-party vertical
// job, 200,000 records: FEDANON_WAN_VERTICAL_ROWS).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/fault/fault_federation.h"
#include "tests/fault/tcp_proxy.h"
#include "tests/support/adult_data.h"

namespace fedanon::testing {
namespace {

constexpr uint32_t kRoundTimeoutSeconds = 300;
constexpr int kAdultRecords = 45222;

struct Wan {
  double rtt_ms = 50;
  double jitter_ms = 5;
  double mbit = 50;
  double stall_every_s = 30;
  double stall_ms = 1000;
  uint64_t seed = 1;

  LinkProfile Link(int party) const {
    return {.one_way_delay = absl::Milliseconds(rtt_ms / 2),
            .jitter = absl::Milliseconds(jitter_ms / 2),
            .bytes_per_second = mbit * 1e6 / 8,
            .stall_every = absl::Seconds(stall_every_s),
            .stall_length = absl::Milliseconds(stall_ms),
            .seed = seed + static_cast<uint64_t>(party)};
  }
};

Wan WanFromEnvironment() {
  Wan wan;
  const char* env = std::getenv("FEDANON_WAN");
  if (env == nullptr) return wan;
  for (absl::string_view item : absl::StrSplit(env, ',', absl::SkipEmpty())) {
    const std::vector<std::string> kv = absl::StrSplit(item, '=');
    double value = 0;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &value)) {
      ADD_FAILURE() << "FEDANON_WAN: not key=number: " << item;
      continue;
    }
    const std::map<std::string, double*> keys = {{"rtt_ms", &wan.rtt_ms},
                                                 {"jitter_ms", &wan.jitter_ms},
                                                 {"mbit", &wan.mbit},
                                                 {"stall_every_s", &wan.stall_every_s},
                                                 {"stall_ms", &wan.stall_ms}};
    if (kv[0] == "seed") {
      wan.seed = static_cast<uint64_t>(value);
    } else if (auto it = keys.find(kv[0]); it != keys.end()) {
      *it->second = value;
    } else {
      ADD_FAILURE() << "FEDANON_WAN: unknown key " << kv[0];
    }
  }
  return wan;
}

// The leader's end-of-run line for a job (leader/call_counter.h).
struct Calls {
  uint64_t calls = 0, waves = 0, sent = 0, received = 0, critical = 0;
};

// One run of the job: what the admin saw and what the leader and the links counted.
struct Run {
  double wall_seconds = 0;
  std::string rows;  // the released table's data rows, sorted
  Calls calls;
  LinkStats link;            // summed over the parties' proxies
  uint64_t secure_sums = 0;  // the job report's (horizontal jobs)
};

absl::StatusOr<Calls> CallsOf(FaultFederation& fed, const std::string& job_id) {
  const std::regex line("job=" + job_id +
                        " round=\\d+ calls to parties: (\\d+) in (\\d+) waves [^,]*, (\\d+) bytes "
                        "sent, (\\d+) received, (\\d+) on the critical path");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {  // logged once the job's run returned
    const std::string log = fed.Log("leader");
    std::smatch m;
    if (std::regex_search(log, m, line)) {
      return Calls{std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]),
                   std::stoull(m[5])};
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::NotFoundError("no calls line for " + job_id + " in the leader's log");
}

LinkStats Sum(FaultFederation& fed) {
  LinkStats sum;
  for (size_t i = 0; i < fed.parties().size(); ++i) {
    const LinkStats s = fed.proxy(static_cast<int>(i)).stats();
    sum.bytes_up += s.bytes_up;
    sum.bytes_down += s.bytes_down;
    sum.stalls_hit += s.stalls_hit;
    sum.stall_time += s.stall_time;
  }
  return sum;
}

absl::StatusOr<Run> RunJob(FaultFederation& fed, const std::string& spec_path) {
  Run run;
  const LinkStats before = Sum(fed);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> job = fed.Submit({}, kRoundTimeoutSeconds, "", spec_path);
  if (!job.ok()) return job.status();
  absl::StatusOr<fedanon::v1::JobInfo> end = fed.WaitForEnd(*job, absl::Minutes(30));
  if (!end.ok()) return end.status();
  run.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  run.secure_sums = end->report().secure_sums();
  if (end->state() != fedanon::v1::JOB_STATE_DONE) {
    return absl::InternalError(*job + " did not end done: " + end->failure_reason());
  }
  absl::StatusOr<std::string> csv = fed.Result(*job);
  if (!csv.ok()) return csv.status();
  std::vector<std::string> rows = absl::StrSplit(*csv, '\n', absl::SkipEmpty());
  if (!rows.empty()) rows.erase(rows.begin());  // the header
  std::sort(rows.begin(), rows.end());
  run.rows = absl::StrJoin(rows, "\n");
  absl::StatusOr<Calls> calls = CallsOf(fed, *job);
  if (!calls.ok()) return calls.status();
  run.calls = *calls;
  const LinkStats after = Sum(fed);
  run.link = {after.bytes_up - before.bytes_up, after.bytes_down - before.bytes_down,
              after.stalls_hit - before.stalls_hit, after.stall_time - before.stall_time};
  return run;
}

// UCI Adult (../shared/datasets/adult) split over the federation's three parties (record i to
// party i mod 3) with tests/support/adult_data.h's spec (plus `suffix`), written beside each
// party's data and the harness's specs; the spec's path. "" when Adult is absent.
std::string InstallAdult(FaultFederation& fed, const std::string& suffix) {
  const std::string csv = AdultDir() + "/adult_clean.csv";
  std::ifstream in(csv);
  if (!in) return "";
  std::string header, line;
  std::getline(in, header);
  std::vector<std::ofstream> tables;
  for (size_t i = 0; i < fed.parties().size(); ++i) {
    tables.emplace_back(fed.party_data_dir(static_cast<int>(i)) + "/table.csv");
    tables.back() << header << "\n";
  }
  for (size_t n = 0; std::getline(in, line); ++n) tables[n % tables.size()] << line << "\n";
  for (const auto& [file, text] : AdultTaxonomies()) {
    std::ofstream(fed.gen_dir() + "/" + file) << text;
    for (size_t i = 0; i < fed.parties().size(); ++i) {
      std::ofstream(fed.party_data_dir(static_cast<int>(i)) + "/" + file) << text;
    }
  }
  const std::string spec = fed.gen_dir() + "/adult.yaml";
  std::ofstream(spec) << kAdultHorizontalSpec << suffix;
  return spec;
}

// `adult_suffix` set: the job is UCI Adult's (when present) with the suffix appended to its spec.
void Measure(const std::string& name, const FaultFederationOptions& options,
             const std::string* adult_suffix = nullptr) {
  const Wan wan = WanFromEnvironment();
  FaultFederation fed(options);
  ASSERT_TRUE(fed.Start().ok());
  std::string spec;
  if (adult_suffix != nullptr) {
    spec = InstallAdult(fed, *adult_suffix);
    ASSERT_FALSE(spec.empty()) << "UCI Adult not found under " << AdultDir();
  }
  absl::StatusOr<Run> loopback = RunJob(fed, spec);
  ASSERT_TRUE(loopback.ok()) << loopback.status();
  for (size_t i = 0; i < fed.parties().size(); ++i) {
    fed.proxy(static_cast<int>(i)).SetLink(wan.Link(static_cast<int>(i)));
  }
  absl::StatusOr<Run> wide = RunJob(fed, spec);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->rows, loopback->rows) << name << ": the two runs released different rows";

  const double rtt = wan.rtt_ms / 1000;
  const double rate = wan.mbit * 1e6 / 8;
  const double waves_s = static_cast<double>(wide->calls.waves) * rtt;
  const double bytes_s = static_cast<double>(wide->calls.critical) / rate;
  const double stall_s = absl::ToDoubleSeconds(wide->link.stall_time);
  const double floor = loopback->wall_seconds + waves_s + bytes_s + stall_s;
  const double ratio = wide->wall_seconds / floor;
  std::printf(
      "%s\n"
      "  link: RTT %.0f ms (+0..%.0f ms jitter), %.0f Mbit/s, a %.0f ms stall every %.0f s on "
      "average, per party\n"
      "  loopback wall %8.2f s; calls %llu in %llu waves\n"
      "  wide-area wall %7.2f s; calls %llu in %llu waves; %.2f MB sent, %.2f MB received by the "
      "leader (protobuf), %.2f MB on the critical path; on the links %.2f MB up, %.2f MB down; "
      "%d stall(s) hit (%.1f s)\n"
      "  floor %8.2f s = loopback %.2f + waves x RTT %.2f + critical bytes / rate %.2f + stalls "
      "%.1f\n"
      "  wide-area / floor %.2fx (%s 1.5x); wide-area / loopback %.2fx; same rows: %s "
      "(%zu bytes); secure sums %llu\n",
      name.c_str(), wan.rtt_ms, wan.jitter_ms, wan.mbit, wan.stall_ms, wan.stall_every_s,
      loopback->wall_seconds, static_cast<unsigned long long>(loopback->calls.calls),
      static_cast<unsigned long long>(loopback->calls.waves), wide->wall_seconds,
      static_cast<unsigned long long>(wide->calls.calls),
      static_cast<unsigned long long>(wide->calls.waves), wide->calls.sent / 1e6,
      wide->calls.received / 1e6, wide->calls.critical / 1e6, wide->link.bytes_up / 1e6,
      wide->link.bytes_down / 1e6, wide->link.stalls_hit, stall_s, floor, loopback->wall_seconds,
      waves_s, bytes_s, stall_s, ratio, ratio <= 1.5 ? "within" : "OVER",
      wide->wall_seconds / loopback->wall_seconds, wide->rows == loopback->rows ? "yes" : "no",
      wide->rows.size(), static_cast<unsigned long long>(wide->secure_sums));
  std::fflush(stdout);
  EXPECT_LE(ratio, 1.5) << name << ": the wide-area run is over 1.5x its floor";
}

FaultFederationOptions Options(int parties, int rows, bool vertical, const std::string& suffix) {
  FaultFederationOptions options;
  options.parties = parties;
  options.rows = rows;
  options.data_seed = 1;
  options.vertical = vertical;
  options.spec_suffix = suffix;
  return options;
}

// UCI Adult when ../shared holds it (45,222 records over `parties` parties), else gen-data's
// Adult-like table of the same size. Two parties run the final check by secure comparison.
void MeasureHorizontal(const std::string& recoding, const std::string& suffix, int parties = 3) {
  if (std::filesystem::exists(AdultDir() + "/adult_clean.csv")) {
    Measure(absl::StrCat("horizontal ", recoding, ", ", parties,
                         " parties, UCI Adult (45,222 records, mohammed2010's spec)"),
            Options(parties, 300, false, ""), &suffix);
  } else {
    Measure(absl::StrCat("horizontal ", recoding, ", ", parties,
                         " parties, 45,222 records (gen-data at UCI Adult's size: Adult not "
                         "found)"),
            Options(parties, kAdultRecords, false, suffix));
  }
}

TEST(WideArea, HorizontalGlobal) { MeasureHorizontal("global", ""); }

TEST(WideArea, HorizontalLocal) { MeasureHorizontal("local", "recoding: local\n"); }

// The most common federation: two hospitals. Its final check runs by secure comparison (#44).
TEST(WideArea, HorizontalGlobalTwoParties) { MeasureHorizontal("global", "", 2); }

TEST(WideArea, Vertical) {
  int rows = 200000;
  if (const char* env = std::getenv("FEDANON_WAN_VERTICAL_ROWS"); env != nullptr) {
    ASSERT_TRUE(absl::SimpleAtoi(env, &rows)) << env;
  }
  Measure(absl::StrCat("vertical global, 2 parties, ", rows, " records (gen-data)"),
          Options(2, rows, true, ""));
}

}  // namespace
}  // namespace fedanon::testing
