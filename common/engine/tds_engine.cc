#include "common/engine/tds_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/candidate_score.h"
#include "common/engine/scores.h"

namespace fedanon::engine {
namespace {

constexpr double kSplitTieTolerance = 1e-9;

}  // namespace

absl::Status CheckRootCount(uint64_t total, uint64_t max_records) {
  if (max_records == 0 || total <= max_records) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      kRootCountAboveLimit, " ", total, " exceeds the job's limit of ", max_records,
      " records (max_records_per_party times the parties): a party's counts do not describe a "
      "table it may hold; nothing is released"));
}

int32_t ChooseSplitRank(const std::vector<uint64_t>& histogram, int num_classes, int32_t rank_lo,
                        bool has_class) {
  const int nc = std::max(1, num_classes);
  const size_t ranks = histogram.size() / nc;
  std::vector<uint64_t> total(nc, 0), left(nc, 0), right(nc, 0);
  uint64_t n = 0;
  std::vector<bool> present(ranks, false);
  size_t distinct = 0;
  for (size_t r = 0; r < ranks; ++r) {
    for (int k = 0; k < nc; ++k) {
      total[k] += histogram[r * nc + k];
      if (histogram[r * nc + k]) present[r] = true;
    }
    if (present[r]) ++distinct;
  }
  for (uint64_t t : total) n += t;
  if (distinct < 2) return -1;
  int32_t best = -1;
  double best_value = -std::numeric_limits<double>::infinity();
  bool seen_first = false;
  uint64_t left_n = 0;
  for (size_t r = 0; r < ranks; ++r) {
    if (present[r] && seen_first) {
      double value;
      if (has_class) {
        for (int k = 0; k < nc; ++k) right[k] = total[k] - left[k];
        value = InfoGain(total, {left, right});
      } else {
        const double diff = std::abs(static_cast<double>(left_n) - static_cast<double>(n - left_n));
        value = -diff;
      }
      if (value > best_value + kSplitTieTolerance) {
        best_value = value;
        best = rank_lo + static_cast<int32_t>(r);
      }
    }
    if (present[r]) seen_first = true;
    for (int k = 0; k < nc; ++k) {
      left[k] += histogram[r * nc + k];
      left_n += histogram[r * nc + k];
    }
  }
  return best;
}

TopDownSpecializer::TopDownSpecializer(const table::Dataset* data, const PrivacyModel* model,
                                       std::vector<AttributeHierarchy>* hierarchies,
                                       CountSource* source, EngineOptions options)
    : data_(data),
      model_(model),
      hier_(hierarchies),
      source_(source),
      options_(std::move(options)),
      q_(static_cast<int>(hierarchies->size())),
      stride_(1 + data->tracked.size()),
      num_classes_(std::max(1, data->num_classes())),
      has_class_(data->class_column >= 0 || data->class_declared),
      bins_(q_),
      group_links_(q_),
      node_cands_(q_),
      a_(model->constraints.size(), 0),
      c_(model->constraints.size(), 0) {
  if (model->distribution.has_value()) {
    dist_ = &*model->distribution;
    dist_checked_ = source->HoldsSensitiveDistribution();
  }
}

absl::StatusOr<std::unique_ptr<TopDownSpecializer>> TopDownSpecializer::Create(
    const table::Dataset* data, const PrivacyModel* model,
    std::vector<AttributeHierarchy>* hierarchies, CountSource* source, EngineOptions options) {
  std::unique_ptr<TopDownSpecializer> engine(
      new TopDownSpecializer(data, model, hierarchies, source, std::move(options)));
  RETURN_IF_ERROR(engine->Initialize());
  return engine;
}

std::vector<int32_t>& TopDownSpecializer::GroupLink(int attr, NodeIndex node) {
  auto& per_attr = group_links_[attr];
  if (per_attr.size() <= static_cast<size_t>(node)) per_attr.resize(node + 1);
  return per_attr[node];
}

std::vector<int32_t> TopDownSpecializer::AliveGroups(int attr, NodeIndex node) const {
  std::vector<int32_t> out;
  const auto& per_attr = group_links_[attr];
  if (per_attr.size() <= static_cast<size_t>(node)) return out;
  for (int32_t g : per_attr[node]) {
    if (group_alive_[g]) out.push_back(g);
  }
  return out;
}

absl::Status TopDownSpecializer::ComputeBins() {
  const uint64_t min_records = SplitBinBound(*model_, options_.numeric.min_split_bin);
  StatsRequest cells;
  for (int a = 0; a < q_; ++a) {
    const AttributeHierarchy& h = (*hier_)[a];
    if (h.kind() != table::QidKind::kContinuous || !source_->Owns(a)) continue;
    std::vector<int32_t> bounds = PublicCellBounds(h.column(), options_.numeric.cells);
    if (bounds.size() >= 2) cells.range_counts.push_back({a, std::move(bounds), false});
  }
  if (cells.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<uint64_t> cell_counts, source_->Collect(cells));
  if (cell_counts.size() != StatsLength(*hier_, num_classes_, data_->tracked.size(), cells)) {
    return absl::InternalError("cell counts have the wrong length");
  }
  StatsRequest labelled;
  auto pos = cell_counts.begin();
  for (const RangeCountRequest& r : cells.range_counts) {
    const std::vector<uint64_t> counts(pos, pos + static_cast<ptrdiff_t>(r.bounds.size() - 1));
    pos += static_cast<ptrdiff_t>(counts.size());
    bins_[r.attr].bounds = MergeCellsIntoBins(r.bounds, counts, min_records);
    // One bin cannot be split: its class counts (the whole table's) are not needed.
    if (bins_[r.attr].bounds.size() >= 3) {
      labelled.range_counts.push_back({r.attr, bins_[r.attr].bounds, true});
    }
  }
  if (labelled.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<uint64_t> class_counts, source_->Collect(labelled));
  if (class_counts.size() != StatsLength(*hier_, num_classes_, data_->tracked.size(), labelled)) {
    return absl::InternalError("bin class counts have the wrong length");
  }
  pos = class_counts.begin();
  for (const RangeCountRequest& r : labelled.range_counts) {
    const auto words = static_cast<ptrdiff_t>((r.bounds.size() - 1) * num_classes_);
    bins_[r.attr].class_counts.assign(pos, pos + words);
    pos += words;
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> TopDownSpecializer::BinnedSplit(int attr, NodeIndex n) const {
  const Bins& bins = bins_[attr];
  if (bins.bounds.size() < 3) return -1;  // fewer than two bins in the whole range
  const HierarchyNode& node = (*hier_)[attr].node(n);
  const auto lo = std::lower_bound(bins.bounds.begin(), bins.bounds.end(), node.rank_lo);
  const auto hi = std::lower_bound(bins.bounds.begin(), bins.bounds.end(), node.rank_hi);
  if (hi == bins.bounds.end() || *lo != node.rank_lo || *hi != node.rank_hi) {
    return absl::InternalError(absl::StrCat("interval ", (*hier_)[attr].Label(n, ""), " of ",
                                            data_->qids[attr].name, " is not a union of bins"));
  }
  const auto first = static_cast<size_t>(lo - bins.bounds.begin());
  const auto last = static_cast<size_t>(hi - bins.bounds.begin());
  if (last - first < 2) return -1;
  const std::vector<uint64_t> histogram(bins.class_counts.begin() + first * num_classes_,
                                        bins.class_counts.begin() + last * num_classes_);
  // The bins stand in for ranks: every bin holds records, so every inner boundary is a candidate.
  const int32_t split = ChooseSplitRank(histogram, num_classes_, 0, has_class_);
  return split < 0 ? -1 : bins.bounds[first + static_cast<size_t>(split)];
}

absl::Status TopDownSpecializer::DecideSplits(const std::vector<std::pair<int, NodeIndex>>& nodes) {
  StatsRequest request;
  for (const auto& [a, n] : nodes) {
    AttributeHierarchy& h = (*hier_)[a];
    if (h.kind() != table::QidKind::kContinuous) continue;
    if (!source_->Owns(a)) {
      h.SetSplit(n, source_->AnnouncedSplit(a, n));
    } else if (options_.numeric.binned()) {
      // Decided from the bins' class counts already known: no request at all.
      ASSIGN_OR_RETURN(const int32_t split, BinnedSplit(a, n));
      h.SetSplit(n, split);
      RETURN_IF_ERROR(source_->Split(a, n, split));
    } else {
      request.rank_histograms.emplace_back(a, n);
    }
  }
  if (request.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<uint64_t> hist, source_->Collect(request));
  size_t pos = 0;
  for (const auto& [a, n] : request.rank_histograms) {
    AttributeHierarchy& h = (*hier_)[a];
    const HierarchyNode& node = h.node(n);
    const size_t words = static_cast<size_t>(node.rank_hi - node.rank_lo) * num_classes_;
    if (pos + words > hist.size()) return absl::InternalError("rank histograms are truncated");
    std::vector<uint64_t> one(hist.begin() + pos, hist.begin() + pos + words);
    pos += words;
    const int32_t split = ChooseSplitRank(one, num_classes_, node.rank_lo, has_class_);
    h.SetSplit(n, split);
    RETURN_IF_ERROR(source_->Split(a, n, split));
  }
  if (pos != hist.size()) return absl::InternalError("rank histograms have trailing data");
  return absl::OkStatus();
}

absl::Status TopDownSpecializer::CollectNodesAndGroups(
    const std::vector<std::pair<int, NodeIndex>>& nodes,
    const std::vector<std::vector<NodeIndex>>& keys, const std::vector<uint64_t>& expected_sizes,
    std::vector<std::vector<uint64_t>>* node_counts, std::vector<int32_t>* new_groups) {
  StatsRequest request;
  request.node_class_counts = nodes;
  request.group_keys = keys;
  ASSIGN_OR_RETURN(const std::vector<uint64_t> stats, CollectChecked(request));
  const size_t pos = TakeNodeCounts(nodes, stats, node_counts);
  return AddGroups(keys, expected_sizes, stats, pos, new_groups);
}

absl::StatusOr<std::vector<uint64_t>> TopDownSpecializer::CollectChecked(
    const StatsRequest& request) {
  ASSIGN_OR_RETURN(std::vector<uint64_t> stats, source_->Collect(request));
  if (stats.size() != StatsLength(*hier_, num_classes_, data_->tracked.size(), request)) {
    return absl::InternalError("count statistics have the wrong length");
  }
  return stats;
}

size_t TopDownSpecializer::TakeNodeCounts(const std::vector<std::pair<int, NodeIndex>>& nodes,
                                          const std::vector<uint64_t>& stats,
                                          std::vector<std::vector<uint64_t>>* node_counts) const {
  size_t pos = 0;
  for (const auto& [a, n] : nodes) {
    const size_t words = static_cast<size_t>((*hier_)[a].FineChildCount(n)) * num_classes_;
    node_counts->emplace_back(stats.begin() + pos, stats.begin() + pos + words);
    pos += words;
  }
  return pos;
}

absl::Status TopDownSpecializer::AddGroups(const std::vector<std::vector<NodeIndex>>& keys,
                                           const std::vector<uint64_t>& expected_sizes,
                                           const std::vector<uint64_t>& stats, size_t pos,
                                           std::vector<int32_t>* ids) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::vector<NodeIndex>& key = keys[i];
    size_t words = stride_;
    const int32_t g = static_cast<int32_t>(group_alive_.size());
    stats_off_.push_back(stats_.size());
    for (int a = 0; a < q_; ++a) {
      attr_off_.push_back(static_cast<uint32_t>(words));
      words += stride_ * (*hier_)[a].FineChildCount(key[a]);
    }
    if (pos + words > stats.size()) return absl::InternalError("group statistics are truncated");
    stats_.insert(stats_.end(), stats.begin() + pos, stats.begin() + pos + words);
    pos += words;
    if (!expected_sizes.empty() && stats_[stats_off_[g]] != expected_sizes[i]) {
      return absl::InternalError(absl::StrCat("group statistics disagree with the parent counts (",
                                              stats_[stats_off_[g]], " vs ", expected_sizes[i],
                                              " records)"));
    }
    keys_.insert(keys_.end(), key.begin(), key.end());
    group_alive_.push_back(true);
    group_hist_.emplace_back();
    child_hist_.emplace_back();
    ++alive_groups_;
    for (int a = 0; a < q_; ++a) GroupLink(a, key[a]).push_back(g);
    ForgetDiscernibility(g);
    ids->push_back(g);
  }
  if (pos != stats.size()) return absl::InternalError("group statistics have trailing data");
  return absl::OkStatus();
}

absl::Status TopDownSpecializer::Initialize() {
  if (options_.numeric.binned()) RETURN_IF_ERROR(ComputeBins());
  std::vector<std::pair<int, NodeIndex>> roots;
  roots.reserve(static_cast<size_t>(q_));
  for (int a = 0; a < q_; ++a) roots.emplace_back(a, 0);
  RETURN_IF_ERROR(DecideSplits(roots));
  std::vector<std::pair<int, NodeIndex>> refinable;
  for (const auto& r : roots) {
    if ((*hier_)[r.first].CandidateCount(r.second) > 0) refinable.push_back(r);
  }
  std::vector<int32_t> ids;
  std::vector<std::vector<uint64_t>> counts;
  RETURN_IF_ERROR(
      CollectNodesAndGroups(refinable, {std::vector<NodeIndex>(q_, 0)}, {}, &counts, &ids));
  // The most general table must satisfy the model (thesis Thm. 5.1.3); otherwise nothing can.
  const uint64_t* root = stats_.data();
  total_records_ = root[0];
  RETURN_IF_ERROR(CheckRootCount(total_records_, options_.max_records));
  if (total_records_ == 0) return absl::FailedPreconditionError("the table has no records");
  for (size_t j = 0; j < model_->constraints.size(); ++j) {
    const Constraint& con = model_->constraints[j];
    a_[j] = root[0];
    if (root[0] < con.k) {
      return absl::FailedPreconditionError(absl::StrCat(
          "privacy requirement ", model_->Describe(static_cast<int>(j), *data_),
          " cannot be met: it needs groups of at least ", con.k, " records but the table has only ",
          root[0], " records; the best achievable group size is ", root[0]));
    }
    for (size_t b = 0; b < data_->tracked.size(); ++b) {
      if (!(con.sensitive_mask >> b & 1)) continue;
      const double conf = static_cast<double>(root[1 + b]) / static_cast<double>(root[0]);
      c_[j] = std::max(c_[j], conf);
      if (conf > con.max_conf + kConfidenceEpsilon) {
        return absl::FailedPreconditionError(absl::StrCat(
            "privacy requirement ", model_->Describe(static_cast<int>(j), *data_),
            " cannot be met: even the most general table infers '", data_->tracked[b].value,
            "' with confidence ", root[1 + b], "/", root[0], " = ", conf,
            "; the best achievable confidence is ", conf, " (thesis Theorem 5.1.3)"));
      }
    }
  }
  RETURN_IF_ERROR(InitializeDistribution());
  for (size_t i = 0; i < refinable.size(); ++i) {
    RETURN_IF_ERROR(AddCandidates(refinable[i].first, refinable[i].second, counts[i]));
  }
  return ResolveHistograms();
}

absl::Status TopDownSpecializer::InitializeDistribution() {
  if (dist_ == nullptr || !dist_checked_) return absl::OkStatus();
  StatsRequest request;
  request.histogram_domain = static_cast<uint32_t>(dist_->domain);
  request.histograms.push_back({std::vector<NodeIndex>(q_, 0), -1, 0});
  ASSIGN_OR_RETURN(overall_, source_->Collect(request));
  if (overall_.size() != dist_->domain) {
    return absl::InternalError("the whole table's sensitive histogram has the wrong length");
  }
  uint64_t n = 0;
  for (uint64_t c : overall_) n += c;
  if (n != total_records_) {
    return absl::InternalError(
        absl::StrCat("the sensitive histogram counts ", n, " records, the table ", total_records_));
  }
  group_hist_[0] = overall_;
  if (dist_->Holds(overall_, overall_)) return absl::OkStatus();
  // Thesis Thm. 5.1.3 for these models: the most general table is the most diverse one.
  const DistributionSummary best = SummarizeGroups(*dist_, overall_, overall_);
  std::string achievable;
  switch (dist_->kind) {
    case SensitiveDistribution::Kind::kRecursive:
      achievable =
          absl::StrCat("r_1 / (r_", dist_->l, " + ... + r_m) = ", best.largest_recursive_ratio,
                       ", not below c = ", dist_->c);
      break;
    case SensitiveDistribution::Kind::kEntropy:
      achievable = absl::StrCat("the best achievable is entropy ", best.smallest_diversity,
                                "-diversity (e^entropy of the whole table)");
      break;
    default:
      achievable =
          absl::StrCat("the best achievable is ", best.smallest_diversity, " distinct values");
  }
  return absl::FailedPreconditionError(
      absl::StrCat("privacy requirement ", dist_->Describe(),
                   " cannot be met: even the most general table (every record in one group) "
                   "fails it: ",
                   achievable));
}

void TopDownSpecializer::NoteHistogramsNeeded(const Candidate& cand,
                                              const std::vector<int32_t>& groups) {
  const AttributeHierarchy& h = (*hier_)[cand.attr];
  const int fine = h.FineChildCount(cand.node);
  const int children = h.ChildCount(cand.node, cand.c);
  const bool disclosure = h.kind() == table::QidKind::kSuppression;
  std::vector<uint64_t> sizes(children);
  for (int32_t g : groups) {
    std::fill(sizes.begin(), sizes.end(), 0);
    const uint64_t* fs = FineStats(g, cand.attr);
    if (disclosure) {  // value c and the rest (see Evaluate)
      sizes[0] = fs[static_cast<size_t>(cand.c) * stride_];
      sizes[1] = GroupSize(g) - std::min(GroupSize(g), sizes[0]);
    } else {
      for (int f = 0; f < fine; ++f) {
        sizes[h.ChildOfFine(cand.node, cand.c, f)] += fs[static_cast<size_t>(f) * stride_];
      }
    }
    int nonempty = 0, only = -1;
    for (int ch = 0; ch < children; ++ch) {
      if (sizes[ch] > 0) ++nonempty, only = ch;
    }
    if (nonempty == 1 && !group_hist_[g].empty()) {
      // The one child is the whole group: its histogram is the group's, nothing to ask.
      std::vector<uint64_t> hist(static_cast<size_t>(children) * dist_->domain, 0);
      std::copy(group_hist_[g].begin(), group_hist_[g].end(),
                hist.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(only) * dist_->domain));
      child_hist_[g][cand.id] = std::move(hist);
      continue;
    }
    pending_hist_.emplace_back(cand.id, g);
  }
}

absl::Status TopDownSpecializer::ResolveHistograms() {
  const std::vector<std::pair<int, int32_t>> pending = std::exchange(pending_hist_, {});
  size_t next = 0;
  while (next < pending.size()) {
    // One Collect per kMaxHistogramWords words of answers (a holder refuses more).
    StatsRequest request;
    request.histogram_domain = static_cast<uint32_t>(dist_->domain);
    std::vector<std::pair<int, int32_t>> asked;
    size_t words = 0;
    for (; next < pending.size(); ++next) {
      const auto [id, g] = pending[next];
      const Candidate& c = cands_[id];
      // A candidate found invalid since (another group's child too small) needs no histogram.
      if (!c.alive || !c.valid || !group_alive_[g]) continue;
      HistogramQuery query{KeyOf(g), c.attr, c.c};
      const size_t w = HistogramWords(*hier_, query, request.histogram_domain);
      if (!asked.empty() && words + w > kMaxHistogramWords) break;
      words += w;
      request.histograms.push_back(std::move(query));
      asked.emplace_back(id, g);
    }
    if (asked.empty()) break;
    RETURN_IF_ERROR(CollectHistograms(request, asked));
  }
  return absl::OkStatus();
}

absl::Status TopDownSpecializer::CollectHistograms(
    const StatsRequest& request, const std::vector<std::pair<int, int32_t>>& asked) {
  ASSIGN_OR_RETURN(const std::vector<uint64_t> hist, source_->Collect(request));
  if (hist.size() != StatsLength(*hier_, num_classes_, data_->tracked.size(), request)) {
    return absl::InternalError("sensitive histograms have the wrong length");
  }
  size_t pos = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    const auto [id, g] = asked[i];
    const size_t words = HistogramWords(*hier_, request.histograms[i], request.histogram_domain);
    std::vector<uint64_t> one(hist.begin() + static_cast<ptrdiff_t>(pos),
                              hist.begin() + static_cast<ptrdiff_t>(pos + words));
    pos += words;
    Candidate& cand = cands_[id];
    for (size_t at = 0; at < words && cand.valid; at += dist_->domain) {
      const absl::Span<const uint64_t> child(one.data() + at, dist_->domain);
      if (!dist_->Holds(child, overall_)) cand.valid = false;  // stays invalid (union closure)
    }
    child_hist_[g][id] = std::move(one);
  }
  return absl::OkStatus();
}

absl::Status TopDownSpecializer::AddCandidates(int attr, NodeIndex node,
                                               const std::vector<uint64_t>& fine_counts) {
  const AttributeHierarchy& h = (*hier_)[attr];
  const int count = h.CandidateCount(node);
  if (count == 0) return absl::OkStatus();
  if (fine_counts.size() != static_cast<size_t>(h.FineChildCount(node)) * num_classes_) {
    return absl::InternalError("node class counts have the wrong size");
  }
  const std::vector<int32_t> groups = AliveGroups(attr, node);
  auto& per_attr = node_cands_[attr];
  if (per_attr.size() <= static_cast<size_t>(node)) per_attr.resize(node + 1);
  const std::vector<int> all_positions = AllPositions(attr);
  // A ⊥ node has one candidate per hidden value: its class counts are summed once, so that each
  // candidate costs O(classes), not O(hidden values).
  const bool disclosure = h.kind() == table::QidKind::kSuppression;
  const std::vector<uint64_t> parent =
      disclosure ? ParentClassCounts(fine_counts, num_classes_) : std::vector<uint64_t>();
  work_ += disclosure ? fine_counts.size() : 0;
  for (int c = 0; c < count; ++c) {
    Candidate cand;
    cand.id = static_cast<int>(cands_.size());
    cand.attr = attr;
    cand.node = node;
    cand.c = c;
    SplitMeasures m;
    if (disclosure) {
      m = MeasureDisclosure(parent, fine_counts, c, num_classes_);
      work_ += static_cast<uint64_t>(num_classes_);
    } else {
      m = MeasureSplit(h, node, c, fine_counts, num_classes_);
      work_ += fine_counts.size();
    }
    SetSplitMeasures(m, cand);
    cand.min_child.assign(all_positions.size(), std::numeric_limits<uint64_t>::max());
    cand.max_conf.assign(all_positions.size(), 0.0);
    if (cand.records == 0 || !m.changes_table) cand.valid = false;
    if (cand.valid) Evaluate(cand, groups, all_positions);
    const int id = static_cast<int>(cands_.size());
    cands_.push_back(std::move(cand));
    per_attr[node].push_back(id);
    active_.push_back(id);
  }
  return absl::OkStatus();
}

std::vector<int> TopDownSpecializer::AllPositions(int attr) const {
  std::vector<int> positions(model_->by_attr[attr].size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int>(i);
  return positions;
}

void TopDownSpecializer::SetSplitMeasures(const SplitMeasures& m, Candidate& cand) {
  cand.records = m.records;
  cand.distortion_units = m.distortion_units;
  cand.beneficial = m.beneficial;
  cand.info_gain = m.info_gain;
  cand.split_info = m.split_info;
}

void TopDownSpecializer::Evaluate(Candidate& cand, const std::vector<int32_t>& groups,
                                  const std::vector<int>& positions) {
  const AttributeHierarchy& h = (*hier_)[cand.attr];
  const int fine = h.FineChildCount(cand.node);
  const int children = h.ChildCount(cand.node, cand.c);
  // Disclosing hidden value c of a ⊥ node: child 0 is value c, child 1 the rest of the group
  // (its totals minus value c), O(1) per group instead of a pass over every hidden value.
  const bool disclosure = h.kind() == table::QidKind::kSuppression;
  std::vector<int> child_of_fine(disclosure ? 0 : fine);
  for (int f = 0; f < static_cast<int>(child_of_fine.size()); ++f) {
    child_of_fine[f] = h.ChildOfFine(cand.node, cand.c, f);
  }
  const size_t entry_words = static_cast<size_t>(children) * stride_;
  absl::flat_hash_map<std::string, uint32_t> index;
  std::vector<uint64_t> agg;
  std::string proj;
  for (int jp : positions) {
    const Constraint& con = model_->constraints[model_->by_attr[cand.attr][jp]];
    index.clear();
    agg.clear();
    for (int32_t g : groups) {
      proj.clear();
      for (int attr : con.attrs) {
        if (attr == cand.attr) continue;
        const NodeIndex n = KeyAt(g, attr);
        proj.append(reinterpret_cast<const char*>(&n), sizeof(n));
      }
      auto [it, inserted] = index.try_emplace(proj, static_cast<uint32_t>(agg.size()));
      if (inserted) agg.resize(agg.size() + entry_words, 0);
      uint64_t* entry = agg.data() + it->second;
      const uint64_t* fs = FineStats(g, cand.attr);
      if (disclosure) {
        const uint64_t* total = stats_.data() + stats_off_[g];  // [count, sensitive_1..m]
        const uint64_t* u = fs + static_cast<size_t>(cand.c) * stride_;
        for (size_t w = 0; w < stride_; ++w) {
          entry[w] += u[w];
          entry[stride_ + w] += total[w] >= u[w] ? total[w] - u[w] : 0;
        }
        work_ += 1;
        continue;
      }
      for (int f = 0; f < fine; ++f) {
        uint64_t* dst = entry + child_of_fine[f] * stride_;
        const uint64_t* src = fs + f * stride_;
        for (size_t w = 0; w < stride_; ++w) dst[w] += src[w];
      }
      work_ += static_cast<uint64_t>(fine);
    }
    uint64_t min_child = std::numeric_limits<uint64_t>::max();
    double max_conf = 0;
    bool ok = true;
    for (size_t e = 0; e < agg.size(); e += stride_) {
      const uint64_t n = agg[e];
      if (n == 0) continue;
      min_child = std::min(min_child, n);
      if (n < con.k) ok = false;
      for (size_t b = 0; b + 1 < stride_; ++b) {
        if (!(con.sensitive_mask >> b & 1)) continue;
        const double conf = static_cast<double>(agg[e + 1 + b]) / static_cast<double>(n);
        max_conf = std::max(max_conf, conf);
        if (conf > con.max_conf + kConfidenceEpsilon) ok = false;
      }
    }
    cand.min_child[jp] = std::min(cand.min_child[jp], min_child);
    cand.max_conf[jp] = std::max(cand.max_conf[jp], max_conf);
    if (!ok) {
      cand.valid = false;
      return;  // anti-monotone: it stays invalid for the rest of the run
    }
    // Every child in these groups holds >= k records: its sensitive histogram may be asked.
    if (con.distribution && dist_checked_) NoteHistogramsNeeded(cand, groups);
  }
}

double TopDownSpecializer::Score(const Candidate& cand) const {
  ScoreInputs in;
  in.distortion_units = cand.distortion_units;
  in.info_gain = cand.info_gain;
  in.split_info = cand.split_info;
  if (ScoreNeedsPrivLoss(options_.score)) in.priv_loss = PrivLoss(cand);
  if (ScoreNeedsDiscernibility(options_.score)) in.discernibility = DiscernibilityGain(cand);
  return CandidateScore(options_.score, in);
}

uint64_t TopDownSpecializer::DiscernibilityGain(const Candidate& cand) const {
  // mohammed2009 Example 3 computes Score(v) over the groups v's specialization creates
  // (Score(ANY_Job) = 6² + 5²); what ranks candidates is the discernibility cost removed: over the
  // current groups holding v, |T[qid]|² before minus Σ |T[qid_child]|² after (docs/engine.md).
  if (cand.disc_gain >= 0) return static_cast<uint64_t>(cand.disc_gain);
  const AttributeHierarchy& h = (*hier_)[cand.attr];
  const int fine = h.FineChildCount(cand.node);
  std::vector<uint64_t> sizes(h.ChildCount(cand.node, cand.c));
  uint64_t gain = 0;
  for (int32_t g : AliveGroups(cand.attr, cand.node)) {
    std::fill(sizes.begin(), sizes.end(), 0);
    const uint64_t* fs = FineStats(g, cand.attr);
    const uint64_t s = GroupSize(g);
    if (h.kind() == table::QidKind::kSuppression) {  // value c and the rest (see Evaluate)
      sizes[0] = fs[static_cast<size_t>(cand.c) * stride_];
      sizes[1] = s >= sizes[0] ? s - sizes[0] : 0;
    } else {
      for (int f = 0; f < fine; ++f) sizes[h.ChildOfFine(cand.node, cand.c, f)] += fs[f * stride_];
    }
    uint64_t after = 0;
    for (uint64_t n : sizes) after += n * n;
    gain += s * s >= after ? s * s - after : 0;
  }
  cand.disc_gain = static_cast<int64_t>(gain);
  return gain;
}

void TopDownSpecializer::ForgetDiscernibility(int32_t g) {
  for (int a = 0; a < q_; ++a) {
    const NodeIndex n = KeyAt(g, a);
    if (node_cands_[a].size() <= static_cast<size_t>(n)) continue;
    for (int id : node_cands_[a][n]) cands_[id].disc_gain = -1;
  }
}

double TopDownSpecializer::PrivLoss(const Candidate& cand) const {
  // thesis Eq. 4.4: the average loss of anonymity A(X_j) - A^v(X_j) over the constraints
  // containing att(v), where A^v(X_j) = min(A(X_j), smallest child group); for models without
  // anonymity thresholds, the average rise of C(X_j) instead (thesis Eq. 5.1).
  const auto& ids = model_->by_attr[cand.attr];
  if (ids.empty()) return 0;
  double loss = 0;
  for (size_t jp = 0; jp < ids.size(); ++jp) {
    const int j = ids[jp];
    if (model_->has_anonymity) {
      loss += static_cast<double>(a_[j] - std::min(a_[j], cand.min_child[jp]));
    } else {
      loss += std::max(c_[j], cand.max_conf[jp]) - c_[j];
    }
  }
  return loss / static_cast<double>(ids.size());
}

std::vector<CandidateView> TopDownSpecializer::Candidates() const {
  std::vector<CandidateView> out;
  for (int id : active_) {
    const Candidate& c = cands_[id];
    if (!c.alive) continue;
    CandidateView v;
    v.attribute = data_->qids[c.attr].name;
    v.value = (*hier_)[c.attr].CandidateLabel(c.node, c.c, options_.suppression_token);
    v.info_gain = c.info_gain;
    v.split_info = c.split_info;
    v.priv_loss = PrivLoss(c);
    v.score = Score(c);
    v.records = c.records;
    v.valid = c.valid;
    v.beneficial = c.beneficial;
    out.push_back(std::move(v));
  }
  return out;
}

CandidateRank TopDownSpecializer::Rank(const Candidate& cand) const {
  return {Score(cand), cand.attr, (*hier_)[cand.attr].OrderKey(cand.node), cand.c};
}

int TopDownSpecializer::PickBest(bool owned_only) const {
  int best = -1;
  CandidateRank best_rank;
  for (int id : active_) {
    const Candidate& c = cands_[id];
    if (!c.alive || !c.valid || c.records == 0) continue;
    if (owned_only && !source_->Owns(c.attr)) continue;
    if (options_.beneficial && !c.beneficial) continue;
    const CandidateRank rank = Rank(c);
    if (best < 0 || RanksAbove(rank, best_rank)) {
      best = id;
      best_rank = rank;
    }
  }
  return best;
}

std::vector<TopDownSpecializer::ChildGroup> TopDownSpecializer::ChildGroups(
    const Candidate& cand, const std::vector<int32_t>& old_groups) const {
  const int a = cand.attr;
  const AttributeHierarchy& h = (*hier_)[a];
  const int fine = h.FineChildCount(cand.node);
  const int children = h.ChildCount(cand.node, cand.c);
  std::vector<int> child_of_fine(fine);
  for (int f = 0; f < fine; ++f) child_of_fine[f] = h.ChildOfFine(cand.node, cand.c, f);
  std::vector<ChildGroup> out;
  for (int32_t g : old_groups) {
    std::vector<uint64_t> sizes(children, 0);
    const uint64_t* fs = FineStats(g, a);
    for (int f = 0; f < fine; ++f) sizes[child_of_fine[f]] += fs[f * stride_];
    for (int ch = 0; ch < children; ++ch) {
      if (sizes[ch] > 0) out.push_back({g, ch, sizes[ch]});
    }
  }
  return out;
}

void TopDownSpecializer::RetireGroups(const std::vector<int32_t>& groups) {
  for (int32_t g : groups) {
    group_alive_[g] = false;
    --alive_groups_;
    ForgetDiscernibility(g);
    child_hist_[g].clear();
  }
}

void TopDownSpecializer::ReevaluateSharing(int a, const std::vector<int32_t>& new_groups) {
  absl::flat_hash_map<int64_t, std::vector<int32_t>> affected;
  for (int32_t g : new_groups) {
    for (int a2 = 0; a2 < q_; ++a2) {
      if (a2 == a) continue;
      affected[static_cast<int64_t>(a2) << 32 | static_cast<uint32_t>(KeyAt(g, a2))].push_back(g);
    }
  }
  for (auto& [packed, groups] : affected) {
    const int a2 = static_cast<int>(packed >> 32);
    const NodeIndex n2 = static_cast<NodeIndex>(packed & 0xffffffff);
    if (node_cands_[a2].size() <= static_cast<size_t>(n2)) continue;
    std::vector<int> positions;
    const auto& ids2 = model_->by_attr[a2];
    for (size_t jp = 0; jp < ids2.size(); ++jp) {
      const auto& attrs = model_->constraints[ids2[jp]].attrs;
      if (std::binary_search(attrs.begin(), attrs.end(), a)) {
        positions.push_back(static_cast<int>(jp));
      }
    }
    if (positions.empty()) continue;
    for (int id : node_cands_[a2][n2]) {
      Candidate& c = cands_[id];
      if (c.alive && c.valid) Evaluate(c, groups, positions);
    }
  }
}

void TopDownSpecializer::RecordStep(const Candidate& best, const std::string& label,
                                    const std::vector<NodeIndex>& kids, double score) {
  const AttributeHierarchy& h = (*hier_)[best.attr];
  fedanon::v1::SpecializationStep step;
  step.set_round(static_cast<uint32_t>(steps_.size() + 1));
  step.set_attribute(data_->qids[best.attr].name);
  step.set_value(label);
  for (NodeIndex kid : kids) step.add_children(h.Label(kid, options_.suppression_token));
  step.set_score(score);
  step.set_info_gain(best.info_gain);
  step.set_records(best.records);
  steps_.push_back(step);
  if (options_.on_step) options_.on_step(step, alive_groups_);
}

absl::Status TopDownSpecializer::Apply(int cand_id, std::optional<double> score_override) {
  const Candidate best = cands_[cand_id];
  const int a = best.attr;
  AttributeHierarchy& h = (*hier_)[a];
  const std::string label = h.CandidateLabel(best.node, best.c, options_.suppression_token);
  const double score = score_override ? *score_override : Score(best);

  // New global groups: each old group holding the node, split by the candidate's children.
  const std::vector<int32_t> old_groups = AliveGroups(a, best.node);
  const std::vector<ChildGroup> pending = ChildGroups(best, old_groups);
  const std::vector<NodeIndex> kids = h.Specialize(best.node, best.c);
  std::vector<uint64_t> sizes;
  sizes.reserve(pending.size());
  for (const ChildGroup& p : pending) sizes.push_back(p.size);
  RETURN_IF_ERROR(source_->Specialize(a, best.node, best.c, sizes));
  std::vector<std::pair<int, NodeIndex>> kid_refs;
  kid_refs.reserve(kids.size());
  for (NodeIndex kid : kids) kid_refs.emplace_back(a, kid);
  RETURN_IF_ERROR(DecideSplits(kid_refs));

  std::vector<std::vector<NodeIndex>> keys;
  for (const ChildGroup& p : pending) {
    std::vector<NodeIndex> key = KeyOf(p.parent);
    key[a] = kids[p.child];
    keys.push_back(std::move(key));
  }
  // The new groups' histograms: the applied candidate's children's, fetched when it was checked.
  std::vector<std::vector<uint64_t>> new_hist(pending.size());
  if (dist_ != nullptr) {
    for (size_t i = 0; i < pending.size(); ++i) {
      const auto& per_cand = child_hist_[pending[i].parent];
      auto it = per_cand.find(best.id);
      if (it == per_cand.end()) continue;
      const size_t at = static_cast<size_t>(pending[i].child) * dist_->domain;
      if (at + dist_->domain <= it->second.size()) {
        new_hist[i].assign(it->second.begin() + static_cast<ptrdiff_t>(at),
                           it->second.begin() + static_cast<ptrdiff_t>(at + dist_->domain));
      }
    }
  }
  RetireGroups(old_groups);
  std::vector<std::pair<int, NodeIndex>> refinable;
  for (NodeIndex kid : kids) {
    if (h.CandidateCount(kid) > 0) refinable.emplace_back(a, kid);
  }
  std::vector<int32_t> new_groups;
  std::vector<std::vector<uint64_t>> kid_counts;
  RETURN_IF_ERROR(CollectChildGroups(a, pending, refinable, keys, sizes, &kid_counts, &new_groups));
  for (size_t i = 0; i < new_groups.size() && i < new_hist.size(); ++i) {
    group_hist_[new_groups[i]] = std::move(new_hist[i]);
  }

  // The current table's A(X_j), C(X_j) after applying `best`.
  const auto& ids = model_->by_attr[a];
  for (size_t jp = 0; jp < ids.size(); ++jp) {
    a_[ids[jp]] = std::min(a_[ids[jp]], best.min_child[jp]);
    c_[ids[jp]] = std::max(c_[ids[jp]], best.max_conf[jp]);
  }
  for (int id : node_cands_[a][best.node]) cands_[id].alive = false;

  ReevaluateSharing(a, new_groups);
  for (size_t i = 0; i < refinable.size(); ++i) {
    RETURN_IF_ERROR(AddCandidates(a, refinable[i].second, kid_counts[i]));
  }
  RETURN_IF_ERROR(ResolveHistograms());
  RecordStep(best, label, kids, score);

  // Drop dead / invalid candidates from the active list now and then.
  if (active_.size() > 64 && steps_.size() % 16 == 0) {
    std::erase_if(active_, [&](int id) { return !cands_[id].alive || !cands_[id].valid; });
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TopDownSpecializer::Run() {
  while (true) {
    if (options_.max_rounds && steps_.size() >= options_.max_rounds) {
      return std::string("reached max_rounds");
    }
    const int best = PickBest();
    if (best < 0) return std::string("no valid candidate left");
    RETURN_IF_ERROR(Apply(best));
  }
}

std::optional<TopDownSpecializer::Choice> TopDownSpecializer::BestOwned() const {
  const int best = PickBest(/*owned_only=*/true);
  if (best < 0) return std::nullopt;
  const Candidate& c = cands_[best];
  const CandidateRank rank = Rank(c);
  return Choice{c.attr, c.node, c.c, rank.score, rank.order_key};
}

bool TopDownSpecializer::Beats(const Choice& a, const Choice& b) {
  return RanksAbove({a.score, a.attr, a.order_key, a.c}, {b.score, b.attr, b.order_key, b.c});
}

absl::StatusOr<int> TopDownSpecializer::FindCandidate(int attr, NodeIndex node, int c) const {
  if (attr < 0 || attr >= q_ || node < 0 || static_cast<size_t>(node) >= node_cands_[attr].size()) {
    return absl::InvalidArgumentError("the chosen candidate is not in the current cut");
  }
  for (int id : node_cands_[attr][node]) {
    if (cands_[id].c == c && cands_[id].alive) return id;
  }
  return absl::InvalidArgumentError("the chosen candidate is not in the current cut");
}

absl::StatusOr<bool> TopDownSpecializer::Recheck(int attr, NodeIndex node, int c) {
  ASSIGN_OR_RETURN(const int id, FindCandidate(attr, node, c));
  // Fresh statistics for the node's class counts and for the groups that hold the node.
  const std::vector<int32_t> groups = AliveGroups(attr, node);
  StatsRequest request;
  request.node_class_counts.emplace_back(attr, node);
  ASSIGN_OR_RETURN(const std::vector<uint64_t> stats, CollectChecked(request));
  RETURN_IF_ERROR(RefreshGroups(attr, groups));
  const AttributeHierarchy& h = (*hier_)[attr];
  const size_t node_words = static_cast<size_t>(h.FineChildCount(node)) * num_classes_;
  // Re-derive the candidate's gain and validity from the refreshed counts.
  Candidate& cand = cands_[id];
  const SplitMeasures m =
      MeasureSplit(h, node, c, absl::MakeConstSpan(stats.data(), node_words), num_classes_);
  SetSplitMeasures(m, cand);
  cand.valid = cand.records > 0 && m.changes_table;
  const std::vector<int> all_positions = AllPositions(attr);
  cand.min_child.assign(all_positions.size(), std::numeric_limits<uint64_t>::max());
  cand.max_conf.assign(all_positions.size(), 0.0);
  for (int32_t g : groups) child_hist_[g].erase(id);  // from the refreshed records only
  if (cand.valid) Evaluate(cand, groups, all_positions);
  RETURN_IF_ERROR(ResolveHistograms());
  return cand.valid;
}

absl::StatusOr<bool> TopDownSpecializer::IsValid(int attr, NodeIndex node, int c) const {
  ASSIGN_OR_RETURN(const int id, FindCandidate(attr, node, c));
  return cands_[id].valid && cands_[id].records > 0;
}

absl::StatusOr<double> TopDownSpecializer::ScoreOf(int attr, NodeIndex node, int c) const {
  ASSIGN_OR_RETURN(const int id, FindCandidate(attr, node, c));
  return Score(cands_[id]);
}

bool TopDownSpecializer::ScoreNeedsOwner(int attr, uint64_t held_bits) const {
  if (!ScoreNeedsPrivLoss(options_.score) || model_->has_anonymity) return false;
  for (int j : model_->by_attr[attr]) {
    if (model_->constraints[j].sensitive_mask & ~held_bits) return true;
  }
  return false;
}

bool OverstatesScore(double declared, double computed) {
  const double slack = 1e-9 * std::max(1.0, std::fabs(computed));
  return !(declared <= computed + slack);
}

absl::Status TopDownSpecializer::ApplyChosen(int attr, NodeIndex node, int c,
                                             std::optional<double> owner_score,
                                             std::optional<double> declared_score) {
  // No replica applies what its own check rejects — whoever chose it (a deviating
  // leader may commit a candidate a judge vetoed or that breaks a group-size bound).
  bool valid = false;
  if (source_->Owns(attr)) {
    ASSIGN_OR_RETURN(valid, IsValid(attr, node, c));
  } else {
    ASSIGN_OR_RETURN(valid, Recheck(attr, node, c));
  }
  if (!valid) {
    return absl::FailedPreconditionError(
        absl::StrCat(kRefusedSpecialization, ": ", data_->qids[attr].name, " ",
                     (*hier_)[attr].CandidateLabel(node, c, options_.suppression_token)));
  }
  ASSIGN_OR_RETURN(const int id, FindCandidate(attr, node, c));
  if (declared_score && !owner_score) {
    // The score this replica records for the step (Apply) from the refreshed counts.
    const double computed = Score(cands_[id]);
    if (OverstatesScore(*declared_score, computed)) {
      return absl::FailedPreconditionError(
          absl::StrCat(kScoreOverstated, ": ", data_->qids[attr].name, " ",
                       (*hier_)[attr].CandidateLabel(node, c, options_.suppression_token),
                       " was declared at ", *declared_score, ", its split gives ", computed,
                       " here (every data party must hold the same class column)"));
    }
  }
  return Apply(id, owner_score);
}

absl::Status TopDownSpecializer::Reject(int attr, NodeIndex node, int c) {
  ASSIGN_OR_RETURN(const int id, FindCandidate(attr, node, c));
  cands_[id].valid = false;
  // A judge's Recheck counted the children the veto takes back: the groups' statistics follow
  // the source's records again (a parent's statistics are what new groups are derived from).
  if (!source_->Owns(attr) && source_->CountsInProcess()) {
    RETURN_IF_ERROR(RefreshGroups(attr, AliveGroups(attr, node)));
  }
  return absl::OkStatus();
}

absl::Status TopDownSpecializer::RefreshGroups(int attr, const std::vector<int32_t>& groups) {
  if (groups.empty()) return absl::OkStatus();
  std::vector<std::vector<NodeIndex>> keys;
  keys.reserve(groups.size());
  for (int32_t g : groups) keys.push_back(KeyOf(g));
  // From a source that counts in process, `attr`'s block of each group; otherwise each group's
  // whole statistics.
  const bool blocks_only = source_->CountsInProcess();
  std::vector<uint64_t> fresh;
  if (blocks_only) {
    ASSIGN_OR_RETURN(fresh, source_->CollectAttributeBlocks(attr, keys));
  } else {
    StatsRequest request;
    request.group_keys = std::move(keys);
    ASSIGN_OR_RETURN(fresh, CollectChecked(request));
  }
  size_t pos = 0;
  for (int32_t g : groups) {
    const auto [begin, end] =
        blocks_only ? BlockRange(g, attr) : std::pair<size_t, size_t>{stats_off_[g], GroupEnd(g)};
    if (pos + (end - begin) > fresh.size()) return absl::InternalError("stale group layout");
    std::copy(fresh.begin() + pos, fresh.begin() + pos + (end - begin), stats_.begin() + begin);
    pos += end - begin;
    ForgetDiscernibility(g);
  }
  if (pos != fresh.size()) return absl::InternalError("stale group layout");
  return absl::OkStatus();
}

size_t TopDownSpecializer::BlockOffset(const NodeIndex* key, int attr) const {
  size_t words = stride_;
  for (int b = 0; b < attr; ++b) words += stride_ * (*hier_)[b].FineChildCount(key[b]);
  return words;
}

absl::Status TopDownSpecializer::CollectChildGroups(
    int a, const std::vector<ChildGroup>& pending,
    const std::vector<std::pair<int, NodeIndex>>& refinable,
    const std::vector<std::vector<NodeIndex>>& keys, const std::vector<uint64_t>& sizes,
    std::vector<std::vector<uint64_t>>* node_counts, std::vector<int32_t>* new_groups) {
  if (!source_->CountsInProcess()) {
    return CollectNodesAndGroups(refinable, keys, sizes, node_counts, new_groups);
  }
  // The children of one parent are consecutive in `pending` (ChildGroups): each run's largest
  // child (the first of equals) is derived when its blocks of the other attributes have the
  // parent's layout.
  std::vector<size_t> run_end(pending.size());
  std::vector<bool> derived(pending.size(), false);
  for (size_t r0 = 0; r0 < pending.size();) {
    size_t r1 = r0 + 1;
    while (r1 < pending.size() && pending[r1].parent == pending[r0].parent) ++r1;
    size_t largest = r0;
    for (size_t i = r0; i < r1; ++i) {
      run_end[i] = r1;
      if (pending[i].size > pending[largest].size) largest = i;
    }
    const int32_t p = pending[r0].parent;
    bool same_layout = true;
    for (int b = 0; b < q_ && same_layout; ++b) {
      if (b == a) continue;
      const auto [begin, end] = BlockRange(p, b);
      same_layout = end - begin == stride_ * (*hier_)[b].FineChildCount(keys[largest][b]);
    }
    derived[largest] = same_layout;
    r0 = r1;
  }
  StatsRequest request;
  request.node_class_counts = refinable;
  std::vector<std::vector<NodeIndex>> derived_keys;
  for (size_t i = 0; i < pending.size(); ++i) {
    (derived[i] ? derived_keys : request.group_keys).push_back(keys[i]);
  }
  ASSIGN_OR_RETURN(const std::vector<uint64_t> stats, CollectChecked(request));
  size_t pos = TakeNodeCounts(refinable, stats, node_counts);
  std::vector<uint64_t> blocks;
  if (!derived_keys.empty()) {
    ASSIGN_OR_RETURN(blocks, source_->CollectAttributeBlocks(a, derived_keys));
  }
  // Where each counted group's words are in `stats`.
  std::vector<size_t> off(pending.size(), 0);
  for (size_t i = 0; i < pending.size(); ++i) {
    if (derived[i]) continue;
    off[i] = pos;
    pos += GroupWords(keys[i].data());
  }
  if (pos != stats.size()) return absl::InternalError("group statistics have trailing data");
  std::vector<uint64_t> all;
  size_t block_pos = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    const size_t words = GroupWords(keys[i].data());
    if (!derived[i]) {
      all.insert(all.end(), stats.begin() + off[i], stats.begin() + off[i] + words);
      continue;
    }
    const int32_t p = pending[i].parent;
    size_t r0 = i;
    while (r0 > 0 && pending[r0 - 1].parent == p) --r0;
    // The parent's `len` words at `from` in stats_ minus every sibling's at `sibling_offset` of
    // its own words.
    std::vector<size_t> sibling_at;
    auto subtract = [&](size_t from, const std::function<size_t(size_t)>& sibling_offset,
                        size_t len) -> absl::Status {
      sibling_at.clear();
      for (size_t j = r0; j < run_end[i]; ++j) {
        if (j != i) sibling_at.push_back(off[j] + sibling_offset(j));
      }
      for (size_t w = 0; w < len; ++w) {
        uint64_t v = stats_[from + w];
        for (size_t at : sibling_at) {
          if (stats[at + w] > v) {
            return absl::InternalError(
                "group statistics disagree with the parent counts (a child holds more)");
          }
          v -= stats[at + w];
        }
        all.push_back(v);
      }
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(subtract(
        stats_off_[p], [](size_t) { return size_t{0}; }, stride_));
    for (int b = 0; b < q_; ++b) {
      const size_t len = stride_ * (*hier_)[b].FineChildCount(keys[i][b]);
      if (b == a) {
        if (block_pos + len > blocks.size()) {
          return absl::InternalError("attribute blocks are truncated");
        }
        all.insert(all.end(), blocks.begin() + block_pos, blocks.begin() + block_pos + len);
        block_pos += len;
      } else {
        RETURN_IF_ERROR(subtract(
            BlockRange(p, b).first, [&](size_t j) { return BlockOffset(keys[j].data(), b); }, len));
      }
    }
  }
  if (block_pos != blocks.size()) return absl::InternalError("attribute blocks have trailing data");
  return AddGroups(keys, sizes, all, 0, new_groups);
}

uint64_t TopDownSpecializer::smallest_group() const {
  uint64_t m = total_records_;
  for (uint64_t v : a_) m = std::min(m, v);
  return m;
}

double TopDownSpecializer::largest_confidence() const {
  double m = 0;
  for (size_t j = 0; j < c_.size(); ++j) {
    if (model_->constraints[j].sensitive_mask) m = std::max(m, c_[j]);
  }
  return m;
}

double TopDownSpecializer::DiscernibilityRatio() const {
  long double sum = 0;
  for (size_t g = 0; g < group_alive_.size(); ++g) {
    if (!group_alive_[g]) continue;
    const long double s = static_cast<long double>(GroupSize(static_cast<int32_t>(g)));
    sum += s * s;
  }
  const long double n = static_cast<long double>(total_records_);
  return static_cast<double>(sum / (n * n));
}

void TopDownSpecializer::FillReport(const std::string& stop_reason,
                                    fedanon::v1::Report* report) const {
  report->set_groups(group_count());
  for (const auto& step : steps_) *report->add_steps() = step;
  const auto cut = CutLabels();
  for (size_t a = 0; a < cut.size(); ++a) {
    auto* ac = report->add_cut();
    ac->set_attribute(data_->qids[a].name);
    for (const auto& l : cut[a]) ac->add_values(l);
  }
  report->set_smallest_group(smallest_group());
  report->set_largest_confidence(largest_confidence());
  report->set_discernibility_ratio(DiscernibilityRatio());
  report->set_constraints_checked(model_->constraints.size());
  report->set_stop_reason(stop_reason);
  report->set_numeric_split(options_.numeric.mode);
  if (dist_ != nullptr && dist_checked_) {
    std::vector<uint64_t> groups;
    for (size_t g = 0; g < group_alive_.size(); ++g) {
      if (!group_alive_[g]) continue;
      if (group_hist_[g].size() != dist_->domain) return;  // not known here
      groups.insert(groups.end(), group_hist_[g].begin(), group_hist_[g].end());
    }
    FillDistributionReport(*dist_, SummarizeGroups(*dist_, groups, overall_), report);
  }
}

std::vector<std::vector<NodeIndex>> TopDownSpecializer::GroupKeys() const {
  std::vector<std::vector<NodeIndex>> keys;
  for (size_t g = 0; g < group_alive_.size(); ++g) {
    if (!group_alive_[g]) continue;
    keys.emplace_back(keys_.begin() + g * q_, keys_.begin() + (g + 1) * q_);
  }
  return keys;
}

std::map<std::vector<NodeIndex>, std::vector<uint64_t>> TopDownSpecializer::GroupTotals() const {
  std::map<std::vector<NodeIndex>, std::vector<uint64_t>> totals;
  for (size_t g = 0; g < group_alive_.size(); ++g) {
    if (!group_alive_[g]) continue;
    const uint64_t* stats = stats_.data() + stats_off_[g];
    totals[std::vector<NodeIndex>(keys_.begin() + g * q_, keys_.begin() + (g + 1) * q_)] =
        std::vector<uint64_t>(stats, stats + stride_);
  }
  return totals;
}

std::vector<std::vector<std::string>> TopDownSpecializer::CutLabels() const {
  std::vector<std::vector<std::string>> out(q_);
  for (int a = 0; a < q_; ++a) {
    std::vector<NodeIndex> nodes;
    for (size_t g = 0; g < group_alive_.size(); ++g) {
      if (group_alive_[g]) nodes.push_back(KeyAt(static_cast<int32_t>(g), a));
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const AttributeHierarchy& h = (*hier_)[a];
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](NodeIndex x, NodeIndex y) { return h.OrderKey(x) < h.OrderKey(y); });
    for (NodeIndex n : nodes) out[a].push_back(h.Label(n, options_.suppression_token));
  }
  return out;
}

}  // namespace fedanon::engine
