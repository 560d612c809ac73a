// A party's side of a horizontal federated job with `recoding: local` (docs/federation.md, "Local
// recoding"): its own records' groups (an InProcessLocalSource over its records), the keys of the
// groups as it derived them from the instructions it applied, and the checks that keep a deviating
// leader to the protocol (docs/threat-model.md):
//  * the bins (StateUpdate.local_setup) are announced once and are unions of whole public cells;
//  * a split (StateUpdate.local_split) names a live group with the key this party holds for it, is
//    a candidate of that key (LocalChildValues: the node's children, a threshold inside the
//    interval, one disclosed value) and gives the children fresh ids, in order;
//  * statistics (StatsRequest.local) are answered only for live groups with matching keys, and
//    labelled continuous counts only per within-group range of whole global bins covering the
//    group's interval (never per public cell or per rank under binned search), asked once per
//    group and attribute; each such range is a guarded range of the collect (GuardedRanges), whose
//    mask the ring's first party releases only after the bin check showed every range empty or
//    holding the within-group bound (party/secure_sum_party.h);
//  * a threshold split of a binned continuous attribute lies on a boundary of the group's
//    within-group bins of that attribute, so each child is a union of checked bins;
//  * released counts (LocalStatsRequest.released_groups, the integration by a secure sum) only
//    over a declared domain and for exactly this party's live groups: every one named once, with
//    its key, and no other (the secure sum adds the final check's gate, secure_sum_party.cc).
// One request, one answer and the ordering of updates are the secure sum's and the table's
// (SecureSumParty::Step, HorizontalTables::ApplyUpdates); this class only answers and applies.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/local_recoding.h"
#include "common/engine/numeric_split.h"
#include "common/table/dataset.h"
#include "fedanon/v1/federation.pb.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::party {

class LocalParty {
 public:
  // `data`: this party's records (not owned; must outlive this).
  LocalParty(const table::Dataset* data, const fedanon::v1::JobSpec& spec);

  absl::Status ApplySetup(const fedanon::v1::LocalSetup& setup);
  absl::Status ApplySplit(const fedanon::v1::LocalSplitInstruction& split);
  // This party's words for `request` (the layout the leader's LocalRecoder expects).
  absl::StatusOr<std::vector<uint64_t>> Answer(const fedanon::v1::LocalStatsRequest& request);
  // Records the within-group bins a request of labelled ranges asks (`request.ranges`), once per
  // group and attribute: PermissionDenied for a second time (two sets of bins of one group would
  // difference each other). Called for every collect, also for an older one replayed after a
  // restart, before Answer; nothing for a request without ranges.
  absl::Status RecordRanges(const fedanon::v1::LocalStatsRequest& request);
  // The guarded ranges of `request`'s answer (engine::GuardedRange): the record count of each
  // within-group bin of its labelled ranges, in answer order; none for other requests.
  std::vector<engine::GuardedRange> GuardedRanges(
      const fedanon::v1::LocalStatsRequest& request) const;
  // This party's released counts (request.released_groups / released_combinations): refused by
  // name unless the groups named are exactly its live groups (ids and keys; none missing, none
  // extra, none repeated) and the combinations are the job's declared ones; per group in the
  // request's order, its records per value combination (InProcessLocalSource::ReleasedCounts).
  absl::StatusOr<std::vector<uint64_t>> ReleasedCounts(
      const fedanon::v1::LocalStatsRequest& request) const;
  // This party's released rows: each record with its live group's values.
  absl::Status ForEachReleasedRow(
      const std::vector<int>& columns,
      const std::function<void(const std::vector<std::string_view>&)>& emit) const;

  // This party's words of the final check (LocalFinalCheckLayout over its live groups, in id
  // order): per group [count, tracked_1..m].
  std::vector<uint64_t> FinalCheckCounts() const;

  bool set_up() const { return fine_ != nullptr; }
  size_t live_groups() const;

 private:
  // numeric_split: binned: a threshold split of continuous attribute `a` of `group` lies on an
  // inner boundary of the group's within-group bins of `a` (RecordRanges), asked before it.
  absl::Status CheckThresholdOnWithinGroupBins(int32_t group, int a,
                                               const std::vector<int>& child_of_fine) const;
  // The key of a live group named by `ref`, checked against this party's record of it.
  absl::StatusOr<engine::LocalGroupRef> LiveGroup(const fedanon::v1::LocalGroupRef& ref) const;

  const table::Dataset* data_;
  std::string suppression_token_;
  bool binned_;
  uint32_t cells_;
  std::unique_ptr<engine::LocalFineMap> fine_;
  engine::InProcessLocalSource source_;
  std::vector<std::vector<engine::LocalValue>> keys_;  // [group id]
  std::vector<bool> live_;                             // [group id]
  // (group id, attribute) -> the fine-child bounds of the within-group bins asked (RecordRanges).
  std::map<std::pair<int32_t, int>, std::vector<int32_t>> range_bounds_;
};

}  // namespace fedanon::party
