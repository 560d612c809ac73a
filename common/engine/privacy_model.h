// A job's privacy requirement as a flat list of constraints over QID attribute subsets, each
// bounding the group size (k) and/or the confidence of tracked sensitive values (max).
//
//  * LKC-privacy (mohammed2010 Def. 3.1): one constraint per subset of min(L, |QID|) QID
//    attributes with k = K and max = C over the sensitive values. Checking subsets of exactly that
//    size suffices: coarser subsets have larger groups (Cor. 4.1.1) and lower confidence
//    (Thm. 5.1.1).
//  * Templates: one constraint per anonymity template <QID_j, k_j> (mohammed2011 Def. 1) and per
//    confidence template <X, Y, max> (thesis Def. 5.1.1). k-anonymity, confidence bounding and
//    (alpha, k)-anonymity are the special cases with a single template.
//  * ldiversity / tcloseness: one constraint over every QID attribute (the equivalence classes)
//    with k = max(K, the least size the requirement implies) whose groups must also meet the
//    model's requirement on their distribution of one sensitive attribute
//    (sensitive_distribution.h).
// Every constraint is anti-monotone under specialization: a group made of two parts that each
// meet it meets it too (for the distribution requirements: union closure, see
// sensitive_distribution.h), which the engine relies on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/sensitive_distribution.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::engine {

struct Constraint {
  std::vector<int> attrs;       // QID indices, ascending
  uint64_t k = 1;               // minimum group size
  uint64_t sensitive_mask = 0;  // bits of Dataset::tracked bounded by max_conf
  double max_conf = 1.0;
  bool distribution = false;  // groups must meet PrivacyModel::distribution
};

struct PrivacyModel {
  std::vector<Constraint> constraints;
  std::vector<std::vector<int>> by_attr;  // QID index -> ids of constraints containing it
  bool has_anonymity = false;             // some constraint has k > 1
  bool has_confidence = false;            // some constraint bounds a sensitive value
  // ldiversity / tcloseness: the requirement on each group's sensitive distribution.
  std::optional<SensitiveDistribution> distribution;

  // "{age, sex} k=20" / "{job, country} conf(Discharged) <= 0.5"
  std::string Describe(int constraint, const table::Dataset& data) const;
};

// Builds the constraints for `spec` over `data`. InvalidArgument for more than 5,000,000 subsets.
absl::StatusOr<PrivacyModel> BuildPrivacyModel(const fedanon::v1::JobSpec& spec,
                                               const table::Dataset& data);

// The reason a vertical job is refused when a replica could not score its own candidates
// (CheckVerticalScoreComputable).
inline constexpr char kPrivLossNotComputable[] =
    "score infogain_privloss cannot be computed in this vertical job";

// Vertical jobs (mohammed2011 §5): each party scores the candidates on its own attributes from
// the public partition and its own columns. With score infogain_privloss and no anonymity
// threshold (k > 1), PrivLoss is the rise of a confidence (thesis Eq. 5.1), which needs the
// candidate's children and the bounded sensitive values together: FailedPrecondition (message
// starting with kPrivLossNotComputable) when a QID attribute in a confidence constraint's scope is
// held by another party than that constraint's sensitive attribute; the party would score its
// candidates with PrivLoss 0 and the run would differ from the centralized one. OK otherwise
// (and for every horizontal job).
absl::Status CheckVerticalScoreComputable(const fedanon::v1::JobSpec& spec);

// Tolerance for comparing a confidence against its bound (exact ratios of integers).
inline constexpr double kConfidenceEpsilon = 1e-12;

}  // namespace fedanon::engine
