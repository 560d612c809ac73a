#include "leader/payload_relay.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/wire/payload_chunks.h"

namespace fedanon::leader {

absl::StatusOr<CarriedPayload> PayloadRelay::Fetch(const std::string& producer, uint32_t round,
                                                   absl::Duration timeout,
                                                   const fedanon::v1::SealedPayload& whole,
                                                   const fedanon::v1::ChunkRef& ref) const {
  CarriedPayload out;
  if (ref.stream().empty()) {
    out.whole = whole;
    return out;
  }
  if (ref.sender() != producer) {
    return absl::InvalidArgumentError(
        absl::StrCat("party '", producer, "' answered with ", wire::DescribeStream(ref)));
  }
  ASSIGN_OR_RETURN(wire::ChunkReceiver receiver,
                   wire::ChunkReceiver::Start(ref, wire::kMaxChunkedPayloadBytes));
  for (uint32_t i = 0; i < ref.chunks(); ++i) {
    if (check_) RETURN_IF_ERROR(check_());
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id_);
    msg.set_round(round);
    msg.mutable_chunk_get()->set_stream(ref.stream());
    msg.mutable_chunk_get()->set_index(i);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply, channel_->Call(producer, msg, timeout));
    if (!reply.has_chunk() || reply.chunk().index() != i) {
      return absl::InternalError(
          absl::StrCat("party '", producer, "' did not send chunk ", i, " of its payload"));
    }
    RETURN_IF_ERROR(receiver.Add(reply.chunk().ref(), i, reply.chunk().chunk()));
  }
  out.ref = ref;
  ASSIGN_OR_RETURN(out.chunks, std::move(receiver).Take());
  return out;
}

absl::Status PayloadRelay::Hand(const CarriedPayload& carried, uint32_t round,
                                absl::Duration timeout, fedanon::v1::SealedPayload* whole_field,
                                fedanon::v1::ChunkRef* ref_field) const {
  if (!carried.chunked()) {
    *whole_field = carried.whole;
    return absl::OkStatus();
  }
  for (uint32_t i = 0; i < carried.chunks.size(); ++i) {
    if (check_) RETURN_IF_ERROR(check_());
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_id_);
    msg.set_round(round);
    auto* put = msg.mutable_chunk_put();
    *put->mutable_ref() = carried.ref;
    put->set_index(i);
    *put->mutable_chunk() = carried.chunks[i];
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply,
                     channel_->Call(carried.ref.receiver(), msg, timeout));
    if (!reply.has_chunk_ack()) {
      return absl::InternalError(
          absl::StrCat("party '", carried.ref.receiver(), "' did not acknowledge chunk ", i));
    }
  }
  *ref_field = carried.ref;
  return absl::OkStatus();
}

absl::StatusOr<std::string> OpenCarriedAtLeader(
    const CarriedPayload& carried, const crypto::SealKeyPair& keys,
    const crypto::SealPublicKey& sender_key, const std::string& job_id, const std::string& run_id,
    uint32_t round, const std::string& leader_name, const std::string& purpose) {
  if (carried.receiver() != leader_name) {
    return absl::PermissionDeniedError(
        absl::StrCat("a '", purpose, "' payload for '", carried.receiver(), "', not the leader"));
  }
  if (!carried.chunked()) {
    const crypto::SealContext context{job_id,      run_id, round, carried.whole.sender(),
                                      leader_name, purpose};
    return crypto::OpenFrom(keys, sender_key, context, carried.whole.ciphertext());
  }
  if (carried.ref.purpose() != purpose) {
    return absl::PermissionDeniedError(absl::StrCat(wire::DescribeStream(carried.ref), " is a '",
                                                    carried.ref.purpose(), "' payload, not '",
                                                    purpose, "'"));
  }
  return wire::OpenChunks(carried.ref, carried.chunks,
                          [&](const fedanon::v1::SealedPayload& chunk,
                              const std::string& chunk_purpose) -> absl::StatusOr<std::string> {
                            const crypto::SealContext context{job_id,      run_id,
                                                              round,       carried.ref.sender(),
                                                              leader_name, chunk_purpose};
                            return crypto::OpenFrom(keys, sender_key, context, chunk.ciphertext());
                          });
}

}  // namespace fedanon::leader
