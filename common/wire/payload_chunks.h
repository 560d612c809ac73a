// Chunked per-record payloads: no message grows with the table. A payload whose size grows with the
// number of records (a vertical instruction, released columns, the secure union's list) is split
// into chunks of at most ChunkBytesForLimit(limit) bytes, each sealed on its own for the receiver
// with a purpose that binds (purpose, stream, chunk index, chunk count, total size, digest of the
// producing request). The producer answers its step with a ChunkRef; the leader fetches each chunk
// (ChunkGet) and hands it to the receiver (ChunkPut); the receiver checks every chunk as it arrives
// (ChunkReceiver) and opens the whole payload only when the consuming step names the ChunkRef
// (OpenChunks). Shared by the leader and the parties. docs/federation-runtime.md, "Chunked
// payloads".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "google/protobuf/message.h"

namespace fedanon::wire {

// The transport's message limit (server/runtime/transport.h kMaxMessageBytes), each way.
inline constexpr uint64_t kDefaultMessageLimitBytes = uint64_t{64} << 20;
// Below this a message limit leaves too little room for a chunk next to its envelope.
inline constexpr uint64_t kMinMessageLimitBytes = uint64_t{4} << 10;
// What a chunk's message may hold besides the ChunkRef and the chunk (request id, job id, round,
// index, field tags): checked by the producer against the limit.
inline constexpr uint64_t kChunkEnvelopeSlackBytes = 512;
// The largest chunked payload a receiver accepts (plaintext), whatever a ChunkRef declares.
inline constexpr uint64_t kMaxChunkedPayloadBytes = uint64_t{64} << 30;

// The limit both sides honour: min(leader's, party's). InvalidArgument below
// kMinMessageLimitBytes.
absl::StatusOr<uint64_t> NegotiatedMessageLimit(uint64_t leader_limit, uint64_t party_limit);
// Headroom left in every chunk's message for the envelope (message framing, job id, names,
// stream, ChunkRef, the sealed box's 94 bytes; about 0.5 KiB with names of a few dozen
// characters): max(2 KiB, limit / 16). 64 MiB -> 60 MiB chunks; 64 KiB -> 60 KiB; 4 KiB -> 2 KiB.
uint64_t ChunkHeadroom(uint64_t message_limit);
// Plaintext bytes per chunk under `message_limit`: the limit minus the headroom.
uint64_t ChunkBytesForLimit(uint64_t message_limit);
// The most pages an honest party cuts a `bytes`-long list into (vertical local recoding's
// proposal and verdict pages: half a chunk each, so at least half of the smallest chunk): at
// least 1. A receiver refuses a larger declared count, which would only size its work.
uint64_t MostPagesFor(uint64_t bytes);

// SHA-256 over the round and the serialized request that produced a payload.
std::string RequestDigest(uint64_t round, const google::protobuf::Message& request);
// The purpose chunk `index` of `ref` is sealed under: binds ref's purpose, stream, sender,
// receiver, chunk count, total size and request digest, and the index.
std::string ChunkPurpose(const fedanon::v1::ChunkRef& ref, uint32_t index);
// `bytes` cut into pieces of at most `chunk_bytes` (one empty piece for an empty payload).
std::vector<std::string_view> SplitPayload(std::string_view bytes, uint64_t chunk_bytes);
// The serialized size of the PayloadChunk {ref, index, chunk}, computed without building it.
uint64_t ChunkMessageBytes(const fedanon::v1::ChunkRef& ref, uint32_t index,
                           const fedanon::v1::SealedPayload& chunk);
// OK when chunk `index` of `ref` travels in one message under `message_limit` (its ChunkRef, the
// sealed chunk and kChunkEnvelopeSlackBytes); ResourceExhausted naming the stream otherwise (names
// too long for the headroom).
absl::Status CheckChunkFits(const fedanon::v1::ChunkRef& ref, uint32_t index,
                            const fedanon::v1::SealedPayload& chunk, uint64_t message_limit);

// Where a receiver keeps the chunks it accepted, in order: in memory (the default) or on disk (a
// party's spill files, party/chunk_file.h), so that a payload larger than memory can be received.
class ChunkStore {
 public:
  virtual ~ChunkStore() = default;
  virtual absl::Status Append(const fedanon::v1::SealedPayload& chunk) = 0;
  virtual absl::StatusOr<fedanon::v1::SealedPayload> Get(uint32_t index) const = 0;
  virtual uint32_t size() const = 0;
};

// Receives the chunks of one stream, in order, checking each as it arrives. Errors name the
// stream and the reason: a chunk beyond the declared count, one that came before its
// predecessors (a gap), a second different chunk at an index (a duplicate), a chunk that
// declares another stream shape, or more bytes than declared (oversize). The same chunk again
// (identical bytes) is accepted as a repeat and changes nothing (one request, one answer).
class ChunkReceiver {
 public:
  // Checks the declared shape: at least one chunk, no more chunks than bytes (one for an empty
  // payload), total at most `max_total_bytes`. The chunks go to `store` (memory when null).
  static absl::StatusOr<ChunkReceiver> Start(const fedanon::v1::ChunkRef& ref,
                                             uint64_t max_total_bytes,
                                             std::unique_ptr<ChunkStore> store = nullptr);
  // A receiver again over `store`, which holds chunks of `ref` accepted before (a party's spill
  // file after its restart): each is checked again as it was on arrival.
  static absl::StatusOr<ChunkReceiver> Resume(const fedanon::v1::ChunkRef& ref,
                                              uint64_t max_total_bytes,
                                              std::unique_ptr<ChunkStore> store);
  absl::Status Add(const fedanon::v1::ChunkRef& ref, uint32_t index,
                   const fedanon::v1::SealedPayload& chunk);
  uint32_t received() const { return store_->size(); }
  bool complete() const { return received() == ref_.chunks(); }
  const fedanon::v1::ChunkRef& ref() const { return ref_; }
  // OK once every declared chunk came and they hold the declared total; FailedPrecondition naming
  // the stream when some are missing, InvalidArgument for another total.
  absl::Status CheckWhole() const;
  // The chunks in order, after CheckWhole.
  absl::StatusOr<std::vector<fedanon::v1::SealedPayload>> Take() &&;
  // A complete stream opened chunk by chunk with `open(chunk, ChunkPurpose(ref, i))`, each
  // plaintext handed to `sink` in order (never the whole payload in memory); InvalidArgument when
  // the plaintexts do not add up to the declared total.
  absl::Status OpenTo(const std::function<absl::StatusOr<std::string>(
                          const fedanon::v1::SealedPayload&, const std::string& purpose)>& open,
                      const std::function<absl::Status(std::string_view)>& sink) const;

 private:
  ChunkReceiver(fedanon::v1::ChunkRef ref, std::unique_ptr<ChunkStore> store)
      : ref_(std::move(ref)), store_(std::move(store)) {}
  // Chunk `index` belongs here: within the declared count, from and for the stream's parties.
  absl::Status CheckPlace(uint32_t index, const fedanon::v1::SealedPayload& chunk) const;
  // Chunk `index` holds what a chunk may (not malformed, not empty, not over the declared total);
  // counted.
  absl::Status Accept(uint32_t index, const fedanon::v1::SealedPayload& chunk);
  fedanon::v1::ChunkRef ref_;
  std::unique_ptr<ChunkStore> store_;
  uint64_t sealed_bytes_ = 0;  // plaintext bytes the chunks so far can hold
};

// Sets `ref`'s count and total for a payload of `total_bytes` cut into `chunk_bytes` pieces (as
// SplitPayload cuts: full chunks, the last one shorter; one empty chunk for nothing).
void AnnounceChunks(uint64_t total_bytes, uint64_t chunk_bytes, fedanon::v1::ChunkRef* ref);

// Seals a payload of a size known in advance as it is produced: the chunks SealChunks would cut
// from the whole bytes, each sealed with `seal(piece, ChunkPurpose(*ref, i))` and handed to
// `out` as soon as it is full, so that only one chunk is ever held. `ref` (stream, sender,
// receiver, purpose and request digest set by the caller) gets the count and total.
class ChunkSealer {
 public:
  using Seal = std::function<absl::StatusOr<fedanon::v1::SealedPayload>(
      std::string_view piece, const std::string& purpose)>;
  using Out = std::function<absl::Status(uint32_t index, fedanon::v1::SealedPayload chunk)>;
  ChunkSealer(fedanon::v1::ChunkRef* ref, uint64_t total_bytes, uint64_t chunk_bytes, Seal seal,
              Out out);
  absl::Status Append(std::string_view bytes);
  // InvalidArgument unless exactly the announced total was appended.
  absl::Status Finish();

 private:
  absl::Status SealPiece();
  fedanon::v1::ChunkRef* ref_;
  uint64_t chunk_bytes_;
  Seal seal_;
  Out out_;
  std::string piece_;
  uint64_t appended_ = 0;
  uint32_t next_ = 0;
};

// Whether two refs describe the same stream (every field).
bool SameChunkRef(const fedanon::v1::ChunkRef& a, const fedanon::v1::ChunkRef& b);
// "stream 'x' from 'p'", for messages.
std::string DescribeStream(const fedanon::v1::ChunkRef& ref);

// Opens the chunks of a complete stream in order with `open(chunk, purpose)` (the purpose is
// ChunkPurpose(ref, i)) and joins them; InvalidArgument when the plaintexts do not add up to
// the declared total.
absl::StatusOr<std::string> OpenChunks(
    const fedanon::v1::ChunkRef& ref, const std::vector<fedanon::v1::SealedPayload>& chunks,
    const std::function<absl::StatusOr<std::string>(const fedanon::v1::SealedPayload&,
                                                    const std::string& purpose)>& open);

// Splits `bytes` and seals each piece with `seal(piece, purpose)`; fills `ref` (its stream,
// sender, receiver, purpose and request digest set by the caller) with the count and total.
absl::StatusOr<std::vector<fedanon::v1::SealedPayload>> SealChunks(
    std::string_view bytes, uint64_t chunk_bytes, fedanon::v1::ChunkRef* ref,
    const std::function<absl::StatusOr<fedanon::v1::SealedPayload>(
        std::string_view piece, const std::string& purpose)>& seal);

}  // namespace fedanon::wire
