#include "party/id_matching_party.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"
#include "crypto/shuffle.h"
#include "crypto/signature.h"
#include "party/protocol_util.h"
#include "party/vertical_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using wire::EncodeWords;

namespace {

using wire::IdBatchPurpose;
using wire::IdDigestsPurpose;

// The batch size a batched request names: fixed by the first one of the job.
absl::Status CheckBatchSize(uint32_t* fixed, uint32_t named) {
  if (named == 0) return absl::InvalidArgumentError("a batched ID-matching step names no size");
  if (*fixed == 0) *fixed = named;
  if (*fixed != named) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ID batch size changed from ", *fixed, " to ", named, " ids"));
  }
  return absl::OkStatus();
}

// `batch` < `batches`, and one count per origin's list for the whole job.
absl::Status CheckBatchCount(std::map<std::string, uint32_t>& counts, const std::string& origin,
                             uint32_t batch, uint32_t batches) {
  if (batches == 0 || batch >= batches) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", batch, " of ", batches, " of '",
                                                   origin, "''s list is out of range"));
  }
  const auto [it, inserted] = counts.emplace(origin, batches);
  if (!inserted && it->second != batches) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the batch count of '", origin, "''s list changed from ", it->second, " to ", batches));
  }
  return absl::OkStatus();
}

// Every batch but the last holds exactly `size` ids, the last 1 to `size` (0 only when the list
// is empty: one empty batch).
absl::Status CheckBatchPoints(const std::string& origin, uint32_t batch, uint32_t batches,
                              uint32_t size, size_t count) {
  const bool last = batch + 1 == batches;
  if ((!last && count != size) || (last && (count > size || (count == 0 && batches > 1)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", batch, " of ", batches, " of '", origin, "''s list holds ", count,
                     " ids; every batch but the last holds ", size, " and the last 1 to ", size));
  }
  return absl::OkStatus();
}

// A batch's reply must fit the message limit this party negotiated (0: none announced): the
// leader sizes the batches for its own limit, which may be larger than this party's.
absl::Status CheckBatchFits(const fedanon::v1::VerticalStepResult& out, uint64_t message_limit,
                            uint32_t batch_ids) {
  constexpr uint64_t kEnvelopeSlack = 512;  // request id, job id and framing around the result
  const uint64_t bytes = out.ByteSizeLong() + kEnvelopeSlack;
  if (message_limit > 0 && bytes > message_limit) {
    return absl::FailedPreconditionError(
        absl::StrCat("a batch of ", batch_ids, " ids makes a reply of ", bytes,
                     " bytes, over this party's message limit of ", message_limit, " bytes"));
  }
  return absl::OkStatus();
}

// Where this party stands in a list's walk round the ring (wire::IdLastHop): `hop` is its hop
// in origin's walk, and the parties it takes the batch from and hands it to ("" after the last).
struct IdHop {
  size_t hop = 0;
  std::string predecessor;
  std::string successor;
  bool last = false;
};
absl::StatusOr<IdHop> HopInWalk(const std::vector<std::string>& ring, const std::string& self,
                                const std::string& origin) {
  const size_t n = ring.size();
  const auto index = [&](const std::string& name) {
    return static_cast<size_t>(std::find(ring.begin(), ring.end(), name) - ring.begin());
  };
  const size_t own = index(self);
  const size_t o = index(origin);
  if (own == n || o == n) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", origin, "' is not a data party of the job"));
  }
  IdHop h;
  h.hop = (own + n - o) % n;
  if (h.hop == 0) {
    // The owner re-encrypts its own list only to remove its blinding (three or more parties).
    if (!wire::IdListsBlinded(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", origin, "' is not another data party of the job"));
    }
    h.hop = n;
  }
  h.predecessor = ring[(o + h.hop - 1) % n];
  h.last = h.hop == wire::IdLastHop(n);
  if (!h.last) h.successor = ring[(o + h.hop + 1) % n];
  return h;
}

}  // namespace

absl::Status IdMatchingParty::EncryptBatch(const fedanon::v1::IdEncrypt& step, uint64_t round,
                                           fedanon::v1::VerticalStepResult* out) {
  RETURN_IF_ERROR(CheckBatchSize(&batch_ids_, step.batch_ids()));
  const size_t n = ctx_.ring.size();
  const size_t own = static_cast<size_t>(ctx_.RingPosition());
  if (own == n) return absl::InvalidArgumentError("this party is not in the job's ring");
  const std::string& successor = ctx_.ring[(own + 1) % n];
  if (step.next() != successor) {
    return absl::PermissionDeniedError(absl::StrCat(
        "IdEncrypt names '", step.next(), "' as next, not the ring's successor '", successor, "'"));
  }
  if (!matcher_) {
    cpu_start_ = CurrentProcessUsage().cpu_seconds;
    if (ctx_.replaying && !restored_secret_.empty()) {
      ASSIGN_OR_RETURN(matcher_, IdMatcher::Restore(replica_.ids(), restored_secret_));
    } else {
      ASSIGN_OR_RETURN(matcher_, IdMatcher::Create(replica_.ids()));
    }
    // The keys and the secret order are durable with this first reply that depends on them, so
    // a restarted party re-encrypts with the same keys and answers in the same order.
    if (!ctx_.replaying) {
      ctx_.journal_extra = std::string(matcher_->DurableSecret().AsStringView());
    }
  }
  const uint64_t size = batch_ids_;
  const uint64_t total = matcher_->size();
  const uint32_t batches = static_cast<uint32_t>(std::max<uint64_t>(1, (total + size - 1) / size));
  RETURN_IF_ERROR(CheckBatchCount(batches_, ctx_.self(), step.batch(), batches));
  const std::string digest = crypto::Sha256(step.SerializeAsString());
  const std::pair<std::string, uint32_t> key{ctx_.self(), step.batch()};
  if (auto it = batch_answered_.find(key); it != batch_answered_.end() && it->second != digest) {
    return absl::FailedPreconditionError(absl::StrCat("one request, one answer: batch ",
                                                      step.batch(),
                                                      " of this party's list was already "
                                                      "encrypted for another request"));
  }
  const uint64_t first = uint64_t{step.batch()} * size;
  const uint64_t count = std::min<uint64_t>(size, total - first);
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::vector<std::string> points,
                   matcher_->EncryptOwnRange(first, count, wire::IdListsBlinded(n)));
  const double crypto_s = WallSince(t0);
  ASSIGN_OR_RETURN(*out->mutable_ids()->mutable_list(),
                   ctx_.SealFor(step.next(), round,
                                IdBatchPurpose(ctx_.run_id, ctx_.self(), 0, step.batch(), batches),
                                SerializeIdList(points)));
  out->mutable_ids()->set_batches(batches);
  RETURN_IF_ERROR(CheckBatchFits(*out, ctx_.message_limit, batch_ids_));
  batch_answered_[key] = digest;
  spdlog::debug("job={} IdEncrypt batch {} of {} ({} ids): encrypt {:.3f} s (wall)", ctx_.job_id,
                step.batch(), batches, count, crypto_s);
  return ctx_.Audit(round,
                    {.kind = kAuditIdList,
                     .form = kAuditSealed,
                     .to = {step.next()},
                     .numbers = {{"ids", count}, {"batch", step.batch()}, {"batches", batches}},
                     .texts = {{"origin", ctx_.self()},
                               {"layer", wire::IdListsBlinded(n) ? "blinding" : "key"}}});
}

// The last hop: the batch fully encrypted, as digests, for the leader (which intersects the
// lists) and for the list's owner (which aligns on them); with three or more parties this party
// is the owner and keeps them.
absl::StatusOr<std::vector<std::string>> IdMatchingParty::SealFinalDigests(
    const fedanon::v1::IdReEncrypt& re, uint64_t round, const std::vector<std::string>& again,
    fedanon::v1::VerticalStepResult* out) {
  const bool own_list = re.origin() == ctx_.self();
  std::vector<std::string> to;
  std::string digests = IdMatcher::FinalDigests(again);
  fedanon::v1::IdList list;
  list.set_digests(digests);
  const std::string serialized = list.SerializeAsString();
  const std::string purpose = IdDigestsPurpose(ctx_.run_id, re.origin(), re.batch(), re.batches());
  to.push_back(ctx_.leader);
  if (!own_list) to.push_back(re.origin());
  for (const std::string& receiver : to) {
    ASSIGN_OR_RETURN(*out->mutable_ids()->add_for_parties(),
                     ctx_.SealFor(receiver, round, purpose, serialized));
  }
  if (own_list) own_digests_[re.batch()] = std::move(digests);
  return to;
}

absl::Status IdMatchingParty::ReencryptBatch(const fedanon::v1::IdReEncrypt& re, uint64_t round,
                                             fedanon::v1::VerticalStepResult* out) {
  if (!matcher_) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&batch_ids_, re.batch_ids()));
  ASSIGN_OR_RETURN(const IdHop at, HopInWalk(ctx_.ring, ctx_.self(), re.origin()));
  if (re.next() != at.successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("IdReEncrypt of '", re.origin(), "''s list names '", re.next(),
                     "' as next, not '", at.successor, "' (the ring's order)"));
  }
  RETURN_IF_ERROR(CheckBatchCount(batches_, re.origin(), re.batch(), re.batches()));
  if (re.list().sender() != at.predecessor) {
    return absl::PermissionDeniedError(absl::StrCat(
        "batch ", re.batch(), " of '", re.origin(), "''s list is sealed by '", re.list().sender(),
        "', not by its predecessor '", at.predecessor, "' on the ring"));
  }
  // One content, one answer: each (origin, hop, batch) is re-encrypted from one list of points.
  // The same points sealed anew (the predecessor answers a repeated request with a fresh box, as
  // after a leader restart) are the same request; other points are refused.
  const std::pair<std::string, uint32_t> key{absl::StrCat(re.origin(), "#", at.hop), re.batch()};
  const auto answered = batch_answered_.find(key);
  const auto another_payload = [&] {
    return absl::FailedPreconditionError(
        absl::StrCat("one request, one answer: batch ", re.batch(), " of '", re.origin(),
                     "''s list was already re-encrypted from another payload"));
  };
  absl::StatusOr<std::string> bytes = ctx_.OpenSealed(
      re.list(), round,
      IdBatchPurpose(ctx_.run_id, re.origin(), at.hop - 1, re.batch(), re.batches()));
  if (!bytes.ok() && answered != batch_answered_.end()) return another_payload();
  const std::string digest = bytes.ok() ? crypto::Sha256(*bytes) : std::string();
  if (bytes.ok() && answered != batch_answered_.end() &&
      answered->second != crypto::Sha256(absl::StrCat(re.batches(), "/", re.next(), "/", digest))) {
    return another_payload();
  }
  if (!bytes.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("batch ", re.batch(), " of ", re.batches(),
                                                    " of '", re.origin(),
                                                    "''s list does not open as hop ", at.hop - 1,
                                                    "'s (sealed for another origin, hop, batch or "
                                                    "count): ",
                                                    bytes.status().message()));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> points, ParseIdList(*bytes));
  RETURN_IF_ERROR(
      CheckBatchPoints(re.origin(), re.batch(), re.batches(), batch_ids_, points.size()));
  const uint64_t count = points.size();
  const bool own_list = re.origin() == ctx_.self();
  ASSIGN_OR_RETURN(std::vector<std::string> again,
                   own_list ? matcher_->Unblind(points) : matcher_->ReEncrypt(points, at.last));
  std::vector<std::string>().swap(points);
  std::vector<std::string> to;
  if (!at.last) {
    ASSIGN_OR_RETURN(
        *out->mutable_ids()->mutable_list(),
        ctx_.SealFor(at.successor, round,
                     IdBatchPurpose(ctx_.run_id, re.origin(), at.hop, re.batch(), re.batches()),
                     SerializeIdList(again)));
    to.push_back(at.successor);
  } else {
    ASSIGN_OR_RETURN(to, SealFinalDigests(re, round, again, out));
  }
  RETURN_IF_ERROR(CheckBatchFits(*out, ctx_.message_limit, batch_ids_));
  batch_answered_[key] = crypto::Sha256(absl::StrCat(re.batches(), "/", re.next(), "/", digest));
  return ctx_.Audit(round, {.kind = kAuditIdList,
                            .form = kAuditSealed,
                            .to = to,
                            .numbers = {{"ids", count},
                                        {"batch", re.batch()},
                                        {"batches", re.batches()},
                                        {"hop", at.hop}},
                            .texts = {{"origin", re.origin()},
                                      {"list", at.last ? "fully-encrypted digests" : "points"}}});
}

absl::Status IdMatchingParty::Digests(const fedanon::v1::IdDigests& d, uint64_t round,
                                      fedanon::v1::VerticalStepResult* out) {
  if (!matcher_) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&batch_ids_, d.batch_ids()));
  const size_t n = ctx_.ring.size();
  // Only this party's own list comes back to it as digests, and only where another party applied
  // the last layer (two data parties).
  if (d.origin() != ctx_.self() || wire::IdListsBlinded(n)) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of '", d.origin(),
                     "''s list are not for this party (a party receives only "
                     "its own list's digests, and only from the other of two data parties)"));
  }
  const size_t own = static_cast<size_t>(ctx_.RingPosition());
  const std::string& last = ctx_.ring[(own + wire::IdLastHop(n)) % n];
  if (d.digests().sender() != last) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of batch ", d.batch(), " of this party's list are sealed by '",
                     d.digests().sender(), "', not by its last hop '", last, "'"));
  }
  RETURN_IF_ERROR(CheckBatchCount(batches_, d.origin(), d.batch(), d.batches()));
  const std::string digest = crypto::Sha256(d.SerializeAsString());
  out->mutable_ids();
  // The reply is a receipt to the leader (nothing sealed, no data).
  const auto receipt = [&] {
    return ctx_.Audit(round,
                      {.kind = kAuditChunkReceipt,
                       .form = kAuditPlaintext,
                       .to = {ctx_.leader},
                       .numbers = {{"batch", d.batch()}, {"batches", d.batches()}},
                       .texts = {{"origin", d.origin()}, {"list", "fully-encrypted digests"}}});
  };
  if (auto it = digests_delivered_.find(d.batch()); it != digests_delivered_.end()) {
    if (it->second == digest) return receipt();  // the same delivery again
    return absl::FailedPreconditionError(
        absl::StrCat("one request, one answer: the digests of batch ", d.batch(),
                     " of this party's list were already delivered with other content"));
  }
  absl::StatusOr<std::string> bytes = ctx_.OpenSealed(
      d.digests(), round, IdDigestsPurpose(ctx_.run_id, d.origin(), d.batch(), d.batches()));
  if (!bytes.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("the digests of batch ", d.batch(), " of ", d.batches(),
                     " of this party's list do not open (sealed for another origin, batch or "
                     "count): ",
                     bytes.status().message()));
  }
  fedanon::v1::IdList list;
  if (!list.ParseFromString(*bytes) || list.digests().size() % wire::kIdDigestBytes != 0) {
    return absl::InvalidArgumentError("an ID digest list does not parse");
  }
  RETURN_IF_ERROR(CheckBatchPoints(d.origin(), d.batch(), d.batches(), batch_ids_,
                                   list.digests().size() / wire::kIdDigestBytes));
  own_digests_[d.batch()] = std::move(*list.mutable_digests());
  digests_delivered_[d.batch()] = digest;
  return receipt();
}

absl::Status IdMatchingParty::Common(const fedanon::v1::IdCommon& c, uint64_t round,
                                     fedanon::v1::VerticalStepResult* out) {
  if (!matcher_) return absl::FailedPreconditionError("ID matching has not started");
  RETURN_IF_ERROR(CheckBatchSize(&batch_ids_, c.batch_ids()));
  const std::string digest = crypto::Sha256(c.SerializeAsString());
  if (auto it = common_answered_.find(c.batch()); it != common_answered_.end()) {
    if (it->second.first != digest) {
      return absl::FailedPreconditionError(
          absl::StrCat("one request, one answer: batch ", c.batch(),
                       " of the common ids was already delivered with other content"));
    }
    *out = it->second.second;  // the same delivery again: the same answer
    return absl::OkStatus();
  }
  if (c.batches() == 0 || c.batch() >= c.batches() ||
      (common_batches_ != 0 && c.batches() != common_batches_)) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", c.batch(), " of ", c.batches(),
                                                   " of the common ids is out of range"));
  }
  if (c.batch() != common_answered_.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "batch ", c.batch(), " of the common ids arrived before batch ", common_answered_.size()));
  }
  const size_t n_digests = c.digests().size() / wire::kIdDigestBytes;
  const bool last = c.batch() + 1 == c.batches();
  if (c.digests().size() % wire::kIdDigestBytes != 0 || (!last && n_digests != batch_ids_) ||
      n_digests > batch_ids_ || (last && n_digests == 0 && c.batches() > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", c.batch(), " of ", c.batches(), " of the common ids holds ",
                     c.digests().size(), " bytes; every batch but the last holds ", batch_ids_,
                     " digests and the last 1 to ", batch_ids_));
  }
  common_batches_ = c.batches();
  common_ += c.digests();
  fedanon::v1::VerticalStepResult reply;
  reply.mutable_ids();
  if (last) {
    // Every batch of this party's own list must be back before it can check the intersection.
    const auto own_batches = batches_.find(ctx_.self());
    if (own_batches == batches_.end() || own_digests_.size() != own_batches->second) {
      return absl::FailedPreconditionError(
          "the common ids arrived before every batch of this party's own list came back");
    }
    std::string own;
    for (const auto& [b, packed] : own_digests_) own += packed;
    // Each common digest in this party's own list, strictly ascending: a party never signs an
    // intersection it cannot be part of.
    absl::StatusOr<IdAlignment> alignment = matcher_->AlignToCommon(own, common_);
    if (!alignment.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("the leader's common ids are refused: ", alignment.status().message()));
    }
    alignment_ = *std::move(alignment);
    const std::string common_digest = crypto::Sha256(common_);
    const uint64_t count = common_.size() / wire::kIdDigestBytes;
    auto* statement = reply.mutable_ids()->mutable_common();
    statement->set_digest(common_digest);
    statement->set_count(count);
    if (ctx_.replaying && !restored_common_signature_.empty()) {
      statement->set_signature(restored_common_signature_);  // the one that left
    } else {
      ASSIGN_OR_RETURN(
          *statement->mutable_signature(),
          crypto::SignStatement(ctx_.own_seal->sign_key_pem,
                                IdCommonStatement(ctx_.job_id, ctx_.run_id, common_digest, count)));
    }
  }
  common_answered_[c.batch()] = {digest, reply};
  *out = reply;
  return ctx_.Audit(
      round, {.kind = kAuditChunkReceipt,
              .form = kAuditPlaintext,
              .to = {ctx_.leader},
              .numbers = {{"batch", c.batch()}, {"batches", c.batches()}, {"digests", n_digests}},
              .texts = {{"list", "common ids"}}});
}

absl::Status IdMatchingParty::Align(const fedanon::v1::IdAlign& align, uint64_t round,
                                    fedanon::v1::VerticalStepResult* out) {
  VerticalParty& vp = replica_;
  if (ctx_.replaying && restored_alignment_) {
    // Reloading after a restart: the alignment this party computed before (its journal).
    matcher_.reset();
    RETURN_IF_ERROR(vp.Start(restored_alignment_->canonical, restored_alignment_->common));
    out->mutable_ids()->set_common_records(restored_alignment_->common);
    return absl::OkStatus();
  }
  if (!matcher_) return absl::FailedPreconditionError("ID matching has not started");
  if (!alignment_) {
    return absl::FailedPreconditionError("IdAlign before every batch of the common ids arrived");
  }
  // Every party's signed statement on the common ids it received, each the same as this one's:
  // the leader cannot hand parties different intersections.
  const std::string common_digest = crypto::Sha256(common_);
  const uint64_t count = alignment_->common;
  std::set<std::string> signed_by;
  for (const auto& s : align.statements()) {
    const auto key = ctx_.statement_keys.find(s.party());
    if (std::find(ctx_.ring.begin(), ctx_.ring.end(), s.party()) == ctx_.ring.end() ||
        key == ctx_.statement_keys.end() || !signed_by.insert(s.party()).second) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: a statement on the common ids from '", s.party(),
                       "', which is not a data party of the job or signed twice"));
    }
    const absl::Status valid = crypto::VerifyStatement(
        *key->second,
        IdCommonStatement(ctx_.job_id, ctx_.run_id, s.statement().digest(), s.statement().count()),
        s.statement().signature());
    if (!valid.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: the statement on the common ids of '", s.party(),
                       "' does not carry its signature (", valid.message(), ")"));
    }
    if (s.statement().digest() != common_digest || s.statement().count() != count) {
      return absl::PermissionDeniedError(
          absl::StrCat("IdAlign: '", s.party(), "' received other common ids (",
                       s.statement().count(), ") than this party (", count,
                       "): the leader handed the parties different intersections"));
    }
  }
  if (signed_by.size() != ctx_.ring.size()) {
    return absl::PermissionDeniedError(
        "IdAlign: the leader did not relay every data party's statement on the common ids");
  }
  IdAlignment alignment = *std::exchange(alignment_, std::nullopt);
  matcher_.reset();
  own_digests_.clear();
  common_.clear();
  common_answered_.clear();
  digests_delivered_.clear();
  batch_answered_.clear();
  if (!ctx_.replaying) {
    // The matched-id result, durable with this reply: common count, then each record's position.
    std::vector<uint64_t> words{alignment.common};
    for (int64_t c : alignment.canonical) words.push_back(static_cast<uint64_t>(c));
    ctx_.journal_extra = EncodeWords(words);
  }
  RETURN_IF_ERROR(vp.Start(alignment.canonical, alignment.common));
  ctx_.options().Observer().CanonicalIds(vp.ids());
  const ProcessUsage usage = CurrentProcessUsage();
  spdlog::info(
      "job={} ID matching: {} of {} records are common to every party; process CPU {:.2f} s "
      "since IdEncrypt, peak RSS {:.0f} MB",
      ctx_.job_id, alignment.common, vp.ids().size(), usage.cpu_seconds - cpu_start_,
      usage.peak_rss_mb);
  out->mutable_ids()->set_common_records(alignment.common);
  return ctx_.Audit(round, {.kind = kAuditIdCommon,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"common_records", alignment.common}}});
}

}  // namespace fedanon::party
