#include "common/engine/numeric_split.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fedanon::engine {

NumericSplitConfig NumericSplitFromSpec(const fedanon::v1::JobSpec& spec) {
  NumericSplitConfig config;
  config.mode = spec.numeric_split() == fedanon::v1::NUMERIC_SPLIT_EXACT
                    ? fedanon::v1::NUMERIC_SPLIT_EXACT
                    : fedanon::v1::NUMERIC_SPLIT_BINNED;
  if (spec.numeric_cells() > 0) config.cells = spec.numeric_cells();
  config.min_split_bin = spec.min_split_bin();
  return config;
}

uint64_t SplitBinBound(const PrivacyModel& model, uint32_t min_split_bin) {
  uint64_t k = 0;  // the smallest anonymity threshold of the model, 0 if none
  for (const Constraint& c : model.constraints) {
    if (c.k > 1 && (k == 0 || c.k < k)) k = c.k;
  }
  if (k == 0) return min_split_bin > 0 ? min_split_bin : kDefaultMinSplitBin;
  return std::max<uint64_t>(k, min_split_bin);
}

uint64_t WithinGroupBinBound(const PrivacyModel& model, uint32_t min_split_bin) {
  uint64_t kmax = 1;
  for (const Constraint& c : model.constraints) kmax = std::max(kmax, c.k);
  return std::max(kmax, SplitBinBound(model, min_split_bin));
}

std::vector<int32_t> PublicCellBounds(const table::QidColumn& column, uint32_t cells) {
  const auto ranks = static_cast<int32_t>(column.sorted_values.size());
  if (ranks == 0) return {0};
  const int64_t count = std::max<uint32_t>(1, cells);
  std::vector<int32_t> bounds = {0};
  if (column.precision > 0) {
    const int64_t width = (ranks + count - 1) / count;
    for (int64_t r = width; r < ranks; r += width) bounds.push_back(static_cast<int32_t>(r));
  } else {
    const double lo = column.range_lo, hi = column.range_hi;
    for (int64_t i = 1; i < count; ++i) {
      const double boundary = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(count);
      const auto r = static_cast<int32_t>(
          std::lower_bound(column.sorted_values.begin(), column.sorted_values.end(), boundary) -
          column.sorted_values.begin());
      if (r > bounds.back() && r < ranks) bounds.push_back(r);
    }
  }
  bounds.push_back(ranks);
  return bounds;
}

std::vector<int32_t> MergeCellsIntoBins(const std::vector<int32_t>& cell_bounds,
                                        const std::vector<uint64_t>& cell_counts,
                                        uint64_t min_records) {
  if (cell_bounds.size() < 2 || cell_counts.size() + 1 != cell_bounds.size()) return {};
  std::vector<int32_t> bins = {cell_bounds.front()};
  uint64_t open = 0;  // records of the bin being filled
  for (size_t i = 0; i < cell_counts.size(); ++i) {
    open += cell_counts[i];
    if (open >= min_records && open > 0) {
      bins.push_back(cell_bounds[i + 1]);
      open = 0;
    }
  }
  if (bins.size() < 2) return {};    // fewer than min_records records in all
  bins.back() = cell_bounds.back();  // the short tail (if any) joins the last bin
  return bins;
}

namespace {

// Whether `bounds` is a subsequence of `cells` from its first to its last element.
bool UnionOfCells(const std::vector<int32_t>& bounds, const std::vector<int32_t>& cells) {
  if (bounds.size() < 2 || bounds.front() != cells.front() || bounds.back() != cells.back()) {
    return false;
  }
  return std::includes(cells.begin(), cells.end(), bounds.begin(), bounds.end());
}

}  // namespace

absl::Status CheckNumericRequest(const StatsRequest& request,
                                 const std::vector<AttributeHierarchy>& hier,
                                 const NumericSplitConfig& config) {
  if (!config.binned()) return absl::OkStatus();
  if (!request.rank_histograms.empty()) {
    return absl::InvalidArgumentError(
        "per-value class histograms were requested, but the job uses numeric_split: binned");
  }
  for (const RangeCountRequest& r : request.range_counts) {
    const std::vector<int32_t> cells = PublicCellBounds(hier[r.attr].column(), config.cells);
    const bool ok = r.labelled ? UnionOfCells(r.bounds, cells) : r.bounds == cells;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(r.labelled ? "class counts" : "record counts", " of attribute ", r.attr,
                       " were requested over ranges that are not ",
                       r.labelled ? "unions of its public cells" : "its public cells"));
    }
  }
  return absl::OkStatus();
}

std::vector<GuardedRange> GuardedRanges(const StatsRequest& request, int num_classes,
                                        const NumericSplitConfig& config) {
  std::vector<GuardedRange> out;
  if (!config.binned()) return out;
  const uint64_t nc = static_cast<uint64_t>(std::max(1, num_classes));
  uint64_t offset = 0;
  for (const RangeCountRequest& r : request.range_counts) {
    if (r.bounds.size() < 2) continue;
    const uint64_t ranges = r.bounds.size() - 1;
    if (!r.labelled) {
      offset += ranges;
      continue;
    }
    for (uint64_t i = 0; i < ranges; ++i) out.push_back({offset + i * nc, nc});
    offset += ranges * nc;
  }
  return out;
}

}  // namespace fedanon::engine
