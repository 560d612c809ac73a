#include "party/secure_sum_party.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/count_source.h"
#include "common/engine/numeric_split.h"
#include "common/engine/privacy_model.h"
#include "common/wire/federation_wire.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"
#include "crypto/secure_comparison.h"
#include "crypto/secure_sum_masks.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using wire::DecodeWords;
using wire::EncodeWords;
using wire::FromProto;

absl::Status SecureSumParty::CheckRequest(const fedanon::v1::SumStep& step,
                                          const engine::StatsRequest& stats_request,
                                          bool local_release) const {
  if (!stats_request.released_groups.empty() || local_release) {
    // The released table as counts is the result itself: only for a leader the admin signed
    // as the recipient (a party recipient gets the rows through the union, sealed for it).
    if (ctx_.recipient != ctx_.leader) {
      return absl::PermissionDeniedError(absl::StrCat(
          "released counts: the admin signed '", ctx_.recipient,
          "' as the recipient, not the leader; the released table goes only to its recipient"));
    }
    RETURN_IF_ERROR(final_check_.ReleaseAllowed("released counts"));
  }
  if (step.request().has_local() && !tables_.local) {
    return absl::PermissionDeniedError(
        "secure sum: local-recoding statistics in a job without recoding: local");
  }
  if (tables_.local &&
      (step.request().has_local() != stats_request.empty() ||
       !stats_request.rank_histograms.empty() || !stats_request.node_class_counts.empty() ||
       !stats_request.group_keys.empty() || !stats_request.released_groups.empty())) {
    return absl::PermissionDeniedError(
        "secure sum: a job with recoding: local is asked only for its groups' statistics or "
        "public-cell range counts");
  }
  if (final_check_.started() &&
      ((stats_request.released_groups.empty() && !local_release) ||
       !stats_request.rank_histograms.empty() || !stats_request.node_class_counts.empty() ||
       !stats_request.group_keys.empty() || !stats_request.range_counts.empty())) {
    return absl::PermissionDeniedError(
        "secure sum: after the final check only the released counts may be summed");
  }
  if (!stats_request.released_groups.empty() &&
      (!tables_.data->all_values_declared ||
       stats_request.released_combinations != tables_.data->ValueCombinations())) {
    return absl::InvalidArgumentError("released counts requested over an undeclared domain");
  }
  return absl::OkStatus();
}

absl::Status SecureSumParty::StartCollect(const fedanon::v1::SumStep& step, size_t pos) {
  RETURN_IF_ERROR(tables_.ApplyUpdates(ctx_.spec, step.updates()));
  ASSIGN_OR_RETURN(engine::StatsRequest stats_request, FromProto(step.request(), tables_.hier));
  RETURN_IF_ERROR(engine::CheckNumericRequest(stats_request, tables_.hier,
                                              engine::NumericSplitFromSpec(ctx_.spec)));
  // A local job's released counts (LocalStatsRequest.released_groups): LocalParty::Answer
  // checks the groups are exactly this party's final ones; released like global counts.
  const bool local_release =
      step.request().has_local() && (step.request().local().released_groups_size() > 0 ||
                                     step.request().local().released_combinations() != 0);
  RETURN_IF_ERROR(CheckRequest(step, stats_request, local_release));
  const engine::NumericSplitConfig numeric = engine::NumericSplitFromSpec(ctx_.spec);
  RETURN_IF_ERROR(tables_.RecordBins(stats_request, numeric));
  guarded_ = engine::GuardedRanges(stats_request, tables_.data->num_classes(), numeric);
  local_bins_ = step.request().has_local() && tables_.local != nullptr;
  if (local_bins_) {
    // A local job's labelled ranges are its within-group bins: asked once per group and
    // attribute, each guarded like a global bin (with the within-group bound).
    RETURN_IF_ERROR(tables_.local->RecordRanges(step.request().local()));
    guarded_ = tables_.local->GuardedRanges(step.request().local());
  }
  guarded_totals_.assign(guarded_.size(), 0);
  bin_check_.reset();
  bin_answers_.Clear();
  bins_held_ = false;
  counts_.clear();
  if (step.request().has_local()) {
    ASSIGN_OR_RETURN(counts_, tables_.local->Answer(step.request().local()));
  } else if (tables_.pushdown) {
    // The same request checks as above; only the computation moves into the database.
    if (absl::Status st = tables_.pushdown->AppendStats(tables_.hier, stats_request, &counts_);
        !st.ok()) {
      spdlog::error("job={} push-down statistics failed: {}", ctx_.job_id,
                    std::string(st.message()));
      return absl::UnavailableError(absl::StrCat(
          "party '", ctx_.self(),
          "': its database could not compute the statistics (details in the party's log)"));
    }
  } else {
    engine::AppendLocalStats(*tables_.tips, stats_request, &counts_);
  }
  counts_release_ = !stats_request.released_groups.empty() || local_release;
  if (counts_release_) {
    ctx_.options().Deviation().ReleasedCounts(stats_request.released_combinations, &counts_);
  }
  collect_ = step.collect();
  digest_ = wire::SumRequestDigest(step.request(), tables_.update_chain);
  chunks_ = step.chunks();
  answered_.Clear();
  unmask_.Reset();
  seed_.clear();
  if (pos == 0) {
    // The ring's first party masks the whole vector with its own mask, drawn once per collect
    // (or the one drawn before a restart), durable with this first answer.
    if (restored_seed_) {
      seed_ = *std::exchange(restored_seed_, std::nullopt);
    } else {
      ASSIGN_OR_RETURN(const crypto::SecretBytes seed, crypto::RandomBytes(crypto::kMaskSeedBytes));
      seed_ = std::string(seed.AsStringView());
    }
    if (seed_.size() != crypto::kMaskSeedBytes) {
      return absl::DataLossError("secure sum: the recorded mask seed has the wrong length");
    }
    if (!ctx_.replaying) ctx_.journal_extra = seed_;
  }
  return absl::OkStatus();
}

absl::StatusOr<PartyMessage> SecureSumParty::Step(const LeaderMessage& request) {
  const auto& step = request.sum_step();
  // Routing: fixed by the ring agreed at Prepare, whatever the request says.
  const size_t pos = ctx_.RingPosition();
  const std::string successor = pos + 1 < ctx_.ring.size() ? ctx_.ring[pos + 1] : "";
  if (step.next() != successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure sum: next is '", step.next(),
                     "' but this party's successor in the ring agreed at "
                     "Prepare is ",
                     successor.empty() ? "the leader (empty next)" : "'" + successor + "'"));
  }
  ASSIGN_OR_RETURN(const uint64_t chunk_len, wire::SumChunkLength(step));
  if (collect_ != UINT64_MAX && step.collect() < collect_) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure sum: collect ", step.collect(), " is older than collect ", collect_,
                     ", already answered (one request, one answer)"));
  }
  if (step.collect() != collect_) {
    // The request travels with the first chunk only; later chunks reuse the counts.
    if (step.chunk() != 0) {
      return absl::InvalidArgumentError(absl::StrCat("secure sum: chunk ", step.chunk(),
                                                     " of collect ", step.collect(),
                                                     " arrived before its first chunk"));
    }
    RETURN_IF_ERROR(StartCollect(step, pos));
    collect_round_ = request.round();
  } else if (step.chunk() == 0) {
    // The same collect again: it must be the same request (the updates were applied already,
    // so applying them again changes nothing unless they differ).
    RETURN_IF_ERROR(tables_.ApplyUpdates(ctx_.spec, step.updates()));
    if (wire::SumRequestDigest(step.request(), tables_.update_chain) != digest_) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: collect ", step.collect(),
                       " was already answered for a different request (one request, one answer)"));
    }
  } else if (step.has_request() || !step.updates().empty()) {
    return absl::InvalidArgumentError("secure sum: only the first chunk carries the request");
  }
  if (counts_.size() != step.total_words()) {
    return absl::InvalidArgumentError(absl::StrCat("the secure sum has ", step.total_words(),
                                                   " words but this request needs ",
                                                   counts_.size()));
  }
  const std::string purpose = wire::SumHopPurpose(step, request.round(), digest_);
  if (const auto* done = answered_.Find(step.chunk()); done != nullptr) {
    if (done->fingerprint != purpose) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: chunk ", step.chunk(), " of collect ", step.collect(),
                       " was already answered for a different request (one request, one answer)"));
    }
    RETURN_IF_ERROR(ctx_.Audit(
        request.round(),
        {.kind = kAuditSecureSum,
         .form = kAuditMaskedSealed,
         .to = {done->reply.sum_step().sealed().receiver()},
         .numbers = {{"collect", step.collect()}, {"chunk", step.chunk()}, {"repeat", 1}}}));
    return done->reply;  // the same request: the same answer
  }
  if (step.chunks() != chunks_) {
    return absl::InvalidArgumentError("secure sum: the chunking changed within a collect");
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> acc,
                   HopInput(step, request.round(), pos, chunk_len, purpose));
  RETURN_IF_ERROR(crypto::AddInPlace(
      absl::MakeSpan(acc), absl::MakeConstSpan(counts_.data() + step.chunk_offset(), acc.size())));
  if (successor.empty()) {
    // The ring's last party keeps the masked totals of the guarded ranges it seals for the
    // leader: its input to the bin check.
    const uint64_t lo = step.chunk_offset();
    const uint64_t hi = lo + acc.size();
    for (size_t g = 0; g < guarded_.size(); ++g) {
      const uint64_t from = std::max(lo, guarded_[g].offset);
      const uint64_t to = std::min(hi, guarded_[g].offset + guarded_[g].words);
      for (uint64_t w = from; w < to; ++w) guarded_totals_[g] += acc[w - lo];
    }
  }
  // Sealed for the agreed successor, the last party's for the leader.
  return SealHop(step, request.round(), successor.empty() ? ctx_.leader : successor, purpose, acc);
}

absl::StatusOr<std::vector<uint64_t>> SecureSumParty::HopInput(const fedanon::v1::SumStep& step,
                                                               uint64_t round, size_t pos,
                                                               uint64_t chunk_len,
                                                               const std::string& purpose) const {
  std::vector<uint64_t> acc;
  if (pos == 0) {
    if (step.has_sealed()) {
      return absl::PermissionDeniedError(
          "secure sum: the ring's first party starts from its own mask, not from an input of the "
          "leader's");
    }
    ASSIGN_OR_RETURN(
        acc, crypto::MaskWordsFromSeed(seed_, step.chunk_offset(), static_cast<size_t>(chunk_len)));
  } else {
    const std::string& predecessor = ctx_.ring[pos - 1];
    if (!step.has_sealed() || step.sealed().sender() != predecessor ||
        step.sealed().receiver() != ctx_.self()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "secure sum: input must be sealed by '", predecessor,
          "' (the predecessor agreed at Prepare) for '", ctx_.self(), "'",
          step.has_sealed() ? absl::StrCat(", got one from '", step.sealed().sender(), "'")
                            : std::string(", got none")));
    }
    const crypto::SealContext context{ctx_.job_id, ctx_.run_id, round,
                                      predecessor, ctx_.self(), purpose};
    auto opened = crypto::OpenFrom(*ctx_.own_seal->keys, *ctx_.seal_keys.at(predecessor), context,
                                   step.sealed().ciphertext());
    if (!opened.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("secure sum: the input does not open as sealed by '", predecessor,
                       "' for this request (forged sender, other request or other round): ",
                       opened.status().message()));
    }
    ctx_.Observe(predecessor, purpose, *opened);
    ASSIGN_OR_RETURN(acc, DecodeWords(*opened));
    if (acc.size() != chunk_len) {
      return absl::InvalidArgumentError(absl::StrCat("secure sum: the input of chunk ",
                                                     step.chunk(), " has ", acc.size(),
                                                     " words, not ", chunk_len));
    }
  }
  return acc;
}

absl::StatusOr<PartyMessage> SecureSumParty::SealHop(const fedanon::v1::SumStep& step,
                                                     uint64_t round, const std::string& receiver,
                                                     const std::string& purpose,
                                                     const std::vector<uint64_t>& acc) {
  const crypto::SealContext context{ctx_.job_id, ctx_.run_id, round,
                                    ctx_.self(), receiver,    purpose};
  ASSIGN_OR_RETURN(std::string sealed,
                   crypto::SealFrom(*ctx_.own_seal->keys, *ctx_.seal_keys.at(receiver), context,
                                    EncodeWords(acc)));
  PartyMessage reply;
  auto* out = reply.mutable_sum_step()->mutable_sealed();
  out->set_sender(ctx_.self());
  out->set_receiver(receiver);
  out->set_purpose(purpose);
  out->set_ciphertext(std::move(sealed));
  // The ring's first party, answering the collect's last chunk: every chunk has gone from it, so
  // its mask goes to the leader with this answer (protocol 2.1), not in a SumUnmask of its own.
  // A collect with bins keeps it until their check held (BinCheck, Unmask).
  if (!seed_.empty() && answered_.size() + 1 == chunks_ && guarded_.empty()) {
    ASSIGN_OR_RETURN(const PartyMessage mask, SealMask());
    *reply.mutable_sum_step()->mutable_mask_seed() = mask.sum_mask().seed();
  }
  answered_.Put(step.chunk(), purpose, reply);
  ctx_.fresh_answer = true;
  // This party's own counts of the chunk, in plaintext; they left masked and sealed.
  RETURN_IF_ERROR(ctx_.Audit(
      round,
      {.kind = kAuditSecureSum,
       .form = kAuditMaskedSealed,
       .to = {receiver},
       .numbers = {{"collect", step.collect()},
                   {"chunk", step.chunk()},
                   {"offset", step.chunk_offset()},
                   {"words", acc.size()},
                   {"total_words", counts_.size()}},
       .texts = {{"purpose", counts_release_ ? "released-counts" : "statistics"}},
       .has_counts = true,
       .counts = {counts_.begin() + static_cast<ptrdiff_t>(step.chunk_offset()),
                  counts_.begin() + static_cast<ptrdiff_t>(step.chunk_offset() + acc.size())}}));
  return reply;
}

absl::StatusOr<PartyMessage> SecureSumParty::Unmask(const LeaderMessage& request) {
  if (ctx_.ring.front() != ctx_.self()) {
    return absl::PermissionDeniedError(
        "secure sum: only the ring's first party masks the sum; this party holds no mask");
  }
  const uint64_t collect = request.sum_unmask().collect();
  const std::string key = absl::StrCat(request.round(), "/", collect);
  // The seed is sealed under the collect's round: another round would seal it where the leader
  // does not look (found by the mutating leader: the job then failed at the leader, unnamed).
  if (collect == collect_ && !seed_.empty() && request.round() != collect_round_) {
    return absl::InvalidArgumentError(
        absl::StrCat("secure sum: the mask of collect ", collect, " is asked in round ",
                     request.round(), ", but the collect was summed in round ", collect_round_));
  }
  if (unmask_.has_value()) {
    if (const PartyMessage* same = unmask_.Same(key)) return *same;
    return absl::PermissionDeniedError(absl::StrCat(
        "secure sum: the mask of collect ", collect,
        " is not held, or was handed over already for another request (one request, one answer)"));
  }
  if (collect != collect_ || seed_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: no mask of collect ", collect, " is held (the current collect is ",
        collect_ == UINT64_MAX ? std::string("none") : absl::StrCat(collect_), ")"));
  }
  if (answered_.size() != chunks_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: the mask of collect ", collect, " goes to the leader only after every chunk ",
        "went round the ring (", answered_.size(), " of ", chunks_, " answered)"));
  }
  if (!guarded_.empty() && !bins_held_) {
    ASSIGN_OR_RETURN(const uint64_t bound, BinBound());
    return absl::PermissionDeniedError(absl::StrCat(
        "secure sum: the mask of collect ", collect,
        " is handed over only once its bin check showed every bin of its class counts empty or "
        "holding at least ",
        bound, " records (numeric_split: binned); the check has not held"));
  }
  return SealMask();
}

absl::StatusOr<PartyMessage> SecureSumParty::SealMask() {
  PartyMessage reply;
  ASSIGN_OR_RETURN(*reply.mutable_sum_mask()->mutable_seed(),
                   ctx_.SealFor(ctx_.leader, collect_round_,
                                wire::SumMaskPurpose(collect_, collect_round_, digest_), seed_));
  unmask_.Put(absl::StrCat(collect_round_, "/", collect_), reply);
  ctx_.fresh_answer = true;
  RETURN_IF_ERROR(
      ctx_.Audit(collect_round_, {.kind = kAuditSumMask,
                                  .form = kAuditSealed,
                                  .to = {ctx_.leader},
                                  .numbers = {{"collect", collect_}, {"words", counts_.size()}}}));
  return reply;
}

void SecureSumParty::RestoreUnmask(const LeaderMessage& request, PartyMessage reply) {
  if (request.sum_unmask().collect() != collect_) return;  // an older collect's mask
  unmask_.Put(absl::StrCat(request.round(), "/", request.sum_unmask().collect()), std::move(reply));
}

absl::StatusOr<uint64_t> SecureSumParty::BinBound() {
  if (!bin_bound_) {
    ASSIGN_OR_RETURN(const engine::PrivacyModel model,
                     engine::BuildPrivacyModel(ctx_.spec, *tables_.data));
    bin_bound_ = std::max<uint64_t>(
        1, engine::SplitBinBound(model, engine::NumericSplitFromSpec(ctx_.spec).min_split_bin));
    // Local recoding's within-group bins (engine::LocalRecoder's rule).
    local_bin_bound_ =
        engine::WithinGroupBinBound(model, engine::NumericSplitFromSpec(ctx_.spec).min_split_bin);
  }
  return local_bins_ ? local_bin_bound_ : *bin_bound_;
}

namespace {

absl::Status BinsBelowBound(uint64_t collect, uint64_t bound) {
  return absl::PermissionDeniedError(absl::StrCat(
      "secure sum: the bin check of collect ", collect,
      " failed: a bin whose class counts the leader asked for holds fewer than ", bound,
      " records and is not empty; its class counts stay masked (numeric_split: binned)"));
}

uint32_t BinCheckBits(uint64_t bound) {
  // A bin's records modulo 2^40: exact for every union of fewer than 2^40 records. A larger bin
  // could only be refused by mistake (its count modulo 2^40 below the bound), never opened below
  // it, since every count below the bound is below 2^40 and computed exactly.
  constexpr uint32_t kBits = 40;
  return bound < (uint64_t{1} << kBits) ? kBits : 64;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> SecureSumParty::BinCheckInputs(bool garbler,
                                                                     uint32_t bits) const {
  const uint64_t low = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  std::vector<uint64_t> inputs;
  inputs.reserve(guarded_.size());
  if (!garbler) {
    for (uint64_t total : guarded_totals_) inputs.push_back(total & low);
    return inputs;
  }
  for (const engine::GuardedRange& g : guarded_) {
    ASSIGN_OR_RETURN(const std::vector<uint64_t> mask,
                     crypto::MaskWordsFromSeed(seed_, g.offset, static_cast<size_t>(g.words)));
    uint64_t sum = 0;
    for (uint64_t m : mask) sum += m;
    // masked total + (-mask) = the bin's records, mod 2^64 and so mod 2^bits.
    inputs.push_back((uint64_t{0} - sum) & low);
  }
  return inputs;
}

absl::StatusOr<PartyMessage> SecureSumParty::BinCheck(const LeaderMessage& request) {
  const fedanon::v1::SumBinCheck& check = request.sum_bin_check();
  const size_t pos = ctx_.RingPosition();
  const size_t last = ctx_.ring.size() - 1;  // a horizontal ring has at least two parties
  if (pos != 0 && pos != last) {
    return absl::PermissionDeniedError(
        "secure sum: only the ring's first party (it holds the mask) and its last (it sealed the "
        "total) check the bins");
  }
  const bool garbler = pos == 0;
  const uint32_t step = check.step();
  if (step < 1 || step > crypto::kComparisonSteps || (step % 2 == 0) != garbler) {
    return absl::InvalidArgumentError(absl::StrCat("secure sum: step ", step,
                                                   " of a bin check is not this party's (the ",
                                                   garbler ? "garbler" : "evaluator", ")"));
  }
  if (collect_ == UINT64_MAX || check.collect() != collect_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: a bin check of collect ", check.collect(), ", but the current collect is ",
        collect_ == UINT64_MAX ? std::string("none") : absl::StrCat(collect_)));
  }
  if (request.round() != collect_round_) {
    return absl::InvalidArgumentError(
        absl::StrCat("secure sum: the bin check of collect ", collect_, " is asked in round ",
                     request.round(), ", but the collect was summed in round ", collect_round_));
  }
  if (guarded_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: collect ", collect_, " holds no class counts over bins: nothing to check"));
  }
  if (answered_.size() != chunks_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secure sum: the bins of collect ", collect_, " are checked only after every chunk went ",
        "round the ring (", answered_.size(), " of ", chunks_, " answered)"));
  }
  const std::string& other = ctx_.ring[garbler ? last : 0];
  const std::string fingerprint = check.SerializeAsString();
  if (const PartyMessage* same = bin_answers_.Same(step, fingerprint)) return *same;
  if (bin_answers_.Find(step) != nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure sum: step ", step, " of the bin check of collect ", collect_,
                     " was answered already for another input (one request, one answer)"));
  }
  const bool chunked_input = !check.input_ref().stream().empty();
  std::string message;
  if (step == 1) {
    if (check.has_input() || chunked_input) {
      return absl::PermissionDeniedError(
          "secure sum: a bin check's first step takes no input from the leader");
    }
  } else {
    ASSIGN_OR_RETURN(message,
                     transfer_.OpenPayloadFrom(
                         other, check.input(), check.input_ref(), collect_round_,
                         wire::SumBinCheckPurpose(collect_, step - 1, collect_round_, digest_),
                         absl::StrCat("secure sum: step ", step, " of the bin check"),
                         "this collect, step and round"));
  }
  if (step <= 2) {
    if (bin_check_ != nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("secure sum: the bin check of collect ", collect_, " has started already"));
    }
    ASSIGN_OR_RETURN(const uint64_t bound, BinBound());
    ASSIGN_OR_RETURN(std::vector<uint64_t> inputs, BinCheckInputs(garbler, BinCheckBits(bound)));
    ASSIGN_OR_RETURN(const std::string seed,
                     crypto::KeptOrNewComparisonSeed(std::exchange(restored_bin_seed_, "")));
    const crypto::ComparisonSpec spec{
        .instance = absl::StrCat("sum-bins/", collect_round_, "/", collect_),
        .kind = crypto::ComparisonKind::kSumZeroOrAtLeast,
        .bits = BinCheckBits(bound),
        .threshold = bound,
        .count = guarded_.size(),
        .output = crypto::ComparisonOutput::kAll};
    ASSIGN_OR_RETURN(bin_check_,
                     crypto::ComparisonSide::Create(garbler ? crypto::ComparisonRole::kGarbler
                                                            : crypto::ComparisonRole::kEvaluator,
                                                    spec, std::move(inputs), seed));
    // Durable with this answer: a restart runs the answered steps again from it.
    if (!ctx_.replaying) ctx_.journal_extra = seed;
  } else if (bin_check_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("secure sum: step ", step, " of the bin check of collect ", collect_,
                     " comes before this party's first step of it"));
  }
  ASSIGN_OR_RETURN(const std::string next, bin_check_->Step(static_cast<int>(step), message));
  if (bin_check_->result().has_value()) {
    const bool all = bin_check_->result()->all;
    bin_check_.reset();
    if (!all) {
      ASSIGN_OR_RETURN(const uint64_t bound, BinBound());
      return BinsBelowBound(collect_, bound);
    }
    bins_held_ = true;
  }
  PartyMessage reply;
  auto* out = reply.mutable_sum_bin_checked();
  if (garbler && bins_held_ && step == crypto::kComparisonSteps) {
    // The check held: the mask goes to the leader with this last step (protocol 5.0), the box
    // a SumUnmask of the collect would get.
    ASSIGN_OR_RETURN(const PartyMessage mask, SealMask());
    *out->mutable_mask_seed() = mask.sum_mask().seed();
  }
  if (step < crypto::kComparisonSteps) {
    // A stream's name comes from the collect and the step (one step, one message).
    transfer_.StartProducing(absl::StrCat("bin-check/", collect_, "/", step),
                             crypto::Sha256(absl::StrCat(request.round(), "/", fingerprint)));
    const absl::Status sealed = transfer_.SealMessage(
        other, collect_round_, wire::SumBinCheckPurpose(collect_, step, collect_round_, digest_),
        next, out->mutable_sealed(), out->mutable_sealed_ref());
    transfer_.StopProducing();
    RETURN_IF_ERROR(sealed);
    if (!out->sealed_ref().stream().empty()) out->clear_sealed();  // in chunks, not whole
  }
  bin_answers_.Put(step, fingerprint, reply);
  ctx_.fresh_answer = true;
  // A garbled-circuit or OT message for the other party: no count in the clear.
  RETURN_IF_ERROR(ctx_.Audit(
      collect_round_, {.kind = kAuditBinCheck,
                       .form = step < crypto::kComparisonSteps ? kAuditSealed : kAuditPlaintext,
                       .to = {step < crypto::kComparisonSteps ? other : ctx_.leader},
                       .numbers = {{"collect", collect_},
                                   {"step", step},
                                   {"bins", guarded_.size()},
                                   {"held", bins_held_ ? uint64_t{1} : uint64_t{0}}}}));
  return reply;
}

absl::Status SecureSumParty::ReplayOlderCollect(const fedanon::v1::SumStep& step) {
  if (step.chunk() != 0) return absl::OkStatus();
  RETURN_IF_ERROR(tables_.ApplyUpdates(ctx_.spec, step.updates()));
  ASSIGN_OR_RETURN(engine::StatsRequest stats_request, FromProto(step.request(), tables_.hier));
  if (step.request().has_local() && tables_.local != nullptr) {
    RETURN_IF_ERROR(tables_.local->RecordRanges(step.request().local()));
  }
  return tables_.RecordBins(stats_request, engine::NumericSplitFromSpec(ctx_.spec));
}

}  // namespace fedanon::party
