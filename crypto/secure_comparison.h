// Secure two-party comparison: two parties compare numbers that neither holds alone, and learn
// the comparison's result and nothing else. Yao's garbled circuits (half gates with free XOR,
// crypto/half_gates.h) with the evaluator's inputs delivered by OT extension
// (crypto/ot_extension.h); docs/crypto.md "Secure comparison" gives the construction, the
// security argument and the costs.
//
// The two sides are plain message-in, message-out state machines with no transport: the caller
// seals each message to the other party (crypto/sealed_box.h, with its own SealContext) and lets
// the leader relay it. Five messages, in this order:
//   evaluator Start()          -> 1 -> garbler AnswerBase()
//   garbler   AnswerBase()     -> 2 -> evaluator Extend()
//   evaluator Extend()         -> 3 -> garbler Garble()
//   garbler   Garble()         -> 4 -> evaluator Evaluate()       (the evaluator knows the result)
//   evaluator Evaluate()       -> 5 -> garbler Finish()           (the garbler knows it, checked)
// Every message starts with "FSC1", its step and the digest of the ComparisonSpec: a message of
// another step (replayed or reordered), of another instance, or of a wrong size is refused by
// name, and a method called out of order fails; an instance never restarts (make a new one).
//
// What the parties must agree on is the ComparisonSpec, which each side builds from its own
// state (the signed job, the round), never from a message. Security: semi-honest for both sides
// (each one's view is simulated from its input and the result). A deviating evaluator cannot get
// both labels of an input (the OT extension's consistency check) nor claim a result the circuit
// did not give (Finish checks the output labels); a deviating garbler can garble another
// function, so make the evaluator's result wrong and learn a bit of the evaluator's input through
// the result or an abort, as docs/crypto.md states. Not constant time in the inputs' values:
// see docs/crypto.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crypto/block.h"

namespace fedanon::crypto {

namespace mpc {
class FixedKeyHash;
class OtExtensionReceiver;
class RandomStream;
class OtExtensionSender;
struct BaseOtReceiverKeys;
struct BaseOtSenderKeys;
}  // namespace mpc

enum class ComparisonKind : uint8_t {
  // Per instance: [g > e], the garbler's g and the evaluator's e unsigned.
  kGreaterThan = 1,
  // Per instance: s = g + e mod 2^bits; [s == 0 or s >= threshold] (a group's two shares of its
  // size: empty, or at least K).
  kSumZeroOrAtLeast = 2,
  // Per instance: s = g + e mod 2^bits read as two's complement; [s >= 0] (scaled confidence
  // bounds: N * group - D * sensitive >= 0).
  kSumNonNegative = 3,
  // One instance over `count` keys, key j = g_j + e_j mod 2^bits (additive shares): the index of
  // the largest key, the lowest index among equal ones.
  kSharedArgmax = 4,
};

enum class ComparisonOutput : uint8_t {
  kEach = 1,  // one result bit per instance
  kAll = 2,   // one bit: every instance's result is 1 (nothing else is revealed)
};

struct ComparisonSpec {
  // Names this comparison among all others (job, run, round, purpose, counter): both sides build
  // the same string from their own state.
  std::string instance;
  ComparisonKind kind = ComparisonKind::kGreaterThan;
  uint32_t bits = 0;       // 1 .. kMaxComparisonBits
  uint64_t threshold = 0;  // kSumZeroOrAtLeast: 1 .. min(2^bits - 1, 2^64 - 1); otherwise 0
  uint64_t count =
      0;  // instances, 1 .. kMaxComparisonCount (kSharedArgmax: keys, .. kMaxArgmaxKeys)
  ComparisonOutput output = ComparisonOutput::kEach;  // kSharedArgmax: kEach
};

inline constexpr uint64_t kMaxComparisonCount = uint64_t{1} << 24;
inline constexpr uint32_t kMaxComparisonBits = 512;
// The 64-bit words of one value: inputs hold `count` values of this many words each, least
// significant word first (a value below 2^bits).
inline constexpr uint32_t ComparisonWords(uint32_t bits) { return (bits + 63) / 64; }
inline constexpr uint64_t kMaxArgmaxKeys = uint64_t{1} << 12;

absl::Status ValidateComparisonSpec(const ComparisonSpec& spec);
// SHA-256 of the spec's canonical encoding (32 bytes): what every message carries.
std::string ComparisonSpecDigest(const ComparisonSpec& spec);

struct ComparisonResult {
  std::vector<uint8_t> each;  // kEach (not argmax): 0 or 1 per instance
  bool all = false;           // kAll
  uint64_t winner = 0;        // kSharedArgmax
  friend bool operator==(const ComparisonResult&, const ComparisonResult&) = default;
};

// What one instance costs: AND gates garbled, bytes each side sends (messages 1-5).
struct ComparisonCost {
  uint64_t and_gates = 0;
  uint64_t evaluator_bytes = 0;  // messages 1, 3, 5
  uint64_t garbler_bytes = 0;    // messages 2, 4
};
absl::StatusOr<ComparisonCost> CostOfComparison(const ComparisonSpec& spec);

// The plain result, for tests and for callers that hold both inputs (never in a protocol).
absl::StatusOr<ComparisonResult> ComparePlain(const ComparisonSpec& spec,
                                              const std::vector<uint64_t>& garbler_inputs,
                                              const std::vector<uint64_t>& evaluator_inputs);

// A side's randomness comes from `seed` (kComparisonSeedBytes) when one is given, from OpenSSL's
// DRBG otherwise. Given the same spec, inputs, seed and incoming messages, a side sends the same
// messages again: a party that keeps the seed secret and durable (its 0600 state file) can run
// an instance's answered steps again after a restart and go on from there. A seed must never
// serve two instances (the spec's instance name differs, but the labels would not).
inline constexpr size_t kComparisonSeedBytes = 32;
// A side's seed: `kept` (the seed a party drew before a restart) when it is not empty, else a new
// one from OpenSSL's DRBG.
absl::StatusOr<std::string> KeptOrNewComparisonSeed(std::string kept);

// The base OTs of one instance, kept by a side to start later instances with the same other
// party without them: such an instance has three messages instead of five (the evaluator starts
// with Extend, taking no message 2; the garbler with Garble) and no elliptic-curve work. Each
// later instance derives its OT seeds, check and hash tweaks from its own spec's digest
// (crypto/ot_extension.h, "Extending again"); docs/crypto.md "Base OTs kept for a run" gives the
// argument. Whoever keeps one keeps a secret: in memory only, never on disk (a restarted party
// derives it again by running the instance that made it from its kept seed). Copies share the
// keys.
enum class ComparisonRole : uint8_t { kGarbler, kEvaluator };
class ComparisonBase {
 public:
  ComparisonRole role() const { return role_; }

 private:
  friend class ComparisonEvaluator;
  friend class ComparisonGarbler;
  ComparisonRole role_{};
  std::shared_ptr<const mpc::BaseOtReceiverKeys> evaluator_;  // the evaluator's (OT receiver)
  std::shared_ptr<const mpc::BaseOtSenderKeys> garbler_;      // the garbler's (OT sender)
};

class ComparisonEvaluator {
 public:
  // `inputs`: `count` values of ComparisonWords(bits) words each, each value < 2^bits.
  // `base`: an evaluator's kept base OTs; the instance then starts with Extend("") (no Start).
  static absl::StatusOr<std::unique_ptr<ComparisonEvaluator>> Create(
      const ComparisonSpec& spec, std::vector<uint64_t> inputs, std::string_view seed = {},
      const ComparisonBase* base = nullptr);
  ~ComparisonEvaluator();
  ComparisonEvaluator(const ComparisonEvaluator&) = delete;
  ComparisonEvaluator& operator=(const ComparisonEvaluator&) = delete;

  absl::StatusOr<std::string> Start();                              // message 1
  absl::StatusOr<std::string> Extend(std::string_view message2);    // -> message 3
  absl::StatusOr<std::string> Evaluate(std::string_view message4);  // -> message 5
  // After Evaluate.
  const ComparisonResult& result() const { return result_; }
  // After an Extend that ran the base OTs (an instance without a kept base): them, to keep.
  std::optional<ComparisonBase> base() const;

 private:
  ComparisonEvaluator() = default;
  ComparisonSpec spec_;
  std::string digest_;
  std::vector<uint64_t> inputs_;
  int step_ = 0;
  std::unique_ptr<mpc::FixedKeyHash> hash_;
  std::unique_ptr<mpc::RandomStream> random_;  // until Start hands it to the OT
  std::unique_ptr<mpc::OtExtensionReceiver> ot_;
  bool kept_base_ = false;  // from a ComparisonBase: Extend takes no message 2
  ComparisonResult result_;
};

class ComparisonGarbler {
 public:
  // `base`: a garbler's kept base OTs; the instance then starts with Garble (no AnswerBase).
  static absl::StatusOr<std::unique_ptr<ComparisonGarbler>> Create(
      const ComparisonSpec& spec, std::vector<uint64_t> inputs, std::string_view seed = {},
      const ComparisonBase* base = nullptr);
  ~ComparisonGarbler();
  ComparisonGarbler(const ComparisonGarbler&) = delete;
  ComparisonGarbler& operator=(const ComparisonGarbler&) = delete;

  absl::StatusOr<std::string> AnswerBase(std::string_view message1);  // -> message 2
  absl::StatusOr<std::string> Garble(std::string_view message3);      // -> message 4
  // Takes message 5: the result, after checking that every output label is one of the two the
  // circuit has (PermissionDenied otherwise).
  absl::StatusOr<ComparisonResult> Finish(std::string_view message5);
  // After AnswerBase: the base OTs it ran, to keep.
  std::optional<ComparisonBase> base() const;

 private:
  ComparisonGarbler() = default;
  ComparisonSpec spec_;
  std::string digest_;
  std::vector<uint64_t> inputs_;
  int step_ = 0;
  std::unique_ptr<mpc::FixedKeyHash> hash_;
  std::unique_ptr<mpc::OtExtensionSender> ot_;
  std::unique_ptr<mpc::RandomStream> random_;  // the garbling delta and input labels
  mpc::Block delta_;                           // the garbling delta, kept until Finish
  std::vector<mpc::Block> output_zero_;        // the outputs' labels of value 0
};

// The six steps of one instance in the order the leader relays them, as one side drives them:
// the evaluator's 1 (Start), 3 (Extend) and 5 (Evaluate), the garbler's 2 (AnswerBase), 4
// (Garble) and 6 (Finish). Step s takes the other side's message of step s - 1 (none at step 1)
// and gives this side's message of step s ("" after step 6). The protocols built on the
// comparison (the two-party final check, the vertical winner, the binned bins' check) seal and
// relay those messages; this is the one place that maps steps to the sides' methods.
// An instance that starts from a kept ComparisonBase skips steps 1 and 2: the evaluator's first
// step is 3 (it takes no message), the garbler's 4.
inline constexpr int kComparisonSteps = 6;

// A side's first step: 1 (evaluator) or 2 (garbler), or 3 and 4 from a kept base.
inline constexpr int FirstComparisonStep(ComparisonRole role, bool kept_base) {
  return (role == ComparisonRole::kGarbler ? 2 : 1) + (kept_base ? 2 : 0);
}

class ComparisonSide {
 public:
  // `base`: this role's kept base OTs (InvalidArgument when they are the other role's).
  static absl::StatusOr<std::unique_ptr<ComparisonSide>> Create(
      ComparisonRole role, const ComparisonSpec& spec, std::vector<uint64_t> inputs,
      std::string_view seed = {}, const ComparisonBase* base = nullptr);
  ~ComparisonSide();
  ComparisonSide(const ComparisonSide&) = delete;
  ComparisonSide& operator=(const ComparisonSide&) = delete;

  ComparisonRole role() const { return role_; }
  // The side's next step: FirstComparisonStep first, then every other one; 0 once the side's last
  // step ran, or a step failed (an instance that failed is spent).
  int next_step() const { return next_; }
  // Step `step`: FailedPrecondition naming it and the side's next one when it is not the next;
  // the primitive's named errors otherwise.
  absl::StatusOr<std::string> Step(int step, std::string_view message);
  // The result, once the side's last step (5 or 6) ran.
  const std::optional<ComparisonResult>& result() const { return result_; }
  // The base OTs this instance ran (none when it started from kept ones), once they ran: after
  // step 2 (garbler) or 3 (evaluator), kept after the side's last step.
  const std::optional<ComparisonBase>& base() const { return base_; }

 private:
  ComparisonSide() = default;
  ComparisonRole role_ = ComparisonRole::kGarbler;
  int next_ = 0;
  std::unique_ptr<ComparisonGarbler> garbler_;
  std::unique_ptr<ComparisonEvaluator> evaluator_;
  std::optional<ComparisonResult> result_;
  std::optional<ComparisonBase> base_;
};

}  // namespace fedanon::crypto
