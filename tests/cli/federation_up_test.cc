// Integration tests of `fedanon federation up` and `fedanonctl`: the real binaries run as child
// processes; every federation is a real leader and real parties talking gRPC over loopback mTLS.
//
// * worked example A (mohammed2010 Table I) split over three hospitals gives, as a multiset of
//   rows, the table `fedanon anonymize` gives on the union, and a report with the same steps;
// * a vertical spec fails with exit 1, a clear message and no result file;
// * fedanonctl fails fast and clearly against a port where nothing listens;
// * against a federation that stays up: fedanonctl lists parties, submits, watches, fetches the
//   result (never overwriting without --force), reports unknown jobs, and a party certificate used
//   as admin is refused by the leader.
// No daemon outlives a test: federation up prints every child's pid, and the fixture kills any
// that is still alive (and the federation up process itself) in TearDown.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/common/engine/engine_test_util.h"
#include "tests/support/test_paths.h"

extern char** environ;

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFedanon = ::fedanon::testing::BinaryDir() + "/bin/fedanon";
const std::string kFedanonctl = ::fedanon::testing::BinaryDir() + "/bin/fedanonctl";

// ---------------------------------------------------------------------------------------------
// Processes

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Proc {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;
};

// Starts `binary args...` with stdin from /dev/null and stdout/stderr captured to files.
Proc Start(const std::string& binary, const std::vector<std::string>& args) {
  Proc p;
  const std::string capture = FreshDir("capture");
  p.out_path = capture + "/stdout";
  p.err_path = capture + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, p.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&p.pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << binary << ": " << std::strerror(rc);
    p.pid = -1;
  }
  return p;
}

struct Result {
  int exit_code = -1;  // -1 if it did not exit normally
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string out;
  std::string err;
};

// Waits for `p` (killing it after `timeout`) and collects its output.
Result Finish(const Proc& p, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  Result r;
  if (p.pid <= 0) return r;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(p.pid, &status, WNOHANG);
    if (w == p.pid) break;
    if (w < 0) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      return r;
    }
    if (std::chrono::steady_clock::now() - start > timeout) {
      r.timed_out = true;
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = ReadAll(p.out_path);
  r.err = ReadAll(p.err_path);
  return r;
}

Result RunBinary(const std::string& binary, const std::vector<std::string>& args) {
  return Finish(Start(binary, args));
}

// The pids `federation up` reports for its daemons ("... pid 1234 ...").
std::vector<pid_t> DaemonPids(const std::string& err) {
  std::vector<pid_t> pids;
  for (size_t at = err.find(" pid "); at != std::string::npos; at = err.find(" pid ", at + 1)) {
    size_t end = at + 5;
    while (end < err.size() && std::isdigit(static_cast<unsigned char>(err[end]))) ++end;
    if (end > at + 5)
      pids.push_back(static_cast<pid_t>(std::stol(err.substr(at + 5, end - at - 5))));
  }
  return pids;
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// The word after `marker` in `text`, or "".
std::string WordAfter(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  size_t end = begin;
  while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
  return text.substr(begin, end - begin);
}

// The directory `federation up` announced ("starting a local federation in DIR").
std::string FederationDir(const std::string& err) {
  return WordAfter(err, "starting a local federation in ");
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// ---------------------------------------------------------------------------------------------
// Worked example A (mohammed2010 Table I), parties {1-3}, {4-7}, {8-11}.

constexpr char kSpecA[] = R"(name: example-a
attributes:
  - {name: Job, role: qid, taxonomy: tax/job.csv}
  - {name: Sex, role: qid, taxonomy: tax/sex.csv}
  - {name: Age, role: qid, taxonomy: tax/age.csv}
  - {name: Transfuse, role: class, values: [Y, N]}
  - {name: Surgery, role: sensitive}
privacy: {model: lkc, L: 2, K: 2, C: 0.5, sensitive_values: [Transgender]}
partitioning: horizontal
)";

const std::map<std::string, std::string>& TaxonomiesA() {
  static const auto* t = new std::map<std::string, std::string>{
      {"tax/job.csv",
       "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;ANY_Job\n"
       "Carpenter;Technical;Blue-collar;ANY_Job\nTechnician;Technical;Blue-collar;ANY_Job\n"
       "Manager;White-collar;ANY_Job\nLawyer;Professional;White-collar;ANY_Job\n"
       "Doctor;Professional;White-collar;ANY_Job\n"},
      {"tax/sex.csv", "M;ANY_Sex\nF;ANY_Sex\n"},
      {"tax/age.csv",
       "24;[1-30);[1-60);[1-99)\n34;[30-60);[1-60);[1-99)\n44;[30-60);[1-60);[1-99)\n"
       "58;[30-60);[1-60);[1-99)\n63;[60-99);[1-99)\n"}};
  return *t;
}

Table TableA() {
  Table t;
  t.header = {"ID", "Job", "Sex", "Age", "Transfuse", "Surgery"};
  t.rows = {{"1", "Janitor", "M", "34", "Y", "Transgender"},
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
  return t;
}

// A job directory: job.yaml + tax/*.csv + union.csv + p1.csv, p2.csv, p3.csv.
struct JobDir {
  std::string dir;
  std::string spec;
  std::string union_csv;
  std::vector<std::string> parts;
};

JobDir WriteJobA(const std::string& name, const std::string& spec_yaml = kSpecA) {
  JobDir j;
  j.dir = FreshDir(name);
  j.spec = j.dir + "/job.yaml";
  j.union_csv = j.dir + "/union.csv";
  WriteText(j.spec, spec_yaml);
  for (const auto& [file, text] : TaxonomiesA()) WriteText(j.dir + "/" + file, text);
  const Table t = TableA();
  WriteText(j.union_csv, ToCsv(t));
  const std::vector<std::vector<int>> split = {{0, 1, 2}, {3, 4, 5, 6}, {7, 8, 9, 10}};
  for (size_t p = 0; p < split.size(); ++p) {
    Table part;
    part.header = t.header;
    for (int r : split[p]) part.rows.push_back(t.rows[r]);
    j.parts.push_back(j.dir + "/p" + std::to_string(p + 1) + ".csv");
    WriteText(j.parts.back(), ToCsv(part));
  }
  return j;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// Rows as "a|b|c|" over `columns` (by name), sorted: a multiset of rows.
std::vector<std::string> RowsByColumns(const Table& t, const std::vector<std::string>& columns) {
  std::vector<int> idx;
  for (const auto& c : columns) {
    idx.push_back(
        static_cast<int>(std::find(t.header.begin(), t.header.end(), c) - t.header.begin()));
  }
  std::vector<std::string> rows;
  for (const auto& r : t.rows) {
    std::string line;
    for (int i : idx) line += (i < static_cast<int>(r.size()) ? r[i] : "<missing>") + "|";
    rows.push_back(line);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// `fedanon anonymize` on the union: the reference table and report.
struct Central {
  Table table;
  nlohmann::json report;
};

Central RunCentral(const JobDir& j) {
  Central c;
  const std::string out = j.dir + "/central.csv";
  const std::string report = j.dir + "/central.json";
  const Result r = RunBinary(kFedanon, {"anonymize", "--spec", j.spec, "--input", j.union_csv,
                                        "--output", out, "--report", report, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto t = ReadCsvTable(out);
  EXPECT_TRUE(t.ok()) << t.status();
  if (t.ok()) c.table = *t;
  c.report = nlohmann::json::parse(ReadAll(report), nullptr, /*allow_exceptions=*/false);
  return c;
}

void ExpectSameTable(const std::string& path, const Central& central) {
  auto t = ReadCsvTable(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows.size(), TableA().rows.size());
  EXPECT_EQ(RowsByColumns(*t, central.table.header),
            RowsByColumns(central.table, central.table.header));
}

// A view log of worked example A: JSON lines with the required fields; the kinds a horizontal job
// with taxonomy attributes decodes.
void ExpectViewLog(const std::string& text) {
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::set<std::string> kinds;
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << line;
    for (const char* key : {"round", "kind", "attribute", "labelled", "counts"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing: " << line;
    }
    EXPECT_TRUE(j["counts"].is_array()) << line;
    kinds.insert(j.value("kind", ""));
  }
  EXPECT_TRUE(kinds.count("candidate_counts")) << text;
  EXPECT_TRUE(kinds.count("group_counts")) << text;
}

// ---------------------------------------------------------------------------------------------

class FederationUpTest : public ::testing::Test {
 protected:
  // Remembers the daemons `federation up` reported, to check and clean up after it.
  void Track(const std::string& err) {
    for (pid_t pid : DaemonPids(err)) daemons_.push_back(pid);
  }

  void ExpectDaemonsGone() {
    for (pid_t pid : daemons_) EXPECT_FALSE(Alive(pid)) << "daemon " << pid << " survived";
  }

  void TearDown() override {
    for (pid_t pid : background_) {
      if (::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    // The daemons get SIGTERM when federation up dies; make sure anyway.
    for (pid_t pid : daemons_) {
      if (Alive(pid)) ::kill(pid, SIGKILL);
    }
  }

  std::vector<pid_t> background_;
  std::vector<pid_t> daemons_;
};

TEST_F(FederationUpTest, ExampleAOverThreeHospitalsEqualsCentralized) {
  const JobDir j = WriteJobA("up_a");
  const std::string out = j.dir + "/out.csv";
  const std::string report = j.dir + "/report.json";
  const std::string view = j.dir + "/view.jsonl";
  const Result r =
      RunBinary(kFedanon, {"federation", "up", "--spec", j.spec, "--party-data", Joined(j.parts),
                           "--wait", "--result", out, "--report", report, "--leader-view", view});
  Track(r.err);
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  EXPECT_THAT(r.out, HasSubstr("done"));
  EXPECT_THAT(r.out, HasSubstr("specializations:"));
  EXPECT_THAT(r.err, HasSubstr("round 1"));  // progress lines
  EXPECT_EQ(DaemonPids(r.err).size(), 4u) << r.err;
  ExpectDaemonsGone();
  const std::string dir = FederationDir(r.err);
  ASSERT_FALSE(dir.empty()) << r.err;
  EXPECT_FALSE(fs::exists(dir)) << "the temporary federation " << dir << " was not removed";

  const Central central = RunCentral(j);
  ExpectSameTable(out, central);

  const nlohmann::json fed =
      nlohmann::json::parse(ReadAll(report), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(fed.is_object()) << ReadAll(report);
  ASSERT_TRUE(fed.contains("steps") && fed["steps"].is_array());
  EXPECT_FALSE(fed["steps"].empty());
  ASSERT_TRUE(central.report.is_object());
  ASSERT_EQ(fed["steps"].size(), central.report["steps"].size());
  for (size_t i = 0; i < fed["steps"].size(); ++i) {
    EXPECT_EQ(fed["steps"][i]["attribute"], central.report["steps"][i]["attribute"]) << i;
    EXPECT_EQ(fed["steps"][i]["value"], central.report["steps"][i]["value"]) << i;
  }
  EXPECT_EQ(fed["job_name"], "example-a");
  EXPECT_EQ(fed["smallest_group"], central.report["smallest_group"]);

  // The leader's view log (tests/federation/view_log_test.cc checks it is complete).
  EXPECT_THAT(r.err, HasSubstr("wrote the leader's view log to " + view));
  struct stat st {};
  ASSERT_EQ(::stat(view.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ExpectViewLog(ReadAll(view));
}

TEST_F(FederationUpTest, VerticalSpecWithoutPartiesFailsWithAClearMessageAndNoResult) {
  std::string spec = kSpecA;
  spec.replace(spec.find("partitioning: horizontal"), std::strlen("partitioning: horizontal"),
               "partitioning: vertical");
  const JobDir j = WriteJobA("up_vertical", spec);
  const std::string out = j.dir + "/out.csv";
  const std::string report = j.dir + "/report.json";
  const Result r =
      RunBinary(kFedanon, {"federation", "up", "--spec", j.spec, "--party-data", Joined(j.parts),
                           "--wait", "--result", out, "--report", report});
  Track(r.err);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("needs `party:`"));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(report));
  ExpectDaemonsGone();
}

// A vertical job end to end (ID matching, rounds, release) on generated data split by columns
// over 2 parties: the joined table equals `fedanon anonymize` on the joined table.
TEST_F(FederationUpTest, VerticalGeneratedDataEqualsCentralized) {
  const std::string dir = FreshDir("up_vertical_gen");
  ASSERT_EQ(RunBinary(kFedanon, {"gen-data", "--rows", "3000", "--parties", "2", "--partition",
                                 "vertical", "--out", dir})
                .exit_code,
            0);
  const std::string out = dir + "/out.csv";
  const Result r =
      RunBinary(kFedanon, {"federation", "up", "--spec", dir + "/vertical.yaml", "--party-data",
                           dir + "/party1.csv," + dir + "/party2.csv", "--wait", "--result", out});
  Track(r.err);
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  ExpectDaemonsGone();
  const Result c =
      RunBinary(kFedanon, {"anonymize", "--spec", dir + "/vertical.yaml", "--input",
                           dir + "/table.csv", "--output", dir + "/central.csv", "--quiet"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto fed = ReadCsvTable(out);
  auto central = ReadCsvTable(dir + "/central.csv");
  ASSERT_TRUE(fed.ok() && central.ok());
  EXPECT_EQ(fed->rows.size(), 3000u);
  EXPECT_EQ(RowsByColumns(*fed, central->header), RowsByColumns(*central, central->header));
}

// The game-theoretic participation strategy end to end: the summary names what each party
// contributed, the rounds it won and declined and why.
TEST_F(FederationUpTest, VerticalGameTheoreticSummaryListsParticipation) {
  const std::string dir = FreshDir("up_vertical_gt");
  ASSERT_EQ(RunBinary(kFedanon, {"gen-data", "--rows", "3000", "--parties", "2", "--partition",
                                 "vertical", "--out", dir})
                .exit_code,
            0);
  {
    std::ofstream spec(dir + "/vertical.yaml", std::ios::app);
    spec << "participation: game_theoretic\nepsilon: 0\n";
  }
  const Result r = RunBinary(kFedanon, {"federation", "up", "--spec", dir + "/vertical.yaml",
                                        "--party-data", dir + "/party1.csv," + dir + "/party2.csv",
                                        "--wait", "--result", dir + "/out.csv"});
  Track(r.err);
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  ExpectDaemonsGone();
  EXPECT_THAT(r.out, ::testing::HasSubstr("stopped: every party sent Not-participate"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("party party1: contribution [0-9.]+, won [0-9]+, "
                                              "declined [0-9]+"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("party party2: contribution [0-9.]+, won [0-9]+, "
                                              "declined [0-9]+"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("contributed more than another party by more than "
                                          "epsilon"));
}

TEST_F(FederationUpTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunBinary(kFedanon, {"federation"}).exit_code, 2);
  EXPECT_EQ(RunBinary(kFedanon, {"federation", "up"}).exit_code, 2);  // --party-data is required
  const Result wait_without_spec =
      RunBinary(kFedanon, {"federation", "up", "--party-data", "a.csv,b.csv", "--wait"});
  EXPECT_EQ(wait_without_spec.exit_code, 2);
  EXPECT_THAT(wait_without_spec.err, HasSubstr("--spec"));
  const Result missing =
      RunBinary(kFedanon, {"federation", "up", "--party-data", "/nonexistent/a.csv,b"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/a.csv"));
  // The local tool's own commands still work.
  const Result version = RunBinary(kFedanon, {"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, HasSubstr("fedanon "));
}

// --result, --report and --leader-view never replace a party's table, the spec or each other;
// refused before anything is provisioned or started.
TEST_F(FederationUpTest, OutputsNamingAnInputAreRefused) {
  const std::string dir = FreshDir("up_overwrite");
  WriteText(dir + "/a.csv", "x,y\n1,2\n");
  WriteText(dir + "/b.csv", "x,y\n3,4\n");
  const std::string tables = dir + "/a.csv," + dir + "/b.csv";
  const Result onto_table =
      RunBinary(kFedanon, {"federation", "up", "--party-data", tables, "--spec", dir + "/job.yaml",
                           "--wait", "--result", dir + "/./b.csv"});
  EXPECT_EQ(onto_table.exit_code, 1);
  EXPECT_THAT(onto_table.err, HasSubstr("--result '" + dir +
                                        "/./b.csv' is the same file as a --party-data table; "
                                        "refusing to overwrite it"));
  const Result onto_result =
      RunBinary(kFedanon, {"federation", "up", "--party-data", tables, "--spec", dir + "/job.yaml",
                           "--wait", "--result", dir + "/r.csv", "--report", dir + "/r.csv"});
  EXPECT_EQ(onto_result.exit_code, 1);
  EXPECT_THAT(onto_result.err,
              HasSubstr("--report '" + dir + "/r.csv' is the same file as --result"));
  const Result onto_spec =
      RunBinary(kFedanon, {"federation", "up", "--party-data", tables, "--spec", dir + "/job.yaml",
                           "--wait", "--result", dir + "/job.yaml"});
  EXPECT_EQ(onto_spec.exit_code, 1);
  EXPECT_THAT(onto_spec.err, HasSubstr("is the same file as --spec"));
  const Result view_onto_report = RunBinary(
      kFedanon, {"federation", "up", "--party-data", tables, "--spec", dir + "/job.yaml", "--wait",
                 "--report", dir + "/r.json", "--leader-view", dir + "/./r.json"});
  EXPECT_EQ(view_onto_report.exit_code, 1);
  EXPECT_THAT(view_onto_report.err,
              HasSubstr("--leader-view '" + dir + "/./r.json' is the same file as --report"));
  const Result view_onto_table =
      RunBinary(kFedanon, {"federation", "up", "--party-data", tables, "--spec", dir + "/job.yaml",
                           "--wait", "--leader-view", dir + "/a.csv"});
  EXPECT_EQ(view_onto_table.exit_code, 1);
  EXPECT_THAT(view_onto_table.err, HasSubstr("is the same file as a --party-data table"));
  EXPECT_EQ(ReadAll(dir + "/a.csv"), "x,y\n1,2\n");
  EXPECT_EQ(ReadAll(dir + "/b.csv"), "x,y\n3,4\n");
  EXPECT_FALSE(fs::exists(dir + "/r.csv"));
}

TEST(FedanonctlTest, UnreachableLeaderFailsFast) {
  const std::string dir = FreshDir("ctl_unreachable");
  const int port = FreePort();  // nothing listens there
  WriteText(dir + "/federation.yaml",
            "federation: test\nleader: {name: leader, address: 127.0.0.1:" + std::to_string(port) +
                "}\nparties: [hospital-a, hospital-b]\nadmins: [alice]\n");
  const Result prov =
      RunBinary(kFedanonctl, {"provision", dir + "/federation.yaml", "--out", dir + "/kit"});
  ASSERT_EQ(prov.exit_code, 0) << prov.err;
  EXPECT_THAT(prov.out, HasSubstr("alice"));
  EXPECT_TRUE(fs::exists(dir + "/kit/alice/admin.yaml"));

  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"parties"}, {"list"}, {"watch", "job-0123456789ab"}}) {
    std::vector<std::string> args = {"--config", dir + "/kit/alice/admin.yaml"};
    args.insert(args.end(), command.begin(), command.end());
    const Result r = RunBinary(kFedanonctl, args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err,
                HasSubstr("cannot reach the leader at 127.0.0.1:" + std::to_string(port) + ": "));
    EXPECT_LT(r.seconds, 10.0);
  }
  // A missing config says how to name one.
  const Result no_config = RunBinary(kFedanonctl, {"--config", dir + "/none.yaml", "parties"});
  EXPECT_EQ(no_config.exit_code, 1);
  EXPECT_THAT(no_config.err, HasSubstr("none.yaml"));
  EXPECT_EQ(RunBinary(kFedanonctl, {}).exit_code, 2);
  EXPECT_EQ(RunBinary(kFedanonctl, {"--version"}).exit_code, 0);
}

// Waits until `federation up` (started in the background) says the federation is up.
bool WaitUntilUp(const Proc& p, std::string* err) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (std::chrono::steady_clock::now() < deadline) {
    *err = ReadAll(p.err_path);
    if (err->find("federation is up") != std::string::npos) return true;
    if (::waitpid(p.pid, nullptr, WNOHANG) != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(FederationUpTest, StaysUpForFedanonctlUntilSigterm) {
  const JobDir j = WriteJobA("up_ctl");
  const std::string fed = j.dir + "/federation";
  const Proc up = Start(
      kFedanon, {"federation", "up", "--party-data", Joined(j.parts), "--keep", "--dir", fed});
  background_.push_back(up.pid);
  std::string up_err;
  ASSERT_TRUE(WaitUntilUp(up, &up_err)) << up_err;
  Track(up_err);
  const std::string admin = fed + "/admin/admin.yaml";
  auto ctl = [&admin](std::vector<std::string> args) {
    args.insert(args.begin(), {"--config", admin});
    return RunBinary(kFedanonctl, args);
  };

  // Parties (named after the files).
  const Result parties = ctl({"--json", "parties"});
  ASSERT_EQ(parties.exit_code, 0) << parties.err;
  const auto pj = nlohmann::json::parse(parties.out, nullptr, false);
  ASSERT_TRUE(pj.is_object()) << parties.out;
  std::vector<std::string> names;
  for (const auto& p : pj["parties"]) names.push_back(p["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"p1", "p2", "p3"}));
  EXPECT_THAT(ctl({"parties"}).out, HasSubstr("p2"));

  // A party certificate used as admin: the leader refuses it.
  // (admin.yaml copied into p1's bundle: its relative tls paths then name p1's files.)
  std::string as_party_yaml = ReadAll(admin);
  as_party_yaml.replace(as_party_yaml.find("name: admin"), std::strlen("name: admin"), "name: p1");
  WriteText(fed + "/p1/as-admin.yaml", as_party_yaml);
  const Result as_party =
      RunBinary(kFedanonctl, {"--config", fed + "/p1/as-admin.yaml", "parties"});
  EXPECT_EQ(as_party.exit_code, 1);
  EXPECT_THAT(as_party.err, HasSubstr("the leader rejected this certificate"));
  EXPECT_THAT(as_party.err, HasSubstr("only admins"));

  // Submit (taxonomies must be in each party's data dir), watch, status, result.
  for (const std::string p : {"p1", "p2", "p3"}) {
    for (const auto& [file, text] : TaxonomiesA()) WriteText(fed + "/" + p + "/data/" + file, text);
  }
  const Result submit = ctl({"submit", j.spec});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = "job-" + WordAfter(submit.out, "job-");
  ASSERT_EQ(job.size(), 16u) << submit.out;

  const Result watch = ctl({"watch", job});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_THAT(watch.out, HasSubstr(job + " done"));

  const Result status = ctl({"--json", "status", job});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto sj = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(sj.is_object()) << status.out;
  EXPECT_EQ(sj["state"], "JOB_STATE_DONE");
  EXPECT_FALSE(sj["report"]["steps"].empty());
  EXPECT_EQ(sj["parties"], nlohmann::json({"p1", "p2", "p3"}));
  EXPECT_THAT(ctl({"status", job}).out, HasSubstr("state:         done"));
  EXPECT_THAT(ctl({"list"}).out, HasSubstr(job));

  const std::string out = j.dir + "/ctl_out.csv";
  const Result result = ctl({"result", job, "-o", out});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ExpectSameTable(out, RunCentral(j));
  const std::string before = ReadAll(out);
  WriteText(out, "something else\n");
  const Result again = ctl({"result", job, "-o", out});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("use --force"));
  EXPECT_EQ(ReadAll(out), "something else\n");
  EXPECT_EQ(ctl({"result", job, "-o", out, "--force"}).exit_code, 0);
  EXPECT_EQ(ReadAll(out), before);
  for (const auto& entry : fs::directory_iterator(j.dir)) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
  }

  // The leader's view log: what it decoded, as JSON lines, the same as its file.
  const Result view = ctl({"view-log", job});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  ExpectViewLog(view.out);
  EXPECT_EQ(view.out, ReadAll(fed + "/leader/data/" + job + ".view.jsonl"));
  EXPECT_EQ(ctl({"--json", "view-log", job}).out, view.out);
  const Result unknown_view = ctl({"view-log", "job-000000000000"});
  EXPECT_EQ(unknown_view.exit_code, 1);
  EXPECT_THAT(unknown_view.err, HasSubstr("unknown job job-000000000000"));

  const Result unknown = ctl({"status", "job-000000000000"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("unknown job job-000000000000"));
  const Result cancel = ctl({"cancel", job, "--reason", "too late"});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_THAT(cancel.err, HasSubstr("already ended"));

  // SIGTERM stops the federation: exit 0, every daemon gone, the directory kept (--keep).
  ASSERT_EQ(::kill(up.pid, SIGTERM), 0);
  const Result stopped = Finish(up, std::chrono::seconds(15));
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_LT(stopped.seconds, 10.0);
  ExpectDaemonsGone();
  EXPECT_TRUE(fs::exists(fed + "/logs/leader.log"));
  EXPECT_THAT(ReadAll(fed + "/logs/p1.log"), HasSubstr("connected"));
}

}  // namespace
}  // namespace fedanon::testing
