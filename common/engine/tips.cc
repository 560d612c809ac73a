#include "common/engine/tips.h"

#include <algorithm>
#include <thread>

#include "common/base/huge_pages.h"
#include "common/engine/count_source.h"

namespace fedanon::engine {
namespace {

// The most words of released counts one holder computes for a request (as the leader's bound):
// a request beyond it, or whose product of sizes overflows, gets no released counts, so the
// caller's length check fails instead of a huge allocation or an out-of-bounds write.
constexpr uint64_t kMaxReleasedWords = 50'000'000;

// a + b and a * b, saturating at SIZE_MAX, so that a length computed from a hostile request never
// wraps around to a small number.
size_t SatAdd(size_t a, size_t b) {
  size_t r;
  return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}
size_t SatMul(size_t a, size_t b) {
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

// Below this many records, a statistic is counted by one thread.
constexpr size_t kParallelRecords = size_t{1} << 16;

bool HasTwoCores() {
  static const bool two = std::thread::hardware_concurrency() >= 2;
  return two;
}

}  // namespace

std::string PackKey(const std::vector<NodeIndex>& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(NodeIndex));
}

Tips::Tips(const table::Dataset* data, const std::vector<AttributeHierarchy>* hierarchies)
    : data_(data), hier_(hierarchies), links_(hierarchies->size()) {
  std::vector<NodeIndex> root_key(hierarchies->size(), 0);
  std::vector<uint32_t> all;
  base::ResizeWithHugePages(all, data->num_records);
  for (uint32_t r = 0; r < all.size(); ++r) all[r] = r;
  AddPartition(std::move(root_key), std::move(all));
}

std::vector<int32_t>& Tips::Link(int attr, NodeIndex node) {
  auto& per_attr = links_[attr];
  if (per_attr.size() <= static_cast<size_t>(node)) per_attr.resize(node + 1);
  return per_attr[node];
}

const std::vector<int32_t>* Tips::LinkOrNull(int attr, NodeIndex node) const {
  const auto& per_attr = links_[attr];
  if (per_attr.size() <= static_cast<size_t>(node)) return nullptr;
  return &per_attr[node];
}

int32_t Tips::AddPartition(std::vector<NodeIndex> key, std::vector<uint32_t> records) {
  const int32_t id = static_cast<int32_t>(parts_.size());
  for (size_t a = 0; a < key.size(); ++a) Link(static_cast<int>(a), key[a]).push_back(id);
  by_key_.emplace(PackKey(key), id);
  parts_.push_back({std::move(key), std::move(records), true});
  return id;
}

int32_t Tips::FindPartition(const std::vector<NodeIndex>& key) const {
  auto it = by_key_.find(PackKey(key));
  return it == by_key_.end() ? -1 : it->second;
}

std::vector<int32_t> Tips::Specialize(int attr, NodeIndex node, int c) {
  const AttributeHierarchy& h = (*hier_)[attr];
  const std::vector<NodeIndex>& kids = h.node(node).children;
  const int32_t* codes = data_->qids[attr].codes.data();
  auto child_of = [&](int32_t code) { return static_cast<size_t>(h.ChildOfRecord(node, c, code)); };
  std::vector<int32_t> created;
  std::vector<int32_t> link = Link(attr, node);  // copy: AddPartition appends to links
  Link(attr, node).clear();
  // Each partition in two passes: every record's child (kept when there are at most 256
  // children) and how many go to each, then the records into child vectors of their final size
  // (no vector grows and copies itself; fresh memory is touched once).
  const bool keep_children = kids.size() <= 256;
  std::vector<uint8_t> child_of_record;
  std::vector<size_t> per_child(kids.size());
  std::vector<std::vector<uint32_t>> split(kids.size());
  for (int32_t p : link) {
    if (!parts_[p].alive) continue;
    const std::vector<uint32_t>& records = parts_[p].records;
    std::fill(per_child.begin(), per_child.end(), 0);
    if (keep_children) {
      child_of_record.resize(records.size());
      for (size_t i = 0; i < records.size(); ++i) {
        const size_t k = child_of(codes[records[i]]);
        child_of_record[i] = static_cast<uint8_t>(k);
        ++per_child[k];
      }
    } else {
      for (uint32_t r : records) ++per_child[child_of(codes[r])];
    }
    for (size_t k = 0; k < kids.size(); ++k) {
      split[k] = {};
      base::ReserveWithHugePages(split[k], per_child[k]);
    }
    if (keep_children) {
      for (size_t i = 0; i < records.size(); ++i) split[child_of_record[i]].push_back(records[i]);
    } else {
      for (uint32_t r : records) split[child_of(codes[r])].push_back(r);
    }
    parts_[p].alive = false;
    by_key_.erase(PackKey(parts_[p].key));
    std::vector<NodeIndex> key = parts_[p].key;
    std::vector<uint32_t>().swap(parts_[p].records);
    for (size_t k = 0; k < kids.size(); ++k) {
      if (split[k].empty()) continue;
      key[attr] = kids[k];
      created.push_back(AddPartition(key, std::move(split[k])));
      split[k] = {};
    }
  }
  return created;
}

std::vector<uint64_t> Tips::RankClassHistogram(int attr, NodeIndex node) const {
  const HierarchyNode& n = (*hier_)[attr].node(node);
  const int nc = std::max(1, data_->num_classes());
  std::vector<uint64_t> hist(static_cast<size_t>(n.rank_hi - n.rank_lo) * nc, 0);
  const auto* link = LinkOrNull(attr, node);
  if (link == nullptr) return hist;
  const auto& codes = data_->qids[attr].codes;
  for (int32_t p : *link) {
    if (!parts_[p].alive) continue;
    for (uint32_t r : parts_[p].records) {
      const int cls = data_->class_codes.empty() ? 0 : data_->class_codes[r];
      ++hist[static_cast<size_t>(codes[r] - n.rank_lo) * nc + cls];
    }
  }
  return hist;
}

void Tips::AppendRangeCounts(const RangeCountRequest& request, std::vector<uint64_t>* out) const {
  const size_t nc = request.labelled ? std::max(1, data_->num_classes()) : 1;
  const std::vector<int32_t>& bounds = request.bounds;
  const size_t base = out->size();
  if (bounds.size() < 2) return;
  out->resize(base + (bounds.size() - 1) * nc, 0);
  const auto& codes = data_->qids[request.attr].codes;
  const uint16_t* classes =
      request.labelled && !data_->class_codes.empty() ? data_->class_codes.data() : nullptr;
  // The range of each rank in [bounds.front(), bounds.back()) looked up in a table when it is
  // not too large, else found by binary search.
  const int64_t span = int64_t{bounds.back()} - bounds.front();
  std::vector<uint32_t> range_of;
  if (span > 0 && span <= (int64_t{1} << 22) && std::is_sorted(bounds.begin(), bounds.end())) {
    range_of.resize(static_cast<size_t>(span));
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      for (int64_t x = bounds[i]; x < bounds[i + 1]; ++x) {
        range_of[static_cast<size_t>(x - bounds.front())] = static_cast<uint32_t>(i);
      }
    }
  }
  auto count = [&](size_t begin, size_t end, uint64_t* w) {
    for (size_t r = begin; r < end; ++r) {
      const int32_t code = codes[r];
      if (code < bounds.front() || code >= bounds.back()) continue;
      const size_t range =
          !range_of.empty()
              ? range_of[static_cast<size_t>(code - bounds.front())]
              : static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), code) -
                                    bounds.begin() - 1);
      ++w[range * nc + (classes != nullptr ? classes[r] : 0)];
    }
  };
  const size_t n = data_->num_records, words = (bounds.size() - 1) * nc;
  if (n < kParallelRecords || !HasTwoCores()) {
    count(0, n, out->data() + base);
    return;
  }
  std::vector<uint64_t> second(words, 0);
  std::thread worker([&] { count(n / 2, n, second.data()); });
  count(0, n / 2, out->data() + base);
  worker.join();
  for (size_t i = 0; i < words; ++i) (*out)[base + i] += second[i];
}

std::vector<uint64_t> Tips::NodeClassCounts(int attr, NodeIndex node) const {
  const AttributeHierarchy& h = (*hier_)[attr];
  const int nc = std::max(1, data_->num_classes());
  const int fine = h.FineChildCount(node);
  std::vector<uint64_t> counts(static_cast<size_t>(fine) * nc, 0);
  const auto* link = LinkOrNull(attr, node);
  if (link == nullptr || fine == 0) return counts;
  const auto& codes = data_->qids[attr].codes;
  const int32_t* table =
      h.kind() == table::QidKind::kTaxonomy ? h.TaxonomyFineTable(node).data() : nullptr;
  const uint16_t* classes = data_->class_codes.empty() ? nullptr : data_->class_codes.data();
  size_t total = 0;
  for (int32_t p : *link) {
    if (parts_[p].alive) total += parts_[p].records.size();
  }
  // Each thread counts its share of every partition's records.
  auto count = [&](int part, int parts, uint64_t* w) {
    for (int32_t p : *link) {
      if (!parts_[p].alive) continue;
      const std::vector<uint32_t>& recs = parts_[p].records;
      const size_t n = recs.size();
      for (size_t i = n * part / parts; i < n * (part + 1) / parts; ++i) {
        const uint32_t r = recs[i];
        const int cls = classes == nullptr ? 0 : classes[r];
        const int f = table != nullptr ? table[codes[r]] : h.FineChildOf(node, codes[r]);
        ++w[static_cast<size_t>(f) * nc + cls];
      }
    }
  };
  if (total < kParallelRecords || !HasTwoCores()) {
    count(0, 1, counts.data());
    return counts;
  }
  std::vector<uint64_t> second(counts.size(), 0);
  std::thread worker([&] { count(1, 2, second.data()); });
  count(0, 2, counts.data());
  worker.join();
  for (size_t i = 0; i < counts.size(); ++i) counts[i] += second[i];
  return counts;
}

namespace {

// One refinable attribute of a group key: where its fine children's cells start in the key's
// statistics and a direct way from a record's code to its fine child (a table over the taxonomy,
// the split rank, or the hierarchy's own lookup for a ⊥ node). Built before any thread starts:
// AttributeHierarchy's taxonomy tables are a lazily filled cache.
struct ActiveAttr {
  const AttributeHierarchy* h;
  NodeIndex node;
  const int32_t* codes;
  size_t offset;
  table::QidKind kind;
  int32_t split;
  const int32_t* table;
};

// The statistics of one key: its partition's records (may be empty), where its words start in
// the output, and its refinable attributes.
struct GroupPlan {
  const std::vector<uint32_t>* records = nullptr;
  size_t base = 0;
  std::vector<ActiveAttr> active;
};

// Tracked-value sets up to this many values are counted as one small index per record (the set
// of its tracked values) and expanded into per-value counts at the end.
constexpr size_t kMaxComboBits = 4;
constexpr size_t kChunk = 2048;  // records per pass over the attributes

// Adds the statistics of records [begin, end) of `plan` into `w` (the key's words).
void CountGroupRange(const GroupPlan& plan, size_t begin, size_t end, const uint64_t* bits_of,
                     size_t m, uint64_t* w) {
  const size_t stride = 1 + m;
  const uint32_t* rec = plan.records->data();
  if (m > kMaxComboBits) {
    for (size_t i = begin; i < end; ++i) {
      const uint32_t r = rec[i];
      const uint64_t bits = bits_of[r];
      w[0] += 1;
      for (uint64_t b = bits; b != 0; b &= b - 1) w[1 + __builtin_ctzll(b)] += 1;
      for (const ActiveAttr& act : plan.active) {
        int fine;
        switch (act.kind) {
          case table::QidKind::kTaxonomy:
            fine = act.table[act.codes[r]];
            break;
          case table::QidKind::kContinuous:
            fine = act.codes[r] < act.split ? 0 : 1;
            break;
          default:
            fine = act.h->FineChildOf(act.node, act.codes[r]);
        }
        uint64_t* cell = w + act.offset + stride * static_cast<size_t>(fine);
        cell[0] += 1;
        for (uint64_t b = bits; b != 0; b &= b - 1) cell[1 + __builtin_ctzll(b)] += 1;
      }
    }
    return;
  }
  // Few tracked values: count (fine child, set of tracked values) per attribute, one increment
  // per record and attribute, over chunks of records whose sets are gathered once.
  const size_t combos = size_t{1} << m;
  std::vector<uint64_t> total(combos, 0);
  std::vector<std::vector<uint64_t>> hist(plan.active.size());
  for (size_t k = 0; k < plan.active.size(); ++k) {
    const ActiveAttr& act = plan.active[k];
    hist[k].assign(static_cast<size_t>(act.h->FineChildCount(act.node)) * combos, 0);
  }
  uint8_t set[kChunk];
  for (size_t c0 = begin; c0 < end; c0 += kChunk) {
    const size_t n = std::min(kChunk, end - c0);
    const uint32_t* rs = rec + c0;
    if (m == 0) {
      std::fill(set, set + n, 0);
    } else {
      for (size_t i = 0; i < n; ++i) set[i] = static_cast<uint8_t>(bits_of[rs[i]]);
    }
    for (size_t i = 0; i < n; ++i) ++total[set[i]];
    for (size_t k = 0; k < plan.active.size(); ++k) {
      const ActiveAttr& act = plan.active[k];
      uint64_t* hk = hist[k].data();
      const int32_t* codes = act.codes;
      switch (act.kind) {
        case table::QidKind::kTaxonomy: {
          const int32_t* table = act.table;
          for (size_t i = 0; i < n; ++i)
            ++hk[(static_cast<size_t>(table[codes[rs[i]]]) << m) | set[i]];
          break;
        }
        case table::QidKind::kContinuous: {
          const int32_t split = act.split;
          for (size_t i = 0; i < n; ++i) {
            ++hk[(static_cast<size_t>(codes[rs[i]] >= split) << m) | set[i]];
          }
          break;
        }
        default:
          for (size_t i = 0; i < n; ++i) {
            ++hk[(static_cast<size_t>(act.h->FineChildOf(act.node, codes[rs[i]])) << m) | set[i]];
          }
      }
    }
  }
  auto expand = [&](const uint64_t* counts, uint64_t* cell) {
    for (size_t s = 0; s < combos; ++s) {
      const uint64_t c = counts[s];
      if (c == 0) continue;
      cell[0] += c;
      for (size_t b = 0; b < m; ++b) {
        if (s >> b & 1) cell[1 + b] += c;
      }
    }
  };
  expand(total.data(), w);
  for (size_t k = 0; k < plan.active.size(); ++k) {
    const ActiveAttr& act = plan.active[k];
    const size_t fine = static_cast<size_t>(act.h->FineChildCount(act.node));
    for (size_t f = 0; f < fine; ++f) {
      expand(hist[k].data() + f * combos, w + act.offset + stride * f);
    }
  }
}

}  // namespace

void Tips::AppendGroupStats(const std::vector<NodeIndex>& key, std::vector<uint64_t>* out) const {
  AppendGroupStats(std::vector<std::vector<NodeIndex>>{key}, out);
}

void Tips::AppendGroupStats(const std::vector<std::vector<NodeIndex>>& keys,
                            std::vector<uint64_t>* out) const {
  CountGroups(keys, -1, out);
}

void Tips::AppendAttributeBlocks(int attr, const std::vector<std::vector<NodeIndex>>& keys,
                                 std::vector<uint64_t>* out) const {
  // Counted with each group's count in front (CountGroupRange's layout), which is then dropped.
  std::vector<uint64_t> counted;
  CountGroups(keys, attr, &counted);
  const size_t stride = 1 + data_->tracked.size();
  size_t pos = 0;
  for (const std::vector<NodeIndex>& key : keys) {
    const size_t block =
        stride * static_cast<size_t>(std::max(0, (*hier_)[attr].FineChildCount(key[attr])));
    out->insert(out->end(), counted.begin() + static_cast<ptrdiff_t>(pos + stride),
                counted.begin() + static_cast<ptrdiff_t>(pos + stride + block));
    pos += stride + block;
  }
}

void Tips::CountGroups(const std::vector<std::vector<NodeIndex>>& keys, int only_attr,
                       std::vector<uint64_t>* out) const {
  const size_t m = data_->tracked.size();
  const size_t stride = 1 + m;
  const size_t region_base = out->size();
  std::vector<GroupPlan> plans;
  plans.reserve(keys.size());
  size_t words = 0;
  size_t total_records = 0;
  for (const std::vector<NodeIndex>& key : keys) {
    GroupPlan plan;
    plan.base = words;
    size_t key_words = stride;
    for (size_t a = 0; a < key.size(); ++a) {
      if (only_attr >= 0 && a != static_cast<size_t>(only_attr)) continue;
      const AttributeHierarchy& h = (*hier_)[a];
      const int fine = h.FineChildCount(key[a]);
      if (fine == 0) continue;
      ActiveAttr act{&h,        key[a],   data_->qids[a].codes.data(),
                     key_words, h.kind(), h.node(key[a]).split_rank,
                     nullptr};
      if (act.kind == table::QidKind::kTaxonomy) act.table = h.TaxonomyFineTable(key[a]).data();
      plan.active.push_back(act);
      key_words += stride * static_cast<size_t>(fine);
    }
    words += key_words;
    const int32_t p = FindPartition(key);
    if (p >= 0) {
      plan.records = &parts_[p].records;
      total_records += plan.records->size();
    }
    plans.push_back(std::move(plan));
  }
  out->resize(region_base + words, 0);
  const uint64_t* bits_of = data_->sensitive_bits.data();
  // Each thread counts its share of every key's records: the first half into `out`, the second
  // into its own words, added afterwards (counts are sums, so the result does not depend on it).
  auto count = [&](int part, int parts, uint64_t* region) {
    for (const GroupPlan& plan : plans) {
      if (plan.records == nullptr) continue;
      const size_t n = plan.records->size();
      CountGroupRange(plan, n * part / parts, n * (part + 1) / parts, bits_of, m,
                      region + plan.base);
    }
  };
  if (total_records < kParallelRecords || !HasTwoCores()) {
    count(0, 1, out->data() + region_base);
    return;
  }
  std::vector<uint64_t> second(words, 0);
  std::thread worker([&] { count(1, 2, second.data()); });
  count(0, 2, out->data() + region_base);
  worker.join();
  uint64_t* w = out->data() + region_base;
  for (size_t i = 0; i < words; ++i) w[i] += second[i];
}

size_t StatsLength(const std::vector<AttributeHierarchy>& hier, int num_classes, size_t num_tracked,
                   const StatsRequest& request) {
  const size_t nc = std::max(1, num_classes);
  const size_t stride = 1 + num_tracked;
  size_t words = 0;
  for (const RangeCountRequest& r : request.range_counts) {
    if (r.bounds.size() >= 2) words += (r.bounds.size() - 1) * (r.labelled ? nc : 1);
  }
  for (const auto& [a, n] : request.rank_histograms) {
    words = SatAdd(
        words, SatMul(static_cast<size_t>(hier[a].node(n).rank_hi - hier[a].node(n).rank_lo), nc));
  }
  for (const auto& [a, n] : request.node_class_counts) {
    words = SatAdd(words, SatMul(static_cast<size_t>(hier[a].FineChildCount(n)), nc));
  }
  for (const auto& key : request.group_keys) {
    words = SatAdd(words, stride);
    for (size_t a = 0; a < key.size(); ++a) {
      words = SatAdd(words, SatMul(stride, static_cast<size_t>(hier[a].FineChildCount(key[a]))));
    }
  }
  words = SatAdd(words, SatMul(request.released_groups.size(),
                               static_cast<size_t>(request.released_combinations)));
  for (const HistogramQuery& q : request.histograms) {
    words = SatAdd(words, HistogramWords(hier, q, request.histogram_domain));
  }
  return words;
}

size_t HistogramWords(const std::vector<AttributeHierarchy>& hier, const HistogramQuery& query,
                      uint32_t domain) {
  if (query.attr < 0) return domain;
  const AttributeHierarchy& h = hier[static_cast<size_t>(query.attr)];
  return SatMul(static_cast<size_t>(h.ChildCount(query.key[query.attr], query.candidate)),
                static_cast<size_t>(domain));
}

void AppendLocalStats(const Tips& tips, const StatsRequest& request, std::vector<uint64_t>* out) {
  for (const RangeCountRequest& r : request.range_counts) tips.AppendRangeCounts(r, out);
  for (const auto& [a, n] : request.rank_histograms) {
    const auto h = tips.RankClassHistogram(a, n);
    out->insert(out->end(), h.begin(), h.end());
  }
  for (const auto& [a, n] : request.node_class_counts) {
    const auto c = tips.NodeClassCounts(a, n);
    out->insert(out->end(), c.begin(), c.end());
  }
  tips.AppendGroupStats(request.group_keys, out);
  if (SatMul(request.released_groups.size(), static_cast<size_t>(request.released_combinations)) >
      kMaxReleasedWords) {
    return;  // beyond any legitimate request: the caller's length check fails
  }
  for (const auto& key : request.released_groups) {
    tips.AppendReleasedCounts(key, request.released_combinations, out);
  }
  for (const HistogramQuery& q : request.histograms) {
    const size_t words = HistogramWords(tips.hierarchies(), q, request.histogram_domain);
    if (words > kMaxReleasedWords) return;  // beyond any legitimate request
    tips.AppendSensitiveHistogram(q, request.histogram_domain, words, out);
  }
}

void Tips::AppendSensitiveHistogram(const HistogramQuery& query, uint32_t domain, size_t words,
                                    std::vector<uint64_t>* out) const {
  const int col = data_->distribution_column;
  if (col < 0 || static_cast<size_t>(col) >= data_->value_columns.size()) return;
  const table::Dataset::ValueColumn& column = data_->value_columns[static_cast<size_t>(col)];
  if (column.values.size() != domain || column.codes.size() != data_->num_records) return;
  const size_t base = out->size();
  out->resize(base + words, 0);
  const int32_t p = FindPartition(query.key);
  if (p < 0) return;
  const bool split = query.attr >= 0;
  const AttributeHierarchy* h = split ? &(*hier_)[static_cast<size_t>(query.attr)] : nullptr;
  const NodeIndex node = split ? query.key[static_cast<size_t>(query.attr)] : 0;
  const int32_t* codes =
      split ? data_->qids[static_cast<size_t>(query.attr)].codes.data() : nullptr;
  for (uint32_t r : parts_[p].records) {
    const size_t child =
        split ? static_cast<size_t>(h->ChildOfRecord(node, query.candidate, codes[r])) : 0;
    const size_t index = child * domain + static_cast<size_t>(column.codes[r]);
    if (index < words) ++(*out)[base + index];
  }
}

void Tips::AppendReleasedCounts(const std::vector<NodeIndex>& key, uint64_t combinations,
                                std::vector<uint64_t>* out) const {
  // Never an overflowed product: ValueCombinations() saturates, and the index below is only
  // computed when `combinations` is the exact product of this table's domain sizes.
  if (combinations > kMaxReleasedWords) return;  // the caller checks the length
  const size_t base = out->size();
  out->resize(base + combinations, 0);
  if (combinations != data_->ValueCombinations()) return;  // the caller checks the length
  const int32_t p = FindPartition(key);
  if (p < 0) return;
  for (uint32_t r : parts_[p].records) {
    uint64_t index = 0;
    for (const auto& vc : data_->value_columns) index = index * vc.values.size() + vc.codes[r];
    ++(*out)[base + index];
  }
}

absl::Status LocalCountSource::Specialize(int attr, NodeIndex node, int c,
                                          const std::vector<uint64_t>& /*new_group_sizes*/) {
  tips_->Specialize(attr, node, c);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> LocalCountSource::Collect(const StatsRequest& request) {
  std::vector<uint64_t> out;
  AppendLocalStats(*tips_, request, &out);
  return out;
}

absl::StatusOr<std::vector<uint64_t>> LocalCountSource::CollectAttributeBlocks(
    int attr, const std::vector<std::vector<NodeIndex>>& keys) {
  std::vector<uint64_t> out;
  tips_->AppendAttributeBlocks(attr, keys, &out);
  return out;
}

absl::StatusOr<std::vector<uint64_t>> CountSource::CollectAttributeBlocks(
    int /*attr*/, const std::vector<std::vector<NodeIndex>>& /*keys*/) {
  return absl::UnimplementedError("this count source answers whole group statistics only");
}

}  // namespace fedanon::engine
