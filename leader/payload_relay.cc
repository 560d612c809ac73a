#include "leader/payload_relay.h"

#include <memory>

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
  RETURN_IF_ERROR(FetchEach(producer, round, timeout, ref,
                            [&](uint32_t /*index*/, fedanon::v1::SealedPayload chunk) {
                              out.chunks.push_back(std::move(chunk));
                              return absl::OkStatus();
                            }));
  out.ref = ref;
  return out;
}

namespace {

// Keeps nothing: the chunks a relay pipes are checked as they pass, never held.
class PassingChunkStore final : public wire::ChunkStore {
 public:
  absl::Status Append(const fedanon::v1::SealedPayload& /*chunk*/) override {
    ++count_;
    return absl::OkStatus();
  }
  absl::StatusOr<fedanon::v1::SealedPayload> Get(uint32_t /*index*/) const override {
    return absl::FailedPreconditionError("a piped chunk is not kept");
  }
  uint32_t size() const override { return count_; }

 private:
  uint32_t count_ = 0;
};

}  // namespace

absl::Status PayloadRelay::FetchEach(
    const std::string& producer, uint32_t round, absl::Duration timeout,
    const fedanon::v1::ChunkRef& ref,
    const std::function<absl::Status(uint32_t index, fedanon::v1::SealedPayload chunk)>& each)
    const {
  if (ref.sender() != producer) {
    return absl::InvalidArgumentError(
        absl::StrCat("party '", producer, "' answered with ", wire::DescribeStream(ref)));
  }
  ASSIGN_OR_RETURN(wire::ChunkReceiver checked,
                   wire::ChunkReceiver::Start(ref, wire::kMaxChunkedPayloadBytes,
                                              std::make_unique<PassingChunkStore>()));
  for (uint32_t i = 0; i < ref.chunks(); ++i) {
    if (check_) RETURN_IF_ERROR(check_());
    fedanon::v1::LeaderMessage get;
    get.set_job_id(job_id_);
    get.set_round(round);
    get.mutable_chunk_get()->set_stream(ref.stream());
    get.mutable_chunk_get()->set_index(i);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply, channel_->Call(producer, get, timeout));
    if (!reply.has_chunk() || reply.chunk().index() != i) {
      return absl::InternalError(
          absl::StrCat("party '", producer, "' did not send chunk ", i, " of its payload"));
    }
    RETURN_IF_ERROR(checked.Add(reply.chunk().ref(), i, reply.chunk().chunk()));
    RETURN_IF_ERROR(each(i, std::move(*reply.mutable_chunk()->mutable_chunk())));
  }
  return checked.CheckWhole();
}

absl::Status PayloadRelay::Pipe(const std::string& producer, const std::string& receiver,
                                uint32_t round, absl::Duration timeout,
                                const fedanon::v1::SealedPayload& whole,
                                const fedanon::v1::ChunkRef& ref,
                                fedanon::v1::SealedPayload* whole_field,
                                fedanon::v1::ChunkRef* ref_field) const {
  if (ref.stream().empty()) {
    *whole_field = whole;
    return absl::OkStatus();
  }
  if (ref.receiver() != receiver) {
    return absl::InvalidArgumentError(absl::StrCat("party '", producer, "' answered with ",
                                                   wire::DescribeStream(ref), " for '",
                                                   ref.receiver(), "', not for '", receiver, "'"));
  }
  RETURN_IF_ERROR(FetchEach(producer, round, timeout, ref,
                            [&](uint32_t i, fedanon::v1::SealedPayload chunk) -> absl::Status {
                              fedanon::v1::LeaderMessage put;
                              put.set_job_id(job_id_);
                              put.set_round(round);
                              *put.mutable_chunk_put()->mutable_ref() = ref;
                              put.mutable_chunk_put()->set_index(i);
                              *put.mutable_chunk_put()->mutable_chunk() = std::move(chunk);
                              ASSIGN_OR_RETURN(fedanon::v1::PartyMessage ack,
                                               channel_->Call(receiver, put, timeout));
                              if (!ack.has_chunk_ack()) {
                                return absl::InternalError(absl::StrCat(
                                    "party '", receiver, "' did not acknowledge chunk ", i));
                              }
                              return absl::OkStatus();
                            }));
  *ref_field = ref;
  return absl::OkStatus();
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
