// VerticalLocalReplica's release (party/vertical_local.h): the check of every group before any
// release, the labels of released values, and the report.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/hierarchy.h"
#include "common/engine/local_candidates.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tds_engine.h"
#include "party/vertical_local.h"

namespace fedanon::party {

using engine::LocalValue;
using table::QidKind;

absl::Status VerticalLocalReplica::CheckRelease() const {
  if (!closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        kRefusedLocalWave,
        ": refused to release: the replicas' final states were not compared (no closing wave)"));
  }
  // Coded apart from the group bookkeeping: count the records per distinct released key, each
  // record's key read through its group (the public partition every replica shares).
  // Per class: [records, then per tracked value its count among the values this party holds].
  const size_t m = data_->tracked.size();
  std::map<std::vector<std::tuple<int32_t, int32_t, int32_t>>, std::vector<uint64_t>> classes;
  uint64_t covered = 0;
  for (int32_t g : live_) {
    std::vector<std::tuple<int32_t, int32_t, int32_t>> k;
    for (const LocalValue& v : keys_[g]) k.emplace_back(v.node, v.lo, v.hi);
    std::vector<uint64_t>& c = classes[k];
    c.resize(1 + m, 0);
    c[0] += records_[g].size();
    for (uint32_t r : records_[g]) {
      for (uint64_t bits = data_->sensitive_bits[r]; bits != 0; bits &= bits - 1) {
        ++c[1 + static_cast<size_t>(__builtin_ctzll(bits))];
      }
    }
    covered += records_[g].size();
  }
  if (covered != data_->num_records) {
    return absl::InternalError("the final groups do not cover every common record");
  }
  for (const auto& [k, c] : classes) {
    if (c[0] < rule_.kmin) {
      return absl::FailedPreconditionError(
          absl::StrCat("refused to release: a final local-recoding group has ", c[0],
                       " records, fewer than ", rule_.kmin));
    }
    for (size_t b = 0; b < m; ++b) {
      const double conf = static_cast<double>(c[1 + b]) / static_cast<double>(c[0]);
      if (conf > rule_.bound[b] + engine::kConfidenceEpsilon) {
        return absl::FailedPreconditionError(
            absl::StrCat("refused to release: in a final local-recoding group of ", c[0],
                         " records the confidence of sensitive value ", b + 1, " is ", conf,
                         ", above its bound ", rule_.bound[b]));
      }
    }
  }
  return absl::OkStatus();
}

std::string VerticalLocalReplica::ValueLabel(int a, const LocalValue& v) const {
  const table::QidColumn& col = data_->qids[a];
  switch (col.kind) {
    case QidKind::kTaxonomy:
      return col.taxonomy->label(v.node);
    case QidKind::kSuppression:
      return v.node < 0 ? spec_.suppression_token() : col.values[v.node];
    case QidKind::kContinuous: {
      const int32_t ranks = static_cast<int32_t>(col.sorted_values.size());
      if (v.lo < 0 || v.hi > ranks) return engine::IntervalLabel(col.range_lo, col.range_hi);
      const double lo = v.lo == 0 ? col.range_lo : col.sorted_values[v.lo];
      const double hi = v.hi == ranks ? col.range_hi : col.sorted_values[v.hi];
      return engine::IntervalLabel(lo, hi);
    }
  }
  return "";
}

std::string VerticalLocalReplica::Label(int a, uint32_t r) const {
  return ValueLabel(a, keys_[group_of_[r]][a]);
}

// The steps in the centralized order: by logical wave (the parent's depth; a split delayed by
// vetoes keeps its group's depth), then score descending, then the parent's centralized id — the
// centralized recoder numbers the groups in that order of creation, from 1.
size_t VerticalLocalReplica::AddStepsInCentralizedOrder(fedanon::v1::Report* report) const {
  std::vector<size_t> order(applied_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return applied_[x].depth < applied_[y].depth; });
  std::vector<uint32_t> central_id(keys_.size(), 0);
  uint32_t next_id = 1;
  size_t listed = 0;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && applied_[order[end]].depth == applied_[order[begin]].depth) ++end;
    std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(begin),
                     order.begin() + static_cast<std::ptrdiff_t>(end), [&](size_t x, size_t y) {
                       const Applied& a = applied_[x];
                       const Applied& b = applied_[y];
                       return a.score > b.score ||
                              (a.score == b.score && central_id[a.parent] < central_id[b.parent]);
                     });
    for (size_t i = begin; i < end; ++i) {
      const Applied& a = applied_[order[i]];
      for (int32_t c : a.children) central_id[c] = next_id++;
      if (listed < engine::kMaxReportedLocalSteps) {
        auto* step = report->add_steps();
        *step = a.step;
        step->set_round(static_cast<uint32_t>(i + 1));
        ++listed;
      }
    }
    begin = end;
  }
  return listed;
}

// The final cut: per QID attribute, the distinct values of the final groups.
void VerticalLocalReplica::AddCut(fedanon::v1::Report* report) const {
  for (size_t a = 0; a < data_->qids.size(); ++a) {
    std::vector<std::tuple<int32_t, int32_t, int32_t>> values;
    for (int32_t g : live_) {
      const LocalValue& v = keys_[g][a];
      values.emplace_back(v.node, v.lo, v.hi);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    auto* cut = report->add_cut();
    cut->set_attribute(data_->qids[a].name);
    // Labels of attributes this party does not hold: intervals need the ranks' values, which
    // the public schema carries; taxonomy nodes and disclosed values are public.
    for (const auto& [node, lo, hi] : values) {
      cut->add_values(ValueLabel(static_cast<int>(a), LocalValue{node, lo, hi}));
    }
  }
}

void VerticalLocalReplica::FillReport(const std::string& stop_reason,
                                      fedanon::v1::Report* report) const {
  report->set_recoding(fedanon::v1::RECODING_LOCAL);
  report->set_records_out(data_->num_records);
  report->set_groups(live_.size());
  const size_t listed = AddStepsInCentralizedOrder(report);
  uint64_t smallest = data_->num_records;
  long double squares = 0;
  // As the centralized report: the largest confidence of a bounded sensitive value in a final
  // group — over the values this party holds (the others' bits are 0 here; the leader keeps the
  // report with the largest).
  const size_t m = data_->tracked.size();
  std::vector<bool> bounded(m, false);
  for (size_t b = 0; b < m; ++b) {
    if (rule_.bound[b] >= 1.0 && !model_->has_confidence) continue;
    for (const engine::Constraint& c : model_->constraints) {
      bounded[b] = bounded[b] || (c.sensitive_mask >> b & 1) != 0;
    }
  }
  double largest_conf = 0;
  std::vector<uint64_t> counts(m);
  for (int32_t g : live_) {
    const uint64_t s = records_[g].size();
    smallest = std::min(smallest, s);
    squares += static_cast<long double>(s) * static_cast<long double>(s);
    if (m == 0 || s == 0) continue;
    std::fill(counts.begin(), counts.end(), 0);
    for (uint32_t r : records_[g]) {
      for (uint64_t bits = data_->sensitive_bits[r]; bits != 0; bits &= bits - 1) {
        ++counts[static_cast<size_t>(__builtin_ctzll(bits))];
      }
    }
    for (size_t b = 0; b < m; ++b) {
      if (!bounded[b]) continue;
      largest_conf =
          std::max(largest_conf, static_cast<double>(counts[b]) / static_cast<double>(s));
    }
  }
  report->set_largest_confidence(largest_conf);
  AddCut(report);
  const long double n = static_cast<long double>(data_->num_records);
  report->set_smallest_group(smallest);
  report->set_discernibility_ratio(n > 0 ? static_cast<double>(squares / (n * n)) : 0);
  report->set_constraints_checked(model_->constraints.size());
  report->set_stop_reason(listed == applied_.size()
                              ? stop_reason
                              : absl::StrCat(stop_reason, " (", applied_.size(),
                                             " specializations; the report lists the first ",
                                             listed, ")"));
}

}  // namespace fedanon::party
