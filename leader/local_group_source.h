// The horizontal federation's LocalGroupSource (local recoding, `recoding: local`; docs/engine.md
// "Local recoding", docs/federation.md): the leader runs the centralized LocalRecoder on the
// public schema and every statistic it needs is a ring secure sum over the data parties, each
// answering with its own InProcessLocalSource words (party/local_party.h), so the sum equals the
// centralized words on the union. RangeCounts is the ordinary public-cell request; the fine map's
// bins are announced once (StateUpdate.local_setup); GroupStatsBatch / RangeStatsBatch are
// StatsRequest.local requests (at most max_groups groups or queries per secure sum, so a request
// stays far under the message limit; long vectors are chunked by the secure sum itself);
// SplitGroups becomes one StateUpdate.local_split per group, riding along with the next sum.
// Every decoded vector is appended to the view log split into its parts (kinds kViewLocal*).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/engine/local_recoding.h"
#include "common/table/dataset.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/secure_sum_source.h"
#include "leader/view_log.h"

namespace fedanon::leader {

class FederatedLocalSource : public engine::LocalGroupSource {
 public:
  // Not owned: `sums` (the job's secure sums), `schema` (the public schema), `log` (may be null).
  FederatedLocalSource(SecureSumCountSource* sums, const table::Dataset* schema, ViewLog* log,
                       std::function<uint32_t()> round, size_t max_groups = 2048);

  absl::StatusOr<std::vector<uint64_t>> RangeCounts(int attr,
                                                    const std::vector<int32_t>& bounds) override;
  absl::Status UseFineMap(const engine::LocalFineMap* fine) override;
  absl::StatusOr<std::vector<std::vector<uint64_t>>> GroupStatsBatch(
      const std::vector<engine::LocalGroupRef>& groups) override;
  absl::StatusOr<std::vector<std::vector<uint64_t>>> RangeStatsBatch(
      const std::vector<engine::LocalRangeQuery>& queries) override;
  absl::Status SplitGroups(const std::vector<engine::LocalSplit>& splits) override;

 private:
  absl::Status LogGroup(const engine::LocalGroupRef& ref, const std::vector<uint64_t>& words);

  SecureSumCountSource* sums_;
  const table::Dataset* schema_;
  ViewLog* log_;
  std::function<uint32_t()> round_;
  size_t max_groups_;
  size_t width_;
  const engine::LocalFineMap* fine_ = nullptr;
};

// Proto forms shared by the leader and the parties.
void LocalGroupRefToProto(const engine::LocalGroupRef& ref, fedanon::v1::LocalGroupRef* out);

}  // namespace fedanon::leader
