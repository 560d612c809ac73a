// The leader's view log (docs/threat-model.md): every statistic the leader decodes
// during a job, one JSON object per line in <leader data dir>/<job id>.view.jsonl (mode 0600,
// appended one whole line per write, never deleted), so that an institution's privacy officer can
// read exactly what the coordinator learned. Each object has at least `round`, `kind`,
// `attribute` (empty when none applies), `labelled` (the counts are split by class or sensitive
// value) and `counts` (the integers); some kinds add `node`, `bounds`, `party`, `score` or
// `detail`. The kinds are listed in docs/threat-model.md. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"

namespace fedanon::leader {

// Kinds of decoded parts (docs/threat-model.md, "The leader's view log").
inline constexpr char kViewNumericSplitCells[] = "numeric_split_cells";  // records per cell
inline constexpr char kViewNumericSplit[] = "numeric_split";             // class counts per bin
inline constexpr char kViewRankHistogram[] = "numeric_rank_histogram";   // exact search
inline constexpr char kViewCandidateCounts[] = "candidate_counts";
inline constexpr char kViewGroupCounts[] = "group_counts";
inline constexpr char kViewReleasedCounts[] = "released_counts";
inline constexpr char kViewReleasedRows[] = "released_rows";
inline constexpr char kViewIdIntersection[] = "id_intersection";
// ID matching: a list's digests (16-byte values of its fully encrypted ids, pseudorandom to the
// leader), `counts` = [number of digests]; the leader intersects them.
inline constexpr char kViewIdDigests[] = "id_digests";
inline constexpr char kViewVerticalScore[] = "vertical_score";  // the round's winner only
inline constexpr char kViewVerticalParticipate[] = "vertical_participate";
inline constexpr char kViewVerticalDecline[] = "vertical_decline";
inline constexpr char kViewVerticalVerdict[] = "vertical_verdict";
inline constexpr char kViewVerticalReport[] = "vertical_report";
// ldiversity / tcloseness: a group's counts of each declared value of the sensitive attribute,
// per child of one candidate (`attribute`, `detail` = the candidate) or for the whole group
// (`attribute` empty); `node` = the group's labels.
inline constexpr char kViewSensitiveHistogram[] = "sensitive_histogram";
// Local recoding (leader/local_group_source.h), per group ("group N"): its own words; per
// taxonomy / suppression attribute, the words per child / value; binned continuous attributes,
// the unlabelled record count per global bin inside the group; then the labelled words per
// within-group bin (each >= K records); exact search: the words per rank.
inline constexpr char kViewLocalGroup[] = "local_group";
inline constexpr char kViewLocalCandidateCounts[] = "local_candidate_counts";
inline constexpr char kViewLocalBinCounts[] = "local_bin_counts";
inline constexpr char kViewLocalNumericSplit[] = "local_numeric_split";
inline constexpr char kViewLocalRankHistogram[] = "local_rank_histogram";

struct ViewEntry {
  uint32_t round = 0;
  std::string kind;
  std::string attribute;  // empty: none applies
  bool labelled = false;
  std::vector<uint64_t> counts;
  std::string node;             // the node or group the counts describe (labels), if any
  std::vector<int64_t> bounds;  // rank bounds of numeric ranges, if any
  std::string party;            // the party that sent the value (vertical), if any
  std::optional<double> score;  // a vertical proposal's score
  std::string detail;           // free text (a decline's reason, a report as JSON)
};

// One line of JSON (no newline) with the fields above; optional ones only when set.
std::string ViewEntryToJson(const ViewEntry& entry);

class ViewLog {
 public:
  // <data_dir>/<job_id>.view.jsonl; InvalidArgument for a job id that is not the leader's form.
  static absl::StatusOr<std::string> PathFor(const std::string& data_dir,
                                             const std::string& job_id);
  // Opens (creating, mode 0600, or appending to) the job's view log.
  static absl::StatusOr<std::unique_ptr<ViewLog>> Open(const std::string& data_dir,
                                                       const std::string& job_id);
  // The whole log of a job ("" when the leader decoded nothing for it yet).
  static absl::StatusOr<std::string> Read(const std::string& data_dir, const std::string& job_id);
  // The same handed to `sink` in pieces of at most `piece_bytes` (nothing when the log is empty);
  // an error of `sink` stops it.
  static absl::Status Stream(const std::string& data_dir, const std::string& job_id,
                             size_t piece_bytes,
                             const std::function<absl::Status(std::string_view)>& sink);
  ~ViewLog();
  ViewLog(const ViewLog&) = delete;
  ViewLog& operator=(const ViewLog&) = delete;

  // Appends one line with a single write(2) on an O_APPEND descriptor.
  absl::Status Append(const ViewEntry& entry) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Append(uint32_t round, std::string kind, std::string attribute, bool labelled,
                      std::vector<uint64_t> counts) ABSL_LOCKS_EXCLUDED(mu_);
  // Appends the parts of one decoded secure sum (the answer to `request`, laid out as in
  // common/engine/count_source.h): one entry per range, histogram, node, group and released
  // group. `hier` is the leader's replica at the time of the request.
  absl::Status AppendStats(uint32_t round, const std::vector<engine::AttributeHierarchy>& hier,
                           int num_classes, size_t num_tracked, const engine::StatsRequest& request,
                           const std::vector<uint64_t>& sum) ABSL_LOCKS_EXCLUDED(mu_);
  // A job resumed after a leader restart replays what it decoded before (a horizontal job's
  // recorded secure sums): the lines already in the file are what it logs again first. From now
  // on an entry equal to the next of those lines is not written again; the first entry that
  // differs (the job going on past the restart) ends the replay, and it and every later entry are
  // appended. So the log holds each decoded part once, as after an uninterrupted run.
  absl::Status ExpectReplayOfItsLines() ABSL_LOCKS_EXCLUDED(mu_);
  // fsyncs the file (the job's end).
  absl::Status Sync() ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }

 private:
  ViewLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> replayed_ ABSL_GUARDED_BY(mu_);  // lines logged before a restart
  size_t replay_next_ ABSL_GUARDED_BY(mu_) = 0;             // the next one a replay must equal
};

}  // namespace fedanon::leader
