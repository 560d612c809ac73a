#include "common/engine/tips.h"

#include <algorithm>

#include "common/engine/count_source.h"

namespace fedanon::common {
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

}  // namespace

std::string PackKey(const std::vector<NodeIndex>& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(NodeIndex));
}

Tips::Tips(const Dataset* data, const std::vector<AttributeHierarchy>* hierarchies)
    : data_(data), hier_(hierarchies), links_(hierarchies->size()) {
  std::vector<NodeIndex> root_key(hierarchies->size(), 0);
  std::vector<uint32_t> all(data->num_records);
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
  const std::vector<int32_t>& codes = data_->qids[attr].codes;
  std::vector<int32_t> created;
  std::vector<int32_t> link = Link(attr, node);  // copy: AddPartition appends to links
  Link(attr, node).clear();
  std::vector<std::vector<uint32_t>> split(kids.size());
  for (int32_t p : link) {
    if (!parts_[p].alive) continue;
    for (auto& s : split) s.clear();
    for (uint32_t r : parts_[p].records) split[h.ChildOfRecord(node, c, codes[r])].push_back(r);
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
  const std::vector<int32_t>& codes = data_->qids[attr].codes;
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
  uint64_t* w = out->data() + base;
  const std::vector<int32_t>& codes = data_->qids[request.attr].codes;
  for (size_t r = 0; r < data_->num_records; ++r) {
    const int32_t code = codes[r];
    if (code < bounds.front() || code >= bounds.back()) continue;
    const size_t range = static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), code) -
                                             bounds.begin() - 1);
    const size_t cls = request.labelled && !data_->class_codes.empty() ? data_->class_codes[r] : 0;
    ++w[range * nc + cls];
  }
}

std::vector<uint64_t> Tips::NodeClassCounts(int attr, NodeIndex node) const {
  const AttributeHierarchy& h = (*hier_)[attr];
  const int nc = std::max(1, data_->num_classes());
  const int fine = h.FineChildCount(node);
  std::vector<uint64_t> counts(static_cast<size_t>(fine) * nc, 0);
  const auto* link = LinkOrNull(attr, node);
  if (link == nullptr || fine == 0) return counts;
  const std::vector<int32_t>& codes = data_->qids[attr].codes;
  for (int32_t p : *link) {
    if (!parts_[p].alive) continue;
    for (uint32_t r : parts_[p].records) {
      const int cls = data_->class_codes.empty() ? 0 : data_->class_codes[r];
      ++counts[static_cast<size_t>(h.FineChildOf(node, codes[r])) * nc + cls];
    }
  }
  return counts;
}

void Tips::AppendGroupStats(const std::vector<NodeIndex>& key, std::vector<uint64_t>* out) const {
  const size_t m = data_->tracked.size();
  const size_t stride = 1 + m;
  const size_t base = out->size();
  // The refinable attributes of this key, each with its record codes, fine-child offset and a
  // direct way to the fine child of a code (a table over the taxonomy, the split rank, or the
  // hierarchy's own lookup for a ⊥ node).
  struct Active {
    const AttributeHierarchy* h;
    NodeIndex node;
    const int32_t* codes;
    size_t offset;
    QidKind kind;
    int32_t split;
    std::vector<int32_t> table;
    int Fine(int32_t code) const {
      switch (kind) {
        case QidKind::kTaxonomy:
          return table[code];
        case QidKind::kContinuous:
          return code < split ? 0 : 1;
        case QidKind::kSuppression:
          break;
      }
      return h->FineChildOf(node, code);
    }
  };
  std::vector<Active> active;
  size_t words = stride;
  for (size_t a = 0; a < key.size(); ++a) {
    const AttributeHierarchy& h = (*hier_)[a];
    const int fine = h.FineChildCount(key[a]);
    if (fine == 0) continue;
    Active act{&h, key[a], data_->qids[a].codes.data(), words, h.kind(), h.node(key[a]).split_rank,
               {}};
    if (act.kind == QidKind::kTaxonomy) {
      act.table.resize(h.column().taxonomy->size());
      for (size_t t = 0; t < act.table.size(); ++t) {
        act.table[t] = h.FineChildOf(key[a], static_cast<int32_t>(t));
      }
    }
    active.push_back(std::move(act));
    words += stride * fine;
  }
  out->resize(base + words, 0);
  const int32_t p = FindPartition(key);
  if (p < 0) return;
  uint64_t* w = out->data() + base;
  const uint64_t* bits_of = data_->sensitive_bits.data();
  for (uint32_t r : parts_[p].records) {
    const uint64_t bits = m == 0 ? 0 : bits_of[r];
    w[0] += 1;
    for (uint64_t b = bits; b != 0; b &= b - 1) w[1 + __builtin_ctzll(b)] += 1;
    for (const Active& act : active) {
      uint64_t* cell = w + act.offset + stride * act.Fine(act.codes[r]);
      cell[0] += 1;
      for (uint64_t b = bits; b != 0; b &= b - 1) cell[1 + __builtin_ctzll(b)] += 1;
    }
  }
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
  return SatAdd(words, SatMul(request.released_groups.size(),
                              static_cast<size_t>(request.released_combinations)));
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
  for (const auto& key : request.group_keys) tips.AppendGroupStats(key, out);
  if (SatMul(request.released_groups.size(), static_cast<size_t>(request.released_combinations)) >
      kMaxReleasedWords) {
    return;  // beyond any legitimate request: the caller's length check fails
  }
  for (const auto& key : request.released_groups) {
    tips.AppendReleasedCounts(key, request.released_combinations, out);
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

}  // namespace fedanon::common
