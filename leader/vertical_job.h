// The leader's side of a vertical job (mohammed2011 §5, Alg. 1 for N parties), after every party
// has prepared: private ID matching (each party's encrypted ID list travels the ring, sealed hop
// to hop, then every fully encrypted list goes to every party), then rounds — every party
// proposes its best owned candidate or Not-participate, the leader announces the winner (best
// score, public tie-break), the owner's sealed instruction is relayed to the judges (the other
// holders of sensitive values), who may veto it (§8); on acceptance the owner, shown the judges'
// sealed verdicts, seals it for the remaining parties, who get it with the commit — and finally
// the release of the joined table to the recipient, in a permutation of the canonical order the
// data parties agree in secret. The leader sees proposals (scores), verdict bits and sealed bytes.
// Durable: with a recorder, every reply is recorded before it is used, and a restarted leader
// replays the job from the recorded replies, then goes on over the network (VerticalJobOptions).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/party_channel.h"
#include "fedanon/v1/job.pb.h"
#include "leader/job_store.h"
#include "leader/leader_observer.h"
#include "leader/view_log.h"

namespace fedanon::leader {

// The leader's refusals of a party's release report in pages (VerticalReleased): a description
// out of bounds (more pages than steps, or too many steps), a page that is not the one asked for,
// and pages that do not add up to the declared count and digest.
inline constexpr char kReportPagesAbsurd[] = "release report pages out of bounds";
inline constexpr char kReportPageWrong[] = "release report page not the one asked for";
inline constexpr char kReportPagesMismatch[] = "release report pages do not match their digest";
// The leader's refusal of a release report with more or fewer steps than the rounds committed,
// before any page beyond the first is fetched.
inline constexpr char kReportStepsNotCommitted[] = "release report steps other than committed";
// The leader's refusal of a winning proposal whose node was specialized, or whose candidate was
// vetoed, in an earlier round: no honest replica proposes one again, and repeated vetoes would
// otherwise keep a job's rounds going without end.
inline constexpr char kProposalDecidedAlready[] = "a proposal decided in an earlier round";
// The leader's refusal of release reports whose steps, cut or group sizes differ between replicas
// (every replica computes them alike).
inline constexpr char kReportsDisagree[] = "the replicas' release reports disagree";
// The leader's refusal of a release whose replicas report different final partitions, groups or
// release-order seeds (common/wire/release_digests.h): an owner gave some
// party other children than the rest, or the ring's first party gave parties different seeds.
inline constexpr char kReleasesDisagree[] = "the replicas' releases disagree";
// The leader's refusal of a winner's owner that sends more instructions than there are other
// parties (before any is fetched).
inline constexpr char kInstructionsAboveParties[] = "more instructions than other parties";
// At most this many steps in a release report (local recoding: one per group split).
inline constexpr uint64_t kMaxReportSteps = uint64_t{1} << 26;
// The leader's refusal of an ID list declared in more batches than the signed job's
// max_records_per_party needs.
inline constexpr char kIdBatchesAboveLimit[] = "ID batches above the job's limit";

struct VerticalJobOptions {
  std::string job_id;
  std::string run_id;             // the admin's run, bound into every box the leader opens
  std::vector<std::string> ring;  // data parties in ring order
  std::string recipient;          // a party, or the leader's own name
  std::string leader_name;
  std::string leader_seal_key_pem;  // to open the columns when the leader is the recipient
  std::string ca_pem;               // verifies the parties' sealing certificates (their senders)
  std::vector<std::string> header;  // released columns in spec order
  std::map<std::string, std::string> attribute_party;  // QID attribute -> the party holding it
  // `recoding: local` (docs/vertical.md "Local recoding"): waves of per-group proposals and
  // splits instead of Algorithm 1's rounds.
  bool local_recoding = false;
  // With a confidence bound (spec::VerticalLocalJudges): the judges of every wave's winning
  // splits (sorted by name); empty: no verdicts.
  std::vector<std::string> local_judges;
  absl::Duration timeout = absl::Seconds(60);
  // The ID-matching calls: elliptic-curve work proportional to a party's records (about 150 us
  // of CPU per id and hop), so they get far more than a round (see docs/federation.md).
  absl::Duration id_matching_timeout = absl::Minutes(20);
  // Match ids in batches of this many (docs/crypto.md, "ID matching"), at most what fits the
  // message limit.
  uint32_t id_batch_ids = 65536;
  // The signed job's max_records_per_party (spec::MaxRecordsPerParty): no party's ID list may
  // declare more batches than this many ids need.
  uint64_t max_records_per_party = spec::kDefaultMaxRecordsPerParty;
  std::function<absl::Status()> check_cancelled;
  // Called after every committed specialization with the round, the owner and the QID index.
  std::function<void(uint32_t, const std::string&, uint32_t)> on_step;
  // Local recoding: called after every committed wave with the wave and the groups it split.
  std::function<void(uint32_t, size_t)> on_wave;
  // QID attribute names by the engine's index (names the attribute of a proposal).
  std::vector<std::string> qid_names;
  // Everything the leader reads from the parties' replies is appended here (not owned; null:
  // nothing is logged).
  ViewLog* view_log = nullptr;
  // Told the ID-matching and round latencies (not owned; null: nobody).
  LeaderObserver* observer = nullptr;

  // Durable jobs (docs/operations.md): every reply a party sends the leader in this job (steps,
  // chunks fetched or acknowledged) is handed to `record_reply` (a CallRecorder's
  // CompleteCallRecorder) before the leader uses it, under a key that names the party, the call's
  // number among the calls to that party and the digest of the request (`index` numbers the
  // records 0, 1, ...). A leader restarted mid-job passes them back in `recorded` (the recorder's
  // Load, index order, the key in `digest`): the job runs again from its start, each call that
  // finds its reply recorded takes it without the network (its request must be the recorded one,
  // else the job fails: the replay would ask the parties something new), and the first call
  // without one is sent — the same bytes as before the restart, which the party answers with its
  // stored reply if it had answered. Null / empty: nothing recorded, nothing replayed.
  std::function<absl::Status(uint64_t index, const std::string& key, const std::string& reply)>
      record_reply;
  std::vector<RecordedCall> recorded;
  // The lines of the job's view log written before the restart: the replay writes each again
  // only if it differs (the run before the restart wrote a prefix of what the replay logs).
  std::vector<std::string> logged_before;
  // When the leader is the recipient: where the joined table goes, written piece by piece by the
  // producer it is given (the job store's result file), so that the leader never holds the whole
  // table. Null: the table is returned in VerticalJobResult::csv (tests, small jobs).
  std::function<absl::Status(
      const std::function<absl::Status(const std::function<absl::Status(std::string_view)>&)>&)>
      store_result;
};

struct VerticalJobResult {
  fedanon::v1::Report report;
  std::string csv;  // the joined table when the leader is the recipient (without store_result)
  uint64_t common_records = 0;
  uint32_t rounds = 0;
  uint32_t vetoes = 0;
  double id_matching_seconds = 0;
  double rounds_seconds = 0;
  double release_seconds = 0;
  uint64_t replayed_calls = 0;  // replies taken from `recorded` (a resumed job)
};

absl::StatusOr<VerticalJobResult> RunVerticalJob(wire::PartyChannel* channel,
                                                 const VerticalJobOptions& options);

}  // namespace fedanon::leader
