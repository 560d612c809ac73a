#include "leader/local_group_source.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::leader {

void LocalGroupRefToProto(const engine::LocalGroupRef& ref, fedanon::v1::LocalGroupRef* out) {
  out->set_group(ref.group);
  for (const engine::LocalValue& v : ref.key) {
    auto* p = out->add_key();
    p->set_node(v.node);
    p->set_lo(v.lo);
    p->set_hi(v.hi);
  }
}

FederatedLocalSource::FederatedLocalSource(SecureSumCountSource* sums, const table::Dataset* schema,
                                           ViewLog* log, std::function<uint32_t()> round,
                                           size_t max_groups)
    : sums_(sums),
      schema_(schema),
      log_(log),
      round_(std::move(round)),
      max_groups_(std::max<size_t>(1, max_groups)),
      width_(1 + static_cast<size_t>(std::max(1, schema->num_classes())) + schema->tracked.size()) {
}

absl::StatusOr<std::vector<uint64_t>> FederatedLocalSource::RangeCounts(
    int attr, const std::vector<int32_t>& bounds) {
  engine::StatsRequest request;
  request.range_counts.push_back({attr, bounds, /*labelled=*/false});
  return sums_->Collect(request);  // logged as numeric_split_cells by the secure sum
}

absl::Status FederatedLocalSource::UseFineMap(const engine::LocalFineMap* fine) {
  fine_ = fine;
  fedanon::v1::StateUpdate u;
  auto* setup = u.mutable_local_setup();
  for (size_t a = 0; a < schema_->qids.size(); ++a) {
    auto* bins = setup->add_bins();
    if (fine->binned()) {
      for (int32_t b : fine->bins(static_cast<int>(a))) bins->add_bounds(b);
    }
  }
  sums_->AddUpdate(std::move(u));
  return absl::OkStatus();
}

absl::Status FederatedLocalSource::LogGroup(const engine::LocalGroupRef& ref,
                                            const std::vector<uint64_t>& words) {
  if (log_ == nullptr) return absl::OkStatus();
  const uint32_t round = round_();
  const std::string group = absl::StrCat("group ", ref.group);
  ViewEntry own;
  own.round = round;
  own.kind = kViewLocalGroup;
  own.labelled = true;
  own.node = group;
  own.counts.assign(words.begin(), words.begin() + static_cast<ptrdiff_t>(width_));
  RETURN_IF_ERROR(log_->Append(own));
  size_t off = width_;
  for (size_t a = 0; a < schema_->qids.size(); ++a) {
    const int fine = fine_->FineCount(static_cast<int>(a), ref.key[a]);
    if (fine == 0) continue;
    const bool continuous = schema_->qids[a].kind == table::QidKind::kContinuous;
    const bool counts_only = continuous && fine_->binned();
    const size_t len = static_cast<size_t>(fine) * (counts_only ? 1 : width_);
    ViewEntry e;
    e.round = round;
    e.kind = counts_only  ? kViewLocalBinCounts
             : continuous ? kViewLocalRankHistogram
                          : kViewLocalCandidateCounts;
    e.attribute = schema_->qids[a].name;
    e.labelled = !counts_only;
    e.node = group;
    e.counts.assign(words.begin() + static_cast<ptrdiff_t>(off),
                    words.begin() + static_cast<ptrdiff_t>(off + len));
    RETURN_IF_ERROR(log_->Append(e));
    off += len;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> FederatedLocalSource::GroupStatsBatch(
    const std::vector<engine::LocalGroupRef>& groups) {
  if (fine_ == nullptr) return absl::FailedPreconditionError("local recoding: no fine map yet");
  std::vector<std::vector<uint64_t>> out;
  out.reserve(groups.size());
  for (size_t begin = 0; begin < groups.size(); begin += max_groups_) {
    const size_t end = std::min(groups.size(), begin + max_groups_);
    fedanon::v1::StatsRequest request;
    size_t words = 0;
    for (size_t i = begin; i < end; ++i) {
      LocalGroupRefToProto(groups[i], request.mutable_local()->add_groups());
      words += engine::LocalGroupStatsLength(*schema_, *fine_, groups[i].key);
    }
    ASSIGN_OR_RETURN(const std::vector<uint64_t> sum, sums_->CollectProto(request, words));
    size_t off = 0;
    for (size_t i = begin; i < end; ++i) {
      const size_t len = engine::LocalGroupStatsLength(*schema_, *fine_, groups[i].key);
      std::vector<uint64_t> w(sum.begin() + static_cast<ptrdiff_t>(off),
                              sum.begin() + static_cast<ptrdiff_t>(off + len));
      off += len;
      RETURN_IF_ERROR(LogGroup(groups[i], w));
      out.push_back(std::move(w));
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> FederatedLocalSource::RangeStatsBatch(
    const std::vector<engine::LocalRangeQuery>& queries) {
  if (fine_ == nullptr) return absl::FailedPreconditionError("local recoding: no fine map yet");
  std::vector<std::vector<uint64_t>> out;
  out.reserve(queries.size());
  for (size_t begin = 0; begin < queries.size(); begin += max_groups_) {
    const size_t end = std::min(queries.size(), begin + max_groups_);
    fedanon::v1::StatsRequest request;
    size_t words = 0;
    for (size_t i = begin; i < end; ++i) {
      const engine::LocalRangeQuery& q = queries[i];
      auto* r = request.mutable_local()->add_ranges();
      LocalGroupRefToProto({q.group, q.key}, r->mutable_group());
      r->set_attribute(static_cast<uint32_t>(q.attr));
      for (int32_t b : q.bounds) r->add_bounds(b);
      words += (q.bounds.size() - 1) * width_;
    }
    ASSIGN_OR_RETURN(const std::vector<uint64_t> sum,
                     sums_->CollectProto(request, words, /*bins=*/true));
    size_t off = 0;
    for (size_t i = begin; i < end; ++i) {
      const engine::LocalRangeQuery& q = queries[i];
      const size_t len = (q.bounds.size() - 1) * width_;
      std::vector<uint64_t> w(sum.begin() + static_cast<ptrdiff_t>(off),
                              sum.begin() + static_cast<ptrdiff_t>(off + len));
      off += len;
      if (log_ != nullptr) {
        ViewEntry e;
        e.round = round_();
        e.kind = kViewLocalNumericSplit;
        e.attribute = schema_->qids[q.attr].name;
        e.labelled = true;
        e.node = absl::StrCat("group ", q.group);
        e.counts = w;
        // The within-group bins as rank bounds.
        for (int32_t f : q.bounds) {
          e.bounds.push_back(f == static_cast<int32_t>(fine_->FineCount(q.attr, q.key[q.attr]))
                                 ? q.key[q.attr].hi
                                 : fine_->FineStartRank(q.attr, q.key[q.attr], f));
        }
        RETURN_IF_ERROR(log_->Append(e));
      }
      out.push_back(std::move(w));
    }
  }
  return out;
}

absl::Status FederatedLocalSource::SplitGroups(const std::vector<engine::LocalSplit>& splits) {
  for (const engine::LocalSplit& s : splits) {
    fedanon::v1::StateUpdate u;
    auto* in = u.mutable_local_split();
    LocalGroupRefToProto({s.group, s.key}, in->mutable_group());
    in->set_attribute(static_cast<uint32_t>(s.attr));
    for (int c : s.child_of_fine) in->add_child_of_fine(c);
    for (int32_t id : s.new_ids) in->add_new_ids(id);
    sums_->AddUpdate(std::move(u));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::leader
