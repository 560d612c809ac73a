#include "party/final_check_party.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/privacy_model.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/federation_wire.h"
#include "crypto/hash.h"
#include "crypto/secure_sum_masks.h"
#include "party/protocol_util.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using wire::DecodeWords;
using wire::EncodeWords;

namespace {

// The reply cache's key of a step: (phase, chunk), or for a comparison (comparison, step).
uint64_t StepKey(const fedanon::v1::FinalCheckStep& step) {
  if (step.phase() == fedanon::v1::FinalCheckStep::PHASE_COMPARE) {
    return (uint64_t{fedanon::v1::FinalCheckStep::PHASE_COMPARE} << 56) |
           (uint64_t{step.comparison()} << 8) | (step.comparison_step() & 0xff);
  }
  return (uint64_t{static_cast<uint32_t>(step.phase())} << 32) | step.chunk();
}

// The seal purpose of comparison `comparison`'s message of step `message_step`.
std::string ComparePurpose(const fedanon::v1::FinalCheckStep& step, uint32_t message_step,
                           uint64_t round, const std::string& chain) {
  return wire::FinalCheckPurpose(absl::StrCat("compare/", step.comparison(), "/", message_step),
                                 step, round, chain);
}

}  // namespace

bool FinalCheckParty::ModelHasDistribution() const {
  // The models whose groups must meet a sensitive distribution
  // (engine::PrivacyModel::distribution).
  const auto model = ctx_.spec.privacy().model();
  return model == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
         model == fedanon::v1::PRIVACY_MODEL_TCLOSENESS;
}

absl::Status FinalCheckParty::ReleaseAllowed(const std::string& what) const {
  if (ctx_.ring.size() < 2 || (two_parties() && ModelHasDistribution())) {
    // Two data parties and an ldiversity / tcloseness model: the secure comparisons check group
    // sizes and confidence bounds only, and the summed counts would reveal the other party's; the
    // check is not run and the groups rest on the leader's word (docs/threat-model.md).
    spdlog::info(
        "job={} {}: final check skipped (2 data parties and a sensitive-distribution model)",
        ctx_.job_id, what);
    return absl::OkStatus();
  }
  if (check_ && check_->passed) return absl::OkStatus();
  if (check_ && !check_->failure.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": refuses to release: ", check_->failure));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      what, ": refuses to release before the final check of the privacy model passed"));
}

absl::Status FinalCheckParty::Start(const fedanon::v1::FinalCheckStep& step, uint64_t round) {
  // The last instructions first; from here on the cut is fixed (ApplyUpdates refuses more).
  RETURN_IF_ERROR(tables_.ApplyUpdates(ctx_.spec, step.updates()));
  ASSIGN_OR_RETURN(const engine::PrivacyModel model,
                   engine::BuildPrivacyModel(ctx_.spec, *tables_.data));
  State check;
  if (tables_.local) {
    // Local recoding: this party's live groups (party/local_party.h).
    ASSIGN_OR_RETURN(check.layout, engine::LocalFinalCheckLayout(model, *tables_.data,
                                                                 tables_.local->live_groups()));
  } else {
    ASSIGN_OR_RETURN(check.layout, engine::BuildFinalCheckLayout(model, *tables_.data, tables_.hier,
                                                                 ctx_.spec.suppression_token()));
  }
  if (check.layout.words != step.total_words()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "final check: the request has ", step.total_words(),
        " words but the privacy model over this party's cut needs ", check.layout.words));
  }
  if (tables_.local) {
    check.counts = tables_.local->FinalCheckCounts();
  } else if (tables_.pushdown) {
    auto groups = tables_.pushdown->GroupCounts(tables_.hier);
    if (!groups.ok()) {
      spdlog::error("job={} push-down group counts failed: {}", ctx_.job_id,
                    std::string(groups.status().message()));
      return absl::UnavailableError(absl::StrCat(
          "party '", ctx_.self(),
          "': its database could not compute the group counts (details in the party's log)"));
    }
    ASSIGN_OR_RETURN(check.counts, engine::FinalCheckCountsOfGroups(check.layout, *tables_.data,
                                                                    tables_.hier, *groups));
  } else {
    ASSIGN_OR_RETURN(check.counts, engine::LocalFinalCheckCounts(check.layout, *tables_.data,
                                                                 tables_.hier, *tables_.tips));
  }
  ctx_.options().Deviation().FinalCheckCounts(&check.counts);
  if (two_parties()) {
    // The instances are named by round and cut: none is valid in another check of the job (the
    // sealed boxes that carry their messages bind the job and the run, so none opens in another
    // job; keeping job and run out of the name keeps two runs of one job byte-identical under
    // the tests' deterministic randomness).
    const std::string prefix = absl::StrCat("final-check/", round, "/",
                                            crypto::ToHex(crypto::Sha256(tables_.update_chain)));
    const uint64_t per_party = spec::MaxRecordsPerParty(ctx_.spec);
    ASSIGN_OR_RETURN(
        std::vector<FinalCheckComparison> plan,
        PlanFinalCheckComparisons(
            check.layout, per_party > UINT64_MAX / 2 ? UINT64_MAX / 2 : 2 * per_party, prefix));
    ASSIGN_OR_RETURN(check.comparisons,
                     FinalCheckComparisons::Create(std::move(plan), check.layout, check.counts,
                                                   ctx_.RingPosition() == 0
                                                       ? FinalCheckComparisons::Role::kGarbler
                                                       : FinalCheckComparisons::Role::kEvaluator));
  } else if (ctx_.RingPosition() == 0) {
    if (restored_mask_) {
      check.mask = *std::exchange(restored_mask_, std::nullopt);  // drawn before a restart
      if (check.mask.size() != check.layout.words) {
        return absl::DataLossError("final check: the recorded mask has the wrong length");
      }
    } else {
      ASSIGN_OR_RETURN(check.mask, crypto::MaskVector(check.layout.words));
    }
    ctx_.journal_extra = EncodeWords(check.mask);  // durable with this first answer
  }
  check.chain = tables_.update_chain;
  check.chunk_words = step.chunk_words();
  check.chunks = step.chunks();
  check.total.assign(check.layout.words, 0);
  check.have.assign(check.chunks, false);
  check_ = std::move(check);
  tables_.cut_fixed = true;  // ApplyUpdates refuses any update from here on
  spdlog::info("job={} round={} final check started: {} constraints, {} words", ctx_.job_id, round,
               check_->layout.constraints.size(), check_->layout.words);
  return absl::OkStatus();
}

absl::StatusOr<PartyMessage> FinalCheckParty::Step(const LeaderMessage& request) {
  using CheckStep = fedanon::v1::FinalCheckStep;
  const CheckStep& step = request.final_check();
  if (ctx_.ring.size() < 2) {
    return absl::FailedPreconditionError("final check: it needs two or more data parties");
  }
  const bool compare = step.phase() == CheckStep::PHASE_COMPARE;
  if (two_parties() && !compare && step.phase() != CheckStep::PHASE_VERIFY) {
    return absl::FailedPreconditionError(
        "final check: with two data parties the summed counts would reveal the other party's; "
        "the two compare securely instead (docs/threat-model.md)");
  }
  if (!two_parties() && compare) {
    return absl::FailedPreconditionError(
        "final check: secure comparisons are for two data parties; this job's ring sums");
  }
  if (compare && (step.chunk() != 0 || step.chunks() != 1)) {
    return absl::InvalidArgumentError("final check: the comparisons take the vector whole");
  }
  // A two-party check starts with this party's first step of comparison 0.
  const uint32_t first_step = ctx_.RingPosition() == 0 ? 2 : 1;
  const bool starts = compare ? step.comparison() == 0 && step.comparison_step() == first_step
                              : step.phase() == CheckStep::PHASE_SUM && step.chunk() == 0;
  // The chunking is fixed by chunk_words and total_words; nothing else is the leader's choice.
  if (step.total_words() == 0 || step.total_words() > engine::kMaxFinalCheckWords ||
      step.chunk_words() == 0 || step.chunk_words() > engine::kMaxFinalCheckWords ||
      step.chunks() != (step.total_words() + step.chunk_words() - 1) / step.chunk_words() ||
      step.chunk() >= step.chunks()) {
    return absl::InvalidArgumentError(
        absl::StrCat("final check: chunk ", step.chunk(), " of ", step.chunks(), " (",
                     step.chunk_words(), " words each, ", step.total_words(), " in all, at most ",
                     engine::kMaxFinalCheckWords, ") does not exist"));
  }
  const uint64_t key = StepKey(step);
  const std::string request_bytes = absl::StrCat(request.round(), "/", step.SerializeAsString());
  if (check_) {
    if (const auto* done = check_->answered.Find(key); done != nullptr) {
      if (done->fingerprint != request_bytes) {
        return absl::PermissionDeniedError(absl::StrCat(
            "final check: chunk ", step.chunk(),
            " was already answered for a different request (one request, one answer)"));
      }
      return done->reply;
    }
  }
  const uint64_t round = request.round();
  if (!check_) {
    if (!starts) {
      return absl::FailedPreconditionError(
          two_parties() ? absl::StrCat("final check: it starts with step ", first_step,
                                       " of comparison 0 here")
                        : std::string("final check: it starts with the sum of chunk 0"));
    }
    RETURN_IF_ERROR(Start(step, round));
  } else if (starts) {
    // Updates applied already are skipped; a new one is refused (the cut is fixed).
    RETURN_IF_ERROR(tables_.ApplyUpdates(ctx_.spec, step.updates()));
  }
  State& check = *check_;
  if (!step.updates().empty() && !starts) {
    return absl::InvalidArgumentError(
        two_parties() ? "final check: only this party's first comparison step carries state updates"
                      : "final check: only the first sum carries state updates");
  }
  if (step.total_words() != check.layout.words || step.chunk_words() != check.chunk_words) {
    return absl::InvalidArgumentError("final check: the chunking changed during the check");
  }
  const uint64_t offset = uint64_t{step.chunk()} * check.chunk_words;
  const Chunk chunk{.step = step,
                    .round = round,
                    .offset = offset,
                    .len = std::min<uint64_t>(check.chunk_words, check.layout.words - offset),
                    .hop_purpose = wire::FinalCheckPurpose("hop", step, round, check.chain),
                    .total_purpose = wire::FinalCheckPurpose("total", step, round, check.chain)};
  PartyMessage reply;
  auto* out = reply.mutable_final_check();
  switch (step.phase()) {
    case CheckStep::PHASE_SUM:
      RETURN_IF_ERROR(SumPhase(chunk, out));
      break;
    case CheckStep::PHASE_UNMASK:
      RETURN_IF_ERROR(UnmaskPhase(chunk, out));
      break;
    case CheckStep::PHASE_VERIFY:
      RETURN_IF_ERROR(VerifyPhase(chunk, out));
      break;
    case CheckStep::PHASE_COMPARE:
      RETURN_IF_ERROR(ComparePhase(chunk, out));
      break;
    default:
      return absl::InvalidArgumentError("final check: unknown phase");
  }
  check.answered.Put(key, request_bytes, reply);
  ctx_.fresh_answer = true;
  RETURN_IF_ERROR(AuditChunk(chunk, *out));
  return reply;
}

absl::StatusOr<std::vector<uint64_t>> FinalCheckParty::OpenInput(const Chunk& chunk,
                                                                 const std::string& sender,
                                                                 const std::string& purpose) const {
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  const uint64_t round = chunk.round;
  const uint64_t len = chunk.len;
  if (!step.has_input() || step.input().sender() != sender ||
      step.input().receiver() != ctx_.self()) {
    return absl::PermissionDeniedError(
        absl::StrCat("final check: input must be sealed by '", sender, "' for '", ctx_.self(), "'",
                     step.has_input() ? absl::StrCat(", got one from '", step.input().sender(), "'")
                                      : std::string(", got none")));
  }
  const crypto::SealContext context{ctx_.job_id, ctx_.run_id, round, sender, ctx_.self(), purpose};
  auto opened = crypto::OpenFrom(*ctx_.own_seal->keys, *ctx_.seal_keys.at(sender), context,
                                 step.input().ciphertext());
  if (!opened.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("final check: the input does not open as sealed by '", sender,
                     "' for this cut and chunk (forged sender, another cut or another round): ",
                     opened.status().message()));
  }
  ctx_.Observe(sender, purpose, *opened);
  ASSIGN_OR_RETURN(std::vector<uint64_t> words, DecodeWords(*opened));
  if (words.size() != len) {
    return absl::InvalidArgumentError("final check: a chunk has the wrong length");
  }
  return words;
}

absl::Status FinalCheckParty::SumPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out) {
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  const State& check = *check_;
  const size_t pos = ctx_.RingPosition();
  const bool first = pos == 0;
  const uint64_t offset = chunk.offset;
  const uint64_t len = chunk.len;
  std::vector<uint64_t> acc;
  if (first) {
    if (step.has_input()) {
      return absl::PermissionDeniedError(
          "final check: the ring's first party starts from its own mask, not the leader's "
          "input");
    }
    acc.assign(check.mask.begin() + offset, check.mask.begin() + offset + len);
  } else {
    ASSIGN_OR_RETURN(acc, OpenInput(chunk, ctx_.ring[pos - 1], chunk.hop_purpose));
  }
  RETURN_IF_ERROR(crypto::AddInPlace(absl::MakeSpan(acc),
                                     absl::MakeConstSpan(check.counts.data() + offset, len)));
  // The agreed successor; the last party seals for the ring's first, never for the leader.
  const std::string receiver = pos + 1 < ctx_.ring.size() ? ctx_.ring[pos + 1] : ctx_.ring.front();
  ASSIGN_OR_RETURN(*out->mutable_sealed(),
                   ctx_.SealFor(receiver, chunk.round, chunk.hop_purpose, EncodeWords(acc)));
  return absl::OkStatus();
}

absl::Status FinalCheckParty::UnmaskPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out) {
  const bool first = ctx_.RingPosition() == 0;
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  State& check = *check_;
  const uint64_t offset = chunk.offset;
  const uint64_t len = chunk.len;
  if (!first) {
    return absl::PermissionDeniedError("final check: only the ring's first party removes the mask");
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> sum,
                   OpenInput(chunk, ctx_.ring.back(), chunk.hop_purpose));
  RETURN_IF_ERROR(crypto::SubtractInPlace(absl::MakeSpan(sum),
                                          absl::MakeConstSpan(check.mask.data() + offset, len)));
  std::copy(sum.begin(), sum.end(), check.total.begin() + offset);
  check.have[step.chunk()] = true;
  const std::string bytes = EncodeWords(sum);
  for (size_t i = 1; i < ctx_.ring.size(); ++i) {
    ASSIGN_OR_RETURN(*out->add_totals(),
                     ctx_.SealFor(ctx_.ring[i], chunk.round, chunk.total_purpose, bytes));
  }
  return absl::OkStatus();
}

absl::Status FinalCheckParty::VerifyPhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out) {
  if (two_parties()) {
    State& check = *check_;
    if (chunk.step.has_input()) {
      return absl::PermissionDeniedError(
          "final check: with two data parties each verifies its own comparisons' results");
    }
    const absl::Status holds = check.comparisons->Verdict();
    if (!holds.ok()) {
      check.failure = std::string(holds.message());
      spdlog::error("job={} round={} {}; refusing to release", ctx_.job_id, chunk.round,
                    check.failure);
      return absl::FailedPreconditionError(absl::StrCat("refuses to release: ", check.failure));
    }
    check.passed = true;
    out->set_passed(true);
    spdlog::info(
        "job={} round={} final check passed: {} secure comparisons with the other data party held",
        ctx_.job_id, chunk.round, check.comparisons->instances());
    return absl::OkStatus();
  }
  const bool first = ctx_.RingPosition() == 0;
  const uint64_t offset = chunk.offset;
  const uint64_t round = chunk.round;
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  State& check = *check_;
  if (first) {
    if (step.has_input()) {
      return absl::PermissionDeniedError(
          "final check: the ring's first party verifies the total it unmasked itself");
    }
  } else {
    ASSIGN_OR_RETURN(std::vector<uint64_t> total,
                     OpenInput(chunk, ctx_.ring.front(), chunk.total_purpose));
    std::copy(total.begin(), total.end(), check.total.begin() + offset);
    check.have[step.chunk()] = true;
  }
  if (std::find(check.have.begin(), check.have.end(), false) != check.have.end()) {
    if (step.chunk() + 1 == check.chunks) {
      return absl::FailedPreconditionError(
          "final check: asked to verify before every chunk of the total arrived");
    }
    return absl::OkStatus();  // more chunks to come
  }
  // Bounds first: a total no honest ring produces is named as such, not as a privacy failure.
  const uint64_t per_party = spec::MaxRecordsPerParty(ctx_.spec);
  const uint64_t parties = ctx_.ring.size();
  absl::Status holds = engine::CheckFinalTotalsBounds(
      check.layout, check.total, check.counts,
      per_party > UINT64_MAX / parties ? UINT64_MAX : per_party * parties);
  if (holds.ok()) holds = engine::CheckFinalCounts(check.layout, check.total);
  if (!holds.ok()) {
    check.failure = std::string(holds.message());
    spdlog::error("job={} round={} {}; refusing to release", ctx_.job_id, round, check.failure);
    return absl::FailedPreconditionError(absl::StrCat("refuses to release: ", check.failure));
  }
  check.passed = true;
  out->set_passed(true);
  spdlog::info(
      "job={} round={} final check passed: the privacy model holds on the global "
      "counts of the final cut",
      ctx_.job_id, round);
  return absl::OkStatus();
}

absl::Status FinalCheckParty::ComparePhase(const Chunk& chunk, fedanon::v1::FinalCheckResult* out) {
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  State& check = *check_;
  const uint32_t s = step.comparison_step();
  const std::string& other = ctx_.ring[ctx_.RingPosition() == 0 ? 1 : 0];
  const bool chunked_input = !step.input_ref().stream().empty();
  std::string message;
  if (s == 1) {
    if (step.has_input() || chunked_input) {
      return absl::PermissionDeniedError(
          "final check: a comparison's first step takes no input from the leader");
    }
  } else {
    // What this party opens goes to the tests' observers (the comparisons' randomness comes from
    // the parties' kept seeds, so two honest runs open the same bytes).
    ASSIGN_OR_RETURN(message,
                     transfer_.OpenPayloadFrom(
                         other, step.input(), step.input_ref(), chunk.round,
                         ComparePurpose(step, s - 1, chunk.round, check.chain),
                         absl::StrCat("final check: comparison ", step.comparison(), " step ", s),
                         "this comparison, step, cut and round"));
  }
  out->set_comparisons(static_cast<uint32_t>(check.comparisons->instances()));
  // This party's first step of an instance draws the instance's seed (or takes the one drawn
  // before a restart), durable with this answer: a restart runs the steps again from it.
  std::string seed;
  if (s <= 2) {
    ASSIGN_OR_RETURN(seed,
                     crypto::KeptOrNewComparisonSeed(std::exchange(restored_compare_seed_, "")));
    if (!ctx_.replaying) ctx_.journal_extra = seed;
  }
  ASSIGN_OR_RETURN(const std::string next,
                   check.comparisons->Step(step.comparison(), static_cast<int>(s), message, seed));
  if (s < crypto::kComparisonSteps) {
    // A stream's name comes from the step (one comparison, one step: one message).
    transfer_.StartProducing(
        absl::StrCat("final-check/", step.comparison(), "/", s),
        crypto::Sha256(absl::StrCat(chunk.round, "/", step.SerializeAsString())));
    const absl::Status sealed =
        transfer_.SealMessage(other, chunk.round, ComparePurpose(step, s, chunk.round, check.chain),
                              next, out->mutable_sealed(), out->mutable_sealed_ref());
    transfer_.StopProducing();
    RETURN_IF_ERROR(sealed);
    if (!out->sealed_ref().stream().empty()) out->clear_sealed();  // in chunks, not whole
  }
  return absl::OkStatus();
}

absl::Status FinalCheckParty::AuditChunk(const Chunk& chunk,
                                         const fedanon::v1::FinalCheckResult& out) const {
  const fedanon::v1::FinalCheckStep& step = chunk.step;
  const State& check = *check_;
  const uint64_t offset = chunk.offset;
  const uint64_t len = chunk.len;
  // This party's own final-cut counts of the chunk (PHASE_SUM: they left masked and sealed), the
  // totals it sealed (PHASE_UNMASK), or its verdict to the leader (PHASE_VERIFY).
  AuditEntry entry{.kind = kAuditFinalCheck,
                   .numbers = {{"phase", static_cast<uint64_t>(step.phase())},
                               {"chunk", step.chunk()},
                               {"offset", offset},
                               {"words", len}}};
  if (step.phase() == fedanon::v1::FinalCheckStep::PHASE_COMPARE) {
    // A garbled-circuit or OT message for the other party (it carries no count in the clear),
    // or nothing but the number of comparisons (public: the layout's).
    entry.numbers = {{"phase", static_cast<uint64_t>(step.phase())},
                     {"comparison", step.comparison()},
                     {"step", step.comparison_step()},
                     {"comparisons", out.comparisons()}};
    const bool chunked = !out.sealed_ref().stream().empty();
    entry.form = out.has_sealed() || chunked ? kAuditSealed : kAuditPlaintext;
    entry.to = {out.has_sealed() ? out.sealed().receiver()
                : chunked        ? out.sealed_ref().receiver()
                                 : ctx_.leader};
  } else if (out.has_sealed()) {
    entry.form = kAuditMaskedSealed;
    entry.to = {out.sealed().receiver()};
    entry.has_counts = true;
    entry.counts = {check.counts.begin() + static_cast<ptrdiff_t>(offset),
                    check.counts.begin() + static_cast<ptrdiff_t>(offset + len)};
  } else if (out.totals_size() > 0) {
    entry.form = kAuditSealed;
    entry.to = Receivers(out.totals());
  } else {
    entry.form = kAuditPlaintext;
    entry.to = {ctx_.leader};
    entry.numbers.emplace_back("passed", out.passed() ? 1 : 0);
  }
  return ctx_.Audit(chunk.round, std::move(entry));
}

absl::Status FinalCheckParty::Replay(const LeaderMessage& request, const PartyMessage& stored,
                                     const std::string& extra) {
  if (request.final_check().phase() == fedanon::v1::FinalCheckStep::PHASE_COMPARE) {
    if (!extra.empty()) restored_compare_seed_ = extra;
    const absl::Status replayed = Step(request).status();
    restored_compare_seed_.clear();
    RETURN_IF_ERROR(replayed);
  } else {
    if (!extra.empty()) {
      ASSIGN_OR_RETURN(std::vector<uint64_t> mask, DecodeWords(extra));
      RestoreMask(std::move(mask));
    }
    RETURN_IF_ERROR(Step(request).status());
  }
  RestoreReply(request.final_check(), stored);
  return absl::OkStatus();
}

void FinalCheckParty::RestoreReply(const fedanon::v1::FinalCheckStep& step, PartyMessage reply) {
  if (!check_) return;
  check_->answered.SetReply(StepKey(step), std::move(reply));
}

}  // namespace fedanon::party
