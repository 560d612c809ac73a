#include "party/party_agent.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file_io.h"
#include "common/base/parallel_for.h"
#include "common/base/printable.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/engine/count_source.h"
#include "common/engine/final_check.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/engine/released_rows.h"
#include "common/engine/tips.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "common/table/postgres_stats.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "crypto/secret_bytes.h"
#include "crypto/secure_sum_masks.h"
#include "crypto/shuffle.h"
#include "crypto/signature.h"
#include "party/id_matching.h"
#include "party/job_journal.h"
#include "party/local_party.h"
#include "party/table_fingerprint.h"
#include "party/vertical_party.h"
#include "party/vertical_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

using common::CsvLine;
using common::DecodeWords;
using common::EncodeWords;
using common::FromProto;
using common::OpenUnionList;
using common::OpenUnionRows;
using common::ParallelFor;
using common::SumPurpose;
using common::UnionListContext;
using common::UnionRowContext;

absl::Status ShuffleRows(google::protobuf::RepeatedPtrField<std::string>* rows) {
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows->size()));
  std::vector<std::string> shuffled(rows->size());
  for (size_t i = 0; i < perm.size(); ++i) shuffled[i] = std::move((*rows)[perm[i]]);
  rows->Clear();
  for (auto& r : shuffled) *rows->Add() = std::move(r);
  return absl::OkStatus();
}

// The prepare step's file access, in one place: `path` (as the job names it: relative to the
// data directory, or absolute) resolved with `..` and symbolic links, and refused unless it lies
// inside `data_dir`; then read with the bounds of its kind. Errors cross the network: they name
// `what` ("taxonomy of attribute 'age'", "table 'x.csv'") and the kind of problem, never the
// party's directory layout or the file's content; the details go to the party's log.
absl::StatusOr<std::string> ResolveInDataDir(const std::string& data_dir, const std::string& path,
                                             const std::string& what) {
  absl::StatusOr<std::string> resolved = common::ResolveInsideDirectory(data_dir, path);
  if (resolved.ok()) return resolved;
  spdlog::error("{} '{}' refused: {}", what, path, std::string(resolved.status().message()));
  if (resolved.status().code() == absl::StatusCode::kPermissionDenied) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " is outside the party's data directory"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(what, " cannot be resolved in the party's data directory"));
}

// The points of an ID list as the ID-matching steps carry them (serialized IdList).
// Parses an ID list and frees `bytes`; the points are moved out of the message, not copied
// (bounded memory: at 1M ids each copy of a list is about 100 MB).
absl::StatusOr<std::vector<std::string>> ParseIdList(std::string& bytes) {
  fedanon::v1::IdList list;
  const bool parsed = list.ParseFromString(bytes);
  std::string().swap(bytes);
  if (!parsed) return absl::InvalidArgumentError("an ID list does not parse");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(list.points_size()));
  for (std::string& p : *list.mutable_points()) out.push_back(std::move(p));
  return out;
}

std::string SerializeIdList(const std::vector<std::string>& points) {
  fedanon::v1::IdList list;
  for (const auto& p : points) list.add_points(p);
  return list.SerializeAsString();
}

// For the audit file: who the payloads are sealed for, and a candidate's coordinates.
std::vector<std::string> Receivers(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& payloads) {
  std::vector<std::string> out;
  for (const auto& p : payloads) out.push_back(p.receiver());
  return out;
}

std::vector<std::pair<std::string, uint64_t>> CandidateNumbers(
    const fedanon::v1::VerticalCandidate& c, std::vector<std::pair<std::string, uint64_t>> more) {
  more.insert(more.begin(), {{"attribute", c.attribute()},
                             {"node", static_cast<uint64_t>(c.node())},
                             {"candidate", static_cast<uint64_t>(c.candidate())}});
  return more;
}

// The number of records a serialized VerticalInstruction refines (0 when it does not parse).
uint64_t InstructionRecords(const std::string& bytes) {
  fedanon::v1::VerticalInstruction instruction;
  return instruction.ParseFromString(bytes) ? instruction.records() : 0;
}

// The steps whose answers carry per-record payloads, by a key unique in the job (it names their
// chunk streams): "" for the others.
std::string ProducingStepKey(const fedanon::v1::VerticalStep& step, uint64_t round) {
  auto candidate = [](const fedanon::v1::VerticalCandidate& c) {
    return absl::StrCat(c.attribute(), ".", c.node(), ".", c.candidate());
  };
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kWinner:
      return absl::StrCat("instruction/r", round, "/", candidate(step.winner().candidate()),
                          "/judges");
    case fedanon::v1::VerticalStep::kPublish:
      return absl::StrCat("instruction/r", round, "/", candidate(step.publish().candidate()),
                          "/others");
    case fedanon::v1::VerticalStep::kRelease:
      return "columns";
    case fedanon::v1::VerticalStep::kLocalWinners:
      return absl::StrCat("local-instruction/r", round);
    case fedanon::v1::VerticalStep::kLocalPublish:
      return absl::StrCat("local-instruction/r", round, "/others");
    default:
      return "";
  }
}

// ---- ID matching in batches (docs/crypto.md, "ID matching") ----

using common::IdBatchPurpose;
using common::IdDigestsPurpose;

// The batch size a batched request names: fixed by the first one of the job.
absl::Status CheckBatchSize(uint32_t* fixed, uint32_t named) {
  if (named == 0) return absl::InvalidArgumentError("a batched ID-matching step names no size");
  if (*fixed == 0) *fixed = named;
  if (*fixed != named) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ID batch size changed from ", *fixed, " to ", named, " ids"));
  }
  return absl::OkStatus();
}

// `batch` < `batches`, and one count per origin's list for the whole job.
absl::Status CheckBatchCount(std::map<std::string, uint32_t>& counts, const std::string& origin,
                             uint32_t batch, uint32_t batches) {
  if (batches == 0 || batch >= batches) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", batch, " of ", batches, " of '",
                                                   origin, "''s list is out of range"));
  }
  const auto [it, inserted] = counts.emplace(origin, batches);
  if (!inserted && it->second != batches) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the batch count of '", origin, "''s list changed from ", it->second, " to ", batches));
  }
  return absl::OkStatus();
}

// Every batch but the last holds exactly `size` ids, the last 1 to `size` (0 only when the list
// is empty: one empty batch).
absl::Status CheckBatchPoints(const std::string& origin, uint32_t batch, uint32_t batches,
                              uint32_t size, size_t count) {
  const bool last = batch + 1 == batches;
  if ((!last && count != size) || (last && (count > size || (count == 0 && batches > 1)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", batch, " of ", batches, " of '", origin, "''s list holds ", count,
                     " ids; every batch but the last holds ", size, " and the last 1 to ", size));
  }
  return absl::OkStatus();
}

// A batch's reply must fit the message limit this party negotiated (0: none announced): the
// leader sizes the batches for its own limit, which may be larger than this party's.
absl::Status CheckBatchFits(const fedanon::v1::VerticalStepResult& out, uint64_t message_limit,
                            uint32_t batch_ids) {
  constexpr uint64_t kEnvelopeSlack = 512;  // request id, job id and framing around the result
  const uint64_t bytes = out.ByteSizeLong() + kEnvelopeSlack;
  if (message_limit > 0 && bytes > message_limit) {
    return absl::FailedPreconditionError(
        absl::StrCat("a batch of ", batch_ids, " ids makes a reply of ", bytes,
                     " bytes, over this party's message limit of ", message_limit, " bytes"));
  }
  return absl::OkStatus();
}

// This process's memory at a phase boundary of a vertical job (bench/vertical_daemons.sh prints
// these lines: where each party peaks).
void LogUsage(const std::string& job_id, std::string_view phase) {
  const ProcessUsage usage = CurrentProcessUsage();
  spdlog::info("job={} memory at {}: RSS {:.0f} MB, peak RSS {:.0f} MB, process CPU {:.2f} s",
               job_id, phase, usage.rss_mb, usage.peak_rss_mb, usage.cpu_seconds);
}

}  // namespace

constexpr char kNoJobState[] =
    "no prepared job with this id (this party holds no state of the job: it was not prepared "
    "here, or the party restarted without its durable state, so the job cannot resume)";

// Everything the party holds for the job it is taking part in.
struct PartyAgent::JobState {
  std::string job_id;
  fedanon::v1::JobSpec spec;
  std::unique_ptr<common::Dataset> data;  // stable address: hierarchies point into it
  std::vector<common::AttributeHierarchy> hier;
  std::unique_ptr<common::Tips> tips;
  // A push-down table (party.yaml `mode: push-down`): the statistics come from SQL and there are
  // no records in memory (tips stays null).
  std::unique_ptr<common::PostgresPushdown> pushdown;
  // `recoding: local` (party/local_party.h): this party's groups; null for global recoding.
  std::unique_ptr<LocalParty> local;
  std::map<std::string, std::unique_ptr<crypto::SealPublicKey>> seal_keys;  // by party name
  // This party's own sealing key pair for the job: the one whose certificate the Prepare names
  // for it, held until the job ends (party/seal_key_ring.h), whatever is rotated meanwhile.
  std::shared_ptr<const SealKeyRing::Entry> own_seal;
  uint64_t applied_updates = 0;
  std::string update_chain;  // common::ChainStateUpdate over every applied update
  // Continuous intervals (attribute, node) whose split the leader decided (once each).
  std::set<std::pair<uint32_t, int32_t>> split_decided;
  // The local counts of the secure sum in progress (kept across its chunks), the digest of the
  // request they answer, and the reply given to each chunk (one request, one answer).
  uint64_t counts_collect = UINT64_MAX;
  std::string counts_digest;
  uint32_t counts_chunks = 0;
  // The ring's first party: the seed of its mask over the current collect's vector
  // (crypto::MaskWordsFromSeed), handed to the leader sealed once the ring is done (SumUnmask),
  // and that answer (one request, one answer); after a restart, the seed recorded before it.
  std::string sum_seed;
  std::optional<std::pair<std::string, PartyMessage>> unmask_answer;
  std::optional<std::string> restored_sum_seed;
  std::vector<uint64_t> counts;
  bool counts_release = false;  // the counts are those of the released table
  std::map<uint32_t, std::pair<std::string, PartyMessage>> answered;  // chunk -> (purpose, reply)
  // The data parties in the ring order agreed at Prepare, the leader's name and the recipient.
  std::vector<std::string> ring;
  std::string leader;
  std::string recipient;
  // The leader has asked for an answer computed from this party's data (recorded in the run
  // ledger: the run counts as a release whatever the leader says later).
  bool released = false;
  // Vertical jobs: this party's replica and its ID matcher.
  std::unique_ptr<VerticalParty> vertical;
  std::unique_ptr<IdMatcher> matcher;
  double id_matching_cpu_start = 0;  // process CPU seconds at IdEncrypt (for the log)
  // The owner's instruction of the round it won, kept until the judges accepted it (then sealed
  // for the other parties) or the round ends.
  struct PendingInstruction {
    uint64_t round = 0;
    fedanon::v1::VerticalCandidate candidate;
    std::string bytes;  // a serialized VerticalInstruction
  };
  std::optional<PendingInstruction> pending;
  // The last candidate of its own whose judges' sealed acceptances this party checked (publish):
  // it commits its own candidate only after that, whatever the leader says.
  std::optional<std::pair<uint64_t, fedanon::v1::VerticalCandidate>> published;
  std::string order_seed;  // the secret seed of the release order, once drawn or received
  // The release report's steps (protocol 1.4): a report too large for one message is answered
  // in pages of these (ReleaseReportPage); derived again on a replayed release (the steps are the
  // replica's state, so the pages are the same bytes).
  std::optional<std::vector<fedanon::v1::SpecializationStep>> release_steps;
  // Horizontal jobs with three or more data parties: the final check of the privacy model on the
  // global counts of the final cut (HandleFinalCheck). Once started, the cut is fixed.
  struct FinalCheck {
    common::FinalCheckLayout layout;
    std::string chain;             // the update chain (the cut) the check runs on
    std::vector<uint64_t> counts;  // this party's counts in the layout
    std::vector<uint64_t> mask;    // the ring's first party: its own random mask
    std::vector<uint64_t> total;   // the global vector, filled as its chunks arrive
    std::vector<bool> have;        // chunks of `total` received
    uint64_t chunk_words = 0;
    uint32_t chunks = 0;
    // (phase, chunk) -> (the request's bytes, the reply): one request, one answer.
    std::map<uint64_t, std::pair<std::string, PartyMessage>> answered;
    bool passed = false;
    std::string failure;  // the named reason when the model does not hold
  };
  std::optional<FinalCheck> final_check;
  std::string run_id;  // from the admin's authorization (bound into signed statements)
  // The table this job answers from, as read at Prepare (party/table_fingerprint.h; a push-down
  // table: its snapshot's fingerprint).
  std::string table_fingerprint;
  // Chunked per-record payloads (protocol 1.2; common/wire/payload_chunks.h). 0: the leader did
  // not ask for chunks (payloads travel whole, protocol 1.1).
  uint64_t chunk_bytes = 0;
  uint64_t message_limit = 0;  // the negotiated limit the chunks are sized for
  // This party's chunked payloads, by stream, until a later round (ChunkGet serves them).
  struct Outgoing {
    uint64_t round = 0;
    fedanon::v1::ChunkRef ref;
    std::vector<fedanon::v1::SealedPayload> chunks;
  };
  std::map<std::string, Outgoing> outbox;
  // Chunks of payloads sealed for this party, by (sender, stream), until a step names them.
  std::map<std::pair<std::string, std::string>, common::ChunkReceiver> inbox;
  // One request, one answer for the steps that produce chunked payloads: step key -> (digest
  // of the request, the reply given).
  std::map<std::string, std::pair<std::string, PartyMessage>> step_answers;
  // The producing step being handled: its key (names its streams) and request digest.
  std::pair<std::string, std::string> producing;
  // The secure union: this party's hop and (recipient) the delivery, each answered once: the
  // request's bytes and the reply.
  std::optional<std::pair<std::string, PartyMessage>> union_answer;
  std::optional<std::pair<std::string, PartyMessage>> deliver_answer;
  // Durable state (party/job_journal.h; null without a state directory). A handler that computed
  // a new answer sets `fresh_answer` (and `journal_extra`); HandleLocked records the request and
  // the reply before it leaves. While `replaying` (reloading after a restart) nothing is audited
  // or recorded again, and the final check takes `restored_mask` instead of drawing one.
  std::unique_ptr<JobJournal> journal;
  bool fresh_answer = false;
  std::string journal_extra;
  bool replaying = false;
  std::optional<std::vector<uint64_t>> restored_mask;
  // Vertical jobs (durable like horizontal ones): the last vertical step answered, by the digest
  // of its request, with the reply that left (the leader repeats only its last request to a
  // party: one request, one answer). While replaying, the ID matcher's key and order seed and the
  // ID alignment come back from the journal instead of being drawn or computed again.
  std::optional<std::pair<std::string, PartyMessage>> vertical_last;
  std::string restored_matcher_secret;
  std::optional<IdAlignment> restored_alignment;
  // ID matching (in batches): the batch size, fixed by the first step; each origin's batch count;
  // per (origin and hop, batch) the digest of the request answered (a byte-identical repeat is
  // answered again, another request refused); this party's own list as digests per batch (from
  // its own last hop, or delivered by the other of two parties: id_digests_delivered holds the
  // digest of each delivery); the leader's common ids as they arrive, with the answer to each
  // batch; the alignment on them once complete (until IdAlign); after a restart, the signature
  // of the statement on them that left.
  uint32_t id_batch_ids = 0;
  std::map<std::string, uint32_t> id_batches;
  std::map<std::pair<std::string, uint32_t>, std::string> id_batch_answered;
  std::map<uint32_t, std::string> id_own_digests;
  std::map<uint32_t, std::string> id_digests_delivered;
  std::string id_common;
  uint32_t id_common_batches = 0;
  std::map<uint32_t, std::pair<std::string, VerticalResult>> id_common_answered;
  std::optional<IdAlignment> id_alignment;
  std::string restored_id_common_signature;
  // Vertical local recoding in pages (protocol 1.4; docs/vertical.md "Local recoding"): this
  // party's proposal list of the current wave, serialized and signed once (every page request of
  // the wave is answered from it), and every other party's signed list of the wave as its pages
  // arrive (LocalProposalsPut).
  struct LocalOwnList {
    uint64_t wave = 0;
    std::string list;  // LocalProposalsList of the wave's proposals
    std::string digest;
    std::string signature;
    uint64_t live_groups = 0;
    std::string state_digest;
    uint64_t page_bytes = 0;
  };
  std::optional<LocalOwnList> local_own;
  struct LocalDelivery {
    fedanon::v1::LocalProposalsPut head;  // the description every page repeats (no page bytes)
    std::map<uint32_t, std::string> pages;
    uint64_t bytes = 0;
    bool verified = false;
    fedanon::v1::LocalProposals list;  // once verified: the list with live_groups, state_digest
  };
  std::map<std::string, LocalDelivery> local_delivered;  // of the wave local_own->wave
  // As a judge: its verdict list of the wave, computed, serialized and signed once at LocalJudge
  // (page 0 answers it, LocalVerdictsPage the others); and every other judge's signed verdict
  // list of the wave as its pages arrive (LocalVerdictsPut).
  struct LocalOwnVerdicts {
    uint64_t wave = 0;
    std::string list;  // LocalVerdictsList of the wave's verdicts
    std::string digest;
    std::string signature;
    uint64_t page_bytes = 0;
    uint64_t groups = 0;
    uint64_t vetoed = 0;
  };
  std::optional<LocalOwnVerdicts> local_verdicts_own;
  struct VerdictDelivery {
    fedanon::v1::LocalVerdictsPut head;  // the description every page repeats (no page bytes)
    std::map<uint32_t, std::string> pages;
    uint64_t bytes = 0;
    bool verified = false;
    fedanon::v1::LocalVerdicts list;  // once verified
  };
  std::map<std::string, VerdictDelivery> local_verdicts_delivered;  // of the wave local_own->wave
};

absl::StatusOr<std::unique_ptr<PartyAgent>> PartyAgent::Create(PartyAgentOptions options) {
  RETURN_IF_ERROR(crypto::ValidateParticipantName(options.name));
  if (!options.misbehave.empty() && options.misbehave != "never-participate" &&
      options.misbehave != "under-declare" && options.misbehave != "inflate-released-counts") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown misbehaviour '", options.misbehave,
                     "' (never-participate, under-declare or inflate-released-counts)"));
  }
  if (options.seal_key_pem.empty() || options.seal_cert_pem.empty() || options.ca_pem.empty()) {
    return absl::InvalidArgumentError("a party needs the CA certificate and its sealing key pair");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const SealKeyRing::Entry> seal,
                   SealKeyRing::MakeEntry(options.seal_cert_pem, options.seal_key_pem));
  if (options.ledger_path.empty() && !options.output_dir.empty()) {
    options.ledger_path = (std::filesystem::path(options.output_dir) / "runs.ledger").string();
  }
  if (options.audit_dir.empty() && !options.ledger_path.empty()) {
    options.audit_dir = std::filesystem::path(options.ledger_path).parent_path().string();
  }
  if (options.state_dir.empty() && !options.ledger_path.empty()) {
    options.state_dir = std::filesystem::path(options.ledger_path).parent_path().string();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RunLedger> ledger, RunLedger::Open(options.ledger_path));
  return std::unique_ptr<PartyAgent>(
      new PartyAgent(std::move(options), std::move(seal), std::move(ledger)));
}

PartyAgent::PartyAgent(PartyAgentOptions options, std::shared_ptr<const SealKeyRing::Entry> seal,
                       std::unique_ptr<RunLedger> ledger)
    : options_(std::move(options)),
      seal_ring_(std::move(seal), options_.retired_seal_grace),
      authorizer_(AuthorizationOptions{options_.name, options_.ca_pem, options_.admins,
                                       options_.revocation_check}),
      ledger_(std::move(ledger)),
      audit_(options_.audit_dir) {}
PartyAgent::~PartyAgent() = default;

std::string PartyAgent::seal_cert_pem() const { return seal_ring_.current()->cert_pem; }

absl::StatusOr<bool> PartyAgent::UpdateSettings(const PartyLiveSettings& settings) {
  if (settings.ca_pem.empty()) return absl::InvalidArgumentError("an empty CA bundle");
  ASSIGN_OR_RETURN(std::shared_ptr<const SealKeyRing::Entry> seal,
                   SealKeyRing::MakeEntry(settings.seal_cert_pem, settings.seal_key_pem));
  RETURN_IF_ERROR(crypto::VerifiedSealKey(seal->cert_pem, settings.ca_pem,
                                          {crypto::Role::kParty, options_.name})
                      .status());
  authorizer_.Update(settings.ca_pem, settings.admins);
  return seal_ring_.Rotate(std::move(seal), absl::Now());
}

absl::Status PartyAgent::Audit(JobSlot& slot, uint64_t round, AuditEntry entry) const {
  if (slot.job->replaying) return absl::OkStatus();  // recorded before the restart
  entry.round = round;
  absl::Status st = audit_.Append(slot.job->job_id, entry);
  if (!st.ok()) {
    spdlog::error("job={} round={} cannot record a {} message in the audit file: {}",
                  slot.job->job_id, round, entry.kind, std::string(st.message()));
  }
  return st;
}

std::shared_ptr<PartyAgent::JobSlot> PartyAgent::AcquireSlot(const std::string& job_id) {
  std::shared_ptr<JobSlot> dropped;  // destroyed (with its tables) after the lock is released
  absl::MutexLock lock(&jobs_mu_);
  std::shared_ptr<JobSlot>& slot = jobs_[job_id];
  if (slot == nullptr) slot = std::make_shared<JobSlot>();
  ++slot->users;
  slot->last_used = ++use_counter_;
  std::shared_ptr<JobSlot> result = slot;
  if (jobs_.size() > kMaxHeldJobs) {
    // A job the leader never ended (it failed or restarted before EndJob): the least recently
    // used one that no request is using goes.
    auto oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->second->users == 0 &&
          (oldest == jobs_.end() || it->second->last_used < oldest->second->last_used)) {
        oldest = it;
      }
    }
    if (oldest != jobs_.end()) {
      spdlog::warn(
          "job={} dropped: the party holds more than {} jobs and the leader used this "
          "one least recently",
          oldest->first, kMaxHeldJobs);
      dropped = std::move(oldest->second);
      jobs_.erase(oldest);
    }
  }
  return result;
}

void PartyAgent::ReleaseSlot(const std::string& job_id, JobSlot& slot) {
  absl::MutexLock lock(&jobs_mu_);
  --slot.users;
  auto it = jobs_.find(job_id);
  if (slot.users == 0 && slot.job == nullptr && it != jobs_.end() && it->second.get() == &slot) {
    jobs_.erase(it);
  }
}

size_t PartyAgent::held_jobs() const {
  absl::MutexLock lock(&jobs_mu_);
  return jobs_.size();
}

PartyMessage PartyAgent::Handle(const LeaderMessage& request) {
  const std::shared_ptr<JobSlot> held = AcquireSlot(request.job_id());
  JobSlot& slot = *held;
  absl::MutexLock lock(&slot.mu);
  PartyMessage out = HandleLocked(slot, request);
  ReleaseSlot(request.job_id(), slot);
  return out;
}

PartyMessage PartyAgent::HandleLocked(JobSlot& slot, const LeaderMessage& request) {
  absl::StatusOr<PartyMessage> reply = Dispatch(slot, request);
  if (!reply.ok() && slot.job) {
    // Nothing of a failed step is recorded (nor left for the next answer's record).
    slot.job->fresh_answer = false;
    slot.job->journal_extra.clear();
  }
  if (!reply.ok()) {
    PartyMessage error;
    error.set_request_id(request.request_id());
    error.mutable_error()->set_code(static_cast<int>(reply.status().code()));
    error.mutable_error()->set_message(std::string(reply.status().message()));
    spdlog::warn("job={} round={} request failed: {}", request.job_id(), request.round(),
                 std::string(reply.status().message()));
    // The refusal leaves too: recorded for a job whose start was recorded.
    if (audit_.Exists(request.job_id())) {
      absl::Status st = audit_.Append(
          request.job_id(),
          {.round = request.round(),
           .kind = kAuditError,
           .form = kAuditPlaintext,
           .to = {slot.job && slot.job->job_id == request.job_id() ? slot.job->leader : "leader"},
           .texts = {{"error", std::string(reply.status().message())}}});
      if (!st.ok()) {
        spdlog::error("job={} cannot record an error: {}", request.job_id(),
                      std::string(st.message()));
      }
    }
    return error;
  }
  if (slot.job && slot.job->job_id == request.job_id() && slot.job->fresh_answer) {
    // Durable before it leaves: a restarted party answers this request again with these bytes.
    slot.job->fresh_answer = false;
    const std::string extra = std::exchange(slot.job->journal_extra, "");
    if (slot.job->journal) {
      const absl::Status recorded = slot.job->journal->Append(
          {request.SerializeAsString(), reply->SerializeAsString(), extra});
      if (!recorded.ok()) {
        // An answer that could not be made durable does not leave, and the party stops taking
        // part in the job (it could not keep "one request, one answer" across a restart).
        spdlog::error(
            "job={} round={} cannot record the job's durable state: {}; the party "
            "leaves the job",
            request.job_id(), request.round(), std::string(recorded.message()));
        slot.job.reset();
        PartyMessage error;
        error.set_request_id(request.request_id());
        error.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kDataLoss));
        error.mutable_error()->set_message(
            absl::StrCat("cannot record the job's durable state: ", recorded.message()));
        return error;
      }
    }
  }
  reply->set_request_id(request.request_id());
  return *std::move(reply);
}

absl::StatusOr<PartyMessage> PartyAgent::Dispatch(JobSlot& slot, const LeaderMessage& request) {
  PartyMessage reply;
  const bool job_step = request.body_case() == LeaderMessage::kSumStep ||
                        request.body_case() == LeaderMessage::kSumUnmask ||
                        request.body_case() == LeaderMessage::kUnionStep ||
                        request.body_case() == LeaderMessage::kFinalCheck ||
                        request.body_case() == LeaderMessage::kVertical ||
                        request.body_case() == LeaderMessage::kChunkGet ||
                        request.body_case() == LeaderMessage::kChunkPut;
  if (job_step && !slot.job) {
    // After a restart of this party: the job goes on from its durable state, if it has one.
    RETURN_IF_ERROR(ReloadJob(slot, request.job_id()));
  }
  // From the first answer computed from its data on, the run counts as a release of this party's
  // table whatever the leader later says (a released table may be rebuilt from sums, rows or
  // columns); only a job that fails before that frees its release (party policy max_releases).
  const bool data_step = request.body_case() == LeaderMessage::kSumStep ||
                         request.body_case() == LeaderMessage::kSumUnmask ||
                         request.body_case() == LeaderMessage::kUnionStep ||
                         request.body_case() == LeaderMessage::kVertical ||
                         request.body_case() == LeaderMessage::kFinalCheck;
  if (data_step && slot.job && slot.job->job_id == request.job_id() && !slot.job->released) {
    RETURN_IF_ERROR(ledger_->MarkReleased(slot.job->job_id));
    slot.job->released = true;
  }
  switch (request.body_case()) {
    case LeaderMessage::kPing:
      reply.mutable_pong()->set_echoed_unix_nanos(request.ping().sent_unix_nanos());
      return reply;
    case LeaderMessage::kPrepare:
      return HandlePrepare(slot, request);
    case LeaderMessage::kSumStep:
      return HandleSumStep(slot, request);
    case LeaderMessage::kSumUnmask:
      return HandleSumUnmask(slot, request);
    case LeaderMessage::kUnionStep:
      return HandleUnionStep(slot, request);
    case LeaderMessage::kVertical:
      return HandleVertical(slot, request);
    case LeaderMessage::kFinalCheck:
      return HandleFinalCheck(slot, request);
    case LeaderMessage::kChunkGet:
      return HandleChunkGet(slot, request);
    case LeaderMessage::kChunkPut:
      return HandleChunkPut(slot, request);
    case LeaderMessage::kEndJob:
      if (audit_.Exists(request.job_id())) {
        RETURN_IF_ERROR(audit_.Append(
            request.job_id(),
            {.round = request.round(),
             .kind = kAuditJobEnd,
             .form = kAuditPlaintext,
             .to = {slot.job && slot.job->job_id == request.job_id() ? slot.job->leader : "leader"},
             .texts = {{"success", request.end_job().success() ? "true" : "false"},
                       {"reason", request.end_job().reason()}}}));
      }
      if (slot.job && slot.job->job_id == request.job_id()) {
        spdlog::info("job={} ended: {}", slot.job->job_id,
                     common::Printable(request.end_job().reason()));
        slot.job.reset();
      }
      // Its durable state goes with it (also when this party restarted and never reloaded it).
      if (!options_.state_dir.empty() && common::ValidateJobId(request.job_id()).ok()) {
        RETURN_IF_ERROR(JobJournal::Remove(options_.state_dir, request.job_id()));
      }
      // A failed run no longer counts as a release of the table (party policy max_releases),
      // unless this party already let its rows go (the ledger remembers; RunLedger::Finish).
      RETURN_IF_ERROR(ledger_->Finish(request.job_id(), request.end_job().success()));
      reply.mutable_pong();
      return reply;
    default:
      return absl::InvalidArgumentError("unknown request");
  }
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
  RETURN_IF_ERROR(common::ValidateJobId(request.job_id()));
  auto job = std::make_unique<JobState>();
  job->job_id = request.job_id();
  job->spec = request.prepare().spec();
  RETURN_IF_ERROR(common::CheckFederatedRecoding(job->spec));
  RETURN_IF_ERROR(VerifyParticipants(request.prepare(), job.get()));
  // The admin's signature over ring, recipient, leader_party and our data path first: a job no
  // admin authorized reads nothing (docs/threat-model.md, "Job authorization").
  std::string announced_leader;
  for (const auto& p : request.prepare().participants()) {
    if (p.index() == UINT32_MAX) announced_leader = p.name();
  }
  ASSIGN_OR_RETURN(const fedanon::v1::AuthorizedJob authorized,
                   authorizer_.Verify(request.prepare(), announced_leader, absl::Now()));
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
  RETURN_IF_ERROR(ChooseOwnSealKey(reload, journaled_seal_key, job.get()));
  // Load the taxonomies named by the spec from our data directory, then our table.
  ASSIGN_OR_RETURN(const auto texts, ReadTaxonomies(*job));
  const std::string digest = crypto::Sha256(common::CanonicalJobBytes(job->spec, texts));
  RETURN_IF_ERROR(JobAuthorizer::CheckDigest(authorized, digest));
  // Errors quote no label: the files are the party's, the message goes to the leader.
  auto schema = common::BuildPublicSchema(job->spec, texts, {.quote_labels = false});
  if (!schema.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': ", schema.status().message()));
  }
  const std::string& table_name = request.prepare().data_path().empty()
                                      ? options_.default_data_path
                                      : request.prepare().data_path();
  // A name the party configured as a PostgreSQL source is read from there (its ledger key says
  // so); any other is a file in the data directory.
  const auto pg = options_.postgres_tables.find(table_name);
  const common::PostgresSource* postgres =
      pg == options_.postgres_tables.end() ? nullptr : &pg->second;
  auto resolved_table = postgres != nullptr
                            ? absl::StatusOr<std::string>(absl::StrCat("postgres:", table_name))
                            : ResolveInDataDir(options_.data_dir, table_name,
                                               absl::StrCat("table '", table_name, "'"));
  if (!resolved_table.ok()) {
    return absl::Status(
        resolved_table.status().code(),
        absl::StrCat("party '", options_.name, "': ", resolved_table.status().message()));
  }
  const std::string table = *std::move(resolved_table);
  RETURN_IF_ERROR(CheckRing(request.prepare(), job.get()));
  if (request.prepare().max_message_bytes() > 0) {  // protocol 1.2: per-record payloads chunked
    ASSIGN_OR_RETURN(const uint64_t limit,
                     common::NegotiatedMessageLimit(request.prepare().max_message_bytes(),
                                                    options_.max_message_bytes));
    job->message_limit = limit;
    job->chunk_bytes = common::ChunkBytesForLimit(limit);
  }
  // This party's own policy, whatever the admin signed.
  RETURN_IF_ERROR(CheckPartyPolicy(options_.policy, job->spec, options_.name, job->recipient));
  if (!reload && options_.policy.max_releases &&
      ledger_->Releases(table) >= *options_.policy.max_releases) {
    return absl::PermissionDeniedError(absl::StrCat(
        "party policy: table '", table_name, "' was released ", ledger_->Releases(table),
        " times; the party allows at most ", *options_.policy.max_releases, " (max_releases)"));
  }
  PartyMessage reply;
  if (job->spec.partitioning() == fedanon::v1::PARTITIONING_VERTICAL) {
    if (postgres != nullptr && postgres->push_down) {
      return absl::FailedPreconditionError(absl::StrCat(
          "party '", options_.name, "': table '", table_name,
          "' is configured push-down, which covers horizontal jobs with global recoding only: a "
          "vertical party keeps per-record partition state, so it reads its table into memory "
          "(configure the table without `mode: push-down` for vertical jobs)"));
    }
    RETURN_IF_ERROR(LoadVerticalTable(*schema, table, postgres, job.get()));
    spdlog::info("job={} run={} prepared (vertical): {} records loaded", job->job_id,
                 authorized.run_id(), job->vertical->ids().size());
  } else {
    RETURN_IF_ERROR(LoadHorizontalTable(*schema, table, postgres, job.get()));
    spdlog::info("job={} run={} prepared: {} records loaded", job->job_id, authorized.run_id(),
                 job->data->num_records);
  }
  reply.mutable_prepared()->set_digest(digest);
  if (reload) {
    slot.job = std::move(job);
    return reply;
  }
  // Horizontal and vertical jobs keep durable state from here on (the Prepare first).
  if (!options_.state_dir.empty() && (job->data || job->vertical)) {
    // The job's own sealing key goes with it (0600, deleted with the job): after a restart of
    // this party the job goes on with the key it was prepared with, even if seal.key was
    // rotated meanwhile.
    ASSIGN_OR_RETURN(job->journal,
                     JobJournal::Start(options_.state_dir, job->job_id,
                                       {request.SerializeAsString(), "", job->own_seal->key_pem},
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
      job->job_id,
      {.round = request.round(),
       .kind = kAuditJobStart,
       .form = kAuditPlaintext,
       .to = {job->leader},
       .numbers = {{"records", job->data ? job->data->num_records : job->vertical->records()}},
       .texts = {{"run_id", authorized.run_id()},
                 {"job_digest", absl::BytesToHexString(digest)},
                 {"admin", admin.ok() ? admin->name : "?"},
                 {"ring", absl::StrJoin(job->ring, ",")},
                 {"leader", job->leader},
                 {"recipient", job->recipient},
                 {"partitioning", job->vertical ? "vertical" : "horizontal"},
                 {"table", std::filesystem::path(table).filename().string()}}}));
  slot.job = std::move(job);
  return reply;
}

absl::Status PartyAgent::ReloadJob(JobSlot& slot, const std::string& job_id) {
  if (options_.state_dir.empty() || !common::ValidateJobId(job_id).ok() ||
      !JobJournal::Exists(options_.state_dir, job_id)) {
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  auto lost = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("the durable state of the job at party '",
                                            options_.name, "' cannot be reloaded (", why,
                                            "); the job cannot resume"));
  };
  std::string snapshot;  // the push-down snapshot's fingerprint at prepare (empty: none)
  absl::StatusOr<std::vector<JournalRecord>> records =
      JobJournal::Read(options_.state_dir, job_id, &snapshot);
  if (!records.ok()) return lost(records.status().message());
  std::vector<std::pair<LeaderMessage, PartyMessage>> answered;
  LeaderMessage prepare;
  if (!prepare.ParseFromString((*records)[0].request) || !prepare.has_prepare() ||
      prepare.job_id() != job_id) {
    return lost("its first record is not this job's Prepare");
  }
  uint64_t last_collect = 0;
  // A vertical job whose ID matching ended here: its alignment is in the journal, so the
  // matching's hops need not be replayed (they cost elliptic-curve work per id).
  bool aligned = false;
  for (size_t i = 1; i < records->size(); ++i) {
    LeaderMessage req;
    PartyMessage rep;
    if (!req.ParseFromString((*records)[i].request) || !rep.ParseFromString((*records)[i].reply) ||
        req.job_id() != job_id) {
      return lost(absl::StrCat("record ", i, " does not parse"));
    }
    if (req.has_sum_step()) last_collect = std::max(last_collect, req.sum_step().collect());
    if (req.has_vertical() && req.vertical().has_id_align()) aligned = true;
    answered.emplace_back(std::move(req), std::move(rep));
  }
  RETURN_IF_ERROR(HandlePrepare(slot, prepare, /*reload=*/true, (*records)[0].extra).status());
  JobState& job = *slot.job;
  // A push-down table was opened again, as a new snapshot: the rounds answered before the restart
  // counted the old one, so it must be the same data (docs/postgres.md, "One snapshot").
  // Every table (a file, a table read into memory, a push-down snapshot) was read again: the
  // requests answered before the restart came from the old one, so it must be the same data.
  if (snapshot != job.table_fingerprint) {
    const std::string& table_name = prepare.prepare().data_path().empty()
                                        ? options_.default_data_path
                                        : prepare.prepare().data_path();
    // The fingerprints stay in the party's log: they are hashes of the party's table.
    spdlog::error(
        "job={} table '{}' changed while the party was down: fingerprint {} at prepare, {} now",
        job_id, table_name, snapshot.empty() ? "(none recorded)" : snapshot, job.table_fingerprint);
    const bool pushdown = job.pushdown != nullptr;
    slot.job.reset();  // (`job` is gone from here on)
    // (The leader names the party.)
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", table_name, "' changed while the party was down (",
        pushdown ? "push-down snapshot fingerprint differs: the row counts or per-class value "
                   "counts of the columns the job reads"
                 : "its fingerprint differs from the one taken at prepare: its bytes",
        " are not those the job was prepared on and answered from before the restart); the job "
        "cannot resume"));
  }
  job.replaying = true;
  job.released = !answered.empty();
  auto replay = [&]() -> absl::Status {
    slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
    for (size_t i = 0; i < answered.size(); ++i) {
      const LeaderMessage& req = answered[i].first;
      const PartyMessage& stored = answered[i].second;
      if (req.has_sum_step()) {
        const auto& step = req.sum_step();
        if (step.collect() < last_collect) {
          // An older secure sum: only its state updates matter now.
          if (step.chunk() == 0) RETURN_IF_ERROR(ApplyUpdates(slot, step.updates()));
          continue;
        }
        // The ring's first party's mask seed was recorded with the collect's first answer.
        if (step.chunk() == 0 && !(*records)[i + 1].extra.empty()) {
          job.restored_sum_seed = (*records)[i + 1].extra;
        }
        RETURN_IF_ERROR(HandleSumStep(slot, req).status());
        job.answered[step.chunk()].second = stored;  // the bytes that left
      } else if (req.has_sum_unmask()) {
        if (req.sum_unmask().collect() == last_collect) {
          job.unmask_answer =
              std::pair{absl::StrCat(req.round(), "/", req.sum_unmask().collect()), stored};
        }
      } else if (req.has_final_check()) {
        if (!(*records)[i + 1].extra.empty()) {
          ASSIGN_OR_RETURN(job.restored_mask, DecodeWords((*records)[i + 1].extra));
        }
        RETURN_IF_ERROR(HandleFinalCheck(slot, req).status());
        const auto& step = req.final_check();
        const uint64_t key = (uint64_t{static_cast<uint32_t>(step.phase())} << 32) | step.chunk();
        job.final_check->answered[key].second = stored;
      } else if (req.has_union_step()) {
        (req.union_step().deliver() ? job.deliver_answer : job.union_answer) =
            std::pair{absl::StrCat(req.round(), "/", req.union_step().SerializeAsString()), stored};
      } else if (req.has_vertical() || req.has_chunk_put()) {
        RETURN_IF_ERROR(ReplayVertical(slot, req, stored, (*records)[i + 1].extra, aligned));
      }
    }
    return absl::OkStatus();
  };
  absl::Status replayed = replay();
  job.replaying = false;
  job.fresh_answer = false;
  job.journal_extra.clear();
  job.restored_mask.reset();
  job.restored_sum_seed.reset();
  job.restored_matcher_secret.clear();
  job.restored_alignment.reset();
  if (replayed.ok()) {
    absl::StatusOr<std::unique_ptr<JobJournal>> journal =
        JobJournal::Reopen(options_.state_dir, job_id);
    if (journal.ok()) job.journal = *std::move(journal);
    replayed = journal.status();
  }
  if (!replayed.ok()) {
    slot.job.reset();
    return lost(replayed.message());
  }
  spdlog::warn(
      "job={} run={} reloaded from its durable state after a restart of this party: {} answered "
      "request(s), {} state update(s) ({} ms)",
      job_id, job.run_id, answered.size(), job.applied_updates,
      absl::ToInt64Milliseconds(absl::Now() - start));
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
    return absl::OkStatus();
  }
  // After a restart: the key the job was prepared with, held still or kept in its durable state.
  job->own_seal = seal_ring_.Find(point);
  if (job->own_seal == nullptr && !journaled_seal_key.empty()) {
    // Matched by public key against the certificate the journaled Prepare names.
    absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> keys =
        crypto::SealKeyPairFromPem(journaled_seal_key);
    if (keys.ok() && (*keys)->public_key().UncompressedPoint() == point) {
      auto entry = std::make_shared<SealKeyRing::Entry>();
      entry->key_pem = std::string(journaled_seal_key);
      entry->keys = *std::move(keys);
      job->own_seal = std::move(entry);
    }
  }
  if (job->own_seal == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "party '", options_.name,
        "': the job was prepared with a sealing key this party no longer holds (rotated, and "
        "not kept in the job's durable state); the job cannot resume"));
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::ReplayVertical(JobSlot& slot, const LeaderMessage& request,
                                        const PartyMessage& stored, const std::string& extra,
                                        bool aligned) {
  JobState& job = *slot.job;
  if (!job.vertical) return absl::DataLossError("vertical records in a horizontal job's state");
  if (request.has_chunk_put()) {
    // A chunk of a payload sealed for this party (an ID list, an instruction, columns): back in
    // the inbox until the step that names it is replayed. The ID matching's are not needed once
    // the alignment is recorded.
    if (aligned && request.round() == 0) return absl::OkStatus();
    return HandleChunkPut(slot, request).status();
  }
  const fedanon::v1::VerticalStep& step = request.vertical();
  const uint64_t round = request.round();
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kIdEncrypt:
    case fedanon::v1::VerticalStep::kIdReencrypt:
    case fedanon::v1::VerticalStep::kIdDigests:
    case fedanon::v1::VerticalStep::kIdCommon:
      if (aligned) break;  // the alignment below stands for the whole matching
      if (step.has_id_encrypt()) job.restored_matcher_secret = extra;
      // The statement on the common ids carries the signature that left (a signature is drawn
      // afresh each time).
      if (step.has_id_common() && stored.vertical().ids().has_common()) {
        job.restored_id_common_signature = stored.vertical().ids().common().signature();
      }
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      job.restored_id_common_signature.clear();
      break;
    case fedanon::v1::VerticalStep::kIdAlign: {
      ASSIGN_OR_RETURN(const std::vector<uint64_t> words, DecodeWords(extra));
      if (words.empty() || words.size() - 1 != job.vertical->ids().size()) {
        return absl::DataLossError("the recorded ID alignment does not match this party's table");
      }
      IdAlignment alignment;
      alignment.common = words[0];
      for (size_t i = 1; i < words.size(); ++i) {
        alignment.canonical.push_back(static_cast<int64_t>(words[i]));
      }
      job.restored_alignment = std::move(alignment);
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      break;
    }
    case fedanon::v1::VerticalStep::kPropose:
    case fedanon::v1::VerticalStep::kAssemble:
      // No state: a proposal changes nothing, and the released table is written already.
      break;
    case fedanon::v1::VerticalStep::kLocalPropose:
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      // The list is derived again; its signature is the one that left (a signature is drawn
      // afresh each time, and every page of the wave must carry the same).
      if (job.local_own && job.local_own->wave == round &&
          stored.vertical().has_local_proposals()) {
        job.local_own->signature = stored.vertical().local_proposals().signature();
      }
      break;
    case fedanon::v1::VerticalStep::kLocalJudge:
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      // As for the proposals: the verdict list's signature is the one that left.
      if (job.local_verdicts_own && job.local_verdicts_own->wave == round &&
          stored.vertical().has_local_verdicts()) {
        job.local_verdicts_own->signature = stored.vertical().local_verdicts().signature();
      }
      break;
    case fedanon::v1::VerticalStep::kRelease:
      if (!extra.empty()) job.order_seed = extra;  // the ring's first party drew it
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      break;
    default:
      // Winner, deliver, publish, commit: every instruction applied and every verdict as before.
      RETURN_IF_ERROR(HandleVertical(slot, request).status());
      break;
  }
  job.restored_matcher_secret.clear();
  job.restored_alignment.reset();
  // The bytes that left answer a repeated request; a chunked step's chunks are derived again
  // (the same plaintext, sealed afresh, under the same stream description).
  const std::string digest = common::RequestDigest(round, step);
  job.vertical_last = std::pair{digest, stored};
  const std::string key = ProducingStepKey(step, round);
  if (!key.empty() && job.chunk_bytes > 0) job.step_answers[key] = {digest, stored};
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
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::CheckRing(const fedanon::v1::PrepareJob& prepare, JobState* job) const {
  std::vector<std::string> data_parties;  // in participant-index order
  for (const auto& p : prepare.participants()) {
    if (p.index() == UINT32_MAX) {
      if (!job->leader.empty()) return absl::InvalidArgumentError("Prepare names two leaders");
      job->leader = p.name();
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
    auto text = common::ReadFile(*path, common::ReadFileOptions{
                                            .follow_symlinks = false,  // resolved above
                                            .max_bytes = common::kMaxTaxonomyBytes,
                                            .max_line_bytes = common::kMaxLineBytes,
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

absl::Status PartyAgent::LoadVerticalTable(const common::Dataset& schema, const std::string& table,
                                           const common::PostgresSource* postgres,
                                           JobState* job) const {
  VerticalPartyOptions vopts;
  vopts.name = options_.name;
  vopts.releases_class = !job->ring.empty() && job->ring.front() == options_.name;
  vopts.parties = job->ring;
  if (options_.misbehave == "never-participate") {
    vopts.misbehaviour = Misbehaviour::kNeverParticipate;
  } else if (options_.misbehave == "under-declare") {
    vopts.misbehaviour = Misbehaviour::kUnderDeclare;
  }
  // A job this replica could not score as the centralized engine does is refused by name.
  RETURN_IF_ERROR(common::CheckVerticalScoreComputable(job->spec));
  auto vp = VerticalParty::Load(job->spec, schema, table, vopts, postgres);
  if (!vp.ok()) {
    spdlog::error("job={} table {} does not match the job: {}", job->job_id, table,
                  std::string(vp.status().message()));
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name, "': its table ",
                     postgres != nullptr ? "(a PostgreSQL source) cannot be read or " : "",
                     "does not match the job's schema (details in the party's log)"));
  }
  job->vertical = *std::move(vp);
  job->table_fingerprint = job->vertical->table_fingerprint();
  return absl::OkStatus();
}

absl::StatusOr<std::string> PartyAgent::WriteReleasedTable(const std::string& job_id,
                                                           const std::string& csv) const {
  if (options_.postgres_sink.has_value()) {
    absl::Status st = common::WriteTableToPostgres(*options_.postgres_sink, job_id, csv);
    if (!st.ok()) {
      spdlog::error("job={} released table not written: {}", job_id, std::string(st.message()));
      return absl::Status(st.code(),
                          absl::StrCat("party '", options_.name,
                                       "' cannot write the released table into its PostgreSQL "
                                       "sink (details in the party's log)"));
    }
    return absl::StrCat("postgres:", common::PostgresSinkTable(*options_.postgres_sink, job_id));
  }
  const std::string path =
      (std::filesystem::path(options_.output_dir) / absl::StrCat(job_id, ".csv")).string();
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  // Written once: a file of this job already there was written before a restart of this party
  // (its reply never left); it is kept, never replaced or appended to.
  const absl::Status written = common::WriteFileAtomically(
      path, csv, {.mode = common::kPrivateFileMode, .replace_existing = false});
  if (absl::IsAlreadyExists(written)) {
    spdlog::warn("job={} integrated table {} was written before a restart; kept as it is", job_id,
                 path);
    return path;
  }
  RETURN_IF_ERROR(written);
  return path;
}

absl::Status PartyAgent::LoadHorizontalTable(const common::Dataset& schema,
                                             const std::string& table,
                                             const common::PostgresSource* postgres,
                                             JobState* job) const {
  if (postgres != nullptr && postgres->push_down) {
    if (job->spec.recoding() == fedanon::v1::RECODING_LOCAL) {
      return absl::FailedPreconditionError(common::kLocalRecodingNotPushdown);
    }
    // Push-down: one check of the table now, then every statistic by SQL (no records here).
    auto pushdown = common::PostgresPushdown::Open(job->spec, *postgres, schema);
    if (!pushdown.ok()) {
      spdlog::error("job={} table {} (push-down) does not match the job: {}", job->job_id, table,
                    std::string(pushdown.status().message()));
      return absl::FailedPreconditionError(
          absl::StrCat("party '", options_.name,
                       "': its table (a PostgreSQL source) cannot be read or does not match the "
                       "job's schema (details in the party's log)"));
    }
    job->pushdown = *std::move(pushdown);
    for (const std::string& warning : job->pushdown->data().warnings) {
      spdlog::warn("job={} {}", job->job_id, warning);
    }
    job->data = std::make_unique<common::Dataset>(job->pushdown->data());
    job->table_fingerprint = job->pushdown->fingerprint();
    for (const auto& q : job->data->qids) job->hier.emplace_back(&q);
    spdlog::info("job={} table {} in push-down mode: statistics computed by the database",
                 job->job_id, table);
    return absl::OkStatus();
  }
  const common::LoadDatasetOptions load{.max_input_bytes = options_.max_input_bytes};
  auto data = postgres != nullptr
                  ? common::LoadDatasetFromPostgres(job->spec, *postgres, &schema, load)
                  : common::LoadDataset(job->spec, table, &schema, load);
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
  job->data = std::make_unique<common::Dataset>(*std::move(data));
  absl::StatusOr<std::string> fingerprint = TableFingerprint(*job->data);
  if (!fingerprint.ok()) {
    spdlog::error("job={} table {}: {}", job->job_id, table,
                  std::string(fingerprint.status().message()));
    return absl::FailedPreconditionError(
        absl::StrCat("party '", options_.name,
                     "': its table cannot be read again (details in the party's log)"));
  }
  job->table_fingerprint = *std::move(fingerprint);
  for (const auto& q : job->data->qids) job->hier.emplace_back(&q);
  job->tips = std::make_unique<common::Tips>(job->data.get(), &job->hier);
  if (job->spec.recoding() == fedanon::v1::RECODING_LOCAL) {
    job->local = std::make_unique<LocalParty>(job->data.get(), job->spec);
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::ApplyUpdates(
    JobSlot& slot, const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates) {
  JobState& job = *slot.job;
  const common::NumericSplitConfig numeric = common::NumericSplitFromSpec(job.spec);
  for (const auto& u : updates) {
    if (u.sequence() < job.applied_updates) continue;
    if (u.sequence() != job.applied_updates) {
      return absl::FailedPreconditionError(
          absl::StrCat("state update ", u.sequence(), " arrived before ", job.applied_updates));
    }
    if (job.final_check) {
      return absl::PermissionDeniedError(
          absl::StrCat("state update ", u.sequence(),
                       " after the final check: the cut was fixed when the parties re-checked "
                       "the privacy model"));
    }
    if (u.has_local_setup() || u.has_local_split()) {
      if (!job.local) {
        return absl::PermissionDeniedError(
            "a local-recoding update in a job without recoding: local");
      }
      RETURN_IF_ERROR(u.has_local_setup() ? job.local->ApplySetup(u.local_setup())
                                          : job.local->ApplySplit(u.local_split()));
    } else if (job.local) {
      return absl::PermissionDeniedError(
          "a global instruction in a job with recoding: local (only group splits apply)");
    } else if (u.has_instruction()) {
      const auto& in = u.instruction();
      if (in.attribute() >= job.hier.size() || in.node() < 0 ||
          static_cast<size_t>(in.node()) >= job.hier[in.attribute()].size() || in.candidate() < 0 ||
          in.candidate() >= job.hier[in.attribute()].CandidateCount(in.node())) {
        return absl::InvalidArgumentError("instruction names no candidate of the current cut");
      }
      job.hier[in.attribute()].Specialize(in.node(), in.candidate());
      if (job.tips) {
        job.tips->Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
      }
      if (job.pushdown) {
        job.pushdown->Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
      }
    } else if (u.has_split()) {
      const auto& sp = u.split();
      if (sp.attribute() >= job.hier.size() ||
          job.hier[sp.attribute()].kind() != common::QidKind::kContinuous || sp.node() < 0 ||
          static_cast<size_t>(sp.node()) >= job.hier[sp.attribute()].size()) {
        return absl::InvalidArgumentError("split names no interval of the current cut");
      }
      const auto& node = job.hier[sp.attribute()].node(sp.node());
      if (sp.split() != -1 && (sp.split() <= node.rank_lo || sp.split() >= node.rank_hi)) {
        return absl::InvalidArgumentError("split threshold lies outside its interval");
      }
      // Each interval is split once: a second threshold for the same node would let the leader
      // difference the class counts of its two sides between thresholds.
      if (job.split_decided.count({sp.attribute(), sp.node()}) > 0) {
        return absl::PermissionDeniedError(
            absl::StrCat("the split of interval ", sp.node(), " of attribute ", sp.attribute(),
                         " was decided already; an interval is split once"));
      }
      // Binned search: thresholds only on public-cell boundaries, so that no statistic that
      // follows a threshold (class counts of the node's sides, group counts) is finer than the
      // public cells (docs/threat-model.md, "Numeric split search").
      if (sp.split() != -1 && numeric.binned()) {
        const std::vector<int32_t> cells =
            common::PublicCellBounds(job.hier[sp.attribute()].column(), numeric.cells);
        if (!std::binary_search(cells.begin(), cells.end(), sp.split())) {
          return absl::PermissionDeniedError(
              absl::StrCat("split threshold ", sp.split(), " of attribute ", sp.attribute(),
                           " is not a public-cell boundary (numeric_split: binned)"));
        }
      }
      job.split_decided.insert({sp.attribute(), sp.node()});
      job.hier[sp.attribute()].SetSplit(sp.node(), sp.split());
    }
    job.update_chain = common::ChainStateUpdate(job.update_chain, u);
    ++job.applied_updates;
  }
  return absl::OkStatus();
}

absl::StatusOr<PartyMessage> PartyAgent::HandleSumStep(JobSlot& slot,
                                                       const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  if (!slot.job->data || (!slot.job->tips && !slot.job->pushdown)) {
    return absl::FailedPreconditionError("no prepared horizontal job with this id");
  }
  JobState& job = *slot.job;
  const auto& step = request.sum_step();
  // Routing: fixed by the ring agreed at Prepare, whatever the request says.
  const size_t pos = std::find(job.ring.begin(), job.ring.end(), options_.name) - job.ring.begin();
  const std::string successor = pos + 1 < job.ring.size() ? job.ring[pos + 1] : "";
  if (step.next() != successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure sum: next is '", step.next(),
                     "' but this party's successor in the ring agreed at "
                     "Prepare is ",
                     successor.empty() ? "the leader (empty next)" : "'" + successor + "'"));
  }
  ASSIGN_OR_RETURN(const uint64_t chunk_len, common::SumChunkLength(step));
  if (job.counts_collect != UINT64_MAX && step.collect() < job.counts_collect) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure sum: collect ", step.collect(), " is older than collect ",
                     job.counts_collect, ", already answered (one request, one answer)"));
  }
  if (step.collect() != job.counts_collect) {
    // The request travels with the first chunk only; later chunks reuse the counts.
    if (step.chunk() != 0) {
      return absl::InvalidArgumentError(absl::StrCat("secure sum: chunk ", step.chunk(),
                                                     " of collect ", step.collect(),
                                                     " arrived before its first chunk"));
    }
    RETURN_IF_ERROR(ApplyUpdates(slot, step.updates()));
    ASSIGN_OR_RETURN(common::StatsRequest stats_request, FromProto(step.request(), job.hier));
    RETURN_IF_ERROR(common::CheckNumericRequest(stats_request, job.hier,
                                                common::NumericSplitFromSpec(job.spec)));
    // A local job's released counts (LocalStatsRequest.released_groups): LocalParty::Answer
    // checks the groups are exactly this party's final ones; released like global counts.
    const bool local_release =
        step.request().has_local() && (step.request().local().released_groups_size() > 0 ||
                                       step.request().local().released_combinations() != 0);
    if (!stats_request.released_groups.empty() || local_release) {
      // The released table as counts is the result itself: only for a leader the admin signed
      // as the recipient (a party recipient gets the rows through the union, sealed for it).
      if (job.recipient != job.leader) {
        return absl::PermissionDeniedError(absl::StrCat(
            "released counts: the admin signed '", job.recipient,
            "' as the recipient, not the leader; the released table goes only to its recipient"));
      }
      RETURN_IF_ERROR(ReleaseAllowed(slot, "released counts"));
    }
    if (step.request().has_local() && !job.local) {
      return absl::PermissionDeniedError(
          "secure sum: local-recoding statistics in a job without recoding: local");
    }
    if (job.local &&
        (step.request().has_local() != stats_request.empty() ||
         !stats_request.rank_histograms.empty() || !stats_request.node_class_counts.empty() ||
         !stats_request.group_keys.empty() || !stats_request.released_groups.empty())) {
      return absl::PermissionDeniedError(
          "secure sum: a job with recoding: local is asked only for its groups' statistics or "
          "public-cell range counts");
    }
    if (job.final_check &&
        ((stats_request.released_groups.empty() && !local_release) ||
         !stats_request.rank_histograms.empty() || !stats_request.node_class_counts.empty() ||
         !stats_request.group_keys.empty() || !stats_request.range_counts.empty())) {
      return absl::PermissionDeniedError(
          "secure sum: after the final check only the released counts may be summed");
    }
    if (!stats_request.released_groups.empty() &&
        (!job.data->all_values_declared ||
         stats_request.released_combinations != job.data->ValueCombinations())) {
      return absl::InvalidArgumentError("released counts requested over an undeclared domain");
    }
    job.counts.clear();
    if (step.request().has_local()) {
      ASSIGN_OR_RETURN(job.counts, job.local->Answer(step.request().local()));
    } else if (job.pushdown) {
      // The same request checks as above; only the computation moves into the database.
      if (absl::Status st = job.pushdown->AppendStats(job.hier, stats_request, &job.counts);
          !st.ok()) {
        spdlog::error("job={} push-down statistics failed: {}", job.job_id,
                      std::string(st.message()));
        return absl::UnavailableError(absl::StrCat(
            "party '", options_.name,
            "': its database could not compute the statistics (details in the party's log)"));
      }
    } else {
      common::AppendLocalStats(*job.tips, stats_request, &job.counts);
    }
    job.counts_release = !stats_request.released_groups.empty() || local_release;
    if (job.counts_release && !job.counts.empty() &&
        options_.misbehave == "inflate-released-counts") {
      spdlog::warn(
          "job={} MISBEHAVING (test mode): one record that does not exist is added to "
          "the released counts",
          job.job_id);
      ++job.counts[0];
    }
    job.counts_collect = step.collect();
    job.counts_digest = common::SumRequestDigest(step.request(), job.update_chain);
    job.counts_chunks = step.chunks();
    job.answered.clear();
    job.unmask_answer.reset();
    job.sum_seed.clear();
    if (pos == 0) {
      // The ring's first party masks the whole vector with its own mask, drawn once per collect
      // (or the one drawn before a restart), durable with this first answer.
      if (job.restored_sum_seed) {
        job.sum_seed = *std::exchange(job.restored_sum_seed, std::nullopt);
      } else {
        ASSIGN_OR_RETURN(const crypto::SecretBytes seed,
                         crypto::RandomBytes(crypto::kMaskSeedBytes));
        job.sum_seed = std::string(seed.AsStringView());
      }
      if (job.sum_seed.size() != crypto::kMaskSeedBytes) {
        return absl::DataLossError("secure sum: the recorded mask seed has the wrong length");
      }
      if (!job.replaying) job.journal_extra = job.sum_seed;
    }
  } else if (step.chunk() == 0) {
    // The same collect again: it must be the same request (the updates were applied already,
    // so applying them again changes nothing unless they differ).
    RETURN_IF_ERROR(ApplyUpdates(slot, step.updates()));
    if (common::SumRequestDigest(step.request(), job.update_chain) != job.counts_digest) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: collect ", step.collect(),
                       " was already answered for a different request (one request, one answer)"));
    }
  } else if (step.has_request() || !step.updates().empty()) {
    return absl::InvalidArgumentError("secure sum: only the first chunk carries the request");
  }
  if (job.counts.size() != step.total_words()) {
    return absl::InvalidArgumentError(absl::StrCat("the secure sum has ", step.total_words(),
                                                   " words but this request needs ",
                                                   job.counts.size()));
  }
  const std::string purpose = common::SumHopPurpose(step, request.round(), job.counts_digest);
  if (auto done = job.answered.find(step.chunk()); done != job.answered.end()) {
    if (done->second.first != purpose) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: chunk ", step.chunk(), " of collect ", step.collect(),
                       " was already answered for a different request (one request, one answer)"));
    }
    RETURN_IF_ERROR(
        Audit(slot, request.round(),
              {.kind = kAuditSecureSum,
               .form = kAuditMaskedSealed,
               .to = {done->second.second.sum_step().sealed().receiver()},
               .numbers = {{"collect", step.collect()}, {"chunk", step.chunk()}, {"repeat", 1}}}));
    return done->second.second;  // the same request: the same answer
  }
  if (step.chunks() != job.counts_chunks) {
    return absl::InvalidArgumentError("secure sum: the chunking changed within a collect");
  }
  std::vector<uint64_t> acc;
  if (pos == 0) {
    if (step.has_sealed()) {
      return absl::PermissionDeniedError(
          "secure sum: the ring's first party starts from its own mask, not from an input of the "
          "leader's");
    }
    ASSIGN_OR_RETURN(acc, crypto::MaskWordsFromSeed(job.sum_seed, step.chunk_offset(),
                                                    static_cast<size_t>(chunk_len)));
  } else {
    const std::string& predecessor = job.ring[pos - 1];
    if (!step.has_sealed() || step.sealed().sender() != predecessor ||
        step.sealed().receiver() != options_.name) {
      return absl::PermissionDeniedError(absl::StrCat(
          "secure sum: input must be sealed by '", predecessor,
          "' (the predecessor agreed at Prepare) for '", options_.name, "'",
          step.has_sealed() ? absl::StrCat(", got one from '", step.sealed().sender(), "'")
                            : std::string(", got none")));
    }
    const crypto::SealContext context{job.job_id,  job.run_id,    request.round(),
                                      predecessor, options_.name, purpose};
    auto opened = crypto::OpenFrom(*job.own_seal->keys, *job.seal_keys.at(predecessor), context,
                                   step.sealed().ciphertext());
    if (!opened.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: the input does not open as sealed by '", predecessor,
                       "' for this request (forged sender, other request or other round): ",
                       opened.status().message()));
    }
    if (options_.observe_opened) options_.observe_opened(predecessor, purpose, *opened);
    ASSIGN_OR_RETURN(acc, DecodeWords(*opened));
    if (acc.size() != chunk_len) {
      return absl::InvalidArgumentError(absl::StrCat("secure sum: the input of chunk ",
                                                     step.chunk(), " has ", acc.size(),
                                                     " words, not ", chunk_len));
    }
  }
  RETURN_IF_ERROR(
      crypto::AddInPlace(absl::MakeSpan(acc),
                         absl::MakeConstSpan(job.counts.data() + step.chunk_offset(), acc.size())));
  // Sealed for the agreed successor, the last party's for the leader.
  const std::string receiver = successor.empty() ? job.leader : successor;
  const crypto::SealContext context{job.job_id,    job.run_id, request.round(),
                                    options_.name, receiver,   purpose};
  ASSIGN_OR_RETURN(std::string sealed,
                   crypto::SealFrom(*job.own_seal->keys, *job.seal_keys.at(receiver), context,
                                    EncodeWords(acc)));
  PartyMessage reply;
  auto* out = reply.mutable_sum_step()->mutable_sealed();
  out->set_sender(options_.name);
  out->set_receiver(receiver);
  out->set_purpose(purpose);
  out->set_ciphertext(std::move(sealed));
  job.answered[step.chunk()] = {purpose, reply};
  job.fresh_answer = true;
  // This party's own counts of the chunk, in plaintext; they left masked and sealed.
  RETURN_IF_ERROR(Audit(
      slot, request.round(),
      {.kind = kAuditSecureSum,
       .form = kAuditMaskedSealed,
       .to = {receiver},
       .numbers = {{"collect", step.collect()},
                   {"chunk", step.chunk()},
                   {"offset", step.chunk_offset()},
                   {"words", acc.size()},
                   {"total_words", job.counts.size()}},
       .texts = {{"purpose", job.counts_release ? "released-counts" : "statistics"}},
       .has_counts = true,
       .counts = {job.counts.begin() + static_cast<ptrdiff_t>(step.chunk_offset()),
                  job.counts.begin() + static_cast<ptrdiff_t>(step.chunk_offset() + acc.size())}}));
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleSumUnmask(JobSlot& slot,
                                                         const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  if (!slot.job->data || (!slot.job->tips && !slot.job->pushdown)) {
    return absl::FailedPreconditionError("no prepared horizontal job with this id");
  }
  JobState& job = *slot.job;
  if (job.ring.front() != options_.name) {
    return absl::PermissionDeniedError(
        "secure sum: only the ring's first party masks the sum; this party holds no mask");
  }
  const uint64_t collect = request.sum_unmask().collect();
  const std::string key = absl::StrCat(request.round(), "/", collect);
  if (job.unmask_answer) {
    if (job.unmask_answer->first == key) return job.unmask_answer->second;
    return absl::PermissionDeniedError(absl::StrCat(
        "secure sum: the mask of collect ", collect,
        " is not held, or was handed over already for another request (one request, one answer)"));
  }
  if (collect != job.counts_collect || job.sum_seed.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: no mask of collect ", collect, " is held (the current collect is ",
        job.counts_collect == UINT64_MAX ? std::string("none") : absl::StrCat(job.counts_collect),
        ")"));
  }
  if (job.answered.size() != job.counts_chunks) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: the mask of collect ", collect, " goes to the leader only after every chunk ",
        "went round the ring (", job.answered.size(), " of ", job.counts_chunks, " answered)"));
  }
  PartyMessage reply;
  ASSIGN_OR_RETURN(
      *reply.mutable_sum_mask()->mutable_seed(),
      SealFor(slot, job.leader, request.round(),
              common::SumMaskPurpose(collect, request.round(), job.counts_digest), job.sum_seed));
  job.unmask_answer = {key, reply};
  job.fresh_answer = true;
  RETURN_IF_ERROR(Audit(slot, request.round(),
                        {.kind = kAuditSumMask,
                         .form = kAuditSealed,
                         .to = {job.leader},
                         .numbers = {{"collect", collect}, {"words", job.counts.size()}}}));
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleUnionStep(JobSlot& slot,
                                                         const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  if (!slot.job->tips && !slot.job->pushdown) {
    return absl::FailedPreconditionError("no prepared horizontal job with this id");
  }
  JobState& job = *slot.job;
  RETURN_IF_ERROR(ReleaseAllowed(slot, "secure union"));
  const auto& step = request.union_step();
  // One request, one answer: this party's hop and its delivery are each answered once.
  const std::string union_key = absl::StrCat(request.round(), "/", step.SerializeAsString());
  std::optional<std::pair<std::string, PartyMessage>>& answer =
      step.deliver() ? job.deliver_answer : job.union_answer;
  if (answer && answer->first == union_key) return answer->second;
  // Another request after an answer is refused once the routing checks below have spoken.
  const absl::Status answered_already =
      answer ? absl::PermissionDeniedError(
                   "secure union: already answered for a different request (one request, one "
                   "answer)")
             : absl::OkStatus();
  // The union's order: the agreed ring without the recipient, then the recipient when it is a
  // data party (so that it only ever sees the complete, shuffled set).
  if (step.recipient() != job.recipient) {
    return absl::PermissionDeniedError(absl::StrCat("secure union: recipient '", step.recipient(),
                                                    "' is not the one agreed at Prepare ('",
                                                    job.recipient, "')"));
  }
  std::vector<std::string> order;
  for (const auto& p : job.ring) {
    if (p != job.recipient) order.push_back(p);
  }
  if (job.recipient != job.leader) order.push_back(job.recipient);
  const size_t pos = std::find(order.begin(), order.end(), options_.name) - order.begin();
  // One request, one answer (chunked jobs): the same hop again gets the stored reply (the same
  // chunks); another request for the hop is refused.
  const std::string key = step.deliver() ? "" : "union";
  std::string digest;
  if (!key.empty() && job.chunk_bytes > 0) {
    digest = common::RequestDigest(request.round(), step);
    auto answered = job.step_answers.find(key);
    if (answered != job.step_answers.end()) {
      if (answered->second.first == digest) return answered->second.second;
      return absl::FailedPreconditionError(
          "one request, one answer: the secure union hop was already answered for another "
          "request");
    }
  }
  fedanon::v1::UnionList list;
  const bool chunked_input = !step.list_ref().stream().empty();
  // The list so far, from `sender` (the agreed predecessor, or this party itself to deliver).
  auto open_list = [&](const std::string& sender) -> absl::Status {
    slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
    if (!chunked_input) {
      const crypto::SealPublicKey& key =
          sender == options_.name ? job.own_seal->keys->public_key() : *job.seal_keys.at(sender);
      ASSIGN_OR_RETURN(list,
                       OpenUnionList(*job.own_seal->keys, job.job_id, job.run_id, request.round(),
                                     options_.name, sender, key, step.list()));
      return absl::OkStatus();
    }
    if (step.list_ref().sender() != sender) {
      return absl::PermissionDeniedError(absl::StrCat("the union list must come from '", sender,
                                                      "' (the agreed predecessor), not from '",
                                                      step.list_ref().sender(), "'"));
    }
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenPayload(slot, fedanon::v1::SealedPayload(), step.list_ref(),
                                 request.round(), "union-list", nullptr));
    if (!list.ParseFromString(bytes)) {
      return absl::InvalidArgumentError("the union list does not parse");
    }
    return absl::OkStatus();
  };
  if (step.deliver()) {
    if (order.empty() || order.back() != options_.name) {
      return absl::PermissionDeniedError("asked to deliver a union meant for another party");
    }
    RETURN_IF_ERROR(answered_already);
    RETURN_IF_ERROR(open_list(options_.name));
  } else if (pos == 0) {
    if ((step.has_list() && !step.list().ciphertext().empty()) || chunked_input) {
      return absl::PermissionDeniedError(
          "secure union: the first party of the ring starts from the empty set");
    }
  } else {
    RETURN_IF_ERROR(open_list(order[pos - 1]));
  }
  PartyMessage reply;
  auto* out = reply.mutable_union_step();
  if (step.deliver()) {
    // This party is the recipient: open every row, shuffle, write the integrated table.
    ASSIGN_OR_RETURN(std::vector<std::string> rows,
                     OpenUnionRows(*job.own_seal->keys, job.job_id, job.run_id, request.round(),
                                   options_.name, list.rows()));
    ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows.size()));
    std::string csv = CsvLine(step.header());
    for (size_t i : perm) csv += rows[i];
    ASSIGN_OR_RETURN(const std::string path, WriteReleasedTable(job.job_id, csv));
    spdlog::info("job={} integrated table ({} rows) written to {}", job.job_id, rows.size(), path);
    out->set_rows_written(rows.size());
    RETURN_IF_ERROR(Audit(slot, request.round(),
                          {.kind = kAuditReleasedTable,
                           .form = kAuditPlaintext,
                           .to = {job.leader},
                           .numbers = {{"rows", rows.size()}},
                           .texts = {{"recipient", options_.name}, {"file", path}}}));
    answer = {union_key, reply};
    job.fresh_answer = true;
    return reply;
  }
  const std::string successor = pos + 1 < order.size() ? order[pos + 1] : job.recipient;
  if (step.next() != successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure union: next is '", step.next(),
                     "' but this party's successor agreed at Prepare is '", successor, "'"));
  }
  RETURN_IF_ERROR(answered_already);
  auto recipient = job.seal_keys.find(job.recipient);
  auto next = job.seal_keys.find(successor);
  if (recipient == job.seal_keys.end() || next == job.seal_keys.end()) {
    return absl::InvalidArgumentError("the union names someone who is not a participant");
  }
  // The released rows copy non-QID columns from the file, read again: it must be the table the
  // job was prepared on.
  if (!job.pushdown && job.data->source_text == nullptr) {
    absl::StatusOr<std::string> now = TableFingerprint(*job.data);
    if (!now.ok() || *now != job.table_fingerprint) {
      spdlog::error("job={} table changed since prepare: fingerprint {} then, {} now", job.job_id,
                    job.table_fingerprint, now.ok() ? *now : std::string(now.status().message()));
      return absl::FailedPreconditionError(absl::StrCat(
          "party '", options_.name,
          "': its table changed since the job was prepared; its released rows would not be "
          "those the job anonymized (details in the party's log)"));
    }
  }
  // Our released rows, each sealed on its own for the recipient (no two rows share a key, so the
  // recipient cannot tell which rows came from the same party), added to the set and shuffled.
  std::vector<std::string> lines;
  const std::vector<int> columns =
      common::ReleasedColumns(job.spec, *job.data, /*spec_order=*/true);
  const auto add_line = [&](const std::vector<std::string_view>& row) {
    lines.push_back(CsvLine(row));
  };
  if (job.pushdown) {
    if (absl::Status st = job.pushdown->ForEachReleasedRow(job.hier, columns, add_line); !st.ok()) {
      spdlog::error("job={} push-down released rows failed: {}", job.job_id,
                    std::string(st.message()));
      return absl::UnavailableError(absl::StrCat(
          "party '", options_.name,
          "': its database could not compute the released rows (details in the party's log)"));
    }
  } else if (job.local) {
    RETURN_IF_ERROR(job.local->ForEachReleasedRow(columns, add_line));
  } else {
    RETURN_IF_ERROR(
        common::ForEachReleasedRow(job.spec, *job.data, *job.tips, job.hier, columns, add_line));
  }
  const size_t before = list.rows_size();
  for (size_t i = 0; i < lines.size(); ++i) list.add_rows();
  const crypto::SealContext row_context =
      UnionRowContext(job.job_id, job.run_id, request.round(), step.recipient());
  RETURN_IF_ERROR(ParallelFor(lines.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(*list.mutable_rows(static_cast<int>(before + i)),
                     crypto::Seal(*recipient->second, row_context, common::PadUnionRow(lines[i])));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(ShuffleRows(list.mutable_rows()));
  // A list that fits in one chunk travels whole, inside the reply (and so in the party's durable
  // state: a restarted party answers the repeated hop with it); a larger one goes in chunks.
  if (job.chunk_bytes > 0 && list.ByteSizeLong() > job.chunk_bytes) {
    // In chunks sealed for the successor (each under UnionListContext's purpose + chunk).
    job.producing = {key, digest};
    fedanon::v1::SealedPayload unused;
    const absl::Status sealed =
        SealPayload(slot, successor, request.round(), "union-list", list.SerializeAsString(),
                    &unused, out->mutable_list_ref());
    job.producing = {};
    RETURN_IF_ERROR(sealed);
  } else {
    ASSIGN_OR_RETURN(std::string sealed,
                     crypto::SealFrom(*job.own_seal->keys, *next->second,
                                      UnionListContext(job.job_id, job.run_id, request.round(),
                                                       options_.name, successor),
                                      list.SerializeAsString()));
    auto* payload = out->mutable_list();
    payload->set_sender(options_.name);
    payload->set_receiver(successor);
    payload->set_purpose("union-list");
    payload->set_ciphertext(std::move(sealed));
  }
  // This party's released rows, each sealed for the recipient, inside the list sealed for the
  // next hop.
  RETURN_IF_ERROR(Audit(
      slot, request.round(),
      {.kind = kAuditUnionRows,
       .form = kAuditSealed,
       .to = {successor},
       .numbers = {{"rows", lines.size()}, {"list_rows", static_cast<uint64_t>(list.rows_size())}},
       .texts = {{"rows_sealed_for", job.recipient}}}));
  if (!key.empty() && job.chunk_bytes > 0) job.step_answers[key] = {digest, reply};
  answer = {union_key, reply};
  job.fresh_answer = true;
  return reply;
}

absl::Status PartyAgent::ReleaseAllowed(JobSlot& slot, const std::string& what) const {
  const JobState& job = *slot.job;
  if (job.ring.size() < 3) {
    // Two data parties: the global counts would reveal the other party's; the final check is not
    // run and the group sizes rest on the leader's word (docs/threat-model.md).
    spdlog::info(
        "job={} {}: final check skipped (2 data parties: the sum would reveal the other party's "
        "counts)",
        job.job_id, what);
    return absl::OkStatus();
  }
  if (job.final_check && job.final_check->passed) return absl::OkStatus();
  if (job.final_check && !job.final_check->failure.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": refuses to release: ", job.final_check->failure));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      what, ": refuses to release before the final check of the privacy model passed"));
}

absl::StatusOr<PartyMessage> PartyAgent::HandleFinalCheck(JobSlot& slot,
                                                          const LeaderMessage& request) {
  using Step = fedanon::v1::FinalCheckStep;
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  if (!slot.job->data || (!slot.job->tips && !slot.job->pushdown)) {
    return absl::FailedPreconditionError("no prepared horizontal job with this id");
  }
  JobState& job = *slot.job;
  const Step& step = request.final_check();
  if (job.ring.size() < 3) {
    return absl::FailedPreconditionError(
        "final check: with two data parties the summed counts would reveal the other party's; "
        "the check is not run (docs/threat-model.md)");
  }
  // The chunking is fixed by chunk_words and total_words; nothing else is the leader's choice.
  if (step.total_words() == 0 || step.total_words() > common::kMaxFinalCheckWords ||
      step.chunk_words() == 0 || step.chunk_words() > common::kMaxFinalCheckWords ||
      step.chunks() != (step.total_words() + step.chunk_words() - 1) / step.chunk_words() ||
      step.chunk() >= step.chunks()) {
    return absl::InvalidArgumentError(
        absl::StrCat("final check: chunk ", step.chunk(), " of ", step.chunks(), " (",
                     step.chunk_words(), " words each, ", step.total_words(), " in all, at most ",
                     common::kMaxFinalCheckWords, ") does not exist"));
  }
  const uint64_t key = (uint64_t{static_cast<uint32_t>(step.phase())} << 32) | step.chunk();
  const std::string request_bytes = absl::StrCat(request.round(), "/", step.SerializeAsString());
  if (job.final_check) {
    if (auto done = job.final_check->answered.find(key); done != job.final_check->answered.end()) {
      if (done->second.first != request_bytes) {
        return absl::PermissionDeniedError(absl::StrCat(
            "final check: chunk ", step.chunk(),
            " was already answered for a different request (one request, one answer)"));
      }
      return done->second.second;
    }
  }
  const size_t pos = std::find(job.ring.begin(), job.ring.end(), options_.name) - job.ring.begin();
  const bool first = pos == 0;
  const std::string& ring0 = job.ring.front();
  const uint64_t round = request.round();
  if (!job.final_check) {
    if (step.phase() != Step::PHASE_SUM || step.chunk() != 0) {
      return absl::FailedPreconditionError("final check: it starts with the sum of chunk 0");
    }
    // The last instructions first; from here on the cut is fixed (ApplyUpdates refuses more).
    RETURN_IF_ERROR(ApplyUpdates(slot, step.updates()));
    ASSIGN_OR_RETURN(const common::PrivacyModel model,
                     common::BuildPrivacyModel(job.spec, *job.data));
    JobState::FinalCheck check;
    if (job.local) {
      // Local recoding: this party's live groups (party/local_party.h).
      ASSIGN_OR_RETURN(check.layout,
                       common::LocalFinalCheckLayout(model, *job.data, job.local->live_groups()));
    } else {
      ASSIGN_OR_RETURN(check.layout, common::BuildFinalCheckLayout(model, *job.data, job.hier,
                                                                   job.spec.suppression_token()));
    }
    if (check.layout.words != step.total_words()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "final check: the request has ", step.total_words(),
          " words but the privacy model over this party's cut needs ", check.layout.words));
    }
    if (job.local) {
      check.counts = job.local->FinalCheckCounts();
    } else if (job.pushdown) {
      auto groups = job.pushdown->GroupCounts(job.hier);
      if (!groups.ok()) {
        spdlog::error("job={} push-down group counts failed: {}", job.job_id,
                      std::string(groups.status().message()));
        return absl::UnavailableError(absl::StrCat(
            "party '", options_.name,
            "': its database could not compute the group counts (details in the party's log)"));
      }
      ASSIGN_OR_RETURN(check.counts, common::FinalCheckCountsOfGroups(check.layout, *job.data,
                                                                      job.hier, *groups));
    } else {
      ASSIGN_OR_RETURN(check.counts,
                       common::LocalFinalCheckCounts(check.layout, *job.data, job.hier, *job.tips));
    }
    if (first) {
      if (job.restored_mask) {
        check.mask = *std::exchange(job.restored_mask, std::nullopt);  // drawn before a restart
        if (check.mask.size() != check.layout.words) {
          return absl::DataLossError("final check: the recorded mask has the wrong length");
        }
      } else {
        ASSIGN_OR_RETURN(check.mask, crypto::MaskVector(check.layout.words));
      }
      job.journal_extra = EncodeWords(check.mask);  // durable with this first answer
    }
    check.chain = job.update_chain;
    check.chunk_words = step.chunk_words();
    check.chunks = step.chunks();
    check.total.assign(check.layout.words, 0);
    check.have.assign(check.chunks, false);
    job.final_check = std::move(check);
    spdlog::info("job={} round={} final check started: {} constraints, {} words", job.job_id, round,
                 job.final_check->layout.constraints.size(), job.final_check->layout.words);
  } else if (step.phase() == Step::PHASE_SUM && step.chunk() == 0) {
    // Updates applied already are skipped; a new one is refused (the cut is fixed).
    RETURN_IF_ERROR(ApplyUpdates(slot, step.updates()));
  }
  JobState::FinalCheck& check = *job.final_check;
  if (!step.updates().empty() && !(step.phase() == Step::PHASE_SUM && step.chunk() == 0)) {
    return absl::InvalidArgumentError("final check: only the first sum carries state updates");
  }
  if (step.total_words() != check.layout.words || step.chunk_words() != check.chunk_words) {
    return absl::InvalidArgumentError("final check: the chunking changed during the check");
  }
  const uint64_t offset = uint64_t{step.chunk()} * check.chunk_words;
  const uint64_t len = std::min<uint64_t>(check.chunk_words, check.layout.words - offset);
  const std::string hop_purpose = common::FinalCheckPurpose("hop", step, round, check.chain);
  const std::string total_purpose = common::FinalCheckPurpose("total", step, round, check.chain);
  // Opens `step.input()`, which must be sealed by `sender` for this party under `purpose`.
  auto open_input = [&](const std::string& sender,
                        const std::string& purpose) -> absl::StatusOr<std::vector<uint64_t>> {
    if (!step.has_input() || step.input().sender() != sender ||
        step.input().receiver() != options_.name) {
      return absl::PermissionDeniedError(absl::StrCat(
          "final check: input must be sealed by '", sender, "' for '", options_.name, "'",
          step.has_input() ? absl::StrCat(", got one from '", step.input().sender(), "'")
                           : std::string(", got none")));
    }
    const crypto::SealContext context{job.job_id, job.run_id,    round,
                                      sender,     options_.name, purpose};
    auto opened = crypto::OpenFrom(*job.own_seal->keys, *job.seal_keys.at(sender), context,
                                   step.input().ciphertext());
    if (!opened.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("final check: the input does not open as sealed by '", sender,
                       "' for this cut and chunk (forged sender, another cut or another round): ",
                       opened.status().message()));
    }
    if (options_.observe_opened) options_.observe_opened(sender, purpose, *opened);
    ASSIGN_OR_RETURN(std::vector<uint64_t> words, DecodeWords(*opened));
    if (words.size() != len) {
      return absl::InvalidArgumentError("final check: a chunk has the wrong length");
    }
    return words;
  };
  PartyMessage reply;
  auto* out = reply.mutable_final_check();
  switch (step.phase()) {
    case Step::PHASE_SUM: {
      std::vector<uint64_t> acc;
      if (first) {
        if (step.has_input()) {
          return absl::PermissionDeniedError(
              "final check: the ring's first party starts from its own mask, not the leader's "
              "input");
        }
        acc.assign(check.mask.begin() + offset, check.mask.begin() + offset + len);
      } else {
        ASSIGN_OR_RETURN(acc, open_input(job.ring[pos - 1], hop_purpose));
      }
      RETURN_IF_ERROR(crypto::AddInPlace(absl::MakeSpan(acc),
                                         absl::MakeConstSpan(check.counts.data() + offset, len)));
      // The agreed successor; the last party seals for the ring's first, never for the leader.
      const std::string receiver = pos + 1 < job.ring.size() ? job.ring[pos + 1] : ring0;
      ASSIGN_OR_RETURN(*out->mutable_sealed(),
                       SealFor(slot, receiver, round, hop_purpose, EncodeWords(acc)));
      break;
    }
    case Step::PHASE_UNMASK: {
      if (!first) {
        return absl::PermissionDeniedError(
            "final check: only the ring's first party removes the mask");
      }
      ASSIGN_OR_RETURN(std::vector<uint64_t> sum, open_input(job.ring.back(), hop_purpose));
      RETURN_IF_ERROR(crypto::SubtractInPlace(
          absl::MakeSpan(sum), absl::MakeConstSpan(check.mask.data() + offset, len)));
      std::copy(sum.begin(), sum.end(), check.total.begin() + offset);
      check.have[step.chunk()] = true;
      const std::string bytes = EncodeWords(sum);
      for (size_t i = 1; i < job.ring.size(); ++i) {
        ASSIGN_OR_RETURN(*out->add_totals(),
                         SealFor(slot, job.ring[i], round, total_purpose, bytes));
      }
      break;
    }
    case Step::PHASE_VERIFY: {
      if (first) {
        if (step.has_input()) {
          return absl::PermissionDeniedError(
              "final check: the ring's first party verifies the total it unmasked itself");
        }
      } else {
        ASSIGN_OR_RETURN(std::vector<uint64_t> total, open_input(ring0, total_purpose));
        std::copy(total.begin(), total.end(), check.total.begin() + offset);
        check.have[step.chunk()] = true;
      }
      if (std::find(check.have.begin(), check.have.end(), false) != check.have.end()) {
        if (step.chunk() + 1 == check.chunks) {
          return absl::FailedPreconditionError(
              "final check: asked to verify before every chunk of the total arrived");
        }
        break;  // more chunks to come
      }
      const absl::Status holds = common::CheckFinalCounts(check.layout, check.total);
      if (!holds.ok()) {
        check.failure = std::string(holds.message());
        spdlog::error("job={} round={} {}; refusing to release", job.job_id, round, check.failure);
        return absl::FailedPreconditionError(absl::StrCat("refuses to release: ", check.failure));
      }
      check.passed = true;
      out->set_passed(true);
      spdlog::info(
          "job={} round={} final check passed: the privacy model holds on the global "
          "counts of the final cut",
          job.job_id, round);
      break;
    }
    default:
      return absl::InvalidArgumentError("final check: unknown phase");
  }
  check.answered[key] = {request_bytes, reply};
  job.fresh_answer = true;
  // This party's own final-cut counts of the chunk (PHASE_SUM: they left masked and sealed), the
  // totals it sealed (PHASE_UNMASK), or its verdict to the leader (PHASE_VERIFY).
  AuditEntry entry{.kind = kAuditFinalCheck,
                   .numbers = {{"phase", static_cast<uint64_t>(step.phase())},
                               {"chunk", step.chunk()},
                               {"offset", offset},
                               {"words", len}}};
  if (out->has_sealed()) {
    entry.form = kAuditMaskedSealed;
    entry.to = {out->sealed().receiver()};
    entry.has_counts = true;
    entry.counts = {check.counts.begin() + static_cast<ptrdiff_t>(offset),
                    check.counts.begin() + static_cast<ptrdiff_t>(offset + len)};
  } else if (out->totals_size() > 0) {
    entry.form = kAuditSealed;
    entry.to = Receivers(out->totals());
  } else {
    entry.form = kAuditPlaintext;
    entry.to = {job.leader};
    entry.numbers.emplace_back("passed", out->passed() ? 1 : 0);
  }
  RETURN_IF_ERROR(Audit(slot, round, std::move(entry)));
  return reply;
}

absl::StatusOr<fedanon::v1::SealedPayload> PartyAgent::SealFor(JobSlot& slot,
                                                               const std::string& receiver,
                                                               uint64_t round,
                                                               const std::string& purpose,
                                                               const std::string& bytes) const {
  auto it = slot.job->seal_keys.find(receiver);
  if (it == slot.job->seal_keys.end()) {
    return absl::InvalidArgumentError(absl::StrCat("'", receiver, "' is not a participant"));
  }
  const crypto::SealContext context{slot.job->job_id, slot.job->run_id, round,
                                    options_.name,    receiver,         purpose};
  ASSIGN_OR_RETURN(std::string sealed,
                   crypto::SealFrom(*slot.job->own_seal->keys, *it->second, context, bytes));
  fedanon::v1::SealedPayload out;
  out.set_sender(options_.name);
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_ciphertext(std::move(sealed));
  return out;
}

absl::StatusOr<std::string> PartyAgent::OpenSealed(JobSlot& slot,
                                                   const fedanon::v1::SealedPayload& payload,
                                                   uint64_t round, const std::string& purpose,
                                                   bool observe) const {
  // Only data parties seal payloads for each other; the leader relays them.
  if (std::find(slot.job->ring.begin(), slot.job->ring.end(), payload.sender()) ==
      slot.job->ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat("a sealed payload names '", payload.sender(),
                                                    "', not a data party, as sender"));
  }
  const crypto::SealContext context{slot.job->job_id, slot.job->run_id, round,
                                    payload.sender(), options_.name,    purpose};
  ASSIGN_OR_RETURN(std::string plain, crypto::OpenFrom(*slot.job->own_seal->keys,
                                                       *slot.job->seal_keys.at(payload.sender()),
                                                       context, payload.ciphertext()));
  if (observe && options_.observe_opened) options_.observe_opened(payload.sender(), purpose, plain);
  return plain;
}

absl::Status PartyAgent::SealPayload(JobSlot& slot, const std::string& receiver, uint64_t round,
                                     const std::string& purpose, const std::string& bytes,
                                     fedanon::v1::SealedPayload* whole,
                                     fedanon::v1::ChunkRef* ref) const {
  JobState& job = *slot.job;
  if (job.chunk_bytes == 0) {
    ASSIGN_OR_RETURN(*whole, SealFor(slot, receiver, round, purpose, bytes));
    return absl::OkStatus();
  }
  if (job.producing.first.empty()) return absl::InternalError("a chunked payload without a step");
  const std::string stream = absl::StrCat(job.producing.first, "/", receiver);
  const std::string& request_digest = job.producing.second;
  if (job.outbox.count(stream)) {
    return absl::FailedPreconditionError(
        absl::StrCat("chunked payload '", stream, "' was already produced in this job"));
  }
  fedanon::v1::ChunkRef out;
  out.set_stream(stream);
  out.set_sender(options_.name);
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_request_digest(request_digest);
  ASSIGN_OR_RETURN(
      std::vector<fedanon::v1::SealedPayload> chunks,
      common::SealChunks(
          bytes, job.chunk_bytes, &out,
          [&](std::string_view piece, const std::string& chunk_purpose) {
            slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
            return SealFor(slot, receiver, round, chunk_purpose, std::string(piece));
          }));
  // The SealedPayload names the payload's purpose; the chunk's purpose is bound in the box.
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    chunks[i].set_purpose(purpose);
    RETURN_IF_ERROR(common::CheckChunkFits(out, i, chunks[i], job.message_limit));
  }
  *ref = out;
  job.outbox[stream] = JobState::Outgoing{round, std::move(out), std::move(chunks)};
  return absl::OkStatus();
}

absl::StatusOr<std::string> PartyAgent::OpenPayload(JobSlot& slot,
                                                    const fedanon::v1::SealedPayload& whole,
                                                    const fedanon::v1::ChunkRef& ref,
                                                    uint64_t round, const std::string& purpose,
                                                    std::string* sender) const {
  JobState& job = *slot.job;
  if (ref.stream().empty()) {
    if (job.chunk_bytes > 0 && !whole.ciphertext().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a whole '", purpose, "' payload in a job whose per-record payloads travel in chunks"));
    }
    if (sender != nullptr) *sender = whole.sender();
    return OpenSealed(slot, whole, round, purpose);
  }
  if (ref.receiver() != options_.name || ref.purpose() != purpose) {
    return absl::PermissionDeniedError(
        absl::StrCat(common::DescribeStream(ref), " is a '", ref.purpose(), "' payload for '",
                     ref.receiver(), "', not a '", purpose, "' payload for this party"));
  }
  auto it = job.inbox.find({ref.sender(), ref.stream()});
  if (it == job.inbox.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(common::DescribeStream(ref), ": no chunk of it was received"));
  }
  if (!common::SameChunkRef(it->second.ref(), ref)) {
    return absl::InvalidArgumentError(absl::StrCat(
        common::DescribeStream(ref), ": the step names another shape than its chunks declared"));
  }
  common::ChunkReceiver receiver = std::move(it->second);
  job.inbox.erase(it);
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::SealedPayload> chunks, std::move(receiver).Take());
  if (sender != nullptr) *sender = ref.sender();
  ASSIGN_OR_RETURN(
      std::string plain,
      common::OpenChunks(
          ref, chunks,
          [&](const fedanon::v1::SealedPayload& chunk, const std::string& chunk_purpose) {
            slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
            return OpenSealed(slot, chunk, round, chunk_purpose, /*observe=*/false);
          }));
  if (options_.observe_opened) options_.observe_opened(ref.sender(), purpose, plain);
  return plain;
}

absl::Status PartyAgent::SealInstruction(JobSlot& slot, const std::string& receiver, uint64_t round,
                                         const std::string& instruction,
                                         fedanon::v1::VerticalInstructions* out) const {
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  RETURN_IF_ERROR(SealPayload(slot, receiver, round, "instruction", instruction, &whole, &ref));
  if (ref.stream().empty()) {
    *out->add_for_parties() = std::move(whole);
  } else {
    *out->add_refs() = std::move(ref);
  }
  return absl::OkStatus();
}

absl::StatusOr<PartyMessage> PartyAgent::HandleChunkGet(JobSlot& slot,
                                                        const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  const auto& get = request.chunk_get();
  auto it = slot.job->outbox.find(get.stream());
  if (it == slot.job->outbox.end()) {
    return absl::NotFoundError(
        absl::StrCat("no chunked payload '", get.stream(), "' is held by this party"));
  }
  const JobState::Outgoing& out = it->second;
  if (get.index() >= out.chunks.size()) {
    return absl::InvalidArgumentError(absl::StrCat("chunked payload '", get.stream(), "': chunk ",
                                                   get.index(), " is beyond its count of ",
                                                   out.chunks.size()));
  }
  PartyMessage reply;
  auto* chunk = reply.mutable_chunk();
  *chunk->mutable_ref() = out.ref;
  chunk->set_index(get.index());
  *chunk->mutable_chunk() = out.chunks[get.index()];
  RETURN_IF_ERROR(Audit(slot, request.round(),
                        {.kind = kAuditPayloadChunk,
                         .form = kAuditSealed,
                         .to = {out.ref.receiver()},
                         .numbers = {{"index", get.index()},
                                     {"chunks", out.ref.chunks()},
                                     {"payload_bytes", out.ref.total_bytes()}},
                         .texts = {{"stream", out.ref.stream()}, {"purpose", out.ref.purpose()}}}));
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleChunkPut(JobSlot& slot,
                                                        const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    return absl::FailedPreconditionError(kNoJobState);
  }
  JobState& job = *slot.job;
  if (job.chunk_bytes == 0) {
    return absl::FailedPreconditionError("this job's payloads travel whole, not in chunks");
  }
  const auto& put = request.chunk_put();
  const fedanon::v1::ChunkRef& ref = put.ref();
  if (ref.receiver() != options_.name) {
    return absl::PermissionDeniedError(
        absl::StrCat(common::DescribeStream(ref), " is for '", ref.receiver(), "'"));
  }
  if (std::find(job.ring.begin(), job.ring.end(), ref.sender()) == job.ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        common::DescribeStream(ref), ": '", ref.sender(), "' is not a data party of the job"));
  }
  auto key = std::make_pair(ref.sender(), ref.stream());
  auto it = job.inbox.find(key);
  if (it == job.inbox.end()) {
    ASSIGN_OR_RETURN(common::ChunkReceiver started,
                     common::ChunkReceiver::Start(ref, common::kMaxChunkedPayloadBytes));
    it = job.inbox.emplace(key, std::move(started)).first;
  }
  RETURN_IF_ERROR(it->second.Add(ref, put.index(), put.chunk()));
  // A vertical job keeps the chunks it received durably (a restarted party still has them when
  // the step that names them comes).
  if (job.vertical && !job.replaying) job.fresh_answer = true;
  PartyMessage reply;
  reply.mutable_chunk_ack()->set_received(it->second.received());
  RETURN_IF_ERROR(Audit(slot, request.round(),
                        {.kind = kAuditChunkReceipt,
                         .form = kAuditPlaintext,
                         .to = {job.leader},
                         .numbers = {{"index", put.index()}, {"received", it->second.received()}},
                         .texts = {{"stream", ref.stream()}, {"from", ref.sender()}}}));
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleVertical(JobSlot& slot,
                                                        const LeaderMessage& request) {
  if (!slot.job || slot.job->job_id != request.job_id()) {
    // Also a party restarted without the job's state file: it cannot resume (named reason).
    return absl::FailedPreconditionError(kNoJobState);
  }
  if (!slot.job->vertical) {
    return absl::FailedPreconditionError("no prepared vertical job with this id");
  }
  const auto& step = request.vertical();
  const uint64_t round = request.round();
  JobState& job = *slot.job;
  // One request, one answer across a lost connection or a restart of the leader or of this party:
  // the leader repeats only the last request it sent here, which gets the reply that left.
  const std::string request_digest = common::RequestDigest(round, step);
  if (job.vertical_last && job.vertical_last->first == request_digest) {
    return job.vertical_last->second;
  }
  // Chunked payloads of earlier rounds were relayed: drop them (bounded memory).
  for (auto it = job.outbox.begin(); it != job.outbox.end();) {
    it = it->second.round < round ? job.outbox.erase(it) : std::next(it);
  }
  // One request, one answer for the steps that produce chunked payloads: the same request again
  // gets the stored reply (the same chunks), another request under the same step is refused.
  const std::string key = ProducingStepKey(step, round);
  std::string digest;
  if (!key.empty() && job.chunk_bytes > 0) {
    digest = common::RequestDigest(round, step);
    auto answered = job.step_answers.find(key);
    if (answered != job.step_answers.end()) {
      if (answered->second.first == digest) return answered->second.second;
      return absl::FailedPreconditionError(
          absl::StrCat("one request, one answer: vertical step '", key,
                       "' was already answered for another request"));
    }
  }
  job.producing = {key, digest};
  absl::StatusOr<PartyMessage> reply = HandleVerticalStep(slot, step, round);
  job.producing = {};
  if (reply.ok() && !key.empty() && job.chunk_bytes > 0) job.step_answers[key] = {digest, *reply};
  if (reply.ok()) {
    job.vertical_last = std::pair{request_digest, *reply};
    // Durable (with its journal_extra) before the reply leaves (HandleLocked).
    if (!job.replaying) job.fresh_answer = true;
  }
  return reply;
}

absl::StatusOr<PartyMessage> PartyAgent::HandleVerticalStep(JobSlot& slot,
                                                            const fedanon::v1::VerticalStep& step,
                                                            uint64_t round) {
  PartyMessage reply;
  auto* out = reply.mutable_vertical();
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kIdEncrypt:
      RETURN_IF_ERROR(VerticalIdEncryptBatch(slot, step.id_encrypt(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdReencrypt:
      RETURN_IF_ERROR(VerticalIdReencryptBatch(slot, step.id_reencrypt(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdDigests:
      RETURN_IF_ERROR(VerticalIdDigests(slot, step.id_digests(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdCommon:
      RETURN_IF_ERROR(VerticalIdCommon(slot, step.id_common(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kIdAlign:
      RETURN_IF_ERROR(VerticalIdAlign(slot, step.id_align(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kPropose:
      RETURN_IF_ERROR(VerticalPropose(slot, round, out));
      RETURN_IF_ERROR(Audit(
          slot, round,
          {.kind = kAuditProposal,
           .form = kAuditPlaintext,
           .to = {slot.job->leader},
           .numbers = out->proposal().participate()
                          ? CandidateNumbers(out->proposal().candidate(), {{"participate", 1}})
                          : std::vector<std::pair<std::string, uint64_t>>{{"participate", 0}},
           .texts = {{"score", out->proposal().participate()
                                   ? absl::StrCat(out->proposal().candidate().score())
                                   : ""},
                     {"reason", out->proposal().reason()}}}));
      return reply;
    case fedanon::v1::VerticalStep::kWinner:
      RETURN_IF_ERROR(VerticalWinner(slot, step.winner(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kDeliver:
      RETURN_IF_ERROR(VerticalDeliver(slot, step.deliver(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kPublish:
      RETURN_IF_ERROR(VerticalPublish(slot, step.publish(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kCommit:
      RETURN_IF_ERROR(VerticalCommit(slot, step.commit(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kRelease:
      RETURN_IF_ERROR(VerticalRelease(slot, step.release(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kAssemble:
      RETURN_IF_ERROR(VerticalAssemble(slot, step.assemble(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kReleaseReportPage:
      RETURN_IF_ERROR(VerticalReleaseReportPage(slot, step.release_report_page(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalPropose:
      RETURN_IF_ERROR(VerticalLocalPropose(slot, step.local_propose(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalProposalsPut:
      RETURN_IF_ERROR(VerticalLocalProposalsPut(slot, step.local_proposals_put(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalVerdictsPage:
      RETURN_IF_ERROR(VerticalLocalVerdictsPage(slot, step.local_verdicts_page(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalVerdictsPut:
      RETURN_IF_ERROR(VerticalLocalVerdictsPut(slot, step.local_verdicts_put(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalWinners:
      RETURN_IF_ERROR(VerticalLocalWinners(slot, step.local_winners(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalCommit:
      RETURN_IF_ERROR(VerticalLocalCommit(slot, step.local_commit(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalJudge:
      RETURN_IF_ERROR(VerticalLocalJudge(slot, step.local_judge(), round, out));
      return reply;
    case fedanon::v1::VerticalStep::kLocalPublish:
      RETURN_IF_ERROR(VerticalLocalPublish(slot, step.local_publish(), round, out));
      return reply;
    default:
      return absl::InvalidArgumentError("unknown vertical step");
  }
}

namespace {
// Wall seconds since `t`, for the ID-matching steps' timing log lines.
double WallSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Where this party stands in a list's walk round the ring (common::IdLastHop): `hop` is its hop
// in origin's walk, and the parties it takes the batch from and hands it to ("" after the last).
struct IdHop {
  size_t hop = 0;
  std::string predecessor;
  std::string successor;
  bool last = false;
};
absl::StatusOr<IdHop> HopInWalk(const std::vector<std::string>& ring, const std::string& self,
                                const std::string& origin) {
  const size_t n = ring.size();
  const auto index = [&](const std::string& name) {
    return static_cast<size_t>(std::find(ring.begin(), ring.end(), name) - ring.begin());
  };
  const size_t own = index(self);
  const size_t o = index(origin);
  if (own == n || o == n) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", origin, "' is not a data party of the job"));
  }
  IdHop h;
  h.hop = (own + n - o) % n;
  if (h.hop == 0) {
    // The owner re-encrypts its own list only to remove its blinding (three or more parties).
    if (!common::IdListsBlinded(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", origin, "' is not another data party of the job"));
    }
    h.hop = n;
  }
  h.predecessor = ring[(o + h.hop - 1) % n];
  h.last = h.hop == common::IdLastHop(n);
  if (!h.last) h.successor = ring[(o + h.hop + 1) % n];
  return h;
}
}  // namespace

absl::Status PartyAgent::VerticalIdEncryptBatch(JobSlot& slot, const fedanon::v1::IdEncrypt& step,
                                                uint64_t round,
                                                fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  RETURN_IF_ERROR(CheckBatchSize(&job.id_batch_ids, step.batch_ids()));
  const size_t n = job.ring.size();
  const size_t own = static_cast<size_t>(
      std::find(job.ring.begin(), job.ring.end(), options_.name) - job.ring.begin());
  if (own == n) return absl::InvalidArgumentError("this party is not in the job's ring");
  const std::string& successor = job.ring[(own + 1) % n];
  if (step.next() != successor) {
    return absl::PermissionDeniedError(absl::StrCat(
        "IdEncrypt names '", step.next(), "' as next, not the ring's successor '", successor, "'"));
  }
  if (!job.matcher) {
    job.id_matching_cpu_start = CurrentProcessUsage().cpu_seconds;
    if (job.replaying && !job.restored_matcher_secret.empty()) {
      ASSIGN_OR_RETURN(job.matcher,
                       IdMatcher::Restore(job.vertical->ids(), job.restored_matcher_secret));
    } else {
      ASSIGN_OR_RETURN(job.matcher, IdMatcher::Create(job.vertical->ids()));
    }
    // The keys and the secret order are durable with this first reply that depends on them, so
    // a restarted party re-encrypts with the same keys and answers in the same order.
    if (!job.replaying) {
      job.journal_extra = std::string(job.matcher->DurableSecret().AsStringView());
    }
  }
  const uint64_t size = job.id_batch_ids;
  const uint64_t total = job.matcher->size();
  const uint32_t batches = static_cast<uint32_t>(std::max<uint64_t>(1, (total + size - 1) / size));
  RETURN_IF_ERROR(CheckBatchCount(job.id_batches, options_.name, step.batch(), batches));
  const std::string digest = crypto::Sha256(step.SerializeAsString());
  const std::pair<std::string, uint32_t> key{options_.name, step.batch()};
  if (auto it = job.id_batch_answered.find(key);
      it != job.id_batch_answered.end() && it->second != digest) {
    return absl::FailedPreconditionError(absl::StrCat("one request, one answer: batch ",
                                                      step.batch(),
                                                      " of this party's list was already "
                                                      "encrypted for another request"));
  }
  const uint64_t first = uint64_t{step.batch()} * size;
  const uint64_t count = std::min<uint64_t>(size, total - first);
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::vector<std::string> points,
                   job.matcher->EncryptOwnRange(first, count, common::IdListsBlinded(n)));
  const double crypto_s = WallSince(t0);
  ASSIGN_OR_RETURN(*out->mutable_ids()->mutable_list(),
                   SealFor(slot, step.next(), round,
                           IdBatchPurpose(job.run_id, options_.name, 0, step.batch(), batches),
                           SerializeIdList(points)));
  out->mutable_ids()->set_batches(batches);
  RETURN_IF_ERROR(CheckBatchFits(*out, job.message_limit, job.id_batch_ids));
  job.id_batch_answered[key] = digest;
  spdlog::debug("job={} IdEncrypt batch {} of {} ({} ids): encrypt {:.3f} s (wall)", job.job_id,
                step.batch(), batches, count, crypto_s);
  return Audit(slot, round,
               {.kind = kAuditIdList,
                .form = kAuditSealed,
                .to = {step.next()},
                .numbers = {{"ids", count}, {"batch", step.batch()}, {"batches", batches}},
                .texts = {{"origin", options_.name},
                          {"layer", common::IdListsBlinded(n) ? "blinding" : "key"}}});
}

absl::Status PartyAgent::VerticalIdReencryptBatch(JobSlot& slot, const fedanon::v1::IdReEncrypt& re,
                                                  uint64_t round,
                                                  fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&job.id_batch_ids, re.batch_ids()));
  ASSIGN_OR_RETURN(const IdHop at, HopInWalk(job.ring, options_.name, re.origin()));
  if (re.next() != at.successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("IdReEncrypt of '", re.origin(), "''s list names '", re.next(),
                     "' as next, not '", at.successor, "' (the ring's order)"));
  }
  RETURN_IF_ERROR(CheckBatchCount(job.id_batches, re.origin(), re.batch(), re.batches()));
  if (re.list().sender() != at.predecessor) {
    return absl::PermissionDeniedError(absl::StrCat(
        "batch ", re.batch(), " of '", re.origin(), "''s list is sealed by '", re.list().sender(),
        "', not by its predecessor '", at.predecessor, "' on the ring"));
  }
  const std::string digest = crypto::Sha256(re.SerializeAsString());
  const std::pair<std::string, uint32_t> key{absl::StrCat(re.origin(), "#", at.hop), re.batch()};
  if (auto it = job.id_batch_answered.find(key);
      it != job.id_batch_answered.end() && it->second != digest) {
    return absl::FailedPreconditionError(
        absl::StrCat("one request, one answer: batch ", re.batch(), " of '", re.origin(),
                     "''s list was already re-encrypted from another payload"));
  }
  absl::StatusOr<std::string> bytes =
      OpenSealed(slot, re.list(), round,
                 IdBatchPurpose(job.run_id, re.origin(), at.hop - 1, re.batch(), re.batches()));
  if (!bytes.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("batch ", re.batch(), " of ", re.batches(),
                                                    " of '", re.origin(),
                                                    "''s list does not open as hop ", at.hop - 1,
                                                    "'s (sealed for another origin, hop, batch or "
                                                    "count): ",
                                                    bytes.status().message()));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> points, ParseIdList(*bytes));
  RETURN_IF_ERROR(
      CheckBatchPoints(re.origin(), re.batch(), re.batches(), job.id_batch_ids, points.size()));
  const uint64_t count = points.size();
  const bool own_list = re.origin() == options_.name;
  ASSIGN_OR_RETURN(std::vector<std::string> again, own_list
                                                       ? job.matcher->Unblind(points)
                                                       : job.matcher->ReEncrypt(points, at.last));
  std::vector<std::string>().swap(points);
  std::vector<std::string> to;
  if (!at.last) {
    ASSIGN_OR_RETURN(
        *out->mutable_ids()->mutable_list(),
        SealFor(slot, at.successor, round,
                IdBatchPurpose(job.run_id, re.origin(), at.hop, re.batch(), re.batches()),
                SerializeIdList(again)));
    to.push_back(at.successor);
  } else {
    // The last hop: the batch fully encrypted, as digests, for the leader (which intersects
    // the lists) and for the list's owner (which aligns on them); with three or more parties
    // this party is the owner.
    std::string digests = IdMatcher::FinalDigests(again);
    fedanon::v1::IdList list;
    list.set_digests(digests);
    const std::string serialized = list.SerializeAsString();
    const std::string purpose = IdDigestsPurpose(job.run_id, re.origin(), re.batch(), re.batches());
    to.push_back(job.leader);
    if (!own_list) to.push_back(re.origin());
    for (const std::string& receiver : to) {
      ASSIGN_OR_RETURN(*out->mutable_ids()->add_for_parties(),
                       SealFor(slot, receiver, round, purpose, serialized));
    }
    if (own_list) job.id_own_digests[re.batch()] = std::move(digests);
  }
  RETURN_IF_ERROR(CheckBatchFits(*out, job.message_limit, job.id_batch_ids));
  job.id_batch_answered[key] = digest;
  return Audit(slot, round,
               {.kind = kAuditIdList,
                .form = kAuditSealed,
                .to = to,
                .numbers = {{"ids", count},
                            {"batch", re.batch()},
                            {"batches", re.batches()},
                            {"hop", at.hop}},
                .texts = {{"origin", re.origin()},
                          {"list", at.last ? "fully-encrypted digests" : "points"}}});
}

absl::Status PartyAgent::VerticalIdDigests(JobSlot& slot, const fedanon::v1::IdDigests& d,
                                           uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&job.id_batch_ids, d.batch_ids()));
  const size_t n = job.ring.size();
  // Only this party's own list comes back to it as digests, and only where another party applied
  // the last layer (two data parties).
  if (d.origin() != options_.name || common::IdListsBlinded(n)) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of '", d.origin(),
                     "''s list are not for this party (a party receives only "
                     "its own list's digests, and only from the other of two data parties)"));
  }
  const size_t own = static_cast<size_t>(
      std::find(job.ring.begin(), job.ring.end(), options_.name) - job.ring.begin());
  const std::string& last = job.ring[(own + common::IdLastHop(n)) % n];
  if (d.digests().sender() != last) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of batch ", d.batch(), " of this party's list are sealed by '",
                     d.digests().sender(), "', not by its last hop '", last, "'"));
  }
  RETURN_IF_ERROR(CheckBatchCount(job.id_batches, d.origin(), d.batch(), d.batches()));
  const std::string digest = crypto::Sha256(d.SerializeAsString());
  out->mutable_ids();
  // The reply is a receipt to the leader (nothing sealed, no data).
  const auto receipt = [&] {
    slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
    return Audit(slot, round,
                 {.kind = kAuditChunkReceipt,
                  .form = kAuditPlaintext,
                  .to = {job.leader},
                  .numbers = {{"batch", d.batch()}, {"batches", d.batches()}},
                  .texts = {{"origin", d.origin()}, {"list", "fully-encrypted digests"}}});
  };
  if (auto it = job.id_digests_delivered.find(d.batch()); it != job.id_digests_delivered.end()) {
    if (it->second == digest) return receipt();  // the same delivery again
    return absl::FailedPreconditionError(
        absl::StrCat("one request, one answer: the digests of batch ", d.batch(),
                     " of this party's list were already delivered with other content"));
  }
  absl::StatusOr<std::string> bytes = OpenSealed(
      slot, d.digests(), round, IdDigestsPurpose(job.run_id, d.origin(), d.batch(), d.batches()));
  if (!bytes.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of batch ", d.batch(), " of ", d.batches(),
                     " of this party's list do not open (sealed for another origin, batch or "
                     "count): ",
                     bytes.status().message()));
  }
  fedanon::v1::IdList list;
  if (!list.ParseFromString(*bytes) || list.digests().size() % common::kIdDigestBytes != 0) {
    return absl::InvalidArgumentError("an ID digest list does not parse");
  }
  RETURN_IF_ERROR(CheckBatchPoints(d.origin(), d.batch(), d.batches(), job.id_batch_ids,
                                   list.digests().size() / common::kIdDigestBytes));
  job.id_own_digests[d.batch()] = std::move(*list.mutable_digests());
  job.id_digests_delivered[d.batch()] = digest;
  return receipt();
}

absl::Status PartyAgent::VerticalIdCommon(JobSlot& slot, const fedanon::v1::IdCommon& c,
                                          uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&job.id_batch_ids, c.batch_ids()));
  const std::string digest = crypto::Sha256(c.SerializeAsString());
  if (auto it = job.id_common_answered.find(c.batch()); it != job.id_common_answered.end()) {
    if (it->second.first != digest) {
      return absl::FailedPreconditionError(
          absl::StrCat("one request, one answer: batch ", c.batch(),
                       " of the common ids was already delivered with other content"));
    }
    *out = it->second.second;  // the same delivery again: the same answer
    return absl::OkStatus();
  }
  if (c.batches() == 0 || c.batch() >= c.batches() ||
      (job.id_common_batches != 0 && c.batches() != job.id_common_batches)) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", c.batch(), " of ", c.batches(),
                                                   " of the common ids is out of range"));
  }
  if (c.batch() != job.id_common_answered.size()) {
    return absl::FailedPreconditionError(absl::StrCat("batch ", c.batch(),
                                                      " of the common ids arrived before batch ",
                                                      job.id_common_answered.size()));
  }
  const size_t n_digests = c.digests().size() / common::kIdDigestBytes;
  const bool last = c.batch() + 1 == c.batches();
  if (c.digests().size() % common::kIdDigestBytes != 0 ||
      (!last && n_digests != job.id_batch_ids) || n_digests > job.id_batch_ids ||
      (last && n_digests == 0 && c.batches() > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", c.batch(), " of ", c.batches(), " of the common ids holds ",
                     c.digests().size(), " bytes; every batch but the last holds ",
                     job.id_batch_ids, " digests and the last 1 to ", job.id_batch_ids));
  }
  job.id_common_batches = c.batches();
  job.id_common += c.digests();
  fedanon::v1::VerticalStepResult reply;
  reply.mutable_ids();
  if (last) {
    // Every batch of this party's own list must be back before it can check the intersection.
    const auto own_batches = job.id_batches.find(options_.name);
    if (own_batches == job.id_batches.end() || job.id_own_digests.size() != own_batches->second) {
      return absl::FailedPreconditionError(
          "the common ids arrived before every batch of this party's own list came back");
    }
    std::string own;
    for (const auto& [b, packed] : job.id_own_digests) own += packed;
    // Each common digest in this party's own list, strictly ascending: a party never signs an
    // intersection it cannot be part of.
    absl::StatusOr<IdAlignment> alignment = job.matcher->AlignToCommon(own, job.id_common);
    if (!alignment.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("the leader's common ids are refused: ", alignment.status().message()));
    }
    job.id_alignment = *std::move(alignment);
    const std::string common_digest = crypto::Sha256(job.id_common);
    const uint64_t count = job.id_common.size() / common::kIdDigestBytes;
    auto* statement = reply.mutable_ids()->mutable_common();
    statement->set_digest(common_digest);
    statement->set_count(count);
    if (job.replaying && !job.restored_id_common_signature.empty()) {
      statement->set_signature(job.restored_id_common_signature);  // the one that left
    } else {
      ASSIGN_OR_RETURN(
          *statement->mutable_signature(),
          crypto::SignWithSealKey(options_.seal_key_pem,
                                  IdCommonStatement(job.job_id, job.run_id, common_digest, count)));
    }
  }
  job.id_common_answered[c.batch()] = {digest, reply};
  *out = reply;
  return Audit(slot, round,
               {.kind = kAuditChunkReceipt,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"batch", c.batch()}, {"batches", c.batches()}, {"digests", n_digests}},
                .texts = {{"list", "common ids"}}});
}

absl::Status PartyAgent::VerticalIdAlign(JobSlot& slot, const fedanon::v1::IdAlign& align,
                                         uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  VerticalParty& vp = *job.vertical;
  if (job.replaying && job.restored_alignment) {
    // Reloading after a restart: the alignment this party computed before (its journal).
    job.matcher.reset();
    RETURN_IF_ERROR(vp.Start(job.restored_alignment->canonical, job.restored_alignment->common));
    out->mutable_ids()->set_common_records(job.restored_alignment->common);
    return absl::OkStatus();
  }
  if (!job.matcher) return absl::FailedPreconditionError("ID matching has not started");
  if (!job.id_alignment) {
    return absl::FailedPreconditionError("IdAlign before every batch of the common ids arrived");
  }
  // Every party's signed statement on the common ids it received, each the same as this one's:
  // the leader cannot hand parties different intersections.
  const std::string common_digest = crypto::Sha256(job.id_common);
  const uint64_t count = job.id_alignment->common;
  std::set<std::string> signed_by;
  for (const auto& s : align.statements()) {
    const auto key = job.seal_keys.find(s.party());
    if (std::find(job.ring.begin(), job.ring.end(), s.party()) == job.ring.end() ||
        key == job.seal_keys.end() || !signed_by.insert(s.party()).second) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: a statement on the common ids from '", s.party(),
                       "', which is not a data party of the job or signed twice"));
    }
    const absl::Status valid = crypto::VerifyWithSealKey(
        *key->second,
        IdCommonStatement(job.job_id, job.run_id, s.statement().digest(), s.statement().count()),
        s.statement().signature());
    if (!valid.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: the statement on the common ids of '", s.party(),
                       "' does not carry its signature (", valid.message(), ")"));
    }
    if (s.statement().digest() != common_digest || s.statement().count() != count) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: '", s.party(), "' received other common ids (",
                       s.statement().count(), ") than this party (", count,
                       "): the leader handed the parties different intersections"));
    }
  }
  if (signed_by.size() != job.ring.size()) {
    return absl::PermissionDeniedError(
        "IdAlign: the leader did not relay every data party's statement on the common ids");
  }
  IdAlignment alignment = *std::exchange(job.id_alignment, std::nullopt);
  job.matcher.reset();
  job.id_own_digests.clear();
  job.id_common.clear();
  job.id_common_answered.clear();
  job.id_digests_delivered.clear();
  job.id_batch_answered.clear();
  if (!job.replaying) {
    // The matched-id result, durable with this reply: common count, then each record's position.
    std::vector<uint64_t> words{alignment.common};
    for (int64_t c : alignment.canonical) words.push_back(static_cast<uint64_t>(c));
    job.journal_extra = EncodeWords(words);
  }
  RETURN_IF_ERROR(vp.Start(alignment.canonical, alignment.common));
  if (options_.observe_canonical_ids) options_.observe_canonical_ids(vp.ids());
  const ProcessUsage usage = CurrentProcessUsage();
  spdlog::info(
      "job={} ID matching: {} of {} records are common to every party; process CPU {:.2f} s "
      "since IdEncrypt, peak RSS {:.0f} MB",
      job.job_id, alignment.common, vp.ids().size(), usage.cpu_seconds - job.id_matching_cpu_start,
      usage.peak_rss_mb);
  out->mutable_ids()->set_common_records(alignment.common);
  return Audit(slot, round,
               {.kind = kAuditIdCommon,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"common_records", alignment.common}}});
}

absl::Status PartyAgent::VerticalPropose(JobSlot& slot, uint64_t round,
                                         fedanon::v1::VerticalStepResult* out) const {
  const VerticalProposalView view = slot.job->vertical->Propose();
  const auto& choice = view.choice;
  auto* proposal = out->mutable_proposal();
  proposal->set_participate(choice.has_value());
  proposal->set_reason(view.reason);
  proposal->set_misbehaving(!options_.misbehave.empty());
  if (choice) {
    auto* c = proposal->mutable_candidate();
    c->set_attribute(static_cast<uint32_t>(choice->attr));
    c->set_node(choice->node);
    c->set_candidate(choice->c);
    c->set_score(choice->score);
    c->set_order_key(choice->order_key);
  }
  ASSIGN_OR_RETURN(*proposal->mutable_signature(),
                   crypto::SignWithSealKey(
                       options_.seal_key_pem,
                       ProposalStatement(slot.job->job_id, slot.job->run_id, round, *proposal)));
  return absl::OkStatus();
}

namespace {

bool SameCandidate(const fedanon::v1::VerticalCandidate& a,
                   const fedanon::v1::VerticalCandidate& b) {
  return a.attribute() == b.attribute() && a.node() == b.node() && a.candidate() == b.candidate();
}

common::TopDownSpecializer::Choice AsChoice(const fedanon::v1::VerticalCandidate& c) {
  return {static_cast<int>(c.attribute()), c.node(), c.candidate(), c.score(), c.order_key()};
}

}  // namespace

absl::Status PartyAgent::CheckSignedProposal(JobSlot& slot,
                                             const fedanon::v1::SignedProposal& signed_,
                                             uint64_t round) const {
  auto key = slot.job->seal_keys.find(signed_.party());
  if (key == slot.job->seal_keys.end() || std::find(slot.job->ring.begin(), slot.job->ring.end(),
                                                    signed_.party()) == slot.job->ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat("forged vertical proposal: '", signed_.party(),
                                                    "' is not a data party of the job"));
  }
  const absl::Status st = crypto::VerifyWithSealKey(
      *key->second,
      ProposalStatement(slot.job->job_id, slot.job->run_id, round, signed_.proposal()),
      signed_.proposal().signature());
  if (!st.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "forged vertical proposal: the proposal of '", signed_.party(),
        "' as relayed by the leader does not carry its signature (", st.message(), ")"));
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::CheckCommitEvidence(JobSlot& slot,
                                             const fedanon::v1::VerticalCommit& commit,
                                             uint64_t round) const {
  const fedanon::v1::SignedProposal& winner = commit.winner();
  RETURN_IF_ERROR(CheckSignedProposal(slot, winner, round));
  if (!winner.proposal().participate() ||
      !SameCandidate(winner.proposal().candidate(), commit.candidate())) {
    return absl::PermissionDeniedError(
        absl::StrCat("forged vertical commit: '", winner.party(),
                     "' did not propose the candidate the leader commits"));
  }
  // The judges other than the owner: each must have signed its verdict on this candidate.
  std::set<std::string> judges;
  for (const auto& j : slot.job->vertical->judges()) {
    if (j != winner.party()) judges.insert(j);
  }
  std::set<std::string> accepted;
  bool vetoed = false;
  for (const auto& v : commit.verdicts()) {
    if (!judges.count(v.judge())) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical verdict: '", v.judge(),
                                                      "' is not a judge of this candidate"));
    }
    if (!SameCandidate(v.candidate(), commit.candidate())) {
      return absl::PermissionDeniedError(absl::StrCat("forged vertical verdict: the verdict of '",
                                                      v.judge(), "' is about another candidate"));
    }
    const absl::Status st = crypto::VerifyWithSealKey(
        *slot.job->seal_keys.at(v.judge()),
        VerdictStatement(slot.job->job_id, slot.job->run_id, round, v.candidate(), v.accept()),
        v.signature());
    if (!st.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "forged vertical verdict: the verdict of '", v.judge(),
          "' as relayed by the leader does not carry its signature (", st.message(), ")"));
    }
    if (v.accept()) {
      accepted.insert(v.judge());
    } else {
      vetoed = true;
    }
  }
  if (commit.accept()) {
    if (vetoed) {
      return absl::PermissionDeniedError(
          "forged vertical commit: the leader commits a candidate a judge vetoed");
    }
    for (const auto& j : judges) {
      if (!accepted.count(j)) {
        return absl::PermissionDeniedError(
            absl::StrCat("forged vertical commit: no signed acceptance from judge '", j, "'"));
      }
    }
  } else if (!vetoed) {
    return absl::PermissionDeniedError(
        "forged vertical commit: the leader drops a candidate no judge vetoed");
  }
  return absl::OkStatus();
}

absl::Status PartyAgent::VerticalWinner(JobSlot& slot, const fedanon::v1::VerticalWinner& winner,
                                        uint64_t round, fedanon::v1::VerticalStepResult* out) {
  // The winner must be this party's own signed proposal and the best of every party's signed
  // proposal of the round: the leader can neither invent a proposal, alter a score, nor turn a
  // party's participation into a Not-participate.
  std::set<std::string> heard;
  std::optional<common::TopDownSpecializer::Choice> best;
  std::string best_party;
  fedanon::v1::VerticalCandidate best_candidate;
  for (const auto& p : winner.proposals()) {
    RETURN_IF_ERROR(CheckSignedProposal(slot, p, round));
    if (!heard.insert(p.party()).second) {
      return absl::PermissionDeniedError(
          absl::StrCat("forged vertical winner: two proposals of '", p.party(), "'"));
    }
    if (!p.proposal().participate()) continue;
    const auto c = AsChoice(p.proposal().candidate());
    if (!best || common::TopDownSpecializer::Beats(c, *best)) {
      best = c;
      best_party = p.party();
      best_candidate = p.proposal().candidate();
    }
  }
  if (heard.size() != slot.job->ring.size()) {
    return absl::PermissionDeniedError(
        "forged vertical winner: the leader did not relay every party's signed proposal");
  }
  if (best_party != options_.name || !SameCandidate(winner.candidate(), best_candidate)) {
    return absl::PermissionDeniedError(
        "forged vertical winner: the candidate is not the best signed proposal of the round");
  }
  ASSIGN_OR_RETURN(std::string instruction,
                   slot.job->vertical->MakeInstruction(winner.candidate()));
  // Before the verdict the children go to the judges only (the other holders of sensitive
  // values); everyone else gets them from VerticalPublish once every judge accepted.
  std::vector<std::string> receivers;
  for (const auto& party : slot.job->vertical->judges()) {
    if (party == options_.name) continue;
    RETURN_IF_ERROR(SealInstruction(slot, party, round, instruction, out->mutable_instructions()));
    receivers.push_back(party);
  }
  slot.job->pending =
      JobState::PendingInstruction{round, winner.candidate(), std::move(instruction)};
  return Audit(
      slot, round,
      {.kind = kAuditInstruction,
       .form = kAuditSealed,
       .to = receivers,
       .numbers = CandidateNumbers(winner.candidate(),
                                   {{"records", InstructionRecords(slot.job->pending->bytes)}}),
       .texts = {{"stage", "to the judges"}}});
}

absl::Status PartyAgent::VerticalDeliver(JobSlot& slot, const fedanon::v1::VerticalDeliver& deliver,
                                         uint64_t round, fedanon::v1::VerticalStepResult* out) {
  const auto& judges = slot.job->vertical->judges();
  if (std::find(judges.begin(), judges.end(), options_.name) == judges.end()) {
    return absl::PermissionDeniedError(
        "this party holds no sensitive values: it judges no candidate and receives a winner's "
        "instruction only with the commit");
  }
  std::string owner;
  ASSIGN_OR_RETURN(std::string bytes,
                   OpenPayload(slot, deliver.instruction(), deliver.instruction_ref(), round,
                               "instruction", &owner));
  ASSIGN_OR_RETURN(bool accept, slot.job->vertical->Deliver(bytes));
  if (!accept) {
    spdlog::info("job={} round={} vetoed the winner: it would break a confidence bound",
                 slot.job->job_id, round);
  }
  fedanon::v1::VerticalInstruction instruction;
  if (!instruction.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the instruction does not parse");
  }
  // The verdict, sealed for the owner too: the owner releases the children to the other parties
  // only on every judge's own acceptance, not on the leader's word.
  fedanon::v1::VerticalVerdictBody body;
  *body.mutable_candidate() = instruction.candidate();
  body.set_accept(accept);
  out->mutable_verdict()->set_accept(accept);
  // Signed, so every party can check the leader's commit (or veto) against it.
  ASSIGN_OR_RETURN(
      *out->mutable_verdict()->mutable_signature(),
      crypto::SignWithSealKey(options_.seal_key_pem,
                              VerdictStatement(slot.job->job_id, slot.job->run_id, round,
                                               instruction.candidate(), accept)));
  ASSIGN_OR_RETURN(*out->mutable_verdict()->mutable_for_owner(),
                   SealFor(slot, owner, round, "verdict", body.SerializeAsString()));
  // In plaintext for the leader and sealed for the owner.
  return Audit(slot, round,
               {.kind = kAuditVerdict,
                .form = "plaintext+sealed",
                .to = {slot.job->leader, owner},
                .numbers = CandidateNumbers(instruction.candidate(), {{"accept", accept}})});
}

absl::Status PartyAgent::VerticalPublish(JobSlot& slot, const fedanon::v1::VerticalPublish& publish,
                                         uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  if (!job.pending || job.pending->round != round ||
      !SameCandidate(job.pending->candidate, publish.candidate())) {
    return absl::FailedPreconditionError("publish of a candidate this party did not just instruct");
  }
  // Every other judge's acceptance of this candidate, sealed by that judge for this party.
  std::set<std::string> waiting;
  for (const auto& judge : job.vertical->judges()) {
    if (judge != options_.name) waiting.insert(judge);
  }
  for (const auto& sealed : publish.verdicts()) {
    if (!waiting.count(sealed.sender())) {
      return absl::PermissionDeniedError(absl::StrCat("a verdict from '", sealed.sender(),
                                                      "', which is not a judge still to be heard"));
    }
    ASSIGN_OR_RETURN(std::string bytes, OpenSealed(slot, sealed, round, "verdict"));
    fedanon::v1::VerticalVerdictBody body;
    if (!body.ParseFromString(bytes) || !SameCandidate(body.candidate(), publish.candidate())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the verdict of '", sealed.sender(), "' is not about this candidate"));
    }
    if (!body.accept()) {
      return absl::PermissionDeniedError(
          absl::StrCat("'", sealed.sender(), "' rejected the candidate: nothing to publish"));
    }
    waiting.erase(sealed.sender());
  }
  if (!waiting.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("no acceptance from judge '", *waiting.begin(), "'"));
  }
  const auto& judges = job.vertical->judges();
  std::vector<std::string> receivers;
  for (const auto& party : job.ring) {
    if (party == options_.name || std::find(judges.begin(), judges.end(), party) != judges.end()) {
      continue;
    }
    RETURN_IF_ERROR(
        SealInstruction(slot, party, round, job.pending->bytes, out->mutable_instructions()));
    receivers.push_back(party);
  }
  const uint64_t records = InstructionRecords(job.pending->bytes);
  job.published = std::make_pair(round, job.pending->candidate);
  job.pending.reset();
  return Audit(slot, round,
               {.kind = kAuditInstruction,
                .form = kAuditSealed,
                .to = receivers,
                .numbers = CandidateNumbers(publish.candidate(), {{"records", records}}),
                .texts = {{"stage", "after every judge accepted"}}});
}

absl::Status PartyAgent::VerticalCommit(JobSlot& slot, const fedanon::v1::VerticalCommit& commit,
                                        uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  job.pending.reset();
  RETURN_IF_ERROR(CheckCommitEvidence(slot, commit, round));
  if (commit.has_instruction() || !commit.instruction_ref().stream().empty()) {
    // A party that did not judge the candidate: its children arrive with the acceptance.
    if (!commit.accept()) {
      return absl::InvalidArgumentError("a rejected candidate comes with no instruction");
    }
    const auto& judges = job.vertical->judges();
    if (std::find(judges.begin(), judges.end(), options_.name) != judges.end()) {
      return absl::InvalidArgumentError("a judge receives the instruction before its verdict");
    }
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenPayload(slot, commit.instruction(), commit.instruction_ref(), round,
                                 "instruction", nullptr));
    fedanon::v1::VerticalInstruction instruction;
    if (!instruction.ParseFromString(bytes) ||
        !SameCandidate(instruction.candidate(), commit.candidate())) {
      return absl::InvalidArgumentError("the commit's instruction is about another candidate");
    }
    ASSIGN_OR_RETURN(const bool accept, job.vertical->Deliver(bytes));
    if (!accept) return absl::InternalError("a non-judging party vetoed a candidate");
  }
  if (commit.accept() && job.vertical->owns(static_cast<int>(commit.candidate().attribute()))) {
    // Our own candidate: applied only once every other judge's sealed acceptance was checked.
    const auto& judges = job.vertical->judges();
    const bool judged = std::any_of(judges.begin(), judges.end(),
                                    [&](const std::string& j) { return j != options_.name; });
    if (judged && (!job.published || job.published->first != round ||
                   !SameCandidate(job.published->second, commit.candidate()))) {
      return absl::FailedPreconditionError(absl::StrCat(
          common::kRefusedSpecialization,
          ": the commit of our own candidate comes without every judge's sealed acceptance"));
    }
  }
  job.published.reset();
  RETURN_IF_ERROR(job.vertical->Commit(commit.candidate(), commit.accept()));
  out->set_committed(true);
  return Audit(slot, round,
               {.kind = kAuditCommit,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = CandidateNumbers(commit.candidate(), {{"accept", commit.accept()}})});
}

namespace {

absl::StatusOr<VerticalLocalReplica*> LocalReplicaOf(VerticalParty& vp) {
  if (vp.local() == nullptr) {
    return absl::FailedPreconditionError(
        "a local-recoding step in a job without recoding: local (or before the ID matching)");
  }
  return vp.local();
}

}  // namespace

absl::Status PartyAgent::VerticalLocalPropose(JobSlot& slot,
                                              const fedanon::v1::LocalPropose& propose,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  JobState& job = *slot.job;
  const bool fresh = !job.local_own || job.local_own->wave != round;
  if (fresh) {
    // Once per wave: every page request of the wave is answered from the same signed bytes.
    const fedanon::v1::LocalProposals proposals = local->Propose(round);
    JobState::LocalOwnList own;
    own.wave = round;
    own.list = LocalProposalsList(proposals);
    own.digest = crypto::Sha256(own.list);
    own.live_groups = proposals.live_groups();
    own.state_digest = proposals.state_digest();
    // Pages of half a chunk: a page and its description fit one message either way.
    const uint64_t limit =
        job.message_limit > 0 ? job.message_limit : common::kDefaultMessageLimitBytes;
    own.page_bytes = std::max<uint64_t>(1, common::ChunkBytesForLimit(limit) / 2);
    // Signed, so every party can recompute the winners the leader announces from them.
    ASSIGN_OR_RETURN(
        own.signature,
        crypto::SignWithSealKey(options_.seal_key_pem,
                                LocalProposalsStatement(job.job_id, job.run_id, round, own.digest,
                                                        own.live_groups, own.state_digest)));
    job.local_own = std::move(own);
    job.local_delivered.clear();
    job.local_verdicts_delivered.clear();
  }
  const JobState::LocalOwnList& own = *job.local_own;
  const std::vector<std::string_view> pages = common::SplitPayload(own.list, own.page_bytes);
  if (propose.page() >= pages.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", propose.page(), " of this party's ",
                                                   pages.size(), " proposal pages of wave ", round,
                                                   " does not exist"));
  }
  auto* proposals = out->mutable_local_proposals();
  proposals->set_live_groups(own.live_groups);
  proposals->set_state_digest(own.state_digest);
  proposals->set_signature(own.signature);
  proposals->set_page(propose.page());
  proposals->set_pages(static_cast<uint32_t>(pages.size()));
  proposals->set_page_bytes(std::string(pages[propose.page()]));
  proposals->set_list_bytes(own.list.size());
  proposals->set_list_digest(own.digest);
  if (!fresh) return absl::OkStatus();
  return Audit(slot, round,
               {.kind = kAuditProposal,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"live_groups", own.live_groups},
                            {"proposals", local->proposed_count()},
                            {"pages", pages.size()}},
                .texts = {{"recoding", "local"}}});
}

absl::Status PartyAgent::VerticalLocalProposalsPut(JobSlot& slot,
                                                   const fedanon::v1::LocalProposalsPut& put,
                                                   uint64_t round,
                                                   fedanon::v1::VerticalStepResult* out) {
  RETURN_IF_ERROR(LocalReplicaOf(*slot.job->vertical).status());
  JobState& job = *slot.job;
  auto refuse = [&](const std::string& why) {
    const absl::Status st = absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": ", why));
    spdlog::error("job={} round={} {}", job.job_id, round, std::string(st.message()));
    return st;
  };
  const std::string& from = put.party();
  if (from == options_.name ||
      std::find(job.ring.begin(), job.ring.end(), from) == job.ring.end() ||
      job.seal_keys.find(from) == job.seal_keys.end()) {
    return refuse(absl::StrCat("a proposal page of '", from,
                               "', which is not another data party of the job"));
  }
  if (!job.local_own || job.local_own->wave != round) {
    return refuse(absl::StrCat("a proposal page of '", from, "' for wave ", round,
                               ", but the current wave is ",
                               job.local_own ? job.local_own->wave : 0));
  }
  if (put.pages() == 0 || put.page() >= put.pages() ||
      put.pages() > std::max<uint64_t>(1, put.list_bytes())) {
    return refuse(absl::StrCat("page ", put.page(), " of ", put.pages(), " of the proposals of '",
                               from, "' (", put.list_bytes(), " bytes) is out of range"));
  }
  if (put.list_bytes() > common::kMaxChunkedPayloadBytes) {
    return refuse(absl::StrCat("the proposals of '", from, "' declare ", put.list_bytes(),
                               " bytes, over the bound of ", common::kMaxChunkedPayloadBytes));
  }
  fedanon::v1::LocalProposalsPut head = put;
  head.clear_page();
  head.clear_page_bytes();
  auto [it, fresh] = job.local_delivered.try_emplace(from);
  JobState::LocalDelivery& d = it->second;
  if (fresh) {
    d.head = head;
  } else if (d.head.SerializeAsString() != head.SerializeAsString()) {
    return refuse(absl::StrCat("the description of the proposals of '", from,
                               "' (pages, size, digest, live groups, state digest or signature) "
                               "changed between pages of wave ",
                               round));
  }
  if (auto page = d.pages.find(put.page()); page != d.pages.end()) {
    if (page->second != put.page_bytes()) {
      return refuse(absl::StrCat("different content for page ", put.page(),
                                 " of the proposals of '", from, "', already delivered in wave ",
                                 round));
    }
    out->set_committed(true);  // the same page again: one request, one answer
    return absl::OkStatus();
  }
  if (d.bytes + put.page_bytes().size() > put.list_bytes()) {
    return refuse(absl::StrCat("the proposal pages of '", from, "' exceed their declared size of ",
                               put.list_bytes(), " bytes"));
  }
  d.bytes += put.page_bytes().size();
  d.pages.emplace(put.page(), put.page_bytes());
  if (d.pages.size() == put.pages()) {
    if (d.bytes != put.list_bytes()) {
      return refuse(absl::StrCat("the proposal pages of '", from, "' hold ", d.bytes,
                                 " bytes, not the declared ", put.list_bytes()));
    }
    std::string whole;
    whole.reserve(d.bytes);
    for (const auto& [i, bytes] : d.pages) whole.append(bytes);
    if (crypto::Sha256(whole) != put.list_digest()) {
      return refuse(absl::StrCat("an altered proposal page: the proposals of '", from,
                                 "' as delivered by the leader do not match their digest"));
    }
    const absl::Status st = crypto::VerifyWithSealKey(
        *job.seal_keys.at(from),
        LocalProposalsStatement(job.job_id, job.run_id, round, put.list_digest(), put.live_groups(),
                                put.state_digest()),
        put.signature());
    if (!st.ok()) {
      return refuse(
          absl::StrCat("forged local proposals: the proposals of '", from,
                       "' as delivered by the leader do not carry its signature for wave ", round,
                       " (altered, or replayed from another wave) (", st.message(), ")"));
    }
    if (!d.list.ParseFromString(whole) || d.list.live_groups() != 0 ||
        !d.list.state_digest().empty() || !d.list.signature().empty()) {
      return refuse(absl::StrCat("the proposals of '", from, "' do not parse as a list"));
    }
    d.list.set_live_groups(put.live_groups());
    d.list.set_state_digest(put.state_digest());
    d.verified = true;
  }
  out->set_committed(true);
  return Audit(slot, round,
               {.kind = kAuditChunkReceipt,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"page", put.page()}, {"pages", put.pages()}},
                .texts = {{"stream", "local-proposals"}, {"from", from}}});
}

absl::Status PartyAgent::CheckDeliveredLocalProposals(JobSlot& slot, uint64_t round) const {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  const JobState& job = *slot.job;
  if (!job.local_own || job.local_own->wave != round) {
    return absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": a step of wave ", round,
                                                    " before this party proposed in it"));
  }
  std::vector<std::pair<std::string, fedanon::v1::LocalProposals>> all;
  for (const auto& party : job.ring) {
    if (party == options_.name) {
      fedanon::v1::LocalProposals mine;
      if (!mine.ParseFromString(job.local_own->list)) {
        return absl::InternalError("this party's own proposal list does not parse");
      }
      mine.set_live_groups(job.local_own->live_groups);
      mine.set_state_digest(job.local_own->state_digest);
      all.emplace_back(party, std::move(mine));
      continue;
    }
    const auto it = job.local_delivered.find(party);
    if (it == job.local_delivered.end() || !it->second.verified) {
      return absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave, ": a step of wave ", round, " before the proposals of '", party,
          "' were delivered (", it == job.local_delivered.end() ? 0 : it->second.pages.size(),
          " of ", it == job.local_delivered.end() ? 0 : it->second.head.pages(), " pages)"));
    }
    all.emplace_back(party, it->second.list);
  }
  return local->CheckProposals(round, all);
}

absl::Status PartyAgent::VerticalLocalWinners(JobSlot& slot, const fedanon::v1::LocalWinners& won,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  absl::Status checked = CheckDeliveredLocalProposals(slot, round);
  // The leader names only the count and digest of the groups this party won: it recomputes them
  // from the delivered proposals and refuses a different announcement.
  fedanon::v1::LocalWinners mine;
  if (checked.ok()) {
    mine = local->OwnWinners();
    const std::string digest = crypto::Sha256(mine.SerializeAsString());
    if (static_cast<uint64_t>(mine.won_size()) != won.won_count() || digest != won.won_digest()) {
      checked = absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave,
          ": the leader's winners differ from the best signed proposals: it announces ",
          won.won_count(), " won groups (or another digest of them), the delivered proposals give ",
          mine.won_size()));
    }
  }
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", slot.job->job_id, round, std::string(checked.message()));
    return checked;
  }
  ASSIGN_OR_RETURN(const fedanon::v1::LocalInstruction instruction,
                   local->MakeInstruction(round, mine));
  const std::string bytes = instruction.SerializeAsString();
  // With judges (confidence bounds) the splits go to the other judges only; the parties that are
  // not judges receive the accepted ones after the verdicts (VerticalLocalPublish).
  const std::vector<std::string>& judges = local->judges();
  std::vector<std::string> receivers;
  for (const auto& party : slot.job->ring) {
    if (party == options_.name) continue;
    if (!judges.empty() && !std::binary_search(judges.begin(), judges.end(), party)) continue;
    RETURN_IF_ERROR(SealInstruction(slot, party, round, bytes, out->mutable_instructions()));
    receivers.push_back(party);
  }
  return Audit(slot, round,
               {.kind = kAuditInstruction,
                .form = kAuditSealed,
                .to = receivers,
                .numbers = {{"groups", instruction.splits_size()}},
                .texts = {{"recoding", "local"}}});
}

absl::Status PartyAgent::VerticalLocalCommit(JobSlot& slot, const fedanon::v1::LocalCommit& commit,
                                             uint64_t round, fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  // Before opening anything: every party's signed proposals (digests, recomputed winners).
  absl::Status checked = CheckDeliveredLocalProposals(slot, round);
  if (checked.ok() && !commit.closing() && !local->judges().empty()) {
    checked = CheckDeliveredLocalVerdicts(slot, commit.verdicts(), round);
  }
  if (checked.ok() && commit.closing()) {
    if (!commit.instructions().empty() || !commit.instruction_refs().empty()) {
      checked = absl::PermissionDeniedError(
          absl::StrCat(kRefusedLocalWave, ": the closing wave carries instructions"));
    } else {
      checked = local->CloseWaves(round);
    }
  }
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", slot.job->job_id, round, std::string(checked.message()));
    return checked;
  }
  if (commit.closing()) {
    out->set_committed(true);
    return Audit(slot, round,
                 {.kind = kAuditCommit,
                  .form = kAuditPlaintext,
                  .to = {slot.job->leader},
                  .numbers = {{"instructions", 0}, {"live_groups", local->live_groups()}},
                  .texts = {{"recoding", "local"}, {"wave", "closing"}}});
  }
  ASSIGN_OR_RETURN(const auto from_others, OpenLocalInstructions(slot, commit.instructions(),
                                                                 commit.instruction_refs(), round));
  if (absl::Status st = local->ApplyWave(round, from_others); !st.ok()) {
    spdlog::error("job={} round={} {}", slot.job->job_id, round, std::string(st.message()));
    return st;
  }
  out->set_committed(true);
  return Audit(
      slot, round,
      {.kind = kAuditCommit,
       .form = kAuditPlaintext,
       .to = {slot.job->leader},
       .numbers = {{"instructions", from_others.size()}, {"live_groups", local->live_groups()}},
       .texts = {{"recoding", "local"}}});
}

absl::StatusOr<std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>>
PartyAgent::OpenLocalInstructions(
    JobSlot& slot, const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& wholes,
    const google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>& refs, uint64_t round) const {
  std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>> out;
  auto open = [&](const fedanon::v1::SealedPayload& whole,
                  const fedanon::v1::ChunkRef& ref) -> absl::Status {
    slot.mu.AssertHeld();  // for -Wthread-safety: the lambda runs under the caller's lock
    std::string sender;
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenPayload(slot, whole, ref, round, "instruction", &sender));
    fedanon::v1::LocalInstruction instruction;
    if (!instruction.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the local-recoding instruction of '", sender, "' does not parse"));
    }
    out.emplace_back(sender, std::move(instruction));
    return absl::OkStatus();
  };
  for (const auto& whole : wholes) RETURN_IF_ERROR(open(whole, {}));
  for (const auto& ref : refs) RETURN_IF_ERROR(open({}, ref));
  return out;
}

absl::Status PartyAgent::CheckDeliveredLocalVerdicts(
    JobSlot& slot,
    const google::protobuf::RepeatedPtrField<fedanon::v1::SignedLocalVerdicts>& relayed,
    uint64_t round) const {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  const JobState& job = *slot.job;
  if (!relayed.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(kRefusedLocalWave, ": verdicts relayed inside the step of wave ", round,
                     " (they travel in pages: LocalVerdictsPut)"));
  }
  std::vector<std::pair<std::string, fedanon::v1::LocalVerdicts>> all;
  for (const auto& judge : local->judges()) {
    if (judge == options_.name) {
      fedanon::v1::LocalVerdicts mine;
      if (!job.local_verdicts_own || job.local_verdicts_own->wave != round ||
          !mine.ParseFromString(job.local_verdicts_own->list)) {
        return absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": a step of wave ",
                                                        round, " before this judge's verdicts"));
      }
      all.emplace_back(judge, std::move(mine));
      continue;
    }
    const auto it = job.local_verdicts_delivered.find(judge);
    if (it == job.local_verdicts_delivered.end() || !it->second.verified) {
      const bool any = it != job.local_verdicts_delivered.end();
      return absl::PermissionDeniedError(absl::StrCat(
          kRefusedLocalWave, ": a step of wave ", round, " before the verdicts of judge '", judge,
          "' were delivered (", any ? it->second.pages.size() : 0, " of ",
          any ? it->second.head.pages() : 0, " pages)"));
    }
    all.emplace_back(judge, it->second.list);
  }
  return local->CheckVerdicts(round, all);
}

namespace {

// Page `page` of a judge's cached verdict list, with the description every page repeats.
absl::Status AnswerVerdictsPage(const std::string& list, const std::string& digest,
                                const std::string& signature, uint64_t page_bytes, uint32_t page,
                                uint64_t round, fedanon::v1::VerticalStepResult* out) {
  const std::vector<std::string_view> pages = common::SplitPayload(list, page_bytes);
  if (page >= pages.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page, " of this judge's ", pages.size(),
                                                   " verdict pages of wave ", round,
                                                   " does not exist"));
  }
  auto* v = out->mutable_local_verdicts();
  v->set_signature(signature);
  v->set_page(page);
  v->set_pages(static_cast<uint32_t>(pages.size()));
  v->set_page_bytes(std::string(pages[page]));
  v->set_list_bytes(list.size());
  v->set_list_digest(digest);
  return absl::OkStatus();
}

}  // namespace

absl::Status PartyAgent::VerticalLocalJudge(JobSlot& slot, const fedanon::v1::LocalJudge& judge,
                                            uint64_t round, fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  JobState& job = *slot.job;
  if (absl::Status st = CheckDeliveredLocalProposals(slot, round); !st.ok()) {
    spdlog::error("job={} round={} {}", job.job_id, round, std::string(st.message()));
    return st;
  }
  const bool fresh = !job.local_verdicts_own || job.local_verdicts_own->wave != round;
  if (fresh) {
    // Once per wave: every page request of the wave is answered from the same signed bytes.
    ASSIGN_OR_RETURN(
        const auto from_owners,
        OpenLocalInstructions(slot, judge.instructions(), judge.instruction_refs(), round));
    absl::StatusOr<fedanon::v1::LocalVerdicts> verdicts = local->Judge(round, from_owners);
    if (!verdicts.ok()) {
      spdlog::error("job={} round={} {}", job.job_id, round,
                    std::string(verdicts.status().message()));
      return verdicts.status();
    }
    JobState::LocalOwnVerdicts own;
    own.wave = round;
    own.list = LocalVerdictsList(*verdicts);
    own.digest = crypto::Sha256(own.list);
    own.groups = static_cast<uint64_t>(verdicts->verdicts_size());
    for (const auto& v : verdicts->verdicts()) own.vetoed += v.accept() ? 0 : 1;
    const uint64_t limit =
        job.message_limit > 0 ? job.message_limit : common::kDefaultMessageLimitBytes;
    own.page_bytes = std::max<uint64_t>(1, common::ChunkBytesForLimit(limit) / 2);
    ASSIGN_OR_RETURN(
        own.signature,
        crypto::SignWithSealKey(options_.seal_key_pem,
                                LocalVerdictsStatement(job.job_id, job.run_id, round, own.digest)));
    job.local_verdicts_own = std::move(own);
  }
  const JobState::LocalOwnVerdicts& own = *job.local_verdicts_own;
  RETURN_IF_ERROR(
      AnswerVerdictsPage(own.list, own.digest, own.signature, own.page_bytes, 0, round, out));
  if (!fresh) return absl::OkStatus();
  return Audit(slot, round,
               {.kind = kAuditVerdict,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"groups", own.groups},
                            {"vetoed", own.vetoed},
                            {"pages", out->local_verdicts().pages()}},
                .texts = {{"recoding", "local"}}});
}

absl::Status PartyAgent::VerticalLocalVerdictsPage(JobSlot& slot,
                                                   const fedanon::v1::LocalVerdictsPage& page,
                                                   uint64_t round,
                                                   fedanon::v1::VerticalStepResult* out) {
  RETURN_IF_ERROR(LocalReplicaOf(*slot.job->vertical).status());
  const JobState& job = *slot.job;
  if (!job.local_verdicts_own || job.local_verdicts_own->wave != round) {
    return absl::FailedPreconditionError(absl::StrCat(
        kRefusedLocalWave, ": a verdict page of wave ", round, " before this judge judged it"));
  }
  const JobState::LocalOwnVerdicts& own = *job.local_verdicts_own;
  return AnswerVerdictsPage(own.list, own.digest, own.signature, own.page_bytes, page.page(), round,
                            out);
}

absl::Status PartyAgent::VerticalLocalVerdictsPut(JobSlot& slot,
                                                  const fedanon::v1::LocalVerdictsPut& put,
                                                  uint64_t round,
                                                  fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  JobState& job = *slot.job;
  auto refuse = [&](const std::string& why) {
    const absl::Status st = absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": ", why));
    spdlog::error("job={} round={} {}", job.job_id, round, std::string(st.message()));
    return st;
  };
  const std::string& from = put.judge();
  if (from == options_.name ||
      !std::binary_search(local->judges().begin(), local->judges().end(), from) ||
      job.seal_keys.find(from) == job.seal_keys.end()) {
    return refuse(
        absl::StrCat("a verdict page of '", from, "', which is not another judge of the job"));
  }
  if (!job.local_own || job.local_own->wave != round) {
    return refuse(absl::StrCat("a verdict page of '", from, "' for wave ", round,
                               ", but the current wave is ",
                               job.local_own ? job.local_own->wave : 0));
  }
  if (put.pages() == 0 || put.page() >= put.pages() ||
      put.pages() > std::max<uint64_t>(1, put.list_bytes())) {
    return refuse(absl::StrCat("page ", put.page(), " of ", put.pages(), " of the verdicts of '",
                               from, "' (", put.list_bytes(), " bytes) is out of range"));
  }
  if (put.list_bytes() > common::kMaxChunkedPayloadBytes) {
    return refuse(absl::StrCat("the verdicts of '", from, "' declare ", put.list_bytes(),
                               " bytes, over the bound of ", common::kMaxChunkedPayloadBytes));
  }
  fedanon::v1::LocalVerdictsPut head = put;
  head.clear_page();
  head.clear_page_bytes();
  auto [it, fresh] = job.local_verdicts_delivered.try_emplace(from);
  JobState::VerdictDelivery& d = it->second;
  if (fresh) {
    d.head = head;
  } else if (d.head.SerializeAsString() != head.SerializeAsString()) {
    return refuse(
        absl::StrCat("the description of the verdicts of '", from,
                     "' (pages, size, digest or signature) changed between pages of wave ", round));
  }
  if (auto page = d.pages.find(put.page()); page != d.pages.end()) {
    if (page->second != put.page_bytes()) {
      return refuse(absl::StrCat("different content for page ", put.page(), " of the verdicts of '",
                                 from, "', already delivered in wave ", round));
    }
    out->set_committed(true);  // the same page again: one request, one answer
    return absl::OkStatus();
  }
  if (d.bytes + put.page_bytes().size() > put.list_bytes()) {
    return refuse(absl::StrCat("the verdict pages of '", from, "' exceed their declared size of ",
                               put.list_bytes(), " bytes"));
  }
  d.bytes += put.page_bytes().size();
  d.pages.emplace(put.page(), put.page_bytes());
  if (d.pages.size() == put.pages()) {
    if (d.bytes != put.list_bytes()) {
      return refuse(absl::StrCat("the verdict pages of '", from, "' hold ", d.bytes,
                                 " bytes, not the declared ", put.list_bytes()));
    }
    std::string whole;
    whole.reserve(d.bytes);
    for (const auto& [i, bytes] : d.pages) whole.append(bytes);
    if (crypto::Sha256(whole) != put.list_digest()) {
      return refuse(absl::StrCat("an altered verdict page: the verdicts of '", from,
                                 "' as delivered by the leader do not match their digest"));
    }
    const absl::Status st = crypto::VerifyWithSealKey(
        *job.seal_keys.at(from),
        LocalVerdictsStatement(job.job_id, job.run_id, round, put.list_digest()), put.signature());
    if (!st.ok()) {
      return refuse(
          absl::StrCat("forged local verdicts: the verdicts of judge '", from,
                       "' as delivered by the leader do not carry its signature for wave ", round,
                       " (altered, or replayed from another wave) (", st.message(), ")"));
    }
    if (!d.list.ParseFromString(whole) || !d.list.signature().empty() || d.list.pages() != 0 ||
        !d.list.page_bytes().empty()) {
      return refuse(absl::StrCat("the verdicts of '", from, "' do not parse as a list"));
    }
    d.verified = true;
  }
  out->set_committed(true);
  return Audit(slot, round,
               {.kind = kAuditChunkReceipt,
                .form = kAuditPlaintext,
                .to = {job.leader},
                .numbers = {{"page", put.page()}, {"pages", put.pages()}},
                .texts = {{"stream", "local-verdicts"}, {"from", from}}});
}

absl::Status PartyAgent::VerticalLocalPublish(JobSlot& slot,
                                              const fedanon::v1::LocalPublish& publish,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  ASSIGN_OR_RETURN(VerticalLocalReplica * local, LocalReplicaOf(*slot.job->vertical));
  absl::Status checked = CheckDeliveredLocalProposals(slot, round);
  if (checked.ok()) checked = CheckDeliveredLocalVerdicts(slot, publish.verdicts(), round);
  if (!checked.ok()) {
    spdlog::error("job={} round={} {}", slot.job->job_id, round, std::string(checked.message()));
    return checked;
  }
  ASSIGN_OR_RETURN(const fedanon::v1::LocalInstruction instruction,
                   local->PublishInstruction(round));
  const std::string bytes = instruction.SerializeAsString();
  const std::vector<std::string>& judges = local->judges();
  std::vector<std::string> receivers;
  for (const auto& party : slot.job->ring) {
    if (party == options_.name || std::binary_search(judges.begin(), judges.end(), party)) {
      continue;
    }
    RETURN_IF_ERROR(SealInstruction(slot, party, round, bytes, out->mutable_instructions()));
    receivers.push_back(party);
  }
  return Audit(slot, round,
               {.kind = kAuditInstruction,
                .form = kAuditSealed,
                .to = receivers,
                .numbers = {{"groups", instruction.splits_size()}},
                .texts = {{"recoding", "local"}, {"after", "verdicts"}}});
}

namespace {
// Pages of the release report's steps: half a chunk of the job's message limit, as the local
// waves' proposal pages, so that a page and the reply around it fit one message.
uint64_t ReleaseReportPageBytes(uint64_t message_limit) {
  const uint64_t limit = message_limit > 0 ? message_limit : common::kDefaultMessageLimitBytes;
  return std::max<uint64_t>(1, common::ChunkBytesForLimit(limit) / 2);
}

// The first step of every page: steps in order, as many as fit `page_bytes` (their encoding in a
// repeated field), at least one per page. Deterministic in the steps.
std::vector<size_t> ReleaseReportPageStarts(
    const std::vector<fedanon::v1::SpecializationStep>& steps, uint64_t page_bytes) {
  std::vector<size_t> starts = {0};
  uint64_t used = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const uint64_t size = steps[i].ByteSizeLong() + 6;  // tag and length
    if (used > 0 && used + size > page_bytes) {
      starts.push_back(i);
      used = 0;
    }
    used += size;
  }
  return starts;
}

// Keeps the report's steps for ReleaseReportPage and, when they need more than one page, leaves
// only page 0's in the reply with the count and digest of all of them.
void PageReleaseReport(uint64_t message_limit,
                       std::optional<std::vector<fedanon::v1::SpecializationStep>>* steps,
                       fedanon::v1::VerticalReleased* released) {
  auto* report = released->mutable_report();
  steps->emplace(report->steps().begin(), report->steps().end());
  const std::vector<size_t> starts =
      ReleaseReportPageStarts(**steps, ReleaseReportPageBytes(message_limit));
  if (starts.size() < 2) return;
  fedanon::v1::Report all;
  *all.mutable_steps() = report->steps();
  released->set_report_pages(static_cast<uint32_t>(starts.size()));
  released->set_report_steps((*steps)->size());
  released->set_report_digest(crypto::Sha256(all.SerializeAsString()));
  report->mutable_steps()->DeleteSubrange(static_cast<int>(starts[1]),
                                          report->steps_size() - static_cast<int>(starts[1]));
}
}  // namespace

absl::Status PartyAgent::VerticalRelease(JobSlot& slot, const fedanon::v1::VerticalRelease& release,
                                         uint64_t round, fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  VerticalParty& vp = *job.vertical;
  // The columns go only to the recipient the admin signed (Prepare checked it against the
  // spec's release rules and this party's policy), whoever the leader names now.
  if (release.recipient() != job.recipient) {
    return absl::PermissionDeniedError(
        absl::StrCat("vertical release: the leader names '", release.recipient(),
                     "' as recipient, not the one the admin signed ('", job.recipient,
                     "'); nothing is released"));
  }
  LogUsage(job.job_id, "rounds done");
  // Issue 26: before anything leaves, this party checks the model on the final joined groups it
  // can see (group sizes at every party, confidences where it holds the sensitive values).
  if (absl::Status check = vp.CheckRelease(); !check.ok()) {
    spdlog::error("job={} round={} {}", job.job_id, round, std::string(check.message()));
    return check;
  }
  // The release order: a permutation of the canonical (ID) order from a seed the ring's first
  // party draws and seals for the other data parties, so that the recipient cannot map the rows
  // back to the ID order (the leader and a non-party recipient never see the seed).
  const bool first = job.ring.front() == options_.name;
  if (first) {
    if (release.has_order_seed()) {
      return absl::InvalidArgumentError("the ring's first party draws the release order itself");
    }
    if (job.order_seed.empty()) {
      ASSIGN_OR_RETURN(crypto::SecretBytes seed,
                       crypto::RandomBytes(crypto::kPermutationSeedBytes));
      job.order_seed = std::string(seed.AsStringView());
    }
    // Durable with the reply that carries it sealed: a restarted first party releases in the
    // same order as the others.
    if (!job.replaying) job.journal_extra = job.order_seed;
    for (const auto& party : job.ring) {
      if (party == options_.name) continue;
      ASSIGN_OR_RETURN(*out->mutable_released()->add_order_seeds(),
                       SealFor(slot, party, round, "release-order", job.order_seed));
    }
  } else {
    if (release.order_seed().sender() != job.ring.front()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the release order's seed must come from the ring's first party '",
                       job.ring.front(), "'"));
    }
    ASSIGN_OR_RETURN(job.order_seed,
                     OpenSealed(slot, release.order_seed(), round, "release-order"));
  }
  ASSIGN_OR_RETURN(const std::vector<size_t> order,
                   crypto::SeededPermutation(job.order_seed, vp.records()));
  uint64_t column_count = 0;
  {
    // The columns as bytes, straight from the codes (no message of strings per cell), freed
    // once sealed.
    ASSIGN_OR_RETURN(const std::string columns, vp.SerializedReleasedColumns(order));
    column_count = vp.released_column_count();
    RETURN_IF_ERROR(SealPayload(slot, job.recipient, round, common::ReleasePurpose(job.recipient),
                                columns, out->mutable_released()->mutable_columns(),
                                out->mutable_released()->mutable_columns_ref()));
  }
  vp.FillReport("", out->mutable_released()->mutable_report());
  PageReleaseReport(job.message_limit, &job.release_steps, out->mutable_released());
  LogUsage(job.job_id, "release sealed");
  // The columns sealed for the recipient, the order seed sealed for the other data parties, this
  // replica's report in plaintext for the leader.
  const auto& report = out->released().report();
  return Audit(
      slot, round,
      {.kind = kAuditRelease,
       .form = kAuditSealed,
       .to = {job.recipient},
       .numbers = {{"records", vp.records()},
                   {"columns", column_count},
                   {"report_groups", report.groups()},
                   {"report_smallest_group", report.smallest_group()}},
       .texts = {{"order_seed_for", absl::StrJoin(Receivers(out->released().order_seeds()), ",")},
                 {"report_to", job.leader}}});
}

absl::Status PartyAgent::VerticalReleaseReportPage(JobSlot& slot,
                                                   const fedanon::v1::ReleaseReportPage& ask,
                                                   uint64_t round,
                                                   fedanon::v1::VerticalStepResult* out) {
  JobState& job = *slot.job;
  if (!job.release_steps) {
    // Not released in this process (a state reloaded without the release replayed): the steps
    // are the replica's, derived again.
    if (!job.vertical) {
      return absl::FailedPreconditionError("the release report's pages come after the release");
    }
    fedanon::v1::Report report;
    job.vertical->FillReport("", &report);
    job.release_steps.emplace(report.steps().begin(), report.steps().end());
  }
  const std::vector<size_t> starts =
      ReleaseReportPageStarts(*job.release_steps, ReleaseReportPageBytes(job.message_limit));
  if (ask.page() == 0 || ask.page() >= starts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", ask.page(), " of this party's ",
                                                   starts.size(),
                                                   " release report pages does not exist (page 0 "
                                                   "travels with the release)"));
  }
  const size_t end =
      ask.page() + 1 < starts.size() ? starts[ask.page() + 1] : job.release_steps->size();
  auto* page = out->mutable_report_page();
  page->set_page(ask.page());
  page->set_pages(static_cast<uint32_t>(starts.size()));
  for (size_t i = starts[ask.page()]; i < end; ++i) *page->add_steps() = (*job.release_steps)[i];
  spdlog::debug("job={} round={} release report page {} of {}", job.job_id, round, ask.page(),
                starts.size());
  return absl::OkStatus();
}

absl::Status PartyAgent::VerticalAssemble(JobSlot& slot,
                                          const fedanon::v1::VerticalAssemble& assemble,
                                          uint64_t round, fedanon::v1::VerticalStepResult* out) {
  if (slot.job->recipient != options_.name) {
    return absl::PermissionDeniedError(
        absl::StrCat("vertical assemble: this party is not the recipient the admin signed ('",
                     slot.job->recipient, "'); it writes no joined table"));
  }
  const std::string purpose = common::ReleasePurpose(options_.name);
  // Each part read in place (no string per cell); the sealed copies are the leader's request.
  std::vector<common::VerticalColumnsView> parts;
  for (const auto& sealed : assemble.columns()) {
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenPayload(slot, sealed, fedanon::v1::ChunkRef(), round, purpose, nullptr));
    ASSIGN_OR_RETURN(parts.emplace_back(), common::VerticalColumnsView::Parse(std::move(bytes)));
  }
  for (const auto& ref : assemble.column_refs()) {
    ASSIGN_OR_RETURN(std::string bytes,
                     OpenPayload(slot, fedanon::v1::SealedPayload(), ref, round, purpose, nullptr));
    ASSIGN_OR_RETURN(parts.emplace_back(), common::VerticalColumnsView::Parse(std::move(bytes)));
  }
  std::vector<std::string> header(assemble.header().begin(), assemble.header().end());
  std::string csv;
  RETURN_IF_ERROR(common::JoinReleasedColumnsTo(parts, header, [&csv](std::string_view piece) {
    csv.append(piece);
    return absl::OkStatus();
  }));
  parts.clear();
  ASSIGN_OR_RETURN(const std::string path, WriteReleasedTable(slot.job->job_id, csv));
  const uint64_t records = slot.job->vertical->records();
  spdlog::info("job={} joined table ({} rows) written to {}", slot.job->job_id, records, path);
  LogUsage(slot.job->job_id, "joined table written");
  out->mutable_assembled()->set_rows_written(records);
  return Audit(slot, round,
               {.kind = kAuditReleasedTable,
                .form = kAuditPlaintext,
                .to = {slot.job->leader},
                .numbers = {{"rows", records}},
                .texts = {{"recipient", options_.name}, {"file", path}}});
}

}  // namespace fedanon::party
