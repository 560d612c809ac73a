#include "cli/admin_commands.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "app/provision.h"
#include "cli/watch_progress.h"
#include "common/base/status_macros.h"
#include "common/hierarchies/hierarchy_builder.h"
#include "common/spec/job_spec_loader.h"
#include "common/spec/proto_json.h"
#include "google/protobuf/struct.pb.h"
#include "server/admin/admin_client.h"

namespace fedanon::cli {
namespace {

constexpr char kProgram[] = "fedanonctl";

// Prints `message` as JSON (spec::ProtoToJson) and a newline.
absl::Status PrintJson(const google::protobuf::Message& message, bool pretty = true) {
  ASSIGN_OR_RETURN(std::string json, spec::ProtoToJson(message, pretty));
  std::cout << json << "\n";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<admin::AdminClient>> ConnectToLeader(const AdminGlobals& g) {
  std::string path = g.config;
  if (path.empty()) {
    const char* env = std::getenv("FEDANON_ADMIN_CONFIG");
    path = env != nullptr && *env != '\0' ? env : "admin.yaml";
  }
  absl::StatusOr<std::unique_ptr<admin::AdminClient>> client = admin::AdminClient::FromConfig(path);
  if (!client.ok() && absl::IsNotFound(client.status()) && g.config.empty()) {
    return absl::NotFoundError(
        absl::StrCat(client.status().message(),
                     " (name the admin config with --config FILE or FEDANON_ADMIN_CONFIG)"));
  }
  return client;
}

namespace {

absl::StatusOr<std::unique_ptr<admin::AdminClient>> Connect(const AdminGlobals& g) {
  return ConnectToLeader(g);
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
            << "state:         " << admin::JobStateName(job.state()) << "\n";
  if (!job.failure_reason().empty()) std::cout << "reason:        " << job.failure_reason() << "\n";
  if (job.queue_position() > 0) {
    std::cout << "queued:        position " << job.queue_position()
              << " (waiting for a free worker of the leader)\n";
  }
  for (const std::string& party : job.waiting_for_parties()) {
    std::cout << "waiting for:   party " << party << " (to connect to the leader)\n";
  }
  std::cout << "round:         " << job.round() << "\n";
  if (!job.current_best().empty()) std::cout << "current best:  " << job.current_best() << "\n";
  std::cout << "elapsed:       " << absl::StrFormat("%.2f s", job.elapsed_seconds()) << "\n"
            << "parties:       " << absl::StrJoin(job.parties(), ", ") << "\n"
            << "recipient:     " << (job.recipient().empty() ? "the leader" : job.recipient())
            << "\n"
            << "submitted by:  " << job.submitted_by() << " at "
            << admin::FormatUnixTime(job.created_unix()) << "\n"
            << "updated:       " << admin::FormatUnixTime(job.updated_unix()) << "\n";
  if (job.state() == fedanon::v1::JOB_STATE_DONE && job.has_report()) {
    std::cout << "report:\n";
    for (absl::string_view line :
         absl::StrSplit(admin::ReportSummary(job.report()), '\n', absl::SkipEmpty())) {
      std::cout << "  " << line << "\n";
    }
  }
}

// An action that runs `command` and turns its status into the exit code.
template <typename Command>
server::CommandAction ActionOf(Command command) {
  return [command] { return server::ExitCode(command(), kProgram); };
}

// ---------------------------------------------------------------------------------------------
// The commands

absl::Status RunProvision(const AdminGlobals& g, const std::string& federation_yaml,
                          std::string out) {
  ASSIGN_OR_RETURN(const app::FederationSpec spec, app::LoadFederationSpec(federation_yaml));
  if (out.empty()) out = spec.federation;
  ASSIGN_OR_RETURN(const std::string summary, app::ProvisionFederation(spec, out));
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["out"].set_string_value(out);
    (*s.mutable_fields())["federation"].set_string_value(spec.federation);
    (*s.mutable_fields())["summary"].set_string_value(summary);
    return PrintJson(s);
  }
  std::cout << summary;
  return absl::OkStatus();
}

absl::Status RunParties(const AdminGlobals& g) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::ConnectedParty> parties, client->ListParties());
  if (g.json) {
    fedanon::v1::ListPartiesResponse response;
    for (auto& p : parties) *response.add_parties() = p;
    return PrintJson(response);
  }
  if (parties.empty()) {
    std::cout << "no parties are connected to the leader at " << client->leader_address() << "\n";
    return absl::OkStatus();
  }
  std::cout << Pad("PARTY", 20) << Pad("CONNECTED SINCE", 34) << "FROM\n";
  for (const auto& p : parties) {
    std::cout << Pad(p.name(), 20)
              << Pad(absl::StrCat(admin::FormatUnixTime(p.connected_since_unix()), " (",
                                  Age(p.connected_since_unix()), ")"),
                     34)
              << p.peer() << "\n";
  }
  return absl::OkStatus();
}

struct SubmitFlags {
  std::string spec;
  std::vector<std::string> parties;
  std::string recipient;
  std::string leader_party;
  std::vector<std::string> data;
  uint32_t round_timeout = 0;
  uint32_t valid_hours = 24;
};

absl::Status RunSubmit(const AdminGlobals& g, const SubmitFlags& f) {
  ASSIGN_OR_RETURN(fedanon::v1::SubmitJobRequest request, admin::LoadSubmitRequest(f.spec));
  // Hierarchies the spec defines must be the ones its public definitions build
  // (docs/hierarchies.md), never ones built from a party's table.
  ASSIGN_OR_RETURN(const fedanon::v1::JobSpec resolved, spec::LoadJobSpec(f.spec));
  RETURN_IF_ERROR(hierarchies::CheckFederatedHierarchies(
      resolved, std::map<std::string, std::string>(request.taxonomies().begin(),
                                                   request.taxonomies().end())));
  for (const std::string& d : f.data) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == d.size()) {
      return server::UsageError(absl::StrCat("--data expects PARTY=PATH, got '", d, "'"));
    }
    (*request.mutable_data_paths())[d.substr(0, eq)] = d.substr(eq + 1);
  }
  request.set_recipient(f.recipient);
  request.set_leader_party(f.leader_party);
  request.set_round_timeout_seconds(f.round_timeout);
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  if (f.parties.empty()) {
    ASSIGN_OR_RETURN(std::vector<fedanon::v1::ConnectedParty> parties, client->ListParties());
    if (parties.empty()) {
      return absl::FailedPreconditionError(
          "no parties are connected to the leader; name the job's parties with --parties");
    }
    for (const auto& p : parties) request.add_parties(p.name());
  } else {
    for (const std::string& p : f.parties) request.add_parties(p);
  }
  // The admin's signature over the job as it now stands: parties run nothing else.
  RETURN_IF_ERROR(client->AuthorizeJob(&request, absl::Hours(f.valid_hours)));
  ASSIGN_OR_RETURN(fedanon::v1::JobInfo job, client->SubmitJob(request));
  if (g.json) return PrintJson(job);
  std::cout << job.job_id() << "\n";
  std::cerr << "submitted " << job.job_id() << " (parties " << absl::StrJoin(job.parties(), ", ")
            << "); follow it with: " << kProgram << " watch " << job.job_id() << "\n";
  return absl::OkStatus();
}

absl::Status RunStatus(const AdminGlobals& g, const std::string& job_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  ASSIGN_OR_RETURN(fedanon::v1::JobInfo job, client->GetJob(job_id));
  if (g.json) return PrintJson(job);
  PrintJob(job);
  return absl::OkStatus();
}

absl::Status RunList(const AdminGlobals& g) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::JobInfo> jobs, client->ListJobs());
  if (g.json) {
    fedanon::v1::ListJobsResponse response;
    for (auto& j : jobs) *response.add_jobs() = j;
    return PrintJson(response);
  }
  if (jobs.empty()) {
    std::cout << "no jobs\n";
    return absl::OkStatus();
  }
  std::cout << Pad("JOB", 18) << Pad("STATE", 12) << Pad("ROUND", 7) << Pad("SUBMITTED", 22)
            << Pad("BY", 12) << "PARTIES\n";
  for (const auto& j : jobs) {
    // A job waiting for a free worker of the leader shows its place in the queue.
    // A job waiting for parties to connect says so.
    const std::string state = j.queue_position() > 0 ? absl::StrCat("queued #", j.queue_position())
                              : j.waiting_for_parties_size() > 0 ? "waiting"
                                                                 : admin::JobStateName(j.state());
    std::cout << Pad(j.job_id(), 18) << Pad(state, 12) << Pad(absl::StrCat(j.round()), 7)
              << Pad(admin::FormatUnixTime(j.created_unix()), 22) << Pad(j.submitted_by(), 12)
              << absl::StrJoin(j.parties(), ",") << "\n";
  }
  return absl::OkStatus();
}

// Until the job ends: OK if it is done, an error if it failed or was cancelled.
absl::Status RunWatch(const AdminGlobals& g, const std::string& job_id, uint32_t expect_rounds) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  WatchProgress progress(expect_rounds);
  ASSIGN_OR_RETURN(const fedanon::v1::JobInfo last,
                   client->WatchJob(job_id, [&g, &progress](const fedanon::v1::JobInfo& job) {
                     if (g.json) {
                       // A line that cannot be printed is reported and the watch goes on.
                       if (absl::Status st = PrintJson(job, /*pretty=*/false); !st.ok()) {
                         std::cerr << "fedanonctl: " << st.message() << "\n";
                       }
                       std::cout.flush();
                     } else {
                       const std::string rate = progress.Update(job);
                       std::cout << admin::FormatUnixTime(absl::ToUnixSeconds(absl::Now())) << " "
                                 << admin::ProgressLine(job) << (rate.empty() ? "" : "  ") << rate
                                 << std::endl;
                     }
                   }));
  if (last.state() == fedanon::v1::JOB_STATE_DONE) {
    if (!g.json && last.has_report()) std::cout << admin::ReportSummary(last.report());
    return absl::OkStatus();
  }
  return absl::AbortedError(
      absl::StrCat("job ", last.job_id(), " ", admin::JobStateName(last.state()),
                   last.failure_reason().empty() ? "" : ": ", last.failure_reason()));
}

absl::Status RunCancel(const AdminGlobals& g, const std::string& job_id,
                       const std::string& reason) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  ASSIGN_OR_RETURN(fedanon::v1::JobInfo job, client->CancelJob(job_id, reason));
  if (g.json) return PrintJson(job);
  std::cout << job.job_id() << " " << admin::JobStateName(job.state()) << "\n";
  return absl::OkStatus();
}

absl::Status RunResult(const AdminGlobals& g, const std::string& job_id, const std::string& out,
                       bool force) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AtomicFileWriter> writer,
                   admin::AtomicFileWriter::Open(out, force));
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  const auto sink = [&writer](std::string_view data) { return writer->Write(data); };
  ASSIGN_OR_RETURN(uint64_t bytes, client->GetResult(job_id, sink));
  RETURN_IF_ERROR(writer->Commit());
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["job_id"].set_string_value(job_id);
    (*s.mutable_fields())["path"].set_string_value(out);
    (*s.mutable_fields())["bytes"].set_number_value(static_cast<double>(bytes));
    return PrintJson(s);
  }
  std::cout << "wrote the result of " << job_id << " to " << out << " (" << bytes << " bytes)\n";
  return absl::OkStatus();
}

// The leader's view log of a job (JSON lines) to stdout, as the leader stores it.
absl::Status RunViewLog(const AdminGlobals& g, const std::string& job_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, Connect(g));
  const auto sink = [](std::string_view data) {
    std::cout.write(data.data(), static_cast<std::streamsize>(data.size()));
    return std::cout ? absl::OkStatus() : absl::InternalError("cannot write to stdout");
  };
  RETURN_IF_ERROR(client->GetViewLog(job_id, sink).status());
  std::cout.flush();
  return absl::OkStatus();
}

struct HealthFlags {
  std::string service;
  std::string bundle;
  std::string leader;
};

// grpc.health.v1 Check on the leader, as the admin of the config, or with any participant's
// bundle (`--bundle DIR --leader HOST:PORT`: a leader or party probing from its own host).
absl::Status RunHealth(const AdminGlobals& g, const HealthFlags& f) {
  absl::StatusOr<std::unique_ptr<admin::AdminClient>> connected =
      f.bundle.empty() ? Connect(g) : admin::AdminClient::FromBundle(f.bundle, f.leader);
  ASSIGN_OR_RETURN(std::unique_ptr<admin::AdminClient> client, std::move(connected));
  const absl::Status health = client->CheckHealth(f.service);
  if (g.json) {
    google::protobuf::Struct s;
    (*s.mutable_fields())["leader"].set_string_value(client->leader_address());
    (*s.mutable_fields())["service"].set_string_value(f.service);
    (*s.mutable_fields())["serving"].set_bool_value(health.ok());
    if (!health.ok())
      (*s.mutable_fields())["error"].set_string_value(std::string(health.message()));
    RETURN_IF_ERROR(PrintJson(s, /*pretty=*/false));
    return server::AlreadyReported(health);  // the JSON says why it is not serving
  }
  RETURN_IF_ERROR(health);
  std::cout << client->leader_address() << " SERVING"
            << (f.service.empty() ? "" : absl::StrCat(" (", f.service, ")")) << "\n";
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The command line

server::CommandAction DeclareProvisionCommand(const AdminGlobals* globals, CLI::App* command) {
  auto federation_yaml = std::make_shared<std::string>();
  auto out_dir = std::make_shared<std::string>();
  command->add_option("FEDERATION", *federation_yaml, "federation.yaml")->required();
  command->add_option("--out", *out_dir, "Output directory (default: the federation's name)");
  return ActionOf([=] { return RunProvision(*globals, *federation_yaml, *out_dir); });
}

server::CommandAction DeclareRevokeCommand(const AdminGlobals* globals, CLI::App* command) {
  auto ca_dir = std::make_shared<std::string>();
  auto certs = std::make_shared<std::vector<std::string>>();
  auto days = std::make_shared<int>(30);
  command->add_option("--ca", *ca_dir, "The federation's CA directory (ca.crt, ca.key)")
      ->required();
  command->add_option("CERT", *certs, "Certificates (PEM files) to revoke")->required();
  command->add_option("--days", *days, "Days the new revocation list is valid (default 30)");
  return ActionOf([=]() -> absl::Status {
    ASSIGN_OR_RETURN(const std::string summary, app::RevokeCertificates(*ca_dir, *certs, *days));
    if (globals->json) {
      google::protobuf::Struct s;
      (*s.mutable_fields())["summary"].set_string_value(summary);
      return PrintJson(s);
    }
    std::cout << summary;
    return absl::OkStatus();
  });
}

server::CommandAction DeclarePartiesCommand(const AdminGlobals* globals, CLI::App*) {
  return ActionOf([=] { return RunParties(*globals); });
}

server::CommandAction DeclareSubmitCommand(const AdminGlobals* globals, CLI::App* command) {
  auto flags = std::make_shared<SubmitFlags>();
  command->add_option("JOB", flags->spec, "Job spec (YAML)")->required();
  command
      ->add_option("--parties", flags->parties,
                   "Data parties in ring order (default: every connected party, by name)")
      ->delimiter(',');
  command->add_option("--recipient", flags->recipient,
                      "Party receiving the integrated table (default: the leader, which serves it "
                      "to admins)");
  command->add_option("--leader-party", flags->leader_party,
                      "The data party the leader is co-located with");
  command->add_option("--data", flags->data,
                      "PARTY=PATH: the table at that party (default: its configured table)");
  command->add_option("--round-timeout", flags->round_timeout,
                      "Seconds a party may take per request (default: the leader's)");
  command
      ->add_option("--valid-hours", flags->valid_hours,
                   "Hours the admin's signature over the job stays valid: parties refuse to "
                   "start it later (default 24)")
      ->check(CLI::Range(1, 24 * 366));
  return ActionOf([=] { return RunSubmit(*globals, *flags); });
}

server::CommandAction DeclareStatusCommand(const AdminGlobals* globals, CLI::App* command) {
  auto job_id = std::make_shared<std::string>();
  command->add_option("JOB", *job_id, "Job id")->required();
  return ActionOf([=] { return RunStatus(*globals, *job_id); });
}

server::CommandAction DeclareListCommand(const AdminGlobals* globals, CLI::App*) {
  return ActionOf([=] { return RunList(*globals); });
}

server::CommandAction DeclareWatchCommand(const AdminGlobals* globals, CLI::App* command) {
  auto job_id = std::make_shared<std::string>();
  auto expect_rounds = std::make_shared<uint32_t>(0);
  command->add_option("JOB", *job_id, "Job id")->required();
  command->add_option("--expect-rounds", *expect_rounds,
                      "Rounds you expect (e.g. the specializations of an earlier run of the same "
                      "spec): shows a progress bar and an ETA from the round timings");
  return ActionOf([=] { return RunWatch(*globals, *job_id, *expect_rounds); });
}

server::CommandAction DeclareCancelCommand(const AdminGlobals* globals, CLI::App* command) {
  auto job_id = std::make_shared<std::string>();
  auto reason = std::make_shared<std::string>();
  command->add_option("JOB", *job_id, "Job id")->required();
  command->add_option("--reason", *reason, "Why (recorded in the job's audit log)");
  return ActionOf([=] { return RunCancel(*globals, *job_id, *reason); });
}

server::CommandAction DeclareResultCommand(const AdminGlobals* globals, CLI::App* command) {
  auto job_id = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  command->add_option("JOB", *job_id, "Job id")->required();
  command->add_option("-o,--output", *out, "File to write (CSV)")->required();
  command->add_flag("--force", *force, "Overwrite an existing file");
  return ActionOf([=] { return RunResult(*globals, *job_id, *out, *force); });
}

server::CommandAction DeclareViewLogCommand(const AdminGlobals* globals, CLI::App* command) {
  auto job_id = std::make_shared<std::string>();
  command->add_option("JOB", *job_id, "Job id")->required();
  return ActionOf([=] { return RunViewLog(*globals, *job_id); });
}

server::CommandAction DeclareHealthCommand(const AdminGlobals* globals, CLI::App* command) {
  auto flags = std::make_shared<HealthFlags>();
  command->add_option("--service", flags->service,
                      "Service to check: \"\" (default, the whole server), fedanon.v1.PartyLink "
                      "or fedanon.v1.Admin");
  CLI::Option* bundle = command->add_option(
      "--bundle", flags->bundle,
      "Use this participant bundle (ca.crt, tls.crt, tls.key; any role) instead of --config");
  command->add_option("--leader", flags->leader, "HOST:PORT of the leader (with --bundle)")
      ->needs(bundle);
  bundle->needs("--leader");
  return ActionOf([=] { return RunHealth(*globals, *flags); });
}

}  // namespace fedanon::cli
