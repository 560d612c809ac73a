// fedanonctl: the admin CLI of a fedanon federation (see docs/operations.md).
//
//   fedanonctl [--config admin.yaml] [--json] COMMAND ...
//     provision FEDERATION.yaml [--out DIR]     write the startup kits (no leader needed)
//     parties                                    connected parties
//     submit JOB.yaml [--parties a,b] [--recipient P] [--leader-party P] [--data P=PATH ...]
//                     [--round-timeout S]        submit a job, print its id
//     status JOB | list | watch JOB | cancel JOB [--reason TEXT] | result JOB -o FILE [--force]
//     health [--service NAME] [--bundle DIR --leader HOST:PORT]
//                                                the leader's gRPC health service (probes)
//
// Exit codes: 0 ok (watch: the job is done), 1 failure (watch: failed or cancelled), 2 usage.
#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/provision.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/spec/proto_json.h"
#include "google/protobuf/struct.pb.h"
#include "server/admin_client.h"

namespace fedanon::server {
namespace {

constexpr char kProgram[] = "fedanonctl";

struct Globals {
  std::string config;
  bool json = false;
};

// A failed command: its message on stderr, exit 1.
int Fail(const absl::Status& status) {
  std::cerr << kProgram << ": " << status.message() << "\n";
  return 1;
}

// `ASSIGN_OR_FAIL(auto x, Foo());`: on error prints it and returns exit code 1.
#define ASSIGN_OR_FAIL(lhs, expr) \
  ASSIGN_OR_FAIL_IMPL_(FEDANON_CONCAT_(fedanonctl_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_FAIL_IMPL_(statusor, lhs, expr)     \
  auto statusor = (expr);                             \
  if (!statusor.ok()) return Fail(statusor.status()); \
  lhs = std::move(statusor).value()

// Prints `message` as JSON (common::ProtoToJson) and a newline.
absl::Status PrintJson(const google::protobuf::Message& message, bool pretty = true) {
  ASSIGN_OR_RETURN(std::string json, common::ProtoToJson(message, pretty));
  std::cout << json << "\n";
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AdminClient>> Connect(const Globals& g) {
  std::string path = g.config;
  if (path.empty()) {
    const char* env = std::getenv("FEDANON_ADMIN_CONFIG");
    path = env != nullptr && *env != '\0' ? env : "admin.yaml";
  }
  absl::StatusOr<std::unique_ptr<AdminClient>> client = AdminClient::FromConfig(path);
  if (!client.ok() && absl::IsNotFound(client.status()) && g.config.empty()) {
    return absl::NotFoundError(
        absl::StrCat(client.status().message(),
                     " (name the admin config with --config FILE or FEDANON_ADMIN_CONFIG)"));
  }
  return client;
}

std::string Age(int64_t since_unix) {
  const int64_t secs = absl::ToUnixSeconds(absl::Now()) - since_unix;
  if (since_unix <= 0 || secs < 0) return "";
  if (secs < 120) return absl::StrCat(secs, " s ago");
  if (secs < 7200) return absl::StrCat(secs / 60, " min ago");
  if (secs < 172800) return absl::StrCat(secs / 3600, " h ago");
  return absl::StrCat(secs / 86400, " days ago");
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

void PrintJob(const fedanon::v1::JobInfo& job) {
  std::cout << "job:           " << job.job_id() << "\n"
            << "state:         " << JobStateName(job.state()) << "\n";
  if (!job.failure_reason().empty()) std::cout << "reason:        " << job.failure_reason() << "\n";
  std::cout << "round:         " << job.round() << "\n";
  if (!job.current_best().empty()) std::cout << "current best:  " << job.current_best() << "\n";
  std::cout << "elapsed:       " << absl::StrFormat("%.2f s", job.elapsed_seconds()) << "\n"
            << "parties:       " << absl::StrJoin(job.parties(), ", ") << "\n"
            << "recipient:     " << (job.recipient().empty() ? "the leader" : job.recipient())
            << "\n"
            << "submitted by:  " << job.submitted_by() << " at "
            << FormatUnixTime(job.created_unix()) << "\n"
            << "updated:       " << FormatUnixTime(job.updated_unix()) << "\n";
  if (job.state() == fedanon::v1::JOB_STATE_DONE && job.has_report()) {
    std::cout << "report:\n";
    for (absl::string_view line :
         absl::StrSplit(ReportSummary(job.report()), '\n', absl::SkipEmpty())) {
      std::cout << "  " << line << "\n";
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

int CmdProvision(const Globals& g, const std::string& federation_yaml, std::string out) {
  absl::StatusOr<FederationSpec> spec = LoadFederationSpec(federation_yaml);
  if (!spec.ok()) return Fail(spec.status());
  if (out.empty()) out = spec->federation;
  absl::StatusOr<std::string> summary = ProvisionFederation(*spec, out);
  if (!summary.ok()) return Fail(summary.status());
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["out"].set_string_value(out);
    (*s.mutable_fields())["federation"].set_string_value(spec->federation);
    (*s.mutable_fields())["summary"].set_string_value(*summary);
    if (absl::Status st = PrintJson(s); !st.ok()) return Fail(st);
  } else {
    std::cout << *summary;
  }
  return 0;
}

int CmdParties(const Globals& g) {
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  ASSIGN_OR_FAIL(std::vector<fedanon::v1::ConnectedParty> parties, client->ListParties());
  if (g.json) {
    fedanon::v1::ListPartiesResponse response;
    for (auto& p : parties) *response.add_parties() = p;
    if (absl::Status st = PrintJson(response); !st.ok()) return Fail(st);
    return 0;
  }
  if (parties.empty()) {
    std::cout << "no parties are connected to the leader at " << client->leader_address() << "\n";
    return 0;
  }
  std::cout << Pad("PARTY", 20) << Pad("CONNECTED SINCE", 34) << "FROM\n";
  for (const auto& p : parties) {
    std::cout << Pad(p.name(), 20)
              << Pad(absl::StrCat(FormatUnixTime(p.connected_since_unix()), " (",
                                  Age(p.connected_since_unix()), ")"),
                     34)
              << p.peer() << "\n";
  }
  return 0;
}

struct SubmitFlags {
  std::string spec;
  std::vector<std::string> parties;
  std::string recipient;
  std::string leader_party;
  std::vector<std::string> data;
  uint32_t round_timeout = 0;
};

int CmdSubmit(const Globals& g, const SubmitFlags& f) {
  absl::StatusOr<fedanon::v1::SubmitJobRequest> request = LoadSubmitRequest(f.spec);
  if (!request.ok()) return Fail(request.status());
  for (const std::string& d : f.data) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == d.size()) {
      std::cerr << kProgram << ": --data expects PARTY=PATH, got '" << d << "'\n";
      return 2;
    }
    (*request->mutable_data_paths())[d.substr(0, eq)] = d.substr(eq + 1);
  }
  request->set_recipient(f.recipient);
  request->set_leader_party(f.leader_party);
  request->set_round_timeout_seconds(f.round_timeout);
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  if (f.parties.empty()) {
    ASSIGN_OR_FAIL(std::vector<fedanon::v1::ConnectedParty> parties, client->ListParties());
    if (parties.empty()) {
      return Fail(absl::FailedPreconditionError(
          "no parties are connected to the leader; name the job's parties with --parties"));
    }
    for (const auto& p : parties) request->add_parties(p.name());
  } else {
    for (const std::string& p : f.parties) request->add_parties(p);
  }
  ASSIGN_OR_FAIL(fedanon::v1::JobInfo job, client->SubmitJob(*request));
  if (g.json) {
    if (absl::Status st = PrintJson(job); !st.ok()) return Fail(st);
  } else {
    std::cout << job.job_id() << "\n";
    std::cerr << "submitted " << job.job_id() << " (parties " << absl::StrJoin(job.parties(), ", ")
              << "); follow it with: " << kProgram << " watch " << job.job_id() << "\n";
  }
  return 0;
}

int CmdStatus(const Globals& g, const std::string& job_id) {
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  ASSIGN_OR_FAIL(fedanon::v1::JobInfo job, client->GetJob(job_id));
  if (g.json) {
    if (absl::Status st = PrintJson(job); !st.ok()) return Fail(st);
  } else {
    PrintJob(job);
  }
  return 0;
}

int CmdList(const Globals& g) {
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  ASSIGN_OR_FAIL(std::vector<fedanon::v1::JobInfo> jobs, client->ListJobs());
  if (g.json) {
    fedanon::v1::ListJobsResponse response;
    for (auto& j : jobs) *response.add_jobs() = j;
    if (absl::Status st = PrintJson(response); !st.ok()) return Fail(st);
    return 0;
  }
  if (jobs.empty()) {
    std::cout << "no jobs\n";
    return 0;
  }
  std::cout << Pad("JOB", 18) << Pad("STATE", 12) << Pad("ROUND", 7) << Pad("SUBMITTED", 22)
            << Pad("BY", 12) << "PARTIES\n";
  for (const auto& j : jobs) {
    std::cout << Pad(j.job_id(), 18) << Pad(JobStateName(j.state()), 12)
              << Pad(absl::StrCat(j.round()), 7) << Pad(FormatUnixTime(j.created_unix()), 22)
              << Pad(j.submitted_by(), 12) << absl::StrJoin(j.parties(), ",") << "\n";
  }
  return 0;
}

int CmdWatch(const Globals& g, const std::string& job_id) {
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  absl::StatusOr<fedanon::v1::JobInfo> last =
      client->WatchJob(job_id, [&g](const fedanon::v1::JobInfo& job) {
        if (g.json) {
          // A line that cannot be printed is reported and the watch goes on.
          if (absl::Status st = PrintJson(job, /*pretty=*/false); !st.ok()) {
            std::cerr << "fedanonctl: " << st.message() << "\n";
          }
          std::cout.flush();
        } else {
          std::cout << FormatUnixTime(absl::ToUnixSeconds(absl::Now())) << " " << ProgressLine(job)
                    << std::endl;
        }
      });
  if (!last.ok()) return Fail(last.status());
  if (last->state() == fedanon::v1::JOB_STATE_DONE) {
    if (!g.json && last->has_report()) std::cout << ReportSummary(last->report());
    return 0;
  }
  std::cerr << kProgram << ": job " << last->job_id() << " " << JobStateName(last->state())
            << (last->failure_reason().empty() ? "" : ": ") << last->failure_reason() << "\n";
  return 1;
}

int CmdCancel(const Globals& g, const std::string& job_id, const std::string& reason) {
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  ASSIGN_OR_FAIL(fedanon::v1::JobInfo job, client->CancelJob(job_id, reason));
  if (g.json) {
    if (absl::Status st = PrintJson(job); !st.ok()) return Fail(st);
  } else {
    std::cout << job.job_id() << " " << JobStateName(job.state()) << "\n";
  }
  return 0;
}

int CmdResult(const Globals& g, const std::string& job_id, const std::string& out, bool force) {
  ASSIGN_OR_FAIL(std::unique_ptr<AtomicFileWriter> writer, AtomicFileWriter::Open(out, force));
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, Connect(g));
  const auto sink = [&writer](std::string_view data) { return writer->Write(data); };
  ASSIGN_OR_FAIL(uint64_t bytes, client->GetResult(job_id, sink));
  if (absl::Status st = writer->Commit(); !st.ok()) return Fail(st);
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["job_id"].set_string_value(job_id);
    (*s.mutable_fields())["path"].set_string_value(out);
    (*s.mutable_fields())["bytes"].set_number_value(static_cast<double>(bytes));
    if (absl::Status st = PrintJson(s); !st.ok()) return Fail(st);
  } else {
    std::cout << "wrote the result of " << job_id << " to " << out << " (" << bytes << " bytes)\n";
  }
  return 0;
}

// grpc.health.v1 Check on the leader, as the admin of the config, or with any participant's
// bundle (`--bundle DIR --leader HOST:PORT`: a leader or party probing from its own host).
int CmdHealth(const Globals& g, const std::string& service, const std::string& bundle,
              const std::string& leader) {
  absl::StatusOr<std::unique_ptr<AdminClient>> connected =
      bundle.empty() ? Connect(g) : AdminClient::FromBundle(bundle, leader);
  ASSIGN_OR_FAIL(std::unique_ptr<AdminClient> client, std::move(connected));
  const absl::Status health = client->CheckHealth(service);
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["leader"].set_string_value(client->leader_address());
    (*s.mutable_fields())["service"].set_string_value(service);
    (*s.mutable_fields())["serving"].set_bool_value(health.ok());
    if (!health.ok())
      (*s.mutable_fields())["error"].set_string_value(std::string(health.message()));
    if (absl::Status st = PrintJson(s, /*pretty=*/false); !st.ok()) return Fail(st);
    return health.ok() ? 0 : 1;
  }
  if (!health.ok()) return Fail(health);
  std::cout << client->leader_address() << " SERVING"
            << (service.empty() ? "" : absl::StrCat(" (", service, ")")) << "\n";
  return 0;
}

int Main(int argc, char** argv) {
  // gRPC's own error log repeats what our messages already say (e.g. a failed TLS handshake);
  // keep it unless GRPC_VERBOSITY asks for it.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  CLI::App app{"fedanonctl: administer a fedanon federation (provision, submit, watch, results)"};
  app.set_version_flag("--version", std::string(common::VersionLine(kProgram)));
  app.require_subcommand(1);
  app.fallthrough();
  Globals g;
  app.add_option("--config", g.config,
                 "Admin config (admin.yaml); default $FEDANON_ADMIN_CONFIG or ./admin.yaml");
  app.add_flag("--json", g.json, "Machine-readable JSON output");

  std::string federation_yaml, out_dir;
  CLI::App* provision = app.add_subcommand(
      "provision", "Create the federation's CA and every participant's startup kit");
  provision->add_option("FEDERATION", federation_yaml, "federation.yaml")->required();
  provision->add_option("--out", out_dir, "Output directory (default: the federation's name)");

  app.add_subcommand("parties", "List the parties connected to the leader");

  SubmitFlags submit_flags;
  CLI::App* submit = app.add_subcommand("submit", "Submit a job; prints its id");
  submit->add_option("JOB", submit_flags.spec, "Job spec (YAML)")->required();
  submit
      ->add_option("--parties", submit_flags.parties,
                   "Data parties in ring order (default: every connected party, by name)")
      ->delimiter(',');
  submit->add_option("--recipient", submit_flags.recipient,
                     "Party receiving the integrated table (default: the leader, which serves it "
                     "to admins)");
  submit->add_option("--leader-party", submit_flags.leader_party,
                     "The data party the leader is co-located with");
  submit->add_option("--data", submit_flags.data,
                     "PARTY=PATH: the table at that party (default: its configured table)");
  submit->add_option("--round-timeout", submit_flags.round_timeout,
                     "Seconds a party may take per request (default: the leader's)");

  std::string job_id, reason, result_out;
  bool force = false;
  CLI::App* status = app.add_subcommand("status", "Show a job");
  status->add_option("JOB", job_id, "Job id")->required();
  app.add_subcommand("list", "List the jobs");
  CLI::App* watch = app.add_subcommand(
      "watch", "Follow a job until it ends (exit 0 if done, 1 if failed or cancelled)");
  watch->add_option("JOB", job_id, "Job id")->required();
  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a job");
  cancel->add_option("JOB", job_id, "Job id")->required();
  cancel->add_option("--reason", reason, "Why (recorded in the job's audit log)");
  CLI::App* result = app.add_subcommand("result", "Download the integrated table of a done job");
  result->add_option("JOB", job_id, "Job id")->required();
  result->add_option("-o,--output", result_out, "File to write (CSV)")->required();
  result->add_flag("--force", force, "Overwrite an existing file");

  std::string health_service, health_bundle, health_leader;
  CLI::App* health = app.add_subcommand(
      "health", "Check the leader's gRPC health service (exit 0 if SERVING, 1 otherwise)");
  health->add_option("--service", health_service,
                     "Service to check: \"\" (default, the whole server), fedanon.v1.PartyLink or "
                     "fedanon.v1.Admin");
  CLI::Option* health_bundle_opt = health->add_option(
      "--bundle", health_bundle,
      "Use this participant bundle (ca.crt, tls.crt, tls.key; any role) instead of --config");
  health->add_option("--leader", health_leader, "HOST:PORT of the leader (with --bundle)")
      ->needs(health_bundle_opt);
  health_bundle_opt->needs("--leader");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const std::string command = app.get_subcommands().front()->get_name();
  if (command == "provision") return CmdProvision(g, federation_yaml, out_dir);
  if (command == "parties") return CmdParties(g);
  if (command == "submit") return CmdSubmit(g, submit_flags);
  if (command == "status") return CmdStatus(g, job_id);
  if (command == "list") return CmdList(g);
  if (command == "watch") return CmdWatch(g, job_id);
  if (command == "cancel") return CmdCancel(g, job_id, reason);
  if (command == "result") return CmdResult(g, job_id, result_out, force);
  if (command == "health") return CmdHealth(g, health_service, health_bundle, health_leader);
  std::cerr << app.help();
  return 2;
}

}  // namespace
}  // namespace fedanon::server

int main(int argc, char** argv) { return fedanon::server::Main(argc, argv); }
