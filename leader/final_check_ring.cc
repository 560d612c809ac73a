#include "leader/final_check_ring.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "crypto/secure_comparison.h"
#include "leader/payload_relay.h"

namespace fedanon::leader {

using fedanon::v1::FinalCheckStep;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

namespace {

// The request of one phase of the final check for one chunk of the vector.
LeaderMessage FinalCheckMessage(const FinalCheckRing& ring, FinalCheckStep::Phase phase,
                                uint32_t chunk, uint32_t chunks, uint64_t total_words) {
  LeaderMessage msg;
  msg.set_job_id(ring.job_id);
  msg.set_round(ring.round);
  FinalCheckStep* step = msg.mutable_final_check();
  step->set_phase(phase);
  step->set_chunk(chunk);
  step->set_chunks(chunks);
  step->set_chunk_words(ring.chunk_words);
  step->set_total_words(total_words);
  return msg;
}

// `msg` to `party` (unless the job was cancelled): its final-check reply.
absl::StatusOr<fedanon::v1::FinalCheckResult> CallFinalCheck(const FinalCheckRing& ring,
                                                             const std::string& party,
                                                             const LeaderMessage& msg) {
  RETURN_IF_ERROR(ring.check());
  ASSIGN_OR_RETURN(PartyMessage reply, ring.channel->Call(party, msg, ring.timeout));
  if (!reply.has_final_check()) {
    return absl::InternalError(absl::StrCat("party '", party, "' sent no final-check reply"));
  }
  return reply.final_check();
}

// Asks `party` for its verdict (`verify`): a refusal, or a verdict without `passed`, is recorded in
// `refusals`; a cancellation is returned.
absl::Status CollectVerdict(const FinalCheckRing& ring, const std::string& party,
                            const LeaderMessage& verify, std::vector<std::string>* refusals) {
  absl::StatusOr<fedanon::v1::FinalCheckResult> verdict = CallFinalCheck(ring, party, verify);
  if (!verdict.ok()) {
    if (verdict.status().code() == absl::StatusCode::kCancelled) return verdict.status();
    refusals->emplace_back(verdict.status().message());  // "party 'x': refuses to ..."
  } else if (!verdict->passed()) {
    refusals->push_back(absl::StrCat("party '", party, "': did not confirm the check"));
  }
  return absl::OkStatus();
}

// OK when no party refused; otherwise FailedPrecondition naming each refusal.
absl::Status NoRefusal(const std::vector<std::string>& refusals) {
  if (refusals.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("final check: the parties refuse to release: ", absl::StrJoin(refusals, "; ")));
}

}  // namespace

absl::Status RunFinalCheck(const FinalCheckRing& ring,
                           const std::vector<fedanon::v1::StateUpdate>& updates,
                           uint64_t total_words) {
  if (ring.ring.size() < 3) {
    return absl::FailedPreconditionError("the final check needs three or more data parties");
  }
  if (total_words == 0 || ring.chunk_words == 0) {
    return absl::InvalidArgumentError("the final check has an empty vector");
  }
  const uint64_t chunks64 = (total_words + ring.chunk_words - 1) / ring.chunk_words;
  if (chunks64 > UINT32_MAX) return absl::InvalidArgumentError("final check: too many chunks");
  const uint32_t chunks = static_cast<uint32_t>(chunks64);
  auto message = [&](FinalCheckStep::Phase phase, uint32_t chunk) {
    return FinalCheckMessage(ring, phase, chunk, chunks, total_words);
  };
  auto call = [&](const std::string& party, const LeaderMessage& msg) {
    return CallFinalCheck(ring, party, msg);
  };
  std::vector<std::string> refusals;
  for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
    // The ring sum: the first party starts from its own mask; each box is for the next party,
    // the last one for the first party again.
    fedanon::v1::SealedPayload carried;
    for (size_t i = 0; i < ring.ring.size(); ++i) {
      LeaderMessage msg = message(FinalCheckStep::PHASE_SUM, chunk);
      if (chunk == 0) {
        for (const auto& u : updates) *msg.mutable_final_check()->add_updates() = u;
      }
      if (i > 0) *msg.mutable_final_check()->mutable_input() = carried;
      ASSIGN_OR_RETURN(fedanon::v1::FinalCheckResult result, call(ring.ring[i], msg));
      carried = result.sealed();
    }
    LeaderMessage unmask = message(FinalCheckStep::PHASE_UNMASK, chunk);
    *unmask.mutable_final_check()->mutable_input() = carried;
    ASSIGN_OR_RETURN(fedanon::v1::FinalCheckResult totals, call(ring.ring.front(), unmask));
    std::map<std::string, fedanon::v1::SealedPayload> for_party;
    for (const auto& box : totals.totals()) for_party[box.receiver()] = box;
    // Every party verifies; after the last chunk each checks the model on its own.
    const bool last = chunk + 1 == chunks;
    for (size_t i = 0; i < ring.ring.size(); ++i) {
      const std::string& party = ring.ring[i];
      if (i == 0 && !last) continue;  // the first party has the total already
      LeaderMessage verify = message(FinalCheckStep::PHASE_VERIFY, chunk);
      if (i > 0) {
        auto box = for_party.find(party);
        if (box == for_party.end()) {
          return absl::InternalError(
              absl::StrCat("the ring's first party sealed no total for '", party, "'"));
        }
        *verify.mutable_final_check()->mutable_input() = box->second;
      }
      if (last) {
        RETURN_IF_ERROR(CollectVerdict(ring, party, verify, &refusals));
      } else {
        RETURN_IF_ERROR(call(party, verify).status());  // a chunk of the total, no verdict yet
      }
    }
  }
  return NoRefusal(refusals);
}

absl::StatusOr<uint32_t> RunTwoPartyFinalCheck(const FinalCheckRing& ring,
                                               const std::vector<fedanon::v1::StateUpdate>& updates,
                                               uint64_t total_words) {
  if (ring.ring.size() != 2) {
    return absl::FailedPreconditionError("the two-party final check needs two data parties");
  }
  if (total_words == 0) return absl::InvalidArgumentError("the final check has an empty vector");
  const std::string& garbler = ring.ring[0];
  const std::string& evaluator = ring.ring[1];
  FinalCheckRing whole = ring;
  whole.chunk_words = total_words;  // the comparisons take the vector whole
  uint32_t comparisons = 1;         // known after the first step
  // Each message, whole or (chunked jobs) in chunks fetched from its sender and handed to its
  // receiver ahead of the step that names it.
  const PayloadRelay relay(ring.channel, ring.job_id, ring.check);
  for (uint32_t c = 0; c < comparisons; ++c) {
    CarriedPayload carried;
    for (uint32_t s = 1; s <= crypto::kComparisonSteps; ++s) {
      LeaderMessage msg =
          FinalCheckMessage(whole, FinalCheckStep::PHASE_COMPARE, 0, 1, total_words);
      msg.mutable_final_check()->set_comparison(c);
      msg.mutable_final_check()->set_comparison_step(s);
      // Each party's first step of the first comparison carries the pending updates.
      if (c == 0 && s <= 2) {
        for (const auto& u : updates) *msg.mutable_final_check()->add_updates() = u;
      }
      if (s > 1) {
        RETURN_IF_ERROR(relay.Hand(carried, ring.round, ring.timeout,
                                   msg.mutable_final_check()->mutable_input(),
                                   msg.mutable_final_check()->mutable_input_ref()));
      }
      const std::string& party = s % 2 == 1 ? evaluator : garbler;
      ASSIGN_OR_RETURN(fedanon::v1::FinalCheckResult result, CallFinalCheck(ring, party, msg));
      if (c == 0 && s <= 2) {
        if (s == 1) {
          comparisons = result.comparisons();
        } else if (result.comparisons() != comparisons) {
          return absl::FailedPreconditionError(
              absl::StrCat("final check: the data parties plan different comparisons ('", evaluator,
                           "': ", comparisons, ", '", garbler, "': ", result.comparisons(), ")"));
        }
        if (comparisons == 0) {
          return absl::InternalError("final check: the parties planned no comparison");
        }
      }
      if (s < crypto::kComparisonSteps) {
        ASSIGN_OR_RETURN(carried, relay.Fetch(party, ring.round, ring.timeout, result.sealed(),
                                              result.sealed_ref()));
      }
    }
  }
  std::vector<std::string> refusals;
  const LeaderMessage verify =
      FinalCheckMessage(whole, FinalCheckStep::PHASE_VERIFY, 0, 1, total_words);
  for (const std::string& party : ring.ring) {
    RETURN_IF_ERROR(CollectVerdict(ring, party, verify, &refusals));
  }
  RETURN_IF_ERROR(NoRefusal(refusals));
  return comparisons;
}

}  // namespace fedanon::leader
