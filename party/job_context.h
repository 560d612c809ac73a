// What every protocol of one job reads at a party: the facts the signed Prepare fixed (ids, spec,
// ring, leader, recipient, the participants' sealing keys and this party's own), the chunking
// negotiated, and the services the protocol classes share — sealing for and opening from another
// participant, the audit file, and marking an answer durable. Internal to the party library: the
// protocol classes (secure_sum_party.h, id_matching_party.h, ...) hold a reference to it; the
// agent (party_agent.h) owns it as part of the job's state (job_state.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "party/audit_log.h"
#include "party/party_agent_options.h"
#include "party/seal_key_ring.h"

namespace fedanon::party {

// The reason given for a step of a job this party does not hold.
inline constexpr char kNoJobState[] =
    "no prepared job with this id (this party holds no state of the job: it was not prepared "
    "here, or the party restarted without its durable state, so the job cannot resume)";

// Where a released table's pieces go as they are produced (the header line first).
using TablePieceSink = std::function<absl::Status(std::string_view piece)>;
// Writes a released table where this party keeps them (a CSV file or its PostgreSQL sink) as
// `produce` hands it on, piece by piece (never the whole table in memory); returns where it went.
// Nothing is kept unless `produce` and the write both succeed.
using ReleasedTableWriter = std::function<absl::StatusOr<std::string>(
    const std::string& job_id, const std::function<absl::Status(const TablePieceSink&)>& produce)>;

struct JobContext {
  JobContext(const PartyAgentOptions& options, const AuditLog& audit)
      : options_(&options), audit_(&audit) {}
  JobContext(const JobContext&) = delete;
  JobContext& operator=(const JobContext&) = delete;

  const PartyAgentOptions& options() const { return *options_; }
  const std::string& self() const { return options_->name; }
  // This party's place in the ring agreed at Prepare (ring.size() when it is not in it).
  size_t RingPosition() const;
  bool InRing(const std::string& name) const;

  // `bytes` sealed by this party for `receiver` (a participant) under this job's context.
  absl::StatusOr<fedanon::v1::SealedPayload> SealFor(const std::string& receiver, uint64_t round,
                                                     const std::string& purpose,
                                                     std::string_view bytes) const;
  // A payload a data party sealed for this party. `observe`: tell options().Observer()
  // (tests); false for the chunks of a payload, which is told once, whole.
  absl::StatusOr<std::string> OpenSealed(const fedanon::v1::SealedPayload& payload, uint64_t round,
                                         const std::string& purpose, bool observe = true) const;
  // The released table's header the signed job fixes (every attribute but the record id, in spec
  // order); a header a leader sends for a release must be exactly this one.
  absl::Status CheckReleasedHeader(const google::protobuf::RepeatedPtrField<std::string>& header,
                                   const std::string& what) const;
  // Tells options().Observer() (tests) what this party opened from `sender`.
  void Observe(const std::string& sender, const std::string& purpose,
               const std::string& plaintext) const;
  // One line in the job's audit file for a message about to leave; a message that cannot be
  // recorded is not sent (the request fails). Nothing is recorded again while replaying.
  absl::Status Audit(uint64_t round, AuditEntry entry) const;

  // Fixed at Prepare.
  std::string job_id;
  fedanon::v1::JobSpec spec;
  std::string run_id;  // from the admin's authorization (bound into every seal and statement)
  // The data parties in the ring order agreed at Prepare, the leader's name and the recipient.
  std::vector<std::string> ring;
  std::string leader;
  std::string recipient;
  std::map<std::string, std::unique_ptr<crypto::SealPublicKey>> seal_keys;  // by party name
  // A vertical job's data parties' statement-signing keys, by party name (verified at Prepare);
  // empty in a horizontal job, whose parties make no statements.
  std::map<std::string, std::unique_ptr<crypto::SealPublicKey>> statement_keys;
  // This party's own sealing key pair for the job: the one whose certificate the Prepare names
  // for it, held until the job ends (party/seal_key_ring.h), whatever is rotated meanwhile.
  std::shared_ptr<const SealKeyRing::Entry> own_seal;
  // The table this job answers from, as read at Prepare (party/table_fingerprint.h; a push-down
  // table: its snapshot's fingerprint).
  std::string table_fingerprint;
  // Chunked per-record payloads (common/wire/payload_chunks.h). 0: payloads travel whole.
  uint64_t chunk_bytes = 0;
  uint64_t message_limit = 0;  // the negotiated limit the chunks are sized for

  // Durable answers (party/job_journal.h): a protocol that computed a new answer sets
  // `fresh_answer` (and `journal_extra`: what a restarted party needs to answer the same again,
  // such as a mask seed); the agent records the request and the reply before the reply leaves.
  // While `replaying` (reloading after a restart) nothing is audited or recorded again.
  bool fresh_answer = false;
  std::string journal_extra;
  bool replaying = false;

 private:
  const PartyAgentOptions* options_;
  const AuditLog* audit_;
};

}  // namespace fedanon::party
