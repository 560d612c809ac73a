// PrepareJob at a party: the participants' sealing certificates, the admin's authorization, the
// ring, this party's own policy, the taxonomies and the table; then the job's state
// (party/job_state.h), its durable state, its run in the ledger and its start in the audit file.
#include <filesystem>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/printable.h"
#include "common/base/status_macros.h"
#include "common/engine/released_rows.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/wire/payload_chunks.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "party/job_state.h"
#include "party/party_agent.h"
#include "party/table_fingerprint.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

namespace {

// The prepare step's file access, in one place: `path` (as the job names it: relative to the
// data directory, or absolute) resolved with `..` and symbolic links, and refused unless it lies
// inside `data_dir`; then read with the bounds of its kind. Errors cross the network: they name
// `what` ("taxonomy of attribute 'age'", "table 'x.csv'") and the kind of problem, never the
// party's directory layout or the file's content; the details go to the party's log.
absl::StatusOr<std::string> ResolveInDataDir(const std::string& data_dir, const std::string& path,
                                             const std::string& what) {
  absl::StatusOr<std::string> resolved = base::ResolveInsideDirectory(data_dir, path);
  if (resolved.ok()) return resolved;
  spdlog::error("{} '{}' refused: {}", what, path, std::string(resolved.status().message()));
  if (resolved.status().code() == absl::StatusCode::kPermissionDenied) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " is outside the party's data directory"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(what, " cannot be resolved in the party's data directory"));
}

}  // namespace

ReleasedTableWriter PartyAgent::ReleasedTableWriterOf() const {
  return [this](const std::string& job_id,
                const std::function<absl::Status(const TablePieceSink&)>& produce) {
    return WriteReleasedTable(job_id, produce);
  };
}

absl::StatusOr<PartyMessage> PartyAgent::HandlePrepare(JobSlot& slot, const LeaderMessage& request,
                                                       bool reload,
                                                       std::string_view journaled_seal_key) {
  // A job held here is never replaced by a Prepare (signed or not): a job id names one run.
  if (slot.job) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", request.job_id(),
                     " is already prepared at this party; a Prepare does not "
                     "replace a job"));
  }
  // The job id names this party's output file when it is the recipient.
  RETURN_IF_ERROR(base::ValidateJobId(request.job_id()));
  auto job = std::make_unique<JobState>(options_, audit_);
  job->job_id = request.job_id();
  job->spec = request.prepare().spec();
  ASSIGN_OR_RETURN(const fedanon::v1::AuthorizedJob authorized,
                   Authorize(request.prepare(), reload, journaled_seal_key, job.get()));
  // Load the taxonomies named by the spec from our data directory, then our table.
  ASSIGN_OR_RETURN(const auto texts, ReadTaxonomies(*job));
  const std::string digest = crypto::Sha256(spec::CanonicalJobBytes(job->spec, texts));
  RETURN_IF_ERROR(JobAuthorizer::CheckDigest(authorized, digest));
  // Errors quote no label: the files are the party's, the message goes to the leader.
  auto schema = table::BuildPublicSchema(job->spec, texts, {.quote_labels = false});
  if (!schema.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': ", schema.status().message()));
  }
  const std::string& table_name = request.prepare().data_path().empty()
                                      ? options_.default_data_path
                                      : request.prepare().data_path();
  const table_postgres::PostgresSource* postgres = nullptr;
  ASSIGN_OR_RETURN(const std::string table, ResolveTable(table_name, &postgres));
  RETURN_IF_ERROR(CheckRing(request.prepare(), job.get()));
  if (request.prepare().max_message_bytes() > 0) {  // per-record payloads in chunks
    ASSIGN_OR_RETURN(const uint64_t limit,
                     wire::NegotiatedMessageLimit(request.prepare().max_message_bytes(),
                                                  options_.max_message_bytes));
    job->message_limit = limit;
    job->chunk_bytes = wire::ChunkBytesForLimit(limit);
  }
  // This party's own policy, whatever the admin signed.
  RETURN_IF_ERROR(CheckPartyPolicy(options_.policy, job->spec, options_.name, job->recipient));
  if (!reload && options_.policy.max_releases &&
      ledger_->Releases(table) >= *options_.policy.max_releases) {
    return absl::PermissionDeniedError(absl::StrCat(
        "party policy: table '", table_name, "' was released ", ledger_->Releases(table),
        " times; the party allows at most ", *options_.policy.max_releases, " (max_releases)"));
  }
  RETURN_IF_ERROR(LoadTable(*schema, table, table_name, postgres, job.get()));
  if (const uint64_t most = spec::MaxRecordsPerParty(job->spec);
      Records(*job) > most && !options_.Deviation().IgnoresRecordLimit()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': table '", table_name, "' holds ", Records(*job),
                     " records, more than the job's max_records_per_party of ", most,
                     " (the admin signs a larger limit in the spec for a larger table)"));
  }
  spdlog::info("job={} run={} prepared{}: {} records loaded", job->job_id, authorized.run_id(),
               job->vertical ? " (vertical)" : "", Records(*job));
  PartyMessage reply;
  reply.mutable_prepared()->set_digest(digest);
  if (!reload) RETURN_IF_ERROR(StartJob(request, authorized, digest, table, job.get()));
  slot.job = std::move(job);
  return reply;
}

absl::StatusOr<fedanon::v1::AuthorizedJob> PartyAgent::Authorize(
    const fedanon::v1::PrepareJob& prepare, bool reload, std::string_view journaled_seal_key,
    JobState* job) const {
  RETURN_IF_ERROR(spec::CheckFederatedRecoding(job->spec));
  RETURN_IF_ERROR(VerifyParticipants(prepare, job));
  // The admin's signature over ring, recipient, leader_party, our data path and the taxonomy
  // paths first: a job no admin authorized reads nothing (docs/threat-model.md, "Job
  // authorization").
  std::string announced_leader;
  for (const auto& p : prepare.participants()) {
    if (p.index() == UINT32_MAX) announced_leader = p.name();
  }
  ASSIGN_OR_RETURN(fedanon::v1::AuthorizedJob authorized,
                   authorizer_.Verify(prepare, announced_leader, absl::Now()));
  job->run_id = authorized.run_id();
  if (reload) {
    // The same run going on after this party restarted: it must still be open in the ledger.
    if (!ledger_->Continuable(authorized.run_id(), job->job_id)) {
      return absl::FailedPreconditionError(
          "job state: the run of this job has ended at this party (run ledger); it cannot "
          "resume");
    }
  } else if (ledger_->Used(authorized.run_id())) {
    return absl::PermissionDeniedError(
        "job not authorized: run id already used; starting over needs a new authorization from "
        "an admin");
  }
  // This party's own key for the job: the one the Prepare names its certificate of.
  RETURN_IF_ERROR(ChooseOwnSealKey(reload, journaled_seal_key, job));
  return authorized;
}

absl::StatusOr<std::string> PartyAgent::ResolveTable(
    const std::string& table_name, const table_postgres::PostgresSource** postgres) const {
  // A name the party configured as a PostgreSQL source is read from there (its ledger key says
  // so); any other is a file in the data directory.
  const auto pg = options_.postgres_tables.find(table_name);
  *postgres = pg == options_.postgres_tables.end() ? nullptr : &pg->second;
  auto resolved_table = *postgres != nullptr
                            ? absl::StatusOr<std::string>(absl::StrCat("postgres:", table_name))
                            : ResolveInDataDir(options_.data_dir, table_name,
                                               absl::StrCat("table '", table_name, "'"));
  if (!resolved_table.ok()) {
    return absl::Status(
        resolved_table.status().code(),
        absl::StrCat("party '", options_.name, "': ", resolved_table.status().message()));
  }
  return resolved_table;
}

absl::Status PartyAgent::LoadTable(const table::Dataset& schema, const std::string& table,
                                   const std::string& table_name,
                                   const table_postgres::PostgresSource* postgres,
                                   JobState* job) const {
  if (job->spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL) {
    return LoadHorizontalTable(schema, table, postgres, job);
  }
  if (postgres != nullptr && postgres->push_down) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", options_.name, "': table '", table_name,
        "' is configured push-down, which covers horizontal jobs with global recoding only: a "
        "vertical party keeps per-record partition state, so it reads its table into memory "
        "(configure the table without `mode: push-down` for vertical jobs)"));
  }
  return LoadVerticalTable(schema, table, postgres, job);
}

uint64_t PartyAgent::Records(const JobState& job) {
  return job.horizontal ? job.horizontal->tables.data->num_records
                        : job.vertical->replica().records();
}

absl::Status PartyAgent::StartJob(const LeaderMessage& request,
                                  const fedanon::v1::AuthorizedJob& authorized,
                                  const std::string& digest, const std::string& table,
                                  JobState* job) const {
  // Horizontal and vertical jobs keep durable state from here on (the Prepare first).
  if (!options_.state_dir.empty() && (job->horizontal || job->vertical)) {
    // The job's own sealing key (and statement-signing key) go with it (0600, deleted with the
    // job): after a restart of this party the job goes on with the keys it was prepared with,
    // even if seal.key was rotated meanwhile. Two PEM blocks, the sealing key first.
    ASSIGN_OR_RETURN(job->journal,
                     JobJournal::Start(options_.state_dir, job->job_id,
                                       {request.SerializeAsString(), "",
                                        job->own_seal->key_pem + job->own_seal->sign_key_pem},
                                       job->table_fingerprint));
  }
  // The run id is used from here on, and the run counts as a release of the table (checked and
  // recorded atomically, durably).
  if (absl::Status reserved =
          ledger_->Reserve(authorized.run_id(), job->job_id, table, options_.policy.max_releases);
      !reserved.ok()) {
    if (job->journal) {
      job->journal.reset();
      if (absl::Status st = JobJournal::Remove(options_.state_dir, job->job_id); !st.ok()) {
        spdlog::warn("job={} {}", job->job_id, std::string(st.message()));
      }
    }
    return reserved;
  }
  absl::StatusOr<crypto::Identity> admin =
      crypto::IdentityOfCertificate(request.prepare().authorization().admin_certificate());
  RETURN_IF_ERROR(audit_.Append(
      job->job_id, {.round = request.round(),
                    .kind = kAuditJobStart,
                    .form = kAuditPlaintext,
                    .to = {job->leader},
                    .numbers = {{"records", Records(*job)}},
                    .texts = {{"run_id", authorized.run_id()},
                              {"job_digest", absl::BytesToHexString(digest)},
                              {"admin", admin.ok() ? admin->name : "?"},
                              {"ring", absl::StrJoin(job->ring, ",")},
                              {"leader", job->leader},
                              {"recipient", job->recipient},
                              {"partitioning", job->vertical ? "vertical" : "horizontal"},
                              {"table", std::filesystem::path(table).filename().string()}}}));
  return absl::OkStatus();
}

absl::Status PartyAgent::ChooseOwnSealKey(bool reload, std::string_view journaled_seal_key,
                                          JobState* job) const {
  const auto named = job->seal_keys.find(options_.name);
  if (named == job->seal_keys.end()) {  // not a participant by name: nothing is sealed for it
    job->own_seal = seal_ring_.current();
    return absl::OkStatus();
  }
  const std::string& point = named->second->UncompressedPoint();
  if (!reload) {
    absl::StatusOr<std::shared_ptr<const SealKeyRing::Entry>> own =
        seal_ring_.ForNewJob(point, absl::Now());
    if (!own.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("party '", options_.name, "': ", own.status().message()));
    }
    job->own_seal = *std::move(own);
    if (job->own_seal != seal_ring_.current()) {
      spdlog::warn(
          "job={} is prepared with this party's previous sealing key (the leader had not yet "
          "learned the new certificate)",
          job->job_id);
    }
    return CheckOwnStatementKey(*job);
  }
  // After a restart: the key the job was prepared with, held still or kept in its durable state.
  job->own_seal = seal_ring_.Find(point);
  // A held sealing pair whose statement-signing pair was rotated since the Prepare is not the
  // job's: its durable state has the pair the job was prepared with.
  if (job->own_seal != nullptr && !CheckOwnStatementKey(*job).ok()) job->own_seal = nullptr;
  if (job->own_seal == nullptr && !journaled_seal_key.empty()) {
    // The sealing key's PEM block, then the statement-signing key's (if any).
    const size_t second = journaled_seal_key.find("-----BEGIN", 1);
    const std::string_view seal_pem = journaled_seal_key.substr(0, second);
    const std::string_view sign_pem =
        second == std::string_view::npos ? "" : journaled_seal_key.substr(second);
    // Matched by public key against the certificates the journaled Prepare names.
    absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> keys =
        crypto::SealKeyPairFromPem(seal_pem);
    if (keys.ok() && (*keys)->public_key().UncompressedPoint() == point) {
      auto entry = std::make_shared<SealKeyRing::Entry>();
      entry->key_pem = std::string(seal_pem);
      entry->keys = *std::move(keys);
      if (!sign_pem.empty()) {
        absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> sign =
            crypto::SealKeyPairFromPem(sign_pem);
        if (sign.ok()) {
          entry->sign_key_pem = std::string(sign_pem);
          entry->sign_point = (*sign)->public_key().UncompressedPoint();
        }
      }
      job->own_seal = std::move(entry);
    }
  }
  if (job->own_seal == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", options_.name,
        "': the job was prepared with a sealing key this party no longer holds (rotated, and "
        "not kept in the job's durable state); the job cannot resume"));
  }
  return CheckOwnStatementKey(*job);
}

absl::Status PartyAgent::CheckOwnStatementKey(const JobState& job) const {
  const auto named = job.statement_keys.find(options_.name);
  if (named == job.statement_keys.end()) return absl::OkStatus();  // makes no statements
  if (job.own_seal->sign_key_pem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", options_.name,
        "': this party holds no statement-signing key (party.yaml `sign:`), which a vertical "
        "job needs"));
  }
  if (job.own_seal->sign_point != named->second->UncompressedPoint()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", options_.name,
        "': the Prepare names a statement-signing certificate for this party that is not the "
        "one it holds with its sealing key"));
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::VerifyParticipants(const fedanon::v1::PrepareJob& prepare,
                                            JobState* job) const {
  const std::string ca_pem = authorizer_.ca_pem();
  // Sealing keys of the other participants: verified against the CA for the announced name,
  // so the relaying leader cannot substitute a key of its own.
  for (const auto& p : prepare.participants()) {
    // The leader announces itself (as a possible recipient) with index UINT32_MAX.
    const crypto::Identity id{
        p.index() == UINT32_MAX ? crypto::Role::kLeader : crypto::Role::kParty, p.name()};
    ASSIGN_OR_RETURN(auto key, crypto::VerifiedSealKey(p.seal_certificate(), ca_pem, id));
    // A revoked sealing certificate (party.yaml `crl:`; fails closed) is refused like a forged
    // one: nothing is sealed for, or accepted from, its holder.
    if (options_.revocation_check) {
      if (absl::Status st = options_.revocation_check(p.seal_certificate()); !st.ok()) {
        return absl::PermissionDeniedError(
            absl::StrCat("the sealing certificate of participant '", p.name(),
                         "' is refused by this party's revocation list: ", st.message()));
      }
    }
    job->seal_keys[p.name()] = std::move(key);
    // A vertical job's data parties sign statements to each other (ID matching, proposals,
    // verdicts) with their statement-signing keys, never with their sealing keys.
    if (job->spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL || p.index() == UINT32_MAX) {
      continue;
    }
    if (p.sign_certificate().empty()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "participant '", p.name(),
          "' comes without a statement-signing certificate, which every data party of a "
          "vertical job needs"));
    }
    absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> statement_key =
        crypto::VerifiedStatementKey(p.sign_certificate(), ca_pem, id);
    if (!statement_key.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("the statement-signing certificate of participant '", p.name(),
                       "' is refused: ", statement_key.status().message()));
    }
    if (options_.revocation_check) {
      if (absl::Status st = options_.revocation_check(p.sign_certificate()); !st.ok()) {
        return absl::PermissionDeniedError(
            absl::StrCat("the statement-signing certificate of participant '", p.name(),
                         "' is refused by this party's revocation list: ", st.message()));
      }
    }
    job->statement_keys[p.name()] = *std::move(statement_key);
  }
  return absl::OkStatus();
}

void PartyAgent::SetLinkedLeader(std::string name) {
  absl::MutexLock lock(&linked_leader_mu_);
  linked_leader_ = std::move(name);
}

absl::Status PartyAgent::CheckAnnouncedLeader(const std::string& announced) const {
  absl::MutexLock lock(&linked_leader_mu_);
  if (linked_leader_.empty() || announced == linked_leader_) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      kAnnouncedLeaderNotLinked, ": Prepare announces leader '", base::Printable(announced, 128),
      "', but this party is linked to leader '", linked_leader_, "' (its TLS certificate)"));
}

absl::Status PartyAgent::CheckRing(const fedanon::v1::PrepareJob& prepare, JobState* job) const {
  std::vector<std::string> data_parties;  // in participant-index order
  for (const auto& p : prepare.participants()) {
    if (p.index() == UINT32_MAX) {
      if (!job->leader.empty()) return absl::InvalidArgumentError("Prepare names two leaders");
      job->leader = p.name();
      RETURN_IF_ERROR(CheckAnnouncedLeader(p.name()));
    } else {
      data_parties.push_back(p.name());
    }
  }
  const bool vertical = prepare.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
  if (prepare.ring().empty()) {
    return absl::InvalidArgumentError("Prepare carries no ring (the order of the secure sum)");
  }
  std::vector<std::string> ring(prepare.ring().begin(), prepare.ring().end());
  std::vector<std::string> sorted_ring = ring;
  std::sort(sorted_ring.begin(), sorted_ring.end());
  std::vector<std::string> sorted_parties = data_parties;
  std::sort(sorted_parties.begin(), sorted_parties.end());
  if (std::adjacent_find(sorted_ring.begin(), sorted_ring.end()) != sorted_ring.end() ||
      sorted_ring != sorted_parties) {
    return absl::InvalidArgumentError(
        "the ring must list exactly the job's data-holding participants, each once");
  }
  if (std::find(ring.begin(), ring.end(), options_.name) == ring.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("party '", options_.name, "' is not in the job's ring"));
  }
  if (prepare.data_holding_leader() != !prepare.leader_party().empty()) {
    return absl::InvalidArgumentError("data_holding_leader and leader_party disagree");
  }
  if (!prepare.leader_party().empty() && ring.front() != prepare.leader_party()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data-holding leader's party '", prepare.leader_party(),
        "' must come first in the ring (placed later it would learn its predecessor's counts)"));
  }
  if (!vertical) {
    const size_t minimum = prepare.leader_party().empty() ? 2 : 3;
    if (ring.size() < minimum) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a horizontal ring needs at least ", minimum,
          " data parties (fewer would let the leader read one party's counts from the sum)"));
    }
    if (job->leader.empty()) {
      return absl::InvalidArgumentError(
          "Prepare does not announce the leader's sealing certificate (the ring's last hop is "
          "sealed for the leader)");
    }
  }
  job->recipient = prepare.recipient().empty() ? job->leader : prepare.recipient();
  if (vertical && std::find(ring.begin(), ring.end(), job->recipient) != ring.end() &&
      !prepare.spec().release().allow_data_holding_recipient()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "recipient '", job->recipient,
        "' holds data of this vertical job and could link the released rows to its own "
        "records; the signed spec does not allow it (release: {allow_data_holding_recipient: "
        "true})"));
  }
  if (!vertical && !job->seal_keys.count(job->recipient)) {
    return absl::InvalidArgumentError(
        absl::StrCat("recipient '", job->recipient, "' is not a participant"));
  }
  job->ring = std::move(ring);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> PartyAgent::ReadTaxonomies(
    const JobState& job) const {
  std::map<std::string, std::string> texts;
  for (const auto& a : job.spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    const std::string what = absl::StrCat("taxonomy of attribute '", a.name(), "'");
    auto path = ResolveInDataDir(options_.data_dir, a.taxonomy(), what);
    if (!path.ok()) {
      return absl::Status(path.status().code(),
                          absl::StrCat("party '", options_.name, "': ", path.status().message()));
    }
    auto text = base::ReadFile(*path, base::ReadFileOptions{
                                          .follow_symlinks = false,  // resolved above
                                          .max_bytes = base::kMaxTaxonomyBytes,
                                          .max_line_bytes = base::kMaxLineBytes,
                                          .what = "taxonomy",
                                      });
    if (!text.ok()) {
      spdlog::error("job={} cannot read taxonomy {}: {}", job.job_id, *path,
                    std::string(text.status().message()));
      return absl::FailedPreconditionError(
          absl::StrCat("party '", options_.name, "' cannot read the taxonomy of attribute '",
                       a.name(), "' (details in the party's log)"));
    }
    texts[a.name()] = *text;
  }
  return texts;
}

absl::Status PartyAgent::LoadVerticalTable(const table::Dataset& schema, const std::string& table,
                                           const table_postgres::PostgresSource* postgres,
                                           JobState* job) const {
  VerticalPartyOptions vopts;
  vopts.name = options_.name;
  vopts.releases_class = !job->ring.empty() && job->ring.front() == options_.name;
  vopts.parties = job->ring;
  vopts.deviation = options_.deviation.get();
  // A job this replica could not score as the centralized engine does is refused by name.
  RETURN_IF_ERROR(engine::CheckVerticalScoreComputable(job->spec));
  auto vp = VerticalParty::Load(job->spec, schema, table, vopts, postgres);
  if (!vp.ok()) {
    spdlog::error("job={} table {} does not match the job: {}", job->job_id, table,
                  std::string(vp.status().message()));
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': its table ",
                     postgres != nullptr ? "(a PostgreSQL source) cannot be read or " : "",
                     "does not match the job's schema (details in the party's log)"));
  }
  job->vertical = std::make_unique<VerticalJobParty>(*job, job->transfer, *std::move(vp),
                                                     ReleasedTableWriterOf());
  job->table_fingerprint = job->vertical->replica().table_fingerprint();
  return absl::OkStatus();
}

absl::StatusOr<std::string> PartyAgent::WriteReleasedTable(
    const std::string& job_id,
    const std::function<absl::Status(const TablePieceSink&)>& produce) const {
  const std::string path =
      (std::filesystem::path(options_.output_dir) / absl::StrCat(job_id, ".csv")).string();
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  const bool to_postgres = options_.postgres_sink.has_value();
  // A CSV file: written once. A file of this job already there was written before a restart of
  // this party (its reply never left); it is kept, never replaced or appended to. A PostgreSQL
  // sink: the table first goes to a private file beside it, then into the database in one
  // transaction, read back from the file as it goes (common/table_postgres/postgres_sink.h).
  if (!to_postgres && std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    spdlog::warn("job={} integrated table {} was written before a restart; kept as it is", job_id,
                 path);
    return path;
  }
  const std::string staged = to_postgres ? path + ".for-postgres" : path;
  ASSIGN_OR_RETURN(std::unique_ptr<base::AtomicFileWriter> file,
                   base::AtomicFileWriter::Open(
                       staged, {.mode = base::kPrivateFileMode, .replace_existing = to_postgres}));
  // Pieces gathered to about 1 MiB per write.
  std::string buffer;
  absl::Status written = produce([&](std::string_view piece) -> absl::Status {
    buffer.append(piece);
    if (buffer.size() < (size_t{1} << 20)) return absl::OkStatus();
    absl::Status st = file->Write(buffer);
    buffer.clear();
    return st;
  });
  if (written.ok() && !buffer.empty()) written = file->Write(buffer);
  if (written.ok()) written = file->Commit();
  if (!to_postgres) {
    if (absl::IsAlreadyExists(written)) {
      spdlog::warn("job={} integrated table {} appeared while it was written; kept as it is",
                   job_id, path);
      return path;
    }
    RETURN_IF_ERROR(written);
    return path;
  }
  RETURN_IF_ERROR(written);
  absl::Status st =
      table_postgres::WriteTableFileToPostgres(*options_.postgres_sink, job_id, staged);
  std::filesystem::remove(staged, ec);
  if (!st.ok()) {
    spdlog::error("job={} released table not written: {}", job_id, std::string(st.message()));
    return absl::Status(st.code(),
                        absl::StrCat("party '", options_.name,
                                     "' cannot write the released table into its PostgreSQL "
                                     "sink (details in the party's log)"));
  }
  return absl::StrCat("postgres:",
                      table_postgres::PostgresSinkTable(*options_.postgres_sink, job_id));
}

absl::Status PartyAgent::LoadHorizontalTable(const table::Dataset& schema, const std::string& table,
                                             const table_postgres::PostgresSource* postgres,
                                             JobState* job) const {
  job->horizontal =
      std::make_unique<HorizontalJobParty>(*job, job->transfer, ReleasedTableWriterOf());
  HorizontalTables& tables = job->horizontal->tables;
  if (postgres != nullptr && postgres->push_down) {
    if (job->spec.recoding() == fedanon::v1::RECODING_LOCAL) {
      return absl::FailedPreconditionError(spec::kLocalRecodingNotPushdown);
    }
    // Push-down: one check of the table now, then every statistic by SQL (no records here).
    auto pushdown = table_postgres::PostgresPushdown::Open(job->spec, *postgres, schema);
    if (!pushdown.ok()) {
      spdlog::error("job={} table {} (push-down) does not match the job: {}", job->job_id, table,
                    std::string(pushdown.status().message()));
      return absl::FailedPreconditionError(
          absl::StrCat("party '", options_.name,
                       "': its table (a PostgreSQL source) cannot be read or does not match the "
                       "job's schema (details in the party's log)"));
    }
    tables.pushdown = *std::move(pushdown);
    for (const std::string& warning : tables.pushdown->data().warnings) {
      spdlog::warn("job={} {}", job->job_id, warning);
    }
    tables.data = std::make_unique<table::Dataset>(tables.pushdown->data());
    job->table_fingerprint = tables.pushdown->fingerprint();
    for (const auto& q : tables.data->qids) tables.hier.emplace_back(&q);
    spdlog::info("job={} table {} in push-down mode: statistics computed by the database",
                 job->job_id, table);
    return absl::OkStatus();
  }
  const table::LoadDatasetOptions load{.max_input_bytes = options_.max_input_bytes};
  auto data = postgres != nullptr
                  ? table_postgres::LoadDatasetFromPostgres(job->spec, *postgres, &schema, load)
                  : table::LoadDataset(job->spec, table, &schema, load);
  if (!data.ok()) {
    // The detailed message may quote raw values (or name database hosts): it stays in the
    // party's log.
    spdlog::error("job={} table {} does not match the job: {}", job->job_id, table,
                  std::string(data.status().message()));
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': its table ",
                     postgres != nullptr ? "(a PostgreSQL source) cannot be read or " : "",
                     "does not match the job's schema (details in the party's log)"));
  }
  for (const std::string& warning : data->warnings) {
    spdlog::warn("job={} {}", job->job_id, warning);
  }
  tables.data = std::make_unique<table::Dataset>(*std::move(data));
  absl::StatusOr<std::string> fingerprint = TableFingerprint(*tables.data);
  if (!fingerprint.ok()) {
    spdlog::error("job={} table {}: {}", job->job_id, table,
                  std::string(fingerprint.status().message()));
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name,
                     "': its table cannot be read again (details in the party's log)"));
  }
  job->table_fingerprint = *std::move(fingerprint);
  for (const auto& q : tables.data->qids) tables.hier.emplace_back(&q);
  tables.tips = std::make_unique<engine::Tips>(tables.data.get(), &tables.hier);
  if (job->spec.recoding() == fedanon::v1::RECODING_LOCAL) {
    tables.local = std::make_unique<LocalParty>(tables.data.get(), job->spec);
  }
  return absl::OkStatus();
}

}  // namespace fedanon::party
