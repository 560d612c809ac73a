// Numeric split search that shows no one record-level counts (`numeric_split: binned`, the
// default; docs/engine.md "Continuous attributes"). The range of a continuous QID is cut into at
// most `numeric_cells` equal-width public cells (whole grid ranks, fixed by the spec's range and
// precision; for a single holder without a declared range, by the data's min and max). One
// unlabelled count per cell lets the engine merge adjacent cells left to right into bins of at
// least K records; one labelled count vector per bin then gives every class count the search
// will ever use. Every interval of the attribute's dynamic tree is a union of bins, and its
// threshold is a bin boundary chosen from those counts alone (tds_engine.cc), so later rounds ask
// nothing new and differences between rounds are unions of bins.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/privacy_model.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

inline constexpr uint32_t kDefaultNumericCells = 32;
// The least bin size for a model without an anonymity threshold (confidence templates only).
inline constexpr uint32_t kDefaultMinSplitBin = 20;

struct NumericSplitConfig {
  fedanon::v1::NumericSplit mode = fedanon::v1::NUMERIC_SPLIT_BINNED;
  uint32_t cells = kDefaultNumericCells;  // numeric_cells
  uint32_t min_split_bin = 0;             // 0: the model's K (kDefaultMinSplitBin without one)
  bool binned() const { return mode != fedanon::v1::NUMERIC_SPLIT_EXACT; }
};

// The spec's numeric_split, numeric_cells and min_split_bin, with their defaults.
NumericSplitConfig NumericSplitFromSpec(const fedanon::v1::JobSpec& spec);

// The least number of records of a bin: the model's K (the smallest k > 1 of its constraints),
// raised to `min_split_bin` when that is larger; `min_split_bin` (or kDefaultMinSplitBin when 0)
// for a model without an anonymity threshold.
uint64_t SplitBinBound(const PrivacyModel& model, uint32_t min_split_bin);

// Local recoding's least number of records of a within-group bin: the model's largest k (every
// group must hold it), never below SplitBinBound (the global bins' own bound).
uint64_t WithinGroupBinBound(const PrivacyModel& model, uint32_t min_split_bin);

// The public cells of a continuous column as rank boundaries 0 = b_0 < b_1 < ... < b_m = R
// (R = number of ranks; cell i holds ranks [b_i, b_{i+1})), m <= `cells`. On a grid (precision >
// 0) every cell is ceil(R / cells) ranks wide (the last one may be narrower); without one, cell i
// holds the values x with lo + (hi - lo) * i / cells <= x < lo + (hi - lo) * (i + 1) / cells
// (empty cells dropped). {0} when the column has no ranks.
std::vector<int32_t> PublicCellBounds(const table::QidColumn& column, uint32_t cells);

// Merges adjacent cells left to right into bins of at least `min_records` records: a bin closes
// as soon as it holds enough; a short (or empty) tail joins the last bin. Returns the bins' rank
// boundaries (a subsequence of `cell_bounds` from its first to its last element), or {} when all
// the cells together hold fewer than `min_records` records.
std::vector<int32_t> MergeCellsIntoBins(const std::vector<int32_t>& cell_bounds,
                                        const std::vector<uint64_t>& cell_counts,
                                        uint64_t min_records);

// A holder's check of the numeric part of a request under `config` (hierarchies as the holder
// has them): with binned search, no per-rank histogram, unlabelled range counts over exactly the
// public cells, labelled ones only over unions of public cells. (Whether each labelled bin holds
// K records is beyond what one holder can see; docs/threat-model.md.)
absl::Status CheckNumericRequest(const StatsRequest& request,
                                 const std::vector<AttributeHierarchy>& hier,
                                 const NumericSplitConfig& config);

// A part of a binned request's answer that a holder opens only once its record total over every
// holder is at least the bin bound (SplitBinBound): the `words` class counts from word `offset`
// of one range of a labelled range count (one bin). An honest leader asks only for bins of at
// least that many records (MergeCellsIntoBins on the public cells' totals); whether a bin holds
// them is beyond what one holder sees, so the holders compare the bin's masked total with its
// mask (a secure comparison: party/secure_sum_party.h) before the mask is released. Class counts
// of continuous nodes need no such check: every threshold lies on a bin boundary
// (party/horizontal_tables.h), so each node is a union of checked bins.
struct GuardedRange {
  uint64_t offset = 0;
  uint64_t words = 0;
  friend bool operator==(const GuardedRange&, const GuardedRange&) = default;
};

// The guarded ranges of `request` in the order of its answer (range counts come first in it);
// none unless `config` is binned.
std::vector<GuardedRange> GuardedRanges(const StatsRequest& request, int num_classes,
                                        const NumericSplitConfig& config);

}  // namespace fedanon::engine
