#include "leader/secure_sum_source.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "common/base/status_macros.h"
#include "common/wire/federation_wire.h"
#include "crypto/secure_comparison.h"
#include "crypto/secure_sum_masks.h"
#include "leader/payload_relay.h"

namespace fedanon::leader {

SecureSumCountSource::SecureSumCountSource(wire::PartyChannel* channel, std::string job_id,
                                           std::vector<std::string> ring, absl::Duration timeout,
                                           const std::vector<engine::AttributeHierarchy>* hier,
                                           int num_classes, size_t num_tracked,
                                           std::function<uint32_t()> round,
                                           std::function<absl::Status()> check, size_t chunk_words)
    : channel_(channel),
      job_id_(std::move(job_id)),
      ring_(std::move(ring)),
      timeout_(timeout),
      hier_(hier),
      num_classes_(num_classes),
      num_tracked_(num_tracked),
      round_(std::move(round)),
      check_(std::move(check)),
      chunk_words_(std::max<size_t>(1, chunk_words)) {}

absl::Status SecureSumCountSource::Specialize(int attr, engine::NodeIndex node, int c,
                                              const std::vector<uint64_t>& /*new_group_sizes*/) {
  fedanon::v1::StateUpdate u;
  u.set_sequence(next_sequence_++);
  auto* in = u.mutable_instruction();
  in->set_attribute(attr);
  in->set_node(node);
  in->set_candidate(c);
  update_chain_ = wire::ChainStateUpdate(update_chain_, u);
  pending_.push_back(std::move(u));
  return absl::OkStatus();
}

absl::Status SecureSumCountSource::Split(int attr, engine::NodeIndex node, int32_t split_rank) {
  fedanon::v1::StateUpdate u;
  u.set_sequence(next_sequence_++);
  auto* sp = u.mutable_split();
  sp->set_attribute(attr);
  sp->set_node(node);
  sp->set_split(split_rank);
  update_chain_ = wire::ChainStateUpdate(update_chain_, u);
  pending_.push_back(std::move(u));
  return absl::OkStatus();
}

void SecureSumCountSource::AddUpdate(fedanon::v1::StateUpdate update) {
  update.set_sequence(next_sequence_++);
  update_chain_ = wire::ChainStateUpdate(update_chain_, update);
  pending_.push_back(std::move(update));
}

absl::StatusOr<std::vector<uint64_t>> SecureSumCountSource::Collect(
    const engine::StatsRequest& request) {
  const size_t words = engine::StatsLength(*hier_, num_classes_, num_tracked_, request);
  const bool bins = !engine::GuardedRanges(request, num_classes_, numeric_).empty();
  ASSIGN_OR_RETURN(std::vector<uint64_t> sum, CollectVector(wire::ToProto(request), words, bins));
  if (view_log_ != nullptr) {
    RETURN_IF_ERROR(
        view_log_->AppendStats(round_(), *hier_, num_classes_, num_tracked_, request, sum));
  }
  return sum;
}

absl::StatusOr<std::vector<uint64_t>> SecureSumCountSource::CollectProto(
    const fedanon::v1::StatsRequest& request, size_t words, bool bins) {
  return CollectVector(request, words, bins);
}

absl::StatusOr<std::vector<uint64_t>> SecureSumCountSource::CollectVector(
    const fedanon::v1::StatsRequest& request_proto, size_t words, bool bins) {
  if (leader_keys_ == nullptr || first_party_key_ == nullptr || last_party_key_ == nullptr ||
      ring_.empty()) {
    return absl::FailedPreconditionError(
        "secure sum: the leader's sealing keys are not set (the last hop and the first party's "
        "mask are sealed for it)");
  }
  const uint64_t collect = collects_++;
  ++stats_.collects;
  const std::string request_digest = wire::SumRequestDigest(request_proto, update_chain_);
  if (collect < journal_.recorded.size()) {
    // Recorded before a restart: the same request again (else the replay diverged).
    const RecordedCall& rec = journal_.recorded[collect];
    if (rec.digest != request_digest) {
      return absl::DataLossError(absl::StrCat(
          "resume: the replayed secure sum ", collect,
          " differs from the request recorded before the restart; the job cannot resume"));
    }
    if (rec.done) {
      ASSIGN_OR_RETURN(std::vector<uint64_t> sum, wire::DecodeWords(rec.reply));
      if (sum.size() != words) {
        return absl::DataLossError(
            absl::StrCat("resume: the recorded sum of collect ", collect, " has the wrong length"));
      }
      pending_.clear();  // the parties applied them with that collect
      ++replayed_;
      return sum;
    }
  } else if (journal_.record_request) {
    // Before any hop leaves: a restarted leader re-sends exactly this request.
    RETURN_IF_ERROR(journal_.record_request(collect, request_digest));
  }
  std::vector<uint64_t> sum(words, 0);
  const size_t chunks = std::max<size_t>(1, (words + chunk_words_ - 1) / chunk_words_);
  const absl::Time start = absl::Now();
  fedanon::v1::SealedPayload mask_seed;  // with the first party's last hop (protocol 2.1)
  RETURN_IF_ERROR(
      CollectChunks(request_proto, request_digest, collect, words, chunks, &sum, &mask_seed));
  if (bins && ring_.size() >= 2 && mask_seed.ciphertext().empty()) {
    // The mask comes with the first party's last step of the check once it held (5.0).
    ASSIGN_OR_RETURN(mask_seed, CheckBins(collect));
  }
  RETURN_IF_ERROR(Unmask(request_digest, collect, mask_seed, &sum));
  if (observer_ != nullptr) {
    observer_->SecureSumVector(words);
    observer_->PhaseDone(Phase::kSecureSum, absl::Now() - start);
  }
  if (journal_.record_sum) {
    RETURN_IF_ERROR(journal_.record_sum(collect, wire::EncodeWords(sum)));
  }
  return sum;
}

absl::Status SecureSumCountSource::CollectChunks(const fedanon::v1::StatsRequest& request_proto,
                                                 const std::string& request_digest,
                                                 uint64_t collect, size_t words, size_t chunks,
                                                 std::vector<uint64_t>* sum,
                                                 fedanon::v1::SealedPayload* mask_seed) {
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const size_t offset = chunk * chunk_words_;
    const size_t len = std::min(chunk_words_, words - std::min(words, offset));
    fedanon::v1::SumStepResult carried;  // none into the first hop: it starts from its mask
    for (size_t i = 0; i < ring_.size(); ++i) {
      RETURN_IF_ERROR(check_());
      fedanon::v1::LeaderMessage msg;
      msg.set_job_id(job_id_);
      msg.set_round(round_());
      auto* step = msg.mutable_sum_step();
      if (chunk == 0) {
        for (const auto& u : pending_) *step->add_updates() = u;
        *step->mutable_request() = request_proto;
      }
      step->set_collect(collect);
      step->set_chunk(static_cast<uint32_t>(chunk));
      step->set_chunks(static_cast<uint32_t>(chunks));
      step->set_chunk_offset(offset);
      step->set_total_words(words);
      step->set_chunk_words(chunk_words_);
      if (i > 0) *step->mutable_sealed() = carried.sealed();
      step->set_next(i + 1 < ring_.size() ? ring_[i + 1] : "");
      stats_.bytes_sent += msg.ByteSizeLong();
      ++stats_.hops;
      auto reply = channel_->Call(ring_[i], msg, timeout_);
      if (!reply.ok()) return reply.status();
      stats_.bytes_received += reply->ByteSizeLong();
      if (!reply->has_sum_step() || !reply->sum_step().has_sealed()) {
        return absl::InternalError(absl::StrCat("party '", ring_[i], "' sent no secure-sum reply"));
      }
      carried = reply->sum_step();
      if (i == 0 && chunk + 1 == chunks && carried.has_mask_seed()) {
        *mask_seed = carried.mask_seed();
      }
    }
    // The last hop, sealed by the ring's last party for the leader.
    fedanon::v1::SumStep last_step;
    last_step.set_collect(collect);
    last_step.set_chunk(static_cast<uint32_t>(chunk));
    last_step.set_chunks(static_cast<uint32_t>(chunks));
    last_step.set_chunk_offset(offset);
    last_step.set_total_words(words);
    last_step.set_chunk_words(chunk_words_);
    const crypto::SealContext context{
        job_id_,      run_id_,      round_(),
        ring_.back(), leader_name_, wire::SumHopPurpose(last_step, round_(), request_digest)};
    if (carried.sealed().sender() != ring_.back() || carried.sealed().receiver() != leader_name_) {
      return absl::InternalError("the secure sum's last hop is not from the ring's last party");
    }
    absl::StatusOr<std::string> opened =
        crypto::OpenFrom(*leader_keys_, *last_party_key_, context, carried.sealed().ciphertext());
    if (!opened.ok()) {
      // The ring's last party sealed this hop for the leader: name it (the sealed box's own
      // error alone does not say whose reply was garbage).
      return absl::Status(opened.status().code(),
                          absl::StrCat("party '", ring_.back(),
                                       "' sent a secure-sum reply the leader cannot open: ",
                                       opened.status().message()));
    }
    ASSIGN_OR_RETURN(std::vector<uint64_t> total, wire::DecodeWords(*opened));
    if (total.size() != len) return absl::InternalError("secure-sum chunk has the wrong length");
    std::copy(total.begin(), total.end(), sum->begin() + static_cast<ptrdiff_t>(offset));
    if (chunk == 0) pending_.clear();  // every party has applied them
  }
  return absl::OkStatus();
}

absl::Status SecureSumCountSource::Unmask(const std::string& request_digest, uint64_t collect,
                                          const fedanon::v1::SealedPayload& with_last_hop,
                                          std::vector<uint64_t>* sum) {
  const std::string& first = ring_.front();
  fedanon::v1::PartyMessage reply;
  if (with_last_hop.ciphertext().empty()) {
    // A 2.0 party keeps its mask until asked.
    RETURN_IF_ERROR(check_());
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id_);
    msg.set_round(round_());
    msg.mutable_sum_unmask()->set_collect(collect);
    stats_.bytes_sent += msg.ByteSizeLong();
    ASSIGN_OR_RETURN(reply, channel_->Call(first, msg, timeout_));
    stats_.bytes_received += reply.ByteSizeLong();
  } else {
    *reply.mutable_sum_mask()->mutable_seed() = with_last_hop;
  }
  if (!reply.has_sum_mask() || reply.sum_mask().seed().sender() != first ||
      reply.sum_mask().seed().receiver() != leader_name_) {
    return absl::InternalError(
        absl::StrCat("party '", first, "' sent no mask of secure sum ", collect));
  }
  const crypto::SealContext context{
      job_id_, run_id_,      round_(),
      first,   leader_name_, wire::SumMaskPurpose(collect, round_(), request_digest)};
  absl::StatusOr<std::string> seed = crypto::OpenFrom(*leader_keys_, *first_party_key_, context,
                                                      reply.sum_mask().seed().ciphertext());
  if (!seed.ok()) {
    return absl::Status(
        seed.status().code(),
        absl::StrCat("party '", first,
                     "' sent a secure-sum mask the leader cannot open: ", seed.status().message()));
  }
  ASSIGN_OR_RETURN(const std::vector<uint64_t> mask,
                   crypto::MaskWordsFromSeed(*seed, 0, sum->size()));
  return crypto::SubtractInPlace(absl::MakeSpan(*sum), absl::MakeConstSpan(mask));
}

absl::StatusOr<fedanon::v1::SealedPayload> SecureSumCountSource::CheckBins(uint64_t collect) {
  // The message of the step before, for the party of this step: whole, or (chunked jobs) its
  // chunks fetched from its sender and handed to its receiver ahead of the step.
  const PayloadRelay relay(channel_, job_id_, check_);
  CarriedPayload carried;
  for (uint32_t s = 1; s <= crypto::kComparisonSteps; ++s) {
    RETURN_IF_ERROR(check_());
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id_);
    msg.set_round(round_());
    auto* step = msg.mutable_sum_bin_check();
    step->set_collect(collect);
    step->set_step(s);
    if (s > 1) {
      RETURN_IF_ERROR(relay.Hand(carried, round_(), timeout_, step->mutable_input(),
                                 step->mutable_input_ref()));
    }
    const std::string& party = s % 2 == 1 ? ring_.back() : ring_.front();
    stats_.bytes_sent += msg.ByteSizeLong();
    ASSIGN_OR_RETURN(const fedanon::v1::PartyMessage reply, channel_->Call(party, msg, timeout_));
    stats_.bytes_received += reply.ByteSizeLong();
    const auto& checked = reply.sum_bin_checked();
    if (!reply.has_sum_bin_checked() || (s < crypto::kComparisonSteps && !checked.has_sealed() &&
                                         checked.sealed_ref().stream().empty())) {
      return absl::InternalError(absl::StrCat("party '", party, "' sent no step ", s,
                                              " of the bin check of secure sum ", collect));
    }
    if (s < crypto::kComparisonSteps) {
      ASSIGN_OR_RETURN(
          carried, relay.Fetch(party, round_(), timeout_, checked.sealed(), checked.sealed_ref()));
    } else {
      // Opened and checked as any mask (Unmask); empty: asked with a SumUnmask.
      return checked.mask_seed();
    }
  }
  return fedanon::v1::SealedPayload();
}

}  // namespace fedanon::leader
