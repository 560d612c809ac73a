// A horizontal job's table at one party and the cut the leader's instructions made of it: the
// records (or a push-down connection that computes statistics in the database), the attribute
// hierarchies with their current cut, the TIPS, a local-recoding job's groups, and the chain of
// every state update applied. The three horizontal protocols (secure_sum_party.h,
// final_check_party.h, secure_union_party.h) answer from it; ApplyUpdates is where every
// instruction and split of the leader is checked against the signed job before it applies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tips.h"
#include "common/table/dataset.h"
#include "common/table_postgres/postgres_stats.h"
#include "fedanon/v1/federation.pb.h"
#include "party/local_party.h"

namespace fedanon::party {

struct HorizontalTables {
  // Applies the leader's state updates in sequence (those applied already are skipped, and must
  // be the same): each is an instruction naming a candidate of a node of the current cut, a split
  // of an interval not split before (on a boundary of its attribute's bins when the signed spec
  // bins numbers), or a local-recoding update of a local job; none once the cut is fixed.
  absl::Status ApplyUpdates(
      const fedanon::v1::JobSpec& spec,
      const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates);
  // ApplyUpdates' two kinds of global update: a candidate of a node of the current cut, and the
  // threshold of an interval not split before.
  absl::Status ApplyInstruction(const fedanon::v1::Instruction& in);
  absl::Status ApplySplit(const fedanon::v1::SplitDecision& sp,
                          const engine::NumericSplitConfig& numeric);
  // numeric_split: binned: the ranges of a labelled range count are its attribute's bins, asked
  // once per attribute (PermissionDenied for a second time: two sets of bins would difference
  // each other). Every later threshold of the attribute lies on one of their boundaries, so each
  // continuous interval (and each class count of one) is a union of bins, every one of which the
  // bin check showed to hold at least the bin bound of records.
  absl::Status RecordBins(const engine::StatsRequest& request,
                          const engine::NumericSplitConfig& numeric);
  // True when the table is loaded (records, or a push-down connection).
  bool loaded() const { return data != nullptr && (tips != nullptr || pushdown != nullptr); }

  std::unique_ptr<table::Dataset> data;  // stable address: hierarchies point into it
  std::vector<engine::AttributeHierarchy> hier;
  std::unique_ptr<engine::Tips> tips;
  // A push-down table (party.yaml `mode: push-down`): the statistics come from SQL and there are
  // no records in memory (tips stays null).
  std::unique_ptr<table_postgres::PostgresPushdown> pushdown;
  // `recoding: local` (party/local_party.h): this party's groups; null for global recoding.
  std::unique_ptr<LocalParty> local;
  uint64_t applied_updates = 0;
  std::string update_chain;  // wire::ChainStateUpdate over every applied update
  // Each applied update's digest, by sequence: a repeated update must be the same.
  std::vector<std::string> applied;
  // Continuous intervals (attribute, node) whose split the leader decided (once each).
  std::set<std::pair<uint32_t, int32_t>> split_decided;
  // Continuous attribute -> the rank boundaries of its bins (RecordBins).
  std::map<uint32_t, std::vector<int32_t>> bins;
  // Set when the final check started: the cut it checks is the one released, no update after.
  bool cut_fixed = false;
};

}  // namespace fedanon::party
