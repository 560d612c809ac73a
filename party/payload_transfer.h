// Per-record payloads a party seals for another party and the leader relays: whole inside a
// step's reply, or — when the job negotiated chunks (common/wire/payload_chunks.h) — as a chunk
// stream this party keeps until the leader fetches it (ChunkGet), and chunks sealed for this
// party kept, checked as they arrive, until the step that names them (ChunkPut). The steps that
// produce payloads are answered once per step key (`step_answers`): the same request gets the
// same chunks (with whole payloads, only the request's fingerprint is kept: another request under
// the key is refused either way). No transport: the agent routes ChunkGet and ChunkPut here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/wire/payload_chunks.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class PayloadTransfer {
 public:
  explicit PayloadTransfer(JobContext& ctx) : ctx_(ctx) {}

  // Seals `bytes` for `receiver`: whole into `whole` when the job does not chunk, else in chunks
  // kept for ChunkGet (described by `ref`, bound to the producing request's digest; the stream
  // is named by the producing step's key and the receiver).
  absl::Status SealPayload(const std::string& receiver, uint64_t round, const std::string& purpose,
                           const std::string& bytes, fedanon::v1::SealedPayload* whole,
                           fedanon::v1::ChunkRef* ref);
  // A winner's instruction sealed for `receiver` into `out` (whole or as a chunk stream).
  absl::Status SealInstruction(const std::string& receiver, uint64_t round,
                               const std::string& instruction,
                               fedanon::v1::VerticalInstructions* out);
  // The payload a step names: `ref` (its chunks put here, checked and opened in order) when it
  // names a stream, else `whole`. Sets `sender` to the party that sealed it.
  absl::StatusOr<std::string> OpenPayload(const fedanon::v1::SealedPayload& whole,
                                          const fedanon::v1::ChunkRef& ref, uint64_t round,
                                          const std::string& purpose, std::string* sender);

  // A chunk of one of this party's payloads for the leader to relay.
  absl::StatusOr<fedanon::v1::PartyMessage> ChunkGet(const fedanon::v1::LeaderMessage& request);
  // A chunk of a payload sealed for this party. `durable`: the chunk is recorded with the job's
  // state (a vertical job: a restarted party still has it when the step naming it comes).
  absl::StatusOr<fedanon::v1::PartyMessage> ChunkPut(const fedanon::v1::LeaderMessage& request,
                                                     bool durable);
  // Chunked payloads of rounds before `round` were relayed: dropped (bounded memory).
  void DropBefore(uint64_t round);
  // The chunks received for `ref` (after a restart, replayed from the state file) are not
  // needed again: the step that named them was answered before the restart.
  void DiscardReceived(const fedanon::v1::ChunkRef& ref) {
    inbox_.erase({ref.sender(), ref.stream()});
  }

  // The producing step being handled: its key (names its streams) and request digest.
  void StartProducing(std::string key, std::string digest) {
    producing_ = {std::move(key), std::move(digest)};
  }
  void StopProducing() { producing_ = {}; }
  // One request, one answer for the steps that produce chunked payloads: step key -> (digest of
  // the request, the reply given).
  ReplyCache<std::string>& step_answers() { return step_answers_; }
  // Records the answer of a producing step under `key`: the reply itself when payloads travel in
  // chunks (it names the chunks), only the request's fingerprint when they travel whole (the
  // reply holds the payload; the same request is answered again).
  void RecordStepAnswer(const std::string& key, std::string fingerprint,
                        const fedanon::v1::PartyMessage& reply) {
    step_answers_.Put(key, std::move(fingerprint),
                      ctx_.chunk_bytes > 0 ? reply : fedanon::v1::PartyMessage());
  }

 private:
  struct Outgoing {
    uint64_t round = 0;
    fedanon::v1::ChunkRef ref;
    std::vector<fedanon::v1::SealedPayload> chunks;
  };
  JobContext& ctx_;
  // This party's chunked payloads, by stream, until a later round (ChunkGet serves them).
  std::map<std::string, Outgoing> outbox_;
  // Chunks of payloads sealed for this party, by (sender, stream), until a step names them.
  std::map<std::pair<std::string, std::string>, wire::ChunkReceiver> inbox_;
  ReplyCache<std::string> step_answers_;
  std::pair<std::string, std::string> producing_;
};

}  // namespace fedanon::party
