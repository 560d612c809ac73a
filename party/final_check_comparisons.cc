#include "party/final_check_comparisons.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/engine/privacy_model.h"

namespace fedanon::party {

using crypto::ComparisonKind;
using crypto::ComparisonOutput;
using crypto::ComparisonSpec;

namespace {

// Message 4 of one instance stays under this (the sealed message's limit is 64 MiB).
constexpr uint64_t kMaxMessage4Bytes = uint64_t{48} << 20;

// Instances of `spec` that keep message 4 under kMaxMessage4Bytes: the bytes of 1,024 instances
// tell the per-instance cost.
absl::StatusOr<uint64_t> InstancesPerMessage(ComparisonSpec spec, uint64_t cap) {
  spec.count = 1024;
  spec.instance = "cost";
  const absl::StatusOr<crypto::ComparisonCost> cost = crypto::CostOfComparison(spec);
  if (!cost.ok()) return cost.status();
  const uint64_t per = std::max<uint64_t>(1, cost->garbler_bytes / 1024);
  return std::clamp<uint64_t>(kMaxMessage4Bytes / per, 1, cap);
}

uint32_t BitWidth(uint64_t v) { return static_cast<uint32_t>(std::bit_width(v)); }

// x * 2^shift as `words` little-endian words (bits beyond them dropped).
std::vector<uint64_t> Shifted(uint64_t x, uint32_t shift, uint32_t words) {
  std::vector<uint64_t> out(words, 0);
  const uint32_t word = shift / 64;
  const uint32_t bit = shift % 64;
  if (word < words) out[word] = x << bit;
  if (bit != 0 && word + 1 < words) out[word + 1] = x >> (64 - bit);
  return out;
}

// a * b as `words` little-endian words.
std::vector<uint64_t> Product(uint64_t a, uint64_t b, uint32_t words) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  std::vector<uint64_t> out(words, 0);
  out[0] = static_cast<uint64_t>(p);
  if (words > 1) out[1] = static_cast<uint64_t>(p >> 64);
  return out;
}

// a - b mod 2^(64 * words), then masked to `bits`.
std::vector<uint64_t> Subtract(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                               uint32_t bits) {
  std::vector<uint64_t> out(a.size());
  uint64_t borrow = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const uint64_t t = a[k] - b[k];
    const uint64_t borrow_out = (a[k] < b[k] || (t == 0 && borrow != 0)) ? 1 : 0;
    out[k] = t - borrow;
    borrow = borrow_out;
  }
  const uint32_t top = bits - 64 * static_cast<uint32_t>(a.size() - 1);
  if (top < 64) out.back() &= (uint64_t{1} << top) - 1;
  return out;
}

}  // namespace

absl::StatusOr<std::vector<FinalCheckComparison>> PlanFinalCheckComparisons(
    const engine::FinalCheckLayout& layout, uint64_t max_total_records,
    const std::string& instance_prefix, uint64_t groups_per_instance) {
  if (layout.distribution.has_value()) {
    return absl::FailedPreconditionError(
        "the two-party final check compares group sizes and confidence bounds; it cannot check "
        "ldiversity or tcloseness");
  }
  groups_per_instance = std::max<uint64_t>(1, groups_per_instance);
  // One family per distinct condition (a k; a tracked value with its bound), in order of first
  // appearance: its constraints' groups are compared together, cut into instances, so that a
  // model of many constraints (LKC's every QID subset) costs few instances, not one or more each.
  struct Family {
    FinalCheckComparison base;                       // spec and bound; no segments yet
    std::vector<FinalCheckComparison::Segment> all;  // every constraint's groups
  };
  std::vector<Family> families;
  std::map<std::tuple<int, uint64_t, uint64_t, uint32_t>, size_t> family_of;
  auto add = [&](const FinalCheckComparison& base, uint64_t key_value, size_t ci) {
    const auto key = std::make_tuple(base.tracked, key_value, base.numerator, base.shift);
    auto [it, fresh] = family_of.emplace(key, families.size());
    if (fresh) families.push_back(Family{base, {}});
    families[it->second].all.push_back({ci, 0, layout.constraints[ci].groups});
  };
  for (size_t ci = 0; ci < layout.constraints.size(); ++ci) {
    const engine::FinalCheckConstraint& c = layout.constraints[ci];
    if (c.groups == 0) continue;
    // Sizes: below 2^bits with room for the sum of both parties' shares without wrapping.
    FinalCheckComparison sizes;
    sizes.spec.kind = ComparisonKind::kSumZeroOrAtLeast;
    sizes.spec.bits = std::max(BitWidth(max_total_records), BitWidth(c.k)) + 1;
    sizes.spec.threshold = std::max<uint64_t>(1, c.k);
    sizes.spec.output = ComparisonOutput::kAll;
    add(sizes, sizes.spec.threshold, ci);
    const double bound = c.max_conf + engine::kConfidenceEpsilon;
    for (size_t b = 0; b < layout.tracked.size(); ++b) {
      if (!(c.sensitive_mask >> b & 1) || bound >= 1.0) continue;  // count <= size always holds
      if (!(bound > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("final check: ", c.description, " bounds confidence at ", c.max_conf));
      }
      // bound = mantissa * 2^(exponent - 53) exactly, mantissa < 2^53; reduced while even.
      int exponent = 0;
      const double fraction = std::frexp(bound, &exponent);
      auto numerator = static_cast<uint64_t>(std::ldexp(fraction, 53));
      int shift = 53 - exponent;
      while (shift > 0 && (numerator & 1) == 0) {
        numerator >>= 1;
        --shift;
      }
      FinalCheckComparison bound_check;
      bound_check.tracked = static_cast<int>(b);
      bound_check.numerator = numerator;
      bound_check.shift = static_cast<uint32_t>(shift);
      bound_check.max_conf = c.max_conf;
      bound_check.spec.kind = ComparisonKind::kSumNonNegative;
      // |N * size - 2^s * count| < 2^(max(bits(N) + bits(M), bits(M) + s)), M the records; one
      // more bit for the sign and one for the sum of the two shares.
      const uint32_t magnitude = std::max(BitWidth(numerator) + BitWidth(max_total_records),
                                          BitWidth(max_total_records) + bound_check.shift);
      bound_check.spec.bits = magnitude + 2;
      if (bound_check.spec.bits > crypto::kMaxComparisonBits) {
        return absl::InvalidArgumentError(
            absl::StrCat("final check: ", c.description, "'s confidence bound ", c.max_conf,
                         " needs ", bound_check.spec.bits,
                         " bits, more than the two-party check's ", crypto::kMaxComparisonBits));
      }
      bound_check.spec.output = ComparisonOutput::kAll;
      add(bound_check, 0, ci);
    }
  }
  std::vector<FinalCheckComparison> plan;
  for (const Family& family : families) {
    const absl::StatusOr<uint64_t> per_or =
        InstancesPerMessage(family.base.spec, groups_per_instance);
    if (!per_or.ok()) return per_or.status();
    const uint64_t per = *per_or;
    FinalCheckComparison chunk = family.base;
    auto close = [&] {
      if (chunk.spec.count == 0) return;
      chunk.spec.instance = absl::StrCat(instance_prefix, "/", plan.size());
      plan.push_back(chunk);
      chunk = family.base;
    };
    for (const FinalCheckComparison::Segment& whole : family.all) {
      for (uint64_t first = 0; first < whole.count;) {
        const uint64_t take = std::min(per - chunk.spec.count, whole.count - first);
        chunk.segments.push_back({whole.constraint, first, take});
        chunk.spec.count += take;
        first += take;
        if (chunk.spec.count == per) close();
      }
    }
    close();
  }
  return plan;
}

std::vector<uint64_t> FinalCheckComparisonInputs(const FinalCheckComparison& comparison,
                                                 const engine::FinalCheckLayout& layout,
                                                 const std::vector<uint64_t>& counts) {
  const uint32_t words = crypto::ComparisonWords(comparison.spec.bits);
  std::vector<uint64_t> inputs;
  inputs.reserve(comparison.spec.count * words);
  for (const FinalCheckComparison::Segment& segment : comparison.segments) {
    const engine::FinalCheckConstraint& c = layout.constraints[segment.constraint];
    for (uint64_t g = segment.first_group; g < segment.first_group + segment.count; ++g) {
      const uint64_t* slot = counts.data() + c.offset + g * layout.Slot(c);
      if (comparison.tracked < 0) {
        inputs.push_back(slot[0]);
        continue;
      }
      const std::vector<uint64_t> value = Subtract(
          Product(comparison.numerator, slot[0], words),
          Shifted(slot[1 + comparison.tracked], comparison.shift, words), comparison.spec.bits);
      inputs.insert(inputs.end(), value.begin(), value.end());
    }
  }
  return inputs;
}

absl::StatusOr<std::unique_ptr<FinalCheckComparisons>> FinalCheckComparisons::Create(
    std::vector<FinalCheckComparison> plan, const engine::FinalCheckLayout& layout,
    const std::vector<uint64_t>& counts, Role role) {
  if (counts.size() != layout.words) {
    return absl::InvalidArgumentError(absl::StrCat(
        "final check: ", counts.size(), " counts for a layout of ", layout.words, " words"));
  }
  std::unique_ptr<FinalCheckComparisons> c(new FinalCheckComparisons());
  c->layout_ = layout;
  c->role_ = role;
  for (const FinalCheckComparison& comparison : plan) {
    c->inputs_.push_back(FinalCheckComparisonInputs(comparison, layout, counts));
  }
  c->plan_ = std::move(plan);
  c->next_step_.assign(c->plan_.size(), role == Role::kEvaluator ? 1 : 2);
  c->held_.assign(c->plan_.size(), -1);
  return c;
}

absl::StatusOr<std::string> FinalCheckComparisons::Step(size_t instance, int step,
                                                        std::string_view message,
                                                        std::string_view seed) {
  if (instance >= plan_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("final check: comparison ", instance, " of ",
                                                   plan_.size(), " does not exist"));
  }
  const bool garbler = role_ == Role::kGarbler;
  if (step < 1 || step > crypto::kComparisonSteps || (step % 2 == 0) != garbler) {
    return absl::FailedPreconditionError(absl::StrCat("final check: step ", step,
                                                      " of a comparison is not this party's (the ",
                                                      garbler ? "garbler" : "evaluator", ")"));
  }
  if (step != next_step_[instance]) {
    return absl::FailedPreconditionError(
        absl::StrCat("final check: comparison ", instance, " is at step ", next_step_[instance],
                     ", asked for step ", step, " (replayed, reordered or already ended)"));
  }
  if (step > 2 && !sides_.contains(instance)) {
    return absl::FailedPreconditionError(
        absl::StrCat("final check: comparison ", instance,
                     " has no state here: this party's first step of it did not run"));
  }
  next_step_[instance] = crypto::kComparisonSteps + 1;  // spent unless this step succeeds
  if (step <= 2) {
    absl::StatusOr<std::unique_ptr<crypto::ComparisonSide>> side = crypto::ComparisonSide::Create(
        garbler ? crypto::ComparisonRole::kGarbler : crypto::ComparisonRole::kEvaluator,
        plan_[instance].spec, inputs_[instance], seed);
    if (!side.ok()) return side.status();
    sides_[instance] = *std::move(side);
  }
  crypto::ComparisonSide& side = *sides_[instance];
  absl::StatusOr<std::string> next = side.Step(step, message);
  if (!next.ok()) {
    sides_.erase(instance);
    return next.status();
  }
  if (side.result().has_value()) {
    held_[instance] = side.result()->all ? 1 : 0;
    sides_.erase(instance);
  }
  next_step_[instance] = step + 2;
  return next;
}

std::string FinalCheckComparisons::Describe(const FinalCheckComparison& c) const {
  // Where: one constraint's groups, or the constraints the instance covers (three named).
  auto range = [this](const FinalCheckComparison::Segment& s) {
    return absl::StrCat("groups ", s.first_group, " to ", s.first_group + s.count - 1, " of ",
                        layout_.constraints[s.constraint].groups);
  };
  std::string where;
  if (c.segments.size() == 1) {
    where = absl::StrCat(layout_.constraints[c.segments[0].constraint].description, ": among ",
                         range(c.segments[0]));
  } else {
    where = "among";
    for (size_t i = 0; i < c.segments.size() && i < 3; ++i) {
      absl::StrAppend(&where, i == 0 ? " " : ", ",
                      layout_.constraints[c.segments[i].constraint].description, " (",
                      range(c.segments[i]), ")");
    }
    if (c.segments.size() > 3) {
      absl::StrAppend(&where, " and ", c.segments.size() - 3, " more constraints");
    }
  }
  if (c.tracked < 0) {
    return absl::StrCat(where, ", a group holds fewer than ", c.spec.threshold, " records");
  }
  return absl::StrCat(where, ", a group infers '", layout_.tracked[c.tracked],
                      "' with confidence above ", c.max_conf);
}

absl::Status FinalCheckComparisons::Verdict() const {
  size_t unfinished = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (held_[i] == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "final check failed: ", Describe(plan_[i]),
          " (two data parties: the secure comparison tells which chunk, not which group)"));
    }
    if (held_[i] < 0) ++unfinished;
  }
  if (unfinished > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "final check: ", unfinished, " of ", plan_.size(), " comparisons have not ended here"));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::party
