#include "common/engine/candidate_score.h"

#include <vector>

#include "common/engine/scores.h"

namespace fedanon::engine {

namespace {

// Records, beneficial (more than one class), InfoGain and SplitInfo of a parent split into
// children with these class counts and sizes.
SplitMeasures MeasuresOf(absl::Span<const uint64_t> parent,
                         const std::vector<std::vector<uint64_t>>& child_counts,
                         const std::vector<uint64_t>& sizes) {
  SplitMeasures m;
  int classes_present = 0;
  for (uint64_t n : parent) {
    m.records += n;
    classes_present += n > 0;
  }
  m.beneficial = classes_present > 1;
  m.distortion_units = m.records;
  m.info_gain = InfoGain(parent, child_counts);
  m.split_info = SplitInfo(sizes);
  return m;
}

}  // namespace

SplitMeasures MeasureSplit(const AttributeHierarchy& h, NodeIndex node, int c,
                           absl::Span<const uint64_t> fine_counts, int num_classes) {
  const int fine = h.FineChildCount(node);
  const int children = h.ChildCount(node, c);
  std::vector<uint64_t> parent(num_classes, 0);
  std::vector<uint64_t> sizes(children, 0);
  std::vector<std::vector<uint64_t>> child_counts(children, std::vector<uint64_t>(num_classes, 0));
  for (int f = 0; f < fine; ++f) {
    const int ch = h.ChildOfFine(node, c, f);
    for (int k = 0; k < num_classes; ++k) {
      const uint64_t n = fine_counts[static_cast<size_t>(f) * num_classes + k];
      parent[k] += n;
      child_counts[ch][k] += n;
      sizes[ch] += n;
    }
  }
  SplitMeasures m = MeasuresOf(parent, child_counts, sizes);
  // A suppression candidate's child 0 is the disclosed value (ChildOfFine).
  if (h.kind() == table::QidKind::kSuppression) {
    m.changes_table = sizes[0] > 0;
    m.distortion_units = sizes[0];
  }
  return m;
}

std::vector<uint64_t> ParentClassCounts(absl::Span<const uint64_t> fine_counts, int num_classes) {
  std::vector<uint64_t> parent(num_classes, 0);
  for (size_t i = 0; i < fine_counts.size(); ++i) parent[i % num_classes] += fine_counts[i];
  return parent;
}

SplitMeasures MeasureDisclosure(absl::Span<const uint64_t> parent,
                                absl::Span<const uint64_t> fine_counts, int c, int num_classes) {
  // Child 0: the disclosed value u; child 1: every other hidden value (⊥'), as MeasureSplit
  // sums them (AttributeHierarchy::ChildOfFine of a suppression candidate).
  std::vector<uint64_t> sizes(2, 0);
  std::vector<std::vector<uint64_t>> child_counts(2, std::vector<uint64_t>(num_classes, 0));
  for (int k = 0; k < num_classes; ++k) {
    const uint64_t u = fine_counts[static_cast<size_t>(c) * num_classes + k];
    const uint64_t rest = parent[k] >= u ? parent[k] - u : 0;
    child_counts[0][k] = u;
    child_counts[1][k] = rest;
    sizes[0] += u;
    sizes[1] += rest;
  }
  SplitMeasures m = MeasuresOf(parent, child_counts, sizes);
  m.changes_table = sizes[0] > 0;
  m.distortion_units = sizes[0];
  return m;
}

bool ScoreNeedsPrivLoss(fedanon::v1::ScoreFunction score) {
  return score == fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS;
}

bool ScoreNeedsDiscernibility(fedanon::v1::ScoreFunction score) {
  return score == fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY;
}

double CandidateScore(fedanon::v1::ScoreFunction score, const ScoreInputs& in) {
  switch (score) {
    case fedanon::v1::SCORE_FUNCTION_GAINRATIO:
      // mohammed2011 §4: SplitInfo = 0 (all records in one child) -> use InfoGain alone.
      return in.split_info > 0 ? in.info_gain / in.split_info : in.info_gain;
    case fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS:
      return in.info_gain / (in.priv_loss + 1);
    case fedanon::v1::SCORE_FUNCTION_DISCERNIBILITY:
      return static_cast<double>(in.discernibility);
    case fedanon::v1::SCORE_FUNCTION_DISTORTION:
      // Thesis Eq. 6.1 / §5.5: the units of distortion the specialization removes.
      return static_cast<double>(in.distortion_units);
    default:
      return in.info_gain;
  }
}

bool RanksAbove(const CandidateRank& a, const CandidateRank& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.attr != b.attr) return a.attr < b.attr;
  if (a.order_key != b.order_key) return a.order_key < b.order_key;
  return a.c < b.c;
}

}  // namespace fedanon::engine
