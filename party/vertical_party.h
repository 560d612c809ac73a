// One party's side of a vertical job (mohammed2011 §5, Alg. 1): its own columns of the joined
// table, a replica of the top-down specialization loop over the public partition, and the steps
// the leader drives — propose the best owned candidate (or Not-participate), build the
// instruction for a won candidate (the child of every record it refines), apply another
// party's instruction, accept or veto it when this party holds sensitive values (§8), commit,
// and release its columns of the joined table.
//
// Every replica holds the same TIPS: records are in the canonical order of the ID matching, and
// each specialization partitions them identically at every party. A party knows the values of
// its own attributes only; for the others it keeps a representative code per record that places
// the record under the right node of the public cut (so the TIPS can be refined locally), and it
// never proposes or scores their candidates. No gRPC types; raw values never leave this class
// except this party's released (generalized or released-as-is) columns for the recipient.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "common/table_postgres/postgres_source.h"
#include "fedanon/v1/federation.pb.h"
#include "fedanon/v1/job.pb.h"
#include "party/party_deviation.h"
#include "party/vertical_local.h"

namespace fedanon::party {

struct VerticalPartyOptions {
  std::string name;                  // this party (as named by the spec's `party:` keys)
  bool releases_class = false;       // this party writes the shared class column on release
  std::vector<std::string> parties;  // every data party of the job (for contributions)
  // How this party deviates (party/party_deviation.h); null: it does not.
  const PartyDeviation* deviation = nullptr;
};

// The Not-participate reason of the game-theoretic strategy (as counted in the job report).
inline constexpr char kAheadOfAnotherParty[] =
    "contributed more than another party by more than epsilon";

// The Not-participate reason of mohammed2011 §6's malicious party that never participates (the
// daemon's `--misbehave never-participate`).
inline constexpr char kNeverParticipates[] = "misbehaving: never participates";

// The named reason a party refuses to release its columns: its own check of the model
// on the final joined groups it can see failed.
inline constexpr char kRefusedRelease[] =
    "refused to release: the final joined groups break the privacy model";

// A round's proposal: the candidate, or Not-participate with the reason.
struct VerticalProposalView {
  std::optional<engine::TopDownSpecializer::Choice> choice;
  std::string reason;
};

class VerticalParty {
 public:
  // Loads this party's table: the spec's ID column, the class column and the attributes whose
  // `party` is this party. `schema` is the job's public schema (BuildPublicSchema). With
  // `postgres` the table is read from that PostgreSQL source into memory (csv_path only names it).
  static absl::StatusOr<std::unique_ptr<VerticalParty>> Load(
      const fedanon::v1::JobSpec& spec, const table::Dataset& schema, const std::string& csv_path,
      VerticalPartyOptions options, const table_postgres::PostgresSource* postgres = nullptr);
  ~VerticalParty();

  // The ID of every loaded record (file order; rows dropped for missing values excluded).
  const std::vector<std::string>& ids() const { return ids_; }
  // The table as read at Load (party/table_fingerprint.h).
  const std::string& table_fingerprint() const { return table_fingerprint_; }

  // Keeps the records common to every party in canonical order (`canonical[i]` is the position
  // of loaded record i, or -1), then builds the replica of the specialization loop. Fails when
  // even the most general joined table violates the model.
  absl::Status Start(const std::vector<int64_t>& canonical, uint64_t common_records);

  // This party's best valid candidate, or Not-participate: when it has none, or — under the
  // game-theoretic strategy (mohammed2011 Alg. 2) — when its contribution exceeds another
  // party's by more than epsilon.
  VerticalProposalView Propose() const;
  // Whether Start has built the replica of the specialization loop.
  bool started() const { return engine_ != nullptr; }
  const std::string& name() const { return options_.name; }
  // This party's own candidate a judge vetoed last (any round), if any.
  const std::optional<engine::TopDownSpecializer::Choice>& last_vetoed_own() const {
    return last_vetoed_;
  }
  // Contributions (mu) as this party has seen them: the scores of the committed specializations,
  // summed per owner.
  const std::map<std::string, double>& contributions() const { return mu_; }
  // The owner of the winner: the instruction for the others (serialized VerticalInstruction).
  absl::StatusOr<std::string> MakeInstruction(const fedanon::v1::VerticalCandidate& winner);
  // The class code of every record under `candidate`'s node, in the order of an instruction's
  // children (0 for every record of a job without a class column); the candidate must be one of
  // the current cut.
  absl::StatusOr<std::vector<int>> NodeRecordClasses(
      const fedanon::v1::VerticalCandidate& candidate) const;
  // Another party's instruction: places the refined records under their children (tentatively)
  // and returns whether this party accepts it (a holder of sensitive values re-checks it).
  absl::StatusOr<bool> Deliver(const std::string& instruction_bytes);
  // Applies (accept) or drops (veto: the candidate stays invalid) the round's winner.
  absl::Status Commit(const fedanon::v1::VerticalCandidate& winner, bool accept);

  // The check before any release, coded apart from the engine's incremental
  // bookkeeping: every record's generalized value of every QID attribute at the final cut (the
  // replica's TIPS: known to every party), grouped per constraint of the model; every group must
  // hold at least k records, and for the sensitive values this party holds, none may exceed its
  // confidence bound. FailedPrecondition starting with kRefusedRelease and naming the constraint.
  absl::Status CheckRelease() const;

  // This party's released columns (a serialized VerticalColumns) in the release order: row j is
  // canonical record `order[j]` (a permutation of the common records, the same at every party,
  // so the recipient can still join the columns). Written straight from the codes and the group
  // labels: no VerticalColumns of strings per cell in memory.
  absl::StatusOr<std::string> SerializedReleasedColumns(const std::vector<size_t>& order) const;
  // What the replicas compare before the release (common/wire/release_digests.h): the digest of
  // every common record's final group (its QID labels) in the canonical order, and of the
  // groups with their sizes, which the recipient recomputes from the joined table.
  struct GroupDigests {
    std::string partition;
    std::string groups;
  };
  GroupDigests ReleaseGroupDigests() const;
  // The replica's view of the result (steps, cut, smallest group, confidence if it can tell).
  void FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const;

  // `recoding: local` (docs/vertical.md "Local recoding"): the replica of the public groups,
  // built by Start; null for global recoding.
  VerticalLocalReplica* local() const { return local_.get(); }

  bool owns(int attr) const { return owned_[attr]; }
  bool holds_sensitive() const { return holds_sensitive_; }
  // The data parties that hold sensitive values (job order). They judge the other parties'
  // candidates (§8): the owner of a winner sends its children to them before the verdict, and to
  // every other party only once the judges accepted.
  const std::vector<std::string>& judges() const { return judges_; }
  uint64_t records() const { return data_ ? data_->num_records : 0; }
  // How many winners this replica has committed or dropped (Commit calls that succeeded): the
  // state a signed proposal or verdict of a round is bound to, so that one signed before a
  // decision does not verify after it (party/vertical_statement.h).
  uint64_t decisions() const { return decisions_; }
  // How many columns this party releases (its QIDs and its released values).
  uint64_t released_column_count() const {
    return static_cast<uint64_t>(std::count(owned_.begin(), owned_.end(), true)) +
           value_names_.size();
  }

 private:
  class Source;
  VerticalParty() = default;
  // Load's steps: the IDs and the raw released values of this party's non-QID columns, per kept
  // row of `own` (this party's columns, encoded); then the full joined schema with this party's
  // codes where it has the column.
  absl::Status ReadIdsAndValues(const fedanon::v1::JobSpec& party_spec, const table::Dataset& own);
  absl::Status BuildJoinedData(const table::Dataset& schema, const std::string& csv_path,
                               table::Dataset own);
  // CheckRelease's part for an ldiversity / tcloseness constraint (index `constraint`), at the
  // holder of the sensitive attribute.
  absl::Status CheckReleaseDistribution(size_t constraint) const;
  bool IsOwner(const fedanon::v1::VerticalCandidate& c) const;
  absl::Status CheckCandidate(const fedanon::v1::VerticalCandidate& c) const;
  // The participation game (mohammed2011 §6): whether `party` owns a QID attribute (only those
  // are in the game), the sum of every party's contribution, and the first other party in the
  // game this one is ahead of by more than epsilon times that sum ("" when none).
  bool InGame(const std::string& party) const;
  double TotalContribution() const;
  std::string AheadOf() const;
  // Partitions of the current TIPS that hold (attr, node), in creation order.
  std::vector<int32_t> PartitionsOn(int attr, engine::NodeIndex node) const;

  VerticalPartyOptions options_;
  fedanon::v1::JobSpec spec_;
  std::unique_ptr<table::Dataset> data_;  // full public schema; own codes, representatives else
  std::vector<bool> owned_;               // per QID attribute
  bool holds_sensitive_ = false;
  uint64_t held_bits_ = 0;  // bits of data_->tracked whose values this party holds
  // This party holds the sensitive attribute of an ldiversity / tcloseness model.
  bool holds_distribution_ = false;
  std::vector<std::string> judges_;
  std::vector<std::string> ids_;
  std::string table_fingerprint_;
  // Released non-QID columns this party writes: name and raw values per record.
  std::vector<std::string> value_names_;
  std::vector<std::vector<std::string>> value_cells_;  // [column][record]

  std::vector<engine::AttributeHierarchy> hier_;
  std::unique_ptr<engine::Tips> tips_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<engine::PrivacyModel> model_;
  std::unique_ptr<engine::TopDownSpecializer> engine_;
  // The delivered instruction of the current round (for a veto): records and their old codes.
  std::vector<std::pair<uint32_t, int32_t>> staged_;
  int staged_attr_ = -1;
  uint64_t decisions_ = 0;  // see decisions()
  // See last_vetoed_own().
  std::optional<engine::TopDownSpecializer::Choice> last_vetoed_;
  double staged_owner_score_ = 0;      // the owner's score of the delivered candidate
  std::vector<std::string> owner_of_;  // per QID attribute: its party
  std::map<std::string, double> mu_;
  std::unique_ptr<VerticalLocalReplica> local_;
};

}  // namespace fedanon::party
