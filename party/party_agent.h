// The party role: answers the leader's requests from the party's own table. Raw values never
// leave this class — it replies only with digests, masked/sealed count vectors and rows sealed
// for the job's recipient. No gRPC types: server/party_client feeds it the requests that arrive
// on the party's outbound stream; party/in_process_channel calls it directly in tests.
// Thread-safe. The party takes part in several jobs at once: each job's state lives in its own
// slot with its own lock, so requests of one job are handled one at a time while requests of
// different jobs run in parallel (no state is shared between jobs but the thread-safe run ledger
// and audit files, one file per job). It holds at most kMaxHeldJobs jobs; beyond that the one
// the leader used least recently (a job whose end it never announced) is dropped.
//
// Durable jobs: a job's state (horizontal or vertical) is kept in a file (party/job_journal.h)
// written before each reply leaves; after a restart the party reloads it at the job's next request
// and answers a repeated request with the reply it gave before (one request, one answer), so the
// job goes on.
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
#include "common/table/postgres_sink.h"
#include "common/table/postgres_source.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "party/audit_log.h"
#include "party/job_authorization.h"
#include "party/party_policy.h"
#include "party/run_ledger.h"
#include "party/seal_key_ring.h"

namespace fedanon::party {

struct PartyAgentOptions {
  std::string name;               // this party's identity (as in its certificate)
  std::string data_dir;           // tables and taxonomies; relative paths resolve here
  std::string default_data_path;  // the table used when a job names none (relative to data_dir)
  std::string output_dir;         // where integrated tables land when this party is recipient
  uint64_t max_input_bytes = uint64_t{64} << 30;  // the largest table it reads (common/base)
  // This party's message limit (its transport's, server/transport.h): per-record payloads go in
  // chunks under min(this, the leader's limit in PrepareJob) (common/wire/payload_chunks.h).
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // Tables read from PostgreSQL (party.yaml `tables:`), by the name jobs use: a job's table name
  // found here is read from the database, any other from data_dir (docs/postgres.md).
  std::map<std::string, common::PostgresSource> postgres_tables;
  // Where the released table goes when this party is the recipient (party.yaml `sink:`);
  // nullopt: the file <output_dir>/<job_id>.csv.
  std::optional<common::PostgresSink> postgres_sink;
  std::string ca_pem;         // the federation CA (verifies other parties' seal certs)
  std::string seal_cert_pem;  // this party's sealing certificate and key (at start; UpdateSettings)
  std::string seal_key_pem;
  // How long a replaced sealing key still serves a Prepare that names its certificate (the
  // leader learns the new one from the party's announcement; party/seal_key_ring.h).
  absl::Duration retired_seal_grace = SealKeyRing::kDefaultRetiredGrace;
  // The party's certificate revocation check (party.yaml `crl:`, server/revocation.h): called
  // with every participant's sealing certificate at Prepare; unset: no revocation check.
  std::function<absl::Status(const std::string& cert_pem)> revocation_check;
  // Job authorization (party/job_authorization.h): the admins whose signed jobs this party runs;
  // nullopt: every admin the CA certified (party.yaml without `admins:`).
  std::optional<std::vector<std::string>> admins;
  // What this party will ever take part in (party.yaml `policy:`).
  PartyPolicy policy;
  // The run ledger (party/run_ledger.h): run ids used and releases per table. Empty: the file
  // `runs.ledger` in output_dir, or in memory only when output_dir is empty too.
  std::string ledger_path;
  // Where the per-job audit files `<job_id>.audit.jsonl` go (party/audit_log.h). Empty: the
  // directory of ledger_path (the party's state directory), or none when that is empty too.
  std::string audit_dir;
  // Where a horizontal job's durable state `<job_id>.state` lives (party/job_journal.h), so that
  // the job goes on after this party restarts. Empty: the directory of ledger_path, or no durable
  // state when that is empty too (a restarted party then cannot continue a job).
  std::string state_dir;
  // Tests and demonstrations only: "" (default); "never-participate" or "under-declare" (vertical
  // jobs, mohammed2011 §6); "inflate-released-counts" (a horizontal party that adds a record
  // that does not exist to the released counts). The party then misbehaves, loudly logged.
  std::string misbehave;
  // Tests only: called with (sender, purpose, plaintext) of every sealed payload this party opens
  // in a secure sum or a vertical job — what it learns from the others.
  std::function<void(const std::string& sender, const std::string& purpose,
                     const std::string& plaintext)>
      observe_opened;
  // Tests only: the ids common to every party in canonical order (a vertical job's ID matching),
  // to compare the release order with.
  std::function<void(const std::vector<std::string>& ids)> observe_canonical_ids;
};

// What a party re-reads without a restart (server/party_main.cc: every reload_seconds and on
// SIGHUP; docs/operations.md "Rotating keys and certificates").
struct PartyLiveSettings {
  std::string ca_pem;  // the CA bundle: participants' sealing certificates, admin signatures
  std::optional<std::vector<std::string>> admins;  // party.yaml `admins:` (nullopt: every admin)
  std::string seal_cert_pem;                       // seal.crt / seal.key as they are now
  std::string seal_key_pem;
};

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
  // Applies re-read settings: jobs prepared from now on are authorized with this CA bundle and
  // admins list and, when the sealing key pair changed, use the new one (a job already prepared
  // keeps the key it was prepared with until it ends; the replaced key still serves a Prepare
  // naming it for retired_seal_grace). True when the sealing certificate changed (announce it to
  // the leader). InvalidArgument (and nothing changes) when the pair does not belong together or
  // the certificate is not this party's under the new CA bundle.
  absl::StatusOr<bool> UpdateSettings(const PartyLiveSettings& settings);
  // The jobs this party holds (prepared and not yet ended).
  size_t held_jobs() const ABSL_LOCKS_EXCLUDED(jobs_mu_);

 private:
  struct JobState;
  using Reply = absl::StatusOr<fedanon::v1::PartyMessage>;
  using VerticalResult = fedanon::v1::VerticalStepResult;
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
  fedanon::v1::PartyMessage HandleLocked(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // One line in the current job's audit file (party/audit_log.h) for a message about to leave;
  // a message that cannot be recorded is not sent (the request fails).
  absl::Status Audit(JobSlot& slot, uint64_t round, AuditEntry entry) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply Dispatch(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // PrepareJob: verifies the participants' sealing certificates, reads the taxonomies and the
  // table, and replies with the digest of the job as this party loaded it. With `reload` (the
  // Prepare read back from the job's durable state after a restart), the run must be open in the
  // ledger and nothing is reserved, recorded or audited again.
  // `journaled_seal_key`: the job's own sealing key as its durable state kept it (reload only).
  Reply HandlePrepare(JobSlot& slot, const fedanon::v1::LeaderMessage& request, bool reload = false,
                      std::string_view journaled_seal_key = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // After a restart: rebuilds the job's state from its durable state file, if there is one (OK
  // and nothing done when there is none): the Prepare again, the state updates, the current
  // secure sum, the final check and the union, each answered request with the reply that left.
  absl::Status ReloadJob(JobSlot& slot, const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // ReloadJob's step for a vertical job's record (a vertical step or a chunk put with the reply
  // that left and its extra: the ID matcher's secret, the alignment, the release-order seed):
  // rebuilds the same replica state and keeps the reply for a repeated request. `aligned`: the
  // journal holds the ID alignment, so the matching's hops are skipped.
  absl::Status ReplayVertical(JobSlot& slot, const fedanon::v1::LeaderMessage& request,
                              const fedanon::v1::PartyMessage& stored, const std::string& extra,
                              bool aligned) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerifyParticipants(const fedanon::v1::PrepareJob& prepare, JobState* job) const;
  // The job's own sealing key pair: the one whose public key the Prepare names for this party
  // (after VerifyParticipants), from the ring or, on reload, from `journaled_seal_key`.
  absl::Status ChooseOwnSealKey(bool reload, std::string_view journaled_seal_key,
                                JobState* job) const;
  // Checks and stores the ring order, the leader and the recipient fixed at Prepare.
  absl::Status CheckRing(const fedanon::v1::PrepareJob& prepare, JobState* job) const;
  // The spec's taxonomy files (resolved against data_dir), by attribute name.
  absl::StatusOr<std::map<std::string, std::string>> ReadTaxonomies(const JobState& job) const;
  // `postgres`: the table is that PostgreSQL source, read into memory (else the CSV file).
  absl::Status LoadVerticalTable(const common::Dataset& schema, const std::string& table,
                                 const common::PostgresSource* postgres, JobState* job) const;
  // `postgres`: the table is that PostgreSQL source (else the CSV file `table`).
  absl::Status LoadHorizontalTable(const common::Dataset& schema, const std::string& table,
                                   const common::PostgresSource* postgres, JobState* job) const;
  // Writes the released table where this party keeps them (CSV file or PostgreSQL sink);
  // returns where it went, for the log and the audit file.
  absl::StatusOr<std::string> WriteReleasedTable(const std::string& job_id,
                                                 const std::string& csv) const;

  // Horizontal jobs: instructions and splits riding along a secure sum, a secure-sum hop, and a
  // hop (or the delivery) of the secure set union. Both follow the ring agreed at Prepare: input
  // only from the agreed predecessor (sender-authenticated), output only for the agreed
  // successor (the last one for the leader, or the recipient for the union), each secure-sum
  // chunk answered once (docs/threat-model.md).
  absl::Status ApplyUpdates(
      JobSlot& slot, const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply HandleSumStep(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply HandleUnionStep(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The ring's first party's mask of the current collect, sealed for the leader, once every chunk
  // of the collect went round the ring.
  Reply HandleSumUnmask(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The final check (three or more data parties): one more ring sum, without the leader, of the
  // global group counts of the final cut; every party re-checks the signed privacy model on it and
  // refuses to release unless it holds (common/engine/final_check.h, docs/threat-model.md).
  Reply HandleFinalCheck(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // OK when this party may release rows or released counts now: the final check passed here, or
  // the job has two data parties (the check is skipped; docs/threat-model.md).
  absl::Status ReleaseAllowed(JobSlot& slot, const std::string& what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // Vertical jobs: one function per step (party/vertical_party.h does the work).
  Reply HandleVertical(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply HandleVerticalStep(JobSlot& slot, const fedanon::v1::VerticalStep& step, uint64_t round)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalIdAlign(JobSlot& slot, const fedanon::v1::IdAlign& align, uint64_t round,
                               VerticalResult* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // ID matching in batches (docs/crypto.md, "ID matching"): a batch of this party's list, a hop
  // of a batch of any list (its own last one with three or more parties), its own list's digests
  // (two parties), the leader's common ids, and the alignment on them.
  absl::Status VerticalIdEncryptBatch(JobSlot& slot, const fedanon::v1::IdEncrypt& step,
                                      uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalIdReencryptBatch(JobSlot& slot, const fedanon::v1::IdReEncrypt& re,
                                        uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalIdDigests(JobSlot& slot, const fedanon::v1::IdDigests& d, uint64_t round,
                                 VerticalResult* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalIdCommon(JobSlot& slot, const fedanon::v1::IdCommon& c, uint64_t round,
                                VerticalResult* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalPropose(JobSlot& slot, uint64_t round, VerticalResult* out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // Signed statements relayed by the leader (party/vertical_statement.h): OK only if `signed_`
  // is the proposal of a data party of the job with a valid signature for this round;
  // PermissionDenied naming the party and the reason otherwise.
  absl::Status CheckSignedProposal(JobSlot& slot, const fedanon::v1::SignedProposal& signed_,
                                   uint64_t round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The commit's evidence: the owner's signed proposal of the candidate and the judges' signed
  // verdicts that make it accepted (or rejected).
  absl::Status CheckCommitEvidence(JobSlot& slot, const fedanon::v1::VerticalCommit& commit,
                                   uint64_t round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalWinner(JobSlot& slot, const fedanon::v1::VerticalWinner& winner,
                              uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalDeliver(JobSlot& slot, const fedanon::v1::VerticalDeliver& deliver,
                               uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalPublish(JobSlot& slot, const fedanon::v1::VerticalPublish& publish,
                               uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalCommit(JobSlot& slot, const fedanon::v1::VerticalCommit& commit,
                              uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalRelease(JobSlot& slot, const fedanon::v1::VerticalRelease& release,
                               uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalReleaseReportPage(JobSlot& slot, const fedanon::v1::ReleaseReportPage& ask,
                                         uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalAssemble(JobSlot& slot, const fedanon::v1::VerticalAssemble& assemble,
                                uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // `recoding: local` waves (party/vertical_local.h): per-group proposals, the owner's sealed
  // splits of the groups it won, and the wave's commit. The proposals are computed, serialized
  // and signed once per wave and answered page by page (protocol 1.4).
  absl::Status VerticalLocalPropose(JobSlot& slot, const fedanon::v1::LocalPropose& propose,
                                    uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // One page of another party's signed proposal list of the current wave (protocol 1.4): the
  // party is another data party of the ring, the wave the current one, the page in range, the
  // description the same on every page, no different content for a page already delivered, the
  // total bounded; once complete, the list's digest and its party's signature are checked.
  absl::Status VerticalLocalProposalsPut(JobSlot& slot, const fedanon::v1::LocalProposalsPut& put,
                                         uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The wave's delivered proposals: every other data party's list complete and verified for this
  // wave (else PermissionDenied naming the party and what is missing), with this party's own; then
  // the replica's own checks (state digests, recomputed winners: VerticalLocalReplica::
  // CheckProposals).
  absl::Status CheckDeliveredLocalProposals(JobSlot& slot, uint64_t round) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalLocalWinners(JobSlot& slot, const fedanon::v1::LocalWinners& won,
                                    uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalLocalCommit(JobSlot& slot, const fedanon::v1::LocalCommit& commit,
                                   uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // Confidence bounds: a judge's signed per-group verdicts on the other owners' splits of the
  // wave (sealed for it), computed, serialized and signed once per wave and answered page by page
  // (page 0 here, the others VerticalLocalVerdictsPage); an owner's accepted splits, sealed for
  // the parties that are not judges, once it checked every judge's delivered verdicts.
  absl::Status VerticalLocalJudge(JobSlot& slot, const fedanon::v1::LocalJudge& judge,
                                  uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalLocalVerdictsPage(JobSlot& slot, const fedanon::v1::LocalVerdictsPage& page,
                                         uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // One page of another judge's signed verdict list of the current wave: the sender a judge of
  // the job, the wave the current one, the page in range, the description the same on every
  // page, no different content for a page already delivered, the total bounded; once complete,
  // the list's digest and its judge's signature are checked.
  absl::Status VerticalLocalVerdictsPut(JobSlot& slot, const fedanon::v1::LocalVerdictsPut& put,
                                        uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  absl::Status VerticalLocalPublish(JobSlot& slot, const fedanon::v1::LocalPublish& publish,
                                    uint64_t round, VerticalResult* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The wave's delivered verdicts: every other judge's list complete and verified for this wave
  // (else PermissionDenied naming the judge and the pages missing), with this judge's own; none
  // relayed inside the step (`relayed` must be empty); then the replica's checks
  // (VerticalLocalReplica::CheckVerdicts).
  absl::Status CheckDeliveredLocalVerdicts(
      JobSlot& slot,
      const google::protobuf::RepeatedPtrField<fedanon::v1::SignedLocalVerdicts>& relayed,
      uint64_t round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // Chunked per-record payloads (protocol 1.2, common/wire/payload_chunks.h): a chunk of one of
  // this party's payloads for the leader to relay (ChunkGet), and a chunk of a payload sealed for
  // this party, checked as it arrives and kept until a step names it (ChunkPut).
  Reply HandleChunkGet(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  Reply HandleChunkPut(JobSlot& slot, const fedanon::v1::LeaderMessage& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // Seals `bytes` for `receiver`: whole into `whole` when the job does not chunk, else in chunks
  // kept for ChunkGet (described by `ref`, bound to the producing request's digest).
  // The stream is named by the producing step's key and the receiver.
  absl::Status SealPayload(JobSlot& slot, const std::string& receiver, uint64_t round,
                           const std::string& purpose, const std::string& bytes,
                           fedanon::v1::SealedPayload* whole, fedanon::v1::ChunkRef* ref) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // A winner's instruction sealed for `receiver` into `out` (whole or as a chunk stream).
  absl::Status SealInstruction(JobSlot& slot, const std::string& receiver, uint64_t round,
                               const std::string& instruction,
                               fedanon::v1::VerticalInstructions* out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // The payload a step names: `ref` (its chunks put here, checked and opened in order) when it
  // names a stream, else `whole`. Sets `sender` to the party that sealed it.
  absl::StatusOr<std::string> OpenPayload(JobSlot& slot, const fedanon::v1::SealedPayload& whole,
                                          const fedanon::v1::ChunkRef& ref, uint64_t round,
                                          const std::string& purpose, std::string* sender) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // A local-recoding wave's instructions as a step carries them (whole or as chunk streams),
  // opened and parsed, each with the party that sealed it.
  absl::StatusOr<std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>>
  OpenLocalInstructions(
      JobSlot& slot, const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& wholes,
      const google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>& refs, uint64_t round) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  // `bytes` sealed for a participant of the current job, and a payload sealed for this party.
  absl::StatusOr<fedanon::v1::SealedPayload> SealFor(JobSlot& slot, const std::string& receiver,
                                                     uint64_t round, const std::string& purpose,
                                                     const std::string& bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);
  // `observe`: tell options_.observe_opened (tests); false for the chunks of a payload, which
  // is told once, whole.
  absl::StatusOr<std::string> OpenSealed(JobSlot& slot, const fedanon::v1::SealedPayload& payload,
                                         uint64_t round, const std::string& purpose,
                                         bool observe = true) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot.mu);

  const PartyAgentOptions options_;
  SealKeyRing seal_ring_;                    // thread-safe on its own
  JobAuthorizer authorizer_;                 // thread-safe on its own
  const std::unique_ptr<RunLedger> ledger_;  // thread-safe on its own
  const AuditLog audit_;                     // thread-safe on its own
  // Lock order: a slot's mu, then jobs_mu_ (never the other way round).
  mutable absl::Mutex jobs_mu_;
  std::map<std::string, std::shared_ptr<JobSlot>> jobs_ ABSL_GUARDED_BY(jobs_mu_);
  uint64_t use_counter_ ABSL_GUARDED_BY(jobs_mu_) = 0;
};

}  // namespace fedanon::party
