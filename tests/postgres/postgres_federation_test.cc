// A 3-party horizontal federation where one hospital reads its table from PostgreSQL and the
// recipient writes the released table into PostgreSQL (docs/postgres.md) releases exactly what
// the same federation releases from CSV files and into a CSV file: the same specialization
// sequence and the same rows. UCI Adult (../shared/datasets/adult) when present, else gen-data's
// Adult-like table; a private PostgreSQL server (tests/postgres/postgres_cluster.h), skipped
// without the server binaries. The same with two of the three hospitals in push-down mode
// (common/table_postgres/postgres_stats.h); a vertical party reading from PostgreSQL; push-down
// refused for a vertical job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/federation_test_util.h"
#include "tests/postgres/postgres_cluster.h"
#include "tests/postgres/postgres_test_data.h"
#include "tests/support/adult_data.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

struct FedData {
  std::string what;  // for the log: which data
  std::string spec_yaml;
  std::map<std::string, std::string> taxonomies;  // file name in the spec -> content
  std::vector<std::string> parts;                 // per party: its CSV table
};

// UCI Adult split round robin over 3 hospitals, or gen-data's 3-party split.
FedData MakeSetup() {
  FedData s;
  const std::string adult_dir = AdultDir();
  if (std::filesystem::exists(adult_dir + "/adult_clean.csv")) {
    s.what = "UCI Adult (" + adult_dir + ")";
    s.spec_yaml = kAdultHorizontalSpec;
    s.taxonomies = AdultTaxonomies();
    auto table = ReadCsvTable(adult_dir + "/adult_clean.csv");
    EXPECT_TRUE(table.ok()) << table.status();
    std::vector<Table> parts(3);
    for (auto& p : parts) p.header = table->header;
    for (size_t r = 0; r < table->rows.size(); ++r) parts[r % 3].rows.push_back(table->rows[r]);
    for (const auto& p : parts) s.parts.push_back(ToCsv(p));
    return s;
  }
  s.what = "gen-data's Adult-like table (UCI Adult not found at " + adult_dir + ")";
  const std::string dir = GenerateAdultLike("pg_fed_data", 6000, 3);
  s.spec_yaml = Slurp(dir + "/horizontal.yaml");
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tax")) {
    s.taxonomies["tax/" + e.path().filename().string()] = Slurp(e.path().string());
  }
  for (int p = 1; p <= 3; ++p) s.parts.push_back(Slurp(absl::StrCat(dir, "/party", p, ".csv")));
  return s;
}

// The job of `s` over `names`, hospital-a the recipient.
fedanon::v1::SubmitJobRequest HorizontalRequest(const FedData& s,
                                                const std::vector<std::string>& names) {
  fedanon::v1::SubmitJobRequest req;
  auto spec = spec::ParseJobSpecYaml(s.spec_yaml, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return req;
  *req.mutable_spec() = *spec;
  for (const auto& n : names) req.add_parties(n);
  req.set_recipient("hospital-a");
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty())
      (*req.mutable_taxonomies())[a.name()] = s.taxonomies.at(a.taxonomy());
  }
  return req;
}

struct FedRun {
  fedanon::v1::JobInfo info;
  Table released;
};

// One horizontal job over 3 in-process hospitals, hospital-a the recipient. With `cluster`:
// hospital-b reads its table from the PostgreSQL table `hospital_b` (no CSV file in its data
// directory) and hospital-a writes the release into PostgreSQL. With `push_down` as well,
// hospital-b and hospital-c (table `hospital_c`) compute their statistics in PostgreSQL
// (`mode: push-down`) and the release goes to a CSV file.
FedRun RunFederation(const FedData& s, const std::string& name, const PostgresCluster* cluster,
                     bool push_down = false, bool expect_done = true) {
  FedRun run;
  std::vector<std::map<std::string, std::string>> files(3, s.taxonomies);
  for (int p = 0; p < 3; ++p) {
    if (cluster == nullptr || (p != 1 && !(push_down && p == 2))) {
      files[p]["table.csv"] = s.parts[p];
    }
  }
  auto fed = InProcessFederation::Create(name, files, [&](party::PartyAgentOptions& o) {
    if (cluster == nullptr) return;
    if (o.name == "hospital-b" || (push_down && o.name == "hospital-c")) {
      o.postgres_tables["patients"] = {
          .name = "patients",
          .conninfo = cluster->conninfo(),
          .table = o.name == "hospital-b" ? "hospital_b" : "hospital_c",
          .query = "",
          .push_down = push_down};
      o.default_data_path = "patients";
    }
    if (o.name == "hospital-a" && !push_down) {
      o.postgres_sink = table_postgres::PostgresSink{.conninfo = cluster->conninfo(),
                                                     .table = "released.\"{job_id}\""};
    }
  });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return run;
  auto info = (*fed)->Submit(HorizontalRequest(s, (*fed)->names));
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return run;
  run.info = (*fed)->Wait(info->job_id());
  if (!expect_done) return run;
  EXPECT_EQ(run.info.state(), fedanon::v1::JOB_STATE_DONE) << run.info.failure_reason();
  const std::string csv_path =
      absl::StrCat((*fed)->dir, "/hospital-a/output/", info->job_id(), ".csv");
  if (cluster == nullptr || push_down) {
    auto t = ReadCsvTable(csv_path);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) run.released = *t;
    return run;
  }
  EXPECT_FALSE(std::filesystem::exists(csv_path)) << "the release went to PostgreSQL only";
  const std::string table = absl::StrCat("released.\"", info->job_id(), "\"");
  auto header = cluster->Query(absl::StrCat("SELECT attname FROM pg_attribute WHERE attrelid = '",
                                            table, "'::regclass AND attnum > 0 ORDER BY attnum"));
  EXPECT_TRUE(header.ok()) << header.status();
  auto rows = cluster->Query(absl::StrCat("SELECT * FROM ", table));
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!header.ok() || !rows.ok()) return run;
  run.released.header = *header;
  for (const auto& r : *rows) run.released.rows.push_back(absl::StrSplit(r, '|'));
  return run;
}

void ExpectSameRelease(const FedRun& csv, const FedRun& pg);

// Forwards to the parties; before the `at`-th call to `victim` runs `restart` once (which starts
// a new PartyAgent of `victim` over the same directories, as a restarted daemon).
class RestartingChannel : public wire::PartyChannel {
 public:
  RestartingChannel(wire::PartyChannel* inner, std::string victim, int at,
                    std::function<absl::Status()> restart)
      : inner_(inner), victim_(std::move(victim)), at_(at), restart_(std::move(restart)) {}
  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    if (party == victim_) {
      absl::MutexLock lock(&mu_);
      if (++calls_ == at_) {
        restarted_ = true;
        if (absl::Status st = restart_(); !st.ok()) return st;
      }
    }
    return inner_->Call(party, request, timeout);
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }
  bool restarted() const {
    absl::MutexLock lock(&mu_);
    return restarted_;
  }

 private:
  wire::PartyChannel* inner_;
  const std::string victim_;
  const int at_;
  std::function<absl::Status()> restart_;
  mutable absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool restarted_ ABSL_GUARDED_BY(mu_) = false;
};

// The push-down federation of RunFederation, with hospital-c (push-down, table `hospital_c`)
// restarted before its `at`-th call: `change` runs on the server first (the table changing while
// the party was down), then a new PartyAgent over hospital-c's directories takes its place.
FedRun RunPushDownWithRestart(const FedData& s, const std::string& name,
                              const PostgresCluster* cluster, int at, const std::string& change,
                              bool* restarted) {
  FedRun run;
  std::vector<std::map<std::string, std::string>> files(3, s.taxonomies);
  files[0]["table.csv"] = s.parts[0];
  std::map<std::string, party::PartyAgentOptions> options;
  leader::LeaderOptions leader_options;
  auto fed = InProcessFederation::Create(
      name, files,
      [&](party::PartyAgentOptions& o) {
        if (o.name != "hospital-a") {
          o.postgres_tables["patients"] = {
              .name = "patients",
              .conninfo = cluster->conninfo(),
              .table = o.name == "hospital-b" ? "hospital_b" : "hospital_c",
              .query = "",
              .push_down = true};
          o.default_data_path = "patients";
        }
        options[o.name] = o;
      },
      [&](leader::LeaderOptions& o) {
        o.resume_timeout = absl::Seconds(10);
        leader_options = o;
      });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return run;
  std::vector<std::unique_ptr<party::PartyAgent>> replacements;
  RestartingChannel channel(&(*fed)->channel, "hospital-c", at, [&]() -> absl::Status {
    if (!change.empty()) RETURN_IF_ERROR(cluster->Sql(change));
    ASSIGN_OR_RETURN(auto agent, party::PartyAgent::Create(options.at("hospital-c")));
    (*fed)->channel.Add(agent.get());
    replacements.push_back(std::move(agent));
    return absl::OkStatus();
  });
  (*fed)->leader.reset();
  leader_options.data_dir = (*fed)->dir + "/leader-1";
  auto leader = leader::Leader::Create(leader_options, &channel);
  EXPECT_TRUE(leader.ok()) << leader.status();
  if (!leader.ok()) return run;
  (*fed)->leader = *std::move(leader);
  auto info = (*fed)->Submit(HorizontalRequest(s, (*fed)->names));
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return run;
  run.info = (*fed)->Wait(info->job_id());
  *restarted = channel.restarted();
  (*fed)->leader.reset();  // before the channel it calls through goes
  if (run.info.state() == fedanon::v1::JOB_STATE_DONE) {
    auto t = ReadCsvTable(absl::StrCat((*fed)->dir, "/hospital-a/output/", info->job_id(), ".csv"));
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) run.released = *t;
  }
  return run;
}

// A push-down party restarted mid-job opens a new snapshot of its table (docs/postgres.md, "One
// snapshot") and compares its fingerprint with the one its journal kept from the Prepare.
// Unchanged, the job completes with the release of the uninterrupted run; with rows deleted, or
// with sensitive values rewritten (every record count kept), while the party was down, the job
// fails naming the changed table and releases nothing.
TEST(PostgresFederation, APushDownPartyRestartedMidJob) {
  auto cluster = PostgresCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << cluster.status().message();
  const FedData s = MakeSetup();
  for (int p : {1, 2}) {
    const std::string path = FreshDir("pg_fed_r") + "/b.csv";
    WriteText(path, s.parts[p]);
    auto b = ReadCsvTable(path);
    ASSERT_OK(b);
    ASSERT_OK((*cluster)->LoadCsv(p == 1 ? "hospital_b" : "hospital_c", AdultSqlColumns(b->header),
                                  s.parts[p]));
  }
  const FedRun csv = RunFederation(s, "pg_restart_csv", nullptr);
  ASSERT_EQ(csv.info.state(), fedanon::v1::JOB_STATE_DONE);
  bool restarted = false;
  const FedRun same =
      RunPushDownWithRestart(s, "pg_restart_same", cluster->get(), 8, "", &restarted);
  ASSERT_TRUE(restarted) << "the restart point was not reached";
  ASSERT_EQ(same.info.state(), fedanon::v1::JOB_STATE_DONE) << same.info.failure_reason();
  ExpectSameRelease(csv, same);

  const std::string changed_reason =
      "party 'hospital-c': table 'patients' changed while the party was down (push-down snapshot "
      "fingerprint differs";
  // The relabelling runs first: the deletion below also changes the table the next runs see.
  // A change that keeps every record count: some sensitive values rewritten.
  restarted = false;
  const FedRun relabelled = RunPushDownWithRestart(
      s, "pg_restart_relabelled", cluster->get(), 8,
      "UPDATE hospital_c SET \"marital-status\" = 'Divorced' WHERE ctid IN (SELECT ctid FROM "
      "hospital_c WHERE \"marital-status\" = 'Never-married' LIMIT 300)",
      &restarted);
  ASSERT_TRUE(restarted) << "the restart point was not reached";
  std::cerr << "sensitive values rewritten: state "
            << fedanon::v1::JobState_Name(relabelled.info.state())
            << ", reason: " << relabelled.info.failure_reason() << "\n";
  EXPECT_EQ(relabelled.info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(relabelled.info.failure_reason(), ::testing::HasSubstr(changed_reason));
  EXPECT_TRUE(relabelled.released.rows.empty());

  restarted = false;
  const FedRun changed = RunPushDownWithRestart(
      s, "pg_restart_changed", cluster->get(), 8,
      "DELETE FROM hospital_c WHERE ctid IN (SELECT ctid FROM hospital_c LIMIT 500)", &restarted);
  ASSERT_TRUE(restarted) << "the restart point was not reached";
  std::cerr << "rows deleted: state " << fedanon::v1::JobState_Name(changed.info.state())
            << ", reason: " << changed.info.failure_reason() << "\n";
  EXPECT_EQ(changed.info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(changed.info.failure_reason(), ::testing::HasSubstr(changed_reason));
  EXPECT_THAT(changed.info.failure_reason(), ::testing::Not(::testing::HasSubstr("disagree")));
  EXPECT_TRUE(changed.released.rows.empty());
}

TEST(PostgresFederation, OnePartyFromPostgresReleasesWhatAllCsvReleases) {
  auto cluster = PostgresCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << cluster.status().message();
  const FedData s = MakeSetup();
  std::cerr << "data: " << s.what << "\n";
  ASSERT_OK((*cluster)->Sql("CREATE SCHEMA released"));
  for (int p : {1, 2}) {
    const std::string path = FreshDir("pg_fed_b") + "/b.csv";
    WriteText(path, s.parts[p]);
    auto b = ReadCsvTable(path);
    ASSERT_OK(b);
    ASSERT_OK((*cluster)->LoadCsv(p == 1 ? "hospital_b" : "hospital_c", AdultSqlColumns(b->header),
                                  s.parts[p]));
  }

  const auto csv_started = std::chrono::steady_clock::now();
  const FedRun csv = RunFederation(s, "pg_fed_csv", nullptr);
  std::cerr << "csv run: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - csv_started).count()
            << " s\n";
  const FedRun pg = RunFederation(s, "pg_fed_pg", cluster->get());
  ASSERT_EQ(csv.info.state(), fedanon::v1::JOB_STATE_DONE);
  ASSERT_EQ(pg.info.state(), fedanon::v1::JOB_STATE_DONE);
  ExpectSameRelease(csv, pg);

  // Push-down (docs/postgres.md): hospital-b and hospital-c never load their tables; every
  // statistic, the final check's counts and the released counts come from SQL.
  const auto started = std::chrono::steady_clock::now();
  const FedRun pushed = RunFederation(s, "pg_fed_push", cluster->get(), /*push_down=*/true);
  std::cerr << "push-down run: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
            << " s, " << pushed.info.report().steps_size() << " steps\n";
  ASSERT_EQ(pushed.info.state(), fedanon::v1::JOB_STATE_DONE) << pushed.info.failure_reason();
  ExpectSameRelease(csv, pushed);
  // It really was pushed down: hospital_c was scanned by the statistics queries, many times (a
  // loaded table is read once). The server counts a scan when the job's connection has ended.
  int64_t scans = 0;
  for (int i = 0; i < 50 && scans < 10; ++i) {
    auto r =
        (*cluster)->Query("SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'hospital_c'");
    ASSERT_OK(r);
    scans = r->empty() ? 0 : std::stoll(r->front());
    if (scans < 10) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(scans, 10);
}

// Local recoding runs on the records in memory only: a push-down party refuses it at Prepare.
TEST(PostgresFederation, PushDownPartiesRefuseLocalRecoding) {
  auto cluster = PostgresCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << cluster.status().message();
  FedData s = MakeSetup();
  s.spec_yaml += "\nrecoding: local\n";
  for (int p : {1, 2}) {
    const std::string path = FreshDir("pg_fed_local") + "/b.csv";
    WriteText(path, s.parts[p]);
    auto b = ReadCsvTable(path);
    ASSERT_OK(b);
    ASSERT_OK((*cluster)->LoadCsv(p == 1 ? "hospital_b" : "hospital_c", AdultSqlColumns(b->header),
                                  s.parts[p]));
  }
  const FedRun run = RunFederation(s, "pg_fed_local", cluster->get(), /*push_down=*/true,
                                   /*expect_done=*/false);
  EXPECT_EQ(run.info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(run.info.failure_reason(),
              ::testing::HasSubstr("recoding: local is not supported on a push-down table"));
}

void ExpectSameRelease(const FedRun& csv, const FedRun& pg) {
  const auto& a = csv.info.report();
  const auto& b = pg.info.report();
  ASSERT_EQ(b.steps_size(), a.steps_size());
  for (int i = 0; i < a.steps_size(); ++i) {
    EXPECT_EQ(b.steps(i).attribute(), a.steps(i).attribute());
    EXPECT_EQ(b.steps(i).value(), a.steps(i).value());
    EXPECT_DOUBLE_EQ(b.steps(i).score(), a.steps(i).score());
  }
  EXPECT_GT(a.steps_size(), 0);
  EXPECT_EQ(pg.released.header, csv.released.header);
  EXPECT_FALSE(csv.released.rows.empty());
  EXPECT_EQ(pg.released.rows.size(), csv.released.rows.size());
  EXPECT_EQ(RowsByColumns(pg.released, csv.released.header),
            RowsByColumns(csv.released, csv.released.header));
}

// A 2-party vertical job on gen-data's vertical split; with `cluster`, hospital-b's table is the
// PostgreSQL table `vertical_b` (read into memory, or configured push-down when `push_down`).
fedanon::v1::JobInfo RunVertical(const std::string& name, const std::string& dir,
                                 const PostgresCluster* cluster, bool push_down,
                                 std::string* released) {
  std::string spec_yaml = Slurp(dir + "/vertical.yaml");
  spec_yaml = std::regex_replace(spec_yaml, std::regex("party: party1\\b"), "party: hospital-a");
  spec_yaml = std::regex_replace(spec_yaml, std::regex("party: party2\\b"), "party: hospital-b");
  std::map<std::string, std::string> tax;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/tax")) {
    tax["tax/" + e.path().filename().string()] = Slurp(e.path().string());
  }
  std::vector<std::map<std::string, std::string>> files(2, tax);
  files[0]["table.csv"] = Slurp(dir + "/party1.csv");
  const bool postgres = cluster != nullptr || push_down;
  if (!postgres) files[1]["table.csv"] = Slurp(dir + "/party2.csv");
  auto fed = InProcessFederation::Create(name, files, [&](party::PartyAgentOptions& p) {
    if (p.name != "hospital-b" || !postgres) return;
    p.postgres_tables["patients"] = {
        .name = "patients",
        .conninfo = cluster != nullptr ? cluster->conninfo() : "host=/nonexistent dbname=x",
        .table = "vertical_b",
        .query = "",
        .push_down = push_down};
    p.default_data_path = "patients";
  });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return {};
  auto spec = spec::ParseJobSpecYaml(spec_yaml, "vertical.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return {};
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (const auto& n : (*fed)->names) req.add_parties(n);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty()) (*req.mutable_taxonomies())[a.name()] = tax.at(a.taxonomy());
  }
  auto info = (*fed)->Submit(req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return {};
  const auto done = (*fed)->Wait(info->job_id());
  if (done.state() == fedanon::v1::JOB_STATE_DONE) {
    auto csv = (*fed)->leader->Result(info->job_id());
    EXPECT_TRUE(csv.ok()) << csv.status();
    if (csv.ok()) *released = *csv;
  }
  return done;
}

// gen-data's 2-party vertical split; hospital-b's part loaded into `cluster` as `vertical_b`.
std::string VerticalData(const PostgresCluster* cluster) {
  const std::string dir = FreshDir("pg_vertical_data");
  datagen::DatagenOptions o;
  o.rows = 300;
  o.seed = 3;
  o.out_dir = dir;
  o.parties = 2;
  o.partition = datagen::DatagenOptions::Partition::kVertical;
  EXPECT_TRUE(datagen::GenerateDataset(o).ok());
  auto b = ReadCsvTable(dir + "/party2.csv");
  EXPECT_TRUE(b.ok()) << b.status();
  if (b.ok() && cluster != nullptr) {
    EXPECT_TRUE(
        cluster->LoadCsv("vertical_b", AdultSqlColumns(b->header), Slurp(dir + "/party2.csv"))
            .ok());
  }
  return dir;
}

// A vertical party reads its PostgreSQL table into memory (the same encoder as a CSV file) and
// the job releases exactly what the all-CSV job releases.
TEST(PostgresFederation, AVerticalPartyReadsItsTableFromPostgres) {
  auto cluster = PostgresCluster::Start();
  if (!cluster.ok()) GTEST_SKIP() << cluster.status().message();
  const std::string dir = VerticalData(cluster->get());
  std::string from_csv, from_pg;
  const auto csv = RunVertical("pg_vertical_csv", dir, nullptr, false, &from_csv);
  ASSERT_EQ(csv.state(), fedanon::v1::JOB_STATE_DONE) << csv.failure_reason();
  const auto pg = RunVertical("pg_vertical_pg", dir, cluster->get(), false, &from_pg);
  ASSERT_EQ(pg.state(), fedanon::v1::JOB_STATE_DONE) << pg.failure_reason();
  ASSERT_GT(csv.report().steps_size(), 0);
  ASSERT_EQ(pg.report().steps_size(), csv.report().steps_size());
  for (int i = 0; i < csv.report().steps_size(); ++i) {
    EXPECT_EQ(pg.report().steps(i).value(), csv.report().steps(i).value());
  }
  const std::string tmp = FreshDir("pg_vertical_cmp");
  ASSERT_OK_AND_ASSIGN(Table a, ParseCsvText(from_csv, tmp));
  ASSERT_OK_AND_ASSIGN(Table b, ParseCsvText(from_pg, tmp));
  EXPECT_FALSE(a.rows.empty());
  EXPECT_EQ(b.header, a.header);
  EXPECT_EQ(RowsByColumns(b, a.header), RowsByColumns(a, a.header));
}

// Push-down covers horizontal jobs only: a vertical job on a push-down table is refused at
// prepare with the reason, before any connection is tried (no server needed).
TEST(PostgresFederation, AVerticalJobOnAPushDownTableIsRefusedByName) {
  const std::string dir = VerticalData(nullptr);
  std::string unused;
  const auto done = RunVertical("pg_vertical_push", dir, nullptr, true, &unused);
  EXPECT_EQ(done.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(done.failure_reason(),
              ::testing::HasSubstr("table 'patients' is configured push-down, which covers "
                                   "horizontal jobs with global recoding only"));
}

}  // namespace
}  // namespace fedanon::testing
