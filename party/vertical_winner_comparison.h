// The secure choice of a vertical round's winner (issue 44; mohammed2011 §5.4 and the thesis's
// §7.3.1 name a secure maximum): no party and not the leader sees a losing proposal's score.
//
// Every party turns its best candidate into a tie-break key, an integer that is larger exactly
// when engine::RanksAbove ranks the candidate above (WinnerKey). The ring's first two parties, the
// computing parties, hold the keys in additive shares: each keeps its own key whole and takes
// the zero share of the other's, and every other participating party splits its key at random
// (SplitWinnerKey) and seals one share for each. The computing parties then evaluate one argmax
// circuit (crypto/secure_comparison.h, kSharedArgmax) whose messages the leader relays; both
// learn the index of the largest key, that is the round's winner, and nothing else. Their
// non-collusion is an assumption (docs/threat-model.md); the leader learns the winner's identity.
//
// VerticalWinnerComparison is one computing party's side of one round's argmax: plain message
// in, message out, no transport and no sealing (party/vertical_rounds_party.cc does both).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/tds_engine.h"
#include "crypto/secure_comparison.h"

namespace fedanon::party {

// [participates: 1][score: 64][~attribute: 32][~order key: 64][~candidate: 32], most significant
// first.
inline constexpr uint32_t kWinnerKeyBits = 193;
inline constexpr uint32_t kWinnerKeyWords = crypto::ComparisonWords(kWinnerKeyBits);  // 4

// The key of a proposal, kWinnerKeyWords words least significant first; all zero for
// Not-participate. InvalidArgument for a NaN score or order key, a negative attribute or
// candidate index.
absl::StatusOr<std::vector<uint64_t>> WinnerKey(
    const std::optional<engine::TopDownSpecializer::Choice>& choice);

// Two uniformly random shares that add up to `key` modulo 2^kWinnerKeyBits.
absl::StatusOr<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> SplitWinnerKey(
    const std::vector<uint64_t>& key);

// A share as it travels (32 bytes, words little-endian) and back; InvalidArgument for a wrong size
// or a value of 2^kWinnerKeyBits or more.
std::string EncodeWinnerShare(const std::vector<uint64_t>& share);
absl::StatusOr<std::vector<uint64_t>> DecodeWinnerShare(std::string_view bytes);

// The comparison's name, built by both computing parties from their own state: the round and the
// count of decisions (the sealed boxes that carry its messages bind the job and the run).
std::string WinnerComparisonInstance(uint64_t round, uint64_t decisions);

class VerticalWinnerComparison {
 public:
  // `garbler`: the ring's first party (steps 2, 4, 6), else the second (steps 1, 3, 5). `shares`:
  // this party's share of every party's key, ring order (parties × kWinnerKeyWords words). `seed`:
  // crypto::kComparisonSeedBytes, kept durable by the caller so that a restart resumes. `base`:
  // the base OTs an earlier round's comparison ran (its base()), so that this one starts at step
  // 3 or 4 (protocol 4.1).
  static absl::StatusOr<std::unique_ptr<VerticalWinnerComparison>> Create(
      bool garbler, std::string instance, size_t parties, std::vector<uint64_t> shares,
      std::string_view seed, const crypto::ComparisonBase* base = nullptr);

  // The role's next step: 1 or 2 first (3 or 4 from kept base OTs), then every other one; 0 once
  // its part ended.
  int next_step() const { return side_->next_step(); }
  // Step `step` (the role's next) of crypto::ComparisonSide: takes the other party's message
  // (none at step 1) and returns the message for the other party (empty after step 6, the last).
  absl::StatusOr<std::string> Step(int step, std::string_view message) {
    return side_->Step(step, message);
  }
  // The winner's ring index, once the role's last step ran (5 or 6).
  std::optional<uint64_t> winner() const {
    return side_->result() ? std::optional<uint64_t>(side_->result()->winner) : std::nullopt;
  }
  // The base OTs this comparison ran, once they ran (none when it started from kept ones).
  const std::optional<crypto::ComparisonBase>& base() const { return side_->base(); }

 private:
  explicit VerticalWinnerComparison(std::unique_ptr<crypto::ComparisonSide> side)
      : side_(std::move(side)) {}
  std::unique_ptr<crypto::ComparisonSide> side_;
};

}  // namespace fedanon::party
