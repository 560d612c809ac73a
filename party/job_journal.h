// A party's durable state of one horizontal job (docs/operations.md "Durable jobs"): the file
// `<state dir>/<job_id>.state` (the directory of runs.ledger), mode 0600, opened without
// following symlinks, holding what the party needs to go on with the job after its own restart —
// the authorized Prepare it accepted, then every request it answered with the exact reply that
// left (secure-sum hops with their state updates, the final check, the secure union) and, for the
// ring's first party, the mask of its final check. Records are appended and synced to disk
// before the reply leaves (a reply that was not recorded was never sent); a record cut short by
// a crash is ignored on reading. The file is deleted when the job ends (EndJob: done, failed or
// cancelled). The file also keeps, from its start, the fingerprint of a push-down job's snapshot
// (common/table_postgres/postgres_stats.h), so that a restarted party can tell that its table
// changed. Not thread-safe: the job's lock serializes its use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fedanon::party {

struct JournalRecord {
  std::string request;  // a serialized LeaderMessage
  std::string reply;    // the serialized PartyMessage that left (empty for the Prepare)
  std::string extra;    // kind-specific (the final check's mask of the ring's first party)
};

class JobJournal {
 public:
  // The job's state file in `dir` (InvalidArgument for a job id that cannot name a file).
  static absl::StatusOr<std::string> PathFor(const std::string& dir, const std::string& job_id);
  // Starts the job's file afresh (replacing an old one) with `prepare` as its first record and
  // `snapshot` (the push-down snapshot's fingerprint; empty without push-down) in its header.
  static absl::StatusOr<std::unique_ptr<JobJournal>> Start(const std::string& dir,
                                                           const std::string& job_id,
                                                           const JournalRecord& prepare,
                                                           std::string_view snapshot = "");
  // Opens an existing file to append to it.
  static absl::StatusOr<std::unique_ptr<JobJournal>> Reopen(const std::string& dir,
                                                            const std::string& job_id);
  // Every complete record, in order; NotFound when the job has no state file; DataLoss when it
  // does not parse, FailedPrecondition when it is not a private (0600) regular file. With
  // `snapshot`, also the snapshot fingerprint given to Start (empty for a version-1 file).
  static absl::StatusOr<std::vector<JournalRecord>> Read(const std::string& dir,
                                                         const std::string& job_id,
                                                         std::string* snapshot = nullptr);
  static bool Exists(const std::string& dir, const std::string& job_id);
  // The job's spill directory beside its state file (`<dir>/<job_id>.spill`): the chunk streams of
  // its secure union (party/chunk_file.h), part of its durable state.
  static absl::StatusOr<std::string> SpillDirFor(const std::string& dir, const std::string& job_id);
  // Deletes the job's file and its spill directory (OK when there is none).
  static absl::Status Remove(const std::string& dir, const std::string& job_id);

  ~JobJournal();
  JobJournal(const JobJournal&) = delete;
  JobJournal& operator=(const JobJournal&) = delete;

  // Appends one record and syncs it to disk.
  absl::Status Append(const JournalRecord& record);

 private:
  JobJournal(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace fedanon::party
