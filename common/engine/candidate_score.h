// How specialization candidates are scored and ranked: the one implementation that the TDS loop
// (TopDownSpecializer) and the sequential-release loop (SequentialSpecializer) share.
//
//  * MeasureSplit: what a node's class counts say about one candidate cut of it (records,
//    beneficial, InfoGain, SplitInfo; scores.h has the information measures).
//  * CandidateScore: the score of a candidate under the job's score function (mohammed2010,
//    mohammed2011 §4, thesis Eq. 4.4 / 5.1): infogain, gainratio (InfoGain alone when SplitInfo is
//    0), infogain / (privloss + 1), discernibility, distortion (thesis Eq. 6.1: |T[v]|; §5.5: the
//    records of the disclosed value for a suppressed node).
//  * RanksAbove: the deterministic choice between two candidates from public information only:
//    higher score, then lower attribute index (spec order), then lower node order key (taxonomy
//    file order / interval start / disclosed value order), then lower candidate index of the node.
//    Candidates equal on all four are not ranked: the one seen first (lower id) stays the best.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/engine/hierarchy.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

// What the class counts of a node say about specializing it by one candidate cut.
struct SplitMeasures {
  uint64_t records = 0;     // records generalized to the node
  bool beneficial = false;  // those records span more than one class
  // The units of distortion the specialization removes (the distortion score): every record of
  // the node for a taxonomy node or an interval (thesis Eq. 6.1, |T[v]|), only the records of the
  // disclosed value u for ⊥ -> {u, ⊥'} (§5.5: "the number of records that contain v"; the others
  // stay suppressed).
  uint64_t distortion_units = 0;
  double info_gain = 0;   // InfoGain of the class over the candidate's children
  double split_info = 0;  // SplitInfo of the children's sizes
  // False for the disclosure of a value that no record under the node has (⊥ -> {u, ⊥'} with u
  // empty): every record stays where it was, the table does not change, and the engines do not
  // count it as a specialization. Applying such candidates one round each made a long `values:`
  // list cost a round per declared value and memory quadratic in the list.
  bool changes_table = true;
};

// Measures candidate `c` of node `node` of `h` from the node's class counts per fine child
// (`fine_counts[f * num_classes + k]`: fine child f, class k, as TIPS and a CountSource give them;
// the size must be FineChildCount(node) * num_classes).
SplitMeasures MeasureSplit(const AttributeHierarchy& h, NodeIndex node, int c,
                           absl::Span<const uint64_t> fine_counts, int num_classes);

// The same measures (bit for bit) for candidate `c` of a suppressed node (⊥ -> {u, ⊥'}, u its
// c-th hidden value) in O(num_classes), given `parent`, the node's class counts summed over its
// fine children once per node: a ⊥ node with V hidden values costs O(V) for all its candidates,
// not O(V²) (for a 20,000-entry `values:` list).
SplitMeasures MeasureDisclosure(absl::Span<const uint64_t> parent,
                                absl::Span<const uint64_t> fine_counts, int c, int num_classes);
// The class counts of a node summed over its fine children (`fine_counts` as for MeasureSplit).
std::vector<uint64_t> ParentClassCounts(absl::Span<const uint64_t> fine_counts, int num_classes);

// What a candidate's score is computed from. `priv_loss` is read only by the score functions for
// which ScoreNeedsPrivLoss holds and `discernibility` (the discernibility cost the specialization
// removes: over the current groups holding the node, the squared group size minus the sum of the
// squared sizes of the child groups it would make; mohammed2009 §3.2.2 / Example 3, see
// docs/engine.md) only by those for which ScoreNeedsDiscernibility holds, so a caller may leave
// them 0 otherwise.
struct ScoreInputs {
  uint64_t distortion_units = 0;  // SplitMeasures::distortion_units (the distortion score)
  double info_gain = 0;
  double split_info = 0;
  double priv_loss = 0;
  uint64_t discernibility = 0;
};

bool ScoreNeedsPrivLoss(fedanon::v1::ScoreFunction score);
bool ScoreNeedsDiscernibility(fedanon::v1::ScoreFunction score);

// The candidate's score under `score` (higher is better); any other value, the unspecified one
// included, scores by InfoGain.
double CandidateScore(fedanon::v1::ScoreFunction score, const ScoreInputs& in);

// What ranks a candidate: all public information.
struct CandidateRank {
  double score = 0;
  int attr = -1;         // QID attribute index (spec order)
  double order_key = 0;  // AttributeHierarchy::OrderKey of the node
  int c = -1;            // candidate index of the node
};

// True when `a` beats `b` under the tie-break above (false when they are equal).
bool RanksAbove(const CandidateRank& a, const CandidateRank& b);

}  // namespace fedanon::engine
