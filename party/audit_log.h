// The party's own record of what it sent: per job, an
// append-only JSON-lines file `<job_id>.audit.jsonl` (0600) in the party's state directory, one
// line per reply the party sent to the network and in which form — each secure-sum contribution
// with this party's own counts in plaintext and who the masked, sealed vector went to, union rows,
// ID lists, vertical instructions, verdicts, proposals, released rows, the job's start and end.
// It holds this party's data only, never another party's (it is for this party's privacy officer,
// who can audit the party without trusting the leader's view log). `fedanon party audit JOB_ID`
// prints it (cli/party_audit.h). Thread-safe (each Append opens, writes one line and closes).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::party {

// One line of the audit file. Written as
//   {"time":"2026-11-25T10:00:00.123Z","job":"job-…","round":3,"kind":"secure-sum",
//    "form":"masked+sealed","to":["hospital-b"],<numbers…>,<texts…>,"counts":[…]}
// with the numbers and texts in the order given and "counts" only when `has_counts`.
struct AuditEntry {
  uint64_t round = 0;
  std::string kind = {};  // secure-sum, union-rows, id-list, instruction, verdict, job-start, ...
  // How it left: "sealed" (only `to` can open it), "masked+sealed" (a secure-sum hop: sealed for
  // `to`, the counts hidden under masks only the leader knows), "plaintext" (`to` reads it).
  std::string form = {};
  std::vector<std::string> to = {};                             // who can read it
  std::vector<std::pair<std::string, uint64_t>> numbers = {};   // sizes: rows, records, words, ...
  std::vector<std::pair<std::string, std::string>> texts = {};  // names, digests, reasons
  bool has_counts = false;
  std::vector<uint64_t> counts = {};  // this party's own counts in the message, in plaintext
};

// Kinds written by the party's protocol classes (party/job_state.h) and its agent
// (docs/operations.md, "The party's audit file").
inline constexpr char kAuditJobStart[] = "job-start";
inline constexpr char kAuditJobEnd[] = "job-end";
inline constexpr char kAuditError[] = "error";
inline constexpr char kAuditSecureSum[] = "secure-sum";
inline constexpr char kAuditSumMask[] = "secure-sum-mask";
inline constexpr char kAuditBinCheck[] = "bin-check";
inline constexpr char kAuditUnionRows[] = "union-rows";
inline constexpr char kAuditReleasedTable[] = "released-table";
inline constexpr char kAuditIdList[] = "id-list";
inline constexpr char kAuditIdCommon[] = "id-common";
inline constexpr char kAuditProposal[] = "proposal";
inline constexpr char kAuditInstruction[] = "instruction";
inline constexpr char kAuditVerdict[] = "verdict";
inline constexpr char kAuditCommit[] = "commit";
inline constexpr char kAuditWinnerComparison[] = "winner-comparison";
inline constexpr char kAuditRelease[] = "release";
inline constexpr char kAuditFinalCheck[] = "final-check";
// Chunked payloads: one chunk of a payload recorded at the step that produced it,
// and the receipt of a chunk sealed for this party.
inline constexpr char kAuditPayloadChunk[] = "payload-chunk";
inline constexpr char kAuditChunkReceipt[] = "chunk-receipt";

inline constexpr char kAuditPlaintext[] = "plaintext";
inline constexpr char kAuditSealed[] = "sealed";
inline constexpr char kAuditMaskedSealed[] = "masked+sealed";

// The audit file of `job_id` in `dir` ("<dir>/<job_id>.audit.jsonl"); InvalidArgument for a job
// id that is not one the leader issues (base::ValidateJobId).
absl::StatusOr<std::string> AuditFilePath(const std::string& dir, const std::string& job_id);

// One JSON line (with '\n') for `entry` of `job_id` at `unix_nanos`; strings escaped with
// base::AppendJsonString.
std::string FormatAuditLine(const std::string& job_id, int64_t unix_nanos, const AuditEntry& entry);

class AuditLog {
 public:
  // `dir` empty: nothing is recorded (tests without a state directory).
  explicit AuditLog(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // Appends one line to the job's file, creating it (and `dir`) when missing: opened with
  // O_APPEND | O_NOFOLLOW (a symbolic link is refused), mode 0600 (set with fchmod on creation;
  // an existing file with other permissions or not a regular file is refused), the line written
  // whole and fdatasync'ed before it returns, so that the record exists before the message
  // leaves. No-op when not enabled.
  absl::Status Append(const std::string& job_id, const AuditEntry& entry) const;
  // Whether the job's file exists (a job whose start was recorded).
  bool Exists(const std::string& job_id) const;

 private:
  const std::string dir_;
};

// The job's audit file as written (symbolic links refused). NotFound when there is none.
absl::StatusOr<std::string> ReadAuditFile(const std::string& dir, const std::string& job_id);

}  // namespace fedanon::party
