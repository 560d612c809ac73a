// Fuzz target: the secure comparison's message parsing (crypto/secure_comparison.h). The first
// byte picks which message the rest of the input replaces, after an honest run of the messages
// before it (a fixed spec: 3 group sizes against K = 5, 16 bits):
//   0: message 1 to the garbler's AnswerBase   1: message 2 to the evaluator's Extend
//   2: message 3 to the garbler's Garble       3: message 4 to the evaluator's Evaluate
//   4: message 5 to the garbler's Finish
// Every call either succeeds or fails with InvalidArgument, PermissionDenied or FailedPrecondition
// (the contract); a Finish that succeeds on a fuzzed message 5 must give the plain result (an
// evaluator cannot claim another one).
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "crypto/secure_comparison.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

using crypto::ComparisonEvaluator;
using crypto::ComparisonGarbler;
using crypto::ComparisonResult;
using crypto::ComparisonSpec;

const ComparisonSpec& Spec() {
  static const ComparisonSpec spec{
      "fuzz/job/round/final-check/0", crypto::ComparisonKind::kSumZeroOrAtLeast, 16, 5, 3,
      crypto::ComparisonOutput::kEach};
  return spec;
}
const std::vector<uint64_t> kGarblerInputs = {1, 2, 3};
const std::vector<uint64_t> kEvaluatorInputs = {4, 0, 1};

void CheckContract(const absl::Status& status) {
  if (status.ok()) return;
  const absl::StatusCode code = status.code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kPermissionDenied &&
      code != absl::StatusCode::kFailedPrecondition) {
    FuzzFail("a secure comparison call failed with a code outside its contract");
  }
}

struct Sides {
  std::unique_ptr<ComparisonGarbler> garbler;
  std::unique_ptr<ComparisonEvaluator> evaluator;
  std::vector<std::string> messages;  // the honest ones so far
};

Sides Make() {
  absl::StatusOr<std::unique_ptr<ComparisonGarbler>> g =
      ComparisonGarbler::Create(Spec(), kGarblerInputs);
  absl::StatusOr<std::unique_ptr<ComparisonEvaluator>> e =
      ComparisonEvaluator::Create(Spec(), kEvaluatorInputs);
  if (!g.ok() || !e.ok()) FuzzFail("the fixed spec does not load");
  return {*std::move(g), *std::move(e), {}};
}

// Runs the honest messages 1 .. n.
void Honest(Sides& s, int n) {
  auto take = [&s](absl::StatusOr<std::string> m) {
    if (!m.ok()) FuzzFail("an honest step failed");
    s.messages.push_back(*std::move(m));
  };
  if (n >= 1) take(s.evaluator->Start());
  if (n >= 2) take(s.garbler->AnswerBase(s.messages[0]));
  if (n >= 3) take(s.evaluator->Extend(s.messages[1]));
  if (n >= 4) take(s.garbler->Garble(s.messages[2]));
}

void FuzzComparison(FuzzInput in) {
  const int step = in.Byte() % 5;
  const std::string_view message = in.Rest();
  Sides s = Make();
  Honest(s, step == 0 ? 1 : step);
  absl::Status status;
  switch (step) {
    case 0:
      status = s.garbler->AnswerBase(message).status();
      break;
    case 1:
      status = s.evaluator->Extend(message).status();
      break;
    case 2:
      status = s.garbler->Garble(message).status();
      break;
    case 3:
      status = s.evaluator->Evaluate(message).status();
      break;
    default: {
      absl::StatusOr<ComparisonResult> r = s.garbler->Finish(message);
      status = r.status();
      absl::StatusOr<ComparisonResult> plain =
          crypto::ComparePlain(Spec(), kGarblerInputs, kEvaluatorInputs);
      if (r.ok() && (!plain.ok() || *r != *plain)) {
        FuzzFail("Finish accepted a result the circuit did not give");
      }
      break;
    }
  }
  CheckContract(status);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() {
  Sides s = Make();
  Honest(s, 4);
  absl::StatusOr<std::string> m5 = s.evaluator->Evaluate(s.messages[3]);
  if (!m5.ok()) FuzzFail("an honest step failed");
  s.messages.push_back(*m5);
  std::vector<std::pair<std::string, std::string>> seeds;
  for (int k = 0; k < 5; ++k) {
    seeds.emplace_back("message-" + std::to_string(k + 1),
                       std::string(1, static_cast<char>(k)) + s.messages[k]);
  }
  seeds.emplace_back("message-3-in-place-of-1", std::string(1, '\0') + s.messages[2]);
  return seeds;
}

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzComparison(fedanon::fuzz::FuzzInput(data, size));
  return 0;
}
