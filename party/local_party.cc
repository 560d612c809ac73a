#include "party/local_party.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tds_engine.h"

namespace fedanon::party {

LocalParty::LocalParty(const table::Dataset* data, const fedanon::v1::JobSpec& spec)
    : data_(data),
      suppression_token_(spec.suppression_token()),
      binned_(engine::NumericSplitFromSpec(spec).binned()),
      cells_(engine::NumericSplitFromSpec(spec).cells),
      source_(data) {
  keys_.push_back(engine::LocalRootKey(*data));
  live_.push_back(true);
}

size_t LocalParty::live_groups() const {
  return static_cast<size_t>(std::count(live_.begin(), live_.end(), true));
}

absl::Status LocalParty::ApplySetup(const fedanon::v1::LocalSetup& setup) {
  if (fine_ != nullptr) {
    return absl::PermissionDeniedError("local recoding: the bins were announced already");
  }
  if (static_cast<size_t>(setup.bins_size()) != data_->qids.size()) {
    return absl::InvalidArgumentError("local recoding: the bins name the wrong attributes");
  }
  std::vector<std::vector<int32_t>> bins(data_->qids.size());
  for (size_t a = 0; a < data_->qids.size(); ++a) {
    const auto& b = setup.bins(static_cast<int>(a)).bounds();
    if (b.empty()) continue;
    const table::QidColumn& col = data_->qids[a];
    if (!binned_ || col.kind != table::QidKind::kContinuous) {
      return absl::PermissionDeniedError(
          absl::StrCat("local recoding: bins announced for '", col.name, "', which is not binned"));
    }
    // A subsequence of the public cells from the first to the last bound.
    const std::vector<int32_t> cells = engine::PublicCellBounds(col, cells_);
    size_t j = 0;
    for (int32_t bound : b) {
      while (j < cells.size() && cells[j] < bound) ++j;
      if (j == cells.size() || cells[j] != bound) {
        return absl::PermissionDeniedError(absl::StrCat("local recoding: the bins of '", col.name,
                                                        "' are not unions of public cells"));
      }
    }
    if (b.size() < 2 || b[0] != cells.front() || b[b.size() - 1] != cells.back()) {
      return absl::PermissionDeniedError(absl::StrCat("local recoding: the bins of '", col.name,
                                                      "' do not cover the attribute's range"));
    }
    bins[a].assign(b.begin(), b.end());
  }
  fine_ = std::make_unique<engine::LocalFineMap>(data_, binned_, std::move(bins));
  return source_.UseFineMap(fine_.get());
}

absl::StatusOr<engine::LocalGroupRef> LocalParty::LiveGroup(
    const fedanon::v1::LocalGroupRef& ref) const {
  if (fine_ == nullptr) {
    return absl::FailedPreconditionError("local recoding: the bins were not announced");
  }
  const int32_t g = ref.group();
  if (g < 0 || static_cast<size_t>(g) >= keys_.size() || !live_[g]) {
    return absl::PermissionDeniedError(absl::StrCat(
        "local recoding: group ", g, " is not a live group of this job (unknown or retired)"));
  }
  engine::LocalGroupRef out{g, {}};
  for (const auto& v : ref.key()) out.key.push_back({v.node(), v.lo(), v.hi()});
  if (out.key != keys_[g]) {
    return absl::PermissionDeniedError(absl::StrCat("local recoding: the key of group ", g,
                                                    " differs from this party's record of it"));
  }
  return out;
}

absl::Status LocalParty::ApplySplit(const fedanon::v1::LocalSplitInstruction& split) {
  ASSIGN_OR_RETURN(const engine::LocalGroupRef group, LiveGroup(split.group()));
  const int a = static_cast<int>(split.attribute());
  if (split.attribute() >= data_->qids.size()) {
    return absl::InvalidArgumentError("local split names no QID attribute");
  }
  const std::vector<int> child_of_fine(split.child_of_fine().begin(), split.child_of_fine().end());
  ASSIGN_OR_RETURN(const std::vector<engine::LocalValue> values,
                   engine::LocalChildValues(*data_, *fine_, a, group.key[a], child_of_fine));
  if (static_cast<size_t>(split.new_ids_size()) != values.size()) {
    return absl::InvalidArgumentError("local split: one id per child");
  }
  // Fresh ids: the next ones, in order (-1 for an empty child), at least one child.
  int32_t next = static_cast<int32_t>(keys_.size());
  std::vector<int32_t> new_ids(split.new_ids().begin(), split.new_ids().end());
  for (int32_t id : new_ids) {
    if (id == -1) continue;
    if (id != next++) {
      return absl::PermissionDeniedError(
          absl::StrCat("local split: child id ", id, " is not the next fresh group id"));
    }
  }
  if (next == static_cast<int32_t>(keys_.size())) {
    return absl::InvalidArgumentError("local split: no child");
  }
  if (binned_ && data_->qids[a].kind == table::QidKind::kContinuous) {
    RETURN_IF_ERROR(CheckThresholdOnWithinGroupBins(group.group, a, child_of_fine));
  }
  RETURN_IF_ERROR(source_.SplitGroups({{group.group, group.key, a, child_of_fine, new_ids}}));
  for (size_t c = 0; c < values.size(); ++c) {
    if (new_ids[c] < 0) continue;
    std::vector<engine::LocalValue> key = group.key;
    key[a] = values[c];
    keys_.push_back(std::move(key));
    live_.push_back(true);
  }
  live_[group.group] = false;
  return absl::OkStatus();
}

absl::Status LocalParty::CheckThresholdOnWithinGroupBins(
    int32_t group, int a, const std::vector<int>& child_of_fine) const {
  // LocalChildValues checked the map is a threshold: the first fine child of the right side.
  const int32_t threshold = static_cast<int32_t>(
      std::find(child_of_fine.begin(), child_of_fine.end(), 1) - child_of_fine.begin());
  const auto asked = range_bounds_.find({group, a});
  if (asked == range_bounds_.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "local split: a threshold of '", data_->qids[a].name, "' in group ", group,
        " comes before any class counts over its within-group bins were asked (numeric_split: "
        "binned: a child is a union of within-group bins of at least K records)"));
  }
  const std::vector<int32_t>& bounds = asked->second;
  if (!std::binary_search(bounds.begin() + 1, bounds.end() - 1, threshold)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "local split: the threshold of '", data_->qids[a].name, "' in group ", group, " at bin ",
        threshold,
        " is not a boundary of the group's within-group bins (numeric_split: binned: a child is a "
        "union of within-group bins of at least K records)"));
  }
  return absl::OkStatus();
}

absl::Status LocalParty::RecordRanges(const fedanon::v1::LocalStatsRequest& request) {
  std::map<std::pair<int32_t, int>, std::vector<int32_t>> asked;
  for (const auto& r : request.ranges()) {
    ASSIGN_OR_RETURN(const engine::LocalGroupRef ref, LiveGroup(r.group()));
    const int a = static_cast<int>(r.attribute());
    const std::pair<int32_t, int> key{ref.group, a};
    if (range_bounds_.contains(key) ||
        !asked.emplace(key, std::vector<int32_t>(r.bounds().begin(), r.bounds().end())).second) {
      const std::string name =
          r.attribute() < data_->qids.size() ? data_->qids[a].name : absl::StrCat(a);
      return absl::PermissionDeniedError(
          absl::StrCat("local recoding: class counts of '", name, "' in group ", ref.group,
                       " were asked over within-group bins already; a group's bins are asked once "
                       "(numeric_split: binned: a second set of bins would difference the first)"));
    }
  }
  range_bounds_.merge(asked);
  return absl::OkStatus();
}

std::vector<engine::GuardedRange> LocalParty::GuardedRanges(
    const fedanon::v1::LocalStatsRequest& request) const {
  std::vector<engine::GuardedRange> out;
  if (!binned_) return out;  // labelled ranges are asked under binned search only
  // Each range's words: [count, class_1..C, sensitive_1..m] (InProcessLocalSource::
  // RangeStatsBatch); the count is the bin's records.
  const uint64_t width = 1 + static_cast<uint64_t>(std::max(1, data_->num_classes())) +
                         static_cast<uint64_t>(data_->tracked.size());
  uint64_t offset = 0;
  for (const auto& r : request.ranges()) {
    const uint64_t bins = r.bounds_size() < 2 ? 0 : static_cast<uint64_t>(r.bounds_size() - 1);
    for (uint64_t i = 0; i < bins; ++i) out.push_back({offset + i * width, 1});
    offset += bins * width;
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> LocalParty::ReleasedCounts(
    const fedanon::v1::LocalStatsRequest& request) const {
  if (request.groups_size() > 0 || request.ranges_size() > 0) {
    return absl::InvalidArgumentError(
        "local recoding: released counts are asked alone, not with group statistics or ranges");
  }
  const uint64_t combos = data_->ValueCombinations();
  if (!data_->all_values_declared || request.released_combinations() != combos) {
    return absl::InvalidArgumentError("released counts requested over an undeclared domain");
  }
  if (static_cast<uint64_t>(request.released_groups_size()) >
      engine::kMaxLocalReleasedWords / std::max<uint64_t>(1, combos)) {
    return absl::InvalidArgumentError(absl::StrCat("local recoding: released counts of more than ",
                                                   engine::kMaxLocalReleasedWords, " words"));
  }
  // Exactly the live groups: each named one is live with this party's key, named once, and as
  // many are named as are live.
  std::vector<bool> named(keys_.size(), false);
  std::vector<int32_t> groups;
  groups.reserve(static_cast<size_t>(request.released_groups_size()));
  for (const auto& r : request.released_groups()) {
    ASSIGN_OR_RETURN(const engine::LocalGroupRef ref, LiveGroup(r));
    if (named[ref.group]) {
      return absl::PermissionDeniedError(absl::StrCat("local recoding: released counts name group ",
                                                      ref.group, " twice (one count each)"));
    }
    named[ref.group] = true;
    groups.push_back(ref.group);
  }
  for (size_t g = 0; g < live_.size(); ++g) {
    if (live_[g] && !named[g]) {
      return absl::PermissionDeniedError(
          absl::StrCat("local recoding: released counts omit final group ", g,
                       " (every final group must be named, its records in exactly one)"));
    }
  }
  std::vector<uint64_t> out = source_.ReleasedCounts(groups);
  if (out.size() != groups.size() * combos) {
    return absl::InternalError("local recoding: the released counts have the wrong length");
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> LocalParty::Answer(
    const fedanon::v1::LocalStatsRequest& request) {
  if (request.released_groups_size() > 0 || request.released_combinations() != 0) {
    return ReleasedCounts(request);
  }
  if (request.groups_size() > 0 && request.ranges_size() > 0) {
    return absl::InvalidArgumentError(
        "local recoding: a request asks for groups or for ranges, not both");
  }
  std::vector<uint64_t> out;
  if (request.groups_size() > 0) {
    std::vector<engine::LocalGroupRef> refs;
    for (const auto& r : request.groups()) {
      ASSIGN_OR_RETURN(engine::LocalGroupRef ref, LiveGroup(r));
      refs.push_back(std::move(ref));
    }
    ASSIGN_OR_RETURN(const std::vector<std::vector<uint64_t>> words, source_.GroupStatsBatch(refs));
    for (const auto& w : words) out.insert(out.end(), w.begin(), w.end());
    return out;
  }
  std::vector<engine::LocalRangeQuery> queries;
  for (const auto& r : request.ranges()) {
    ASSIGN_OR_RETURN(engine::LocalGroupRef ref, LiveGroup(r.group()));
    const int a = static_cast<int>(r.attribute());
    if (r.attribute() >= data_->qids.size() || data_->qids[a].kind != table::QidKind::kContinuous ||
        !binned_) {
      return absl::PermissionDeniedError(
          "local recoding: labelled ranges only of a continuous attribute under binned search");
    }
    // Ranges of whole global bins (fine children), covering the group's interval.
    const int fine = fine_->FineCount(a, ref.key[a]);
    const std::vector<int32_t> bounds(r.bounds().begin(), r.bounds().end());
    bool ok = fine > 0 && bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == fine;
    for (size_t i = 0; ok && i + 1 < bounds.size(); ++i) ok = bounds[i] < bounds[i + 1];
    if (!ok) {
      return absl::PermissionDeniedError(
          "local recoding: labelled ranges must be unions of whole bins covering the group");
    }
    queries.push_back({ref.group, std::move(ref.key), a, bounds});
  }
  ASSIGN_OR_RETURN(const std::vector<std::vector<uint64_t>> words,
                   source_.RangeStatsBatch(queries));
  for (const auto& w : words) out.insert(out.end(), w.begin(), w.end());
  return out;
}

std::vector<uint64_t> LocalParty::FinalCheckCounts() const {
  std::vector<int32_t> live;
  std::vector<int32_t> index(live_.size(), -1);
  for (size_t g = 0; g < live_.size(); ++g) {
    if (!live_[g]) continue;
    index[g] = static_cast<int32_t>(live.size());
    live.push_back(static_cast<int32_t>(g));
  }
  const size_t stride = 1 + data_->tracked.size();
  std::vector<uint64_t> out(live.size() * stride, 0);
  const std::vector<int32_t> group_of = source_.GroupOfRecords(live);
  for (size_t r = 0; r < group_of.size(); ++r) {
    if (group_of[r] < 0) continue;
    uint64_t* w = out.data() + static_cast<size_t>(index[group_of[r]]) * stride;
    ++w[0];
    if (data_->tracked.empty()) continue;
    for (uint64_t bits = data_->sensitive_bits[r]; bits != 0; bits &= bits - 1) {
      ++w[1 + static_cast<size_t>(__builtin_ctzll(bits))];
    }
  }
  return out;
}

absl::Status LocalParty::ForEachReleasedRow(
    const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) const {
  std::vector<int32_t> live;
  for (size_t g = 0; g < live_.size(); ++g) {
    if (live_[g]) live.push_back(static_cast<int32_t>(g));
  }
  return engine::ForEachLocalReleasedRow(
      *data_, suppression_token_, live,
      [this](int32_t g) -> const std::vector<engine::LocalValue>& { return keys_[g]; },
      source_.GroupOfRecords(live), columns, emit);
}

}  // namespace fedanon::party
