#include "party/payload_transfer.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

absl::Status PayloadTransfer::SealPayload(const std::string& receiver, uint64_t round,
                                          const std::string& purpose, const std::string& bytes,
                                          fedanon::v1::SealedPayload* whole,
                                          fedanon::v1::ChunkRef* ref) {
  if (ctx_.chunk_bytes == 0) {
    ASSIGN_OR_RETURN(*whole, ctx_.SealFor(receiver, round, purpose, bytes));
    return absl::OkStatus();
  }
  if (producing_.first.empty()) return absl::InternalError("a chunked payload without a step");
  const std::string stream = absl::StrCat(producing_.first, "/", receiver);
  const std::string& request_digest = producing_.second;
  if (outbox_.count(stream)) {
    return absl::FailedPreconditionError(
        absl::StrCat("chunked payload '", stream, "' was already produced in this job"));
  }
  fedanon::v1::ChunkRef out;
  out.set_stream(stream);
  out.set_sender(ctx_.self());
  out.set_receiver(receiver);
  out.set_purpose(purpose);
  out.set_request_digest(request_digest);
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::SealedPayload> chunks,
                   wire::SealChunks(bytes, ctx_.chunk_bytes, &out,
                                    [&](std::string_view piece, const std::string& chunk_purpose) {
                                      return ctx_.SealFor(receiver, round, chunk_purpose,
                                                          std::string(piece));
                                    }));
  // The SealedPayload names the payload's purpose; the chunk's purpose is bound in the box.
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    chunks[i].set_purpose(purpose);
    RETURN_IF_ERROR(wire::CheckChunkFits(out, i, chunks[i], ctx_.message_limit));
  }
  *ref = out;
  outbox_[stream] = Outgoing{round, std::move(out), std::move(chunks)};
  return absl::OkStatus();
}

absl::Status PayloadTransfer::SealInstruction(const std::string& receiver, uint64_t round,
                                              const std::string& instruction,
                                              fedanon::v1::VerticalInstructions* out) {
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  RETURN_IF_ERROR(SealPayload(receiver, round, "instruction", instruction, &whole, &ref));
  if (ref.stream().empty()) {
    *out->add_for_parties() = std::move(whole);
  } else {
    *out->add_refs() = std::move(ref);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PayloadTransfer::OpenPayload(const fedanon::v1::SealedPayload& whole,
                                                         const fedanon::v1::ChunkRef& ref,
                                                         uint64_t round, const std::string& purpose,
                                                         std::string* sender) {
  if (ref.stream().empty()) {
    if (ctx_.chunk_bytes > 0 && !whole.ciphertext().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a whole '", purpose, "' payload in a job whose per-record payloads travel in chunks"));
    }
    if (sender != nullptr) *sender = whole.sender();
    return ctx_.OpenSealed(whole, round, purpose);
  }
  if (ref.receiver() != ctx_.self() || ref.purpose() != purpose) {
    return absl::PermissionDeniedError(
        absl::StrCat(wire::DescribeStream(ref), " is a '", ref.purpose(), "' payload for '",
                     ref.receiver(), "', not a '", purpose, "' payload for this party"));
  }
  auto it = inbox_.find({ref.sender(), ref.stream()});
  if (it == inbox_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(wire::DescribeStream(ref), ": no chunk of it was received"));
  }
  if (!wire::SameChunkRef(it->second.ref(), ref)) {
    return absl::InvalidArgumentError(absl::StrCat(
        wire::DescribeStream(ref), ": the step names another shape than its chunks declared"));
  }
  wire::ChunkReceiver receiver = std::move(it->second);
  inbox_.erase(it);
  ASSIGN_OR_RETURN(std::vector<fedanon::v1::SealedPayload> chunks, std::move(receiver).Take());
  if (sender != nullptr) *sender = ref.sender();
  ASSIGN_OR_RETURN(
      std::string plain,
      wire::OpenChunks(
          ref, chunks,
          [&](const fedanon::v1::SealedPayload& chunk, const std::string& chunk_purpose) {
            return ctx_.OpenSealed(chunk, round, chunk_purpose, /*observe=*/false);
          }));
  ctx_.options().Observer().Opened(ref.sender(), purpose, plain);
  return plain;
}

absl::StatusOr<PartyMessage> PayloadTransfer::ChunkGet(const LeaderMessage& request) {
  const auto& get = request.chunk_get();
  auto it = outbox_.find(get.stream());
  if (it == outbox_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no chunked payload '", get.stream(), "' is held by this party"));
  }
  const Outgoing& out = it->second;
  if (get.index() >= out.chunks.size()) {
    return absl::InvalidArgumentError(absl::StrCat("chunked payload '", get.stream(), "': chunk ",
                                                   get.index(), " is beyond its count of ",
                                                   out.chunks.size()));
  }
  PartyMessage reply;
  auto* chunk = reply.mutable_chunk();
  *chunk->mutable_ref() = out.ref;
  chunk->set_index(get.index());
  *chunk->mutable_chunk() = out.chunks[get.index()];
  RETURN_IF_ERROR(ctx_.Audit(
      request.round(), {.kind = kAuditPayloadChunk,
                        .form = kAuditSealed,
                        .to = {out.ref.receiver()},
                        .numbers = {{"index", get.index()},
                                    {"chunks", out.ref.chunks()},
                                    {"payload_bytes", out.ref.total_bytes()}},
                        .texts = {{"stream", out.ref.stream()}, {"purpose", out.ref.purpose()}}}));
  return reply;
}

absl::StatusOr<PartyMessage> PayloadTransfer::ChunkPut(const LeaderMessage& request, bool durable) {
  if (ctx_.chunk_bytes == 0) {
    return absl::FailedPreconditionError("this job's payloads travel whole, not in chunks");
  }
  const auto& put = request.chunk_put();
  const fedanon::v1::ChunkRef& ref = put.ref();
  if (ref.receiver() != ctx_.self()) {
    return absl::PermissionDeniedError(
        absl::StrCat(wire::DescribeStream(ref), " is for '", ref.receiver(), "'"));
  }
  if (std::find(ctx_.ring.begin(), ctx_.ring.end(), ref.sender()) == ctx_.ring.end()) {
    return absl::PermissionDeniedError(absl::StrCat(wire::DescribeStream(ref), ": '", ref.sender(),
                                                    "' is not a data party of the job"));
  }
  auto key = std::make_pair(ref.sender(), ref.stream());
  auto it = inbox_.find(key);
  if (it == inbox_.end()) {
    ASSIGN_OR_RETURN(wire::ChunkReceiver started,
                     wire::ChunkReceiver::Start(ref, wire::kMaxChunkedPayloadBytes));
    it = inbox_.emplace(key, std::move(started)).first;
  }
  RETURN_IF_ERROR(it->second.Add(ref, put.index(), put.chunk()));
  // A vertical job keeps the chunks it received durably (a restarted party still has them when
  // the step that names them comes).
  if (durable && !ctx_.replaying) ctx_.fresh_answer = true;
  PartyMessage reply;
  reply.mutable_chunk_ack()->set_received(it->second.received());
  RETURN_IF_ERROR(ctx_.Audit(
      request.round(), {.kind = kAuditChunkReceipt,
                        .form = kAuditPlaintext,
                        .to = {ctx_.leader},
                        .numbers = {{"index", put.index()}, {"received", it->second.received()}},
                        .texts = {{"stream", ref.stream()}, {"from", ref.sender()}}}));
  return reply;
}

void PayloadTransfer::DropBefore(uint64_t round) {
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    it = it->second.round < round ? outbox_.erase(it) : std::next(it);
  }
}

}  // namespace fedanon::party
