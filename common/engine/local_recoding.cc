#include "common/engine/local_recoding.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/engine/candidate_score.h"
#include "common/engine/hierarchy.h"
#include "common/engine/local_candidates.h"
#include "common/engine/numeric_split.h"
#include "common/engine/scores.h"
#include "common/table/csv.h"

namespace fedanon::engine {

// ---------------------------------------------------------------------------------------------
// LocalFineMap

LocalFineMap::LocalFineMap(const table::Dataset* data, bool binned,
                           std::vector<std::vector<int32_t>> bins)
    : data_(data),
      binned_(binned),
      bins_(std::move(bins)),
      bin_of_rank_(data->qids.size()),
      fine_at_depth_(data->qids.size()) {
  bins_.resize(data->qids.size());
  for (size_t a = 0; a < data->qids.size(); ++a) {
    const table::QidColumn& col = data->qids[a];
    if (col.kind == table::QidKind::kTaxonomy) {
      const table::Taxonomy& tax = *col.taxonomy;
      int max_depth = 0;
      for (size_t n = 0; n < tax.size(); ++n) {
        max_depth = std::max(max_depth, tax.depth(static_cast<table::Taxonomy::NodeId>(n)));
      }
      std::vector<int32_t> child_index(tax.size(), 0);
      for (size_t n = 0; n < tax.size(); ++n) {
        const auto& kids = tax.children(static_cast<table::Taxonomy::NodeId>(n));
        for (size_t i = 0; i < kids.size(); ++i) child_index[kids[i]] = static_cast<int32_t>(i);
      }
      auto& tables = fine_at_depth_[a];
      tables.assign(static_cast<size_t>(max_depth) + 1, std::vector<int32_t>(tax.size(), -1));
      for (size_t n = 0; n < tax.size(); ++n) {
        for (auto x = static_cast<table::Taxonomy::NodeId>(n); x != table::Taxonomy::kNoNode;
             x = tax.parent(x)) {
          const int d = tax.depth(x);
          if (d >= 1) tables[static_cast<size_t>(d - 1)][n] = child_index[x];
        }
      }
    } else if (col.kind == table::QidKind::kContinuous && binned_ && bins_[a].size() >= 3) {
      const auto& b = bins_[a];
      bin_of_rank_[a].assign(col.sorted_values.size() + 1, 0);
      for (size_t i = 0; i + 1 < b.size(); ++i) {
        for (int32_t r = b[i]; r < b[i + 1]; ++r) bin_of_rank_[a][r] = static_cast<int32_t>(i);
      }
      bin_of_rank_[a][col.sorted_values.size()] = static_cast<int32_t>(b.size() - 1);
    }
  }
}

int LocalFineMap::FineCount(int a, const LocalValue& v) const {
  const table::QidColumn& col = data_->qids[a];
  switch (col.kind) {
    case table::QidKind::kTaxonomy:
      return static_cast<int>(col.taxonomy->children(v.node).size());
    case table::QidKind::kSuppression:
      return v.node < 0 ? static_cast<int>(col.values.size()) : 0;
    case table::QidKind::kContinuous: {
      int count = 0;
      if (!binned_) {
        count = v.hi - v.lo;
      } else if (bins_[a].size() >= 3) {
        count = bin_of_rank_[a][v.hi] - bin_of_rank_[a][v.lo];
      }
      return count >= 2 ? count : 0;
    }
  }
  return 0;
}

int LocalFineMap::FineOf(int a, const LocalValue& v, int32_t code) const {
  const table::QidColumn& col = data_->qids[a];
  switch (col.kind) {
    case table::QidKind::kTaxonomy:
      return fine_at_depth_[a][col.taxonomy->depth(v.node)][code];
    case table::QidKind::kSuppression:
      return code;
    case table::QidKind::kContinuous:
      return binned_ ? bin_of_rank_[a][code] - bin_of_rank_[a][v.lo] : code - v.lo;
  }
  return 0;
}

int32_t LocalFineMap::FineStartRank(int a, const LocalValue& v, int f) const {
  return binned_ ? bins_[a][bin_of_rank_[a][v.lo] + f] : v.lo + f;
}

// ---------------------------------------------------------------------------------------------
// InProcessLocalSource

InProcessLocalSource::InProcessLocalSource(const table::Dataset* data) : data_(data) {
  perm_.resize(data->num_records);
  for (size_t r = 0; r < perm_.size(); ++r) perm_[r] = static_cast<uint32_t>(r);
  range_.emplace_back(0, static_cast<uint32_t>(perm_.size()));
}

absl::StatusOr<std::vector<uint64_t>> InProcessLocalSource::RangeCounts(
    int attr, const std::vector<int32_t>& bounds) {
  if (bounds.size() < 2) return std::vector<uint64_t>();
  std::vector<uint64_t> out(bounds.size() - 1, 0);
  const table::QidColumn& col = data_->qids[attr];
  for (size_t r = 0; r < data_->num_records; ++r) {
    const int32_t code = col.codes[r];
    const auto it = std::upper_bound(bounds.begin(), bounds.end(), code);
    if (it == bounds.begin() || it == bounds.end()) continue;
    ++out[static_cast<size_t>(it - bounds.begin()) - 1];
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> InProcessLocalSource::FullStats(
    int32_t group, const std::vector<LocalValue>& key) {
  ASSIGN_OR_RETURN(auto batch, FullStatsBatch({{group, &key}}));
  return std::move(batch[0]);
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> InProcessLocalSource::FullStatsBatch(
    const std::vector<std::pair<int32_t, const std::vector<LocalValue>*>>& groups) {
  if (fine_ == nullptr) return absl::FailedPreconditionError("local recoding: no fine map yet");
  const size_t q = data_->qids.size();
  const size_t nc = static_cast<size_t>(std::max(1, data_->num_classes()));
  const size_t width = 1 + nc + data_->tracked.size();
  const bool has_class = !data_->class_codes.empty();
  const bool has_sensitive = !data_->tracked.empty();
  // Layout of every group's words, and where its records' classes and sensitive bits are
  // gathered in the shared buffers (one slice per group).
  struct Layout {
    uint32_t begin = 0, end = 0;  // the group's range of perm_
    size_t gathered = 0;          // first slot of the group's slice in cls/sens
    std::vector<size_t> offset;   // per attribute, its first word
  };
  std::vector<Layout> layout(groups.size());
  std::vector<std::vector<uint64_t>> out(groups.size());
  size_t total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [group, key] = groups[g];
    if (group < 0 || static_cast<size_t>(group) >= range_.size()) {
      return absl::InternalError("unknown local-recoding group");
    }
    Layout& l = layout[g];
    std::tie(l.begin, l.end) = range_[group];
    l.gathered = total;
    total += l.end - l.begin;
    l.offset.assign(q, 0);
    size_t words = width;
    for (size_t a = 0; a < q; ++a) {
      l.offset[a] = words;
      words += static_cast<size_t>(fine_->FineCount(static_cast<int>(a), (*key)[a])) * width;
    }
    out[g].assign(words, 0);
  }
  // Reused buffers: fresh ones per group fragmented the heap (peak RSS +45% at 1M records).
  std::vector<uint16_t>& cls = cls_buffer_;
  std::vector<uint64_t>& sens = sens_buffer_;
  if (has_class && cls.size() < total) cls.resize(total);
  if (has_sensitive && sens.size() < total) sens.resize(total);
  auto add = [&](uint64_t* w, size_t i) {
    ++w[0];
    if (has_class) ++w[1 + cls[i]];
    if (has_sensitive) {
      for (uint64_t bits = sens[i]; bits != 0; bits &= bits - 1) {
        ++w[1 + nc + static_cast<size_t>(__builtin_ctzll(bits))];
      }
    }
  };
  // Tasks: per group, gather and count the group's own words; then per (group, refinable
  // attribute), one column over the group's records (one code column at a time stays in cache)
  // into that attribute's block. Blocks are disjoint, so tasks need no lock; the largest first.
  std::vector<size_t> by_size(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_size[g] = g;
  std::sort(by_size.begin(), by_size.end(), [&](size_t x, size_t y) {
    return layout[x].end - layout[x].begin > layout[y].end - layout[y].begin;
  });
  // Small batches run on this thread: starting threads would cost more than the counting.
  const bool parallel = total >= (1U << 15);
  auto run = [&](size_t n, const std::function<void(size_t)>& fn) {
    if (!parallel) {
      for (size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    base::ParallelFor(n, [&](size_t i) {
      fn(i);
      return absl::OkStatus();
    }).IgnoreError();  // fn reports no error
  };
  run(by_size.size(), [&](size_t t) {
    const size_t g = by_size[t];
    const Layout& l = layout[g];
    for (uint32_t i = l.begin; i < l.end; ++i) {
      const uint32_t r = perm_[i];
      const size_t at = l.gathered + (i - l.begin);
      if (has_class) cls[at] = data_->class_codes[r];
      if (has_sensitive) sens[at] = data_->sensitive_bits[r];
    }
    for (size_t i = 0; i < l.end - l.begin; ++i) add(out[g].data(), l.gathered + i);
  });
  std::vector<std::pair<size_t, int>> tasks;
  for (size_t g : by_size) {
    for (size_t a = 0; a < q; ++a) {
      if (fine_->FineCount(static_cast<int>(a), (*groups[g].second)[a]) > 0) {
        tasks.emplace_back(g, static_cast<int>(a));
      }
    }
  }
  run(tasks.size(), [&](size_t t) {
    const auto [g, a] = tasks[t];
    const Layout& l = layout[g];
    const LocalValue& v = (*groups[g].second)[a];
    const table::QidColumn& col = data_->qids[a];
    const auto& codes = col.codes;
    uint64_t* block = out[g].data() + l.offset[a];
    const uint32_t* p = perm_.data() + l.begin;
    const size_t n = l.end - l.begin;
    const size_t s = l.gathered;
    switch (col.kind) {
      case table::QidKind::kTaxonomy: {
        const std::vector<int32_t>& table =
            fine_->TaxonomyFineTable(a, col.taxonomy->depth(v.node));
        for (size_t i = 0; i < n; ++i) add(block + table[codes[p[i]]] * width, s + i);
        break;
      }
      case table::QidKind::kContinuous:
        if (fine_->binned()) {
          const std::vector<int32_t>& bin = fine_->BinOfRank(a);
          const int32_t base = bin[v.lo];
          for (size_t i = 0; i < n; ++i) add(block + (bin[codes[p[i]]] - base) * width, s + i);
        } else {
          const int32_t base = v.lo;
          for (size_t i = 0; i < n; ++i) add(block + (codes[p[i]] - base) * width, s + i);
        }
        break;
      case table::QidKind::kSuppression:
        for (size_t i = 0; i < n; ++i) add(block + codes[p[i]] * width, s + i);
        break;
    }
  });
  return out;
}

absl::Status InProcessLocalSource::PartitionGroup(const LocalSplit& split,
                                                  std::vector<uint32_t>* count) {
  const int32_t group = split.group;
  const std::vector<LocalValue>& key = split.key;
  const int attr = split.attr;
  const std::vector<int>& child_of_fine = split.child_of_fine;
  const std::vector<int32_t>& new_ids = split.new_ids;
  const auto [begin, end] = range_[group];
  const size_t children = new_ids.size();
  count->assign(children + 1, 0);
  const auto& codes = data_->qids[attr].codes;
  // Each record's child, worked out once (in the group's slice of child_buffer_) for the count
  // and the placement.
  uint32_t* child = child_buffer_.data() + begin;
  for (uint32_t i = begin; i < end; ++i) {
    const int c = child_of_fine[fine_->FineOf(attr, key[attr], codes[perm_[i]])];
    child[i - begin] = static_cast<uint32_t>(c);
    ++(*count)[c + 1];
  }
  for (size_t c = 0; c < children; ++c) {
    if ((*count)[c + 1] > 0 && new_ids[c] < 0) {
      return absl::InternalError("a record goes to a child without a group");
    }
    (*count)[c + 1] += (*count)[c];
  }
  std::vector<uint32_t> pos(count->begin(), count->end() - 1);
  for (uint32_t i = begin; i < end; ++i) scratch_[begin + pos[child[i - begin]]++] = perm_[i];
  std::copy(scratch_.begin() + begin, scratch_.begin() + end, perm_.begin() + begin);
  return absl::OkStatus();
}

absl::Status InProcessLocalSource::SplitGroups(const std::vector<LocalSplit>& splits) {
  if (fine_ == nullptr) return absl::FailedPreconditionError("local recoding: no fine map yet");
  absl::flat_hash_set<int32_t> seen;
  size_t total = 0;
  for (const LocalSplit& split : splits) {
    if (split.group < 0 || static_cast<size_t>(split.group) >= range_.size()) {
      return absl::InternalError("unknown local-recoding group");
    }
    if (!seen.insert(split.group).second) {
      return absl::InternalError("a local-recoding group split twice in one batch");
    }
    total += range_[split.group].second - range_[split.group].first;
  }
  if (scratch_.size() < perm_.size()) scratch_.resize(perm_.size());
  if (child_buffer_.size() < perm_.size()) child_buffer_.resize(perm_.size());
  // The groups' ranges of perm_ are disjoint, so their partitions run on every core at once;
  // the new ranges are then recorded in the splits' order.
  std::vector<std::vector<uint32_t>> counts(splits.size());
  auto partition = [&](size_t i) { return PartitionGroup(splits[i], &counts[i]); };
  if (total >= (1U << 15)) {
    RETURN_IF_ERROR(base::ParallelFor(splits.size(), partition));
  } else {
    for (size_t i = 0; i < splits.size(); ++i) RETURN_IF_ERROR(partition(i));
  }
  for (size_t i = 0; i < splits.size(); ++i) {
    const LocalSplit& split = splits[i];
    const uint32_t begin = range_[split.group].first;
    for (size_t c = 0; c < split.new_ids.size(); ++c) {
      const int32_t id = split.new_ids[c];
      if (id < 0) continue;
      if (range_.size() <= static_cast<size_t>(id)) range_.resize(id + 1, {0, 0});
      range_[id] = {begin + counts[i][c], begin + counts[i][c + 1]};
    }
    range_[split.group] = {0, 0};
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> InProcessLocalSource::GroupStatsBatch(
    const std::vector<LocalGroupRef>& groups) {
  full_cache_.clear();
  const size_t width =
      1 + static_cast<size_t>(std::max(1, data_->num_classes())) + data_->tracked.size();
  std::vector<std::pair<int32_t, const std::vector<LocalValue>*>> refs;
  refs.reserve(groups.size());
  for (const LocalGroupRef& ref : groups) refs.emplace_back(ref.group, &ref.key);
  ASSIGN_OR_RETURN(std::vector<std::vector<uint64_t>> fulls, FullStatsBatch(refs));
  std::vector<std::vector<uint64_t>> out;
  out.reserve(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const LocalGroupRef& ref = groups[g];
    std::vector<uint64_t> full = std::move(fulls[g]);
    // Binned continuous blocks: the record count per bin only.
    std::vector<uint64_t> words(full.begin(), full.begin() + static_cast<ptrdiff_t>(width));
    size_t off = width;
    bool cached = false;
    for (size_t a = 0; a < data_->qids.size(); ++a) {
      const int fine = fine_->FineCount(static_cast<int>(a), ref.key[a]);
      const bool counts_only =
          fine_->binned() && data_->qids[a].kind == table::QidKind::kContinuous && fine > 0;
      for (int f = 0; f < fine; ++f) {
        const uint64_t* w = full.data() + off + static_cast<size_t>(f) * width;
        if (counts_only) {
          words.push_back(w[0]);
        } else {
          words.insert(words.end(), w, w + width);
        }
      }
      off += static_cast<size_t>(fine) * width;
      cached |= counts_only;
    }
    if (cached) full_cache_.emplace_back(ref.group, std::move(full));
    out.push_back(std::move(words));
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> InProcessLocalSource::RangeStatsBatch(
    const std::vector<LocalRangeQuery>& queries) {
  const size_t width =
      1 + static_cast<size_t>(std::max(1, data_->num_classes())) + data_->tracked.size();
  std::vector<std::vector<uint64_t>> out;
  out.reserve(queries.size());
  std::vector<uint64_t> computed;
  for (const LocalRangeQuery& q : queries) {
    const std::vector<uint64_t>* full = nullptr;
    for (const auto& [g, words] : full_cache_) {
      if (g == q.group) full = &words;
    }
    if (full == nullptr) {
      ASSIGN_OR_RETURN(computed, FullStats(q.group, q.key));
      full = &computed;
    }
    if (q.attr < 0 || static_cast<size_t>(q.attr) >= data_->qids.size() ||
        q.key.size() != data_->qids.size()) {
      return absl::InvalidArgumentError("local range query names no attribute of the group");
    }
    size_t off = width;
    for (int a = 0; a < q.attr; ++a) {
      off += static_cast<size_t>(fine_->FineCount(a, q.key[a])) * width;
    }
    const int fine = fine_->FineCount(q.attr, q.key[q.attr]);
    if (q.bounds.size() < 2 || q.bounds.front() != 0 || q.bounds.back() != fine) {
      return absl::InvalidArgumentError("local range query does not cover the group's interval");
    }
    std::vector<uint64_t> words((q.bounds.size() - 1) * width, 0);
    for (size_t i = 0; i + 1 < q.bounds.size(); ++i) {
      if (q.bounds[i] >= q.bounds[i + 1]) {
        return absl::InvalidArgumentError("local range query bounds are not increasing");
      }
      for (int32_t f = q.bounds[i]; f < q.bounds[i + 1]; ++f) {
        for (size_t w = 0; w < width; ++w) {
          words[i * width + w] += (*full)[off + static_cast<size_t>(f) * width + w];
        }
      }
    }
    out.push_back(std::move(words));
  }
  return out;
}

std::vector<int32_t> InProcessLocalSource::GroupOfRecords(
    const std::vector<int32_t>& groups) const {
  std::vector<int32_t> out(data_->num_records, -1);
  for (int32_t g : groups) {
    if (g < 0 || static_cast<size_t>(g) >= range_.size()) continue;
    for (uint32_t i = range_[g].first; i < range_[g].second; ++i) out[perm_[i]] = g;
  }
  return out;
}

std::vector<uint64_t> InProcessLocalSource::ReleasedCounts(
    const std::vector<int32_t>& groups) const {
  const uint64_t combos = data_->ValueCombinations();
  if (!data_->all_values_declared || combos > kMaxLocalReleasedWords ||
      groups.size() > kMaxLocalReleasedWords / std::max<uint64_t>(1, combos)) {
    return {};
  }
  std::vector<uint64_t> out(groups.size() * combos, 0);
  for (size_t i = 0; i < groups.size(); ++i) {
    const int32_t g = groups[i];
    if (g < 0 || static_cast<size_t>(g) >= range_.size()) continue;
    uint64_t* w = out.data() + i * combos;
    for (uint32_t p = range_[g].first; p < range_[g].second; ++p) {
      const uint32_t r = perm_[p];
      uint64_t index = 0;
      for (const auto& vc : data_->value_columns) index = index * vc.values.size() + vc.codes[r];
      ++w[index];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

size_t LocalGroupStatsLength(const table::Dataset& data, const LocalFineMap& fine,
                             const std::vector<LocalValue>& key) {
  const size_t width =
      1 + static_cast<size_t>(std::max(1, data.num_classes())) + data.tracked.size();
  size_t words = width;
  for (size_t a = 0; a < data.qids.size(); ++a) {
    const int f = fine.FineCount(static_cast<int>(a), key[a]);
    const bool counts_only = fine.binned() && data.qids[a].kind == table::QidKind::kContinuous;
    words += static_cast<size_t>(f) * (counts_only ? 1 : width);
  }
  return words;
}

absl::StatusOr<std::vector<LocalValue>> LocalChildValues(const table::Dataset& data,
                                                         const LocalFineMap& fine, int a,
                                                         const LocalValue& v,
                                                         const std::vector<int>& child_of_fine) {
  if (a < 0 || static_cast<size_t>(a) >= data.qids.size()) {
    return absl::InvalidArgumentError("local split names no QID attribute");
  }
  const int count = fine.FineCount(a, v);
  if (count == 0 || child_of_fine.size() != static_cast<size_t>(count)) {
    return absl::InvalidArgumentError("local split is no candidate of the group's value");
  }
  const table::QidColumn& col = data.qids[a];
  switch (col.kind) {
    case table::QidKind::kTaxonomy: {
      std::vector<LocalValue> out;
      for (int f = 0; f < count; ++f) {
        if (child_of_fine[f] != f) {
          return absl::InvalidArgumentError("local split does not map a node to its children");
        }
        LocalValue c = v;
        c.node = col.taxonomy->children(v.node)[f];
        out.push_back(c);
      }
      return out;
    }
    case table::QidKind::kContinuous: {
      int t = 0;
      while (t < count && child_of_fine[t] == 0) ++t;
      for (int f = t; f < count; ++f) {
        if (child_of_fine[f] != 1) {
          return absl::InvalidArgumentError("local split is not a threshold of the interval");
        }
      }
      if (t <= 0 || t >= count) {
        return absl::InvalidArgumentError("local split threshold lies outside the interval");
      }
      LocalValue left = v, right = v;
      left.hi = right.lo = fine.FineStartRank(a, v, t);
      return std::vector<LocalValue>{left, right};
    }
    case table::QidKind::kSuppression: {
      int u = -1;
      for (int f = 0; f < count; ++f) {
        if (child_of_fine[f] == 0 && u < 0) {
          u = f;
        } else if (child_of_fine[f] != 1) {
          return absl::InvalidArgumentError("local split discloses not exactly one value");
        }
      }
      if (u < 0) return absl::InvalidArgumentError("local split discloses no value");
      LocalValue disclosed = v, rest = v;
      disclosed.node = u;
      rest.node = -1;
      return std::vector<LocalValue>{disclosed, rest};
    }
  }
  return absl::InvalidArgumentError("local split on an unknown attribute kind");
}

std::string LocalLabel(const table::Dataset& data, const std::string& suppression_token, int a,
                       const LocalValue& v) {
  const table::QidColumn& col = data.qids[a];
  switch (col.kind) {
    case table::QidKind::kTaxonomy:
      return col.taxonomy->label(v.node);
    case table::QidKind::kSuppression:
      return v.node < 0 ? suppression_token : col.values[v.node];
    case table::QidKind::kContinuous: {
      const int32_t ranks = static_cast<int32_t>(col.sorted_values.size());
      const double lo = v.lo == 0 ? col.range_lo : col.sorted_values[v.lo];
      const double hi = v.hi == ranks ? col.range_hi : col.sorted_values[v.hi];
      return IntervalLabel(lo, hi);
    }
  }
  return "";
}

std::vector<LocalValue> LocalRootKey(const table::Dataset& data) {
  std::vector<LocalValue> root(data.qids.size());
  for (size_t a = 0; a < data.qids.size(); ++a) {
    const table::QidColumn& col = data.qids[a];
    switch (col.kind) {
      case table::QidKind::kTaxonomy:
        root[a].node = col.taxonomy->root();
        break;
      case table::QidKind::kSuppression:
        root[a].node = -1;
        break;
      case table::QidKind::kContinuous:
        root[a] = {0, 0, static_cast<int32_t>(col.sorted_values.size())};
        break;
    }
  }
  return root;
}

absl::StatusOr<FinalCheckLayout> LocalFinalCheckLayout(const PrivacyModel& model,
                                                       const table::Dataset& data,
                                                       uint64_t groups) {
  FinalCheckLayout layout;
  for (const auto& t : data.tracked) layout.tracked.push_back(t.value);
  layout.stride = 1 + layout.tracked.size();
  if (groups > kMaxFinalCheckWords / layout.stride) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "final check: ", groups, " local groups need more than ", kMaxFinalCheckWords, " words"));
  }
  layout.words = groups * layout.stride;
  uint64_t kmin = 1;
  std::vector<double> bound(layout.tracked.size(), 1.0);
  for (const Constraint& c : model.constraints) {
    kmin = std::max(kmin, c.k);
    for (size_t b = 0; b < bound.size(); ++b) {
      if (c.sensitive_mask >> b & 1) bound[b] = std::min(bound[b], c.max_conf);
    }
  }
  FinalCheckConstraint size;
  size.description = absl::StrCat("local groups k=", kmin);
  size.k = kmin;
  size.groups = groups;
  layout.constraints.push_back(size);
  std::vector<double> distinct;
  for (double b : bound) {
    if (b < 1.0 && std::find(distinct.begin(), distinct.end(), b) == distinct.end()) {
      distinct.push_back(b);
    }
  }
  for (double d : distinct) {
    FinalCheckConstraint conf;
    conf.description = absl::StrCat("local groups confidence <= ", d);
    conf.max_conf = d;
    conf.groups = groups;
    for (size_t b = 0; b < bound.size(); ++b) {
      if (bound[b] == d) conf.sensitive_mask |= uint64_t{1} << b;
    }
    layout.constraints.push_back(conf);
  }
  return layout;
}

// ---------------------------------------------------------------------------------------------
// LocalRecoder

LocalRecoder::LocalRecoder(const table::Dataset* data, const PrivacyModel* model,
                           EngineOptions options)
    : data_(data),
      model_(model),
      options_(std::move(options)),
      q_(static_cast<int>(data->qids.size())),
      num_classes_(std::max(1, data->num_classes())),
      m_(data->tracked.size()),
      width_(1 + static_cast<size_t>(num_classes_) + data->tracked.size()),
      has_class_(data->class_column >= 0 || data->class_declared) {}

absl::StatusOr<std::unique_ptr<LocalRecoder>> LocalRecoder::Create(const table::Dataset* data,
                                                                   const PrivacyModel* model,
                                                                   EngineOptions options,
                                                                   LocalGroupSource* source) {
  if (model->distribution.has_value()) {
    // ValidateJobSpec refuses the combination; a model built otherwise is refused here too.
    return absl::InvalidArgumentError(
        absl::StrCat("local recoding does not support ", model->distribution->Describe(),
                     " (privacy.model ldiversity / tcloseness run with global recoding)"));
  }
  std::unique_ptr<LocalRecoder> r(new LocalRecoder(data, model, std::move(options)));
  if (source == nullptr) {
    r->owned_source_ = std::make_unique<InProcessLocalSource>(data);
    source = r->owned_source_.get();
  }
  r->source_ = source;
  RETURN_IF_ERROR(r->Initialize());
  return r;
}

bool LocalRecoder::ChildOk(const uint64_t* w) const {
  if (w[0] < kmin_) return false;
  for (size_t b = 0; b < m_; ++b) {
    const double conf = static_cast<double>(w[1 + num_classes_ + b]) / static_cast<double>(w[0]);
    if (conf > bound_[b] + kConfidenceEpsilon) return false;
  }
  return true;
}

absl::Status LocalRecoder::Initialize() {
  // The rule: every group >= the largest k; per tracked value, the smallest bound on it.
  bound_.assign(m_, 1.0);
  for (const Constraint& c : model_->constraints) {
    kmin_ = std::max(kmin_, c.k);
    for (size_t b = 0; b < m_; ++b) {
      if (c.sensitive_mask >> b & 1) bound_[b] = std::min(bound_[b], c.max_conf);
    }
  }
  std::vector<std::vector<int32_t>> bins(q_);
  if (options_.numeric.binned()) {
    const uint64_t min_records = SplitBinBound(*model_, options_.numeric.min_split_bin);
    // Within a group, labelled counts only per within-group bin of >= K records (K = kmin), and
    // never finer than the global bins' own bound.
    within_bin_ = WithinGroupBinBound(*model_, options_.numeric.min_split_bin);
    for (int a = 0; a < q_; ++a) {
      const table::QidColumn& col = data_->qids[a];
      if (col.kind != table::QidKind::kContinuous) continue;
      const std::vector<int32_t> cells = PublicCellBounds(col, options_.numeric.cells);
      if (cells.size() < 2) continue;
      ASSIGN_OR_RETURN(const std::vector<uint64_t> counts, source_->RangeCounts(a, cells));
      bins[a] = MergeCellsIntoBins(cells, counts, min_records);
    }
  }
  fine_ = std::make_unique<LocalFineMap>(data_, options_.numeric.binned(), std::move(bins));
  RETURN_IF_ERROR(source_->UseFineMap(fine_.get()));

  keys_.push_back(LocalRootKey(*data_));
  sizes_.push_back(0);
  own_.emplace_back();
  best_.emplace_back();
  // The root's statistics (counted once, by ConsiderBatch) must satisfy the rule.
  RETURN_IF_ERROR(ConsiderBatch({0}));
  const std::vector<uint64_t>& stats = own_[0];
  total_records_ = stats[0];
  RETURN_IF_ERROR(CheckRootCount(total_records_, options_.max_records));
  if (total_records_ == 0) return absl::FailedPreconditionError("the table has no records");
  if (total_records_ < kmin_) {
    return absl::FailedPreconditionError(
        absl::StrCat("privacy requirement cannot be met: local recoding needs groups of at least ",
                     kmin_, " records but the table has only ", total_records_, " records"));
  }
  for (size_t b = 0; b < m_; ++b) {
    const uint64_t s = stats[1 + num_classes_ + b];
    const double conf = static_cast<double>(s) / static_cast<double>(total_records_);
    if (conf > bound_[b] + kConfidenceEpsilon) {
      return absl::FailedPreconditionError(absl::StrCat(
          "privacy requirement cannot be met: even the most general table infers '",
          data_->tracked[b].value, "' with confidence ", s, "/", total_records_, " = ", conf,
          "; the best achievable confidence is ", conf, " (thesis Theorem 5.1.3)"));
    }
  }
  return absl::OkStatus();
}

absl::Status LocalRecoder::ConsiderBatch(const std::vector<int32_t>& groups) {
  if (groups.empty()) return absl::OkStatus();
  std::vector<LocalGroupRef> refs;
  refs.reserve(groups.size());
  for (int32_t g : groups) refs.push_back({g, keys_[g]});
  ASSIGN_OR_RETURN(const std::vector<std::vector<uint64_t>> stats, source_->GroupStatsBatch(refs));
  if (stats.size() != groups.size()) {
    return absl::InternalError("local recoding: a statistics batch has the wrong length");
  }
  // Binned continuous attributes: merge the group's bins into within-group bins of >= K records
  // (left to right, a short tail joins the last), then ask for their labelled words.
  std::vector<LocalRangeQuery> queries;
  std::vector<std::pair<size_t, int>> query_of;  // (index in groups, attribute)
  for (size_t i = 0; i < groups.size(); ++i) {
    const int32_t g = groups[i];
    if (stats[i].size() != LocalGroupStatsLength(*data_, *fine_, keys_[g])) {
      return absl::InternalError("local recoding: group statistics have the wrong length");
    }
    if (!fine_->binned() || stats[i][0] == 0) continue;
    size_t off = width_;
    for (int a = 0; a < q_; ++a) {
      const int fine = fine_->FineCount(a, keys_[g][a]);
      const bool counts_only = data_->qids[a].kind == table::QidKind::kContinuous;
      if (counts_only && fine > 0) {
        std::vector<int32_t> cells(static_cast<size_t>(fine) + 1);
        for (int f = 0; f <= fine; ++f) cells[f] = f;
        const std::vector<uint64_t> counts(stats[i].begin() + static_cast<ptrdiff_t>(off),
                                           stats[i].begin() + static_cast<ptrdiff_t>(off + fine));
        std::vector<int32_t> bounds = MergeCellsIntoBins(cells, counts, within_bin_);
        if (bounds.size() >= 3) {
          queries.push_back({g, keys_[g], a, std::move(bounds)});
          query_of.emplace_back(i, a);
        }
      }
      off += static_cast<size_t>(fine) * (counts_only ? 1 : width_);
    }
  }
  std::vector<std::vector<std::pair<std::vector<int32_t>, std::vector<uint64_t>>>> ranges(
      groups.size());
  if (!queries.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::vector<uint64_t>> words, source_->RangeStatsBatch(queries));
    if (words.size() != queries.size()) {
      return absl::InternalError("local recoding: a range batch has the wrong length");
    }
    for (size_t j = 0; j < queries.size(); ++j) {
      const auto [i, a] = query_of[j];
      if (words[j].size() != (queries[j].bounds.size() - 1) * width_) {
        return absl::InternalError("local recoding: range statistics have the wrong length");
      }
      if (ranges[i].empty()) ranges[i].resize(q_);
      ranges[i][a] = {std::move(queries[j].bounds), std::move(words[j])};
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) Consider(groups[i], stats[i], ranges[i]);
  return absl::OkStatus();
}

void LocalRecoder::Consider(
    int32_t g, const std::vector<uint64_t>& stats,
    const std::vector<std::pair<std::vector<int32_t>, std::vector<uint64_t>>>& ranges) {
  const uint64_t n = stats[0];
  sizes_[g] = n;
  own_[g].assign(stats.begin(), stats.begin() + static_cast<ptrdiff_t>(width_));
  if (n == 0) {
    final_.push_back(g);
    return;
  }
  const int nc = num_classes_;
  const std::vector<uint64_t> parent(stats.begin() + 1, stats.begin() + 1 + nc);
  int classes_present = 0;
  for (uint64_t c : parent) classes_present += c > 0;
  Best best;
  CandidateRank best_rank;
  LocalRule rule;
  rule.kmin = kmin_;
  rule.bound = bound_;
  rule.has_anonymity = model_->has_anonymity;
  rule.score = options_.score;
  auto consider = [&](int a, int c, const std::vector<const uint64_t*>& kids,
                      std::vector<int> child_of_fine, bool disclosure = false) {
    std::optional<LocalChildrenScore> scored =
        ScoreLocalChildren(rule, static_cast<size_t>(nc), m_, stats.data(), kids, a, c, disclosure);
    if (!scored) return;
    if (best.attr < 0 || RanksAbove(scored->rank, best_rank)) {
      best_rank = scored->rank;
      best.attr = a;
      best.c = c;
      best.score = scored->rank.score;
      best.info_gain = scored->info_gain;
      best.child_sizes = std::move(scored->sizes);
      best.child_of_fine = std::move(child_of_fine);
    }
  };
  const bool allowed = !options_.beneficial || classes_present > 1;
  size_t off = width_;
  for (int a = 0; a < q_ && allowed; ++a) {
    const int fine = fine_->FineCount(a, keys_[g][a]);
    const bool binned_continuous =
        fine_->binned() && data_->qids[a].kind == table::QidKind::kContinuous;
    const uint64_t* block = stats.data() + off;
    off += static_cast<size_t>(fine) * (binned_continuous ? 1 : width_);
    if (fine == 0) continue;
    switch (data_->qids[a].kind) {
      case table::QidKind::kTaxonomy: {
        std::vector<const uint64_t*> kids;
        std::vector<int> map(fine);
        for (int f = 0; f < fine; ++f) {
          kids.push_back(block + static_cast<size_t>(f) * width_);
          map[f] = f;
        }
        consider(a, 0, kids, std::move(map));
        break;
      }
      case table::QidKind::kContinuous: {
        // Binned: the within-group bins (their labelled words); exact: one unit per rank.
        std::vector<int32_t> unit_start;
        const uint64_t* words = block;
        if (binned_continuous) {
          if (ranges.empty() || ranges[a].first.size() < 3) break;
          unit_start = ranges[a].first;
          words = ranges[a].second.data();
        } else {
          for (int f = 0; f <= fine; ++f) unit_start.push_back(f);
        }
        const int units = static_cast<int>(unit_start.size()) - 1;
        std::vector<uint64_t> hist(static_cast<size_t>(units) * nc);
        for (int u = 0; u < units; ++u) {
          for (int k = 0; k < nc; ++k) hist[u * nc + k] = words[u * width_ + 1 + k];
          // Without a class attribute the class words are the counts (one class).
          if (!has_class_) hist[static_cast<size_t>(u) * nc] = words[u * width_];
        }
        const int32_t split = ChooseSplitRank(hist, nc, 0, has_class_);
        if (split < 0) break;
        std::vector<uint64_t> left(width_, 0), right(width_, 0);
        for (int u = 0; u < units; ++u) {
          std::vector<uint64_t>& side = u < split ? left : right;
          for (size_t w = 0; w < width_; ++w) side[w] += words[u * width_ + w];
        }
        const int threshold = unit_start[split];  // a fine index
        std::vector<int> map(fine);
        for (int f = 0; f < fine; ++f) map[f] = f < threshold ? 0 : 1;
        consider(a, threshold, {left.data(), right.data()}, std::move(map));
        break;
      }
      case table::QidKind::kSuppression: {
        std::vector<uint64_t> rest(width_);
        for (int u = 0; u < fine; ++u) {
          const uint64_t* w = block + static_cast<size_t>(u) * width_;
          if (w[0] == 0) continue;
          for (size_t i = 0; i < width_; ++i) rest[i] = stats[i] - w[i];
          std::vector<int> map(fine, 1);
          map[u] = 0;
          consider(a, u, {w, rest.data()}, std::move(map), /*disclosure=*/true);
        }
        break;
      }
    }
  }
  if (best.attr < 0) {
    final_.push_back(g);
    return;
  }
  queue_.push_back(g);
  best_[g] = std::move(best);
}

void LocalRecoder::ApplyBest(int32_t g, std::vector<LocalSplit>* splits,
                             std::vector<int32_t>* created) {
  Best best = std::move(best_[g]);
  best_[g] = Best();
  const int a = best.attr;
  const LocalValue value = keys_[g][a];
  const table::QidColumn& col = data_->qids[a];
  const size_t children = best.child_sizes.size();
  std::vector<LocalValue> child_values(children, value);
  switch (col.kind) {
    case table::QidKind::kTaxonomy:
      for (size_t c = 0; c < children; ++c) {
        child_values[c].node = col.taxonomy->children(value.node)[c];
      }
      break;
    case table::QidKind::kContinuous: {
      const int32_t t = fine_->FineStartRank(a, value, best.c);
      child_values[0].hi = t;
      child_values[1].lo = t;
      break;
    }
    case table::QidKind::kSuppression:
      child_values[0].node = best.c;
      child_values[1].node = -1;
      break;
  }
  std::vector<int32_t> new_ids(children, -1);
  for (size_t c = 0; c < children; ++c) {
    if (best.child_sizes[c] == 0) continue;
    new_ids[c] = static_cast<int32_t>(keys_.size());
    created->push_back(new_ids[c]);
    std::vector<LocalValue> key = keys_[g];
    key[a] = child_values[c];
    keys_.push_back(std::move(key));
    sizes_.push_back(best.child_sizes[c]);
    own_.emplace_back();
    best_.emplace_back();
  }
  splits->push_back({g, keys_[g], a, best.child_of_fine, new_ids});

  fedanon::v1::SpecializationStep step;
  step.set_round(static_cast<uint32_t>(steps_.size() + 1));
  step.set_attribute(col.name);
  step.set_value(col.kind == table::QidKind::kSuppression
                     ? absl::StrCat(options_.suppression_token, " -> ", col.values[best.c])
                     : Label(a, value));
  for (size_t c = 0; c < children; ++c) {
    if (new_ids[c] >= 0) step.add_children(Label(a, child_values[c]));
  }
  step.set_score(best.score);
  step.set_info_gain(best.info_gain);
  step.set_records(sizes_[g]);
  steps_.push_back(step);
}

absl::StatusOr<std::string> LocalRecoder::Run() {
  std::string reason = "no valid candidate left";
  while (!queue_.empty()) {
    // One wave: every queued group, best score first, ties to the older group.
    std::vector<int32_t> wave = std::exchange(queue_, {});
    std::sort(wave.begin(), wave.end(), [this](int32_t x, int32_t y) {
      return best_[x].score > best_[y].score || (best_[x].score == best_[y].score && x < y);
    });
    std::vector<LocalSplit> splits;
    std::vector<int32_t> created;
    for (int32_t g : wave) {
      if (options_.max_rounds && steps_.size() >= options_.max_rounds) {
        reason = "reached max_rounds";
        best_[g] = Best();
        final_.push_back(g);
        continue;
      }
      ApplyBest(g, &splits, &created);
    }
    if (!splits.empty()) RETURN_IF_ERROR(source_->SplitGroups(splits));
    RETURN_IF_ERROR(ConsiderBatch(created));
    if (options_.on_step) {
      for (size_t i = steps_.size() - splits.size(); i < steps_.size(); ++i) {
        options_.on_step(steps_[i], final_.size() + queue_.size());
      }
    }
    if (reason == "reached max_rounds") {
      for (int32_t g : queue_) {
        best_[g] = Best();
        final_.push_back(g);
      }
      queue_.clear();
    }
  }
  std::sort(final_.begin(), final_.end());
  return reason;
}

double LocalRecoder::DiscernibilityRatio() const {
  long double sum = 0;
  for (int32_t g : final_) {
    const long double s = static_cast<long double>(sizes_[g]);
    sum += s * s;
  }
  const long double n = static_cast<long double>(total_records_);
  return static_cast<double>(sum / (n * n));
}

void LocalRecoder::FillReport(const std::string& stop_reason, fedanon::v1::Report* report) const {
  report->set_recoding(fedanon::v1::RECODING_LOCAL);
  report->set_groups(final_.size());
  // One step per split group: thousands at scale (9,449 for 1M generated records), whose JSON
  // cost more memory than the run itself; the report keeps the first kMaxReportedLocalSteps.
  const size_t listed = std::min<size_t>(steps_.size(), kMaxReportedLocalSteps);
  for (size_t i = 0; i < listed; ++i) *report->add_steps() = steps_[i];
  uint64_t smallest = total_records_;
  double largest_conf = 0;
  for (int32_t g : final_) {
    smallest = std::min(smallest, sizes_[g]);
    for (size_t b = 0; b < m_; ++b) {
      if (bound_[b] >= 1.0 && !model_->has_confidence) continue;
      bool bounded = false;
      for (const Constraint& c : model_->constraints) bounded |= (c.sensitive_mask >> b & 1) != 0;
      if (!bounded) continue;
      largest_conf = std::max(largest_conf, static_cast<double>(own_[g][1 + num_classes_ + b]) /
                                                static_cast<double>(sizes_[g]));
    }
  }
  for (int a = 0; a < q_; ++a) {
    std::vector<LocalValue> values;
    for (int32_t g : final_) values.push_back(keys_[g][a]);
    std::sort(values.begin(), values.end(), [](const LocalValue& x, const LocalValue& y) {
      return std::tie(x.node, x.lo, x.hi) < std::tie(y.node, y.lo, y.hi);
    });
    values.erase(std::unique(values.begin(), values.end()), values.end());
    auto* cut = report->add_cut();
    cut->set_attribute(data_->qids[a].name);
    for (const LocalValue& v : values) cut->add_values(Label(a, v));
  }
  report->set_smallest_group(smallest);
  report->set_largest_confidence(largest_conf);
  report->set_discernibility_ratio(DiscernibilityRatio());
  report->set_constraints_checked(model_->constraints.size());
  report->set_stop_reason(listed == steps_.size()
                              ? stop_reason
                              : absl::StrCat(stop_reason, " (", steps_.size(),
                                             " specializations; the report lists the first ",
                                             listed, ")"));
  report->set_numeric_split(options_.numeric.mode);
}

absl::Status ForEachLocalReleasedRow(
    const fedanon::v1::JobSpec& /*spec*/, const table::Dataset& data, const LocalRecoder& recoder,
    const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  return ForEachLocalReleasedRow(
      data, recoder.suppression_token(), recoder.final_groups(),
      [&recoder](int32_t g) -> const std::vector<LocalValue>& { return recoder.Key(g); },
      recoder.GroupOfRecords(), columns, emit);
}

absl::Status ForEachLocalReleasedRow(
    const table::Dataset& data, const std::string& suppression_token,
    const std::vector<int32_t>& groups,
    const std::function<const std::vector<LocalValue>&(int32_t)>& key_of,
    const std::vector<int32_t>& group_of, const std::vector<int>& columns,
    const std::function<void(const std::vector<std::string_view>&)>& emit) {
  const size_t q = data.qids.size();
  std::vector<int> qid_of_column(data.header.size(), -1);
  for (size_t a = 0; a < q; ++a) qid_of_column[data.qids[a].csv_column] = static_cast<int>(a);
  // Labels per final group.
  std::vector<int32_t> index_of_group;
  std::vector<std::string> labels(groups.size() * q);
  for (size_t i = 0; i < groups.size(); ++i) {
    if (index_of_group.size() <= static_cast<size_t>(groups[i])) {
      index_of_group.resize(groups[i] + 1, -1);
    }
    index_of_group[groups[i]] = static_cast<int32_t>(i);
    for (size_t a = 0; a < q; ++a) {
      labels[i * q + a] =
          LocalLabel(data, suppression_token, static_cast<int>(a), key_of(groups[i])[a]);
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::ReopenSource(data));
  std::vector<std::string_view> fields, row;
  ASSIGN_OR_RETURN(bool has_header, reader->Next(&fields));
  if (!has_header) return absl::InternalError("the input changed while anonymizing");
  size_t line = 0, record = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&fields));
    if (!more) break;
    if (line >= data.kept.size() || fields.size() != data.header.size()) {
      return absl::InternalError("the input changed while anonymizing");
    }
    if (!data.kept[line++]) continue;
    if (record >= data.num_records || group_of[record] < 0 ||
        static_cast<size_t>(group_of[record]) >= index_of_group.size() ||
        index_of_group[group_of[record]] < 0) {
      return absl::InternalError("the input changed while anonymizing");
    }
    const size_t i = static_cast<size_t>(index_of_group[group_of[record++]]);
    row.clear();
    for (int c : columns) {
      const int a = qid_of_column[c];
      row.push_back(a < 0 ? fields[c] : std::string_view(labels[i * q + a]));
    }
    emit(row);
  }
  if (record != data.num_records) return absl::InternalError("the input changed while anonymizing");
  return absl::OkStatus();
}

}  // namespace fedanon::engine
