// The final check of a horizontal job with two data parties, by secure comparison
// (crypto/secure_comparison.h): the ring sum of the three-party check would hand each party the
// other's counts, so here each condition the privacy model puts on the final groups is decided
// by garbled circuits between the two parties, the leader relaying sealed messages:
//
//  * a group is empty or holds at least k records: [a + b = 0 or a + b >= k] on the two parties'
//    sizes of the group (kSumZeroOrAtLeast);
//  * a bounded sensitive value stays within its confidence bound: with T = max_conf + epsilon
//    (the engine's tolerance) written exactly as N / 2^s, [N * size - 2^s * count >= 0] on the
//    two parties' N * size_p - 2^s * count_p (kSumNonNegative), which is count / size <= T.
//
// The groups of every constraint with the same condition (the same k; the same tracked value and
// bound) are compared together, in instances of at most `groups_per_instance` groups (and under
// the message size), each with one result bit (the conjunction of its groups): a party learns
// which instance failed, that is which constraints' groups (one chunk of them), never a group's
// size. A model of many constraints (LKC's every QID subset) costs a few instances, not one each.
// The ring's first party garbles, the second evaluates; both learn every result. ldiversity and
// tcloseness are not checked this way (PlanFinalCheckComparisons refuses a layout with a sensitive
// distribution).
//
// Plain logic with no transport: FinalCheckComparisons takes the other party's message of an
// instance's step and returns this party's next one; final_check_party.h seals and relays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/final_check.h"
#include "crypto/secure_comparison.h"

namespace fedanon::party {

// Groups per comparison instance: message 4 of a size instance is then about 50 MiB at 33 bits
// (docs/crypto.md "Costs"), under the 64 MiB message limit once sealed.
inline constexpr uint64_t kGroupsPerComparison = 16384;

struct FinalCheckComparison {
  // Groups [first_group, first_group + count) of layout.constraints[constraint].
  struct Segment {
    size_t constraint = 0;
    uint64_t first_group = 0;
    uint64_t count = 0;
  };
  crypto::ComparisonSpec spec;  // spec.count: the segments' groups in all
  std::vector<Segment> segments;
  int tracked = -1;  // -1: the group sizes (against spec.threshold); else a tracked value's bit
  // A bound's T = max_conf + epsilon = numerator / 2^shift.
  uint64_t numerator = 0;
  uint32_t shift = 0;
  double max_conf = 1.0;
};

// The instances that check `layout` between two parties whose summed records are at most
// `max_total_records`, named "<instance_prefix>/<index>" (the prefix binds job, run, round and
// cut). FailedPrecondition for a layout with a sensitive distribution (ldiversity, tcloseness);
// InvalidArgument when a bound needs more than crypto::kMaxComparisonBits.
absl::StatusOr<std::vector<FinalCheckComparison>> PlanFinalCheckComparisons(
    const engine::FinalCheckLayout& layout, uint64_t max_total_records,
    const std::string& instance_prefix, uint64_t groups_per_instance = kGroupsPerComparison);

// This party's inputs to `comparison` from its own `counts` in the layout (the same function for
// both roles).
std::vector<uint64_t> FinalCheckComparisonInputs(const FinalCheckComparison& comparison,
                                                 const engine::FinalCheckLayout& layout,
                                                 const std::vector<uint64_t>& counts);

class FinalCheckComparisons {
 public:
  enum class Role { kGarbler, kEvaluator };

  static absl::StatusOr<std::unique_ptr<FinalCheckComparisons>> Create(
      std::vector<FinalCheckComparison> plan, const engine::FinalCheckLayout& layout,
      const std::vector<uint64_t>& counts, Role role);

  size_t instances() const { return plan_.size(); }
  // Step `step` of instance `instance` with the other party's message of the step before: this
  // party's next message ("" after step 6). `seed` (crypto::kComparisonSeedBytes, this party's
  // first step of the instance only): the instance's randomness, so that the same steps run again
  // after a restart send the same messages. FailedPrecondition for a step of the other role, a
  // step out of order or an instance already ended; the primitive's named errors otherwise (an
  // instance that failed is spent: its comparison is not run again).
  absl::StatusOr<std::string> Step(size_t instance, int step, std::string_view message,
                                   std::string_view seed = {});
  // OK once every instance ended here and held; FailedPrecondition naming the first constraint
  // (and chunk) that does not hold, or that instances are missing.
  absl::Status Verdict() const;
  // After this party's last step of `instance`: 1 held, 0 failed; -1 before.
  int Held(size_t instance) const { return instance < held_.size() ? held_[instance] : -1; }

 private:
  FinalCheckComparisons() = default;
  std::string Describe(const FinalCheckComparison& c) const;

  std::vector<FinalCheckComparison> plan_;
  engine::FinalCheckLayout layout_;
  std::vector<std::vector<uint64_t>> inputs_;
  Role role_ = Role::kGarbler;
  std::vector<int> next_step_;                                       // per instance
  std::map<size_t, std::unique_ptr<crypto::ComparisonSide>> sides_;  // instances under way
  std::vector<int> held_;  // per instance: -1 not ended here, 0 failed, 1 held
};

}  // namespace fedanon::party
