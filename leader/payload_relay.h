// The leader's side of chunked per-record payloads (common/wire/payload_chunks.h): it fetches
// every chunk of a payload a party produced (ChunkGet, one request and reply per chunk), checks
// them as a receiver would, and hands them to the receiving party (ChunkPut, one request per
// chunk) before the step that names the payload — or opens them itself when it is the receiver.
// A payload a party sends whole (every payload when the Prepare named no message limit; a secure
// union's list that fits one chunk) passes through unchanged. The leader only ever relays sealed
// bytes it cannot open (unless sealed for it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::leader {

// A payload on its way from one party to another: whole or as its chunks.
struct CarriedPayload {
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;  // chunked: the producer's description
  std::vector<fedanon::v1::SealedPayload> chunks;
  bool chunked() const { return !ref.stream().empty(); }
  const std::string& sender() const { return chunked() ? ref.sender() : whole.sender(); }
  const std::string& receiver() const { return chunked() ? ref.receiver() : whole.receiver(); }
};

class PayloadRelay {
 public:
  PayloadRelay(wire::PartyChannel* channel, std::string job_id,
               std::function<absl::Status()> check_cancelled = nullptr)
      : channel_(channel), job_id_(std::move(job_id)), check_(std::move(check_cancelled)) {}

  // The payload a reply carries: `ref` when it names a stream (its chunks fetched from
  // ref.sender(), which must be `producer`), else `whole`.
  absl::StatusOr<CarriedPayload> Fetch(const std::string& producer, uint32_t round,
                                       absl::Duration timeout,
                                       const fedanon::v1::SealedPayload& whole,
                                       const fedanon::v1::ChunkRef& ref) const;
  // Each chunk of `ref` fetched from `producer` (its sender), checked as a receiver would check
  // it, and handed to `each` before the next is fetched: the leader holds one chunk at a time.
  absl::Status FetchEach(
      const std::string& producer, uint32_t round, absl::Duration timeout,
      const fedanon::v1::ChunkRef& ref,
      const std::function<absl::Status(uint32_t index, fedanon::v1::SealedPayload chunk)>& each)
      const;
  // Fetch and Hand at once, a chunk at a time: each chunk of `ref` fetched from `producer` is
  // checked and handed to `receiver` (who must be the stream's receiver) before the next is
  // fetched, so that the leader never holds more than one chunk of a payload it only relays (the
  // secure union's list). A whole payload goes in `whole_field`, a stream's ref in `ref_field`.
  absl::Status Pipe(const std::string& producer, const std::string& receiver, uint32_t round,
                    absl::Duration timeout, const fedanon::v1::SealedPayload& whole,
                    const fedanon::v1::ChunkRef& ref, fedanon::v1::SealedPayload* whole_field,
                    fedanon::v1::ChunkRef* ref_field) const;
  // Hands `carried` to its receiver: a chunked payload's chunks go ahead (ChunkPut) and the step
  // names it by `ref_field`; a whole one goes in `whole_field`.
  absl::Status Hand(const CarriedPayload& carried, uint32_t round, absl::Duration timeout,
                    fedanon::v1::SealedPayload* whole_field,
                    fedanon::v1::ChunkRef* ref_field) const;

 private:
  wire::PartyChannel* channel_;
  const std::string job_id_;
  const std::function<absl::Status()> check_;
};

// The leader as receiver: opens `carried` (sealed for `leader_name` by its sender, whose
// certified key is `sender_key`) under `purpose`, whole or chunk by chunk.
absl::StatusOr<std::string> OpenCarriedAtLeader(
    const CarriedPayload& carried, const crypto::SealKeyPair& keys,
    const crypto::SealPublicKey& sender_key, const std::string& job_id, const std::string& run_id,
    uint32_t round, const std::string& leader_name, const std::string& purpose);

}  // namespace fedanon::leader
