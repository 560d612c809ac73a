#include "common/engine/local_candidates.h"

#include <algorithm>
#include <limits>

#include "common/engine/candidate_score.h"
#include "common/engine/privacy_model.h"
#include "common/engine/scores.h"
#include "common/engine/tds_engine.h"

namespace fedanon::engine {

LocalRule LocalRuleFromModel(const PrivacyModel& model, size_t tracked) {
  LocalRule rule;
  rule.bound.assign(tracked, 1.0);
  rule.has_anonymity = model.has_anonymity;
  for (const Constraint& c : model.constraints) {
    rule.kmin = std::max(rule.kmin, c.k);
    for (size_t b = 0; b < tracked; ++b) {
      if (c.sensitive_mask >> b & 1) rule.bound[b] = std::min(rule.bound[b], c.max_conf);
    }
  }
  return rule;
}

bool LocalRuleHasConfidenceBound(const LocalRule& rule) {
  for (double b : rule.bound) {
    if (b < 1.0) return true;
  }
  return false;
}

std::optional<LocalChildrenScore> ScoreLocalChildren(const LocalRule& rule, size_t nc, size_t m,
                                                     const uint64_t* stats,
                                                     const std::vector<const uint64_t*>& kids,
                                                     int attr, int c, bool disclosure) {
  const uint64_t n = stats[0];
  const std::vector<uint64_t> parent(stats + 1, stats + 1 + nc);
  std::vector<std::vector<uint64_t>> classes;
  LocalChildrenScore out;
  uint64_t min_child = std::numeric_limits<uint64_t>::max();
  double max_conf_rise = 0;
  uint64_t squares = 0;
  for (const uint64_t* w : kids) {
    out.sizes.push_back(w[0]);
    if (w[0] == 0) continue;
    if (w[0] < rule.kmin) return std::nullopt;
    for (size_t b = 0; b < m; ++b) {
      const double conf = static_cast<double>(w[1 + nc + b]) / static_cast<double>(w[0]);
      if (conf > rule.bound[b] + kConfidenceEpsilon) return std::nullopt;
    }
    classes.emplace_back(w + 1, w + 1 + nc);
    min_child = std::min(min_child, w[0]);
    squares += w[0] * w[0];
    for (size_t b = 0; b < m; ++b) {
      if (rule.bound[b] >= 1.0) continue;
      const double rise = static_cast<double>(w[1 + nc + b]) / static_cast<double>(w[0]) -
                          static_cast<double>(stats[1 + nc + b]) / static_cast<double>(n);
      max_conf_rise = std::max(max_conf_rise, rise);
    }
  }
  ScoreInputs in;
  in.distortion_units = disclosure && !kids.empty() ? kids[0][0] : n;
  in.info_gain = InfoGain(parent, classes);
  in.split_info = SplitInfo(out.sizes);
  in.priv_loss = rule.has_anonymity ? static_cast<double>(n - min_child) : max_conf_rise;
  in.discernibility = n * n - squares;
  out.rank = CandidateRank{CandidateScore(rule.score, in), attr, 0, c};
  out.info_gain = in.info_gain;
  return out;
}

namespace {

// Per-fine-child words [count, class_1..C, sensitive_1..m] of attribute a over the records.
struct Counter {
  const table::Dataset& data;
  size_t nc;
  size_t width;
  bool has_class;
  bool has_sensitive;
  void Add(uint64_t* w, uint32_t r) const {
    ++w[0];
    if (has_class) ++w[1 + data.class_codes[r]];
    if (has_sensitive) {
      for (uint64_t bits = data.sensitive_bits[r]; bits != 0; bits &= bits - 1) {
        ++w[1 + nc + static_cast<size_t>(__builtin_ctzll(bits))];
      }
    }
  }
};

// The best candidate of one group among those considered, by the engine's tie-break (RanksAbove);
// candidates in `excluded` (attribute, candidate) are passed over.
class BestSoFar {
 public:
  BestSoFar(const LocalRule& rule, size_t nc, size_t m, const uint64_t* parent,
            absl::Span<const std::pair<int, int>> excluded)
      : rule_(rule), nc_(nc), m_(m), parent_(parent), excluded_(excluded) {}

  // Candidate `c` of attribute `a` with the children's words `kids`; `child_of_fine` maps each
  // fine child to its child; `disclosure`: ⊥ -> {kids[0]'s value, ⊥'}.
  void Consider(int a, int c, const std::vector<const uint64_t*>& kids,
                std::vector<int> child_of_fine, bool disclosure = false) {
    if (std::find(excluded_.begin(), excluded_.end(), std::pair<int, int>{a, c}) !=
        excluded_.end()) {
      return;
    }
    std::optional<LocalChildrenScore> scored =
        ScoreLocalChildren(rule_, nc_, m_, parent_, kids, a, c, disclosure);
    if (!scored) return;
    if (!best_ || RanksAbove(scored->rank, best_rank_)) {
      best_rank_ = scored->rank;
      best_.emplace();
      best_->attr = a;
      best_->c = c;
      best_->score = scored->rank.score;
      best_->info_gain = scored->info_gain;
      best_->child_sizes = std::move(scored->sizes);
      best_->child_of_fine = std::move(child_of_fine);
    }
  }
  std::optional<LocalCandidate> Take() { return std::move(best_); }

 private:
  const LocalRule& rule_;
  size_t nc_;
  size_t m_;
  const uint64_t* parent_;
  absl::Span<const std::pair<int, int>> excluded_;
  std::optional<LocalCandidate> best_;
  CandidateRank best_rank_;
};

// The threshold candidates of a continuous attribute's split: per bin its first fine child. The
// bins are the fine children, or (rule.within_group_min_bin) runs of them holding that many
// records; fewer than two bins: nothing to split. `block`: `width` words per fine child, records
// first.
std::vector<int> ThresholdBins(const LocalRule& rule, const std::vector<uint64_t>& block, int fines,
                               size_t width) {
  std::vector<int> first_fine;
  if (rule.within_group_min_bin == 0) {
    for (int f = 0; f < fines; ++f) first_fine.push_back(f);
  } else {
    uint64_t in_bin = 0;
    bool open = false;
    for (int f = 0; f < fines; ++f) {
      if (!open) {
        first_fine.push_back(f);
        open = true;
      }
      in_bin += block[static_cast<size_t>(f) * width];
      if (in_bin >= rule.within_group_min_bin) {
        in_bin = 0;
        open = false;
      }
    }
    // A short tail joins the last full bin; fewer than two full bins: nothing to split.
    if (open && first_fine.size() >= 2) first_fine.pop_back();
    uint64_t total = 0;
    for (int f = 0; f < fines; ++f) total += block[static_cast<size_t>(f) * width];
    if (total < rule.within_group_min_bin) first_fine.clear();
  }
  return first_fine;
}

// The class histogram of each bin (`bins` x `nc` words) from the fine children's words.
std::vector<uint64_t> BinClassHistogram(const std::vector<uint64_t>& block,
                                        const std::vector<int>& bin_of_fine, int bins, size_t nc,
                                        size_t width, bool has_class) {
  std::vector<uint64_t> hist(static_cast<size_t>(bins) * nc, 0);
  for (size_t f = 0; f < bin_of_fine.size(); ++f) {
    const uint64_t* w = block.data() + f * width;
    const size_t b = static_cast<size_t>(bin_of_fine[f]);
    for (size_t k = 0; k < nc; ++k) hist[b * nc + k] += w[1 + k];
    // Without a class attribute the class words are the counts (one class).
    if (!has_class) hist[b * nc] += w[0];
  }
  return hist;
}

// The children's values of candidate `best` of a group whose value of best->attr is `value`, as
// LocalRecoder::ApplyBest makes them.
void SetChildValues(const table::Dataset& data, const LocalFineMap& fine, const LocalValue& value,
                    LocalCandidate* best) {
  const int a = best->attr;
  const table::QidColumn& col = data.qids[a];
  best->child_values.assign(best->child_sizes.size(), value);
  switch (col.kind) {
    case table::QidKind::kTaxonomy:
      for (size_t c = 0; c < best->child_values.size(); ++c) {
        best->child_values[c].node = col.taxonomy->children(value.node)[c];
      }
      break;
    case table::QidKind::kContinuous: {
      const int32_t t = fine.FineStartRank(a, value, best->c);
      best->child_values[0].hi = t;
      best->child_values[1].lo = t;
      break;
    }
    case table::QidKind::kSuppression:
      best->child_values[0].node = best->c;
      best->child_values[1].node = -1;
      break;
  }
}

}  // namespace

std::optional<LocalCandidate> BestLocalCandidate(const table::Dataset& data,
                                                 const LocalFineMap& fine, const LocalRule& rule,
                                                 const std::vector<LocalValue>& key,
                                                 absl::Span<const uint32_t> records,
                                                 absl::Span<const int> attrs,
                                                 absl::Span<const std::pair<int, int>> excluded) {
  const size_t nc = static_cast<size_t>(std::max(1, data.num_classes()));
  const size_t m = data.tracked.size();
  const size_t width = 1 + nc + m;
  const bool has_class = data.class_column >= 0 || data.class_declared;
  const Counter counter{data, nc, width, !data.class_codes.empty(), !data.tracked.empty()};
  std::vector<uint64_t> stats(width, 0);
  for (uint32_t r : records) counter.Add(stats.data(), r);
  const uint64_t n = stats[0];
  if (n == 0) return std::nullopt;
  const std::vector<uint64_t> parent(stats.begin() + 1, stats.begin() + 1 + nc);
  int classes_present = 0;
  for (uint64_t c : parent) classes_present += c > 0;
  if (rule.beneficial && classes_present <= 1) return std::nullopt;

  BestSoFar best(rule, nc, m, stats.data(), excluded);

  std::vector<uint64_t> block;
  for (int a : attrs) {
    const int fines = fine.FineCount(a, key[a]);
    if (fines == 0) continue;
    const table::QidColumn& col = data.qids[a];
    block.assign(static_cast<size_t>(fines) * width, 0);
    for (uint32_t r : records) {
      counter.Add(block.data() + static_cast<size_t>(fine.FineOf(a, key[a], col.codes[r])) * width,
                  r);
    }
    switch (col.kind) {
      case table::QidKind::kTaxonomy: {
        std::vector<const uint64_t*> kids;
        std::vector<int> map(fines);
        for (int f = 0; f < fines; ++f) {
          kids.push_back(block.data() + static_cast<size_t>(f) * width);
          map[f] = f;
        }
        best.Consider(a, 0, kids, std::move(map));
        break;
      }
      case table::QidKind::kContinuous: {
        // The threshold candidates: the fine children, or within-group bins merged from them.
        const std::vector<int> first_fine = ThresholdBins(rule, block, fines, width);
        const int bins = static_cast<int>(first_fine.size());
        if (bins < 2) break;
        std::vector<int> bin_of_fine(fines);
        for (int b = 0, f = 0; f < fines; ++f) {
          if (b + 1 < bins && f >= first_fine[b + 1]) ++b;
          bin_of_fine[f] = b;
        }
        const std::vector<uint64_t> hist =
            BinClassHistogram(block, bin_of_fine, bins, nc, width, has_class);
        const int32_t split = ChooseSplitRank(hist, static_cast<int>(nc), 0, has_class);
        if (split < 0) break;
        std::vector<uint64_t> left(width, 0), right(width, 0);
        std::vector<int> map(fines);
        for (int f = 0; f < fines; ++f) {
          const bool is_left = bin_of_fine[f] < split;
          map[f] = is_left ? 0 : 1;
          std::vector<uint64_t>& side = is_left ? left : right;
          for (size_t w = 0; w < width; ++w) side[w] += block[static_cast<size_t>(f) * width + w];
        }
        best.Consider(a, first_fine[split], {left.data(), right.data()}, std::move(map));
        break;
      }
      case table::QidKind::kSuppression: {
        std::vector<uint64_t> rest(width);
        for (int u = 0; u < fines; ++u) {
          const uint64_t* w = block.data() + static_cast<size_t>(u) * width;
          if (w[0] == 0) continue;
          for (size_t i = 0; i < width; ++i) rest[i] = stats[i] - w[i];
          std::vector<int> map(fines, 1);
          map[u] = 0;
          best.Consider(a, u, {w, rest.data()}, std::move(map), /*disclosure=*/true);
        }
        break;
      }
    }
  }
  std::optional<LocalCandidate> chosen = best.Take();
  if (chosen) SetChildValues(data, fine, key[chosen->attr], &*chosen);
  return chosen;
}

std::vector<int32_t> LocalChildrenOf(const table::Dataset& data, const LocalFineMap& fine,
                                     const std::vector<LocalValue>& key,
                                     absl::Span<const uint32_t> records, const LocalCandidate& c) {
  std::vector<int32_t> out;
  out.reserve(records.size());
  const auto& codes = data.qids[c.attr].codes;
  for (uint32_t r : records) {
    out.push_back(c.child_of_fine[fine.FineOf(c.attr, key[c.attr], codes[r])]);
  }
  return out;
}

}  // namespace fedanon::engine
