// The party role's entry point: answers the leader's requests from the party's own table. Raw
// values never leave a party — it replies only with digests, masked/sealed count vectors and rows
// sealed for the job's recipient. No gRPC types: server/party_client feeds it the requests that
// arrive on the party's outbound stream; party/testing/in_process_channel.h calls it directly in
// tests.
// The agent is the dispatcher: it keeps the jobs, prepares them (job_setup.cc: participants, the
// admin's authorization, policy, tables), records every answer durably and in the audit file,
// and routes each request to the job's protocol class (job_state.h: secure sum, final check and
// union for horizontal jobs; ID matching, rounds, waves and release for vertical ones).
// Thread-safe. The party takes part in several jobs at once: each job's state lives in its own
// slot with its own lock, so requests of one job are handled one at a time while requests of
// different jobs run in parallel (no state is shared between jobs but the thread-safe run ledger
// and audit files, one file per job). It holds at most kMaxHeldJobs jobs; beyond that the one
// the leader used least recently (a job whose end it never announced) is dropped.
//
// Durable jobs: a job's state (horizontal or vertical) is kept in a file (party/job_journal.h)
// written before each reply leaves; after a restart the party reloads it at the job's next request
// (job_reload.cc) and answers a repeated request with the reply it gave before (one request, one
// answer), so the job goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/table/dataset.h"
#include "common/table_postgres/postgres_sink.h"
#include "common/table_postgres/postgres_source.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "party/audit_log.h"
#include "party/job_authorization.h"
#include "party/job_context.h"
#include "party/party_agent_options.h"
#include "party/party_policy.h"
#include "party/run_ledger.h"
#include "party/seal_key_ring.h"

namespace fedanon::party {

// The refusal of a Prepare that announces another leader than the one the party's link is
// connected to (PartyAgent::SetLinkedLeader).
inline constexpr char kAnnouncedLeaderNotLinked[] = "announced leader is not the linked leader";

struct JobState;  // party/job_state.h

class PartyAgent {
 public:
  static constexpr size_t kMaxHeldJobs = 64;  // the leader's largest max_concurrent_jobs

  static absl::StatusOr<std::unique_ptr<PartyAgent>> Create(PartyAgentOptions options);
  ~PartyAgent();

  // Handles one request and returns the reply (an ErrorReply on failure; never throws).
  fedanon::v1::PartyMessage Handle(const fedanon::v1::LeaderMessage& request)
      ABSL_LOCKS_EXCLUDED(jobs_mu_);

  const std::string& name() const { return options_.name; }
  // The current sealing certificate (what the hello and an announcement carry).
  std::string seal_cert_pem() const;
  // Its current statement-signing certificate ("" when it has none).
  std::string sign_cert_pem() const;
  // Applies re-read settings: jobs prepared from now on are authorized with this CA bundle and
  // admins list and, when the sealing key pair changed, use the new one (a job already prepared
  // keeps the key it was prepared with until it ends; the replaced key still serves a Prepare
  // naming it for retired_seal_grace). True when the sealing certificate changed (announce it to
  // the leader). InvalidArgument (and nothing changes) when the pair does not belong together or
  // the certificate is not this party's under the new CA bundle.
  absl::StatusOr<bool> UpdateSettings(const PartyLiveSettings& settings);
  // The jobs this party holds (prepared and not yet ended).
  size_t held_jobs() const ABSL_LOCKS_EXCLUDED(jobs_mu_);
  // The name in the TLS certificate of the leader this party's link is connected to (the daemon
  // tells it at every hello, server/party/party_client.h). From then on a Prepare must announce
  // that leader as its leader participant: the released data of a job whose recipient is the leader
  // is sealed for the leader the party is talking to, not for any leader-role certificate the
  // Prepare names. Empty (no link yet, or a party in a test harness): not checked.
  void SetLinkedLeader(std::string name) ABSL_LOCKS_EXCLUDED(linked_leader_mu_);

 private:
  using Reply = absl::StatusOr<fedanon::v1::PartyMessage>;
  // One job's place in the agent: its state (null until prepared and after its end) behind the
  // lock every request of the job holds while it is handled.
  struct JobSlot {
    absl::Mutex mu;
    std::unique_ptr<JobState> job ABSL_GUARDED_BY(mu);
    // Guarded by the agent's jobs_mu_ (not expressible here): requests holding the slot, and
    // when it was last used (for dropping the least recently used job).
    int users = 0;
    uint64_t last_used = 0;
  };

  PartyAgent(PartyAgentOptions options, std::shared_ptr<const SealKeyRing::Entry> seal,
             std::unique_ptr<RunLedger> ledger);
  // The slot of `job_id` (created when absent), counted as in use until ReleaseSlot.
  std::shared_ptr<JobSlot> AcquireSlot(const std::string& job_id) ABSL_LOCKS_EXCLUDED(jobs_mu_);
  // Ends a request's use of `slot`; forgets the slot when it holds no job and nobody uses it.
  void ReleaseSlot(const std::string& job_id, JobSlot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu)
      ABSL_LOCKS_EXCLUDED(jobs_mu_);
  // Dispatch, then the journal: a fresh answer is recorded before it leaves; an error becomes an
  // ErrorReply, recorded in the audit file.
  fedanon::v1::PartyMessage HandleLocked(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // Routes a request to the job's protocol (job_state.h) once the job is there (reloaded from its
  // durable state after a restart) and of the kind the request is for.
  Reply Dispatch(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply HandleEndJob(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // PrepareJob (job_setup.cc): verifies the participants' sealing certificates, the admin's
  // authorization, reads the taxonomies and the table, and replies with the digest of the job as
  // this party loaded it. With `reload` (the Prepare read back from the job's durable state after
  // a restart), the run must be open in the ledger and nothing is reserved, recorded or audited
  // again. `journaled_seal_key`: the job's own sealing key as its durable state kept it.
  Reply HandlePrepare(JobSlot& slot, const fedanon::v1::LeaderMessage& request, bool reload = false,
                      std::string_view journaled_seal_key = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The signed job before anything is read: the participants' sealing certificates, the admin's
  // authorization of ring, recipient, leader and data path, the run id against the ledger, and
  // this party's own sealing key for the job.
  absl::StatusOr<fedanon::v1::AuthorizedJob> Authorize(const fedanon::v1::PrepareJob& prepare,
                                                       bool reload,
                                                       std::string_view journaled_seal_key,
                                                       JobState* job) const;
  // The table a job names: a PostgreSQL source the party configured under that name (`postgres`
  // set), else a file inside the data directory.
  absl::StatusOr<std::string> ResolveTable(const std::string& table_name,
                                           const table_postgres::PostgresSource** postgres) const;
  // The table loaded for the job's partitioning (a push-down table only for horizontal jobs).
  absl::Status LoadTable(const table::Dataset& schema, const std::string& table,
                         const std::string& table_name,
                         const table_postgres::PostgresSource* postgres, JobState* job) const;
  static uint64_t Records(const JobState& job);
  // A new job's durable state (the Prepare first, with the job's own sealing key), its run in the
  // ledger (the run id used; a release of the table) and its start in the audit file.
  absl::Status StartJob(const fedanon::v1::LeaderMessage& request,
                        const fedanon::v1::AuthorizedJob& authorized, const std::string& digest,
                        const std::string& table, JobState* job) const;
  absl::Status VerifyParticipants(const fedanon::v1::PrepareJob& prepare, JobState* job) const;
  // The job's own sealing key pair: the one whose public key the Prepare names for this party
  // (after VerifyParticipants), from the ring or, on reload, from `journaled_seal_key`.
  absl::Status ChooseOwnSealKey(bool reload, std::string_view journaled_seal_key,
                                JobState* job) const;
  // A vertical job's data party: the statement-signing key of its chosen pair must be the one
  // whose certificate the Prepare names for it.
  absl::Status CheckOwnStatementKey(const JobState& job) const;
  // Checks and stores the ring order, the leader and the recipient fixed at Prepare.
  absl::Status CheckRing(const fedanon::v1::PrepareJob& prepare, JobState* job) const;
  // The leader a Prepare announces is the one this party is linked to (SetLinkedLeader).
  absl::Status CheckAnnouncedLeader(const std::string& announced) const
      ABSL_LOCKS_EXCLUDED(linked_leader_mu_);
  // The spec's taxonomy files (resolved against data_dir), by attribute name.
  absl::StatusOr<std::map<std::string, std::string>> ReadTaxonomies(const JobState& job) const;
  // `postgres`: the table is that PostgreSQL source, read into memory (else the CSV file).
  absl::Status LoadVerticalTable(const table::Dataset& schema, const std::string& table,
                                 const table_postgres::PostgresSource* postgres,
                                 JobState* job) const;
  // `postgres`: the table is that PostgreSQL source (else the CSV file `table`).
  absl::Status LoadHorizontalTable(const table::Dataset& schema, const std::string& table,
                                   const table_postgres::PostgresSource* postgres,
                                   JobState* job) const;
  // Writes the released table where this party keeps them (CSV file or PostgreSQL sink) as
  // `produce` hands it on; returns where it went, for the log and the audit file.
  absl::StatusOr<std::string> WriteReleasedTable(
      const std::string& job_id,
      const std::function<absl::Status(const TablePieceSink&)>& produce) const;
  ReleasedTableWriter ReleasedTableWriterOf() const;

  // After a restart (job_reload.cc): rebuilds the job's state from its durable state file, if
  // there is one (OK and nothing done when there is none): the Prepare again, then every answered
  // request handed to its protocol again, each keeping the reply that left.
  absl::Status ReloadJob(JobSlot& slot, const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  const PartyAgentOptions options_;
  SealKeyRing seal_ring_;                    // thread-safe on its own
  JobAuthorizer authorizer_;                 // thread-safe on its own
  const std::unique_ptr<RunLedger> ledger_;  // thread-safe on its own
  const AuditLog audit_;                     // thread-safe on its own
  // Lock order: a slot's mu, then jobs_mu_ (never the other way round).
  mutable absl::Mutex linked_leader_mu_;
  std::string linked_leader_ ABSL_GUARDED_BY(linked_leader_mu_);
  mutable absl::Mutex jobs_mu_;
  std::map<std::string, std::shared_ptr<JobSlot>> jobs_ ABSL_GUARDED_BY(jobs_mu_);
  uint64_t use_counter_ ABSL_GUARDED_BY(jobs_mu_) = 0;
};

}  // namespace fedanon::party
